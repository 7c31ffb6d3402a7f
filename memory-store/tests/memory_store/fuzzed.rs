//! Replays, on stable, the inputs of the `path_map`, `frontmatter_parse`, `alp_parse` fuzz targets: the minimised cases
//! committed under `tests/fixtures/fuzzed/<target>/` and the seeds under `fuzz/seeds/<target>/`. The properties are
//! the fuzz targets' own (`fuzz/src/<target>.rs`, included here), so a case fails here for exactly the reason it
//! failed under the fuzzer.

#[path = "../../../fuzz/src/path_map.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod path_map;

#[path = "../../../fuzz/src/frontmatter_parse.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod frontmatter_parse;

#[path = "../../../fuzz/src/alp_parse.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod alp_parse;

#[path = "../../../fuzz/src/replay.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared by the replay tests of several crates")]
mod replay;

#[test]
fn path_map() {
    let ran = replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        "path_map",
        path_map::check,
    );
    assert!(ran > 0, "no inputs for path_map");
}

#[test]
fn frontmatter_parse() {
    let ran = replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        "frontmatter_parse",
        frontmatter_parse::check,
    );
    assert!(ran > 0, "no inputs for frontmatter_parse");
}

#[test]
fn alp_parse() {
    let ran = replay::replay(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
        "alp_parse",
        alp_parse::check,
    );
    assert!(ran > 0, "no inputs for alp_parse");
}
