//! Fuzz target `id_parse`: the property is stated and checked in `src/id_parse.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| alp_memory_fuzz::id_parse::check(data));
