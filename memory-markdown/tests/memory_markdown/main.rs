#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
//! Integration tests of `memory-markdown`: the adapter suite (run against every adapter), the on-disk format, path
//! safety, durability under `kill -9`, and compare-and-swap across threads and processes.

mod adapter;
mod cache;
mod concurrency;
mod crash;
mod frontmatter;
mod fuzzed;
mod hardening;
mod history;
mod listing;
mod model;
mod nodev;
mod path_map;
mod public_interface;
mod symlinks;
mod versions_conformance;

use std::collections::BTreeMap;
use std::path::Path;

use memory_entry::{Limits, Timestamp};
use memory_id::{MemoryId, parse_memory_id};
use memory_markdown::{MarkdownStore, StoreOptions};

/// Parses an ID known to be valid.
pub(crate) fn id(text: &str) -> MemoryId {
    parse_memory_id(text).unwrap()
}

/// A fixed instant, plus `secs` seconds.
pub(crate) fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_790_000_000_000 + secs * 1000).unwrap()
}

/// Every file below `dir` (symlinks as their target text), with its bytes: to show nothing changed.
pub(crate) fn snapshot_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn visit(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let rel = path.strip_prefix(base).unwrap().display().to_string();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(format!("{rel} -> "), target.display().to_string().into_bytes());
            } else if kind.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                visit(base, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    visit(dir, dir, &mut out);
    out
}

/// The Markdown store at `root` with both path resolutions: `openat2` (where the kernel has it) and the forced
/// `O_NOFOLLOW` component walk.
pub(crate) fn both_resolutions(root: &Path, limits: Limits) -> Vec<(&'static str, MarkdownStore)> {
    let openat2 = MarkdownStore::open_with(root, StoreOptions::new().limits(limits)).unwrap();
    let walk = MarkdownStore::open_with(root, StoreOptions::new().limits(limits).force_component_walk(true))
        .unwrap();
    assert_eq!(walk.resolution(), memory_markdown::Resolution::ComponentWalk);
    vec![("openat2", openat2), ("component walk", walk)]
}

/// The environment variable that turns this test binary into a helper process.
const CHILD_ROLE: &str = "ALP_STORE_TEST_CHILD";

/// Starts this test binary again as a helper process running `role` (see [`child_process_entry`]) with `vars`.
pub(crate) fn spawn_child(role: &str, vars: &[(&str, String)]) -> std::process::Child {
    testkit::process::spawn_child(CHILD_ROLE, role, vars)
}

pub(crate) use testkit::process::child_results;

/// Not a test of its own: the entry point of helper processes, which do nothing unless started by
/// [`spawn_child`].
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(CHILD_ROLE) else { return };
    match role.as_str() {
        "crash_writer" => crash::writer_child(),
        "crash_cycler" => crash::cycler_child(),
        "crash_swapper" => crash::swapper_child(),
        "cas_incrementer" => concurrency::incrementer_child(),
        "racing_creator" => concurrency::creator_child(),
        "fallback_creator" => hardening::fallback_creator_child(),
        "history_recycler" => history::races::recycler_child(),
        "history_stale_updater" => history::races::stale_updater_child(),
        other => panic!("unknown helper role `{other}`"),
    }
}
