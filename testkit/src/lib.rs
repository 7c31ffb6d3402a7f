//! Test machinery shared by the workspace's tests, written once. Not published; used only as a dev-dependency
//! (and by `xtask` and the fuzz crate).
//!
//! - [`model`]: independent reference models written from `conformance/README.md` — IDs and segments,
//!   grants and the grant policy, ranking, the budgeted context and the read plan — and the test entry the ranker
//!   and context tests share. A model never calls the code it checks.
//! - [`conformance`]: the Rust side of the language-neutral vectors in `conformance/`: the loader, the Text
//!   notation and the failure bookkeeping; each crate's `tests/<crate>/conformance.rs` runs its file with them.
//! - [`fuzz`]: the property of every fuzz target, one `check(data: &[u8])` each; the fuzz targets call them, and
//!   [`replay`] runs the committed inputs through them under `cargo test` on stable.
//! - [`process`]: helper processes for tests that need several (racing hosts, writers killed mid-write), and the
//!   isolated `alp` child process the end-to-end tests start.
//! - [`store`]: a store that forwards every call to another, with hooks before and after.
//! - [`tmpfs`]: a throwaway tmpfs mounted with given options (`nodev`, `dev`) when the tests run as root.
//! - `pg` (feature `pg`): a throwaway PostgreSQL cluster and a database per test.

#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test machinery: a failure is a failing test"
)]

pub mod conformance;
pub mod fuzz;
pub mod model;
#[cfg(feature = "mcp")]
pub mod oauth;
pub mod process;
pub mod replay;
pub mod store;
pub mod tmpfs;

#[cfg(feature = "pg")]
pub mod pg;
