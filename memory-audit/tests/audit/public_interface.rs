//! The whole crate as an adopter sees it, through the public API only.

use memory_audit::{
    AuditEvent, AuditOperation, AuditRecord, AuditSink, JsonlAuditSink, Outcome, VerifyReport, verify,
};
use time::macros::datetime;

#[test]
fn record_then_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink: Box<dyn AuditSink> = Box::new(JsonlAuditSink::open(&path).unwrap());

    let denied = AuditEvent {
        timestamp: datetime!(2026-11-29 22:33:13.123 UTC),
        actor: "worker".to_owned(),
        operation: AuditOperation::Get,
        door: None,
        id: "private:main:drafts".to_owned(),
        outcome: Outcome::Denied,
        code: Some("PRIVATE_MEMORY_DENIED".to_owned()),
        grant: None,
        shown: Vec::new(),
        via: None,
    };
    let first = sink.record(&denied).unwrap();
    let second = sink
        .record(&AuditEvent { outcome: Outcome::Allowed, code: None, id: "shared:team".to_owned(), ..denied })
        .unwrap();

    assert_eq!((first.seq(), second.seq()), (1, 2));
    assert_eq!(second.prev_hash(), first.hash());
    assert_eq!(first.timestamp(), datetime!(2026-11-29 22:33:13.123 UTC));
    assert_eq!(
        (first.actor(), first.operation(), first.id(), first.outcome(), first.code()),
        (
            "worker",
            AuditOperation::Get,
            "private:main:drafts",
            Outcome::Denied,
            Some("PRIVATE_MEMORY_DENIED")
        )
    );

    let text = std::fs::read_to_string(&path).unwrap();
    let parsed: Vec<AuditRecord> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(parsed, [first, second.clone()]);
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Ok { records: 2, last_hash: second.hash().to_owned(), from: crate::genesis() }
    );

    let with_extra = text.lines().next().unwrap().replacen('{', "{\"extra\":true,", 1);
    assert!(serde_json::from_str::<AuditRecord>(&with_extra).is_err());
}

#[test]
fn names_on_the_wire() {
    let ops: Vec<&str> = AuditOperation::ALL.iter().map(|o| o.as_str()).collect();
    assert_eq!(
        ops,
        [
            "search",
            "get",
            "create",
            "update",
            "delete",
            "redact",
            "token-create",
            "token-revoke",
            "archive",
            "agent-add",
            "agent-grant",
            "agent-revoke",
            "agent-remove"
        ]
    );
    assert_eq!(serde_json::to_string(&AuditOperation::TokenRevoke).unwrap(), "\"token-revoke\"");
    let outcomes: Vec<String> = Outcome::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(outcomes, ["allowed", "denied", "error"]);
    assert_eq!(serde_json::to_string(&AuditOperation::Delete).unwrap(), "\"delete\"");
    assert_eq!(serde_json::from_str::<Outcome>("\"denied\"").unwrap(), Outcome::Denied);
}
