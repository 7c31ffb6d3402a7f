//! Where a log continues from: a log that starts at `seq` 1 continues from nothing (the genesis hash); an archived
//! log, whose first record has `seq` N > 1, verifies from that record and says which record it continues from; an
//! anchor (`--from SEQ:HASH`) makes it fail unless it continues from there; and the readers refuse lines longer
//! than 4 MiB rather than hold them.

use std::io::Write as _;

use memory_audit::{
    AuditError, AuditRecord, AuditSink, BreakReason, ExpectedHead, GENESIS_HASH, JsonlAuditSink,
    MAX_LINE_BYTES, MemoryAuditSink, VerifyOptions, VerifyReport, head, show, verify, verify_bytes,
    verify_bytes_with, verify_with,
};

use crate::{allowed, genesis};

/// Ten records, as lines.
fn ten() -> (Vec<AuditRecord>, Vec<String>) {
    let sink = MemoryAuditSink::new();
    for n in 1..=10 {
        sink.record(&allowed("worker", n)).unwrap();
    }
    let records = sink.records();
    let lines = records.iter().map(AuditRecord::to_line).collect();
    (records, lines)
}

fn anchored(anchor: ExpectedHead) -> VerifyOptions {
    VerifyOptions::new().continuing_from(Some(anchor))
}

fn head_of(record: &AuditRecord) -> ExpectedHead {
    ExpectedHead::new(record.seq(), record.hash())
}

fn broken(report: VerifyReport) -> (u64, &'static str) {
    match report {
        VerifyReport::Broken { first_bad_seq, reason } => (first_bad_seq, reason.code()),
        ok => panic!("expected a broken chain, got {ok:?}"),
    }
}

#[test]
fn a_log_from_seq_1_continues_from_genesis() {
    let (records, lines) = ten();
    let report = verify_bytes(lines.concat().as_bytes(), None);
    assert_eq!(
        report,
        VerifyReport::Ok { records: 10, last_hash: records[9].hash().to_owned(), from: genesis() }
    );
    let genesis_anchor = ExpectedHead::new(0, GENESIS_HASH);
    assert!(verify_bytes_with(lines.concat().as_bytes(), None, &anchored(genesis_anchor.clone())).is_ok());
    assert!(verify_bytes_with(b"", None, &anchored(genesis_anchor)).is_ok());
}

#[test]
fn an_archived_log_verifies_from_its_first_record() {
    let (records, lines) = ten();
    let live = lines[4..].concat();
    let report = verify_bytes(live.as_bytes(), None);
    let from = (4, records[3].hash().to_owned());
    assert_eq!(report, VerifyReport::Ok { records: 6, last_hash: records[9].hash().to_owned(), from });
    // The archive alone verifies too, from the start.
    let archived = lines[..4].concat();
    assert!(matches!(verify_bytes(archived.as_bytes(), None), VerifyReport::Ok { records: 4, .. }));
    // Breaks inside an archived log are found at their `seq`.
    let mut moved = lines[4..].to_vec();
    moved.swap(1, 2);
    assert_eq!(broken(verify_bytes(moved.concat().as_bytes(), None)), (6, "bad_seq"));
    // A first record whose seq was raised still follows the genesis hash: it is no archived log.
    let raised = lines[0].replacen("\"seq\":1,", "\"seq\":5,", 1);
    assert_eq!(broken(verify_bytes(raised.as_bytes(), None)), (1, "bad_seq"));
}

#[test]
fn an_anchor_is_where_the_log_continues_from_or_one_of_its_records() {
    let (records, lines) = ten();
    let live = lines[4..].concat();
    let check = |anchor: ExpectedHead| verify_bytes_with(live.as_bytes(), None, &anchored(anchor));
    // The last archived record (the last line of the archive), or a record the log holds.
    assert!(check(head_of(&records[3])).is_ok());
    assert!(check(head_of(&records[6])).is_ok());
    assert!(check(head_of(&records[9])).is_ok());
    // Another hash at the start, an anchor before it, another hash at a record's place, an anchor past the end:
    // `not_continued`, at the log's first record.
    let other = "ab".repeat(32);
    assert_eq!(broken(check(ExpectedHead::new(4, other.clone()))), (5, "not_continued"));
    assert_eq!(broken(check(head_of(&records[1]))), (5, "not_continued"));
    assert_eq!(broken(check(ExpectedHead::new(0, GENESIS_HASH))), (5, "not_continued"));
    assert_eq!(broken(check(ExpectedHead::new(7, other))), (5, "not_continued"));
    assert_eq!(broken(check(ExpectedHead::new(11, records[9].hash()))), (5, "not_continued"));
    // A log started again from seq 1 does not continue from the archive's last record.
    let again = lines[..2].concat();
    let report = verify_bytes_with(again.as_bytes(), None, &anchored(head_of(&records[3])));
    assert_eq!(broken(report), (1, "not_continued"));
    let report = verify_bytes_with(b"", None, &anchored(head_of(&records[3])));
    let VerifyReport::Broken { first_bad_seq: 1, reason: BreakReason::NotContinued { found: None, .. } } =
        report
    else {
        panic!("{report:?}")
    };
    // A break before the anchor's record is reported first.
    let mut edited = lines[4..].to_vec();
    edited[0] = edited[0].replacen("worker", "mallory", 1);
    let report = verify_bytes_with(edited.concat().as_bytes(), None, &anchored(head_of(&records[8])));
    assert_eq!(broken(report), (5, "altered"));
}

#[test]
fn a_kept_head_before_an_archived_log_is_archived() {
    let (records, lines) = ten();
    let live = lines[4..].concat();
    let expect = |head: ExpectedHead| {
        verify_bytes_with(live.as_bytes(), None, &VerifyOptions::new().expecting(Some(head)))
    };
    assert!(expect(head_of(&records[3])).is_ok(), "the record it continues from");
    assert!(expect(head_of(&records[9])).is_ok());
    assert_eq!(broken(expect(head_of(&records[2]))), (3, "archived"));
    assert_eq!(broken(expect(ExpectedHead::new(4, "ab".repeat(32)))), (4, "diverged"));
    assert_eq!(broken(expect(ExpectedHead::new(12, "ab".repeat(32)))), (12, "truncated"));
}

#[test]
fn the_file_verifier_takes_both_checks() {
    let (records, lines) = ten();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, lines[4..].concat()).unwrap();
    let options = VerifyOptions::new()
        .expecting(Some(head_of(&records[9])))
        .continuing_from(Some(head_of(&records[3])));
    let VerifyReport::Ok { records: 6, from, .. } = verify_with(&path, None, &options).unwrap() else {
        panic!("the archived log did not verify")
    };
    assert_eq!(from, (4, records[3].hash().to_owned()));
    // An appender continues an archived log.
    let sink = JsonlAuditSink::open(&path).unwrap();
    assert_eq!(sink.record(&allowed("worker", 11)).unwrap().seq(), 11);
    assert!(matches!(verify(&path, None).unwrap(), VerifyReport::Ok { records: 7, .. }));
    assert_eq!(head(&path).unwrap().0, 11);
}

/// A log holding a line longer than 4 MiB: every reader says so and holds no more than a line of it.
#[test]
fn readers_refuse_lines_longer_than_4_mib() {
    let (_, lines) = ten();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let long = "x".repeat(MAX_LINE_BYTES + 1);
    let offset = lines[0].len() as u64;

    // In the middle.
    std::fs::write(&path, format!("{}{long}\n{}", lines[0], lines[1])).unwrap();
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Broken { first_bad_seq: 2, reason: BreakReason::LineTooLong }
    );
    let mut out = Vec::new();
    let err = show(&path, 1, None, &mut out).unwrap_err();
    assert!(matches!(err, AuditError::LineTooLong { offset: o, .. } if o == offset), "{err:?}");
    assert_eq!(out, lines[0].as_bytes(), "what comes before it is shown");

    // At the end: the head and the appender refuse it.
    std::fs::write(&path, format!("{}{long}\n", lines[0])).unwrap();
    assert!(matches!(head(&path), Err(AuditError::LineTooLong { .. })));
    let err = JsonlAuditSink::open(&path).unwrap().record(&allowed("worker", 2)).unwrap_err();
    assert!(matches!(err, AuditError::LineTooLong { .. }), "{err:?}");
    assert!(err.to_string().contains("longer than 4194304 bytes"), "{err}");

    // Torn, and too long to be a line.
    std::fs::write(&path, format!("{}{long}", lines[0])).unwrap();
    let err = JsonlAuditSink::open(&path).unwrap().record(&allowed("worker", 2)).unwrap_err();
    assert!(matches!(err, AuditError::LineTooLong { .. }), "{err:?}");

    // A line of exactly 4 MiB is a line (here not a record).
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "{}{}", lines[0], "x".repeat(MAX_LINE_BYTES)).unwrap();
    drop(file);
    assert!(matches!(
        verify(&path, None).unwrap(),
        VerifyReport::Broken { first_bad_seq: 2, reason: BreakReason::Malformed { .. } }
    ));
    assert!(matches!(head(&path), Err(AuditError::MalformedTail { .. })));
}

/// A live log after archives always holds the `archive` record of the segment that ends where it starts; a log whose
/// start was cut without one fails `announced_start`, and a segment verified alone is not held to it.
#[test]
fn a_live_log_must_announce_where_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let archives = dir.path().join("archive");
    let sink = JsonlAuditSink::open(&log).unwrap();
    for n in 1..=10 {
        sink.record(&allowed("worker", n)).unwrap();
    }
    let at = time::macros::datetime!(2026-11-30 08:00:00 UTC);
    let live = VerifyOptions::new().announced_start();
    assert!(verify_with(&log, None, &live).unwrap().is_ok(), "a log from seq 1 announces nothing");
    // Records 1–4 archived: the live log continues from 4, and its last record says so.
    memory_audit::archive(&log, &archives, Some(5), None, at).unwrap();
    assert!(verify_with(&log, None, &live).unwrap().is_ok());
    // A second archive that leaves the first archive record live (records 5–7): the newest names 5–7.
    memory_audit::archive(&log, &archives, Some(8), None, at).unwrap();
    let report = verify_with(&log, None, &live).unwrap();
    assert!(matches!(report, VerifyReport::Ok { from: (7, _), .. }), "{report:?}");
    // Each segment verifies alone, without the rule (the second holds no record naming the first).
    for segment in memory_audit::segments(&archives).unwrap() {
        assert!(verify(segment.path(), None).unwrap().is_ok(), "{}", segment.name());
    }

    // A log whose first records were cut, not archived: the chain alone is fine, the rule is not.
    let (_, lines) = ten();
    let cut = lines[4..].concat();
    assert!(verify_bytes(cut.as_bytes(), None).is_ok(), "the chain alone cannot tell");
    assert_eq!(broken(verify_bytes_with(cut.as_bytes(), None, &live)), (5, "unannounced_start"));
}
