//! Fuzz target `mcp_era`: the property is stated and checked in `testkit/src/fuzz/mcp_era.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::mcp_era::check(data));
