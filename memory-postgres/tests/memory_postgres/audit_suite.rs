//! The audit sink suite of `memory-audit`, unchanged, against a database per check.

use std::sync::Arc;

use memory_audit::MemoryAuditSink;
use memory_audit::testkit::AuditSubject;
use memory_postgres::{PostgresAuditSink, Settings};

/// A fresh sink in a database of its own, read back as JSONL. Without PostgreSQL (tests skipped, notice printed),
/// the in-memory sink stands in.
fn make() -> AuditSubject {
    let Some((store, db)) = crate::fresh_store(&Settings::default()) else {
        let sink = Arc::new(MemoryAuditSink::new());
        let read = Arc::clone(&sink);
        return AuditSubject::new(sink, move || read.to_jsonl().into_bytes(), ());
    };
    let sink: PostgresAuditSink = store.audit_sink(None);
    let read = sink.clone();
    AuditSubject::new(sink, move || log_bytes(&read), db)
}

/// The whole log as the JSONL file would hold it.
pub(crate) fn log_bytes(sink: &PostgresAuditSink) -> Vec<u8> {
    sink.lines(1, None).unwrap().into_iter().flat_map(|line| format!("{line}\n").into_bytes()).collect()
}

memory_audit::audit_sink_suite!(postgres_sink, make);

/// 32 threads share one sink, and a second sink on its own connections (another replica) appends at the same
/// time: every record is stored once, each before its call returns; the chain verifies; and the shared sink
/// committed its records in fewer transactions than records (group commit).
#[test]
fn thirty_two_threads_group_their_records_into_fewer_commits() {
    use memory_audit::{AuditEvent, AuditOperation, AuditSink, Outcome, VerifyReport};
    let Some((store, db)) = crate::fresh_store(&Settings::default()) else { return };
    let shared = Arc::new(store.audit_sink(None));
    let other = PostgresAuditSink::open(db.url(), None).unwrap();
    let event = |actor: String, n: u64| AuditEvent {
        timestamp: time::macros::datetime!(2026-11-29 22:33:13.123 UTC),
        actor,
        operation: AuditOperation::Get,
        door: None,
        id: format!("shared:note:{n}"),
        outcome: Outcome::Allowed,
        code: None,
        grant: None,
        shown: Vec::new(),
        via: None,
    };
    const THREADS: u64 = 32;
    const PER_THREAD: u64 = 8;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let sink = Arc::clone(&shared);
            s.spawn(move || {
                for n in 0..PER_THREAD {
                    let record = sink.record(&event(format!("group-{t}"), n)).unwrap();
                    let stored = sink.lines(record.seq(), Some(1)).unwrap();
                    assert_eq!(
                        stored,
                        [record.to_line().trim_end().to_owned()],
                        "committed before the call returned"
                    );
                }
            });
        }
        s.spawn(|| {
            for n in 0..PER_THREAD * 4 {
                other.record(&event("replica".to_owned(), n)).unwrap();
            }
        });
    });
    let total = THREADS * PER_THREAD + PER_THREAD * 4;
    assert!(matches!(shared.verify(None).unwrap(), VerifyReport::Ok { records, .. } if records == total));
    let mut lines = shared.lines(1, None).unwrap();
    lines.sort();
    lines.dedup();
    assert_eq!(lines.len() as u64, total, "every record once");
    let stats = shared.stats();
    assert_eq!(stats.records, THREADS * PER_THREAD);
    assert!(stats.syncs < stats.records, "no record was grouped: {stats:?}");
}
