//! An append-only, hash-chained JSONL audit log: every call of a memory door leaves one record, and any later
//! edit, removal or reordering of records is detected by [`verify`].
//!
//! Most users want the `alp-memory` crate, whose service writes one record per call before it touches the store
//! and fails closed when the log cannot be written; this crate is for projects that want the log format, a sink, or
//! the verifier alone (an adapter in another language can check its own writer against [`verify_bytes`]).
//!
//! # The format, byte for byte
//!
//! One record per line, each line ending in `\n` (no `\r`, no blank lines), in UTF-8. A line is a compact JSON
//! object (no whitespace) with exactly these fields, in this order:
//!
//! | field | value |
//! |---|---|
//! | `seq` | the line number, an integer from 1, in decimal |
//! | `timestamp` | RFC 3339 in UTC with milliseconds: `2026-11-29T22:33:13.123Z` (years 0000–9999) |
//! | `actor` | the acting role as given, a string |
//! | `operation` | `"search"`, `"get"`, `"create"`, `"update"` or `"delete"`; for operator commands `"token-create"` or `"token-revoke"` |
//! | `id` | the ID exactly as given, even when invalid; a search's prefix, or `""` for a search without one |
//! | `outcome` | `"allowed"`, `"denied"` or `"error"` |
//! | `code` | `null` when allowed, else a string such as `"MEMORY_NOT_GRANTED"` |
//! | `via` | only in records of calls served over HTTP: the public ID of the bearer token the call came with (a string); absent everywhere else, never `null` |
//! | `prevHash` | the previous record's `hash`; 64 zeros ([`GENESIS_HASH`]) on the first record |
//! | `hash` | 64 lowercase hex digits, defined below |
//!
//! Strings are written as `serde_json` writes them: `"` and `\` escaped as `\"` and `\\`; U+0008, U+000C, `\n`,
//! `\r` and `\t` as `\b`, `\f`, `\n`, `\r`, `\t`; every other character below U+0020 as `\u00xx` with lowercase
//! hex; everything else (U+007F and all non-ASCII characters included) as raw UTF-8, never as `\u` escapes.
//!
//! `hash` is the lowercase hex SHA-256 of the bytes `prevHash + "\n" + R`, where `R` is the line's JSON object
//! without its `hash` field: everything up to the `,"hash":` that precedes it, then `}`. With a key
//! ([`AuditKey`]), `hash` is instead the hex HMAC-SHA256 of the same bytes under that key, so that whoever can
//! write the log but cannot read the key cannot recompute the chain after an edit.
//!
//! A first record, and the exact bytes its hash covers:
//!
//! ```text
//! {"seq":1,"timestamp":"2026-11-29T22:33:13.123Z","actor":"worker","operation":"get","id":"shared:team","outcome":"allowed","code":null,"prevHash":"0000000000000000000000000000000000000000000000000000000000000000","hash":"…"}
//!
//! 0000000000000000000000000000000000000000000000000000000000000000\n{"seq":1,"timestamp":"2026-11-29T22:33:13.123Z","actor":"worker","operation":"get","id":"shared:team","outcome":"allowed","code":null,"prevHash":"0000000000000000000000000000000000000000000000000000000000000000"}
//! ```
//!
//! # Writing
//!
//! [`JsonlAuditSink`] appends under an exclusive `flock` held from reading the last record (only the tail of the
//! file is read) to the end of the append; the line goes out in one `write`, then the data is synced, and only then
//! does [`AuditSink::record`] return. Threads and processes may append to one log at once; the records of threads
//! appending through one sink at the same time are committed together (group commit, [`GroupCommit`]): one lock, one
//! `write`, one sync for all of them, each call returning once its own record is synced (while records keep arriving
//! after a group of several, the next group waits up to the previous commit's time, at most 2 ms, for more to
//! join). A torn final line (a crash mid-write) was never acknowledged: the next appender truncates it.
//! [`MemoryAuditSink`] builds the same chain in memory.
//!
//! # Verifying
//!
//! [`verify`] walks the chain from line 1 and reports [`VerifyReport::Ok`] with the record count and last hash, or
//! [`VerifyReport::Broken`] with the line number where the chain first breaks and a [`BreakReason`] with a stable
//! [`code`](BreakReason::code): `torn_final_line`, `malformed`, `non_canonical`, `bad_seq` (a record removed,
//! inserted or moved), `broken_link` (a `prevHash` that is not the previous `hash`), `altered` (a hash that does not
//! recompute, or the wrong key). An empty or missing log is `Ok` with 0 records and [`GENESIS_HASH`].
//!
//! What a chain cannot show on its own: records removed from the end (the shorter log is a valid chain), or a log
//! deleted and started again. Keep the reported `last_hash` (and record count) somewhere the log's writers cannot
//! change, and compare. Without a key, anyone who can write the log can also rewrite it and recompute every hash.
//!
//! ```
//! use memory_audit::{verify_bytes, AuditEvent, AuditOperation, AuditSink, MemoryAuditSink, Outcome, VerifyReport};
//! use time::macros::datetime;
//!
//! let sink = MemoryAuditSink::new();
//! for (actor, outcome, code) in [("alice", Outcome::Allowed, None), ("bob", Outcome::Denied, Some("MEMORY_NOT_GRANTED"))] {
//!     sink.record(&AuditEvent {
//!         timestamp: datetime!(2026-11-29 22:33:13.123 UTC),
//!         actor: actor.to_owned(),
//!         operation: AuditOperation::Get,
//!         id: "project:alp:goals".to_owned(),
//!         outcome,
//!         code: code.map(str::to_owned),
//!         via: None,
//!     })?;
//! }
//! let log = sink.to_jsonl();
//! assert!(log.starts_with(r#"{"seq":1,"timestamp":"2026-11-29T22:33:13.123Z","actor":"alice","operation":"get","#));
//! assert!(matches!(verify_bytes(log.as_bytes(), None), VerifyReport::Ok { records: 2, .. }));
//!
//! // Someone rewrites history: alice's read becomes mallory's.
//! let tampered = log.replace("\"alice\"", "\"mallory\"");
//! let VerifyReport::Broken { first_bad_seq, reason } = verify_bytes(tampered.as_bytes(), None) else {
//!     panic!("tampering went unnoticed");
//! };
//! assert_eq!((first_bad_seq, reason.code()), (1, "altered"));
//! # Ok::<(), memory_audit::AuditError>(())
//! ```

mod error;
mod group;
mod jsonl;
mod key;
mod record;
mod sink;
mod verify;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use error::AuditError;
pub use group::{AppendStats, Batch, GroupCommit, GroupOutcome};
pub use jsonl::JsonlAuditSink;
pub use key::{AuditKey, MAX_KEY_BYTES};
pub use record::{AuditEvent, AuditOperation, AuditRecord, GENESIS_HASH, Outcome};
pub use sink::{AuditSink, MemoryAuditSink, ViaSink};
pub use verify::{
    BreakReason, ExpectedHead, VerifyReport, head, show, verify, verify_bytes, verify_expecting,
    verify_reader, verify_reader_expecting,
};
