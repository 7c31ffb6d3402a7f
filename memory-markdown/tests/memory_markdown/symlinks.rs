//! No symlink below the root is followed, under both path resolutions: a symlinked entry file, a directory
//! symlink to outside the root, and an in-root symlink aliasing another scope are refused for read, create,
//! update and delete, change nothing outside and leak nothing; a listing does not descend into them; and an
//! attacker swapping a directory for a symlink while the store writes never gets a file outside the root.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memory_entry::{Limits, NewEntry, Patch, StorageErrorKind, StoreError};
use memory_id::{MemoryId, MemoryPrefix};
use memory_markdown::MarkdownStore;
use memory_store::{Expiry, Listing, MemoryStore};

use crate::{at, both_resolutions, id, snapshot_tree};

const SECRET: &str = "SECRET-CONTENT-7f3a";

fn secret_file() -> String {
    format!("---\nkind: fact\nversion: 1\n---\n{SECRET}\n")
}

/// Asserts a refusal as the symlink-escape storage error that leaks nothing of the target.
fn assert_symlink_refusal<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Storage(e)) => {
            assert_eq!(e.kind(), StorageErrorKind::SymlinkEscape, "{what}: {e}");
            let message = e.to_string();
            assert!(message.starts_with("memory path symlink escape: "), "{what}: {message}");
            assert!(!message.contains(SECRET), "{what} leaks: {message}");
        }
        other => panic!("{what}: expected the symlink-escape error, got {other:?}"),
    }
}

/// Every door refuses `target`: get, create, update, delete, delete_expired.
fn refuse_all_doors(label: &str, store: &MarkdownStore, target: &MemoryId) {
    assert_symlink_refusal(&format!("{label} get"), store.get(target, at(0)));
    assert_symlink_refusal(
        &format!("{label} create"),
        store.create(NewEntry::new(target.clone(), "overwrite"), at(0)),
    );
    let patch = Patch::content_only("overwrite".to_owned());
    assert_symlink_refusal(&format!("{label} update"), store.update(target, 1, &patch, at(0)));
    assert_symlink_refusal(&format!("{label} delete"), store.delete(target, 1, at(0)));
    assert_symlink_refusal(&format!("{label} delete_expired"), store.delete_expired(target, 1, at(0)));
}

struct Scene {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("secret.md"), secret_file()).unwrap();
    std::fs::write(outside.join("dir/x.md"), secret_file()).unwrap();
    Scene { _dir: dir, root, outside }
}

fn list_all(store: &MarkdownStore) -> Vec<String> {
    let roots = [MemoryPrefix::parse("shared").unwrap(), MemoryPrefix::parse("private").unwrap()];
    let listing = Listing::new(roots.to_vec(), at(0)).with_expiry(Expiry::Any);
    store.list(&listing).unwrap().into_iter().map(|e| e.entry.id.into_string()).collect()
}

#[test]
fn symlinked_entry_file_is_refused_for_every_door_both_resolutions() {
    let s = scene();
    symlink(s.outside.join("secret.md"), s.root.join("shared/x.md")).unwrap();
    // A dangling one too.
    symlink(s.outside.join("nothing.md"), s.root.join("shared/dangling.md")).unwrap();
    let before = snapshot_tree(&s.outside);
    for (label, store) in both_resolutions(&s.root, Limits::default()) {
        refuse_all_doors(label, &store, &id("shared:x"));
        refuse_all_doors(label, &store, &id("shared:dangling"));
        assert!(list_all(&store).is_empty(), "{label}: a listing skips symlinks");
    }
    assert_eq!(snapshot_tree(&s.outside), before, "nothing outside changed");
    assert!(!s.outside.join("nothing.md").exists());
    assert!(std::fs::symlink_metadata(s.root.join("shared/x.md")).unwrap().file_type().is_symlink());
}

#[test]
fn directory_symlink_to_outside_is_refused_for_every_door_both_resolutions() {
    let s = scene();
    symlink(s.outside.join("dir"), s.root.join("shared/team")).unwrap();
    let before = snapshot_tree(&s.outside);
    for (label, store) in both_resolutions(&s.root, Limits::default()) {
        refuse_all_doors(label, &store, &id("shared:team:x"));
        // Creating a new name below it, deeper too.
        assert_symlink_refusal(label, store.create(NewEntry::new(id("shared:team:new"), "x"), at(0)));
        assert_symlink_refusal(label, store.create(NewEntry::new(id("shared:team:a:b"), "x"), at(0)));
        assert!(
            list_all(&store).is_empty(),
            "{label}: a listing does not descend into a symlinked directory"
        );
        let team = [MemoryPrefix::parse("shared:team").unwrap()];
        assert!(store.list(&Listing::new(team.to_vec(), at(0))).unwrap().is_empty(), "{label}");
    }
    assert_eq!(snapshot_tree(&s.outside), before, "nothing outside changed");
}

#[test]
fn in_root_symlink_aliasing_another_scope_is_refused_both_resolutions() {
    let s = scene();
    // `shared/team -> ../private/main`: a `shared:` grant must not reach main's private memory.
    std::fs::create_dir_all(s.root.join("private/main")).unwrap();
    std::fs::write(s.root.join("private/main/notes.md"), secret_file()).unwrap();
    symlink("../private/main", s.root.join("shared/team")).unwrap();
    // And a whole scope directory swapped for a link: `projects -> private`.
    symlink("private", s.root.join("projects")).unwrap();
    let private_before = snapshot_tree(&s.root.join("private"));
    for (label, store) in both_resolutions(&s.root, Limits::default()) {
        refuse_all_doors(label, &store, &id("shared:team:notes"));
        refuse_all_doors(label, &store, &id("project:main:notes"));
        assert_symlink_refusal(label, store.create(NewEntry::new(id("shared:team:planted"), "x"), at(0)));
        // The real entry stays reachable by its own ID.
        assert!(store.get(&id("private:main:notes"), at(0)).unwrap().content.contains(SECRET));
        assert_eq!(list_all(&store), ["private:main:notes"], "{label}: reachable only as itself");
        let shared = [MemoryPrefix::parse("shared").unwrap(), MemoryPrefix::parse("project").unwrap()];
        assert!(store.list(&Listing::new(shared.to_vec(), at(0))).unwrap().is_empty(), "{label}");
    }
    assert_eq!(snapshot_tree(&s.root.join("private")), private_before, "main's private memory unchanged");
}

#[test]
fn lock_directory_and_config_symlinks_are_refused() {
    let s = scene();
    std::fs::write(s.outside.join("config.yaml"), "limits:\n  maxEntriesPerScopeRoot: 1\n").unwrap();
    symlink(s.outside.join("config.yaml"), s.root.join("config.yaml")).unwrap();
    match MarkdownStore::open(&s.root) {
        // `config.yaml` must be a regular file: a symlink is an invalid configuration, never followed.
        Err(e) => {
            assert!(matches!(e, memory_markdown::RootOpenError::Config(_)), "{e}");
            assert!(e.to_string().contains("it is a symbolic link"), "{e}");
        }
        Ok(_) => panic!("a symlinked config.yaml was followed"),
    }
    std::fs::remove_file(s.root.join("config.yaml")).unwrap();
    symlink(&s.outside, s.root.join(".locks")).unwrap();
    let before = snapshot_tree(&s.outside);
    for (label, store) in both_resolutions(&s.root, Limits::default()) {
        assert_symlink_refusal(label, store.create(NewEntry::new(id("shared:x"), "x"), at(0)));
    }
    assert_eq!(snapshot_tree(&s.outside), before);
}

#[test]
fn the_root_itself_may_be_a_symlink() {
    let s = scene();
    let link = s.root.parent().unwrap().join("root-link");
    symlink(&s.root, &link).unwrap();
    let store = MarkdownStore::open(&link).unwrap();
    assert_eq!(store.root(), s.root.canonicalize().unwrap());
    store.create(NewEntry::new(id("shared:via-link"), "x"), at(0)).unwrap();
    assert!(s.root.join("shared/via-link.md").is_file());
}

/// The attacker: swaps `shared/swap` (a real directory) and `shared/swaplink` (a symlink to outside) with
/// `RENAME_EXCHANGE` as fast as it can, until told to stop. Returns the number of swaps.
fn attacker(root: &Path, outside: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let shared = root.join("shared");
    std::fs::create_dir_all(shared.join("swap")).unwrap();
    // Never empty, so that a delete never prunes it.
    std::fs::write(shared.join("swap/keep.txt"), "").unwrap();
    symlink(outside, shared.join("swaplink")).unwrap();
    std::thread::spawn(move || {
        let dir = std::fs::File::open(&shared).unwrap();
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(&dir, "swap", &dir, "swaplink", rustix::fs::RenameFlags::EXCHANGE)
                .unwrap();
            swaps += 1;
            if swaps % 8 == 0 {
                std::thread::yield_now();
            }
        }
        swaps
    })
}

fn swap_race(iterations: usize, force_walk: bool) {
    let s = scene();
    std::fs::remove_dir_all(s.outside.join("dir")).unwrap();
    std::fs::remove_file(s.outside.join("secret.md")).unwrap();
    let limits = Limits { max_entries_per_scope_root: 1_000_000, ..Limits::default() };
    let options = memory_markdown::StoreOptions::new().limits(limits).force_component_walk(force_walk);
    let store = MarkdownStore::open_with(&s.root, options).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let handle = attacker(&s.root, &s.outside, Arc::clone(&stop));
    let (mut created, mut refused, mut updated, mut deleted) = (0, 0, 0, 0);
    let refusal = |result: StoreError| match result {
        StoreError::Storage(e) if e.kind() == StorageErrorKind::SymlinkEscape => {}
        StoreError::NotFound { .. } => {}
        other => panic!("unexpected error: {other}"),
    };
    for n in 0..iterations {
        let target = id(&format!("shared:swap:e{n}"));
        match store.create(NewEntry::new(target.clone(), "x"), at(0)) {
            Ok(_) => created += 1,
            Err(StoreError::Storage(e)) if e.kind() == StorageErrorKind::SymlinkEscape => refused += 1,
            Err(other) => panic!("unexpected error: {other}"),
        }
        let patch = Patch::content_only("y".to_owned());
        let mut version = 1;
        match store.update(&target, 1, &patch, at(1)) {
            Ok(_) => {
                updated += 1;
                version = 2;
            }
            Err(e) => refusal(e),
        }
        // Delete most again, so that the directory stays small however long the race runs.
        if n % 8 != 0 {
            match store.delete(&target, version, at(2)) {
                Ok(()) => deleted += 1,
                Err(e) => refusal(e),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = handle.join().unwrap();
    let outside: Vec<_> = std::fs::read_dir(&s.outside).unwrap().collect();
    println!(
        "{iterations} creates ({}) against {swaps} swaps: {created} created inside, {refused} refused, \
         {updated} updated, {deleted} deleted, {} files outside",
        if force_walk { "component walk" } else { "openat2" },
        outside.len()
    );
    assert!(outside.is_empty(), "files appeared outside the root: {outside:?}");
    assert!(swaps > 0 && refused > 0 && created > 0, "the race did not happen");
    // Whatever was created is inside the root, in whichever name the real directory has now.
    let real = if s.root.join("shared/swap").is_symlink() { "shared/swaplink" } else { "shared/swap" };
    let inside = std::fs::read_dir(s.root.join(real))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".md"))
        .count();
    assert_eq!(inside, created - deleted);
}

#[test]
fn symlink_swap_race_2000_creates_openat2() {
    swap_race(2000, false);
}

#[test]
fn symlink_swap_race_2000_creates_component_walk() {
    swap_race(2000, true);
}

#[test]
#[ignore = "stress: 50,000 creates per resolution, about a minute"]
fn symlink_swap_race_stress_50000_creates() {
    swap_race(50_000, false);
    swap_race(50_000, true);
}
