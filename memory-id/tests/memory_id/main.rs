//! Tests of `memory-id`: the conformance vectors of `conformance/ids.json`, tables of valid and invalid inputs,
//! properties against an independent checker, and the public interface as an adopter sees it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod conformance;
mod fuzzed;
mod invalid;
mod properties;
mod public_interface;
mod valid;
