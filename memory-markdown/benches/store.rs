//! Store throughput: create and update against a bare write + fsync + rename + directory fsync loop in the same
//! run (the floor any durable store pays), and list + read of 10,000 entries against a plain std walk that reads
//! every file. Benchmarks named `baseline_*` are the floors `cargo xtask bench` reports ratios against.
//!
//! `cargo bench -p memory-store --bench store -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmarks fail loudly")]
#![allow(missing_docs, reason = "criterion generates the entry point")]

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memory_entry::{Limits, NewEntry, Patch, Timestamp};
use memory_id::{MemoryPrefix, parse_memory_id};
use memory_markdown::MarkdownStore;
use memory_store::{Listing, MemoryStore};

const CONTENT: &str = "A decision, a fact or a note of a few hundred bytes, as agents write them. \
    It says what was decided and why, who asked, and where to look next. \
    Nothing in it is special: no frontmatter lookalikes, no odd characters, just text.\n";

fn now() -> Timestamp {
    Timestamp::parse("2026-11-29T12:00:00Z").unwrap()
}

/// The floor: what one durable atomic replace costs on this disk.
fn bare_replace(dir: &std::path::Path, dir_handle: &std::fs::File, n: u64) {
    let temp = dir.join(format!(".tmp-{n}"));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp).unwrap();
    file.write_all(CONTENT.as_bytes()).unwrap();
    file.sync_all().unwrap();
    std::fs::rename(&temp, dir.join("bare.md")).unwrap();
    dir_handle.sync_all().unwrap();
}

fn writes(c: &mut Criterion) {
    let mut group = c.benchmark_group("write");
    group.throughput(Throughput::Elements(1));
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_entries_per_scope_root: u64::MAX, ..Limits::default() };
    let store = MarkdownStore::open_with_limits(dir.path().join("memory"), limits).unwrap();

    let bare_dir = dir.path().join("bare");
    std::fs::create_dir(&bare_dir).unwrap();
    let bare_handle = std::fs::File::open(&bare_dir).unwrap();
    let counter = AtomicU64::new(0);
    group.bench_function("baseline_write_fsync_rename_dirfsync", |b| {
        b.iter(|| bare_replace(&bare_dir, &bare_handle, counter.fetch_add(1, Ordering::Relaxed)));
    });

    let target = parse_memory_id("project:alp:bench:updated").unwrap();
    store.create(NewEntry::new(target.clone(), CONTENT), now()).unwrap();
    let patch = Patch::content_only(CONTENT.to_owned());
    group.bench_function("markdown_update", |b| {
        b.iter(|| {
            let version = store.get(&target, now()).unwrap().version;
            store.update(&target, version, &patch, now()).unwrap();
        });
    });

    // Creates in a fresh scope root per batch, so that the entry count (a directory walk under the scope-root
    // lock) stays that of a realistic scope root (up to 100 entries).
    let batch = AtomicU64::new(0);
    group.bench_function("markdown_create_in_scope_root_of_100", |b| {
        b.iter_batched(
            || {
                let n = batch.fetch_add(1, Ordering::Relaxed);
                parse_memory_id(&format!("project:p{}:entry:{}", n / 100, n % 100)).unwrap()
            },
            |id| store.create(NewEntry::new(id, CONTENT), now()).unwrap(),
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn listing(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    // 10,000 entries written directly in the canonical form (creating them through the store would fsync 20,000
    // times), spread like real memory: 20 projects of 500 entries in a few directories each.
    let template = memory_markdown::render_entry_file(
        &NewEntry::new(parse_memory_id("shared:template").unwrap(), CONTENT).into_entry(now()),
    );
    for project in 0..20 {
        for n in 0..500 {
            let sub = root.join(format!("projects/p{project}/area{}", n % 5));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join(format!("entry{n}.md")), &template).unwrap();
        }
    }
    let store = MarkdownStore::open_with_limits(&root, Limits::default()).unwrap();
    let roots = [MemoryPrefix::parse("project").unwrap()];
    assert_eq!(store.list(&Listing::new(roots.to_vec(), now())).unwrap().len(), 10_000);
    let mut group = c.benchmark_group("list");
    group.throughput(Throughput::Elements(10_000));
    group.sample_size(10);
    group.bench_function("markdown_list_read_10000", |b| {
        b.iter(|| store.list(&Listing::new(roots.to_vec(), now())).unwrap());
    });
    // The floor: walk the same tree with std and read every file, parsing nothing, checking nothing.
    group.bench_function("baseline_std_walk_read_10000", |b| {
        b.iter(|| {
            let mut stack = vec![root.join("projects")];
            let mut bytes = 0usize;
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else {
                        bytes += std::fs::read(&path).unwrap().len();
                    }
                }
            }
            bytes
        });
    });
    group.finish();
}

criterion_group!(benches, writes, listing);
criterion_main!(benches);
