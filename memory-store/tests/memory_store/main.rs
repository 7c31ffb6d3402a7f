//! Tests of `memory-store`: the adapter suite and the history model against the in-memory store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod history_model;

use memory_entry::Limits;
use memory_store::InMemoryStore;
use memory_store::testkit::Subject;

pub(crate) fn in_memory(limits: Limits) -> Subject {
    Subject::new(InMemoryStore::with_limits(limits), ())
}

memory_store::adapter_suite!(in_memory_store, in_memory);
