//! Integration tests of memory-audit: one binary, one module per area.

// clippy.toml allows these inside `#[test]` functions only; the helpers shared by tests fail loudly the same way.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers")]

mod archive;
mod concurrency;
mod conformance;
mod from;
mod golden;
mod head;
mod hmac_key;
mod jsonl;
mod messages;
mod properties;
mod public_interface;
mod query;
mod receipts;
mod torn;
mod via;

use memory_audit::{AuditEvent, AuditOperation, Outcome};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::macros::datetime;

/// An event at `timestamp`, with the code only when the outcome is not `allowed`.
pub(crate) fn event(
    timestamp: OffsetDateTime,
    actor: &str,
    operation: AuditOperation,
    id: &str,
    outcome: Outcome,
    code: Option<&str>,
) -> AuditEvent {
    AuditEvent {
        timestamp,
        actor: actor.to_owned(),
        operation,
        door: None,
        id: id.to_owned(),
        outcome,
        code: code.map(str::to_owned),
        grant: None,
        shown: Vec::new(),
        via: None,
    }
}

/// Where a log that starts at `seq` 1 continues from: nothing, the genesis hash.
pub(crate) fn genesis() -> (u64, String) {
    (0, memory_audit::GENESIS_HASH.to_owned())
}

/// A simple allowed `get` by `actor`.
pub(crate) fn allowed(actor: &str, n: u64) -> AuditEvent {
    event(
        datetime!(2026-11-29 22:33:13.123 UTC),
        actor,
        AuditOperation::Get,
        &format!("shared:note:{n}"),
        Outcome::Allowed,
        None,
    )
}

/// The events of `conformance/audit/golden.jsonl`.
pub(crate) fn golden_events() -> Vec<AuditEvent> {
    use AuditOperation::*;
    use Outcome::*;
    vec![
        event(datetime!(2026-11-29 22:33:13.123 UTC), "worker", Get, "shared:team", Allowed, None),
        event(datetime!(2026-11-29 22:33:14 UTC), "worker", Search, "", Denied, Some("MEMORY_NOT_GRANTED")),
        event(
            // Given in another offset and with sub-millisecond digits: stored in UTC, truncated.
            datetime!(2026-11-30 00:33:15.050_999 +02:00),
            "main",
            Create,
            "private:worker:ü \"x\"\\\n\t\u{1}\u{7f}",
            Denied,
            Some("PRIVATE_MEMORY_DENIED"),
        ),
        event(
            datetime!(2026-11-29 22:33:16.999 UTC),
            "møller",
            Delete,
            "../../.ssh/id_rsa",
            Error,
            Some("INVALID_MEMORY_ID"),
        ),
        event(
            datetime!(2026-11-30 00:00:00.001 UTC),
            "worker",
            Update,
            "project:alp:log:2026-09",
            Allowed,
            None,
        ),
    ]
}

pub(crate) const GOLDEN: &str = include_str!("../../../conformance/audit/golden.jsonl");
pub(crate) const GOLDEN_HMAC: &str = include_str!("../../../conformance/audit/golden-hmac.jsonl");
pub(crate) const GOLDEN_KEY: &[u8] = b"alp-audit-test-key";

/// An independent model of one line, serialised by serde_json in the documented field order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Line {
    pub(crate) seq: u64,
    pub(crate) timestamp: String,
    pub(crate) actor: String,
    pub(crate) operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) door: Option<String>,
    pub(crate) id: String,
    pub(crate) outcome: String,
    pub(crate) code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) grant: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) shown: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) via: Option<String>,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

/// The same without `hash`: what the hash covers.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Unsigned<'a> {
    pub(crate) seq: u64,
    pub(crate) timestamp: &'a str,
    pub(crate) actor: &'a str,
    pub(crate) operation: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) door: Option<&'a str>,
    pub(crate) id: &'a str,
    pub(crate) outcome: &'a str,
    pub(crate) code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) grant: Option<&'a [String]>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(crate) shown: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) via: Option<&'a str>,
    pub(crate) prev_hash: &'a str,
}

impl Line {
    pub(crate) fn unsigned(&self) -> Unsigned<'_> {
        Unsigned {
            seq: self.seq,
            timestamp: &self.timestamp,
            actor: &self.actor,
            operation: &self.operation,
            door: self.door.as_deref(),
            id: &self.id,
            outcome: &self.outcome,
            code: self.code.as_deref(),
            grant: self.grant.as_deref(),
            shown: &self.shown,
            via: self.via.as_deref(),
            prev_hash: &self.prev_hash,
        }
    }
}

mod sink_suite {
    //! The audit sink suite against the sinks of this crate.
    use memory_audit::testkit::AuditSubject;
    use memory_audit::{JsonlAuditSink, MemoryAuditSink};

    fn jsonl() -> AuditSubject {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let sink = JsonlAuditSink::open(&path).unwrap();
        AuditSubject::new(sink, move || std::fs::read(&path).unwrap(), dir)
    }

    fn memory() -> AuditSubject {
        let sink = std::sync::Arc::new(MemoryAuditSink::new());
        let reader = std::sync::Arc::clone(&sink);
        AuditSubject::new(sink, move || reader.to_jsonl().into_bytes(), ())
    }

    memory_audit::audit_sink_suite!(jsonl_sink, jsonl);
    memory_audit::audit_sink_suite!(memory_sink, memory);
}
