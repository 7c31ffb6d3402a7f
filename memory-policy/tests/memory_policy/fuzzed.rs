//! Replays, on stable, the inputs of the `grant_cover` and `agent_definition` fuzz targets through their own
//! properties (`testkit::fuzz`), so a case fails here for exactly the reason it failed under the fuzzer.

#[test]
fn grant_cover() {
    assert!(testkit::replay::replay("grant_cover", testkit::fuzz::grant_cover::check) > 0);
}

#[test]
fn agent_definition() {
    assert!(testkit::replay::replay("agent_definition", testkit::fuzz::agent_definition::check) > 0);
}
