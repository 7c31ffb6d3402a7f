//! The adapter suite of `memory-entry`, unchanged, against a database per check.

use memory_entry::testkit::Subject;
use memory_entry::{InMemoryStore, Limits};
use memory_postgres::Settings;

/// A fresh store enforcing `limits` in a database of its own. Without PostgreSQL (tests skipped, notice printed),
/// the reference store stands in, so the check passes vacuously rather than failing.
fn make(limits: Limits) -> Subject {
    match crate::fresh_store(&Settings { limits, ..Settings::default() }) {
        Some((store, db)) => Subject::new(store, db),
        None => Subject::new(InMemoryStore::with_limits(limits), ()),
    }
}

// PostgreSQL keeps no history yet: the history checks are left out and one checks that it says so.
memory_entry::adapter_suite!(postgres_store, make, without_history);
