//! Integration tests of memory-ranker: the language-neutral conformance vectors, properties checked against the
//! reference model `testkit::model::ranking`, and the public interface.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod conformance;
mod properties;
mod public_interface;
