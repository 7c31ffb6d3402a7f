//! The adapter suite: what every [`MemoryStore`] must do, written once and run against every store (feature
//! `testkit`).
//!
//! To check a store, give [`adapter_suite!`](crate::adapter_suite) a module name and a constructor taking the
//! [`Limits`] to enforce and returning a [`Subject`] (the store, plus anything that must live as long as it, such as
//! a temporary directory or a database). Each check becomes its own `#[test]`, named after what it checks:
//!
//! ```ignore
//! fn markdown(limits: Limits) -> Subject {
//!     let dir = tempfile::tempdir().unwrap();
//!     let store = MarkdownStore::open_with_limits(dir.path().join("memory"), limits).unwrap();
//!     Subject::new(store, dir)
//! }
//! memory_store::adapter_suite!(markdown_store, markdown);
//! ```
//!
//! The checks panic (through `assert!`) on the first difference; they use only this crate's public API.
//!
//! One file per part, all re-exported here: the checks every store passes (`store_checks.rs`), the checks of
//! version history (`history_checks.rs`), and the model-based check of history against a ten-line reference, with
//! the proptest strategy that drives it (`history_model.rs`); `fixtures.rs` holds what they build from.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test suite fails loudly")]

use std::any::Any;

use crate::MemoryStore;
use memory_entry::Limits;

mod fixtures;
mod history_checks;
mod history_model;
mod store_checks;

pub use history_checks::*;
pub use history_model::{HistoryOp, MODEL_KEEP_VERSIONS, check_history_model, history_op};
pub use store_checks::*;

/// A store under test and whatever must outlive it.
pub struct Subject {
    /// The store.
    pub store: Box<dyn MemoryStore>,
    _keep: Box<dyn Any>,
}

impl Subject {
    /// `store`, keeping `keep` alive as long as it.
    pub fn new(store: impl MemoryStore + 'static, keep: impl Any) -> Subject {
        Subject { store: Box::new(store), _keep: Box::new(keep) }
    }
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subject").finish_non_exhaustive()
    }
}

/// Builds a fresh, empty store enforcing the given limits.
pub type Make = dyn Fn(Limits) -> Subject;

/// One `#[test]` per check of the suite, in a module named `$name`, for the store built by `$make`
/// (`fn(Limits) -> Subject`).
#[macro_export]
macro_rules! adapter_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports, reason = "the constructor may need the caller's imports")]
            use super::*;
            $crate::adapter_suite!(@base $make);
            $crate::adapter_suite!(@checks $make;
                delete_leaves_a_tombstone_and_a_re_create_continues,
                stale_expected_version_conflicts_or_finds_nothing,
                rename_takes_the_next_version_and_tombstones_the_old,
                renames_never_let_a_stale_writer_win,
                history_lists_newest_first_with_a_limit,
                get_version_says_which_version_is_missing,
                restore_writes_the_next_version_from_an_old_one,
                restore_checks_the_expected_version_first,
                restore_undeletes_under_the_create_rules,
                redact_erases_content_and_keeps_fields,
                keep_versions_drops_the_oldest_never_the_highest,
                prune_leaves_a_tombstone,
                batch_creates_continue_a_deleted_ids_versions,
            );
        }
    };
    // A store that keeps no history yet: the checks that do not depend on it, and a check that it says so.
    ($name:ident, $make:expr, without_history) => {
        mod $name {
            #[allow(unused_imports, reason = "the constructor may need the caller's imports")]
            use super::*;
            $crate::adapter_suite!(@base $make);
            $crate::adapter_suite!(@checks $make; history_unsupported_says_so);
        }
    };
    // The checks every store passes, history or not.
    (@base $make:expr) => {
        $crate::adapter_suite!(@checks $make;
            create_never_overwrites,
            not_found_reports_expiry,
            already_exists_for_same_id_and_expired_id,
            file_directory_clash_names_the_holder_both_ways,
            duplicate_type_key_scope_names_the_holder,
            version_conflict_carries_id_expected_and_actual,
            update_keeps_unset_fields_bumps_by_1_and_clears,
            delete_then_gone,
            delete_expired_only_expired_at_expected_version,
            list_filters_on_every_field_and_expiry_mode,
            list_stays_inside_roots_sorted_without_duplicates,
            list_scores_each_entry_with_the_rankers_folding,
            list_in_rank_order_keeps_the_best_limit,
            limit_refuses_the_501st_entry_with_limit_and_count,
            limit_is_per_scope_root_and_counts_expired,
            content_round_trips_byte_for_byte,
            imported_timestamps_are_kept,
            timestamps_are_kept_to_the_millisecond,
            batch_is_all_or_nothing,
            batch_on_existing_skip_and_update,
            batch_refuses_a_stale_plan,
            rename_moves_one_entry_keeping_everything,
            rename_follows_the_create_rules,
            version_never_passes_the_cap,
            list_stops_when_its_caller_cancels,
        );
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::testkit::$check(&$make);
            }
        )+
    };
}
