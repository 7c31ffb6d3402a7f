//! Integration tests of the facade: the service gate, and the model-based test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
#![allow(missing_docs, unreachable_pub, reason = "test support code")]

mod bounds;
mod conformance;
#[cfg(target_os = "linux")]
mod copy;
mod json;
mod model;
mod receipts;
mod service;
mod support;
mod token;
mod written;
