//! The properties the fuzz targets assert, one module per target.
//!
//! Each module has one entry point, `check(data: &[u8])`, that panics (through `assert!`) when the property fails.
//! The fuzz targets in `fuzz/fuzz_targets/` only call it, and [`crate::replay`] runs every committed input through
//! it under `cargo test`, so a case found by the fuzzer fails the tests on stable for the same reason. The checks
//! use only the public API of the workspace crates.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a property check fails by panicking"
)]

pub mod agent_definition;
pub mod alp_parse;
pub mod frontmatter_parse;
pub mod grant_cover;
#[cfg(feature = "mcp")]
pub mod http_body;
pub mod id_parse;
#[cfg(feature = "mcp")]
pub mod mcp_era;
#[cfg(feature = "mcp")]
pub mod mcp_stdio;
pub mod memory_path;
#[cfg(feature = "mcp")]
pub mod oauth_bearer;
pub mod path_map;
