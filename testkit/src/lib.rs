//! Test machinery shared by the workspace's tests, written once. Not published; used only as a dev-dependency
//! (and by `xtask` and the fuzz crate).
//!
//! - [`fuzz`]: the property of every fuzz target, one `check(data: &[u8])` each; the fuzz targets call them, and
//!   [`replay`] runs the committed inputs through them under `cargo test` on stable.
//! - `pg` (feature `pg`): a throwaway PostgreSQL cluster and a database per test.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, reason = "test machinery: a failure is a failing test")]

pub mod fuzz;
pub mod replay;

#[cfg(feature = "pg")]
pub mod pg;
