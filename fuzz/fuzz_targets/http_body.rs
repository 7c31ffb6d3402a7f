//! Fuzz target `http_body`: the property is stated and checked in `testkit/src/fuzz/http_body.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::http_body::check(data));
