//! The adapter suite: what every [`MemoryStore`] must do, written once and run against every adapter.
//!
//! To check another adapter, give [`adapter_suite!`] a module name and a constructor taking the [`Limits`] to
//! enforce and returning a [`Subject`] (the store, plus anything that must live as long as it, such as a temporary
//! directory). Each check becomes its own test, named after the figure it checks.

use std::any::Any;

use memory_id::MemoryPrefix;
use memory_store::{
    EntryPatch, ExistsReason, ExpiryFilter, Importance, InMemoryStore, Kind, Limits, ListQuery,
    MarkdownStore, MemoryEntry, MemoryStore, MemoryType, NewEntry, StoreError, Ttl, TtlUnit,
};

use crate::{at, id};

/// A store under test and whatever must outlive it.
pub(crate) struct Subject<S> {
    /// The store.
    pub(crate) store: S,
    /// Kept alive for as long as the store is used (a temporary root, …).
    pub(crate) _keep: Box<dyn Any>,
}

/// Builds a fresh, empty store enforcing the given limits.
pub(crate) type Make<S> = dyn Fn(Limits) -> Subject<S>;

/// One test per check of the suite, in a module named `$name`, for the adapter built by `$make`.
macro_rules! adapter_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            use super::*;
            adapter_suite!(@checks $make;
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
                limit_refuses_the_501st_entry_with_limit_and_count,
                limit_is_per_scope_root_and_counts_expired,
                content_round_trips_byte_for_byte,
                imported_timestamps_are_kept,
                timestamps_are_kept_to_the_millisecond,
            );
        }
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[test]
            fn $check() {
                crate::adapter_suite::$check(&$make);
            }
        )+
    };
}

fn in_memory(limits: Limits) -> Subject<InMemoryStore> {
    Subject { store: InMemoryStore::with_limits(limits), _keep: Box::new(()) }
}

fn markdown(limits: Limits) -> Subject<MarkdownStore> {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open_with_limits(dir.path().join("memory"), limits).unwrap();
    Subject { store, _keep: Box::new(dir) }
}

fn markdown_component_walk(limits: Limits) -> Subject<MarkdownStore> {
    let dir = tempfile::tempdir().unwrap();
    let options = memory_store::StoreOptions::new().limits(limits).force_component_walk(true);
    let store = MarkdownStore::open_with(dir.path().join("memory"), options).unwrap();
    Subject { store, _keep: Box::new(dir) }
}

adapter_suite!(in_memory_store, in_memory);
adapter_suite!(markdown_store, markdown);
adapter_suite!(markdown_store_component_walk, markdown_component_walk);

// ----- helpers -----

fn fresh<S: MemoryStore>(make: &Make<S>) -> Subject<S> {
    make(Limits::default())
}

fn new(text: &str, content: &str) -> NewEntry {
    NewEntry::new(id(text), content)
}

fn keyed(text: &str, memory_type: MemoryType, key: &str, scope: Option<&str>) -> NewEntry {
    let mut entry = new(text, "keyed");
    entry.memory_type = Some(memory_type);
    entry.key = Some(key.to_owned());
    entry.scope = scope.map(str::to_owned);
    entry
}

fn with_ttl(mut entry: NewEntry, hours: u64) -> NewEntry {
    entry.ttl = Some(Ttl::new(hours, TtlUnit::Hours).unwrap());
    entry
}

fn prefix(text: &str) -> MemoryPrefix {
    MemoryPrefix::parse(text).unwrap()
}

fn ids(entries: &[MemoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

fn exists_reason(result: Result<MemoryEntry, StoreError>) -> (ExistsReason, String, String) {
    match result {
        Err(StoreError::AlreadyExists { id, existing, reason }) => (reason, id.into_string(), existing),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
}

// ----- checks -----

pub(crate) fn create_never_overwrites<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    let created = s.store.create(new("shared:team:onboarding", "first"), at(0)).unwrap();
    assert_eq!((created.version, created.kind, created.importance), (1, Kind::Reference, Importance::Medium));
    assert_eq!((created.created_at, created.updated_at), (at(0), at(0)));
    let (reason, who, existing) =
        exists_reason(s.store.create(new("shared:team:onboarding", "second"), at(1)));
    assert_eq!(reason, ExistsReason::SameId);
    assert_eq!((who.as_str(), existing.as_str()), ("shared:team:onboarding", "shared:team:onboarding"));
    assert_eq!(s.store.get(&id("shared:team:onboarding"), at(2)).unwrap(), created);
}

pub(crate) fn not_found_reports_expiry<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    let missing = id("shared:nothing");
    assert_eq!(
        s.store.get(&missing, at(0)),
        Err(StoreError::NotFound { id: missing.clone(), expired: false })
    );
    let patch = EntryPatch::default();
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

pub(crate) fn already_exists_for_same_id_and_expired_id<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    s.store.create(with_ttl(new("private:worker:draft", "x"), 1), at(0)).unwrap();
    let (reason, _, existing) = exists_reason(s.store.create(new("private:worker:draft", "y"), at(10)));
    assert_eq!((reason, existing.as_str()), (ExistsReason::SameId, "private:worker:draft"));
    let error = s.store.create(new("private:worker:draft", "y"), at(7200)).unwrap_err();
    assert!(error.to_string().contains("prune"), "{error}");
    let (reason, _, existing) = exists_reason(Err(error));
    assert_eq!((reason, existing.as_str()), (ExistsReason::Expired, "private:worker:draft"));
}

pub(crate) fn file_directory_clash_names_the_holder_both_ways<S: MemoryStore>(make: &Make<S>) {
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

pub(crate) fn duplicate_type_key_scope_names_the_holder<S: MemoryStore>(make: &Make<S>) {
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
    let patch = EntryPatch { memory_type: Some(Some(MemoryType::Decision)), ..EntryPatch::default() };
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

pub(crate) fn version_conflict_carries_id_expected_and_actual<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    let target = id("shared:cas");
    s.store.create(new("shared:cas", "v1"), at(0)).unwrap();
    s.store.update(&target, 1, &EntryPatch::default(), at(1)).unwrap();
    let conflict = s.store.update(&target, 1, &EntryPatch::default(), at(2)).unwrap_err();
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

pub(crate) fn update_keeps_unset_fields_bumps_by_1_and_clears<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    let target = id("project:alp:goal");
    let mut full = keyed("project:alp:goal", MemoryType::Project, "goal", Some("feat-dashboard"));
    full.kind = Kind::Decision;
    full.importance = Importance::High;
    full.source = Some("worker".to_owned());
    full.ttl = Some(Ttl::parse("90d").unwrap());
    let created = s.store.create(full, at(0)).unwrap();

    // An empty patch still bumps the version by one and moves updatedAt.
    let bumped = s.store.update(&target, 1, &EntryPatch::default(), at(5)).unwrap();
    assert_eq!(bumped.version, 2);
    assert_eq!(bumped.updated_at, at(5));
    assert_eq!(
        MemoryEntry { version: 1, updated_at: at(0), ..bumped.clone() },
        created,
        "nothing else changed"
    );

    // Changing one field keeps the others.
    let patch = EntryPatch { content: Some("new text".to_owned()), ..EntryPatch::default() };
    let changed = s.store.update(&target, 2, &patch, at(6)).unwrap();
    assert_eq!((changed.version, changed.content.as_str()), (3, "new text"));
    assert_eq!((changed.key.as_deref(), changed.source.as_deref()), (Some("goal"), Some("worker")));
    assert_eq!(
        (changed.kind, changed.importance, changed.created_at),
        (Kind::Decision, Importance::High, at(0))
    );

    // Clearing: optional fields go, kind and importance return to their defaults.
    let clear = EntryPatch {
        kind: Some(Kind::default()),
        importance: Some(Importance::default()),
        memory_type: Some(None),
        key: Some(None),
        source: Some(None),
        scope: Some(None),
        ttl: Some(None),
        ..EntryPatch::default()
    };
    let cleared = s.store.update(&target, 3, &clear, at(7)).unwrap();
    assert_eq!(cleared.version, 4);
    assert_eq!((cleared.kind, cleared.importance), (Kind::Reference, Importance::Medium));
    assert_eq!(
        (&cleared.memory_type, &cleared.key, &cleared.source, &cleared.scope, &cleared.ttl),
        (&None, &None, &None, &None, &None)
    );
    assert_eq!(cleared.content, "new text");
    assert_eq!(s.store.get(&target, at(8)).unwrap(), cleared, "get returns what update returned");
}

pub(crate) fn delete_then_gone<S: MemoryStore>(make: &Make<S>) {
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
    // A delete followed by a re-create starts again at version 1 (a documented limit).
    assert_eq!(s.store.create(new("shared:team:old", "again"), at(2)).unwrap().version, 1);
}

pub(crate) fn delete_expired_only_expired_at_expected_version<S: MemoryStore>(make: &Make<S>) {
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

pub(crate) fn list_filters_on_every_field_and_expiry_mode<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    let mut a = keyed("shared:a", MemoryType::Decision, "k1", Some("feat-x"));
    a.kind = Kind::Fact;
    a.importance = Importance::Critical;
    a.source = Some("main".to_owned());
    let mut b = keyed("shared:b", MemoryType::Task, "k2", Some("task-y"));
    b.kind = Kind::Log;
    b.source = Some("worker".to_owned());
    let c = with_ttl(new("shared:c", "short-lived"), 1);
    for entry in [a, b, c] {
        s.store.create(entry, at(0)).unwrap();
    }
    let all = [prefix("shared")];
    let list = |query: ListQuery, secs: i64| ids(&s.store.list(&all, &query, at(secs)).unwrap()).join(",");
    let q = ListQuery::default;
    assert_eq!(list(q(), 10), "shared:a,shared:b,shared:c");
    assert_eq!(list(ListQuery { kind: Some(Kind::Fact), ..q() }, 10), "shared:a");
    assert_eq!(list(ListQuery { kind: Some(Kind::Reference), ..q() }, 10), "shared:c");
    assert_eq!(list(ListQuery { memory_type: Some(MemoryType::Task), ..q() }, 10), "shared:b");
    assert_eq!(list(ListQuery { importance: Some(Importance::Critical), ..q() }, 10), "shared:a");
    assert_eq!(list(ListQuery { importance: Some(Importance::Medium), ..q() }, 10), "shared:b,shared:c");
    assert_eq!(list(ListQuery { key: Some("k2".to_owned()), ..q() }, 10), "shared:b");
    assert_eq!(list(ListQuery { source: Some("main".to_owned()), ..q() }, 10), "shared:a");
    assert_eq!(list(ListQuery { scope: Some("feat-x".to_owned()), ..q() }, 10), "shared:a");
    assert_eq!(list(ListQuery { scope: Some("feat".to_owned()), ..q() }, 10), "");
    assert_eq!(
        list(ListQuery { kind: Some(Kind::Log), memory_type: Some(MemoryType::Decision), ..q() }, 10),
        "",
        "filters combine"
    );
    // Expiry modes, at 10 s (all live) and 2 h (c expired).
    assert_eq!(list(q(), 7200), "shared:a,shared:b");
    assert_eq!(list(ListQuery { expiry: ExpiryFilter::Expired, ..q() }, 10), "");
    assert_eq!(list(ListQuery { expiry: ExpiryFilter::Expired, ..q() }, 7200), "shared:c");
    assert_eq!(list(ListQuery { expiry: ExpiryFilter::Any, ..q() }, 7200), "shared:a,shared:b,shared:c");
}

pub(crate) fn list_stays_inside_roots_sorted_without_duplicates<S: MemoryStore>(make: &Make<S>) {
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
        ids(&s.store.list(&roots, &ListQuery::default(), at(1)).unwrap()).join(",")
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

pub(crate) fn limit_refuses_the_501st_entry_with_limit_and_count<S: MemoryStore>(make: &Make<S>) {
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
    s.store.update(&id("project:alp:n:000"), 1, &EntryPatch::default(), at(1)).unwrap();
    // Freeing one place makes room for one.
    s.store.delete(&id("project:alp:n:499"), 1, at(1)).unwrap();
    s.store.create(new("project:alp:n:500", "x"), at(1)).unwrap();
}

pub(crate) fn limit_is_per_scope_root_and_counts_expired<S: MemoryStore>(make: &Make<S>) {
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

pub(crate) fn content_round_trips_byte_for_byte<S: MemoryStore>(make: &Make<S>) {
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
        let patch = EntryPatch { content: Some(format!("{content}+")), ..EntryPatch::default() };
        let updated = s.store.update(&target, 1, &patch, at(1)).unwrap();
        assert_eq!(s.store.get(&target, at(1)).unwrap(), updated, "content {n} after update");
    }
}

pub(crate) fn imported_timestamps_are_kept<S: MemoryStore>(make: &Make<S>) {
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

pub(crate) fn timestamps_are_kept_to_the_millisecond<S: MemoryStore>(make: &Make<S>) {
    let s = fresh(make);
    let precise = memory_store::Timestamp::parse("2026-11-29T12:00:00.123456789Z").unwrap();
    let millis = memory_store::Timestamp::parse("2026-11-29T12:00:00.123Z").unwrap();
    let created = s.store.create(new("shared:precise", "x"), precise).unwrap();
    assert_eq!((created.created_at, created.updated_at), (millis, millis));
    assert_eq!(s.store.get(&id("shared:precise"), precise).unwrap(), created);
    let updated = s.store.update(&id("shared:precise"), 1, &EntryPatch::default(), precise).unwrap();
    assert_eq!(updated.updated_at, millis);
    assert_eq!(s.store.get(&id("shared:precise"), precise).unwrap(), updated);
}
