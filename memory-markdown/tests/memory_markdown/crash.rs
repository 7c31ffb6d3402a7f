//! `kill -9` at random instants while a child process updates one entry in a loop: after every kill the file is a
//! complete old or new entry, every acknowledged version is in history, and the next update succeeds (the dead
//! child's lock is gone). And while a child deletes, re-creates and renames: no version is lost, none goes back, no
//! (ID, version) pair ever holds two contents, and no temporary file outlives the next write.

use std::path::Path;
use std::time::{Duration, Instant};

use memory_entry::{Limits, NewEntry, Patch, StoreError};
use memory_id::MemoryPrefix;
use memory_markdown::{FrontmatterStatus, MarkdownStore, parse_entry_file};
use memory_store::{Listing, MemoryStore};

use crate::{at, id, spawn_child};

const ROOT_VAR: &str = "ALP_STORE_TEST_ROOT";

/// The content written at `version`: long enough that a torn write would show, and tied to the version.
fn content_for(version: u64) -> String {
    let line = format!("version {version} ");
    line.repeat(4096 / line.len())
}

/// The helper process: updates `shared:crash` forever (until killed).
pub(crate) fn writer_child() {
    let root = std::env::var(ROOT_VAR).unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    let target = id("shared:crash");
    println!("RESULT started");
    loop {
        let entry = store.get(&target, at(0)).unwrap();
        let patch = Patch::content_only(content_for(entry.version + 1));
        store.update(&target, entry.version, &patch, at(0)).unwrap();
    }
}

/// A small deterministic generator for the kill delays (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound
    }
}

fn check_file(root: &Path) -> u64 {
    let bytes = std::fs::read(root.join("shared/crash.md")).unwrap();
    let parsed = parse_entry_file(id("shared:crash"), &bytes, at(0));
    assert_eq!(
        parsed.frontmatter,
        FrontmatterStatus::Present,
        "torn file: {:?}",
        String::from_utf8_lossy(&bytes)
    );
    let entry = parsed.entry;
    assert_eq!(entry.content, content_for(entry.version), "content does not match version {}", entry.version);
    entry.version
}

#[test]
fn kill_9_at_random_instants_200_kills_leaves_old_or_new_and_no_stuck_lock() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let store = MarkdownStore::open_with_limits(&root, Limits::default()).unwrap();
    let target = id("shared:crash");
    store.create(NewEntry::new(target.clone(), content_for(1)), at(0)).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    let (mut kills, mut versions_seen_moving, mut mid_write) = (0, 0, 0);
    let mut last_version = 1;
    let mut leftovers_so_far = 0;
    while kills < 200 {
        let mut child = spawn_child("crash_writer", &[(ROOT_VAR, root.display().to_string())]);
        // Wait until it has opened the store, then kill it at a random instant of its update loop.
        let output = wait_started(&mut child);
        std::thread::sleep(Duration::from_micros(rng.below(4_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        drop(output);
        kills += 1;

        // A kill between creating the temporary file and renaming it leaves the temporary file behind: in the
        // entry's directory (removed by the next create in the scope root) or in its history directory (removed by
        // the next write of the entry, the parent's update below).
        let temp_files = count_temp_files(&root.join("shared"));
        let history_temp_files = count_temp_files(&root.join("history/shared/crash.md"));
        if temp_files > leftovers_so_far || history_temp_files > 0 {
            mid_write += 1;
            leftovers_so_far = temp_files;
        }
        let version = check_file(&root);
        // Every acknowledged version is in history, in sequence, each with its own content.
        let kept = store.history(&target, None).unwrap();
        let numbers: Vec<u64> = kept.iter().map(memory_entry::Version::version).collect();
        let expected: Vec<u64> = (1..=version).rev().take(100).collect();
        assert_eq!(numbers, expected, "history after kill {kills}");
        let wrong: Vec<u64> = kept
            .iter()
            .filter(|v| v.entry().is_none_or(|e| e.content != content_for(v.version())))
            .map(memory_entry::Version::version)
            .collect();
        assert!(wrong.is_empty(), "versions whose content is not their own after kill {kills}: {wrong:?}");
        assert!(version >= last_version, "version went back from {last_version} to {version}");
        if version > last_version {
            versions_seen_moving += 1;
        }
        // The next update succeeds at once: the dead writer's locks went with it.
        let patch = Patch::content_only(content_for(version + 1));
        let done = store.update(&target, version, &patch, at(0));
        assert!(done.is_ok(), "update after kill {kills}: {done:?}");
        last_version = version + 1;
        assert_eq!(check_file(&root), last_version);
    }
    let leftovers = count_temp_files(&root.join("shared"));
    assert_eq!(
        count_temp_files(&root.join("history/shared/crash.md")),
        0,
        "the last write cleaned its history"
    );
    // Temporary files left by killed writers are never listed, and the next create in the scope root removes them.
    let listed = store.list(&Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], at(0))).unwrap();
    assert_eq!(listed.len(), 1);
    store.create(NewEntry::new(id("shared:after"), "x"), at(0)).unwrap();
    assert_eq!(count_temp_files(&root.join("shared")), 0);
    println!(
        "{kills} kills in {:.1?}: {mid_write} landed mid-write (a temporary file was left), the writer had \
         completed updates before {versions_seen_moving}; final version {last_version}; {leftovers} temporary \
         files left, 0 after the next create",
        started.elapsed()
    );
    assert!(mid_write >= 20, "only {mid_write} of {kills} kills landed mid-write");
}

/// Reads the child's output up to its `RESULT started` line; the returned reader keeps the pipe open (a child
/// must die of the kill, not of a closed stdout).
fn wait_started(
    child: &mut std::process::Child,
) -> std::io::Lines<std::io::BufReader<std::process::ChildStdout>> {
    use std::io::BufRead as _;
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        if line.unwrap() == "RESULT started" {
            return lines;
        }
    }
    panic!("the writer exited before starting");
}

fn count_temp_files(dir: &Path) -> usize {
    let Ok(names) = std::fs::read_dir(dir) else { return 0 };
    names.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(".tmp:")).count()
}

#[test]
fn a_lock_held_by_a_killed_process_is_released() {
    // A child that dies while holding the entry lock (killed mid-loop) never blocks the parent: checked above
    // 200 times. Here the same for a create: the scope-root lock of a killed creator is released.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let store = MarkdownStore::open(&root).unwrap();
    store.create(NewEntry::new(id("shared:crash"), content_for(1)), at(0)).unwrap();
    let mut child = spawn_child("crash_writer", &[(ROOT_VAR, root.display().to_string())]);
    let _output = wait_started(&mut child);
    std::thread::sleep(Duration::from_millis(5));
    child.kill().unwrap();
    child.wait().unwrap();
    let started = Instant::now();
    store.create(NewEntry::new(id("shared:next"), "x"), at(0)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(
        store.create(NewEntry::new(id("shared:next"), "x"), at(0)),
        Err(StoreError::AlreadyExists { .. })
    ));
}

/// The helper process: deletes, re-creates and renames `shared:cycle:a` and `shared:cycle:b` forever (until
/// killed), each create with content of its own (the process ID and a counter), tolerating what a killed
/// predecessor left (both names visible after a rename cut short).
pub(crate) fn cycler_child() {
    let root = std::env::var(ROOT_VAR).unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    let (a, b) = (id("shared:cycle:a"), id("shared:cycle:b"));
    println!("RESULT started");
    for n in 0u64.. {
        let content = format!("{} {n}", std::process::id());
        if let Ok(entry) = store.get(&a, at(0)) {
            let _ = store.delete(&a, entry.version, at(0));
        }
        let _ = store.create(NewEntry::new(a.clone(), content), at(0));
        if let Ok(entry) = store.get(&b, at(0)) {
            let _ = store.delete(&b, entry.version, at(0));
        }
        if let Ok(entry) = store.get(&a, at(0)) {
            let _ = store.rename(&a, &b, entry.version, at(0));
        }
    }
}

/// Every name below `dir` that is a temporary file.
fn temp_files_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else if entry.file_name().to_string_lossy().starts_with(".tmp:") {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found
}

#[test]
fn kill_9_during_delete_re_create_and_rename_loses_no_version_and_never_reuses_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::write(root.join("config.yaml"), "history:\n  keepVersions: 100000\n").unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    let ids = [id("shared:cycle:a"), id("shared:cycle:b")];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // (ID, version) → content (None: a tombstone), as history listed it after some kill.
    let mut ledger: std::collections::BTreeMap<(usize, u64), Option<String>> =
        std::collections::BTreeMap::new();
    let mut highest = [0u64; 2];
    for kill in 0..100 {
        let mut child = spawn_child("crash_cycler", &[(ROOT_VAR, root.display().to_string())]);
        let output = wait_started(&mut child);
        std::thread::sleep(Duration::from_micros(rng.below(150_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        drop(output);
        for (i, target) in ids.iter().enumerate() {
            let kept = match store.history(target, None) {
                Ok(kept) => kept,
                Err(StoreError::NotFound { .. }) => continue,
                Err(other) => panic!("history of {target} after kill {kill}: {other}"),
            };
            let numbers: Vec<u64> = kept.iter().map(memory_entry::Version::version).collect();
            let top = numbers[0];
            assert_eq!(numbers, (1..=top).rev().collect::<Vec<_>>(), "{target} after kill {kill}: a gap");
            assert!(top >= highest[i], "{target} went back from {} to {top} after kill {kill}", highest[i]);
            highest[i] = top;
            for version in &kept {
                let content = version.entry().map(|e| e.content.clone());
                let seen = ledger.entry((i, version.version())).or_insert_with(|| content.clone());
                assert_eq!(
                    *seen,
                    content,
                    "({target}, {}) stood for two contents after kill {kill}",
                    version.version()
                );
            }
            // The current entry, if any, reads whole.
            match store.get(target, at(0)) {
                Ok(_) | Err(StoreError::NotFound { .. }) => {}
                Err(other) => panic!("get {target} after kill {kill}: {other}"),
            }
        }
    }
    // One more write of each ID (and a create in the scope root) removes what killed writers left.
    for target in &ids {
        if let Ok(entry) = store.get(target, at(0)) {
            store.delete(target, entry.version, at(0)).unwrap();
        }
        store.create(NewEntry::new(target.clone(), "after"), at(0)).unwrap();
    }
    assert_eq!(temp_files_below(&root), Vec::<String>::new(), "temporary files left behind");
    println!("100 kills: versions reached {highest:?}, {} (ID, version) pairs checked", ledger.len());
    assert!(highest.iter().all(|top| *top > 10), "the child made little progress: {highest:?}");
}

/// The helper process: moves one entry back and forth between `shared:swap:a` and `shared:swap:d:b` (two
/// directories) forever, until killed. `ALP_STORE_TEST_TWO_STEPS=1` makes it use the two-step move (new name,
/// then the old one goes) that kernels without `RENAME_NOREPLACE` get.
pub(crate) fn swapper_child() {
    let root = std::env::var(ROOT_VAR).unwrap();
    let two_steps = std::env::var_os("ALP_STORE_TEST_TWO_STEPS").is_some();
    let store =
        MarkdownStore::open_with(&root, memory_markdown::StoreOptions::new().force_link_fallback(two_steps))
            .unwrap();
    let (a, b) = (id("shared:swap:a"), id("shared:swap:d:b"));
    println!("RESULT started");
    loop {
        for (from, to) in [(&a, &b), (&b, &a)] {
            if let Ok(entry) = store.get(from, at(0)) {
                store.rename(from, to, entry.version, at(0)).unwrap();
            }
        }
    }
}

/// A rename is one step on disk: whenever it is cut by `kill -9`, exactly one of the two names holds the entry
/// (never both, never neither), with its content, at a version no lower than any seen before at that name.
#[test]
fn kill_9_during_renames_leaves_exactly_one_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let store = MarkdownStore::open(&root).unwrap();
    let ids = [id("shared:swap:a"), id("shared:swap:d:b")];
    store.create(NewEntry::new(ids[0].clone(), "the one entry"), at(0)).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut highest = [0u64; 2];
    let mut moved = 0;
    let mut kills = 0;
    // At least 60 kills, and on until the entry has moved 60 times between kills (a loaded machine moves it less
    // often per run).
    while kills < 60 || moved < 60 {
        assert!(kills < 2_000, "the entry moved only {moved} times in {kills} runs");
        let mut child = spawn_child("crash_swapper", &[(ROOT_VAR, root.display().to_string())]);
        let output = wait_started(&mut child);
        std::thread::sleep(Duration::from_micros(rng.below(40_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        drop(output);
        kills += 1;
        let live: Vec<(usize, u64)> = ids
            .iter()
            .enumerate()
            .filter_map(|(i, target)| match store.get(target, at(0)) {
                Ok(entry) => {
                    assert_eq!(entry.content, "the one entry", "{target} after kill {kills}");
                    Some((i, entry.version))
                }
                Err(StoreError::NotFound { .. }) => None,
                Err(other) => panic!("get {target} after kill {kills}: {other}"),
            })
            .collect();
        assert_eq!(live.len(), 1, "after kill {kills} the entry is at {live:?} (both names or neither)");
        let (at_name, version) = live[0];
        assert!(version >= highest[at_name], "{} went back to {version} after kill {kills}", ids[at_name]);
        if version > highest[at_name] {
            moved += 1;
        }
        highest[at_name] = version;
    }
    println!("{kills} kills, the entry seen moved {moved} times; versions reached {highest:?}");
}
