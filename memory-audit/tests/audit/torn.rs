//! A torn final line (a writer that crashed mid-write) is reported by verify and removed by the next appender.

use std::fs::OpenOptions;
use std::io::Write;

use memory_audit::{AuditSink, BreakReason, JsonlAuditSink, MemoryAuditSink, VerifyReport, verify};

use crate::allowed;

fn append_raw(path: &std::path::Path, bytes: &[u8]) {
    OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
}

#[test]
fn torn_line_is_reported_then_truncated_by_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    sink.record(&allowed("a", 1)).unwrap();
    sink.record(&allowed("a", 2)).unwrap();
    let before = std::fs::read(&path).unwrap();

    // What a third appender would have written, cut off mid-line.
    let model = MemoryAuditSink::new();
    for n in 1..=3 {
        model.record(&allowed("a", n)).unwrap();
    }
    let third = model.records()[2].to_line();
    append_raw(&path, &third.as_bytes()[..third.len() / 2]);

    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Broken { first_bad_seq: 3, reason: BreakReason::TornFinalLine }
    );

    let record = sink.record(&allowed("b", 3)).unwrap();
    assert_eq!(record.seq(), 3);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after, [before, record.to_line().into_bytes()].concat());
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Ok { records: 3, last_hash: record.hash().to_owned(), from: crate::genesis() }
    );
}

#[test]
fn a_log_holding_only_a_torn_line_starts_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, br#"{"seq":1,"timestamp":"2026-11-2"#).unwrap();
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Broken { first_bad_seq: 1, reason: BreakReason::TornFinalLine }
    );

    let sink = JsonlAuditSink::open(&path).unwrap();
    let record = sink.record(&allowed("a", 1)).unwrap();
    assert_eq!((record.seq(), record.prev_hash()), (1, memory_audit::GENESIS_HASH));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), record.to_line());
    assert!(verify(&path, None).unwrap().is_ok());
}

/// A complete record without its newline is still torn: it was never acknowledged, since the newline is part of
/// the single write.
#[test]
fn a_record_missing_only_its_newline_is_torn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let model = MemoryAuditSink::new();
    model.record(&allowed("a", 1)).unwrap();
    let line = model.to_jsonl();
    std::fs::write(&path, line.trim_end()).unwrap();
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Broken { first_bad_seq: 1, reason: BreakReason::TornFinalLine }
    );
    let record = JsonlAuditSink::open(&path).unwrap().record(&allowed("b", 1)).unwrap();
    assert_eq!(record.seq(), 1);
    assert!(verify(&path, None).unwrap().is_ok());
}
