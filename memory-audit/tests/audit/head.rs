//! What a chain cannot show on its own: records cut from its end. The runtime keeps the head (`head`) where the
//! log's writers cannot change it, and `verify_expecting` fails unless the kept record is still there, unchanged.

use std::time::{Duration, Instant};

use memory_audit::{
    AuditSink, BreakReason, ExpectedHead, GENESIS_HASH, JsonlAuditSink, VerifyReport, head, show, verify,
    verify_expecting,
};

use crate::allowed;

fn log_with(records: u64) -> (tempfile::TempDir, std::path::PathBuf, Vec<(u64, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let sink = JsonlAuditSink::open(&path).unwrap();
    let heads = (1..=records)
        .map(|n| {
            let record = sink.record(&allowed("worker", n)).unwrap();
            (record.seq(), record.hash().to_owned())
        })
        .collect();
    (dir, path, heads)
}

fn broken(report: VerifyReport) -> (u64, &'static str) {
    match report {
        VerifyReport::Broken { first_bad_seq, reason } => (first_bad_seq, reason.code()),
        ok => panic!("expected a broken chain, got {ok:?}"),
    }
}

#[test]
fn head_is_the_last_record() {
    let (_dir, path, heads) = log_with(5);
    assert_eq!(head(&path).unwrap(), heads[4]);
    let missing = path.with_file_name("none.jsonl");
    assert_eq!(head(&missing).unwrap(), (0, GENESIS_HASH.to_owned()));
}

#[test]
fn records_cut_from_the_end_are_truncated() {
    let (_dir, path, heads) = log_with(6);
    let kept = ExpectedHead::new(heads[5].0, heads[5].1.clone());
    assert!(verify_expecting(&path, None, Some(&kept)).unwrap().is_ok());
    // Half the lines cut: the chain alone still verifies.
    let text = std::fs::read_to_string(&path).unwrap();
    let half: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, half).unwrap();
    assert!(verify(&path, None).unwrap().is_ok(), "a cut chain is a valid chain");
    assert_eq!(broken(verify_expecting(&path, None, Some(&kept)).unwrap()), (6, "truncated"));
    // The log removed: still a valid (empty) chain, still truncated against the kept head.
    std::fs::remove_file(&path).unwrap();
    assert!(verify(&path, None).unwrap().is_ok());
    assert_eq!(broken(verify_expecting(&path, None, Some(&kept)).unwrap()), (6, "truncated"));
    // The empty log's head is always there.
    let genesis = ExpectedHead::parse(&format!("0:{GENESIS_HASH}")).unwrap();
    assert!(verify_expecting(&path, None, Some(&genesis)).unwrap().is_ok());
}

#[test]
fn a_rewritten_history_diverges() {
    let (_dir, path, heads) = log_with(3);
    // Started again with other records: the same length, another hash at the kept position.
    std::fs::remove_file(&path).unwrap();
    let sink = JsonlAuditSink::open(&path).unwrap();
    for n in 0..4 {
        sink.record(&allowed("mallory", n)).unwrap();
    }
    let kept = ExpectedHead::new(heads[2].0, heads[2].1.clone());
    let report = verify_expecting(&path, None, Some(&kept)).unwrap();
    let VerifyReport::Broken { first_bad_seq: 3, reason: BreakReason::Diverged { expected, .. } } = report
    else {
        panic!("{report:?}")
    };
    assert_eq!(expected, heads[2].1);
    let wrong_genesis = ExpectedHead::new(0, "1".repeat(64));
    assert_eq!(broken(verify_expecting(&path, None, Some(&wrong_genesis)).unwrap()), (0, "diverged"));
}

#[test]
fn expected_heads_parse_strictly() {
    let hash = "ab".repeat(32);
    assert_eq!(ExpectedHead::parse(&format!("12:{hash}")).unwrap().seq(), 12);
    for bad in [
        format!("012:{hash}"),
        format!("-1:{hash}"),
        format!(":{hash}"),
        format!("1:{}", hash.to_uppercase()),
        format!("1:{}", &hash[1..]),
        format!("1 :{hash}"),
        "1".to_owned(),
        format!("99999999999999999999:{hash}"),
    ] {
        assert!(ExpectedHead::parse(&bad).is_none(), "{bad}");
    }
}

#[test]
fn show_prints_records_as_stored() {
    let (_dir, path, _) = log_with(5);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    assert_eq!(show(&path, 2, Some(2), &mut out).unwrap(), 2);
    assert_eq!(String::from_utf8(out).unwrap(), format!("{}\n{}\n", lines[1], lines[2]));
    let mut out = Vec::new();
    assert_eq!(show(&path, 1, None, &mut out).unwrap(), 5);
    assert_eq!(String::from_utf8(out).unwrap(), text);
    // What `show` prints, saved to a file, verifies with the JSONL verifier.
    let saved = path.with_file_name("saved.jsonl");
    let mut out = Vec::new();
    show(&path, 1, None, &mut out).unwrap();
    std::fs::write(&saved, out).unwrap();
    assert!(verify(&saved, None).unwrap().is_ok());
    // A torn final line was never acknowledged: not shown.
    std::fs::write(&path, format!("{text}{{\"seq\":6")).unwrap();
    let mut out = Vec::new();
    assert_eq!(show(&path, 1, None, &mut out).unwrap(), 5);
}

#[test]
fn a_lock_held_forever_fails_the_append_after_the_timeout() {
    let (_dir, path, _) = log_with(1);
    let sink = JsonlAuditSink::open(&path).unwrap().with_lock_timeout(Duration::from_millis(200));
    let holder = std::fs::File::open(&path).unwrap();
    rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let started = Instant::now();
    let err = sink.record(&allowed("worker", 2)).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.to_string().contains("cannot lock audit log"), "{err}");
    assert!(sink.check_ready().is_err());
    drop(holder);
    sink.check_ready().unwrap();
    assert_eq!(sink.record(&allowed("worker", 2)).unwrap().seq(), 2);
}
