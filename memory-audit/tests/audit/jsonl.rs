//! The file sink and file verifier: creation, refusals, and a log whose end cannot be continued.

use std::os::unix::fs::PermissionsExt;

use memory_audit::{
    AuditError, AuditSink, BreakReason, GENESIS_HASH, JsonlAuditSink, MemoryAuditSink, Outcome, VerifyReport,
    verify, verify_reader,
};

use crate::{GOLDEN, allowed};

#[test]
fn open_creates_the_log_with_mode_0600() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    assert_eq!(sink.path(), path);
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 0);
}

#[test]
fn a_missing_or_empty_log_is_ok_and_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let empty = VerifyReport::Ok { records: 0, last_hash: GENESIS_HASH.to_owned(), from: crate::genesis() };
    assert_eq!(verify(&path, None).unwrap(), empty);
    assert!(!path.exists(), "verify must not create the log");
    std::fs::write(&path, b"").unwrap();
    assert_eq!(verify(&path, None).unwrap(), empty);
}

#[test]
fn a_log_in_a_missing_directory_cannot_be_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("audit.jsonl");
    let err = JsonlAuditSink::open(&path).unwrap_err();
    assert!(matches!(&err, AuditError::Io { path: p, op: "create", .. } if *p == path), "{err:?}");
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
}

#[test]
fn symlinks_and_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, GOLDEN).unwrap();
    let link = dir.path().join("audit.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(matches!(JsonlAuditSink::open(&link), Err(AuditError::Io { op: "open", .. })));
    assert!(matches!(verify(&link, None), Err(AuditError::Io { op: "open", .. })));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), GOLDEN);

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    assert!(matches!(JsonlAuditSink::open(&sub), Err(AuditError::Io { op: "open", .. })));
    assert!(matches!(verify(&sub, None), Err(AuditError::Io { op: "open", .. })));
}

/// Appending continues an existing log, even one written by another sink or another program.
#[test]
fn appending_continues_an_existing_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, GOLDEN).unwrap();
    let record = JsonlAuditSink::open(&path).unwrap().record(&allowed("a", 6)).unwrap();
    assert_eq!(record.seq(), 6);
    assert_eq!(record.prev_hash(), "b9d65973bcd5ec5bf0ec972a3214e3f4ab6fc55530c03a1f58405e318442665b");
    assert_eq!(
        verify(&path, None).unwrap(),
        VerifyReport::Ok { records: 6, last_hash: record.hash().to_owned(), from: crate::genesis() }
    );
}

/// The appender reads only the tail: a broken first line does not stop it (verify reports it), a broken last line
/// does, and the file is left as it was.
#[test]
fn only_the_last_record_is_read_when_appending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut log = String::from("garbage\n");
    log.push_str(GOLDEN.lines().nth(4).unwrap());
    log.push('\n');
    std::fs::write(&path, &log).unwrap();
    let record = JsonlAuditSink::open(&path).unwrap().record(&allowed("a", 6)).unwrap();
    assert_eq!(record.seq(), 6);
    assert!(matches!(
        verify(&path, None).unwrap(),
        VerifyReport::Broken { first_bad_seq: 1, reason: BreakReason::Malformed { .. } }
    ));
}

#[test]
fn a_malformed_last_record_stops_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let first = GOLDEN.lines().next().unwrap();
    let spaced = first.replacen("\"seq\":1", "\"seq\": 1", 1);
    for tail in ["not json", "", &spaced, &first.replacen("worker", "x\u{0}", 1)] {
        let content = format!("{first}\n{tail}\n");
        std::fs::write(&path, &content).unwrap();
        let err = JsonlAuditSink::open(&path).unwrap().record(&allowed("a", 1)).unwrap_err();
        let offset = first.len() as u64 + 1;
        assert!(
            matches!(&err, AuditError::MalformedTail { path: p, offset: o, .. } if *p == path && *o == offset),
            "{tail:?}: {err:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content, "the log must be left untouched");
    }
}

#[test]
fn an_invalid_event_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    let mut event = allowed("a", 1);
    event.code = Some("MEMORY_NOT_GRANTED".to_owned());
    assert!(matches!(sink.record(&event), Err(AuditError::InvalidEvent { .. })));
    event.outcome = Outcome::Denied;
    event.code = None;
    assert!(matches!(sink.record(&event), Err(AuditError::InvalidEvent { .. })));
    assert_eq!(std::fs::read(&path).unwrap(), b"");
    assert!(matches!(MemoryAuditSink::new().record(&event), Err(AuditError::InvalidEvent { .. })));
}

#[test]
fn verify_reader_agrees_with_verify_bytes_and_passes_on_read_errors() {
    let report = verify_reader(GOLDEN.as_bytes(), None).unwrap();
    assert_eq!(report, memory_audit::verify_bytes(GOLDEN.as_bytes(), None));

    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    assert_eq!(verify_reader(Failing, None).unwrap_err().to_string(), "disk on fire");
}

#[test]
fn verify_reports_the_first_break_only() {
    let mut lines: Vec<String> = GOLDEN.lines().map(|l| format!("{l}\n")).collect();
    lines[1] = "{}\n".to_owned();
    lines[3] = lines[3].replace("møller", "moller");
    let report = memory_audit::verify_bytes(lines.concat().as_bytes(), None);
    assert!(matches!(
        report,
        VerifyReport::Broken { first_bad_seq: 2, reason: BreakReason::Malformed { .. } }
    ));

    // Unknown fields, CRLF line ends and blank lines are not records.
    let first = GOLDEN.lines().next().unwrap();
    for (bad, code) in [
        (first.replacen('}', ",\"extra\":1}", 1), "malformed"),
        (format!("{first}\r"), "non_canonical"),
        (String::new(), "malformed"),
    ] {
        match memory_audit::verify_bytes(format!("{bad}\n").as_bytes(), None) {
            VerifyReport::Broken { first_bad_seq: 1, reason } => assert_eq!(reason.code(), code, "{bad:?}"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
}
