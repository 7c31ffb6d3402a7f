//! Every committed input of the `memory_path` and `mcp_stdio` fuzz targets (`tests/fixtures/fuzzed/<target>/`,
//! `fuzz/seeds/<target>/`) through the target's own property.

#[test]
fn memory_path_inputs_keep_their_property() {
    assert!(testkit::replay::replay("memory_path", testkit::fuzz::memory_path::check) > 0);
}

#[test]
fn mcp_stdio_inputs_keep_their_property() {
    assert!(testkit::replay::replay("mcp_stdio", testkit::fuzz::mcp_stdio::check) > 0);
}
