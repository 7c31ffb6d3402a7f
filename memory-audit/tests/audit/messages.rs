//! Messages people read: errors and break reasons.

use std::io;
use std::path::PathBuf;

use memory_audit::{ArchiveError, AuditError, BreakReason, GENESIS_HASH, QueryError};

#[test]
fn error_messages() {
    let path = PathBuf::from("/var/alp/memory/audit.jsonl");
    let errors = [
        AuditError::Io { path: path.clone(), op: "lock", source: io::Error::from_raw_os_error(5) },
        AuditError::MalformedTail {
            path: path.clone(),
            offset: 1234,
            detail: "expected value at line 1 column 1".into(),
        },
        AuditError::LineTooLong { path: path.clone(), offset: 4096 },
        AuditError::InvalidEvent { detail: "outcome `denied` must have a code".into() },
        AuditError::KeyUnreadable {
            path: "/etc/alp/audit.key".into(),
            source: io::Error::from_raw_os_error(13),
        },
        AuditError::EmptyKey { path: "/etc/alp/audit.key".into() },
    ];
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn break_reasons() {
    let reasons = [
        BreakReason::TornFinalLine,
        BreakReason::Malformed { detail: "missing field `hash` at line 1 column 210".into() },
        BreakReason::NonCanonical,
        BreakReason::BadSeq { expected: 4, found: 5 },
        BreakReason::BrokenLink { expected: GENESIS_HASH.into(), found: "ab".repeat(32) },
        BreakReason::Altered,
        BreakReason::LineTooLong,
        BreakReason::Truncated { records: 3 },
        BreakReason::Diverged { expected: "ab".repeat(32), found: "cd".repeat(32) },
        BreakReason::Archived { from_seq: 99 },
        BreakReason::NotContinued {
            anchor_seq: 99,
            anchor_hash: "ab".repeat(32),
            from_seq: 99,
            found: Some("cd".repeat(32)),
        },
        BreakReason::NotContinued { anchor_seq: 12, anchor_hash: "ab".repeat(32), from_seq: 99, found: None },
        BreakReason::NotContinued {
            anchor_seq: 120,
            anchor_hash: "ab".repeat(32),
            from_seq: 99,
            found: None,
        },
    ];
    let text: Vec<String> = reasons.iter().map(|r| format!("{}: {r}", r.code())).collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn archive_and_query_messages() {
    let log = "/var/alp/memory/audit.jsonl".to_owned();
    let archive = PathBuf::from("/var/alp/archive/audit-1-99.jsonl");
    let archive_errors = [
        ArchiveError::Io {
            path: "/var/alp/archive".into(),
            op: "lock",
            source: io::Error::from_raw_os_error(11),
        },
        ArchiveError::Broken { log: log.clone(), first_bad_seq: 7, reason: BreakReason::Altered },
        ArchiveError::PastTheEnd { before: 120, next: 101 },
        ArchiveError::SegmentDiffers { path: archive.clone() },
        ArchiveError::Replaced { log: log.clone(), segment: archive },
    ];
    let query_errors = [
        QueryError::Read { log: log.clone(), error: io::Error::from_raw_os_error(5) },
        QueryError::NotARecord {
            log: log.clone(),
            line: 3,
            detail: "expected value at line 1 column 1".into(),
        },
        QueryError::LineTooLong { log, line: 4 },
        QueryError::Write(io::Error::from(io::ErrorKind::BrokenPipe)),
    ];
    let text: Vec<String> = archive_errors
        .iter()
        .map(ToString::to_string)
        .chain(query_errors.iter().map(ToString::to_string))
        .collect();
    insta::assert_snapshot!(text.join("\n"));
}
