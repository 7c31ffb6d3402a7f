//! Fuzz target `grant_cover`: the property is stated and checked in `src/grant_cover.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| alp_memory_fuzz::grant_cover::check(data));
