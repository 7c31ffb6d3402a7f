//! memory-mcp's tests through its public API, in process (no binary, no connection): the fuzz replay of the path
//! mapping, the bound-role property, and the memory tool against a store that changes under it. The end-to-end tests
//! through `alp --as ROLE mcp` live in `alp-cli/tests/alp_cli/mcp.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
#![allow(missing_docs, unreachable_pub, reason = "test support code")]

mod bound_role;
mod conflict;
mod fuzzed;
mod support;
