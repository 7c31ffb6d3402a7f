//! The checks of version history: tombstones, renames, history listings, version lookups, restores, redaction
//! and `history.keepVersions`; and what a store without history says.

use crate::{Batch, MemoryStore, OnExisting};
use memory_entry::{
    ExistsReason, FieldName, Importance, Key, Limits, MemoryType, Patch, StorageErrorKind, StoreError,
    Version, VersionMissing,
};

use super::fixtures::*;
use super::{Make, Subject};

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
