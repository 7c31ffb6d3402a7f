//! Compare-and-swap across processes and threads: read-modify-write with retry never loses an update, every loser
//! learns the expected and actual versions; racing creates of one ID: exactly one succeeds.

use std::path::Path;
use std::sync::Barrier;
use std::time::Duration;

use memory_entry::{ExistsReason, Limits, NewEntry, Patch, StoreError};
use memory_markdown::MarkdownStore;
use memory_store::MemoryStore;

use crate::{at, child_results, id, spawn_child};

const ROOT_VAR: &str = "ALP_STORE_TEST_ROOT";
const COUNT_VAR: &str = "ALP_STORE_TEST_COUNT";
const GO_VAR: &str = "ALP_STORE_TEST_GO";

/// Increments the counter in `shared:counter` `rounds` times with read-modify-write, retrying on conflict.
/// Returns (successes, conflicts); panics on any conflict that does not carry the versions it should.
fn increment(store: &MarkdownStore, rounds: u64) -> (u64, u64) {
    let target = id("shared:counter");
    let (mut successes, mut conflicts) = (0, 0);
    while successes < rounds {
        let entry = store.get(&target, at(0)).unwrap();
        let value: u64 = entry.content.parse().unwrap();
        // Widen the window between read and write so that writers really collide.
        std::thread::sleep(Duration::from_micros(200));
        let patch = Patch::content_only((value + 1).to_string());
        match store.update(&target, entry.version, &patch, at(0)) {
            Ok(updated) => {
                assert_eq!(updated.version, entry.version + 1);
                successes += 1;
            }
            Err(StoreError::VersionConflict { id, expected, actual }) => {
                assert_eq!(id, target);
                assert_eq!(expected, entry.version, "the loser is told the version it expected");
                assert!(actual > expected, "the loser is told the newer version ({actual} after {expected})");
                conflicts += 1;
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    (successes, conflicts)
}

/// Waits until the file named by `GO_VAR` exists, so that all helpers start together.
fn wait_for_go() {
    let go = std::env::var(GO_VAR).unwrap();
    while !Path::new(&go).exists() {
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Helper process: increments the counter.
pub(crate) fn incrementer_child() {
    let store = MarkdownStore::open(std::env::var(ROOT_VAR).unwrap()).unwrap();
    let rounds: u64 = std::env::var(COUNT_VAR).unwrap().parse().unwrap();
    wait_for_go();
    let (successes, conflicts) = increment(&store, rounds);
    println!("RESULT {successes} {conflicts}");
}

/// Helper process: tries to create `shared:race:<n>` for every n, printing those it won.
pub(crate) fn creator_child() {
    let store = MarkdownStore::open(std::env::var(ROOT_VAR).unwrap()).unwrap();
    let count: usize = std::env::var(COUNT_VAR).unwrap().parse().unwrap();
    wait_for_go();
    for n in 0..count {
        match store.create(
            NewEntry::new(id(&format!("shared:race:{n}")), format!("by {}", std::process::id())),
            at(0),
        ) {
            Ok(_) => println!("RESULT won {n}"),
            Err(StoreError::AlreadyExists { reason: ExistsReason::SameId, .. }) => {
                println!("RESULT lost {n}")
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
}

fn counter_store(root: &Path) -> MarkdownStore {
    let store = MarkdownStore::open_with_limits(root, Limits::default()).unwrap();
    store.create(NewEntry::new(id("shared:counter"), "0"), at(0)).unwrap();
    store
}

#[test]
fn compare_and_swap_4_processes_x_15_increments_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let store = counter_store(&root);
    let go = dir.path().join("go");
    let vars = [
        (ROOT_VAR, root.display().to_string()),
        (COUNT_VAR, "15".to_owned()),
        (GO_VAR, go.display().to_string()),
    ];
    let children: Vec<_> = (0..4).map(|_| spawn_child("cas_incrementer", &vars)).collect();
    std::fs::write(&go, "").unwrap();
    let (mut successes, mut conflicts) = (0, 0);
    for child in children {
        let results = child_results(child);
        let (s, c) = results[0].split_once(' ').unwrap();
        successes += s.parse::<u64>().unwrap();
        conflicts += c.parse::<u64>().unwrap();
    }
    let last = store.get(&id("shared:counter"), at(0)).unwrap();
    println!("4 processes: {successes} successes, {conflicts} conflicts, final version {}", last.version);
    assert_eq!(successes, 60);
    assert_eq!(last.version, 1 + successes, "the final version is 1 + the number of successes");
    assert_eq!(last.content, successes.to_string(), "no update was lost");
    assert!(conflicts > 0, "the processes never collided; the test proved nothing");
}

#[test]
fn compare_and_swap_4_threads_x_15_increments_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = counter_store(dir.path());
    let barrier = Barrier::new(4);
    let results: Vec<(u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    increment(&store, 15)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let successes: u64 = results.iter().map(|r| r.0).sum();
    let conflicts: u64 = results.iter().map(|r| r.1).sum();
    let last = store.get(&id("shared:counter"), at(0)).unwrap();
    println!("4 threads: {successes} successes, {conflicts} conflicts, final version {}", last.version);
    assert_eq!(last.version, 1 + successes);
    assert_eq!(last.content, successes.to_string());
    assert!(conflicts > 0, "the threads never collided; the test proved nothing");
}

#[test]
fn racing_creates_4_processes_x_30_ids_exactly_one_wins_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    MarkdownStore::open(&root).unwrap();
    let go = dir.path().join("go");
    let vars = [
        (ROOT_VAR, root.display().to_string()),
        (COUNT_VAR, "30".to_owned()),
        (GO_VAR, go.display().to_string()),
    ];
    let children: Vec<_> = (0..4).map(|_| spawn_child("racing_creator", &vars)).collect();
    std::fs::write(&go, "").unwrap();
    let mut wins = [0u32; 30];
    let mut losses = [0u32; 30];
    for child in children {
        for line in child_results(child) {
            let (outcome, n) = line.split_once(' ').unwrap();
            let n: usize = n.parse().unwrap();
            match outcome {
                "won" => wins[n] += 1,
                _ => losses[n] += 1,
            }
        }
    }
    assert!(wins.iter().all(|&w| w == 1), "wins per ID: {wins:?}");
    assert!(losses.iter().all(|&l| l == 3), "losses per ID: {losses:?}");
}

#[test]
fn racing_creates_8_threads_x_50_ids_exactly_one_wins_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    let barrier = Barrier::new(8);
    let won: Vec<Vec<usize>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    (0..50)
                        .filter(|n| {
                            match store.create(NewEntry::new(id(&format!("project:p:r{n}")), "x"), at(0)) {
                                Ok(_) => true,
                                Err(StoreError::AlreadyExists { reason: ExistsReason::SameId, .. }) => false,
                                Err(other) => panic!("unexpected error: {other}"),
                            }
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<usize> = won.into_iter().flatten().collect();
    all.sort_unstable();
    assert_eq!(all, (0..50).collect::<Vec<_>>(), "each ID created exactly once");
}

#[test]
fn racing_creates_of_one_key_exactly_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    let barrier = Barrier::new(8);
    let winners: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|n| {
                let store = &store;
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let mut entry = NewEntry::new(id(&format!("shared:k{n}")), "x");
                    entry.fields.memory_type = Some(memory_entry::MemoryType::Decision);
                    entry.fields.key = Some(memory_entry::Key::parse("same").unwrap());
                    match store.create(entry, at(0)) {
                        Ok(_) => 1,
                        Err(StoreError::AlreadyExists { reason: ExistsReason::DuplicateKey, .. }) => 0,
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(winners, 1);
}
