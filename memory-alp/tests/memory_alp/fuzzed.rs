//! Replays, on stable, the inputs of the `alp_parse` fuzz target (see `fuzz/README.md`).

#[test]
fn alp_parse() {
    let ran = testkit::replay::replay("alp_parse", testkit::fuzz::alp_parse::check);
    assert!(ran > 0, "no inputs for alp_parse");
}
