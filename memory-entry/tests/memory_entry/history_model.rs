//! The history model against the in-memory store: arbitrary sequences of create, update, delete, rename, restore
//! and the keepVersions pruning, over three IDs, checked step by step against the testkit's reference.

use memory_entry::testkit::{HistoryOp, check_history_model};
use proptest::prelude::*;

use crate::in_memory;

pub(crate) fn op() -> impl Strategy<Value = HistoryOp> {
    let id = 0..3usize;
    let delta = prop::sample::select(vec![0i8, 0, 0, -1, 1]);
    prop_oneof![
        3 => (id.clone(), 0..4u8).prop_map(|(id, content)| HistoryOp::Create { id, content }),
        4 => (id.clone(), delta.clone(), 0..4u8).prop_map(|(id, delta, content)| HistoryOp::Update { id, delta, content }),
        2 => (id.clone(), delta.clone()).prop_map(|(id, delta)| HistoryOp::Delete { id, delta }),
        2 => (id.clone(), 1..3usize, delta.clone()).prop_map(|(from, shift, delta)| HistoryOp::Rename { from, to: (from + shift) % 3, delta }),
        2 => (id, 0..6u8, delta).prop_map(|(id, back, delta)| HistoryOp::Restore { id, back, delta }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn history_matches_the_reference(ops in prop::collection::vec(op(), 1..40)) {
        check_history_model(&in_memory, &ops);
    }
}

/// The reproduction as a fixed sequence of the model.
#[test]
fn renames_into_a_used_id_continue_its_versions() {
    check_history_model(
        &in_memory,
        &[
            HistoryOp::Create { id: 0, content: 1 },
            HistoryOp::Create { id: 2, content: 2 },
            HistoryOp::Rename { from: 0, to: 1, delta: 0 },
            HistoryOp::Rename { from: 2, to: 0, delta: 0 },
            HistoryOp::Update { id: 0, delta: -2, content: 3 },
        ],
    );
}
