//! Replays, on stable, the inputs of the `path_map` and `frontmatter_parse` fuzz targets (see `fuzz/README.md`).

#[test]
fn path_map() {
    assert!(testkit::replay::replay("path_map", testkit::fuzz::path_map::check) > 0);
}

#[test]
fn frontmatter_parse() {
    assert!(testkit::replay::replay("frontmatter_parse", testkit::fuzz::frontmatter_parse::check) > 0);
}
