//! Fuzz target `path_map`: the property is stated and checked in `testkit/src/fuzz/path_map.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::path_map::check(data));
