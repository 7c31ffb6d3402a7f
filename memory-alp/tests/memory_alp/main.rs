//! Tests of `memory-alp`: the `.alp` format against the seed's examples, every error with its position, and
//! round-trip properties.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod alp_format;
mod fuzzed;
