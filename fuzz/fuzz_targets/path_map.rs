//! Fuzz target `path_map`: the property is stated and checked in `src/path_map.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| alp_memory_fuzz::path_map::check(data));
