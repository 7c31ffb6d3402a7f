//! Integration tests of memory-context: the language-neutral conformance vectors, budget and plan properties against
//! the reference models `testkit::model::context`, snapshots of rendered context, the task read plan as a table,
//! and the public interface.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod budget_properties;
mod conformance;
mod plan_table;
mod public_interface;
mod snapshots;
