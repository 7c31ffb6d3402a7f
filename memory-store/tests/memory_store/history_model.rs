//! The history model against the in-memory store: arbitrary sequences of create, update, delete, rename, restore
//! and the keepVersions pruning, over three IDs, checked step by step against the testkit's reference.

use memory_store::testkit::{HistoryOp, check_history_model, history_op};
use proptest::prelude::*;

use crate::in_memory;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn history_matches_the_reference(ops in prop::collection::vec(history_op(), 1..40)) {
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
