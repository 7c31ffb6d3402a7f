//! memory-mcp's tests through its public API, in process (no binary): the fuzz replays of the path mapping and of the
//! stdio line handler, the bound-role property, the memory tool against a store that changes under it, the protocol
//! edges of a session over an in-process pipe, and the JWT check's memory of accepted tokens. The end-to-end tests
//! through `alp --as ROLE mcp` live in `alp-cli/tests/alp_cli/mcp.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
#![allow(missing_docs, unreachable_pub, reason = "test support code")]

mod bound_role;
mod cancel;
mod conflict;
mod fuzzed;
mod oauth;
mod protocol;
mod support;
