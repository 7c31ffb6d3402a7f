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
