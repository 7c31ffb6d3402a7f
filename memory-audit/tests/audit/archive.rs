//! Archiving a JSONL log: the oldest records move into `audit-<first>-<last>.jsonl`, the live log keeps the rest
//! and one `archive` record, and the chain runs unbroken through both. A process killed at any point of an archive
//! loses no record and leaves a live log that verifies; appenders in threads and other processes lose nothing while
//! archives run.
//!
//! Child processes are this test binary itself, started with `CHILD_ENV` naming what to do; in a normal run the
//! `*_child` tests do nothing.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memory_audit::testkit::{PAUSE_AT, PAUSE_MARKER, PAUSE_POINTS};
use memory_audit::{
    ArchiveError, ArchiveReport, AuditRecord, AuditSink, Door, ExpectedHead, GENESIS_HASH, JsonlAuditSink,
    VerifyOptions, VerifyReport, archive, segments, verify, verify_bytes, verify_with,
};
use proptest::prelude::*;
use time::macros::datetime;

use crate::allowed;

const CHILD_ENV: &str = "MEMORY_AUDIT_TEST_ARCHIVE";
const DIR_ENV: &str = "MEMORY_AUDIT_TEST_ARCHIVE_DIR";
const BEFORE_ENV: &str = "MEMORY_AUDIT_TEST_ARCHIVE_BEFORE";

fn at() -> time::OffsetDateTime {
    datetime!(2026-12-01 03:00:00.5 UTC)
}

/// A log of `n` records at `dir/audit.jsonl`, and its lines.
fn log_of(dir: &Path, n: u64) -> (PathBuf, Vec<String>) {
    let path = dir.join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    let lines = (1..=n).map(|i| sink.record(&allowed("worker", i)).unwrap().to_line()).collect();
    (path, lines)
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| format!("{l}\n")).collect()
}

fn record(line: &str) -> AuditRecord {
    AuditRecord::from_line(line.trim_end().as_bytes()).unwrap()
}

fn anchor_of(line: &str) -> ExpectedHead {
    let record = record(line);
    ExpectedHead::new(record.seq(), record.hash())
}

/// Every segment of `archive` verifies alone and continues from the one before it; the live log continues from
/// the last; and the segments and the live log, read in order, are one chain from `seq` 1. Returns that chain.
fn check_archived(live: &Path, archive: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let mut anchor = ExpectedHead::new(0, GENESIS_HASH);
    for segment in segments(archive).unwrap() {
        let mode = std::fs::metadata(segment.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o400, "{}", segment.path().display());
        let options = VerifyOptions::new().continuing_from(Some(anchor.clone()));
        let report = verify_with(segment.path(), None, &options).unwrap();
        assert!(report.is_ok(), "{}: {report:?}", segment.path().display());
        let lines = read_lines(segment.path());
        assert_eq!(
            (record(&lines[0]).seq(), record(lines.last().unwrap()).seq()),
            (segment.first(), segment.last()),
            "the name says the range"
        );
        anchor = anchor_of(lines.last().unwrap());
        all.extend(lines);
    }
    let options = VerifyOptions::new().continuing_from(Some(anchor));
    let report = verify_with(live, None, &options).unwrap();
    assert!(report.is_ok(), "the live log: {report:?}");
    all.extend(read_lines(live));
    let whole = verify_bytes(all.concat().as_bytes(), None);
    assert!(matches!(whole, VerifyReport::Ok { from: (0, _), .. }), "one chain: {whole:?}");
    all
}

#[test]
fn all_but_the_last_record_are_archived_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let (log, lines) = log_of(dir.path(), 6);
    let archive_dir = dir.path().join("archive");
    let report = archive(&log, &archive_dir, None, None, at()).unwrap();
    let segment = archive_dir.join("audit-1-5.jsonl");
    let last = record(&lines[4]);
    assert_eq!(
        report,
        ArchiveReport { archived: 5, file: Some(segment.clone()), from: (5, last.hash().to_owned()) }
    );
    assert_eq!(read_lines(&segment), lines[..5]);
    let live = read_lines(&log);
    assert_eq!(live.len(), 2);
    assert_eq!(live[0], lines[5]);
    let archived = record(&live[1]);
    assert_eq!(
        (archived.seq(), archived.actor(), archived.operation().as_str(), archived.door(), archived.id()),
        (7, "", "archive", Some(Door::Archive), "audit-1-5.jsonl")
    );
    assert_eq!(archived.timestamp(), at());
    assert_eq!(archived.prev_hash(), record(&lines[5]).hash());
    let VerifyReport::Ok { records: 2, from, .. } = verify(&log, None).unwrap() else {
        panic!("the live log")
    };
    assert_eq!(from, report.from);
    let mut expected = lines.clone();
    expected.push(live[1].clone());
    assert_eq!(check_archived(&log, &archive_dir), expected);

    // Archiving again moves the sixth record, and the first archive record after it.
    let again = archive(&log, &archive_dir, None, None, at()).unwrap();
    assert_eq!((again.archived, again.file), (1, Some(archive_dir.join("audit-6-6.jsonl"))));
    assert_eq!(check_archived(&log, &archive_dir).len(), 8);
    // Appends go on after the archive record.
    assert_eq!(JsonlAuditSink::open(&log).unwrap().record(&allowed("worker", 9)).unwrap().seq(), 9);
    assert_eq!(check_archived(&log, &archive_dir).len(), 9);
}

#[test]
fn before_chooses_where_the_live_log_starts() {
    let dir = tempfile::tempdir().unwrap();
    let (log, lines) = log_of(dir.path(), 6);
    let archive_dir = dir.path().join("archive");
    let report = archive(&log, &archive_dir, Some(3), None, at()).unwrap();
    assert_eq!((report.archived, report.from.clone()), (2, (2, record(&lines[1]).hash().to_owned())));
    assert_eq!(record(&read_lines(&log)[0]).seq(), 3);
    // Nothing before the live log's start: nothing to archive, nothing written.
    let before = std::fs::read(&log).unwrap();
    let nothing = archive(&log, &archive_dir, Some(3), None, at()).unwrap();
    assert_eq!(nothing, ArchiveReport { archived: 0, file: None, from: report.from.clone() });
    assert_eq!(std::fs::read(&log).unwrap(), before);
    // One past the last record: everything, and the live log is the archive record alone.
    let all = archive(&log, &archive_dir, Some(8), None, at()).unwrap();
    assert_eq!((all.archived, all.file), (5, Some(archive_dir.join("audit-3-7.jsonl"))));
    let live = read_lines(&log);
    assert_eq!((live.len(), record(&live[0]).seq()), (1, 8));
    assert_eq!(check_archived(&log, &archive_dir).len(), 8);
    // Past that: an error, and nothing moves.
    let before = std::fs::read(&log).unwrap();
    let err = archive(&log, &archive_dir, Some(10), None, at()).unwrap_err();
    assert!(matches!(err, ArchiveError::PastTheEnd { before: 10, next: 9 }), "{err:?}");
    assert_eq!(std::fs::read(&log).unwrap(), before);
}

#[test]
fn nothing_to_archive_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let archive_dir = dir.path().join("archive");
    let missing = dir.path().join("audit.jsonl");
    let genesis = (0, GENESIS_HASH.to_owned());
    let none = ArchiveReport { archived: 0, file: None, from: genesis.clone() };
    assert_eq!(archive(&missing, &archive_dir, None, None, at()).unwrap(), none);
    assert!(!missing.exists(), "no log is created");
    let (log, _) = log_of(dir.path(), 1);
    assert_eq!(archive(&log, &archive_dir, None, None, at()).unwrap(), none, "a log of one record");
    assert_eq!(read_lines(&log).len(), 1);
    assert_eq!(std::fs::read_dir(&archive_dir).unwrap().count(), 0, "no file is left in the archive");
}

#[test]
fn a_broken_log_is_not_archived() {
    let dir = tempfile::tempdir().unwrap();
    let (log, lines) = log_of(dir.path(), 5);
    let mut edited = lines.clone();
    edited[2] = edited[2].replacen("worker", "mallory", 1);
    std::fs::write(&log, edited.concat()).unwrap();
    let archive_dir = dir.path().join("archive");
    let err = archive(&log, &archive_dir, None, None, at()).unwrap_err();
    assert!(matches!(&err, ArchiveError::Broken { first_bad_seq: 3, .. }), "{err:?}");
    assert!(err.to_string().contains("broken at record 3 (altered)"), "{err}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), edited.concat());
    assert!(segments(&archive_dir).unwrap().is_empty());
    // Broken after `before`: found when the rest is read, once the segment is written; the log stays as it was.
    let err = archive(&log, &archive_dir, Some(2), None, at()).unwrap_err();
    assert!(matches!(&err, ArchiveError::Broken { first_bad_seq: 3, .. }), "{err:?}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), edited.concat());
    assert!(!dir.path().join(".audit.jsonl.archiving").exists());
}

#[test]
fn a_segment_name_holding_other_records_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let (log, lines) = log_of(dir.path(), 4);
    let archive_dir = dir.path().join("archive");
    std::fs::create_dir(&archive_dir).unwrap();
    std::fs::write(archive_dir.join("audit-1-3.jsonl"), "someone else's\n").unwrap();
    let err = archive(&log, &archive_dir, None, None, at()).unwrap_err();
    assert!(matches!(err, ArchiveError::SegmentDiffers { .. }), "{err:?}");
    assert_eq!(read_lines(&log), lines);
    assert_eq!(std::fs::read_to_string(archive_dir.join("audit-1-3.jsonl")).unwrap(), "someone else's\n");
    // The same bytes there (an archive stopped after writing it): the archive goes on.
    std::fs::write(archive_dir.join("audit-1-3.jsonl"), lines[..3].concat()).unwrap();
    std::fs::set_permissions(archive_dir.join("audit-1-3.jsonl"), std::fs::Permissions::from_mode(0o400))
        .unwrap();
    assert_eq!(archive(&log, &archive_dir, None, None, at()).unwrap().archived, 3);
    check_archived(&log, &archive_dir);
}

#[test]
fn a_keyed_log_is_archived_under_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = memory_audit::AuditKey::from_bytes(crate::GOLDEN_KEY).unwrap();
    let log = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::with_key(&log, key.clone()).unwrap();
    for n in 1..=4 {
        sink.record(&allowed("worker", n)).unwrap();
    }
    let archive_dir = dir.path().join("archive");
    let err = archive(&log, &archive_dir, None, None, at()).unwrap_err();
    assert!(matches!(err, ArchiveError::Broken { first_bad_seq: 1, .. }), "without the key: {err:?}");
    archive(&log, &archive_dir, None, Some(&key), at()).unwrap();
    assert!(verify(&log, Some(&key)).unwrap().is_ok());
    assert!(verify(archive_dir.join("audit-1-3.jsonl"), Some(&key)).unwrap().is_ok());
}

/// Not a test of its own: archives the log `CHILD_ENV` names into `DIR_ENV` (before `BEFORE_ENV`, if set), stopping
/// at the point `PAUSE_AT` names.
#[test]
fn archive_child() {
    let (Some(log), Some(dir)) = (std::env::var_os(CHILD_ENV), std::env::var_os(DIR_ENV)) else { return };
    let before = std::env::var(BEFORE_ENV).ok().map(|b| b.parse().unwrap());
    archive(Path::new(&log), Path::new(&dir), before, None, at()).unwrap();
}

/// Starts an archive in a child process that stops at `point`, waits until it is there, and kills it (`SIGKILL`).
fn archive_killed_at(log: &Path, dir: &Path, before: Option<u64>, point: &str) {
    let marker = log.with_file_name(format!("reached-{point}"));
    let _ = std::fs::remove_file(&marker);
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "archive::archive_child", "--test-threads=1"])
        .env(CHILD_ENV, log)
        .env(DIR_ENV, dir)
        .env(PAUSE_AT, point)
        .env(PAUSE_MARKER, &marker)
        .stdout(Stdio::null());
    if let Some(before) = before {
        command.env(BEFORE_ENV, before.to_string());
    }
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while !marker.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the archive ended before {point}");
        assert!(started.elapsed() < Duration::from_secs(60), "the archive never reached {point}");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A kill -9 at each point of an archive: no record is lost, the live log verifies, and archiving again finishes
/// the job, leaving the archive and the live log one chain.
#[test]
fn an_archive_killed_at_any_point_loses_nothing_and_can_be_run_again() {
    for before in [None, Some(4)] {
        for point in PAUSE_POINTS {
            let dir = tempfile::tempdir().unwrap();
            let (log, lines) = log_of(dir.path(), 8);
            let archive_dir = dir.path().join("archive");
            archive_killed_at(&log, &archive_dir, before, point);

            // The live log verifies, and every record is in it or in a segment.
            let live = read_lines(&log);
            let report = verify(&log, None).unwrap();
            assert!(report.is_ok(), "{point}: {report:?}");
            let mut found: Vec<String> = live.clone();
            for segment in segments(&archive_dir).unwrap() {
                found.extend(read_lines(segment.path()));
            }
            for line in &lines {
                assert!(found.contains(line), "{point}: record {} lost", record(line).seq());
            }
            // Replaced or not, it continues from a record of the chain.
            let VerifyReport::Ok { from, .. } = report else { unreachable!() };
            assert!(
                from.0 == 0 || lines.iter().any(|l| record(l).hash() == from.1),
                "{point}: from {from:?}"
            );

            // Run again: it finishes.
            let report = archive(&log, &archive_dir, before, None, at()).unwrap();
            let chain = check_archived(&log, &archive_dir);
            assert_eq!(chain[..8], lines[..], "{point}: the original records, in order, once");
            let archives = chain[8..].iter().filter(|l| record(l).door() == Some(Door::Archive)).count();
            assert_eq!(archives, chain.len() - 8, "{point}: after them, archive records only");
            assert!(
                report.archived > 0 || point == "live-renamed" && before.is_some(),
                "{point}: {report:?}"
            );
        }
    }
}

const APPEND_ENV: &str = "MEMORY_AUDIT_TEST_ARCHIVE_APPEND_TO";
const STOP_ENV: &str = "MEMORY_AUDIT_TEST_ARCHIVE_STOP_AT";
const ARCHIVES: usize = 6;

/// Not a test of its own: appends to the log `APPEND_ENV` names until the file `STOP_ENV` names exists, then writes
/// how many it appended beside it.
#[test]
fn append_child() {
    let (Some(log), Some(stop)) = (std::env::var_os(APPEND_ENV), std::env::var_os(STOP_ENV)) else { return };
    let sink = JsonlAuditSink::open(Path::new(&log)).unwrap();
    let actor = format!("child-{}", std::process::id());
    let mut n = 0;
    while !Path::new(&stop).exists() {
        sink.record(&allowed(&actor, n)).unwrap();
        n += 1;
    }
    std::fs::write(Path::new(&stop).with_file_name(actor), n.to_string()).unwrap();
}

/// Threads (through one shared sink and through their own) and other processes append while archives run one
/// after the other: every record lands once, in each appender's order, and the segments and the live log are one
/// chain.
#[test]
fn appenders_lose_nothing_while_archives_run() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = log_of(dir.path(), 3);
    let archive_dir = dir.path().join("archive");
    let stop = dir.path().join("stop");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args(["--exact", "archive::append_child", "--test-threads=1"])
                .env(APPEND_ENV, &log)
                .env(STOP_ENV, &stop)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let shared = Arc::new(JsonlAuditSink::open(&log).unwrap());
    let done = AtomicBool::new(false);
    let mut appended: std::collections::BTreeMap<String, u64> = std::thread::scope(|scope| {
        let appenders: Vec<_> = (0..4)
            .map(|t| {
                let (shared, log, done) = (Arc::clone(&shared), &log, &done);
                scope.spawn(move || {
                    let own = JsonlAuditSink::open(log).unwrap();
                    let sink: &JsonlAuditSink = if t % 2 == 0 { &shared } else { &own };
                    let mut n = 0;
                    while !done.load(Ordering::SeqCst) || n < 10 {
                        sink.record(&allowed(&format!("thread-{t}"), n)).unwrap();
                        n += 1;
                    }
                    (format!("thread-{t}"), n)
                })
            })
            .collect();
        for _ in 0..ARCHIVES {
            std::thread::sleep(Duration::from_millis(20));
            archive(&log, &archive_dir, None, None, at()).unwrap();
        }
        done.store(true, Ordering::SeqCst);
        appenders.into_iter().map(|a| a.join().unwrap()).collect()
    });
    std::fs::write(&stop, "").unwrap();
    for mut child in children {
        let pid = child.id();
        assert!(child.wait().unwrap().success(), "a child appender failed");
        let count = std::fs::read_to_string(dir.path().join(format!("child-{pid}"))).unwrap();
        appended.insert(format!("child-{pid}"), count.parse().unwrap());
    }
    let chain = check_archived(&log, &archive_dir);
    assert!(segments(&archive_dir).unwrap().len() >= ARCHIVES - 1, "the archives moved records");
    let records: Vec<AuditRecord> = chain.iter().map(|l| record(l)).collect();
    let mut by_actor: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
    for record in &records {
        by_actor.entry(record.actor()).or_default().push(record.id());
    }
    let archives = &by_actor[""];
    assert_eq!(archives.len(), ARCHIVES, "one archive record per archive");
    assert!(records.iter().filter(|r| r.actor().is_empty()).all(|r| r.door() == Some(Door::Archive)));
    assert_eq!(by_actor["worker"].len(), 3);
    for (actor, count) in &appended {
        let in_order: Vec<String> = (0..*count).map(|n| format!("shared:note:{n}")).collect();
        assert_eq!(by_actor[actor.as_str()], in_order, "records of {actor}, each once and in order");
    }
    assert_eq!(by_actor.len(), 2 + appended.len(), "no one else wrote");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Archiving at any `before` leaves a segment and a live log that verify, the live log from the segment's last
    /// record; and the segment, then the live log, are the records before and the archive record.
    #[test]
    fn archive_anywhere_and_the_chain_holds(n in 1u64..12, before in 0u64..16) {
        let dir = tempfile::tempdir().unwrap();
        let (log, lines) = log_of(dir.path(), n);
        let archive_dir = dir.path().join("archive");
        let result = archive(&log, &archive_dir, Some(before), None, at());
        if before > n + 1 {
            prop_assert!(matches!(result, Err(ArchiveError::PastTheEnd { .. })), "{:?}", result);
            prop_assert_eq!(read_lines(&log), lines);
            return Ok(());
        }
        let report = result.unwrap();
        let moved = before.saturating_sub(1);
        prop_assert_eq!(report.archived, moved);
        if moved == 0 {
            prop_assert_eq!(read_lines(&log), lines);
            return Ok(());
        }
        let from = ExpectedHead::new(report.from.0, report.from.1.clone());
        let options = VerifyOptions::new().continuing_from(Some(from));
        prop_assert!(verify_with(&log, None, &options).unwrap().is_ok());
        let segment = report.file.unwrap();
        prop_assert!(verify(&segment, None).unwrap().is_ok());
        let live = read_lines(&log);
        let archived = record(live.last().unwrap());
        let name = segment.file_name().unwrap().to_str().unwrap();
        prop_assert_eq!((archived.door(), archived.id(), archived.seq()), (Some(Door::Archive), name, n + 1));
        prop_assert_eq!(name, format!("audit-1-{moved}.jsonl"));
        let mut expected = lines.clone();
        expected.push(live.last().unwrap().clone());
        let mut chain = read_lines(&segment);
        chain.extend(live);
        prop_assert_eq!(chain, expected);
    }
}
