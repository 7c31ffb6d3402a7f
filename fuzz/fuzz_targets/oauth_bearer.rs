//! Fuzz target `oauth_bearer`: any bytes as the `Authorization` value `alp serve` checks with OAuth on — a 401 or a
//! role, never a panic. The property is stated and checked in `testkit/src/fuzz/oauth_bearer.rs`, which the stable
//! replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::oauth_bearer::check(data));
