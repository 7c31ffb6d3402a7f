//! Threads and processes appending to one log at once: nothing is lost, nothing is duplicated, the chain holds.
//!
//! Child processes are this test binary itself, started with `APPEND_ENV` naming the log; in that mode the
//! `child_appender` test appends and exits, and in a normal run it does nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;

use memory_audit::{AuditRecord, AuditSink, JsonlAuditSink, VerifyReport, verify};

use crate::allowed;

const APPEND_ENV: &str = "MEMORY_AUDIT_TEST_APPEND_TO";
const ACTOR_ENV: &str = "MEMORY_AUDIT_TEST_ACTOR";
const PROCESSES: usize = 3;
const THREADS: usize = 4;
const PER_THREAD: u64 = 15;

/// Appends `PER_THREAD` records from each of two threads, each thread with its own sink.
fn append_from_threads(path: &Path, actor: &str, threads: usize) {
    thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let sink = JsonlAuditSink::open(path).unwrap();
                for n in 0..PER_THREAD {
                    sink.record(&allowed(&format!("{actor}-{t}"), n)).unwrap();
                }
            });
        }
    });
}

#[test]
fn child_appender() {
    let (Some(path), Some(actor)) = (std::env::var_os(APPEND_ENV), std::env::var(ACTOR_ENV).ok()) else {
        return; // a normal test run
    };
    append_from_threads(Path::new(&path), &actor, 2);
}

#[test]
fn threads_and_processes_append_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            Command::new(&exe)
                .args(["--exact", "concurrency::child_appender", "--test-threads=1"])
                .env(APPEND_ENV, &path)
                .env(ACTOR_ENV, format!("proc{p}"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();

    // Threads of this process: two with their own sinks, and THREADS sharing one sink.
    append_from_threads(&path, "parent", 2);
    let shared = Arc::new(JsonlAuditSink::open(&path).unwrap());
    thread::scope(|s| {
        for t in 0..THREADS {
            let sink = Arc::clone(&shared);
            s.spawn(move || {
                for n in 0..PER_THREAD {
                    sink.record(&allowed(&format!("shared-{t}"), n)).unwrap();
                }
            });
        }
    });
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child appender failed");
    }

    let expected = (PROCESSES * 2 + 2 + THREADS) as u64 * PER_THREAD;
    let report = verify(&path, None).unwrap();
    assert!(matches!(report, VerifyReport::Ok { records, .. } if records == expected), "{report:?}");

    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<AuditRecord> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.iter().map(AuditRecord::seq).collect::<Vec<_>>(), (1..=expected).collect::<Vec<_>>());

    // Every appender's records are all there, each once, in the order it wrote them.
    let mut by_actor: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for record in &records {
        by_actor.entry(record.actor()).or_default().push(record.id());
    }
    assert_eq!(by_actor.len(), PROCESSES * 2 + 2 + THREADS);
    let in_order: Vec<String> = (0..PER_THREAD).map(|n| format!("shared:note:{n}")).collect();
    for (actor, ids) in by_actor {
        assert_eq!(ids, in_order, "records of {actor}");
    }
}

const GROUP_THREADS: usize = 32;
const GROUP_PER_THREAD: u64 = 12;

/// 32 threads share one sink while child processes append to the same log through their own sinks: every record
/// is in the file once, each as soon as its call returns; the chain verifies; and the shared sink grouped records
/// (fewer syncs than records).
#[test]
fn thirty_two_threads_group_their_records_while_other_processes_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|p| {
            Command::new(&exe)
                .args(["--exact", "concurrency::child_appender", "--test-threads=1"])
                .env(APPEND_ENV, &path)
                .env(ACTOR_ENV, format!("other{p}"))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();

    let shared = Arc::new(JsonlAuditSink::open(&path).unwrap());
    thread::scope(|s| {
        for t in 0..GROUP_THREADS {
            let sink = Arc::clone(&shared);
            let path = &path;
            s.spawn(move || {
                for n in 0..GROUP_PER_THREAD {
                    let record = sink.record(&allowed(&format!("group-{t}"), n)).unwrap();
                    // Durable before the call returned: the line is in the file now.
                    let log = std::fs::read_to_string(path).unwrap();
                    assert!(
                        log.lines().any(|l| l == record.to_line().trim_end()),
                        "record {} not in the log",
                        record.seq()
                    );
                }
            });
        }
    });
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child appender failed");
    }

    let ours = GROUP_THREADS as u64 * GROUP_PER_THREAD;
    let expected = ours + 2 * 2 * PER_THREAD;
    let report = verify(&path, None).unwrap();
    assert!(matches!(report, VerifyReport::Ok { records, .. } if records == expected), "{report:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<AuditRecord> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut by_actor: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for record in &records {
        by_actor.entry(record.actor()).or_default().push(record.id());
    }
    assert_eq!(by_actor.len(), GROUP_THREADS + 4);
    for (actor, ids) in by_actor {
        let count = if actor.starts_with("group-") { GROUP_PER_THREAD } else { PER_THREAD };
        let in_order: Vec<String> = (0..count).map(|n| format!("shared:note:{n}")).collect();
        assert_eq!(ids, in_order, "records of {actor}, each once and in order");
    }

    let stats = shared.stats();
    assert_eq!(stats.records, ours);
    assert!(stats.syncs < stats.records, "no record was grouped: {stats:?}");
}
