//! The golden vector: fixed events give exactly the lines of `conformance/audit/golden.jsonl`, which an independent
//! implementation wrote.

use memory_audit::{
    AuditSink, GENESIS_HASH, JsonlAuditSink, MemoryAuditSink, VerifyReport, verify, verify_bytes,
};
use sha2::{Digest, Sha256};

use crate::{GOLDEN, golden_events};

#[test]
fn memory_sink_writes_the_golden_lines() {
    let sink = MemoryAuditSink::new();
    for event in golden_events() {
        sink.record(&event).unwrap();
    }
    assert_eq!(sink.to_jsonl(), GOLDEN);
    let lines: Vec<String> = sink.records().iter().map(|r| r.to_line()).collect();
    assert_eq!(lines.concat(), GOLDEN);
}

#[test]
fn jsonl_sink_writes_the_golden_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    for (i, event) in golden_events().iter().enumerate() {
        let record = sink.record(event).unwrap();
        assert_eq!(record.seq(), i as u64 + 1);
        assert_eq!(Some(record.to_line().as_str()), GOLDEN.split_inclusive('\n').nth(i));
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), GOLDEN);
    let last_hash = "b9d65973bcd5ec5bf0ec972a3214e3f4ab6fc55530c03a1f58405e318442665b".to_owned();
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Ok { records: 5, last_hash, from: crate::genesis() }
    );
}

#[test]
fn golden_file_verifies() {
    let last_hash = "b9d65973bcd5ec5bf0ec972a3214e3f4ab6fc55530c03a1f58405e318442665b".to_owned();
    assert_eq!(
        verify_bytes(GOLDEN.as_bytes(), None),
        VerifyReport::Ok { records: 5, last_hash, from: crate::genesis() }
    );
}

/// The hashed bytes written out by hand, so that a field-order or escaping bug cannot hide behind a shared encoder.
#[test]
fn first_hash_is_sha256_of_the_documented_bytes() {
    let hashed = concat!(
        "0000000000000000000000000000000000000000000000000000000000000000\n",
        r#"{"seq":1,"timestamp":"2026-11-29T22:33:13.123Z","actor":"worker","operation":"get","id":"shared:team","#,
        r#""outcome":"allowed","code":null,"prevHash":"0000000000000000000000000000000000000000000000000000000000000000"}"#,
    );
    let expected: String = Sha256::digest(hashed.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(expected, "2f7030039a363ca9bcb3589d0341acb1940a05289d98931a44e99eb8feab7a53");

    let sink = MemoryAuditSink::new();
    let first = sink.record(&golden_events()[0]).unwrap();
    assert_eq!(first.prev_hash(), GENESIS_HASH);
    assert_eq!(first.hash(), expected);
}

/// The third event holds every kind of escape: quote, backslash, newline, tab, a `\u` control character, raw
/// non-ASCII and a raw U+007F.
#[test]
fn escapes_are_written_as_serde_json_writes_them() {
    let third = GOLDEN.lines().nth(2).unwrap();
    assert!(third.contains("\"id\":\"private:worker:ü \\\"x\\\"\\\\\\n\\t\\u0001\u{7f}\""), "{third}");
    let sink = MemoryAuditSink::new();
    for event in golden_events() {
        let record = sink.record(&event).unwrap();
        assert_eq!(record.to_line(), serde_json::to_string(&record).unwrap() + "\n");
    }
}
