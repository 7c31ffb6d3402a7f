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

memory_entry::adapter_suite!(postgres_store, make);

/// The history model of the testkit against PostgreSQL (fewer cases than the in-memory run: each case is a
/// database of its own).
mod model {
    use memory_entry::testkit::{HistoryOp, check_history_model};
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = HistoryOp> {
        let id = 0..3usize;
        let delta = prop::sample::select(vec![0i8, 0, 0, -1, 1]);
        prop_oneof![
            3 => (id.clone(), 0..4u8).prop_map(|(id, content)| HistoryOp::Create { id, content }),
            4 => (id.clone(), delta.clone(), 0..4u8)
                .prop_map(|(id, delta, content)| HistoryOp::Update { id, delta, content }),
            2 => (id.clone(), delta.clone()).prop_map(|(id, delta)| HistoryOp::Delete { id, delta }),
            2 => (id.clone(), 1..3usize, delta.clone())
                .prop_map(|(from, shift, delta)| HistoryOp::Rename { from, to: (from + shift) % 3, delta }),
            2 => (id, 0..6u8, delta).prop_map(|(id, back, delta)| HistoryOp::Restore { id, back, delta }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn history_matches_the_reference(ops in prop::collection::vec(op(), 1..30)) {
            check_history_model(&super::make, &ops);
        }
    }
}
