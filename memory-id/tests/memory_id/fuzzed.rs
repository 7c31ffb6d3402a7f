//! Replays, on stable, the inputs of the `id_parse` fuzz target through its own property (`testkit::fuzz`), so a
//! case fails here for exactly the reason it failed under the fuzzer (see `fuzz/README.md`).

#[test]
fn id_parse() {
    assert!(
        testkit::replay::replay("id_parse", testkit::fuzz::id_parse::check) > 0,
        "no inputs for id_parse"
    );
}
