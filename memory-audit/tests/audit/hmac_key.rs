//! HMAC chains: a keyed log verifies with its key only, and an unkeyed log only without one.

use memory_audit::{
    AuditError, AuditKey, AuditSink, BreakReason, JsonlAuditSink, MemoryAuditSink, VerifyReport, verify,
    verify_bytes,
};

use crate::{GOLDEN, GOLDEN_HMAC, GOLDEN_KEY, golden_events};

fn key() -> AuditKey {
    AuditKey::from_bytes(GOLDEN_KEY).unwrap()
}

const ALTERED_AT_1: VerifyReport = VerifyReport::Broken { first_bad_seq: 1, reason: BreakReason::Altered };

#[test]
fn keyed_sinks_write_the_golden_hmac_lines() {
    let sink = MemoryAuditSink::with_key(key());
    for event in golden_events() {
        sink.record(&event).unwrap();
    }
    assert_eq!(sink.to_jsonl(), GOLDEN_HMAC);

    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("audit.key");
    std::fs::write(&key_path, GOLDEN_KEY).unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::with_key(&path, AuditKey::from_file(&key_path).unwrap()).unwrap();
    for event in golden_events() {
        sink.record(&event).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), GOLDEN_HMAC);
    assert!(verify(&path, Some(&key())).unwrap().is_ok());
    assert_eq!(verify(&path, None).unwrap(), ALTERED_AT_1);
}

#[test]
fn a_keyed_log_verifies_with_its_key_only() {
    let last_hash = "4080e7ec52cd6ba5006acd057e67bc35c7ea840314eaa4ea32e50774120e2269".to_owned();
    assert_eq!(
        verify_bytes(GOLDEN_HMAC.as_bytes(), Some(&key())),
        VerifyReport::Ok { records: 5, last_hash, from: crate::genesis() }
    );
    assert_eq!(verify_bytes(GOLDEN_HMAC.as_bytes(), None), ALTERED_AT_1);
    let other = AuditKey::from_bytes(b"alp-audit-test-key\n").unwrap();
    assert_eq!(verify_bytes(GOLDEN_HMAC.as_bytes(), Some(&other)), ALTERED_AT_1);
}

#[test]
fn an_unkeyed_log_fails_with_a_key() {
    assert!(verify_bytes(GOLDEN.as_bytes(), None).is_ok());
    assert_eq!(verify_bytes(GOLDEN.as_bytes(), Some(&key())), ALTERED_AT_1);
}

/// Without the key, rewriting a record and recomputing the chain with plain SHA-256 does not help.
#[test]
fn recomputing_without_the_key_is_detected() {
    let forged = MemoryAuditSink::new();
    let mut events = golden_events();
    events[0].actor = "mallory".to_owned();
    for event in &events {
        forged.record(event).unwrap();
    }
    assert_eq!(verify_bytes(forged.to_jsonl().as_bytes(), Some(&key())), ALTERED_AT_1);
}

#[test]
fn key_files() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.key");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(AuditKey::from_file(&empty), Err(AuditError::EmptyKey { path }) if path == empty));

    let missing = dir.path().join("missing.key");
    assert!(
        matches!(AuditKey::from_file(&missing), Err(AuditError::KeyUnreadable { path, .. }) if path == missing)
    );

    let huge = dir.path().join("huge.key");
    std::fs::write(&huge, vec![7u8; memory_audit::MAX_KEY_BYTES as usize + 1]).unwrap();
    assert!(matches!(AuditKey::from_file(&huge), Err(AuditError::KeyUnreadable { .. })));

    // The raw bytes, trailing newline included: it is a different key from the one without.
    let with_newline = dir.path().join("newline.key");
    std::fs::write(&with_newline, b"alp-audit-test-key\n").unwrap();
    let key = AuditKey::from_file(&with_newline).unwrap();
    assert_eq!(verify_bytes(GOLDEN_HMAC.as_bytes(), Some(&key)), ALTERED_AT_1);

    assert!(AuditKey::from_bytes(b"").is_none());
    assert_eq!(format!("{key:?}"), "AuditKey(..)");
}
