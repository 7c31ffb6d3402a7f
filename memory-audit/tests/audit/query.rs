//! Reading a log for people: `select` keeps the records a filter matches (the first or last N of them), as stored;
//! `disclosed` says who received an entry; and an archive directory is read before the live log, each record once.

use std::path::Path;

use memory_audit::{
    AuditEvent, AuditOperation, AuditSink, Door, JsonlAuditSink, LogSource, MemoryAuditSink, Outcome,
    QueryError, RecordFilter, Window, archive, disclosed, log_sources, select,
};
use proptest::prelude::*;
use proptest::sample::select as pick;
use serde_json::Value;
use time::OffsetDateTime;
use time::macros::datetime;

use crate::event;

fn base() -> OffsetDateTime {
    datetime!(2026-11-29 22:00 UTC)
}

/// An event with every field a filter looks at.
fn rich(
    minute: i64,
    actor: &str,
    door: Option<Door>,
    id: &str,
    outcome: Outcome,
    via: Option<&str>,
    shown: &[&str],
) -> AuditEvent {
    let operation = match door {
        Some(Door::Get | Door::History | Door::View) => AuditOperation::Get,
        Some(Door::Create | Door::Import) => AuditOperation::Create,
        Some(Door::Update | Door::Restore) => AuditOperation::Update,
        Some(Door::Delete | Door::Prune) => AuditOperation::Delete,
        _ => AuditOperation::Search,
    };
    let code = match outcome {
        Outcome::Allowed => None,
        Outcome::Denied => Some("MEMORY_NOT_GRANTED"),
        Outcome::Error => Some("INVALID_MEMORY_ID"),
    };
    let mut event = event(base() + time::Duration::minutes(minute), actor, operation, id, outcome, code);
    event.door = door;
    event.via = via.map(str::to_owned);
    event.shown = shown.iter().map(|s| (*s).to_owned()).collect();
    event
}

/// A log of a few calls, as JSONL.
fn calls() -> String {
    let sink = MemoryAuditSink::new();
    for event in [
        rich(0, "worker", None, "project:a", Outcome::Allowed, None, &[]),
        rich(1, "worker", Some(Door::Get), "project:a:x", Outcome::Allowed, Some("tok1"), &["project:a:x@2"]),
        rich(
            2,
            "main",
            Some(Door::Context),
            "project:ab",
            Outcome::Allowed,
            None,
            &["project:ab@1", "project:a:x@3"],
        ),
        rich(3, "worker", Some(Door::Get), "private:main:n", Outcome::Denied, None, &[]),
        rich(4, "", Some(Door::View), "", Outcome::Allowed, None, &["project:a:x@3", "shared:t@1"]),
        rich(
            5,
            "worker",
            Some(Door::Search),
            "project:a",
            Outcome::Allowed,
            Some("tok2"),
            &["project:a:x@1"],
        ),
        rich(6, "worker", Some(Door::Create), "bad id", Outcome::Error, None, &[]),
    ] {
        sink.record(&event).unwrap();
    }
    sink.to_jsonl()
}

fn run(log: &str, filter: &RecordFilter, window: Window) -> Vec<u64> {
    let mut out = Vec::new();
    let n = select(vec![LogSource::new("log", log.as_bytes())], filter, window, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let seqs: Vec<u64> =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_u64().unwrap()).collect();
    assert_eq!(n as usize, seqs.len());
    // Each line as stored.
    for line in text.lines() {
        assert!(log.lines().any(|stored| stored == line));
    }
    seqs
}

fn only(f: impl FnOnce(&mut RecordFilter)) -> RecordFilter {
    let mut filter = RecordFilter::default();
    f(&mut filter);
    filter
}

#[test]
fn each_filter_keeps_what_it_names() {
    let log = calls();
    let cases: Vec<(RecordFilter, Vec<u64>)> = vec![
        (RecordFilter::default(), vec![1, 2, 3, 4, 5, 6, 7]),
        (only(|f| f.since = Some(6)), vec![6, 7]),
        (only(|f| f.before = Some(3)), vec![1, 2]),
        (only(|f| f.from = Some(base() + time::Duration::minutes(2))), vec![3, 4, 5, 6, 7]),
        (only(|f| f.to = Some(base() + time::Duration::minutes(2))), vec![1, 2, 3]),
        (only(|f| f.to = Some(base() + time::Duration::seconds(119))), vec![1, 2]),
        (only(|f| f.actor = Some(String::new())), vec![5]),
        (only(|f| f.actor = Some("main".into())), vec![3]),
        // A record without a door is of the door its operation names.
        (only(|f| f.door = Some(Door::Search)), vec![1, 6]),
        (only(|f| f.door = Some(Door::Get)), vec![2, 4]),
        (only(|f| f.outcome = Some(Outcome::Denied)), vec![4]),
        (only(|f| f.code = Some("INVALID_MEMORY_ID".into())), vec![7]),
        (only(|f| f.via = Some("tok1".into())), vec![2]),
        // Segment by segment: `project:a` holds `project:a:x`, never `project:ab`.
        (only(|f| f.id = Some("project:a".into())), vec![1, 2, 6]),
        (only(|f| f.id = Some("project".into())), vec![1, 2, 3, 6]),
        (only(|f| f.id = Some("project:a:".into())), vec![]),
        (only(|f| f.id = Some(String::new())), vec![1, 2, 3, 4, 5, 6, 7]),
        (only(|f| f.disclosed = Some("project:a:x".into())), vec![2, 3, 5, 6]),
        (only(|f| f.disclosed = Some("project:a".into())), vec![]),
        (
            only(|f| {
                f.actor = Some("worker".into());
                f.disclosed = Some("project:a:x".into());
                f.since = Some(3);
            }),
            vec![6],
        ),
        // Times past the years a record can hold.
        (only(|f| f.from = Some(datetime!(9999-12-31 23:00 -05:00))), vec![]),
        (only(|f| f.to = Some(datetime!(9999-12-31 23:00 -05:00))), vec![1, 2, 3, 4, 5, 6, 7]),
        (only(|f| f.to = Some(datetime!(-0001-01-01 0:00 UTC))), vec![]),
    ];
    for (filter, expected) in cases {
        assert_eq!(run(&log, &filter, Window::All), expected, "{filter:?}");
    }
}

#[test]
fn a_window_keeps_the_first_or_the_last_matches() {
    let log = calls();
    let worker = only(|f| f.actor = Some("worker".into()));
    assert_eq!(run(&log, &worker, Window::All), [1, 2, 4, 6, 7]);
    assert_eq!(run(&log, &worker, Window::First(2)), [1, 2]);
    assert_eq!(run(&log, &worker, Window::Last(2)), [6, 7]);
    assert_eq!(run(&log, &worker, Window::Last(9)), [1, 2, 4, 6, 7]);
    assert_eq!(run(&log, &worker, Window::First(0)), Vec::<u64>::new());
    assert_eq!(run(&log, &worker, Window::Last(0)), Vec::<u64>::new());
}

#[test]
fn a_line_that_is_no_record_is_an_error_and_a_torn_one_the_end() {
    let log = calls();
    let torn = format!("{log}{{\"seq\":8,");
    assert_eq!(run(&torn, &RecordFilter::default(), Window::All).len(), 7);
    let broken = log.replacen("{\"seq\":3,", "{\"seq\":\"3\",", 1);
    let err = select(
        vec![LogSource::new("the log", broken.as_bytes())],
        &RecordFilter::default(),
        Window::All,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(matches!(&err, QueryError::NotARecord { line: 3, .. }), "{err:?}");
    assert!(err.to_string().starts_with("line 3 of audit log `the log` is not an audit record"), "{err}");
}

#[test]
fn disclosed_says_who_received_an_entry() {
    let log = calls();
    let answer = disclosed("project:a:x", vec![LogSource::new("log", log.as_bytes())]).unwrap();
    assert_eq!(
        serde_json::to_string(&answer).unwrap(),
        concat!(
            r#"{"id":"project:a:x","roles":["#,
            r#"{"role":"","records":1,"first":"2026-11-29T22:04:00.000Z","last":"2026-11-29T22:04:00.000Z","versions":[3],"via":[]},"#,
            r#"{"role":"main","records":1,"first":"2026-11-29T22:02:00.000Z","last":"2026-11-29T22:02:00.000Z","versions":[3],"via":[]},"#,
            r#"{"role":"worker","records":2,"first":"2026-11-29T22:01:00.000Z","last":"2026-11-29T22:05:00.000Z","versions":[1,2],"via":["tok1","tok2"]}"#,
            "]}"
        )
    );
    let nobody = disclosed("project:a", vec![LogSource::new("log", log.as_bytes())]).unwrap();
    assert_eq!(serde_json::to_string(&nobody).unwrap(), r#"{"id":"project:a","roles":[]}"#);
}

/// IDs that need escapes in JSON are found as they are.
#[test]
fn disclosed_ids_with_escapes_are_found() {
    let sink = MemoryAuditSink::new();
    let id = "shared:\"q\"\\é";
    sink.record(&rich(0, "worker", Some(Door::Get), id, Outcome::Allowed, None, &[&format!("{id}@4")]))
        .unwrap();
    let log = sink.to_jsonl();
    let answer = disclosed(id, vec![LogSource::new("log", log.as_bytes())]).unwrap();
    assert_eq!((answer.roles.len(), answer.roles[0].versions.clone()), (1, vec![4]));
    assert_eq!(run(&log, &only(|f| f.disclosed = Some(id.into())), Window::All), [1]);
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.concat()).unwrap();
}

/// The archive directory first, then the live log; a segment whose records the next source also holds (an archive
/// killed after writing it, before replacing the log) is read once.
#[test]
fn an_archive_and_the_live_log_are_read_in_order_each_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let archive_dir = dir.path().join("archive");
    let sink = JsonlAuditSink::open(&log).unwrap();
    let mut lines = Vec::new();
    for n in 1..=6 {
        lines.push(
            sink.record(&rich(
                n,
                "worker",
                Some(Door::Get),
                "shared:t",
                Outcome::Allowed,
                None,
                &["shared:t@1"],
            ))
            .unwrap()
            .to_line(),
        );
    }
    let all = |archive: Option<&Path>| {
        let mut out = Vec::new();
        select(log_sources(&log, archive).unwrap(), &RecordFilter::default(), Window::All, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let with_archive = archive(&log, &archive_dir, Some(4), None, base()).unwrap();
    assert_eq!(with_archive.archived, 3);
    let live = std::fs::read_to_string(&log).unwrap();
    assert_eq!(all(None), live);
    assert_eq!(all(Some(&archive_dir)), lines[..3].concat() + &live);
    let who = disclosed("shared:t", log_sources(&log, Some(&archive_dir)).unwrap()).unwrap();
    assert_eq!(who.roles[0].records, 6);

    // A killed archive's state: a segment whose records the live log still holds.
    let crashed = tempfile::tempdir().unwrap();
    let crashed_log = crashed.path().join("audit.jsonl");
    let crashed_archive = crashed.path().join("archive");
    std::fs::create_dir(&crashed_archive).unwrap();
    write_lines(&crashed_log, &lines);
    write_lines(&crashed_archive.join("audit-1-3.jsonl"), &lines[..3]);
    // And a segment left by such an archive, under a segment that starts where it does.
    write_lines(&crashed_archive.join("audit-1-2.jsonl"), &lines[..2]);
    let mut out = Vec::new();
    let sources = log_sources(&crashed_log, Some(&crashed_archive)).unwrap();
    select(sources, &RecordFilter::default(), Window::All, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), lines.concat());

    // A log started again (from seq 1) after an archive hides nothing.
    write_lines(&crashed_log, &lines[..1]);
    std::fs::remove_file(crashed_archive.join("audit-1-2.jsonl")).unwrap();
    std::fs::remove_file(crashed_archive.join("audit-1-3.jsonl")).unwrap();
    write_lines(&crashed_archive.join("audit-3-6.jsonl"), &lines[2..]);
    let mut out = Vec::new();
    let sources = log_sources(&crashed_log, Some(&crashed_archive)).unwrap();
    select(sources, &RecordFilter::default(), Window::All, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), lines[2..].concat() + &lines[0]);
}

/// An independent reading of the filter: each line as a JSON value.
fn reference(lines: &[String], filter: &RecordFilter) -> Vec<u64> {
    let stamp = |t: OffsetDateTime| {
        let t = t.to_offset(time::UtcOffset::UTC);
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        )
    };
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    lines
        .iter()
        .filter_map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let seq = v["seq"].as_u64().unwrap();
            let door = text(&v, "door").or_else(|| text(&v, "operation")).unwrap();
            let id = text(&v, "id").unwrap();
            let shown: Vec<String> = v
                .get("shown")
                .map(|s| s.as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            let under = |prefix: &str| {
                let (p, i): (Vec<&str>, Vec<&str>) = (prefix.split(':').collect(), id.split(':').collect());
                prefix.is_empty() || (i.len() >= p.len() && i[..p.len()] == p[..])
            };
            let keep = filter.since.is_none_or(|s| seq >= s)
                && filter.before.is_none_or(|b| seq < b)
                && filter.from.is_none_or(|t| text(&v, "timestamp").unwrap() >= stamp(t))
                && filter.to.is_none_or(|t| text(&v, "timestamp").unwrap() <= stamp(t))
                && filter.actor.as_ref().is_none_or(|a| text(&v, "actor").as_ref() == Some(a))
                && filter.door.is_none_or(|d| door == d.as_str())
                && filter.outcome.is_none_or(|o| text(&v, "outcome").unwrap() == o.as_str())
                && filter.code.as_ref().is_none_or(|c| text(&v, "code").as_ref() == Some(c))
                && filter.via.as_ref().is_none_or(|c| text(&v, "via").as_ref() == Some(c))
                && filter.id.as_ref().is_none_or(|p| under(p))
                && filter
                    .disclosed
                    .as_ref()
                    .is_none_or(|d| shown.iter().any(|e| e.rsplit_once('@').is_some_and(|(i, _)| i == d)));
            keep.then_some(seq)
        })
        .collect()
}

const IDS: [&str; 7] = ["", "shared", "shared:a", "shared:ab", "shared:a:b", "project:p:a", "shared:a@b"];
const ACTORS: [&str; 3] = ["", "worker", "main"];

fn events() -> impl Strategy<Value = AuditEvent> {
    (
        0i64..30,
        pick(ACTORS.to_vec()),
        prop::option::of(pick(vec![Door::Get, Door::Search, Door::Context, Door::List, Door::View])),
        pick(IDS.to_vec()),
        pick(Outcome::ALL.to_vec()),
        prop::option::of(pick(vec!["t1", "t2"])),
        prop::collection::vec((pick(IDS[1..].to_vec()), 1u64..4), 0..3),
    )
        .prop_map(|(minute, actor, door, id, outcome, via, shown)| {
            let shown: Vec<String> = if door.is_some() && outcome == Outcome::Allowed {
                shown.into_iter().map(|(id, v)| format!("{id}@{v}")).collect()
            } else {
                Vec::new()
            };
            let shown: Vec<&str> = shown.iter().map(String::as_str).collect();
            rich(minute, actor, door, id, outcome, via, &shown)
        })
}

fn filters() -> impl Strategy<Value = RecordFilter> {
    (
        (prop::option::of(1u64..10), prop::option::of(1u64..25)),
        prop::option::of(0i64..30),
        prop::option::of(0i64..30),
        prop::option::of(pick(ACTORS.to_vec())),
        prop::option::of(pick(vec![Door::Get, Door::Search, Door::Context, Door::View])),
        prop::option::of(pick(Outcome::ALL.to_vec())),
        prop::option::of(pick(vec!["t1", "t2"])),
        prop::option::of(pick(IDS.to_vec())),
        prop::option::of(pick(IDS[1..].to_vec())),
    )
        .prop_map(|((since, before), from, to, actor, door, outcome, via, id, disclosed)| RecordFilter {
            since,
            before,
            from: from.map(|m| base() + time::Duration::minutes(m)),
            to: to.map(|m| base() + time::Duration::minutes(m)),
            actor: actor.map(str::to_owned),
            door,
            outcome,
            code: None,
            via: via.map(str::to_owned),
            id: id.map(str::to_owned),
            disclosed: disclosed.map(str::to_owned),
        })
}

proptest! {
    /// `select` keeps exactly what the reference keeps, and its windows are the reference's first and last N.
    #[test]
    fn select_agrees_with_a_reference_filter(
        events in prop::collection::vec(events(), 0..25),
        filter in filters(),
        n in 0u64..6,
    ) {
        let sink = MemoryAuditSink::new();
        for event in &events {
            sink.record(event).unwrap();
        }
        let log = sink.to_jsonl();
        let lines: Vec<String> = log.lines().map(str::to_owned).collect();
        let expected = reference(&lines, &filter);
        prop_assert_eq!(run(&log, &filter, Window::All), expected.clone());
        let first: Vec<u64> = expected.iter().copied().take(n as usize).collect();
        prop_assert_eq!(run(&log, &filter, Window::First(n)), first);
        let last: Vec<u64> = expected[expected.len().saturating_sub(n as usize)..].to_vec();
        prop_assert_eq!(run(&log, &filter, Window::Last(n)), last);
        for record in sink.records() {
            prop_assert_eq!(filter.matches(&record), expected.contains(&record.seq()));
        }
    }
}
