//! The adapter suite of `memory-entry`, unchanged, against a database per check.

use memory_entry::Limits;
use memory_postgres::Settings;
use memory_store::InMemoryStore;
use memory_store::testkit::Subject;

/// A fresh store enforcing `limits` in a database of its own. Without PostgreSQL (tests skipped, notice printed),
/// the reference store stands in, so the check passes vacuously rather than failing.
fn make(limits: Limits) -> Subject {
    match crate::fresh_store(&Settings { limits, ..Settings::default() }) {
        Some((store, db)) => Subject::new(store, db),
        None => Subject::new(InMemoryStore::with_limits(limits), ()),
    }
}

memory_store::adapter_suite!(postgres_store, make);

/// The history model of the testkit against PostgreSQL (fewer cases than the in-memory run: each case is a
/// database of its own).
mod model {
    use memory_store::testkit::{check_history_model, history_op};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn history_matches_the_reference(ops in prop::collection::vec(history_op(), 1..30)) {
            check_history_model(&super::make, &ops);
        }
    }
}
