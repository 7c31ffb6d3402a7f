//! Replays, on stable, the inputs of the `grant_cover` and `agent_definition` fuzz targets: the minimised cases
//! committed under `tests/fixtures/fuzzed/<target>/` and the seeds under `fuzz/seeds/<target>/`. The properties are
//! the fuzz targets' own (`fuzz/src/<target>.rs`, included here), so a case fails here for exactly the reason it
//! failed under the fuzzer.

#[path = "../../../fuzz/src/grant_cover.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod grant_cover;

#[path = "../../../fuzz/src/agent_definition.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod agent_definition;

#[path = "../../../fuzz/src/replay.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared by the replay tests of several crates")]
mod replay;

#[test]
fn grant_cover() {
    let ran = replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        "grant_cover",
        grant_cover::check,
    );
    assert!(ran > 0, "no inputs for grant_cover");
}

#[test]
fn agent_definition() {
    let ran = replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        "agent_definition",
        agent_definition::check,
    );
    assert!(ran > 0, "no inputs for agent_definition");
}
