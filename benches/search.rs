//! Search through the whole service (policy, one audit record, listing, folding, ranking) over 10,000 generated
//! entries, against a floor measured in the same run: a std walk that reads every file, lower-cases it and looks
//! for the terms, with no policy, no parsing and no ranking.
//!
//! The `warm` group is the long-running server's case (`alp mcp`): the same search repeated on a service whose
//! store keeps its entry cache ([`StoreOptions::entry_cache`]), with the audit log a real JSONL file (each search
//! appends and syncs a record), against `rg -i -c` over the same files in the same run. It writes the cache's size
//! per entry to `target/bench-cache-stats.txt` for `cargo xtask bench`.
//!
//! Each group also times the worst legal query ([`worst_query`]: 64 distinct terms, 4,095 characters, the most the
//! bounds let a caller send) next to the ordinary one, so hostile input is seen to cost bounded time.
//!
//! `cargo bench -p alp-memory --bench search`

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmarks fail loudly")]
#![allow(missing_docs, reason = "criterion generates the entry point")]

use alp_memory::memory_audit::{JsonlAuditSink, MemoryAuditSink};
use alp_memory::memory_markdown::{MarkdownStore, StoreOptions};
use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
use alp_memory::{MAX_QUERY_CHARS, MAX_QUERY_TERMS, MemoryService, SearchRequest, StaticActors};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const WORDS: &[&str] = &[
    "agent", "memory", "policy", "grant", "role", "project", "entry", "version", "audit", "search",
    "context", "budget", "storage", "atomic", "rename", "lock", "worker", "review", "decision", "deploy",
    "cache", "index", "Cơ", "sở", "dữ", "liệu", "người", "dùng",
];

fn generate(root: &std::path::Path) {
    let mut state = 0x5eed_u64;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(state >> 33).unwrap()
    };
    for i in 0..10_000 {
        let dir = root.join(format!("projects/p{:02}/notes", i / 400));
        if i % 400 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut content = String::new();
        while content.len() < 640 {
            content.push_str(WORDS[next() % WORDS.len()]);
            content.push(' ');
        }
        if next() % 25 == 0 {
            content.push_str("postgres ");
        }
        if next() % 25 == 0 {
            content.push_str("migration ");
        }
        let text = format!(
            "---\nkind: fact\nversion: 1\ncreatedAt: 2026-10-01T10:00:00.000Z\nupdatedAt: 2026-10-0{}T10:00:00.000Z\n\
             importance: medium\n---\n{content}\n",
            1 + i % 9
        );
        std::fs::write(dir.join(format!("n{i:05}.md")), text).unwrap();
    }
}

/// The worst query the bounds allow: [`MAX_QUERY_TERMS`] distinct terms, as long as [`MAX_QUERY_CHARS`] lets them be
/// once joined with single spaces (63 characters each, 4,095 in all; 64 terms of 64 characters would be 4,159).
/// Each term is cut from the corpus's own words run together, so its letters are the entries' letters and every term
/// is searched for through every entry's text.
fn worst_query() -> String {
    let width = (MAX_QUERY_CHARS + 1) / MAX_QUERY_TERMS - 1;
    let letters: Vec<char> = WORDS.concat().to_lowercase().chars().collect();
    let terms: Vec<String> = (0..MAX_QUERY_TERMS)
        .map(|i| (0..width).map(|j| letters[(i + j) % letters.len()]).collect())
        .collect();
    let query = terms.join(" ");
    assert_eq!(query.chars().count(), MAX_QUERY_TERMS * width + MAX_QUERY_TERMS - 1);
    alp_memory::check_query(&query).expect("the worst query is a legal one");
    query
}

fn search(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    generate(&root);
    let reader = Actor::new(Role::parse("bench").unwrap()).with_read([Grant::parse("project:*").unwrap()]);
    let service = MemoryService::new(
        MarkdownStore::open(&root).unwrap(),
        MemoryAuditSink::new(),
        GrantPolicy,
        StaticActors::new([reader]),
    );
    let request =
        SearchRequest { query: "postgres migration".into(), limit: Some(20), ..SearchRequest::default() };
    assert_eq!(service.search("bench", &request).unwrap().entries.len(), 20);

    let mut group = c.benchmark_group("search");
    group.throughput(Throughput::Elements(10_000));
    group.sample_size(20);
    group.bench_function("service_search_10000", |b| b.iter(|| service.search("bench", &request).unwrap()));
    let worst = SearchRequest { query: worst_query().into(), ..request.clone() };
    group.bench_function("service_search_worst_legal_query_10000", |b| {
        b.iter(|| service.search("bench", &worst).unwrap())
    });
    let terms = [memchr::memmem::Finder::new("postgres"), memchr::memmem::Finder::new("migration")];
    group.bench_function("baseline_std_read_lowercase_find_10000", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            let mut stack = vec![root.join("projects")];
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.is_dir() {
                        stack.push(path);
                    } else {
                        let text = std::fs::read_to_string(&path).unwrap().to_lowercase();
                        hits += terms.iter().filter(|t| t.find(text.as_bytes()).is_some()).count();
                    }
                }
            }
            hits
        });
    });
    group.finish();
}

fn warm(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    generate(&root);
    // Files changed in the last second are not cached (the racily-clean rule): let them settle.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let reader = Actor::new(Role::parse("bench").unwrap()).with_read([Grant::parse("project:*").unwrap()]);
    let store = MarkdownStore::open_with(&root, StoreOptions::new().entry_cache(256 << 20)).unwrap();
    let sink = JsonlAuditSink::open(dir.path().join("audit.jsonl")).unwrap();
    let service = MemoryService::new(store, sink, GrantPolicy, StaticActors::new([reader]));
    let request =
        SearchRequest { query: "postgres migration".into(), limit: Some(20), ..SearchRequest::default() };
    assert_eq!(service.search("bench", &request).unwrap().entries.len(), 20);
    assert_eq!(service.search("bench", &request).unwrap().entries.len(), 20);

    let mut group = c.benchmark_group("warm");
    group.throughput(Throughput::Elements(10_000));
    group.sample_size(20);
    group.bench_function("service_search_cached_10000", |b| {
        b.iter(|| service.search("bench", &request).unwrap())
    });
    let worst = SearchRequest { query: worst_query().into(), ..request.clone() };
    group.bench_function("service_search_cached_worst_legal_query_10000", |b| {
        b.iter(|| service.search("bench", &worst).unwrap())
    });
    let projects = root.join("projects");
    let ripgrep =
        std::process::Command::new("rg").arg("--version").output().is_ok_and(|o| o.status.success());
    if ripgrep {
        group.bench_function("baseline_ripgrep_10000", |b| {
            b.iter(|| {
                std::process::Command::new("rg")
                    .args(["-i", "-c", "-e", "postgres", "-e", "migration"])
                    .arg(&projects)
                    .stdout(std::process::Stdio::null())
                    .status()
                    .unwrap()
            })
        });
    }
    group.finish();
    if let Some(stats) = service.store().cache_stats() {
        let line = format!(
            "entries {} bytes {} per_entry {}\n",
            stats.entries,
            stats.bytes,
            stats.bytes / stats.entries.max(1)
        );
        let _ = std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-cache-stats.txt"), line);
    }
}

criterion_group!(benches, search, warm);
criterion_main!(benches);
