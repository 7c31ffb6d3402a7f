//! Fuzz target `memory_path`: the property is stated and checked in `testkit/src/fuzz/memory_path.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::memory_path::check(data));
