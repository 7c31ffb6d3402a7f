//! Replays, on stable, the inputs of the `id_parse` fuzz target: the minimised cases
//! committed under `tests/fixtures/fuzzed/<target>/` and the seeds under `fuzz/seeds/<target>/`. The properties are
//! the fuzz targets' own (`fuzz/src/<target>.rs`, included here), so a case fails here for exactly the reason it
//! failed under the fuzzer.

#[path = "../../../fuzz/src/id_parse.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod id_parse;

#[path = "../../../fuzz/src/replay.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared by the replay tests of several crates")]
mod replay;

#[test]
fn id_parse() {
    let ran = replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        "id_parse",
        id_parse::check,
    );
    assert!(ran > 0, "no inputs for id_parse");
}
