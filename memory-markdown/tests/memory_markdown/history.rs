//! History on disk: the layout under `<root>/history/`, the hand-written note kept when alp first overwrites it,
//! versions left by a crash ignored and overwritten, history never listed or counted, redaction gone from every
//! file, the hardening rules under `history/`, and `history.keepVersions` from `config.yaml`.

use std::path::Path;

use memory_entry::{Limits, NewEntry, Patch, StoreError, Version};
use memory_id::MemoryPrefix;
use memory_markdown::MarkdownStore;
use memory_store::{Listing, MemoryStore};

use crate::{at, id, snapshot_tree};

fn store(root: &Path, limits: Limits) -> MarkdownStore {
    MarkdownStore::open_with_limits(root, limits).unwrap()
}

fn numbers(store: &MarkdownStore, text: &str) -> Vec<u64> {
    store.history(&id(text), None).unwrap().iter().map(Version::version).collect()
}

#[test]
fn versions_live_under_history_by_entry_path_in_16_digits() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    s.create(NewEntry::new(id("shared:a:b"), "one"), at(0)).unwrap();
    s.update(&id("shared:a:b"), 1, &Patch::content_only("two"), at(1)).unwrap();
    s.delete(&id("shared:a:b"), 2, at(2)).unwrap();
    let versions = dir.path().join("history/shared/a/b.md");
    let mut names: Vec<String> = std::fs::read_dir(&versions)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["0000000000000001.md", "0000000000000002.md", "0000000000000003.md"]);
    let first = std::fs::read_to_string(versions.join("0000000000000001.md")).unwrap();
    assert!(first.contains("version: 1\n") && first.ends_with("---\none"), "{first}");
    let tombstone = std::fs::read_to_string(versions.join("0000000000000003.md")).unwrap();
    assert_eq!(tombstone, "---\nversion: 3\nupdatedAt: 2026-09-21T14:13:22.000Z\ndeleted: true\n---\n");
    for name in &names {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(versions.join(name)).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("history")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    // A store opened afresh reads the same history, and a re-create continues past the tombstone.
    let again = store(dir.path(), Limits::default());
    assert_eq!(numbers(&again, "shared:a:b"), [3, 2, 1]);
    assert_eq!(again.create(NewEntry::new(id("shared:a:b"), "three"), at(3)).unwrap().version, 4);
}

#[test]
fn a_hand_written_note_is_kept_the_first_time_alp_overwrites_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("shared")).unwrap();
    std::fs::write(dir.path().join("shared/note.md"), "a person's text, no frontmatter\n").unwrap();
    let s = store(dir.path(), Limits::default());
    // Before alp writes it, the note is its own history.
    assert_eq!(numbers(&s, "shared:note"), [1]);
    s.update(&id("shared:note"), 1, &Patch::content_only("an agent's text"), at(1)).unwrap();
    let kept = s.get_version(&id("shared:note"), 1).unwrap();
    assert_eq!(kept.entry().unwrap().content, "a person's text, no frontmatter\n");
    // A person's edit of the current file (same version) is kept too, as read when alp next writes.
    let current = dir.path().join("shared/note.md");
    let edited = std::fs::read_to_string(&current).unwrap().replace("an agent's text", "edited by hand");
    std::fs::write(&current, edited).unwrap();
    s.update(&id("shared:note"), 2, &Patch::content_only("agent again"), at(2)).unwrap();
    assert_eq!(s.get_version(&id("shared:note"), 2).unwrap().entry().unwrap().content, "edited by hand");
}

#[test]
fn history_is_never_listed_and_never_counted() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits { max_entries_per_scope_root: 2, ..Limits::default() });
    let mut entry = s.create(NewEntry::new(id("shared:a"), "a"), at(0)).unwrap();
    for n in 1..=5 {
        entry =
            s.update(&id("shared:a"), entry.version, &Patch::content_only(format!("a{n}")), at(n)).unwrap();
    }
    s.create(NewEntry::new(id("shared:gone"), "x"), at(0)).unwrap();
    s.delete(&id("shared:gone"), 1, at(1)).unwrap();
    // One more fits: history files and tombstones take no place in the scope root.
    s.create(NewEntry::new(id("shared:b"), "b"), at(6)).unwrap();
    let roots = ["shared", "project", "private"].map(|p| MemoryPrefix::parse(p).unwrap()).to_vec();
    let listed: Vec<String> =
        s.list(&Listing::new(roots, at(7))).unwrap().into_iter().map(|e| e.entry.id.into_string()).collect();
    assert_eq!(listed, ["shared:a", "shared:b"]);
    assert!(matches!(
        s.create(NewEntry::new(id("shared:c"), "c"), at(7)),
        Err(StoreError::LimitExceeded { .. })
    ));
}

#[test]
fn a_version_written_to_history_but_not_made_current_is_ignored_then_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    s.create(NewEntry::new(id("shared:c"), "one"), at(0)).unwrap();
    s.update(&id("shared:c"), 1, &Patch::content_only("two"), at(1)).unwrap();
    // What a delete killed between its tombstone and the unlink leaves behind.
    let versions = dir.path().join("history/shared/c.md");
    std::fs::write(
        versions.join("0000000000000003.md"),
        "---\nversion: 3\nupdatedAt: 2026-09-21T14:13:22.000Z\ndeleted: true\n---\n",
    )
    .unwrap();
    assert_eq!(numbers(&s, "shared:c"), [2, 1], "the leftover does not count");
    assert_eq!(s.get(&id("shared:c"), at(2)).unwrap().version, 2);
    let three = s.update(&id("shared:c"), 2, &Patch::content_only("three"), at(2)).unwrap();
    assert_eq!(three.version, 3);
    s.update(&id("shared:c"), 3, &Patch::content_only("four"), at(3)).unwrap();
    assert_eq!(numbers(&s, "shared:c"), [4, 3, 2, 1]);
    assert_eq!(s.get_version(&id("shared:c"), 3).unwrap().entry().unwrap().content, "three", "overwritten");
}

#[test]
fn a_redacted_secret_is_gone_from_every_file_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    s.create(NewEntry::new(id("private:w:oops"), "token sk-SECRET-123"), at(0)).unwrap();
    s.update(&id("private:w:oops"), 1, &Patch::content_only("nothing to see"), at(1)).unwrap();
    s.rename(&id("private:w:oops"), &id("private:w:moved"), 2, at(2)).unwrap();
    s.redact(&id("private:w:oops"), 1).unwrap();
    for (path, bytes) in snapshot_tree(dir.path()) {
        assert!(!String::from_utf8_lossy(&bytes).contains("SECRET"), "{path} still holds the secret");
    }
    let redacted = s.get_version(&id("private:w:oops"), 1).unwrap();
    assert!(redacted.is_redacted());
    let text =
        std::fs::read_to_string(dir.path().join("history/private/w/oops.md/0000000000000001.md")).unwrap();
    assert!(text.contains("redacted: true\n") && text.ends_with("---\n"), "{text}");
}

#[test]
fn a_symlink_under_history_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    s.create(NewEntry::new(id("shared:x"), "x"), at(0)).unwrap();
    std::fs::create_dir_all(dir.path().join("history/shared")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("history/shared/x.md")).unwrap();
    let error = s.update(&id("shared:x"), 1, &Patch::content_only("y"), at(1)).unwrap_err();
    assert!(error.to_string().contains("symlink escape"), "{error}");
    assert!(s.history(&id("shared:x"), None).unwrap_err().to_string().contains("symlink escape"));
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing written through the link");
    assert_eq!(s.get(&id("shared:x"), at(1)).unwrap().content, "x", "the refused update changed nothing");
    // A version file that is a symlink or has a second link is skipped, never read.
    std::fs::remove_file(dir.path().join("history/shared/x.md")).unwrap();
    s.update(&id("shared:x"), 1, &Patch::content_only("y"), at(1)).unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(&secret, "---\nversion: 1\n---\nsecret").unwrap();
    let first = dir.path().join("history/shared/x.md/0000000000000001.md");
    std::fs::remove_file(&first).unwrap();
    std::os::unix::fs::symlink(&secret, &first).unwrap();
    assert_eq!(numbers(&s, "shared:x"), [2]);
    std::fs::remove_file(&first).unwrap();
    std::fs::hard_link(&secret, &first).unwrap_or_else(|_| std::fs::write(&first, "x").unwrap());
    if std::fs::metadata(&first).map(|m| std::os::unix::fs::MetadataExt::nlink(&m)).unwrap_or(1) > 1 {
        assert_eq!(numbers(&s, "shared:x"), [2]);
    }
}

#[test]
fn keep_versions_comes_from_config_yaml() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.yaml"), "history:\n  keepVersions: 2\n").unwrap();
    let s = MarkdownStore::open(dir.path()).unwrap();
    assert_eq!(s.config().limits.keep_versions, 2);
    let mut entry = s.create(NewEntry::new(id("shared:k"), "0"), at(0)).unwrap();
    for n in 1..=4 {
        entry = s.update(&id("shared:k"), entry.version, &Patch::content_only(n.to_string()), at(n)).unwrap();
    }
    assert_eq!(numbers(&s, "shared:k"), [5, 4]);
    let files = std::fs::read_dir(dir.path().join("history/shared/k.md")).unwrap().count();
    assert_eq!(files, 1, "the current version lives in the entry file; one older version is kept");
    std::fs::write(dir.path().join("config.yaml"), "history:\n  keepVersions: 0\n").unwrap();
    let error = MarkdownStore::open(dir.path()).unwrap_err().to_string();
    assert!(error.contains("history.keepVersions"), "{error}");
}

mod model {
    //! The history model of the testkit against the Markdown store (fewer cases than the in-memory run: every step
    //! reads every ID's history from disk).

    use memory_entry::Limits;
    use memory_markdown::MarkdownStore;
    use memory_store::testkit::{Subject, check_history_model, history_op};
    use proptest::prelude::*;

    fn markdown(limits: Limits) -> Subject {
        let dir = tempfile::tempdir().unwrap();
        let store = MarkdownStore::open_with_limits(dir.path().join("memory"), limits).unwrap();
        Subject::new(store, dir)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn history_matches_the_reference(ops in prop::collection::vec(history_op(), 1..30)) {
            check_history_model(&markdown, &ops);
        }
    }
}

pub(crate) mod races {
    //! Two processes: one deletes and re-creates an entry over and over, the other updates it with the version it
    //! read a moment before. Versions are never reused, so the stale updater never wins over a re-created entry:
    //! every update it made follows, in history, exactly the version it read.

    use std::path::Path;
    use std::time::Duration;

    use memory_entry::{NewEntry, Patch, StoreError, Version};
    use memory_markdown::MarkdownStore;
    use memory_store::MemoryStore;

    use crate::{at, child_results, id, spawn_child};

    const ROOT_VAR: &str = "ALP_STORE_TEST_ROOT";
    const GO_VAR: &str = "ALP_STORE_TEST_GO";
    const ROUNDS: usize = 60;

    fn wait_for_go() {
        let go = std::env::var(GO_VAR).unwrap();
        while !Path::new(&go).exists() {
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Helper process: deletes `shared:recycled` at the version it reads and creates it again, `ROUNDS` times.
    pub(crate) fn recycler_child() {
        let store = MarkdownStore::open(std::env::var(ROOT_VAR).unwrap()).unwrap();
        wait_for_go();
        let target = id("shared:recycled");
        let mut recycled = 0;
        while recycled < ROUNDS {
            let Ok(entry) = store.get(&target, at(0)) else { continue };
            match store.delete(&target, entry.version, at(0)) {
                Ok(()) => {}
                Err(StoreError::VersionConflict { .. } | StoreError::NotFound { .. }) => continue,
                Err(other) => panic!("delete: {other}"),
            }
            store.create(NewEntry::new(target.clone(), "re-created"), at(0)).unwrap();
            recycled += 1;
        }
        println!("RESULT {recycled}");
    }

    /// Helper process: reads `shared:recycled`, waits a little, and updates it expecting the version it read,
    /// writing that version into the content; prints how many updates won and lost.
    pub(crate) fn stale_updater_child() {
        let store = MarkdownStore::open(std::env::var(ROOT_VAR).unwrap()).unwrap();
        wait_for_go();
        let target = id("shared:recycled");
        let (mut won, mut lost) = (0, 0);
        // Until it has tried 2 × ROUNDS updates (a get that finds the entry deleted is not a try).
        for _ in 0..100_000 {
            if won + lost >= ROUNDS * 2 {
                break;
            }
            let Ok(entry) = store.get(&target, at(0)) else { continue };
            std::thread::sleep(Duration::from_micros(300));
            let patch = Patch::content_only(format!("update of {}", entry.version));
            match store.update(&target, entry.version, &patch, at(0)) {
                Ok(updated) => {
                    assert_eq!(updated.version, entry.version + 1);
                    won += 1;
                }
                Err(StoreError::VersionConflict { actual, .. }) => {
                    assert!(actual > entry.version, "a conflict names a newer version");
                    lost += 1;
                }
                Err(StoreError::NotFound { .. }) => lost += 1,
                Err(other) => panic!("update: {other}"),
            }
        }
        println!("RESULT {won} {lost}");
    }

    #[test]
    fn a_stale_updater_never_wins_over_a_deleted_and_re_created_entry() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("memory");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("config.yaml"), "history:\n  keepVersions: 100000\n").unwrap();
        let store = MarkdownStore::open(&root).unwrap();
        store.create(NewEntry::new(id("shared:recycled"), "first"), at(0)).unwrap();
        let go = dir.path().join("go");
        let vars = [(ROOT_VAR, root.display().to_string()), (GO_VAR, go.display().to_string())];
        let recycler = spawn_child("history_recycler", &vars);
        let updater = spawn_child("history_stale_updater", &vars);
        std::fs::write(&go, "").unwrap();
        let recycled: usize = child_results(recycler)[0].parse().unwrap();
        let counts = child_results(updater);
        let (won, lost) = counts[0].split_once(' ').unwrap();
        let (won, lost): (usize, usize) = (won.parse().unwrap(), lost.parse().unwrap());
        let history = store.history(&id("shared:recycled"), None).unwrap();
        let by_version: std::collections::BTreeMap<u64, &Version> =
            history.iter().map(|version| (version.version(), version)).collect();
        // Versions run without a gap from 1 to the highest.
        let highest = *by_version.keys().last().unwrap();
        assert_eq!(by_version.keys().copied().collect::<Vec<_>>(), (1..=highest).collect::<Vec<_>>());
        let mut updates = 0;
        for version in &history {
            let Some(text) = version.entry().and_then(|e| e.content.strip_prefix("update of ")) else {
                continue;
            };
            let read: u64 = text.parse().unwrap();
            updates += 1;
            assert_eq!(version.version(), read + 1, "an update lands right after the version it read");
            assert!(
                matches!(by_version[&read], Version::Entry(_)),
                "version {read}, which the updater read, is an entry, not a tombstone"
            );
        }
        println!("{recycled} re-creates, {won} updates won, {lost} lost, {} versions", highest);
        assert_eq!(updates, won, "every acknowledged update is in history");
        assert_eq!(recycled, ROUNDS);
        assert!(lost > 0, "the processes never collided; the test proved nothing");
    }
}

#[test]
fn delete_re_create_and_rename_cycles_keep_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    let (a, b) = (id("shared:cycle:a"), id("shared:cycle:b"));
    for n in 0..5 {
        if let Ok(entry) = s.get(&a, at(n)) {
            s.delete(&a, entry.version, at(n)).unwrap();
        }
        s.create(NewEntry::new(a.clone(), format!("a{n}")), at(n)).unwrap();
        if let Ok(entry) = s.get(&b, at(n)) {
            s.delete(&b, entry.version, at(n)).unwrap();
        }
        let entry = s.get(&a, at(n)).unwrap();
        s.rename(&a, &b, entry.version, at(n)).unwrap();
    }
    assert_eq!(numbers(&s, "shared:cycle:a"), (1..=10).rev().collect::<Vec<_>>());
    assert_eq!(numbers(&s, "shared:cycle:b"), (1..=9).rev().collect::<Vec<_>>());
}

/// The one pair of IDs whose histories would share a name: the kept versions of `shared:x` are the files
/// `history/shared/x.md/<16 digits>.md`, and the history of `shared:x.md:<16 digits>` is a directory of that very
/// name. Either one, while the other's history is kept, is refused as a clash naming the other, so every entry
/// that can be created can also be updated and deleted.
#[test]
fn an_id_whose_history_would_share_a_name_with_another_s_is_a_clash() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    let above = id("shared:x");
    s.create(NewEntry::new(above.clone(), "one"), at(0)).unwrap();
    s.update(&above, 1, &Patch::content_only("two"), at(1)).unwrap();
    s.delete(&above, 2, at(2)).unwrap();
    // Versions 1 to 3 of `shared:x` are kept: `shared:x.md:0000000000000001` would need the name of version 1.
    for kept in ["shared:x.md:0000000000000001", "shared:x.md:0000000000000003"] {
        match s.create(NewEntry::new(id(kept), "below"), at(3)) {
            Err(StoreError::AlreadyExists { existing, reason, .. }) => {
                assert_eq!(
                    (existing.as_str(), reason),
                    ("shared:x", memory_entry::ExistsReason::FileDirectoryClash)
                );
            }
            other => panic!("{kept}: {other:?}"),
        }
    }
    assert_eq!(numbers(&s, "shared:x"), [3, 2, 1], "nothing was written");
    // A number `shared:x` never had, and names that only look alike, are not clashes; each lives a whole life.
    for free in [
        "shared:x.md:0000000000000009",
        "shared:x.md:0000000000000001:y",
        "shared:x.md:1",
        "shared:y.md:0000000000000001",
    ] {
        let created = s.create(NewEntry::new(id(free), "below"), at(4)).unwrap();
        s.update(&id(free), created.version, &Patch::content_only("changed"), at(5)).unwrap();
        s.delete(&id(free), created.version + 1, at(6)).unwrap();
        assert_eq!(numbers(&s, free), [3, 2, 1], "{free}");
    }
    // `shared:x.md:0000000000000009` keeps its history in `history/shared/x.md/0000000000000009.md/`: `shared:x`
    // could not keep its version 9 there, so it is not created again while that history is kept.
    match s.create(NewEntry::new(above.clone(), "again"), at(7)) {
        Err(StoreError::AlreadyExists { existing, reason, .. }) => assert_eq!(
            (existing.as_str(), reason),
            ("shared:x.md:0000000000000009", memory_entry::ExistsReason::FileDirectoryClash)
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(numbers(&s, "shared:x"), [3, 2, 1]);
}

/// A delete moves an entry file alp wrote into the history as its version (the same file, so the same bytes), and
/// writes a copy instead for any other file: a hand-written note, a file whose mode is not 0600. Either way, the
/// version kept reads back as the entry that was deleted, from a 0600 file.
#[test]
fn a_delete_moves_the_file_alp_wrote_and_copies_any_other() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    let kept =
        |name: &str, version: u64| dir.path().join(format!("history/shared/{name}.md/{version:016}.md"));

    // Written by alp: moved.
    let made = s.create(NewEntry::new(id("shared:moved"), "alp wrote this"), at(0)).unwrap();
    let file = dir.path().join("shared/moved.md");
    let (bytes, inode) = (std::fs::read(&file).unwrap(), std::fs::metadata(&file).unwrap().ino());
    s.delete(&id("shared:moved"), 1, at(1)).unwrap();
    assert!(!file.exists());
    assert_eq!(std::fs::read(kept("moved", 1)).unwrap(), bytes);
    assert_eq!(std::fs::metadata(kept("moved", 1)).unwrap().ino(), inode, "the entry file itself was moved");
    match &s.history(&id("shared:moved"), None).unwrap()[..] {
        [Version::Tombstone { version: 2, .. }, Version::Entry(entry)] => assert_eq!(*entry, made),
        other => panic!("{other:?}"),
    }

    // Hand-written, or mode 0644: copied, the kept version reading as the entry did.
    std::fs::write(dir.path().join("shared/note.md"), "A note written by hand.\n").unwrap();
    std::fs::set_permissions(dir.path().join("shared/note.md"), std::fs::Permissions::from_mode(0o600))
        .unwrap();
    s.create(NewEntry::new(id("shared:open"), "readable by the group"), at(0)).unwrap();
    std::fs::set_permissions(dir.path().join("shared/open.md"), std::fs::Permissions::from_mode(0o644))
        .unwrap();
    for name in ["note", "open"] {
        let file = dir.path().join(format!("shared/{name}.md"));
        let inode = std::fs::metadata(&file).unwrap().ino();
        let read = s.get(&id(&format!("shared:{name}")), at(2)).unwrap();
        s.delete(&id(&format!("shared:{name}")), read.version, at(2)).unwrap();
        assert!(!file.exists(), "{name}");
        let copy = kept(name, read.version);
        assert_ne!(std::fs::metadata(&copy).unwrap().ino(), inode, "{name}: a copy, not the file");
        assert_eq!(std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o600, "{name}");
        match &s.history(&id(&format!("shared:{name}")), None).unwrap()[..] {
            [Version::Tombstone { .. }, Version::Entry(entry)] => {
                assert_eq!((entry.version, &entry.content), (read.version, &read.content), "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// A rename out of a role's private memory never writes that role's private ID into a file outside it: not the
/// rename-in-progress marker (`renamedFrom`) of the moved file, not anything under `history/`. Every byte of every
/// file outside `private/lead/` and `history/private/lead/` is read.
#[test]
fn a_rename_out_of_private_memory_leaves_the_private_id_in_no_file_outside_it() {
    for (from, to) in [
        ("private:lead:drafts:plan", "shared:plans:plan"),
        ("private:lead:drafts:plan", "project:alp:plan"),
        ("private:lead:drafts:plan", "private:other:plan"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), Limits::default());
        s.create(NewEntry::new(id(from), "the plan"), at(0)).unwrap();
        s.update(&id(from), 1, &Patch::content_only("the plan, v2"), at(1)).unwrap();
        let moved = s.rename(&id(from), &id(to), 2, at(2)).unwrap();
        assert_eq!(s.get(&id(to), at(3)).unwrap().content, "the plan, v2");
        assert_eq!(moved.version, 1);
        assert!(matches!(s.get(&id(from), at(3)), Err(StoreError::NotFound { .. })));
        for (path, bytes) in snapshot_tree(dir.path()) {
            if path.starts_with("private/lead/") || path.starts_with("history/private/lead/") {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains("private:lead"),
                "{from} -> {to}: {path} names lead's private ID:\n{text}"
            );
        }
        // The moved entry reads back at its own version, then updates as usual.
        s.update(&id(to), 1, &Patch::content_only("v3"), at(4)).unwrap();
    }
}

/// Inside one private memory the move stays one step, marker and all, and the marker is gone after the next write.
#[test]
fn a_rename_inside_private_memory_still_reads_right_at_both_names() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), Limits::default());
    s.create(NewEntry::new(id("private:lead:a"), "x"), at(0)).unwrap();
    s.rename(&id("private:lead:a"), &id("private:lead:b"), 1, at(1)).unwrap();
    assert_eq!(s.get(&id("private:lead:b"), at(2)).unwrap().version, 1);
    s.update(&id("private:lead:b"), 1, &Patch::content_only("y"), at(3)).unwrap();
    let text = std::fs::read_to_string(dir.path().join("private/lead/b.md")).unwrap();
    assert!(!text.contains("renamedFrom"), "{text}");
}
