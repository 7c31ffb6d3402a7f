//! The audit log in a table: receipts in their columns, archiving (the segment written and synced first, then the
//! archive record and the deletion of the archived rows in one transaction), reading with an archive directory,
//! the 4 MiB line bound, and a schema of version 3 migrated.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memory_audit::testkit::{PAUSE_AT, PAUSE_MARKER};
use memory_audit::{
    ArchiveError, AuditEvent, AuditOperation, AuditRecord, AuditSink, Door, ExpectedHead, GENESIS_HASH,
    Outcome, RecordFilter, VerifyOptions, VerifyReport, Window, archive_sources, disclosed, segments, select,
    verify, verify_bytes, verify_with,
};
use memory_postgres::{PostgresAuditSink, Settings};

use crate::{at, fresh_store, spawn_child};

fn event(actor: &str, n: u64) -> AuditEvent {
    AuditEvent {
        timestamp: time::macros::datetime!(2026-11-29 22:33:13.123 UTC),
        actor: actor.to_owned(),
        operation: AuditOperation::Get,
        door: Some(Door::Get),
        id: format!("shared:note:{n}"),
        outcome: Outcome::Allowed,
        code: None,
        grant: None,
        shown: vec![format!("shared:note:{n}@1")],
        via: None,
    }
}

fn record(line: &str) -> AuditRecord {
    AuditRecord::from_line(line.trim_end().as_bytes()).unwrap()
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

/// Every segment of `dir` verifies alone, continuing from the one before it; the table continues from the last;
/// together they are one chain from `seq` 1, which is returned.
fn check_archived(sink: &PostgresAuditSink, dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let mut anchor = ExpectedHead::new(0, GENESIS_HASH);
    for segment in segments(dir).unwrap() {
        let options = VerifyOptions::new().continuing_from(Some(anchor.clone()));
        let report = verify_with(segment.path(), None, &options).unwrap();
        assert!(report.is_ok(), "{}: {report:?}", segment.path().display());
        let lines = lines_of(segment.path());
        let last = record(lines.last().unwrap());
        anchor = ExpectedHead::new(last.seq(), last.hash());
        all.extend(lines);
    }
    let report = sink.verify_with(&VerifyOptions::new().continuing_from(Some(anchor))).unwrap();
    assert!(report.is_ok(), "the table: {report:?}");
    all.extend(sink.lines(1, None).unwrap());
    let text: String = all.iter().map(|l| format!("{l}\n")).collect();
    assert!(matches!(verify_bytes(text.as_bytes(), None), VerifyReport::Ok { from: (0, _), .. }));
    all
}

#[test]
fn receipts_are_in_their_columns_and_the_line_is_the_chains() {
    let Some((store, db)) = fresh_store(&Settings::default()) else { return };
    let sink = store.audit_sink(None);
    let mut old = event("worker", 1);
    old.door = None;
    old.shown = Vec::new();
    sink.record(&old).unwrap();
    sink.record(&event("worker", 2)).unwrap();
    let mut client = db.connect().unwrap();
    let rows = client.query("SELECT door, shown FROM alp_audit ORDER BY seq", &[]).unwrap();
    let columns: Vec<(Option<String>, Option<Vec<String>>)> =
        rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(columns, [(None, None), (Some("get".into()), Some(vec!["shared:note:2@1".into()]))]);
    let disclosed_to: Vec<i64> = client
        .query("SELECT seq FROM alp_audit WHERE 'shared:note:2@1' = ANY(shown)", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(disclosed_to, [2]);
    assert!(sink.verify(None).unwrap().is_ok());
}

#[test]
fn all_but_the_last_record_move_into_a_segment_and_the_rest_continues() {
    let Some((store, _db)) = fresh_store(&Settings::default()) else { return };
    let sink = store.audit_sink(None);
    let written: Vec<String> =
        (1..=6).map(|n| sink.record(&event("worker", n)).unwrap().to_line().trim_end().to_owned()).collect();
    let dir = tempfile::tempdir().unwrap();
    let archive_dir = dir.path().join("archive");
    let report = sink.archive(&archive_dir, None, at(0)).unwrap();
    assert_eq!(report.archived, 5);
    assert_eq!(report.file, Some(archive_dir.join("audit-1-5.jsonl")));
    assert_eq!(report.from, (5, record(&written[4]).hash().to_owned()));
    assert_eq!(lines_of(&archive_dir.join("audit-1-5.jsonl")), written[..5]);
    let live = sink.lines(1, None).unwrap();
    assert_eq!(live[0], written[5]);
    let archived = record(&live[1]);
    assert_eq!(
        (archived.seq(), archived.actor(), archived.door(), archived.id()),
        (7, "", Some(Door::Archive), "audit-1-5.jsonl")
    );
    let VerifyReport::Ok { records: 2, from, .. } = sink.verify(None).unwrap() else { panic!("the table") };
    assert_eq!(from, report.from);
    assert_eq!(sink.head().unwrap().0, 7);
    assert_eq!(check_archived(&sink, &archive_dir)[..6], written[..]);

    // Before a record: that far; nothing before the table's start: nothing; past its end: refused.
    sink.record(&event("worker", 8)).unwrap();
    let again = sink.archive(&archive_dir, Some(8), at(1)).unwrap();
    assert_eq!((again.archived, again.file), (2, Some(archive_dir.join("audit-6-7.jsonl"))));
    let nothing = sink.archive(&archive_dir, Some(8), at(2)).unwrap();
    assert_eq!((nothing.archived, nothing.file, nothing.from), (0, None, again.from));
    let err = sink.archive(&archive_dir, Some(99), at(3)).unwrap_err();
    assert!(matches!(err, ArchiveError::PastTheEnd { before: 99, next: 10 }), "{err:?}");
    assert_eq!(check_archived(&sink, &archive_dir).len(), 9);

    // The table and its archive read for people: each record once, the archive first.
    let mut out = Vec::new();
    let mut sources = archive_sources(Some(&archive_dir)).unwrap();
    sources.push(sink.source().unwrap());
    let n = select(sources, &RecordFilter::default(), Window::All, &mut out).unwrap();
    assert_eq!(n, 9);
    let who = disclosed("shared:note:2", vec![sink.source().unwrap()]).unwrap();
    assert!(who.roles.is_empty(), "the table alone no longer holds it");
    let mut sources = archive_sources(Some(&archive_dir)).unwrap();
    sources.push(sink.source().unwrap());
    let who = disclosed("shared:note:2", sources).unwrap();
    assert_eq!((who.roles[0].role.as_str(), who.roles[0].versions.clone()), ("worker", vec![1]));
}

#[test]
fn a_broken_table_is_not_archived_and_a_long_line_is_not_read() {
    let Some((store, db)) = fresh_store(&Settings::default()) else { return };
    let sink = store.audit_sink(None);
    for n in 1..=4 {
        sink.record(&event("worker", n)).unwrap();
    }
    let mut client = db.connect().unwrap();
    client
        .execute("UPDATE alp_audit SET line = replace(line, 'worker', 'mallory') WHERE seq = 2", &[])
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = sink.archive(&dir.path().join("archive"), None, at(0)).unwrap_err();
    assert!(matches!(err, ArchiveError::Broken { first_bad_seq: 2, .. }), "{err:?}");
    assert_eq!(sink.lines(1, None).unwrap().len(), 4, "nothing removed");
    assert!(segments(dir.path().join("archive")).unwrap().is_empty());

    let long = "x".repeat(memory_audit::MAX_LINE_BYTES + 1);
    client.execute("UPDATE alp_audit SET line = $1 WHERE seq = 3", &[&long]).unwrap();
    let err = sink.verify(None).unwrap_err();
    assert!(err.to_string().contains("seq 3 is longer than 4194304 bytes"), "{err}");
    let err = sink.show(1, None, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("seq 3 is longer"), "{err}");
    client.execute("UPDATE alp_audit SET line = $1 WHERE seq = 4", &[&long]).unwrap();
    assert!(sink.head().unwrap_err().to_string().contains("seq 4 is longer"));
}

/// Not a test of its own: archives the database `url` names into `dir`, stopping at `PAUSE_AT`.
pub(crate) fn archiver_child() {
    let url = std::env::var("ALP_TEST_ARCHIVE_URL").unwrap();
    let dir = std::env::var("ALP_TEST_ARCHIVE_DIR").unwrap();
    let sink = PostgresAuditSink::open(&url, None).unwrap();
    sink.archive(Path::new(&dir), None, at(0)).unwrap();
}

/// A kill -9 after each step of writing the segment: every row is still in the table, and archiving again
/// finishes the job.
#[test]
fn an_archive_killed_before_its_transaction_loses_nothing() {
    for point in ["segment-written", "segment-linked", "segment-durable"] {
        let Some((store, db)) = fresh_store(&Settings::default()) else { return };
        let sink = store.audit_sink(None);
        let written: Vec<String> = (1..=5)
            .map(|n| sink.record(&event("worker", n)).unwrap().to_line().trim_end().to_owned())
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let archive_dir = dir.path().join("archive");
        let marker = dir.path().join("reached");
        let mut child = spawn_child(
            "archiver",
            &[
                ("ALP_TEST_ARCHIVE_URL", db.url().to_owned()),
                ("ALP_TEST_ARCHIVE_DIR", archive_dir.display().to_string()),
                (PAUSE_AT, point.to_owned()),
                (PAUSE_MARKER, marker.display().to_string()),
            ],
        );
        let started = Instant::now();
        while !marker.exists() {
            assert!(child.try_wait().unwrap().is_none(), "the archive ended before {point}");
            assert!(started.elapsed() < Duration::from_secs(60), "the archive never reached {point}");
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(sink.lines(1, None).unwrap(), written, "{point}: every row is there");
        assert!(sink.verify(None).unwrap().is_ok());
        let report = sink.archive(&archive_dir, None, at(1)).unwrap();
        assert_eq!(report.archived, 4, "{point}");
        assert_eq!(check_archived(&sink, &archive_dir)[..5], written[..], "{point}");
    }
}

/// Threads of two sinks (two replicas) append while archives run: every record lands once, in each appender's
/// order, and the segments and the table are one chain.
#[test]
fn appenders_lose_nothing_while_archives_run() {
    let Some((store, db)) = fresh_store(&Settings::default()) else { return };
    let shared = Arc::new(store.audit_sink(None));
    let other = PostgresAuditSink::open(db.url(), None).unwrap();
    shared.record(&event("worker", 0)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let archive_dir = dir.path().join("archive");
    let done = AtomicBool::new(false);
    let counts: Vec<(String, u64)> = std::thread::scope(|scope| {
        let appenders: Vec<_> = (0..4)
            .map(|t| {
                let (shared, other, done) = (Arc::clone(&shared), &other, &done);
                scope.spawn(move || {
                    let sink: &PostgresAuditSink = if t % 2 == 0 { &shared } else { other };
                    let mut n = 0;
                    while !done.load(Ordering::SeqCst) || n < 10 {
                        sink.record(&event(&format!("thread-{t}"), n)).unwrap();
                        n += 1;
                    }
                    (format!("thread-{t}"), n)
                })
            })
            .collect();
        for n in 0..5 {
            std::thread::sleep(Duration::from_millis(30));
            shared.archive(&archive_dir, None, at(n)).unwrap();
        }
        done.store(true, Ordering::SeqCst);
        appenders.into_iter().map(|a| a.join().unwrap()).collect()
    });
    let chain = check_archived(&shared, &archive_dir);
    let records: Vec<AuditRecord> = chain.iter().map(|l| record(l)).collect();
    assert_eq!(records.iter().filter(|r| r.door() == Some(Door::Archive)).count(), 5);
    for (actor, count) in counts {
        let ids: Vec<&str> = records.iter().filter(|r| r.actor() == actor).map(|r| r.id()).collect();
        let in_order: Vec<String> = (0..count).map(|n| format!("shared:note:{n}")).collect();
        assert_eq!(ids, in_order, "records of {actor}, each once and in order");
    }
}

/// A database of schema version 3 gains the columns; its records read and verify, and new ones fill them.
#[test]
fn a_version_3_database_migrates_and_keeps_its_log() {
    let Some(db) = testkit::pg::test_database() else { return };
    memory_postgres::init_old_schema(db.url(), 3).unwrap();
    let mut client = db.connect().unwrap();
    let sink = memory_audit::MemoryAuditSink::new();
    let mut old = event("worker", 1);
    old.door = None;
    old.shown = Vec::new();
    let first = sink.record(&old).unwrap();
    client
        .execute("INSERT INTO alp_audit (seq, line) VALUES (1, $1)", &[&first.to_line().trim_end()])
        .unwrap();
    assert_eq!(
        memory_postgres::migrate(db.url()).unwrap(),
        memory_postgres::Migrated { from: 3, to: memory_postgres::SCHEMA_VERSION }
    );
    let sink = PostgresAuditSink::open(db.url(), None).unwrap();
    assert_eq!(sink.record(&event("worker", 2)).unwrap().seq(), 2);
    assert!(sink.verify(None).unwrap().is_ok());
    let rows = client.query("SELECT door FROM alp_audit ORDER BY seq", &[]).unwrap();
    let doors: Vec<Option<String>> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(doors, [None, Some("get".to_owned())]);
    // What `show` prints of it verifies with the file verifier.
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("saved.jsonl");
    let mut out = Vec::new();
    sink.show(1, None, &mut out).unwrap();
    std::fs::write(&saved, out).unwrap();
    assert!(verify(&saved, None).unwrap().is_ok());
}
