//! Fuzz target `mcp_stdio`: the property is stated and checked in `testkit/src/fuzz/mcp_stdio.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::mcp_stdio::check(data));
