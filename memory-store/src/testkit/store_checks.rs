//! The checks every store passes, history or not: the create rules, conflicts, listings, limits, batches, renames
//! and the version cap.

use memory_id::MemoryPrefix;

use crate::{Batch, Cancel, Expiry, Listing, MemoryStore, OnExisting, Order, Scored, SkipReason, Step};
use memory_entry::{
    ExistsReason, FieldName, FieldValue, Fields, Filter, Importance, Key, Kind, Limits, MAX_VERSION,
    MemoryEntry, MemoryType, NewEntry, Patch, Source, StorageErrorKind, StoreError, Timestamp, Ttl,
};

use super::Make;
use super::fixtures::*;

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
