//! Walking a chain from the first line to the last.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use crate::jsonl::lock;
use crate::record::{ChainHead, GENESIS_HASH, LineProblem, parse_line};
use crate::{AuditError, AuditKey};

/// The result of walking a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyReport {
    /// Every line is a record in canonical form, numbered from 1, linked to its predecessor, and its hash
    /// recomputes.
    Ok {
        /// How many records the log holds (0 for an empty or missing log).
        records: u64,
        /// The last record's hash ([`GENESIS_HASH`] for an empty log). Keeping it elsewhere is what detects records
        /// later removed from the end, which the chain alone cannot.
        last_hash: String,
    },
    /// The chain breaks.
    Broken {
        /// The 1-based line number where the chain first breaks; every line before it verified.
        first_bad_seq: u64,
        /// Why that line breaks the chain.
        reason: BreakReason,
    },
}

impl VerifyReport {
    /// Whether the chain verified.
    pub fn is_ok(&self) -> bool {
        matches!(self, VerifyReport::Ok { .. })
    }
}

/// Why a line breaks the chain. Checked in this order for each line: torn, malformed, canonical form, `seq`,
/// `prevHash`, `hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakReason {
    /// The final line has no `\n`: a writer crashed mid-write. The next appender removes it.
    TornFinalLine,
    /// The line is not a record: not JSON, a missing or unknown field, a value of the wrong shape.
    Malformed {
        /// What is wrong.
        detail: String,
    },
    /// The line is a record but not byte for byte as the canonical encoding writes it (spacing, field order,
    /// escapes).
    NonCanonical,
    /// The record's `seq` is not its line number: a record was removed, inserted or moved.
    BadSeq {
        /// The line number.
        expected: u64,
        /// The record's `seq`.
        found: u64,
    },
    /// The record's `prevHash` is not the previous record's `hash`.
    BrokenLink {
        /// The previous record's `hash` ([`GENESIS_HASH`] on line 1).
        expected: String,
        /// The record's `prevHash`.
        found: String,
    },
    /// The record's `hash` does not recompute from its content: it was edited, or it is verified with the wrong key
    /// (or without the key it was written with, or with one when it was written without).
    Altered,
}

impl BreakReason {
    /// The stable machine-readable reason: `torn_final_line`, `malformed`, `non_canonical`, `bad_seq`,
    /// `broken_link` or `altered`.
    pub fn code(&self) -> &'static str {
        match self {
            BreakReason::TornFinalLine => "torn_final_line",
            BreakReason::Malformed { .. } => "malformed",
            BreakReason::NonCanonical => "non_canonical",
            BreakReason::BadSeq { .. } => "bad_seq",
            BreakReason::BrokenLink { .. } => "broken_link",
            BreakReason::Altered => "altered",
        }
    }
}

impl fmt::Display for BreakReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakReason::TornFinalLine => f.write_str(
                "the final line is incomplete (a writer stopped mid-write); the next append removes it",
            ),
            BreakReason::Malformed { detail } => write!(f, "the line is not an audit record: {detail}"),
            BreakReason::NonCanonical => f.write_str("the record is not written in canonical form"),
            BreakReason::BadSeq { expected, found } => {
                write!(
                    f,
                    "the record has seq {found} where {expected} was expected (removed or reordered records)"
                )
            }
            BreakReason::BrokenLink { expected, found } => write!(
                f,
                "the record's prevHash `{found}` is not the previous record's hash `{expected}` (removed or \
                 reordered records)"
            ),
            BreakReason::Altered => f.write_str(
                "the record's hash does not match its content (the record was altered, or the key is wrong)",
            ),
        }
    }
}

/// Verifies the log at `path`, with the key it was written with (or `None` for a SHA-256 chain).
///
/// A missing log is an empty one. The log is read under a shared `flock`, so appends wait until the walk ends and a
/// half-written append is never mistaken for a torn line. The final path component must not be a symbolic link.
///
/// # Errors
///
/// [`AuditError::Io`] when the log exists but cannot be opened, locked or read.
pub fn verify(path: impl AsRef<Path>, key: Option<&AuditKey>) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let file =
        match rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::NOENT) => {
                return Ok(VerifyReport::Ok { records: 0, last_hash: GENESIS_HASH.to_owned() });
            }
            Err(e) => return Err(fail("open")(e.into())),
        };
    if !file.metadata().map_err(fail("open"))?.is_file() {
        return Err(fail("open")(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")));
    }
    lock(&file, FlockOperation::LockShared).map_err(fail("lock"))?;
    verify_reader(file, key).map_err(fail("read"))
}

/// Verifies a log read from `reader`, one line at a time.
///
/// # Errors
///
/// Only the reader's own errors.
pub fn verify_reader(reader: impl Read, key: Option<&AuditKey>) -> io::Result<VerifyReport> {
    let mut reader = BufReader::new(reader);
    let mut walk = Walk { head: ChainHead::genesis(), key };
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(walk.finish());
        }
        if let Err(report) = walk.step(&line) {
            return Ok(report);
        }
    }
}

/// Verifies a whole log held in memory.
///
/// ```
/// use memory_audit::{verify_bytes, VerifyReport, GENESIS_HASH};
///
/// let report = verify_bytes(b"", None);
/// assert_eq!(report, VerifyReport::Ok { records: 0, last_hash: GENESIS_HASH.to_owned() });
/// ```
pub fn verify_bytes(bytes: &[u8], key: Option<&AuditKey>) -> VerifyReport {
    let mut walk = Walk { head: ChainHead::genesis(), key };
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if let Err(report) = walk.step(line) {
            return report;
        }
    }
    walk.finish()
}

struct Walk<'k> {
    head: ChainHead,
    key: Option<&'k AuditKey>,
}

impl Walk<'_> {
    /// Checks one line (with its `\n`, if it has one) against the chain so far, and moves the head past it.
    fn step(&mut self, line: &[u8]) -> Result<(), VerifyReport> {
        // A chain of more than u64::MAX lines cannot be written (`seq` would overflow), so saturating is exact.
        let position = self.head.seq.saturating_add(1);
        let broken = |reason| VerifyReport::Broken { first_bad_seq: position, reason };
        let Some(line) = line.strip_suffix(b"\n") else {
            return Err(broken(BreakReason::TornFinalLine));
        };
        let record = parse_line(line).map_err(|problem| {
            broken(match problem {
                LineProblem::Malformed(detail) => BreakReason::Malformed { detail },
                LineProblem::NonCanonical => BreakReason::NonCanonical,
            })
        })?;
        if record.seq() != position {
            return Err(broken(BreakReason::BadSeq { expected: position, found: record.seq() }));
        }
        if record.prev_hash() != self.head.hash {
            return Err(broken(BreakReason::BrokenLink {
                expected: self.head.hash.clone(),
                found: record.prev_hash().to_owned(),
            }));
        }
        if record.expected_hash(self.key) != record.hash() {
            return Err(broken(BreakReason::Altered));
        }
        self.head = ChainHead::of(&record);
        Ok(())
    }

    fn finish(self) -> VerifyReport {
        VerifyReport::Ok { records: self.head.seq, last_hash: self.head.hash }
    }
}
