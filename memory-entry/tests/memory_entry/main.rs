//! Tests of `memory-entry`: the fields, parsed and validated.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod fields;
