//! The properties the fuzz targets of alp-memory assert, one module per target.
//!
//! Each module has one entry point, `check(data: &[u8])`, that panics (through `assert!`) when the property fails.
//! The fuzz targets in `fuzz_targets/` only call it. The stable tests that replay committed inputs
//! (`tests/fixtures/fuzzed/<target>/` and `fuzz/seeds/<target>/`) include the same module file with `#[path]`, so
//! a case found by the fuzzer fails `cargo test` on stable for exactly the same reason. For that, each module uses
//! only the public API of the workspace crates and the standard library, and nothing from this crate.
#![forbid(unsafe_code)]

pub mod agent_definition;
pub mod alp_parse;
pub mod frontmatter_parse;
pub mod grant_cover;
pub mod id_parse;
pub mod path_map;
