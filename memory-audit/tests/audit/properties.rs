//! Property tests over random logs: untouched logs verify, and every edit, removal, duplication, swap or
//! truncation is reported at the first affected line.

use memory_audit::{
    AuditEvent, AuditOperation, AuditRecord, AuditSink, BreakReason, Door, ExpectedHead, MemoryAuditSink,
    Outcome, VerifyOptions, VerifyReport, verify_bytes, verify_bytes_with,
};
use proptest::prelude::*;
use proptest::sample::select;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::Line;

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z, in nanoseconds since the epoch.
const MIN_NANOS: i128 = -62_167_219_200_000_000_000;
const MAX_NANOS: i128 = 253_402_300_799_999_999_999;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z:]{0,12}",
        proptest::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter),
        select(vec!["", "\"", "\\", "\n", "\u{7f}", "ü", "\u{1}", "🦀", "\u{2028}"]).prop_map(str::to_owned),
    ]
}

fn events() -> impl Strategy<Value = AuditEvent> {
    (
        (MIN_NANOS..=MAX_NANOS, text(), select(AuditOperation::ALL.to_vec()), text()),
        (select(Outcome::ALL.to_vec()), "[A-Z_]{1,20}", prop::option::of(select(Door::ALL.to_vec()))),
        (
            proptest::collection::vec(text(), 0..3),
            proptest::collection::vec((text(), 1u64..u64::MAX), 0..4),
            prop::option::of(text()),
        ),
    )
        .prop_map(|((nanos, actor, operation, id), (outcome, code, door), (grant, shown, via))| {
            AuditEvent {
                timestamp: OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap(),
                actor,
                operation,
                door,
                id,
                outcome,
                code: (outcome != Outcome::Allowed).then_some(code),
                // `grant` exactly on the agent-* doors; `shown` only on an allowed record with a door.
                grant: door.filter(|door| door.carries_grant()).map(|_| grant),
                shown: match (door, outcome) {
                    (Some(_), Outcome::Allowed) => {
                        shown.into_iter().map(|(id, version)| format!("x{id}@{version}")).collect()
                    }
                    _ => Vec::new(),
                },
                via,
            }
        })
}

fn log(events: &[AuditEvent]) -> (Vec<AuditRecord>, Vec<String>) {
    let sink = MemoryAuditSink::new();
    for event in events {
        sink.record(event).unwrap();
    }
    let records = sink.records();
    let lines = records.iter().map(AuditRecord::to_line).collect();
    (records, lines)
}

fn broken_at(lines: &[String]) -> (u64, BreakReason) {
    match verify_bytes(lines.concat().as_bytes(), None) {
        VerifyReport::Broken { first_bad_seq, reason } => (first_bad_seq, reason),
        ok => panic!("expected a broken chain, got {ok:?}"),
    }
}

fn broken_with(lines: &[String], options: &VerifyOptions) -> (u64, BreakReason) {
    match verify_bytes_with(lines.concat().as_bytes(), None, options) {
        VerifyReport::Broken { first_bad_seq, reason } => (first_bad_seq, reason),
        ok => panic!("expected a broken chain, got {ok:?}"),
    }
}

/// The check that a log continues from the start of every chain.
fn from_genesis() -> VerifyOptions {
    VerifyOptions::new().continuing_from(Some(ExpectedHead::new(0, memory_audit::GENESIS_HASH)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Changes one hex digit.
fn flip_hex(hash: &mut String, at: usize) {
    let at = at % hash.len();
    let replacement = if &hash[at..=at] == "0" { "1" } else { "0" };
    hash.replace_range(at..=at, replacement);
}

proptest! {
    #[test]
    fn untouched_logs_verify(events in proptest::collection::vec(events(), 0..12)) {
        let (records, lines) = log(&events);
        let last_hash = records.last().map_or(memory_audit::GENESIS_HASH, |r| r.hash()).to_owned();
        prop_assert_eq!(
            verify_bytes(lines.concat().as_bytes(), None),
            VerifyReport::Ok { records: events.len() as u64, last_hash, from: crate::genesis() }
        );
    }

    /// Any record, encoded, parses back to itself, and its line is the canonical one: written again, the same bytes.
    #[test]
    fn any_record_round_trips(event in events(), previous in proptest::option::of(events())) {
        let sink = MemoryAuditSink::new();
        if let Some(previous) = previous {
            sink.record(&previous).unwrap();
        }
        let record = sink.record(&event).unwrap();
        let line = record.to_line();
        let parsed = AuditRecord::from_line(line.strip_suffix('\n').unwrap().as_bytes()).unwrap();
        prop_assert_eq!(&parsed, &record);
        prop_assert_eq!(parsed.to_line(), line.clone());
        prop_assert_eq!(serde_json::to_string(&parsed).unwrap() + "\n", line);
        prop_assert_eq!((parsed.door(), parsed.grant(), parsed.shown()), (event.door, event.grant.as_deref(), &event.shown[..]));
    }

    /// Every line is what serde_json writes for the documented struct, and every hash is SHA-256 of
    /// `prevHash + "\n" + the line without hash`, computed here independently.
    #[test]
    fn lines_match_an_independent_model(events in proptest::collection::vec(events(), 1..6)) {
        let (records, lines) = log(&events);
        let mut prev = memory_audit::GENESIS_HASH.to_owned();
        for (record, line) in records.iter().zip(&lines) {
            let model: Line = serde_json::from_str(line).unwrap();
            prop_assert_eq!(serde_json::to_string(&model).unwrap() + "\n", line.clone());
            prop_assert_eq!(serde_json::to_string(record).unwrap() + "\n", line.clone());
            prop_assert_eq!(&model.prev_hash, &prev);
            let unsigned = serde_json::to_string(&model.unsigned()).unwrap();
            let expected = hex(&Sha256::digest(format!("{prev}\n{unsigned}").as_bytes()));
            prop_assert_eq!(&model.hash, &expected);
            let parsed: AuditRecord = serde_json::from_str(line).unwrap();
            prop_assert_eq!(&parsed, record);
            prev = expected;
        }
    }

    #[test]
    fn any_field_edit_is_found_where_it_was_made(
        events in proptest::collection::vec(events(), 1..10),
        at in any::<prop::sample::Index>(),
        field in 0..9usize,
        digit in 0..64usize,
    ) {
        let (_, mut lines) = log(&events);
        let i = at.index(lines.len());
        let mut line: Line = serde_json::from_str(&lines[i]).unwrap();
        let expected_code = match field {
            0 => { line.seq += 1 + digit as u64; "bad_seq" }
            1 => {
                let other = "2000-01-01T00:00:00.000Z";
                line.timestamp = if line.timestamp == other { "2000-01-01T00:00:00.001Z".into() } else { other.into() };
                "altered"
            }
            2 => { line.actor.push('x'); "altered" }
            3 => { line.operation = if line.operation == "get" { "delete" } else { "get" }.into(); "altered" }
            4 => { line.id.push('x'); "altered" }
            5 => {
                if line.outcome == "allowed" {
                    line.outcome = "denied".into();
                    line.code = Some("MEMORY_NOT_GRANTED".into());
                    // A refusal shows nothing: with a receipt it is not a record at all.
                    if line.shown.is_empty() { "altered" } else { "malformed" }
                } else {
                    line.outcome = "allowed".into();
                    line.code = None;
                    "altered"
                }
            }
            6 => match &mut line.code {
                Some(code) => { code.push('X'); "altered" }
                // An allowed record with a code is not a record at all.
                None => { line.code = Some("X".into()); "malformed" }
            },
            7 => { flip_hex(&mut line.prev_hash, digit); "broken_link" }
            _ => { flip_hex(&mut line.hash, digit); "altered" }
        };
        lines[i] = serde_json::to_string(&line).unwrap() + "\n";
        let (first_bad_seq, reason) = broken_at(&lines);
        prop_assert_eq!(first_bad_seq, i as u64 + 1);
        prop_assert_eq!(reason.code(), expected_code);
    }

    #[test]
    fn any_byte_edit_is_found_where_it_was_made(
        events in proptest::collection::vec(events(), 1..10),
        at in any::<prop::sample::Index>(),
        byte in any::<prop::sample::Index>(),
        xor in 1..=255u8,
    ) {
        let (_, lines) = log(&events);
        let i = at.index(lines.len());
        let mut bytes: Vec<Vec<u8>> = lines.iter().map(|l| l.clone().into_bytes()).collect();
        let b = byte.index(bytes[i].len() - 1); // not the final newline
        bytes[i][b] ^= xor;
        match verify_bytes(&bytes.concat(), None) {
            VerifyReport::Broken { first_bad_seq, .. } => prop_assert_eq!(first_bad_seq, i as u64 + 1),
            ok => prop_assert!(false, "edit of byte {} of line {} unnoticed: {:?}", b, i + 1, ok),
        }
    }

    /// A record removed from the middle is found where it was. One removed from the end leaves a valid, shorter
    /// chain (only a kept head shows it), and one removed from the start leaves what an archived log looks like: it
    /// verifies from the removed record, which `from` names, and fails against the anchor of the chain's start.
    #[test]
    fn a_removed_record_is_found_where_it_was(
        events in proptest::collection::vec(events(), 1..10),
        at in any::<prop::sample::Index>(),
    ) {
        let (records, mut lines) = log(&events);
        let i = at.index(lines.len());
        lines.remove(i);
        if i == lines.len() {
            // Removing the last record leaves a valid, shorter chain: only a kept last hash shows it.
            let last_hash = if i == 0 { memory_audit::GENESIS_HASH } else { records[i - 1].hash() }.to_owned();
            prop_assert_eq!(
                verify_bytes(lines.concat().as_bytes(), None),
                VerifyReport::Ok { records: i as u64, last_hash, from: crate::genesis() }
            );
        } else if i == 0 {
            let last_hash = records.last().unwrap().hash().to_owned();
            let from = (1, records[0].hash().to_owned());
            prop_assert_eq!(
                verify_bytes(lines.concat().as_bytes(), None),
                VerifyReport::Ok { records: lines.len() as u64, last_hash, from }
            );
            let (first_bad_seq, reason) = broken_with(&lines, &from_genesis());
            prop_assert_eq!((first_bad_seq, reason.code()), (2, "not_continued"));
        } else {
            let (first_bad_seq, reason) = broken_at(&lines);
            prop_assert_eq!(first_bad_seq, i as u64 + 1);
            prop_assert_eq!(reason.code(), "bad_seq");
        }
    }

    #[test]
    fn a_duplicated_record_is_found_after_the_original(
        events in proptest::collection::vec(events(), 1..10),
        at in any::<prop::sample::Index>(),
    ) {
        let (_, mut lines) = log(&events);
        let i = at.index(lines.len());
        lines.insert(i + 1, lines[i].clone());
        let (first_bad_seq, reason) = broken_at(&lines);
        prop_assert_eq!(first_bad_seq, i as u64 + 2);
        prop_assert_eq!(reason.code(), "bad_seq");
    }

    /// Swapped records are found at the first of them; when that is the first line, the log reads as one
    /// continuing from the record before the one now first, and breaks at its second line (and against the anchor
    /// of the chain's start, at once).
    #[test]
    fn swapped_records_are_found_at_the_first(
        events in proptest::collection::vec(events(), 2..10),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let (_, mut lines) = log(&events);
        let (i, j) = (a.index(lines.len()), b.index(lines.len()));
        prop_assume!(i != j);
        lines.swap(i, j);
        let (first_bad_seq, reason) = broken_at(&lines);
        let (low, high) = (i.min(j) as u64, i.max(j) as u64);
        if low == 0 {
            // Line 1 holds record high + 1; line 2 should then be high + 2.
            prop_assert_eq!((first_bad_seq, reason.code()), (high + 2, "bad_seq"));
            let (first_bad_seq, reason) = broken_with(&lines, &from_genesis());
            prop_assert_eq!((first_bad_seq, reason.code()), (high + 1, "not_continued"));
        } else {
            prop_assert_eq!((first_bad_seq, reason.code()), (low + 1, "bad_seq"));
        }
    }

    /// Cutting the log at any byte leaves either whole records (Ok) or a torn final line where the cut is.
    #[test]
    fn a_cut_log_is_ok_or_torn_where_it_was_cut(
        events in proptest::collection::vec(events(), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let (records, lines) = log(&events);
        let bytes = lines.concat().into_bytes();
        let cut = cut.index(bytes.len() + 1);
        let kept = &bytes[..cut];
        let whole = kept.iter().filter(|&&b| b == b'\n').count();
        let report = verify_bytes(kept, None);
        if kept.is_empty() || kept.ends_with(b"\n") {
            let last_hash = if whole == 0 { memory_audit::GENESIS_HASH } else { records[whole - 1].hash() }.to_owned();
            prop_assert_eq!(report, VerifyReport::Ok { records: whole as u64, last_hash, from: crate::genesis() });
        } else {
            prop_assert_eq!(
                report,
                VerifyReport::Broken { first_bad_seq: whole as u64 + 1, reason: BreakReason::TornFinalLine }
            );
        }
    }
}
