//! An append-only, hash-chained JSONL audit log: every call of a memory door leaves one record, and any later
//! edit, removal or reordering of records is detected by [`verify`].
//!
//! Most users want the `alp-memory` crate, whose service writes one record per call before it touches the store
//! and fails closed when the log cannot be written; this crate is for projects that want the log format, a sink, or
//! the verifier alone (an adapter in another language can check its own writer against [`verify_bytes`]).
//!
//! # The format, byte for byte
//!
//! One record per line, each line ending in `\n` (no `\r`, no blank lines), in UTF-8, at most [`MAX_LINE_BYTES`]
//! (4 MiB) long without its `\n`. A line is a compact JSON object (no whitespace) with exactly these fields, in this
//! order; a field marked *optional* is absent (never `null`, never `[]`) when it has nothing to say:
//!
//! | field | value |
//! |---|---|
//! | `seq` | the record's position in the chain, an integer from 1, in decimal; one more than the previous record's |
//! | `timestamp` | RFC 3339 in UTC with milliseconds: `2026-11-29T22:33:13.123Z` (years 0000–9999) |
//! | `actor` | the acting role as given, a string (`""` for an operator command) |
//! | `operation` | `"search"`, `"get"`, `"create"`, `"update"` or `"delete"` for every read and write (a context build is a `search`); for operator commands `"redact"`, `"token-create"`, `"token-revoke"`, `"archive"`, `"agent-add"`, `"agent-grant"`, `"agent-revoke"` or `"agent-remove"` ([`AuditOperation`]) |
//! | `door` | *optional*: what the caller called ([`Door`]): `"search"` `"get"` `"create"` `"update"` `"delete"` `"context"` `"list"` `"history"` `"restore"` `"export"` `"import"` `"prune"` `"view"`, or the operator command (the operation's word); absent in records written before doors were recorded |
//! | `id` | the ID exactly as given, even when invalid; a search's prefix, or `""` for a search without one; an archive's segment name; an `agent-*` command's role |
//! | `outcome` | `"allowed"`, `"denied"` or `"error"` |
//! | `code` | `null` when allowed, else a string such as `"MEMORY_NOT_GRANTED"` |
//! | `grant` | present exactly on the four `agent-*` doors: an array of strings, `"read:<grant>"` / `"write:<grant>"`, the grants the command changed (add: the new definition's; grant, revoke: the one changed; remove: the ones it had, possibly `[]`) |
//! | `shown` | *optional*, only on an `allowed` record with a `door`: the receipt, an array of `"<id>@<version>"` strings (the version a decimal from 1), every entry whose ID or content the call returned, in the order returned |
//! | `via` | *optional*, only in records of calls served over HTTP: the public ID of the bearer token the call came with (a string) |
//! | `prevHash` | the previous record's `hash`; 64 zeros ([`GENESIS_HASH`]) on the record with `seq` 1 |
//! | `hash` | 64 lowercase hex digits, defined below |
//!
//! A record without `door`, `grant` and `shown` is byte for byte (and hash for hash) what it was before they existed.
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
//! and a read with its receipt:
//!
//! ```text
//! {"seq":2,"timestamp":"2026-11-29T22:33:14.000Z","actor":"worker","operation":"search","door":"context","id":"project:alp","outcome":"allowed","code":null,"shown":["project:alp:goals@3","shared:team@1"],"prevHash":"…","hash":"…"}
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
//! [`verify`] walks the chain from its first line and reports [`VerifyReport::Ok`] with the record count, the last
//! hash and where the log continues from, or [`VerifyReport::Broken`] with the `seq` where the chain first breaks
//! and a [`BreakReason`] with a stable [`code`](BreakReason::code): `torn_final_line`, `line_too_long`,
//! `malformed`, `non_canonical`, `bad_seq` (a record removed, inserted or moved), `broken_link` (a `prevHash` that
//! is not the previous `hash`), `altered` (a hash that does not recompute, or the wrong key). An empty or missing
//! log is `Ok` with 0 records and [`GENESIS_HASH`].
//!
//! A log whose first record has `seq` N > 1 is an archived log ([`archive`]): it verifies from that record, and
//! `from` is N − 1 and that record's `prevHash` (the last record of the archive before it). [`VerifyOptions`] adds
//! two checks: a kept head the log must still hold (`truncated`, `diverged`, or `archived` when it lies before the
//! log's start), and an anchor it must continue from (`not_continued`).
//!
//! What a chain cannot show on its own: records removed from the end (the shorter log is a valid chain), or a log
//! deleted and started again, or records cut from its start (it then reads as an archived log). Keep the reported
//! `last_hash` (and record count) somewhere the log's writers cannot change, and compare; check an archived log
//! against the last line of the archive before it. Without a key, anyone who can write the log can also rewrite it
//! and recompute every hash.
//!
//! # Archiving and reading
//!
//! [`archive`] moves the oldest records of a JSONL log into `audit-<first>-<last>.jsonl` (mode 0400) in an archive
//! directory, durably before it removes them, and leaves the rest of the log, continued by one `archive` record; a
//! crash at any point loses no record. [`segments`] lists a directory's segments in order. [`select`] filters the
//! records of a log (and of its archive, read first) as they stream by, [`disclosed`] says which roles received an
//! entry; both read one line at a time.
//!
//! ```
//! use memory_audit::{
//!     shown_entry, verify_bytes, AuditEvent, AuditOperation, AuditSink, Door, MemoryAuditSink, Outcome, VerifyReport,
//! };
//! use time::macros::datetime;
//!
//! let sink = MemoryAuditSink::new();
//! for (actor, outcome, code) in [("alice", Outcome::Allowed, None), ("bob", Outcome::Denied, Some("MEMORY_NOT_GRANTED"))] {
//!     sink.record(&AuditEvent {
//!         timestamp: datetime!(2026-11-29 22:33:13.123 UTC),
//!         actor: actor.to_owned(),
//!         operation: AuditOperation::Get,
//!         door: Some(Door::Get),
//!         id: "project:alp:goals".to_owned(),
//!         outcome,
//!         code: code.map(str::to_owned),
//!         grant: None,
//!         shown: if outcome == Outcome::Allowed { vec![shown_entry("project:alp:goals", 3)] } else { Vec::new() },
//!         via: None,
//!     })?;
//! }
//! let log = sink.to_jsonl();
//! assert!(log.starts_with(r#"{"seq":1,"timestamp":"2026-11-29T22:33:13.123Z","actor":"alice","operation":"get","door":"get","#));
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

mod archive;
mod error;
mod group;
mod jsonl;
mod key;
mod lines;
mod query;
mod record;
mod sink;
mod verify;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use archive::{
    ArchiveError, ArchiveReport, Segment, SegmentWriter, archive, archive_event, parse_segment_name, segments,
};
pub use error::AuditError;
pub use group::{AppendStats, Batch, GroupCommit, GroupOutcome};
pub use jsonl::JsonlAuditSink;
pub use key::{AuditKey, MAX_KEY_BYTES};
pub use query::{
    Disclosed, DisclosedRole, LogSource, QueryError, RecordFilter, Window, archive_sources, disclosed,
    log_sources, select, select_last,
};
pub use record::{
    AuditEvent, AuditOperation, AuditRecord, Door, GENESIS_HASH, MAX_LINE_BYTES, Outcome, parse_shown_entry,
    shown_entry,
};
pub use sink::{AuditSink, MemoryAuditSink, ViaSink};
pub use verify::{
    BreakReason, ExpectedHead, VerifyOptions, VerifyReport, head, show, verify, verify_bytes,
    verify_bytes_with, verify_expecting, verify_reader, verify_reader_expecting, verify_reader_with,
    verify_with,
};
