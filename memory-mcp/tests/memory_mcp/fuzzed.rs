//! Every committed input of the `memory_path` fuzz target (`tests/fixtures/fuzzed/memory_path/`,
//! `fuzz/seeds/memory_path/`) through the target's own property.

#[test]
fn memory_path_inputs_keep_their_property() {
    assert!(testkit::replay::replay("memory_path", testkit::fuzz::memory_path::check) > 0);
}
