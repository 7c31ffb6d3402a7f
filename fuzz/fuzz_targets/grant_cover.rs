//! Fuzz target `grant_cover`: the property is stated and checked in `testkit/src/fuzz/grant_cover.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::grant_cover::check(data));
