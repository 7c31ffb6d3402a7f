//! The audit sink suite: the properties every [`AuditSink`] must keep, written once and run against every sink
//! (feature `testkit`): one record per call, the exact bytes of the format, an unbroken chain, concurrent appends
//! without gaps or forks, and failing closed.
//!
//! Give [`audit_sink_suite!`](crate::audit_sink_suite) a module name and a constructor returning an
//! [`AuditSubject`]: the sink, a way to read its whole log back as JSONL bytes, and anything that must outlive it.
//!
//! Also the switch the tests of crash safety stop an archive with ([`PAUSE_AT`]): with this feature, an archive
//! waits for ever at the point that variable names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test suite fails loudly")]

use std::any::Any;
use std::sync::Arc;

use time::macros::datetime;

use crate::{
    AuditEvent, AuditOperation, AuditRecord, AuditSink, Door, GENESIS_HASH, MemoryAuditSink, Outcome,
    VerifyReport, verify_bytes,
};

/// A sink under test, how to read its log back, and whatever must outlive it.
pub struct AuditSubject {
    /// The sink (shared by the threads of the concurrency check).
    pub sink: Arc<dyn AuditSink>,
    read: Box<dyn Fn() -> Vec<u8>>,
    _keep: Box<dyn Any>,
}

impl AuditSubject {
    /// `sink`, whose whole log `read` returns as JSONL bytes (one record per line, each ending in `\n`).
    pub fn new(
        sink: impl AuditSink + 'static,
        read: impl Fn() -> Vec<u8> + 'static,
        keep: impl Any,
    ) -> AuditSubject {
        AuditSubject { sink: Arc::new(sink), read: Box::new(read), _keep: Box::new(keep) }
    }

    /// The log as stored.
    pub fn log(&self) -> Vec<u8> {
        (self.read)()
    }
}

impl std::fmt::Debug for AuditSubject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditSubject").finish_non_exhaustive()
    }
}

/// Builds a fresh, empty sink.
pub type MakeSink = dyn Fn() -> AuditSubject;

/// One `#[test]` per property, in a module named `$name`, for the sink built by `$make` (`fn() -> AuditSubject`).
#[macro_export]
macro_rules! audit_sink_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports, reason = "the constructor may need the caller's imports")]
            use super::*;
            $crate::audit_sink_suite!(@checks $make;
                one_record_per_call_numbered_from_1,
                the_bytes_are_the_formats_and_equal_the_memory_sinks,
                the_chain_verifies_and_ends_at_the_last_hash,
                concurrent_appends_leave_no_gap_and_no_fork,
                an_event_that_cannot_be_recorded_writes_nothing,
                a_ready_sink_says_so_without_recording,
            );
        }
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::testkit::$check(&$make);
            }
        )+
    };
}

/// The `n`th event of a fixed sequence: every operation and outcome, non-ASCII and control characters in IDs,
/// records with and without a door, and receipts (`shown`) on allowed reads.
fn event(n: u64) -> AuditEvent {
    let operation = AuditOperation::ALL[(n % 5) as usize];
    let (outcome, code) = match n % 3 {
        0 => (Outcome::Allowed, None),
        1 => (Outcome::Denied, Some("PRIVATE_MEMORY_DENIED".to_owned())),
        _ => (Outcome::Error, Some("INVALID_MEMORY_ID".to_owned())),
    };
    let id = format!("project:alp:nhật-ký:{n}\u{1}\"\\");
    let door = (n % 4 != 3)
        .then(|| if operation == AuditOperation::Search { Door::Context } else { operation.into() });
    let shown = match (door, outcome) {
        (Some(_), Outcome::Allowed) => vec![format!("{id}@{}", n + 1), format!("shared:team@{}", n % 7 + 1)],
        _ => Vec::new(),
    };
    AuditEvent {
        timestamp: datetime!(2026-11-29 22:33:13.123 UTC) + time::Duration::milliseconds(n as i64),
        actor: if n.is_multiple_of(2) { "worker".to_owned() } else { "réviseur".to_owned() },
        operation,
        door,
        id,
        outcome,
        code,
        grant: None,
        shown,
        via: None,
    }
}

fn lines(log: &[u8]) -> Vec<&[u8]> {
    assert!(log.is_empty() || log.ends_with(b"\n"), "every line ends in \\n");
    log.split_inclusive(|&b| b == b'\n').map(|line| line.strip_suffix(b"\n").unwrap_or(line)).collect()
}

/// Each call writes exactly one record, numbered from 1, and returns it.
pub fn one_record_per_call_numbered_from_1(make: &MakeSink) {
    let s = make();
    assert!(s.log().is_empty(), "a fresh sink holds no record");
    for n in 1..=20 {
        let record = s.sink.record(&event(n)).unwrap();
        assert_eq!(record.seq(), n);
        assert_eq!(lines(&s.log()).len() as u64, n, "one record per call");
    }
}

/// What is stored is [`AuditRecord::to_line`], byte for byte, and the same bytes the in-memory sink builds for the
/// same events (so a log from any sink verifies with any verifier).
pub fn the_bytes_are_the_formats_and_equal_the_memory_sinks(make: &MakeSink) {
    let s = make();
    let reference = MemoryAuditSink::new();
    let mut returned = Vec::new();
    for n in 1..=12 {
        returned.push(s.sink.record(&event(n)).unwrap());
        reference.record(&event(n)).unwrap();
    }
    let log = s.log();
    let expected: String = returned.iter().map(AuditRecord::to_line).collect();
    assert_eq!(String::from_utf8(log.clone()).unwrap(), expected, "stored as returned");
    assert_eq!(String::from_utf8(log).unwrap(), reference.to_jsonl(), "the same bytes as the in-memory sink");
    for (line, record) in lines(&s.log()).into_iter().zip(&returned) {
        assert_eq!(&AuditRecord::from_line(line).unwrap(), record);
    }
}

/// The stored log verifies, and its last hash is the last record's.
pub fn the_chain_verifies_and_ends_at_the_last_hash(make: &MakeSink) {
    let s = make();
    assert_eq!(
        verify_bytes(&s.log(), None),
        VerifyReport::Ok {
            records: 0,
            last_hash: GENESIS_HASH.to_owned(),
            from: (0, GENESIS_HASH.to_owned())
        }
    );
    let mut last = None;
    for n in 1..=30 {
        last = Some(s.sink.record(&event(n)).unwrap());
    }
    let last = last.unwrap();
    assert_eq!(
        verify_bytes(&s.log(), None),
        VerifyReport::Ok {
            records: 30,
            last_hash: last.hash().to_owned(),
            from: (0, GENESIS_HASH.to_owned())
        }
    );
    let first = AuditRecord::from_line(lines(&s.log())[0]).unwrap();
    assert_eq!(first.prev_hash(), GENESIS_HASH);
}

/// Appends from 8 threads at once: every record lands once, numbered without gaps, in one chain.
pub fn concurrent_appends_leave_no_gap_and_no_fork(make: &MakeSink) {
    let s = make();
    std::thread::scope(|scope| {
        for thread in 0..8u64 {
            let sink = Arc::clone(&s.sink);
            scope.spawn(move || {
                for n in 0..25 {
                    sink.record(&event(thread * 100 + n)).unwrap();
                }
            });
        }
    });
    let log = s.log();
    let VerifyReport::Ok { records, .. } = verify_bytes(&log, None) else {
        panic!("the chain broke under concurrent appends: {:?}", verify_bytes(&log, None))
    };
    assert_eq!(records, 200);
    let mut ids: Vec<String> =
        lines(&log).into_iter().map(|line| AuditRecord::from_line(line).unwrap().id().to_owned()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 200, "no record lost or written twice");
}

/// An event that cannot be a record (an `allowed` outcome with a code) is refused, and nothing is appended: the
/// service then fails closed.
pub fn an_event_that_cannot_be_recorded_writes_nothing(make: &MakeSink) {
    let s = make();
    s.sink.record(&event(3)).unwrap();
    let before = s.log();
    let mut bad = event(3);
    bad.code = Some("MEMORY_NOT_GRANTED".to_owned());
    assert!(s.sink.record(&bad).is_err());
    assert_eq!(s.log(), before, "nothing appended");
    assert_eq!(s.sink.record(&event(6)).unwrap().seq(), 2, "the chain goes on");
}

/// A working sink is ready, and checking it records nothing.
pub fn a_ready_sink_says_so_without_recording(make: &MakeSink) {
    let s = make();
    s.sink.check_ready().unwrap();
    assert!(s.log().is_empty());
    s.sink.record(&event(9)).unwrap();
    s.sink.check_ready().unwrap();
    assert_eq!(lines(&s.log()).len(), 1);
}

/// The variable naming the point of an archive where a test stops the process ([`PAUSE_AT`]).
pub const PAUSE_AT: &str = "MEMORY_AUDIT_PAUSE_AT";

/// The variable naming the file an archive creates when it reaches the point of [`PAUSE_AT`], before it waits there
/// for ever (for the test to `kill -9` it).
pub const PAUSE_MARKER: &str = "MEMORY_AUDIT_PAUSE_MARKER";

/// The points of an archive where a test may stop it, in order: the segment written and synced under its temporary
/// name; linked to its name; durable (its directory synced); the new live log written and synced under its temporary
/// name; renamed over the log (its directory not yet synced).
pub const PAUSE_POINTS: [&str; 5] =
    ["segment-written", "segment-linked", "segment-durable", "live-written", "live-renamed"];

/// At `point` of an archive: when [`PAUSE_AT`] names it, creates the file [`PAUSE_MARKER`] names and waits there for
/// ever (the test kills the process); otherwise nothing.
pub(crate) fn pause_point(point: &str) {
    if std::env::var(PAUSE_AT).is_ok_and(|at| at == point) {
        if let Some(marker) = std::env::var_os(PAUSE_MARKER) {
            std::fs::write(marker, point).unwrap();
        }
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}
