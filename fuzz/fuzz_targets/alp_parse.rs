//! Fuzz target `alp_parse`: the property is stated and checked in `testkit/src/fuzz/alp_parse.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::alp_parse::check(data));
