//! Messages people read: errors and break reasons.

use std::io;
use std::path::PathBuf;

use memory_audit::{AuditError, BreakReason, GENESIS_HASH};

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
    ];
    let text: Vec<String> = reasons.iter().map(|r| format!("{}: {r}", r.code())).collect();
    insta::assert_snapshot!(text.join("\n"));
}
