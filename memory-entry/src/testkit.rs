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
//! memory_entry::adapter_suite!(markdown_store, markdown);
//! ```
//!
//! The checks panic (through `assert!`) on the first difference; they use only this crate's public API.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test suite fails loudly")]

use std::any::Any;

use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};

use crate::{
    Batch, Cancel, ExistsReason, Expiry, FieldName, FieldValue, Fields, Filter, Importance, Key, Kind,
    Limits, Listing, MAX_VERSION, MemoryEntry, MemoryStore, MemoryType, NewEntry, OnExisting, Order, Patch,
    ScopeRef, Scored, SkipReason, Source, Step, StorageErrorKind, StoreError, Timestamp, Ttl, TtlUnit,
    Version, VersionMissing,
};

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

// ----- helpers -----

fn id(text: &str) -> MemoryId {
    parse_memory_id(text).unwrap()
}

/// A fixed instant, plus `secs` seconds.
fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_790_000_000_000 + secs * 1000).unwrap()
}

fn fresh(make: &Make) -> Subject {
    make(Limits::default())
}

fn new(text: &str, content: &str) -> NewEntry {
    NewEntry::new(id(text), content)
}

fn keyed(text: &str, memory_type: MemoryType, key: &str, scope: Option<&str>) -> NewEntry {
    let mut entry = new(text, "keyed");
    entry.fields.memory_type = Some(memory_type);
    entry.fields.key = Some(Key::parse(key).unwrap());
    entry.fields.scope = scope.map(|s| ScopeRef::parse(s).unwrap());
    entry
}

fn with_ttl(mut entry: NewEntry, hours: u64) -> NewEntry {
    entry.fields.ttl = Some(Ttl::new(hours, TtlUnit::Hours).unwrap());
    entry
}

fn set(values: Vec<FieldValue>) -> Patch {
    Patch::new(None, values, vec![]).unwrap()
}

fn prefix(text: &str) -> MemoryPrefix {
    MemoryPrefix::parse(text).unwrap()
}

fn listed_ids(entries: &[Scored]) -> Vec<&str> {
    entries.iter().map(|e| e.entry.id.as_str()).collect()
}

fn exists_reason(result: Result<MemoryEntry, StoreError>) -> (ExistsReason, String, String) {
    match result {
        Err(StoreError::AlreadyExists { id, existing, reason }) => (reason, id.into_string(), existing),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
}

// ----- checks -----

/// The check that create never overwrites.
pub fn create_never_overwrites(make: &Make) {
    let s = fresh(make);
    let created = s.store.create(new("shared:team:onboarding", "first"), at(0)).unwrap();
    assert_eq!(
        (created.version, created.fields.kind, created.fields.importance),
        (1, Kind::Reference, Importance::Medium)
    );
    assert_eq!((created.created_at, created.updated_at), (at(0), at(0)));
    let (reason, who, existing) =
        exists_reason(s.store.create(new("shared:team:onboarding", "second"), at(1)));
    assert_eq!(reason, ExistsReason::SameId);
    assert_eq!((who.as_str(), existing.as_str()), ("shared:team:onboarding", "shared:team:onboarding"));
    assert_eq!(s.store.get(&id("shared:team:onboarding"), at(2)).unwrap(), created);
}

/// The check that not found reports expiry.
pub fn not_found_reports_expiry(make: &Make) {
    let s = fresh(make);
    let missing = id("shared:nothing");
    assert_eq!(
        s.store.get(&missing, at(0)),
        Err(StoreError::NotFound { id: missing.clone(), expired: false })
    );
    let patch = Patch::default();
    assert_eq!(
        s.store.update(&missing, 1, &patch, at(0)),
        Err(StoreError::NotFound { id: missing.clone(), expired: false })
    );
    assert_eq!(
        s.store.delete(&missing, 1, at(0)),
        Err(StoreError::NotFound { id: missing.clone(), expired: false })
    );

    let short = id("project:alp:short");
    s.store.create(with_ttl(new("project:alp:short", "x"), 1), at(0)).unwrap();
    assert!(s.store.get(&short, at(3599)).is_ok(), "live 1 s before expiry");
    let gone = StoreError::NotFound { id: short.clone(), expired: true };
    assert_eq!(s.store.get(&short, at(3600)).unwrap_err(), gone, "expired at exactly updatedAt + ttl");
    assert_eq!(s.store.update(&short, 1, &patch, at(7200)).unwrap_err(), gone);
    assert_eq!(s.store.update(&short, 9, &patch, at(7200)).unwrap_err(), gone, "not found before version");
    assert_eq!(s.store.delete(&short, 1, at(7200)).unwrap_err(), gone);
    let message = s.store.get(&short, at(7200)).unwrap_err().to_string();
    assert!(message.contains("project:alp:short") && message.contains("expired"), "{message}");
}

/// The check that already exists for same id and expired id.
pub fn already_exists_for_same_id_and_expired_id(make: &Make) {
    let s = fresh(make);
    s.store.create(with_ttl(new("private:worker:draft", "x"), 1), at(0)).unwrap();
    let (reason, _, existing) = exists_reason(s.store.create(new("private:worker:draft", "y"), at(10)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::SameId, "private:worker:draft"));
    let error = s.store.create(new("private:worker:draft", "y"), at(7200)).unwrap_err();
    assert!(error.to_string().contains("prune"), "{error}");
    let (reason, _, existing) = exists_reason(Err(error));
    assert_eq!((reason, existing.as_str()), (ExistsReason::Expired, "private:worker:draft"));
}

/// The check that file directory clash names the holder both ways.
pub fn file_directory_clash_names_the_holder_both_ways(make: &Make) {
    let s = fresh(make);
    // An entry, then an ID below `<it>.md`.
    s.store.create(new("shared:x", "file"), at(0)).unwrap();
    let (reason, who, existing) = exists_reason(s.store.create(new("shared:x.md:y", "below"), at(0)));
    assert_eq!(
        (reason, who.as_str(), existing.as_str()),
        (ExistsReason::FileDirectoryClash, "shared:x.md:y", "shared:x")
    );
    // Deeper below too.
    let (reason, _, existing) = exists_reason(s.store.create(new("shared:x.md:y:z", "deeper"), at(0)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::FileDirectoryClash, "shared:x"));

    // Entries below `<id>.md`, then the ID: the smallest holder is named.
    s.store.create(new("project:alp:a.md:c", "c"), at(0)).unwrap();
    s.store.create(new("project:alp:a.md:b:deep", "b"), at(0)).unwrap();
    let (reason, _, existing) = exists_reason(s.store.create(new("project:alp:a", "a"), at(0)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::FileDirectoryClash, "project:alp:a.md:b:deep"));
    // `a.md` itself is another ID, with its own file: no clash.
    s.store.create(new("project:alp:a.md", "a.md"), at(0)).unwrap();

    // Once the entries below are gone, the place is free again.
    s.store.delete(&id("project:alp:a.md:c"), 1, at(1)).unwrap();
    s.store.delete(&id("project:alp:a.md:b:deep"), 1, at(1)).unwrap();
    s.store.create(new("project:alp:a", "a"), at(2)).unwrap();
    assert_eq!(s.store.get(&id("project:alp:a"), at(2)).unwrap().content, "a");
}

/// The check that duplicate type key scope names the holder.
pub fn duplicate_type_key_scope_names_the_holder(make: &Make) {
    let s = fresh(make);
    s.store.create(keyed("project:alp:db", MemoryType::Decision, "db-choice", None), at(0)).unwrap();
    let (reason, who, existing) = exists_reason(
        s.store.create(keyed("project:alp:other", MemoryType::Decision, "db-choice", None), at(0)),
    );
    assert_eq!(
        (reason, who.as_str(), existing.as_str()),
        (ExistsReason::DuplicateKey, "project:alp:other", "project:alp:db")
    );
    // Another type, another scope reference, or another scope root: no duplicate.
    s.store.create(keyed("project:alp:t", MemoryType::Task, "db-choice", None), at(0)).unwrap();
    s.store.create(keyed("project:alp:f", MemoryType::Decision, "db-choice", Some("feat-x")), at(0)).unwrap();
    s.store.create(keyed("project:web:db", MemoryType::Decision, "db-choice", None), at(0)).unwrap();
    s.store.create(keyed("shared:db", MemoryType::Decision, "db-choice", None), at(0)).unwrap();
    // An update that would take the triple.
    let patch = set(vec![FieldValue::Type(MemoryType::Decision)]);
    let (reason, _, existing) = exists_reason(s.store.update(&id("project:alp:t"), 1, &patch, at(1)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::DuplicateKey, "project:alp:db"));
    assert_eq!(
        s.store.get(&id("project:alp:t"), at(1)).unwrap().version,
        1,
        "a refused update writes nothing"
    );
    // An expired holder still holds the triple until pruned.
    s.store.create(with_ttl(keyed("private:w:old", MemoryType::Agent, "pref", None), 1), at(0)).unwrap();
    let (reason, _, existing) =
        exists_reason(s.store.create(keyed("private:w:new", MemoryType::Agent, "pref", None), at(7200)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::DuplicateKey, "private:w:old"));
}

/// The check that version conflict carries id expected and actual.
pub fn version_conflict_carries_id_expected_and_actual(make: &Make) {
    let s = fresh(make);
    let target = id("shared:cas");
    s.store.create(new("shared:cas", "v1"), at(0)).unwrap();
    s.store.update(&target, 1, &Patch::default(), at(1)).unwrap();
    let conflict = s.store.update(&target, 1, &Patch::default(), at(2)).unwrap_err();
    assert_eq!(conflict, StoreError::VersionConflict { id: target.clone(), expected: 1, actual: 2 });
    assert_eq!(
        conflict.to_string(),
        "version conflict on `shared:cas`: expected version 1, the entry is at version 2"
    );
    assert_eq!(
        s.store.delete(&target, 7, at(2)),
        Err(StoreError::VersionConflict { id: target.clone(), expected: 7, actual: 2 })
    );
    assert_eq!(s.store.get(&target, at(3)).unwrap().version, 2);
}

/// The check that update keeps unset fields bumps by 1, and clears.
pub fn update_keeps_unset_fields_bumps_by_1_and_clears(make: &Make) {
    let s = fresh(make);
    let target = id("project:alp:goal");
    let mut full = keyed("project:alp:goal", MemoryType::Project, "goal", Some("feat-dashboard"));
    full.fields.kind = Kind::Decision;
    full.fields.importance = Importance::High;
    full.fields.source = Some(Source::parse("worker").unwrap());
    full.fields.ttl = Some(Ttl::parse("90d").unwrap());
    let created = s.store.create(full, at(0)).unwrap();

    // An empty patch still bumps the version by one and moves updatedAt.
    let bumped = s.store.update(&target, 1, &Patch::default(), at(5)).unwrap();
    assert_eq!(bumped.version, 2);
    assert_eq!(bumped.updated_at, at(5));
    assert_eq!(
        MemoryEntry { version: 1, updated_at: at(0), ..bumped.clone() },
        created,
        "nothing else changed"
    );

    // Changing one field keeps the others.
    let patch = Patch::content_only("new text");
    let changed = s.store.update(&target, 2, &patch, at(6)).unwrap();
    assert_eq!((changed.version, changed.content.as_str()), (3, "new text"));
    let text = |value: Option<FieldValue>| value.map(|v| v.text());
    assert_eq!(
        (text(changed.fields.get(FieldName::Key)), text(changed.fields.get(FieldName::Source))),
        (Some("goal".to_owned()), Some("worker".to_owned()))
    );
    assert_eq!(
        (changed.fields.kind, changed.fields.importance, changed.created_at),
        (Kind::Decision, Importance::High, at(0))
    );

    // Clearing: optional fields go, kind and importance return to their defaults.
    let clear = Patch::new(None, vec![], FieldName::ALL.to_vec()).unwrap();
    let cleared = s.store.update(&target, 3, &clear, at(7)).unwrap();
    assert_eq!(cleared.version, 4);
    assert_eq!(cleared.fields, Fields::default(), "kind and importance at their defaults, the rest removed");
    assert_eq!(cleared.content, "new text");
    assert_eq!(s.store.get(&target, at(8)).unwrap(), cleared, "get returns what update returned");
}

/// The check that delete then gone.
pub fn delete_then_gone(make: &Make) {
    let s = fresh(make);
    let target = id("shared:team:old");
    s.store.create(new("shared:team:old", "x"), at(0)).unwrap();
    s.store.create(new("shared:team:kept", "y"), at(0)).unwrap();
    s.store.delete(&target, 1, at(1)).unwrap();
    assert_eq!(s.store.get(&target, at(1)), Err(StoreError::NotFound { id: target.clone(), expired: false }));
    assert_eq!(
        s.store.delete(&target, 1, at(1)),
        Err(StoreError::NotFound { id: target.clone(), expired: false })
    );
    assert_eq!(s.store.get(&id("shared:team:kept"), at(1)).unwrap().content, "y");
    // A re-create is possible (its version is a history rule: `delete_leaves_a_tombstone_and_a_re_create_continues`).
    assert_eq!(s.store.create(new("shared:team:old", "again"), at(2)).unwrap().content, "again");
}

/// The check that delete expired only expired at expected version.
pub fn delete_expired_only_expired_at_expected_version(make: &Make) {
    let s = fresh(make);
    let target = id("shared:tmp");
    s.store.create(with_ttl(new("shared:tmp", "x"), 1), at(0)).unwrap();
    assert_eq!(
        s.store.delete_expired(&target, 1, at(10)),
        Err(StoreError::NotExpired { id: target.clone() })
    );
    assert_eq!(
        s.store.delete_expired(&target, 3, at(7200)),
        Err(StoreError::VersionConflict { id: target.clone(), expected: 3, actual: 1 })
    );
    s.store.delete_expired(&target, 1, at(7200)).unwrap();
    assert_eq!(
        s.store.delete_expired(&target, 1, at(7200)),
        Err(StoreError::NotFound { id: target.clone(), expired: false })
    );
    // A live entry without a TTL never expires.
    s.store.create(new("shared:forever", "x"), at(0)).unwrap();
    assert_eq!(
        s.store.delete_expired(&id("shared:forever"), 1, at(1_000_000_000)),
        Err(StoreError::NotExpired { id: id("shared:forever") })
    );
}

/// The check that list filters on every field and expiry mode.
pub fn list_filters_on_every_field_and_expiry_mode(make: &Make) {
    let s = fresh(make);
    let mut a = keyed("shared:a", MemoryType::Decision, "k1", Some("feat-x"));
    a.fields.kind = Kind::Fact;
    a.fields.importance = Importance::Critical;
    a.fields.source = Some(Source::parse("main").unwrap());
    let mut b = keyed("shared:b", MemoryType::Task, "k2", Some("task-y"));
    b.fields.kind = Kind::Log;
    b.fields.source = Some(Source::parse("worker").unwrap());
    let c = with_ttl(new("shared:c", "short-lived"), 1);
    for entry in [a, b, c] {
        s.store.create(entry, at(0)).unwrap();
    }
    let list = |filter: &[(FieldName, &str)], expiry: Expiry, secs: i64| {
        let values = filter.iter().map(|(name, text)| FieldValue::parse(*name, text).unwrap()).collect();
        let listing = Listing::new(vec![prefix("shared")], at(secs))
            .with_filter(Filter::new(values))
            .with_expiry(expiry);
        listed_ids(&s.store.list(&listing).unwrap()).join(",")
    };
    let live = Expiry::Live;
    assert_eq!(list(&[], live, 10), "shared:a,shared:b,shared:c");
    assert_eq!(list(&[(FieldName::Kind, "fact")], live, 10), "shared:a");
    assert_eq!(list(&[(FieldName::Kind, "reference")], live, 10), "shared:c");
    assert_eq!(list(&[(FieldName::Type, "task")], live, 10), "shared:b");
    assert_eq!(list(&[(FieldName::Importance, "critical")], live, 10), "shared:a");
    assert_eq!(list(&[(FieldName::Importance, "medium")], live, 10), "shared:b,shared:c");
    assert_eq!(list(&[(FieldName::Key, "k2")], live, 10), "shared:b");
    assert_eq!(list(&[(FieldName::Source, "main")], live, 10), "shared:a");
    assert_eq!(list(&[(FieldName::Scope, "feat-x")], live, 10), "shared:a");
    assert_eq!(list(&[(FieldName::Scope, "feat")], live, 10), "");
    assert_eq!(list(&[(FieldName::Ttl, "1h")], live, 10), "shared:c");
    assert_eq!(
        list(&[(FieldName::Kind, "log"), (FieldName::Type, "decision")], live, 10),
        "",
        "filters combine"
    );
    // Expiry modes, at 10 s (all live) and 2 h (c expired).
    assert_eq!(list(&[], live, 7200), "shared:a,shared:b");
    assert_eq!(list(&[], Expiry::Expired, 10), "");
    assert_eq!(list(&[], Expiry::Expired, 7200), "shared:c");
    assert_eq!(list(&[], Expiry::Any, 7200), "shared:a,shared:b,shared:c");
}

/// The check that list stays inside roots sorted without duplicates.
pub fn list_stays_inside_roots_sorted_without_duplicates(make: &Make) {
    let s = fresh(make);
    for text in [
        "shared:team",
        "shared:team:onboarding",
        "shared:team:z:deep",
        "shared:teams",
        "shared:te",
        "project:alp:goals",
        "project:alp:log:2026-09",
        "project:web:goals",
        "private:worker:notes",
        "private:main:notes",
    ] {
        s.store.create(new(text, text), at(0)).unwrap();
    }
    let list = |roots: &[&str]| {
        let roots: Vec<MemoryPrefix> = roots.iter().map(|r| prefix(r)).collect();
        listed_ids(&s.store.list(&Listing::new(roots, at(1))).unwrap()).join(",")
    };
    assert_eq!(list(&["shared:team"]), "shared:team,shared:team:onboarding,shared:team:z:deep");
    assert_eq!(list(&["shared:te"]), "shared:te");
    assert_eq!(list(&["project:alp"]), "project:alp:goals,project:alp:log:2026-09");
    assert_eq!(list(&["project"]), "project:alp:goals,project:alp:log:2026-09,project:web:goals");
    assert_eq!(list(&["private:worker"]), "private:worker:notes");
    assert_eq!(list(&["private:main:notes"]), "private:main:notes");
    assert_eq!(list(&["private:nobody"]), "");
    assert_eq!(list(&[]), "");
    // Overlapping and repeated roots: each entry once, sorted by ID.
    assert_eq!(
        list(&["shared:team:onboarding", "project:web", "shared:team", "shared:team", "private:worker"]),
        "private:worker:notes,project:web:goals,shared:team,shared:team:onboarding,shared:team:z:deep"
    );
    let everything = list(&["shared", "project", "private"]);
    assert_eq!(everything.split(',').count(), 10);
    let mut sorted: Vec<&str> = everything.split(',').collect();
    sorted.sort_unstable();
    assert_eq!(sorted.join(","), everything);
}

/// The check that limit refuses the 501st entry with limit and count.
pub fn limit_refuses_the_501st_entry_with_limit_and_count(make: &Make) {
    let s = fresh(make);
    assert_eq!(s.store.limits().max_entries_per_scope_root, 500);
    for n in 0..500 {
        s.store.create(new(&format!("project:alp:n:{n:03}"), "x"), at(0)).unwrap();
    }
    let refused = s.store.create(new("project:alp:n:500", "x"), at(0)).unwrap_err();
    match &refused {
        StoreError::LimitExceeded { scope_root, limit, count } => {
            assert_eq!((scope_root.as_str(), *limit, *count), ("project:alp", 500, 500));
        }
        other => panic!("expected LimitExceeded, got {other:?}"),
    }
    assert!(refused.to_string().contains("500"), "{refused}");
    // Other checks come first: the same ID is reported as existing, not as over the limit.
    let (reason, _, _) = exists_reason(s.store.create(new("project:alp:n:000", "x"), at(0)));
    assert_eq!(reason, ExistsReason::SameId);
    // Updates are not creates.
    s.store.update(&id("project:alp:n:000"), 1, &Patch::default(), at(1)).unwrap();
    // Freeing one place makes room for one.
    s.store.delete(&id("project:alp:n:499"), 1, at(1)).unwrap();
    s.store.create(new("project:alp:n:500", "x"), at(1)).unwrap();
}

/// The check that limit is per scope root and counts expired.
pub fn limit_is_per_scope_root_and_counts_expired(make: &Make) {
    let limits = Limits { max_entries_per_scope_root: 3, ..Limits::default() };
    let s = make(limits);
    for n in 0..3 {
        s.store.create(with_ttl(new(&format!("private:worker:e{n}"), "x"), 1), at(0)).unwrap();
    }
    // All three expired, still counted until pruned.
    match s.store.create(new("private:worker:e3", "x"), at(7200)) {
        Err(StoreError::LimitExceeded { limit: 3, count: 3, .. }) => {}
        other => panic!("expected LimitExceeded 3/3, got {other:?}"),
    }
    // Another scope root is counted on its own.
    s.store.create(new("private:main:e0", "x"), at(0)).unwrap();
    s.store.create(new("shared:e0", "x"), at(0)).unwrap();
    // Pruning one frees a place.
    s.store.delete_expired(&id("private:worker:e0"), 1, at(7200)).unwrap();
    s.store.create(new("private:worker:e3", "x"), at(7200)).unwrap();
}

/// The check that content round trips byte for byte.
pub fn content_round_trips_byte_for_byte(make: &Make) {
    let s = fresh(make);
    let contents = [
        "",
        "no trailing newline",
        "line\r\nwindows\r\n",
        "---\nkind: fact\n---\nlooks like frontmatter",
        "---",
        "\n\n---\n\n",
        "unicode: é ß 漢字 🦀 \u{2028} \u{feff}",
        "trailing spaces   \n\t tab",
    ];
    for (n, content) in contents.iter().enumerate() {
        let target = id(&format!("shared:content:c{n}"));
        s.store.create(NewEntry::new(target.clone(), *content), at(0)).unwrap();
        assert_eq!(s.store.get(&target, at(0)).unwrap().content, *content, "content {n}");
        let patch = Patch::content_only(format!("{content}+"));
        let updated = s.store.update(&target, 1, &patch, at(1)).unwrap();
        assert_eq!(s.store.get(&target, at(1)).unwrap(), updated, "content {n} after update");
    }
}

/// The check that imported timestamps are kept.
pub fn imported_timestamps_are_kept(make: &Make) {
    let s = fresh(make);
    let mut entry = with_ttl(new("project:alp:imported", "x"), 1);
    entry.created_at = Some(at(-7200));
    entry.updated_at = Some(at(-5400));
    let created = s.store.create(entry, at(0)).unwrap();
    assert_eq!((created.created_at, created.updated_at, created.version), (at(-7200), at(-5400), 1));
    // The TTL counts from the kept updatedAt: expired 30 minutes ago.
    assert_eq!(
        s.store.get(&id("project:alp:imported"), at(0)),
        Err(StoreError::NotFound { id: id("project:alp:imported"), expired: true })
    );
}

/// The check that timestamps are kept to the millisecond.
pub fn timestamps_are_kept_to_the_millisecond(make: &Make) {
    let s = fresh(make);
    let precise = Timestamp::parse("2026-11-29T12:00:00.123456789Z").unwrap();
    let millis = Timestamp::parse("2026-11-29T12:00:00.123Z").unwrap();
    let created = s.store.create(new("shared:precise", "x"), precise).unwrap();
    assert_eq!((created.created_at, created.updated_at), (millis, millis));
    assert_eq!(s.store.get(&id("shared:precise"), precise).unwrap(), created);
    let updated = s.store.update(&id("shared:precise"), 1, &Patch::default(), precise).unwrap();
    assert_eq!(updated.updated_at, millis);
    assert_eq!(s.store.get(&id("shared:precise"), precise).unwrap(), updated);
}

/// The check that list scores each entry with the rankers folding.
pub fn list_scores_each_entry_with_the_rankers_folding(make: &Make) {
    let s = fresh(make);
    for (text, content) in [
        ("project:alp:db", "Cơ sở dữ liệu: PostgreSQL 16"),
        ("project:alp:style", "Tabs, not spaces"),
        ("project:alp:migration", "Migrate the POSTGRES schema"),
        ("project:alp:decomposed", "Tie\u{0302}\u{0301}ng Vie\u{0323}\u{0302}t"),
    ] {
        s.store.create(new(text, content), at(0)).unwrap();
    }
    let scored = |query: &str| {
        let listing = Listing::new(vec![prefix("project:alp")], at(1)).with_query(query);
        s.store
            .list(&listing)
            .unwrap()
            .into_iter()
            .map(|e| (e.entry.id.into_string(), e.score))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        scored("postgres DỮ"),
        [("project:alp:db".to_owned(), 2), ("project:alp:migration".to_owned(), 1)],
        "sorted by ID; terms folded and matched as substrings"
    );
    assert_eq!(scored("tiếng"), [("project:alp:decomposed".to_owned(), 1)], "NFC on both sides");
    assert_eq!(scored("STYLE"), [("project:alp:style".to_owned(), 1)], "the ID is searched too");
    assert_eq!(scored("nothing-matches"), []);
    let all = scored("");
    assert_eq!(all.len(), 4);
    assert!(all.iter().all(|(_, score)| *score == 0), "an empty query keeps every entry with score 0");
}

/// The check that a listing in rank order returns the first `limit` entries in rank order (score, then newer, then
/// ID), each once, and one by ID keeps the same entries sorted by ID.
pub fn list_in_rank_order_keeps_the_best_limit(make: &Make) {
    let s = fresh(make);
    // Scores 2, 1 and 0 (dropped: no term), ties broken by `updated_at` and then by ID.
    for (text, content, secs) in [
        ("shared:a", "postgres", 3),
        ("shared:b", "postgres migration", 1),
        ("shared:c", "migration", 3),
        ("shared:d", "postgres", 5),
        ("shared:e", "tabs", 9),
        ("shared:f", "postgres", 3),
        ("shared:g", "migration postgres", 1),
    ] {
        s.store.create(new(text, content), at(secs)).unwrap();
    }
    let listed = |order: Order, limit: Option<usize>| {
        let listing = Listing::new(vec![prefix("shared")], at(10))
            .with_query("postgres migration")
            .with_order(order)
            .with_limit(limit);
        let entries = s.store.list(&listing).unwrap();
        entries.iter().map(|e| format!("{}={}", e.entry.id, e.score)).collect::<Vec<_>>().join(",")
    };
    let ranked = "shared:b=2,shared:g=2,shared:d=1,shared:a=1,shared:c=1,shared:f=1";
    assert_eq!(listed(Order::Rank, None), ranked, "every entry that holds a term, in rank order");
    for limit in 0..8 {
        let best: Vec<&str> = ranked.split(',').take(limit).collect();
        let mut by_id = best.clone();
        by_id.sort_unstable();
        assert_eq!(listed(Order::Rank, Some(limit)), best.join(","), "rank order, limit {limit}");
        assert_eq!(listed(Order::Id, Some(limit)), by_id.join(","), "by ID, limit {limit}");
    }
}

/// The check that batch is all or nothing.
pub fn batch_is_all_or_nothing(make: &Make) {
    let s = make(Limits { max_entries_per_scope_root: 4, ..Limits::default() });
    s.store.create(new("project:alp:a", "a"), at(0)).unwrap();
    s.store.create(keyed("project:alp:k", MemoryType::Project, "held", None), at(0)).unwrap();
    let batch = |entries: Vec<NewEntry>| Batch::new(entries, OnExisting::Fail);
    // An existing ID anywhere in the batch: nothing is written.
    let refused = s.store.write_batch(
        &batch(vec![new("project:alp:b", "b"), new("project:alp:a", "again")]),
        None,
        at(1),
    );
    assert!(
        matches!(refused, Err(StoreError::AlreadyExists { reason: ExistsReason::SameId, .. })),
        "{refused:?}"
    );
    assert!(
        s.store.get(&id("project:alp:b"), at(1)).is_err(),
        "the first create of a refused batch is not written"
    );
    // A duplicate (type, key, scope), in the store or within the batch.
    let dup = s.store.write_batch(
        &batch(vec![keyed("project:alp:c", MemoryType::Project, "held", None)]),
        None,
        at(1),
    );
    assert!(
        matches!(dup, Err(StoreError::AlreadyExists { reason: ExistsReason::DuplicateKey, .. })),
        "{dup:?}"
    );
    let twice = vec![
        keyed("project:alp:c", MemoryType::Task, "t", None),
        keyed("project:alp:d", MemoryType::Task, "t", None),
    ];
    match s.store.write_batch(&batch(twice), None, at(1)) {
        Err(StoreError::AlreadyExists { id, existing, reason: ExistsReason::DuplicateKey }) => {
            assert_eq!((id.as_str(), existing.as_str()), ("project:alp:d", "project:alp:c"));
        }
        other => panic!("expected a duplicate key within the batch, got {other:?}"),
    }
    // A clash within the batch, and the same ID twice.
    let clash = s.store.write_batch(
        &batch(vec![new("project:alp:x", "x"), new("project:alp:x.md:y", "y")]),
        None,
        at(1),
    );
    assert!(
        matches!(clash, Err(StoreError::AlreadyExists { reason: ExistsReason::FileDirectoryClash, .. })),
        "{clash:?}"
    );
    let same =
        s.store.write_batch(&batch(vec![new("project:alp:x", "x"), new("project:alp:x", "y")]), None, at(1));
    assert!(matches!(same, Err(StoreError::AlreadyExists { reason: ExistsReason::SameId, .. })), "{same:?}");
    // Over the limit: 2 held + 3 is more than 4.
    let over = s.store.write_batch(
        &batch(vec![new("project:alp:p", "p"), new("project:alp:q", "q"), new("project:alp:r", "r")]),
        None,
        at(1),
    );
    assert!(matches!(over, Err(StoreError::LimitExceeded { limit: 4, count: 4, .. })), "{over:?}");
    // Another scope root in the batch is refused.
    assert!(
        s.store
            .write_batch(&batch(vec![new("project:alp:p", "p"), new("project:web:p", "p")]), None, at(1))
            .is_err()
    );
    for name in ["b", "c", "d", "x", "p", "q", "r"] {
        assert!(s.store.get(&id(&format!("project:alp:{name}")), at(1)).is_err(), "{name} was written");
    }
    // Within the limit: every create, in order.
    let written = s
        .store
        .write_batch(&batch(vec![new("project:alp:p", "p"), new("project:alp:q", "q")]), None, at(1))
        .unwrap();
    assert_eq!(written.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["project:alp:p", "project:alp:q"]);
    assert_eq!(s.store.get(&id("project:alp:q"), at(2)).unwrap(), written[1]);
}

/// The check that batch on existing skip and update.
pub fn batch_on_existing_skip_and_update(make: &Make) {
    let s = fresh(make);
    let imported = |content: &str, importance: Importance| {
        let mut entry = keyed("project:alp:m", MemoryType::Decision, "m", Some("feat-x"));
        entry.content = content.to_owned();
        entry.fields.importance = importance;
        entry
    };
    s.store.create(imported("first", Importance::High), at(0)).unwrap();
    // Skip: the existing entry is untouched.
    let skip =
        Batch::new(vec![imported("second", Importance::Low), new("project:alp:n", "n")], OnExisting::Skip);
    let plan = s.store.plan_batch(&skip, at(1)).unwrap();
    assert_eq!(
        plan.steps(),
        [
            Step::Skip { id: id("project:alp:m"), reason: SkipReason::Exists },
            Step::Create(id("project:alp:n"))
        ]
    );
    s.store.write_batch(&skip, Some(&plan), at(1)).unwrap();
    assert_eq!(s.store.get(&id("project:alp:m"), at(1)).unwrap().content, "first");
    // Update: the same content and fields are unchanged; anything else is one versioned update.
    let same = Batch::new(vec![imported("first", Importance::High)], OnExisting::Update);
    let plan = s.store.plan_batch(&same, at(2)).unwrap();
    assert_eq!(plan.steps(), [Step::Skip { id: id("project:alp:m"), reason: SkipReason::Unchanged }]);
    assert!(s.store.write_batch(&same, Some(&plan), at(2)).unwrap().is_empty());
    let changed = Batch::new(vec![imported("second", Importance::Low)], OnExisting::Update);
    let plan = s.store.plan_batch(&changed, at(3)).unwrap();
    assert_eq!(plan.steps(), [Step::Update { id: id("project:alp:m"), expected_version: 1 }]);
    let written = s.store.write_batch(&changed, Some(&plan), at(3)).unwrap();
    assert_eq!((written[0].version, written[0].content.as_str()), (2, "second"));
    assert_eq!(written[0].fields.importance, Importance::Low);
    assert_eq!(written[0].updated_at, at(3), "an import's update is an update like any other");
    // Running the same import again changes nothing.
    let again = s.store.plan_batch(&changed, at(4)).unwrap();
    assert_eq!(again.steps(), [Step::Skip { id: id("project:alp:m"), reason: SkipReason::Unchanged }]);
}

/// The check that batch refuses a stale plan.
pub fn batch_refuses_a_stale_plan(make: &Make) {
    let s = fresh(make);
    let batch = Batch::new(vec![new("shared:a", "a"), new("shared:b", "b")], OnExisting::Fail);
    let plan = s.store.plan_batch(&batch, at(0)).unwrap();
    // A concurrent writer creates one of them between the plan and the write.
    s.store.create(new("shared:b", "theirs"), at(0)).unwrap();
    let refused = s.store.write_batch(&batch, Some(&plan), at(1));
    assert!(
        matches!(refused, Err(StoreError::AlreadyExists { .. } | StoreError::BatchStale { .. })),
        "{refused:?}"
    );
    assert!(s.store.get(&id("shared:a"), at(1)).is_err(), "nothing of a stale batch is written");
    assert_eq!(s.store.get(&id("shared:b"), at(1)).unwrap().content, "theirs");
    // With update, a version moved by someone else is stale too.
    s.store.create(new("shared:c", "c"), at(0)).unwrap();
    let update = Batch::new(vec![new("shared:c", "mine")], OnExisting::Update);
    let plan = s.store.plan_batch(&update, at(2)).unwrap();
    s.store.update(&id("shared:c"), 1, &Patch::content_only("theirs"), at(2)).unwrap();
    match s.store.write_batch(&update, Some(&plan), at(3)) {
        Err(StoreError::BatchStale { id: stale }) => assert_eq!(stale.as_str(), "shared:c"),
        other => panic!("expected BatchStale, got {other:?}"),
    }
    assert_eq!(s.store.get(&id("shared:c"), at(3)).unwrap().content, "theirs");
}

/// The check that rename moves one entry keeping everything.
pub fn rename_moves_one_entry_keeping_everything(make: &Make) {
    let s = fresh(make);
    let mut entry = keyed("shared:notes:old", MemoryType::Knowledge, "notes", None);
    entry.fields.importance = Importance::High;
    entry.fields.ttl = Some(Ttl::parse("30d").unwrap());
    s.store.create(entry, at(0)).unwrap();
    let before = s.store.update(&id("shared:notes:old"), 1, &Patch::content_only("kept"), at(5)).unwrap();
    let moved = s.store.rename(&id("shared:notes:old"), &id("shared:archive:new"), 2, at(9)).unwrap();
    assert_eq!(
        moved,
        MemoryEntry { id: id("shared:archive:new"), version: moved.version, ..before.clone() },
        "fields and times kept (the version is a history rule)"
    );
    assert_eq!(s.store.get(&id("shared:archive:new"), at(10)).unwrap(), moved);
    assert!(matches!(s.store.get(&id("shared:notes:old"), at(10)), Err(StoreError::NotFound { .. })));
    let all = s.store.list(&Listing::new(vec![prefix("shared")], at(10))).unwrap();
    assert_eq!(listed_ids(&all), ["shared:archive:new"], "exactly one entry");
    // Across scope roots, too.
    let across =
        s.store.rename(&id("shared:archive:new"), &id("project:alp:notes"), moved.version, at(11)).unwrap();
    assert_eq!(across.content, "kept");
    assert_eq!(
        listed_ids(&s.store.list(&Listing::new(vec![prefix("shared"), prefix("project")], at(12))).unwrap()),
        ["project:alp:notes"]
    );
}

/// The check that rename follows the create rules.
pub fn rename_follows_the_create_rules(make: &Make) {
    let s = make(Limits { max_entries_per_scope_root: 2, ..Limits::default() });
    s.store.create(keyed("shared:a", MemoryType::Task, "k", None), at(0)).unwrap();
    s.store.create(new("shared:b", "b"), at(0)).unwrap();
    s.store.create(new("project:alp:x", "x"), at(0)).unwrap();
    s.store.create(new("project:alp:y", "y"), at(0)).unwrap();
    let refused = |result: Result<MemoryEntry, StoreError>| match result {
        Err(e) => e,
        Ok(entry) => panic!("rename succeeded: {entry:?}"),
    };
    // The source must be live at the expected version.
    assert!(matches!(
        refused(s.store.rename(&id("shared:none"), &id("shared:c"), 1, at(1))),
        StoreError::NotFound { .. }
    ));
    assert!(matches!(
        refused(s.store.rename(&id("shared:a"), &id("shared:c"), 2, at(1))),
        StoreError::VersionConflict { expected: 2, actual: 1, .. }
    ));
    // The target follows the create rules: taken, clashing, or a full scope root.
    assert!(matches!(
        refused(s.store.rename(&id("shared:a"), &id("shared:b"), 1, at(1))),
        StoreError::AlreadyExists { reason: ExistsReason::SameId, .. }
    ));
    assert!(matches!(
        refused(s.store.rename(&id("shared:a"), &id("shared:b.md:c"), 1, at(1))),
        StoreError::AlreadyExists { reason: ExistsReason::FileDirectoryClash, .. }
    ));
    assert!(matches!(
        refused(s.store.rename(&id("shared:a"), &id("project:alp:z"), 1, at(1))),
        StoreError::LimitExceeded { .. }
    ));
    // Within its own scope root, an entry's key never clashes with itself, and the root does not grow.
    let renamed = s.store.rename(&id("shared:a"), &id("shared:c"), 1, at(1)).unwrap();
    assert_eq!(renamed.fields.key, Some(Key::parse("k").unwrap()));
    // A refused rename changed nothing.
    assert_eq!(
        listed_ids(&s.store.list(&Listing::new(vec![prefix("shared"), prefix("project")], at(2))).unwrap()),
        ["project:alp:x", "project:alp:y", "shared:b", "shared:c"]
    );
}

/// The check that version never passes the cap.
pub fn version_never_passes_the_cap(make: &Make) {
    let s = fresh(make);
    let mut entry = s.store.create(new("shared:v", "v"), at(0)).unwrap();
    for _ in 0..3 {
        entry = s.store.update(&id("shared:v"), entry.version, &Patch::default(), at(1)).unwrap();
    }
    assert_eq!(entry.version, 4);
    assert!(entry.version < MAX_VERSION);
    let error = StoreError::VersionLimit { id: id("shared:v"), limit: MAX_VERSION };
    assert!(error.to_string().contains("9007199254740991"), "{error}");
}

/// The check that a listing stops at the next entry once its caller gives up: raised before the call, nothing is
/// listed; raised while the store reads (a flag that raises itself at its eleventh check), the listing stops with
/// the cancellation error instead of finishing, so the store checks before each entry, not once per listing.
pub fn list_stops_when_its_caller_cancels(make: &Make) {
    let s = fresh(make);
    let entries: Vec<NewEntry> = (0..120).map(|i| new(&format!("shared:many:e{i:03}"), "many")).collect();
    s.store.write_batch(&Batch::new(entries, OnExisting::Fail), None, at(0)).unwrap();
    let listing =
        |cancel: Cancel| Listing::new(vec![prefix("shared")], at(1)).with_query("many").with_cancel(cancel);
    assert_eq!(
        s.store.list(&listing(Cancel::new())).unwrap().len(),
        120,
        "a flag that stays down stops nothing"
    );
    let cancelled = |result: Result<Vec<Scored>, StoreError>, when: &str| match result {
        Err(StoreError::Storage(e)) if e.kind() == StorageErrorKind::Cancelled => {
            assert_eq!(e.to_string(), Cancel::error().to_string());
        }
        other => panic!("a listing cancelled {when} must stop with the cancellation error, got {other:?}"),
    };
    let before = Cancel::new();
    before.cancel();
    cancelled(s.store.list(&listing(before)), "before it starts");
    cancelled(s.store.list(&listing(Cancel::after_checks(10))), "after ten entries");
}

// ----- history -----

fn versions(s: &Subject, text: &str) -> Vec<(u64, &'static str)> {
    s.store
        .history(&id(text), None)
        .unwrap()
        .iter()
        .map(|version| {
            let what = match version {
                Version::Entry(_) => "entry",
                Version::Redacted(_) => "redacted",
                Version::Tombstone { .. } => "tombstone",
            };
            (version.version(), what)
        })
        .collect()
}

fn content_of(version: &Version) -> &str {
    version.entry().map_or("<tombstone>", |entry| entry.content.as_str())
}

fn missing(result: Result<Version, StoreError>) -> VersionMissing {
    match result {
        Err(StoreError::VersionNotFound { missing, .. }) => missing,
        other => panic!("expected VersionNotFound, got {other:?}"),
    }
}

/// The check that a delete leaves a tombstone at the next version and a re-create continues past it.
pub fn delete_leaves_a_tombstone_and_a_re_create_continues(make: &Make) {
    let s = fresh(make);
    let target = id("shared:team:old");
    s.store.create(new("shared:team:old", "one"), at(0)).unwrap();
    s.store.update(&target, 1, &Patch::content_only("two"), at(1)).unwrap();
    s.store.delete(&target, 2, at(2)).unwrap();
    assert_eq!(versions(&s, "shared:team:old"), [(3, "tombstone"), (2, "entry"), (1, "entry")]);
    let tombstone = s.store.get_version(&target, 3).unwrap();
    assert_eq!(tombstone, Version::Tombstone { id: target.clone(), version: 3, deleted_at: at(2) });
    assert!(matches!(s.store.get(&target, at(3)), Err(StoreError::NotFound { expired: false, .. })));
    let again = s.store.create(new("shared:team:old", "three"), at(3)).unwrap();
    assert_eq!(again.version, 4, "one past the highest version the ID ever had");
    assert_eq!(s.store.get(&target, at(3)).unwrap(), again);
    assert_eq!(versions(&s, "shared:team:old"), [(4, "entry"), (3, "tombstone"), (2, "entry"), (1, "entry")]);
    let contents: Vec<String> = s
        .store
        .history(&target, None)
        .unwrap()
        .iter()
        .map(|version| content_of(version).to_owned())
        .collect();
    assert_eq!(contents, ["three", "<tombstone>", "two", "one"]);
    // An ID that never existed starts at 1.
    assert_eq!(s.store.create(new("shared:team:fresh", "x"), at(3)).unwrap().version, 1);
}

/// The check that a stale `expectedVersion` gets a conflict with the new version, or not found while deleted.
pub fn stale_expected_version_conflicts_or_finds_nothing(make: &Make) {
    let s = fresh(make);
    let target = id("project:alp:db");
    s.store.create(new("project:alp:db", "postgres"), at(0)).unwrap();
    s.store.delete(&target, 1, at(1)).unwrap();
    let gone = StoreError::NotFound { id: target.clone(), expired: false };
    assert_eq!(s.store.update(&target, 1, &Patch::content_only("stale"), at(2)).unwrap_err(), gone);
    assert_eq!(s.store.delete(&target, 1, at(2)).unwrap_err(), gone);
    s.store.create(new("project:alp:db", "sqlite"), at(3)).unwrap();
    let conflict = StoreError::VersionConflict { id: target.clone(), expected: 1, actual: 3 };
    assert_eq!(s.store.update(&target, 1, &Patch::content_only("stale"), at(4)).unwrap_err(), conflict);
    assert_eq!(s.store.delete(&target, 1, at(4)).unwrap_err(), conflict);
    assert_eq!(s.store.get(&target, at(4)).unwrap().content, "sqlite", "the stale writer changed nothing");
}

/// The check that a rename takes the next version of its new ID, keeps `updatedAt`, and tombstones the old ID.
pub fn rename_takes_the_next_version_and_tombstones_the_old(make: &Make) {
    let s = fresh(make);
    s.store.create(new("shared:b", "old b"), at(0)).unwrap();
    s.store.delete(&id("shared:b"), 1, at(1)).unwrap();
    s.store.create(new("shared:a", "a1"), at(2)).unwrap();
    let a = s.store.update(&id("shared:a"), 1, &Patch::content_only("a2"), at(3)).unwrap();
    let moved = s.store.rename(&id("shared:a"), &id("shared:b"), 2, at(9)).unwrap();
    assert_eq!(moved.version, 3, "one past b's tombstone at 2");
    assert_eq!((moved.created_at, moved.updated_at, moved.content.as_str()), (a.created_at, at(3), "a2"));
    assert_eq!(s.store.get(&id("shared:b"), at(9)).unwrap(), moved);
    assert_eq!(versions(&s, "shared:a"), [(3, "tombstone"), (2, "entry"), (1, "entry")]);
    assert_eq!(versions(&s, "shared:b"), [(3, "entry"), (2, "tombstone"), (1, "entry")]);
    // Into an ID that never existed: version 1.
    let fresh_id = s.store.rename(&id("shared:b"), &id("shared:c"), 3, at(10)).unwrap();
    assert_eq!(fresh_id.version, 1);
    assert_eq!(versions(&s, "shared:b"), [(4, "tombstone"), (3, "entry"), (2, "tombstone"), (1, "entry")]);
}

/// The check of the reproduction of a lost update through renames: create `a` and `c`, rename `a → b`, rename
/// `c → a`, then an update of `a` expecting version 1 must conflict.
pub fn renames_never_let_a_stale_writer_win(make: &Make) {
    let s = fresh(make);
    s.store.create(new("shared:a", "a's fact"), at(0)).unwrap();
    s.store.create(new("shared:c", "c's fact"), at(0)).unwrap();
    s.store.rename(&id("shared:a"), &id("shared:b"), 1, at(1)).unwrap();
    let moved = s.store.rename(&id("shared:c"), &id("shared:a"), 1, at(2)).unwrap();
    assert_eq!(moved.version, 3, "a had 1 and its tombstone 2");
    assert_eq!(
        s.store.update(&id("shared:a"), 1, &Patch::content_only("lost update"), at(3)),
        Err(StoreError::VersionConflict { id: id("shared:a"), expected: 1, actual: 3 })
    );
    assert_eq!(s.store.get(&id("shared:a"), at(3)).unwrap().content, "c's fact");
    assert_eq!(
        s.store.update(&id("shared:c"), 1, &Patch::content_only("lost update"), at(3)),
        Err(StoreError::NotFound { id: id("shared:c"), expired: false })
    );
}

/// The check that history lists newest first, the N newest with a limit, on expired entries too, and that an ID
/// without versions is not found.
pub fn history_lists_newest_first_with_a_limit(make: &Make) {
    let s = fresh(make);
    let target = id("private:w:note");
    s.store.create(with_ttl(new("private:w:note", "v1"), 1), at(0)).unwrap();
    s.store.update(&target, 1, &Patch::content_only("v2"), at(1)).unwrap();
    s.store.update(&target, 2, &Patch::content_only("v3"), at(2)).unwrap();
    let newest = s.store.history(&target, Some(2)).unwrap();
    assert_eq!(newest.iter().map(content_of).collect::<Vec<_>>(), ["v3", "v2"]);
    assert_eq!(
        newest[0],
        Version::Entry(s.store.get(&target, at(2)).unwrap()),
        "the current version, exactly"
    );
    // Expired: get finds nothing, history and get_version still do (forensics).
    assert!(s.store.get(&target, at(7200)).is_err());
    assert_eq!(s.store.history(&target, None).unwrap().len(), 3);
    assert_eq!(content_of(&s.store.get_version(&target, 1).unwrap()), "v1");
    assert_eq!(
        s.store.history(&id("private:w:never"), None),
        Err(StoreError::NotFound { id: id("private:w:never"), expired: false })
    );
}

/// The check that a version never written, one no longer kept and a tombstone are told apart.
pub fn get_version_says_which_version_is_missing(make: &Make) {
    let s = make(Limits { keep_versions: 2, ..Limits::default() });
    let target = id("shared:v");
    s.store.create(new("shared:v", "v1"), at(0)).unwrap();
    s.store.update(&target, 1, &Patch::content_only("v2"), at(1)).unwrap();
    s.store.update(&target, 2, &Patch::content_only("v3"), at(2)).unwrap();
    assert_eq!(missing(s.store.get_version(&target, 4)), VersionMissing::NeverWritten);
    assert_eq!(missing(s.store.get_version(&target, 1)), VersionMissing::NoLongerKept);
    assert_eq!(content_of(&s.store.get_version(&target, 2).unwrap()), "v2");
    let message = s.store.get_version(&target, 1).unwrap_err().to_string();
    assert!(message.contains("no longer kept") && message.contains("`shared:v`"), "{message}");
    assert!(s.store.get_version(&target, 9).unwrap_err().to_string().contains("never had version 9"));
    assert!(matches!(s.store.get_version(&id("shared:none"), 1), Err(StoreError::NotFound { .. })));
}

/// The check that a restore writes version M + 1 with the content and fields of version N, the current
/// `createdAt` and `updatedAt` now.
pub fn restore_writes_the_next_version_from_an_old_one(make: &Make) {
    let s = fresh(make);
    let target = id("project:alp:goal");
    let mut first = keyed("project:alp:goal", MemoryType::Project, "goal", None);
    first.content = "ship it".to_owned();
    first.fields.importance = Importance::High;
    s.store.create(first, at(0)).unwrap();
    let clear =
        Patch::new(Some("oops".to_owned()), vec![], vec![FieldName::Importance, FieldName::Key]).unwrap();
    s.store.update(&target, 1, &clear, at(5)).unwrap();
    let restored = s.store.restore(&target, 1, 2, at(9)).unwrap();
    assert_eq!((restored.version, restored.content.as_str()), (3, "ship it"));
    assert_eq!(restored.fields.importance, Importance::High);
    assert_eq!(restored.fields.key, Some(Key::parse("goal").unwrap()));
    assert_eq!((restored.created_at, restored.updated_at), (at(0), at(9)));
    assert_eq!(s.store.get(&target, at(9)).unwrap(), restored);
    assert_eq!(versions(&s, "project:alp:goal"), [(3, "entry"), (2, "entry"), (1, "entry")]);
    // A tombstone and a redacted version cannot be restored.
    s.store.delete(&target, 3, at(10)).unwrap();
    s.store.create(new("project:alp:goal", "again"), at(11)).unwrap();
    assert_eq!(
        missing(s.store.restore(&target, 4, 5, at(12)).map(Version::Entry)),
        VersionMissing::Tombstone
    );
    s.store.redact(&target, 2).unwrap();
    assert_eq!(
        s.store.restore(&target, 2, 5, at(12)),
        Err(StoreError::VersionRedacted { id: target.clone(), version: 2 })
    );
    assert_eq!(
        missing(s.store.restore(&target, 6, 5, at(12)).map(Version::Entry)),
        VersionMissing::NeverWritten
    );
    assert_eq!(s.store.get(&target, at(12)).unwrap().version, 5, "refused restores wrote nothing");
}

/// The check that a restore checks `expectedVersion` before the version it restores, and not found first.
pub fn restore_checks_the_expected_version_first(make: &Make) {
    let s = fresh(make);
    let target = id("shared:r");
    s.store.create(new("shared:r", "r1"), at(0)).unwrap();
    s.store.update(&target, 1, &Patch::content_only("r2"), at(1)).unwrap();
    assert_eq!(
        s.store.restore(&target, 99, 1, at(2)),
        Err(StoreError::VersionConflict { id: target.clone(), expected: 1, actual: 2 })
    );
    assert_eq!(
        s.store.restore(&id("shared:none"), 1, 1, at(2)),
        Err(StoreError::NotFound { id: id("shared:none"), expired: false })
    );
    let expiring = id("shared:e");
    s.store.create(with_ttl(new("shared:e", "e"), 1), at(0)).unwrap();
    assert_eq!(
        s.store.restore(&expiring, 1, 1, at(7200)),
        Err(StoreError::NotFound { id: expiring.clone(), expired: true })
    );
}

/// The check that a restore of a deleted ID brings it back at the tombstone's version plus one, under the create
/// rules (the entry count, the (type, key, scope) rule).
pub fn restore_undeletes_under_the_create_rules(make: &Make) {
    let s = make(Limits { max_entries_per_scope_root: 2, ..Limits::default() });
    let target = id("shared:k");
    s.store.create(keyed("shared:k", MemoryType::Task, "k", None), at(0)).unwrap();
    s.store.delete(&target, 1, at(1)).unwrap();
    assert_eq!(
        s.store.restore(&target, 1, 1, at(2)),
        Err(StoreError::VersionConflict { id: target.clone(), expected: 1, actual: 2 }),
        "on a deleted ID the expected version is the tombstone's"
    );
    // Another entry took the key meanwhile.
    s.store.create(keyed("shared:other", MemoryType::Task, "k", None), at(2)).unwrap();
    let (reason, _, existing) = exists_reason(s.store.restore(&target, 1, 2, at(3)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::DuplicateKey, "shared:other"));
    s.store.delete(&id("shared:other"), 1, at(3)).unwrap();
    // The scope root is full.
    s.store.create(new("shared:x", "x"), at(3)).unwrap();
    s.store.create(new("shared:y", "y"), at(3)).unwrap();
    assert!(matches!(s.store.restore(&target, 1, 2, at(4)), Err(StoreError::LimitExceeded { limit: 2, .. })));
    s.store.delete(&id("shared:y"), 1, at(4)).unwrap();
    let back = s.store.restore(&target, 1, 2, at(5)).unwrap();
    assert_eq!(
        (back.version, back.content.as_str(), back.created_at, back.updated_at),
        (3, "keyed", at(0), at(5))
    );
    assert_eq!(s.store.get(&target, at(5)).unwrap(), back);
}

/// The check that a redaction erases the content of one version, keeps its fields, and refuses the current version.
pub fn redact_erases_content_and_keeps_fields(make: &Make) {
    let s = fresh(make);
    let target = id("private:w:oops");
    let mut first = new("private:w:oops", "the password is hunter2");
    first.fields.importance = Importance::Critical;
    s.store.create(first, at(0)).unwrap();
    s.store.update(&target, 1, &Patch::content_only("no secret here"), at(1)).unwrap();
    assert_eq!(s.store.redact(&target, 2), Err(StoreError::RedactCurrent { id: target.clone(), version: 2 }));
    s.store.redact(&target, 1).unwrap();
    match s.store.get_version(&target, 1).unwrap() {
        Version::Redacted(entry) => {
            assert_eq!((entry.content.as_str(), entry.version), ("", 1));
            assert_eq!(
                (entry.fields.importance, entry.created_at, entry.updated_at),
                (Importance::Critical, at(0), at(0))
            );
        }
        other => panic!("expected a redacted version, got {other:?}"),
    }
    s.store.redact(&target, 1).unwrap();
    assert_eq!(versions(&s, "private:w:oops"), [(2, "entry"), (1, "redacted")]);
    assert_eq!(
        s.store.get(&target, at(2)).unwrap().content,
        "no secret here",
        "the current entry is untouched"
    );
    // The last version before a tombstone may be redacted; the tombstone has nothing to redact.
    s.store.delete(&target, 2, at(3)).unwrap();
    s.store.redact(&target, 2).unwrap();
    assert_eq!(
        missing(s.store.redact(&target, 3).map(|()| Version::Tombstone {
            id: target.clone(),
            version: 3,
            deleted_at: at(3),
        })),
        VersionMissing::Tombstone
    );
    assert_eq!(
        missing(s.store.redact(&target, 7).map(|()| s.store.get_version(&target, 7).unwrap())),
        VersionMissing::NeverWritten
    );
    assert_eq!(versions(&s, "private:w:oops"), [(3, "tombstone"), (2, "redacted"), (1, "redacted")]);
}

/// The check that `keepVersions` keeps the newest versions (tombstones count) and never drops the highest.
pub fn keep_versions_drops_the_oldest_never_the_highest(make: &Make) {
    let s = make(Limits { keep_versions: 3, ..Limits::default() });
    let target = id("shared:many");
    let mut entry = s.store.create(new("shared:many", "1"), at(0)).unwrap();
    for n in 2..=5 {
        entry = s.store.update(&target, entry.version, &Patch::content_only(n.to_string()), at(n)).unwrap();
    }
    assert_eq!(versions(&s, "shared:many"), [(5, "entry"), (4, "entry"), (3, "entry")]);
    s.store.delete(&target, 5, at(6)).unwrap();
    assert_eq!(versions(&s, "shared:many"), [(6, "tombstone"), (5, "entry"), (4, "entry")]);
    let one = make(Limits { keep_versions: 1, ..Limits::default() });
    one.store.create(new("shared:one", "a"), at(0)).unwrap();
    one.store.update(&id("shared:one"), 1, &Patch::content_only("b"), at(1)).unwrap();
    one.store.delete(&id("shared:one"), 2, at(2)).unwrap();
    assert_eq!(versions(&one, "shared:one"), [(3, "tombstone")]);
    assert_eq!(one.store.create(new("shared:one", "c"), at(3)).unwrap().version, 4, "the highest was kept");
    assert_eq!(versions(&one, "shared:one"), [(4, "entry")]);
}

/// The check that deleting an expired entry (prune) leaves a tombstone too.
pub fn prune_leaves_a_tombstone(make: &Make) {
    let s = fresh(make);
    let target = id("project:alp:short");
    s.store.create(with_ttl(new("project:alp:short", "x"), 1), at(0)).unwrap();
    s.store.delete_expired(&target, 1, at(7200)).unwrap();
    assert_eq!(versions(&s, "project:alp:short"), [(2, "tombstone"), (1, "entry")]);
    assert_eq!(s.store.create(new("project:alp:short", "y"), at(7201)).unwrap().version, 3);
}

/// The check that the creates of a batch (an import) continue a deleted ID's versions.
pub fn batch_creates_continue_a_deleted_ids_versions(make: &Make) {
    let s = fresh(make);
    s.store.create(new("project:alp:a", "a"), at(0)).unwrap();
    s.store.delete(&id("project:alp:a"), 1, at(1)).unwrap();
    let batch = Batch::new(vec![new("project:alp:a", "again"), new("project:alp:b", "b")], OnExisting::Fail);
    let written = s.store.write_batch(&batch, None, at(2)).unwrap();
    assert_eq!(written.iter().map(|e| e.version).collect::<Vec<_>>(), [3, 1]);
    assert_eq!(s.store.get(&id("project:alp:a"), at(2)).unwrap(), written[0]);
}

/// The check, for a store that keeps no history yet, that history says so instead of answering wrongly (a stand-in
/// reference store passes too).
pub fn history_unsupported_says_so(make: &Make) {
    let s = fresh(make);
    s.store.create(new("shared:a", "a"), at(0)).unwrap();
    match s.store.history(&id("shared:a"), None) {
        Err(StoreError::Storage(error)) => {
            assert_eq!(error.kind(), StorageErrorKind::Unsupported);
            assert!(error.to_string().contains("no version history"), "{error}");
            assert!(matches!(s.store.redact(&id("shared:a"), 1), Err(StoreError::Storage(_))));
            assert!(matches!(s.store.restore(&id("shared:a"), 1, 1, at(1)), Err(StoreError::Storage(_))));
        }
        Ok(kept) => assert_eq!(kept.len(), 1, "a stand-in store with history"),
        Err(other) => panic!("expected history or Unsupported, got {other:?}"),
    }
}

// ----- the history model -----

/// One step of [`check_history_model`], over the IDs `shared:a`, `shared:b` and `shared:c` (by index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryOp {
    /// Create the ID with content `c<content>`.
    Create {
        /// Which ID.
        id: usize,
        /// Names the content.
        content: u8,
    },
    /// Update it to `c<content>`, expecting its version plus `delta`.
    Update {
        /// Which ID.
        id: usize,
        /// Added to the version read (0: the right one).
        delta: i8,
        /// Names the content.
        content: u8,
    },
    /// Delete it, expecting its version plus `delta`.
    Delete {
        /// Which ID.
        id: usize,
        /// Added to the version read.
        delta: i8,
    },
    /// Rename `from` to `to` (two different IDs), expecting `from`'s version plus `delta`.
    Rename {
        /// The ID moved.
        from: usize,
        /// Where it goes.
        to: usize,
        /// Added to the version read.
        delta: i8,
    },
    /// Restore the version `back` below the ID's highest, expecting the current (or tombstone's) version plus
    /// `delta`.
    Restore {
        /// Which ID.
        id: usize,
        /// How far below the highest version.
        back: u8,
        /// Added to the version expected.
        delta: i8,
    },
}

/// How many versions the model keeps per ID: small, so that sequences drop versions (the `prune` of the model).
pub const MODEL_KEEP_VERSIONS: u64 = 4;

/// The IDs the model uses.
const MODEL_IDS: [&str; 3] = ["shared:a", "shared:b", "shared:c"];

/// What a call ended with, as the model compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok(u64),
    NotFound,
    Conflict(u64),
    Exists,
    Missing(VersionMissing),
    Redacted,
}

fn outcome(result: Result<u64, StoreError>) -> Outcome {
    match result {
        Ok(version) => Outcome::Ok(version),
        Err(StoreError::NotFound { .. }) => Outcome::NotFound,
        Err(StoreError::VersionConflict { actual, .. }) => Outcome::Conflict(actual),
        Err(StoreError::AlreadyExists { .. }) => Outcome::Exists,
        Err(StoreError::VersionNotFound { missing, .. }) => Outcome::Missing(missing),
        Err(StoreError::VersionRedacted { .. }) => Outcome::Redacted,
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

/// The reference: per ID, its kept versions oldest first (`None` is a tombstone), the current one last.
#[derive(Default)]
struct Reference(std::collections::BTreeMap<usize, Vec<(u64, Option<String>)>>);

impl Reference {
    fn highest(&self, id: usize) -> Option<u64> {
        self.0.get(&id).and_then(|kept| kept.last()).map(|(version, _)| *version)
    }
    fn current(&self, id: usize) -> Option<(u64, String)> {
        self.0.get(&id).and_then(|kept| kept.last()).and_then(|(v, c)| c.clone().map(|c| (*v, c)))
    }
    fn push(&mut self, id: usize, content: Option<String>) -> u64 {
        let version = self.highest(id).map_or(1, |v| v + 1);
        let kept = self.0.entry(id).or_default();
        kept.push((version, content));
        let drop = kept.len().saturating_sub(MODEL_KEEP_VERSIONS as usize);
        kept.drain(..drop);
        version
    }
    fn live(&self, id: usize, expected: u64) -> Result<(u64, String), Outcome> {
        let (version, content) = self.current(id).ok_or(Outcome::NotFound)?;
        if version == expected { Ok((version, content)) } else { Err(Outcome::Conflict(version)) }
    }
}

fn with_delta(version: u64, delta: i8) -> u64 {
    version.saturating_add_signed(i64::from(delta))
}

/// Runs `ops` against a fresh store (keeping [`MODEL_KEEP_VERSIONS`]) and against the reference, and checks after
/// every step that both answered alike, that every ID's history (versions, contents, tombstones) is the
/// reference's, and that no (ID, version) pair ever stood for two different contents.
pub fn check_history_model(make: &Make, ops: &[HistoryOp]) {
    let s = make(Limits { keep_versions: MODEL_KEEP_VERSIONS, ..Limits::default() });
    let mut model = Reference::default();
    let mut ledger: std::collections::BTreeMap<(usize, u64), Option<String>> =
        std::collections::BTreeMap::new();
    let read = |model: &Reference, i: usize| model.current(i).map_or(1, |(v, _)| v);
    for (step, op) in ops.iter().enumerate() {
        let now = at(step as i64);
        let (got, want) = match *op {
            HistoryOp::Create { id: i, content } => {
                let text = format!("c{content}");
                let got = s.store.create(new(MODEL_IDS[i], &text), now).map(|e| e.version);
                let want = if model.current(i).is_some() {
                    Outcome::Exists
                } else {
                    Outcome::Ok(model.push(i, Some(text)))
                };
                (outcome(got), want)
            }
            HistoryOp::Update { id: i, delta, content } => {
                let text = format!("c{content}");
                let expected = with_delta(read(&model, i), delta);
                let got =
                    s.store.update(&id(MODEL_IDS[i]), expected, &Patch::content_only(text.clone()), now);
                let want = match model.live(i, expected) {
                    Ok(_) => Outcome::Ok(model.push(i, Some(text))),
                    Err(refused) => refused,
                };
                (outcome(got.map(|e| e.version)), want)
            }
            HistoryOp::Delete { id: i, delta } => {
                let expected = with_delta(read(&model, i), delta);
                let got = s.store.delete(&id(MODEL_IDS[i]), expected, now).map(|()| 0);
                let want = match model.live(i, expected) {
                    Ok(_) => {
                        model.push(i, None);
                        Outcome::Ok(0)
                    }
                    Err(refused) => refused,
                };
                (outcome(got), want)
            }
            HistoryOp::Rename { from, to, delta } => {
                let expected = with_delta(read(&model, from), delta);
                let got = s.store.rename(&id(MODEL_IDS[from]), &id(MODEL_IDS[to]), expected, now);
                let want = match model.live(from, expected) {
                    Err(refused) => refused,
                    Ok(_) if model.current(to).is_some() => Outcome::Exists,
                    Ok((_, content)) => {
                        model.push(from, None);
                        Outcome::Ok(model.push(to, Some(content)))
                    }
                };
                (outcome(got.map(|e| e.version)), want)
            }
            HistoryOp::Restore { id: i, back, delta } => {
                let highest = model.highest(i).unwrap_or(1);
                let version = highest.saturating_sub(u64::from(back)).max(1);
                let expected = with_delta(highest, delta);
                let got = s.store.restore(&id(MODEL_IDS[i]), version, expected, now).map(|e| e.version);
                let want = match (model.highest(i), model.current(i)) {
                    (None, _) => Outcome::NotFound,
                    (Some(actual), _) if actual != expected => Outcome::Conflict(actual),
                    (Some(_), _) => match model.0[&i].iter().find(|(v, _)| *v == version).cloned() {
                        None => Outcome::Missing(VersionMissing::NoLongerKept),
                        Some((_, None)) => Outcome::Missing(VersionMissing::Tombstone),
                        Some((_, Some(content))) => Outcome::Ok(model.push(i, Some(content))),
                    },
                };
                (outcome(got), want)
            }
        };
        assert_eq!(got, want, "step {step}: {op:?}");
        for (i, text) in MODEL_IDS.iter().enumerate() {
            let want: Vec<(u64, Option<String>)> =
                model.0.get(&i).map(|kept| kept.iter().rev().cloned().collect()).unwrap_or_default();
            let have: Vec<(u64, Option<String>)> = match s.store.history(&id(text), None) {
                Ok(kept) => {
                    kept.iter().map(|v| (v.version(), v.entry().map(|e| e.content.clone()))).collect()
                }
                Err(StoreError::NotFound { .. }) => Vec::new(),
                Err(other) => panic!("history of {text}: {other:?}"),
            };
            assert_eq!(have, want, "history of {text} after step {step}: {op:?}");
            for (version, content) in have {
                let seen = ledger.entry((i, version)).or_insert_with(|| content.clone());
                assert_eq!(*seen, content, "({text}, {version}) stood for two contents");
            }
            let live = s.store.get(&id(text), now).ok().map(|e| (e.version, e.content));
            assert_eq!(live, model.current(i), "current {text} after step {step}");
        }
    }
}
