//! Fuzz target `agent_definition`: the property is stated and checked in `testkit/src/fuzz/agent_definition.rs`, which the stable replay test shares.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzz::agent_definition::check(data));
