//! Tests of `memory-entry`: the adapter suite against the in-memory store, the create rules, and the model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod fields;
mod history_model;

use memory_entry::testkit::Subject;
use memory_entry::{InMemoryStore, Limits};

pub(crate) fn in_memory(limits: Limits) -> Subject {
    Subject::new(InMemoryStore::with_limits(limits), ())
}

memory_entry::adapter_suite!(in_memory_store, in_memory);
