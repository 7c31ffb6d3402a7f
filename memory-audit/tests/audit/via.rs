//! `via`: the bearer token's ID in records of calls served over HTTP. It stands after `code` and before
//! `prevHash`, is covered by the hash, and is absent (not `null`) everywhere else, so earlier logs are unchanged.

use memory_audit::{
    AuditOperation, AuditRecord, AuditSink, GENESIS_HASH, JsonlAuditSink, MemoryAuditSink, Outcome,
    VerifyReport, verify, verify_bytes,
};
use sha2::{Digest, Sha256};
use time::macros::datetime;

use crate::event;

fn with_via(via: Option<&str>) -> memory_audit::AuditEvent {
    let mut event = event(
        datetime!(2026-11-29 22:33:13.123 UTC),
        "worker",
        AuditOperation::Get,
        "shared:team",
        Outcome::Allowed,
        None,
    );
    event.via = via.map(str::to_owned);
    event
}

#[test]
fn a_record_with_via_has_it_between_code_and_prev_hash_and_in_its_hash() {
    let record = AuditRecord::next_after(None, &with_via(Some("0123456789ab")), None).unwrap();
    let unsigned = format!(
        "{{\"seq\":1,\"timestamp\":\"2026-11-29T22:33:13.123Z\",\"actor\":\"worker\",\"operation\":\"get\",\
         \"id\":\"shared:team\",\"outcome\":\"allowed\",\"code\":null,\"via\":\"0123456789ab\",\
         \"prevHash\":\"{GENESIS_HASH}\"}}"
    );
    let hash = format!("{:x}", Sha256::digest(format!("{GENESIS_HASH}\n{unsigned}").as_bytes()));
    assert_eq!(record.hash(), hash);
    assert_eq!(record.to_line(), format!("{},\"hash\":\"{hash}\"}}\n", &unsigned[..unsigned.len() - 1]));
    assert_eq!(record.via(), Some("0123456789ab"));
    assert_eq!(AuditRecord::from_line(record.to_line().trim_end().as_bytes()), Ok(record));
}

#[test]
fn a_record_without_via_is_byte_for_byte_what_it_was() {
    let record = AuditRecord::next_after(None, &with_via(None), None).unwrap();
    let line = record.to_line();
    assert!(!line.contains("via"), "{line}");
    // The hash of this exact event before `via` existed.
    let unsigned = format!(
        "{{\"seq\":1,\"timestamp\":\"2026-11-29T22:33:13.123Z\",\"actor\":\"worker\",\"operation\":\"get\",\
         \"id\":\"shared:team\",\"outcome\":\"allowed\",\"code\":null,\"prevHash\":\"{GENESIS_HASH}\"}}"
    );
    let hash = format!("{:x}", Sha256::digest(format!("{GENESIS_HASH}\n{unsigned}").as_bytes()));
    assert_eq!(record.hash(), hash);
}

#[test]
fn a_log_mixing_records_with_and_without_via_verifies_and_an_edited_via_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    sink.record(&with_via(None)).unwrap();
    sink.record(&with_via(Some("0123456789ab"))).unwrap();
    let last = sink.record(&with_via(None)).unwrap();
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Ok { records: 3, last_hash: last.hash().to_owned(), from: crate::genesis() }
    );

    let log = std::fs::read_to_string(&path).unwrap();
    let edited = log.replace("\"via\":\"0123456789ab\"", "\"via\":\"ba9876543210\"");
    let VerifyReport::Broken { first_bad_seq, reason } = verify_bytes(edited.as_bytes(), None) else {
        panic!("an edited via went unnoticed");
    };
    assert_eq!((first_bad_seq, reason.code()), (2, "altered"));
    // Removing it is an edit too.
    let removed = log.replace(",\"via\":\"0123456789ab\"", "");
    assert!(matches!(verify_bytes(removed.as_bytes(), None), VerifyReport::Broken { first_bad_seq: 2, .. }));
    // `null` is not how an absent via is written.
    let null = log.replacen(",\"prevHash\"", ",\"via\":null,\"prevHash\"", 1);
    let VerifyReport::Broken { first_bad_seq, reason } = verify_bytes(null.as_bytes(), None) else {
        panic!("a null via was accepted");
    };
    assert_eq!((first_bad_seq, reason.code()), (1, "non_canonical"));
}

#[test]
fn token_operations_are_written_with_their_names() {
    let sink = MemoryAuditSink::new();
    for (operation, name) in
        [(AuditOperation::TokenCreate, "token-create"), (AuditOperation::TokenRevoke, "token-revoke")]
    {
        let mut event = with_via(None);
        event.actor = String::new();
        event.operation = operation;
        event.id = "0123456789ab".to_owned();
        let record = sink.record(&event).unwrap();
        assert!(record.to_line().contains(&format!(",\"actor\":\"\",\"operation\":\"{name}\",")));
        assert_eq!(operation.as_str(), name);
    }
    assert!(matches!(verify_bytes(sink.to_jsonl().as_bytes(), None), VerifyReport::Ok { records: 2, .. }));
}
