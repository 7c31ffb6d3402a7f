//! Tests of `memory-policy`: the conformance vectors of `conformance/grants.json`, tables of grants and decisions,
//! properties against reference models, agent definitions on disk, and the public interface.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod conformance;
mod definition;
mod fuzzed;
mod invalid;
mod policy;
mod properties;
mod public_interface;
mod valid;

use memory_policy::{Actor, Grant, Role};

/// An actor from string grants; panics on an invalid role or grant.
fn actor(role: &str, read: &[&str], write: &[&str]) -> Actor {
    Actor::new(Role::parse(role).unwrap())
        .with_read(read.iter().map(|g| Grant::parse(g).unwrap()))
        .with_write(write.iter().map(|g| Grant::parse(g).unwrap()))
}
