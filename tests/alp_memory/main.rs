//! Integration tests of the facade: the service gate, the model-based test and the `alp` command line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
#![allow(missing_docs, unreachable_pub, reason = "test support code")]

mod cli;
mod hardening;
mod model;
mod service;
mod support;
