//! Walking a chain from the first line to the last.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use rustix::io::Errno;

use crate::jsonl::lock_within;
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
    /// The log ends before the record the caller kept the head of ([`ExpectedHead`]): records were cut from its
    /// end, or the log was removed and started again.
    Truncated {
        /// How many records the log holds.
        records: u64,
    },
    /// The record at the kept head's position has another hash than the one kept: history was rewritten.
    Diverged {
        /// The hash kept.
        expected: String,
        /// The hash found.
        found: String,
    },
}

impl BreakReason {
    /// The stable machine-readable reason: `torn_final_line`, `malformed`, `non_canonical`, `bad_seq`,
    /// `broken_link`, `altered`, `truncated` or `diverged`.
    pub fn code(&self) -> &'static str {
        match self {
            BreakReason::Truncated { .. } => "truncated",
            BreakReason::Diverged { .. } => "diverged",
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
            BreakReason::Truncated { records } => write!(
                f,
                "the log holds {records} records and ends before the record that was kept (records were cut from \
                 its end, or it was started again)"
            ),
            BreakReason::Diverged { expected, found } => write!(
                f,
                "the record has hash `{found}` where `{expected}` was kept (the history was rewritten)"
            ),
        }
    }
}

/// A head of the chain kept where the log's writers cannot change it (`alp audit head` prints one): `seq` 0 with
/// [`GENESIS_HASH`] names the empty log. Verifying against it also detects records cut from the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedHead {
    seq: u64,
    hash: String,
}

impl ExpectedHead {
    /// A kept head: the record at `seq` has `hash` (64 lowercase hex digits).
    pub fn new(seq: u64, hash: impl Into<String>) -> ExpectedHead {
        ExpectedHead { seq, hash: hash.into() }
    }

    /// Parses `SEQ:HASH` as `alp audit head` prints it (`3:9f86…`); `None` when it is not a decimal `seq`, a `:` and
    /// 64 lowercase hex digits.
    ///
    /// ```
    /// use memory_audit::ExpectedHead;
    /// assert!(ExpectedHead::parse(&format!("0:{}", "0".repeat(64))).is_some());
    /// assert!(ExpectedHead::parse("3:abc").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<ExpectedHead> {
        let (seq, hash) = text.split_once(':')?;
        let seq_ok = !seq.is_empty()
            && seq.bytes().all(|b| b.is_ascii_digit())
            && (seq == "0" || !seq.starts_with('0'));
        let hash_ok = hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !(seq_ok && hash_ok) {
            return None;
        }
        Some(ExpectedHead { seq: seq.parse().ok()?, hash: hash.to_owned() })
    }

    /// The position of the kept record.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Its hash.
    pub fn hash(&self) -> &str {
        &self.hash
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
    verify_expecting(path, key, None)
}

/// [`verify`], and also checks that the record at `expect`'s position has its hash: a log cut before it is
/// `truncated` (with `first_bad_seq` = its position), another hash there is `diverged`.
///
/// # Errors
///
/// As [`verify`].
pub fn verify_expecting(
    path: impl AsRef<Path>,
    key: Option<&AuditKey>,
    expect: Option<&ExpectedHead>,
) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let Some(file) = open_for_reading(path)? else {
        return Ok(Walk::new(key, expect).finish());
    };
    verify_reader_expecting(file, key, expect).map_err(fail("read"))
}

/// Opens the log for reading under a shared lock (so no append is half done while it is read); `None` when it does
/// not exist. The final component must not be a symlink, and the log must be a regular file.
fn open_for_reading(path: &Path) -> Result<Option<File>, AuditError> {
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let file = match open_regular(path) {
        Ok(Some(file)) => file,
        Ok(None) => {
            return Err(fail("open")(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")));
        }
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(fail("open")(e.into())),
    };
    lock_within(&file, false, std::time::Duration::from_secs(10)).map_err(fail("lock"))?;
    Ok(Some(file))
}

/// The regular file at `path`, opened for reading without following a final symlink (`ELOOP`); `None` for anything
/// else at the name. memory-fs's open (`memory_fs::open_regular_path`), which opens nothing but a regular file for
/// reading: a FIFO, socket or device node is refused before any open.
#[cfg(target_os = "linux")]
fn open_regular(path: &Path) -> Result<Option<File>, Errno> {
    match memory_fs::open_regular_path(path)? {
        memory_fs::Opened::Regular { fd, .. } => Ok(Some(File::from(fd))),
        memory_fs::Opened::Symlink => Err(Errno::LOOP),
        memory_fs::Opened::Directory | memory_fs::Opened::Special => Ok(None),
    }
}

/// The same answers on another Unix, which has no `O_PATH` to look before opening (memory-fs's open is Linux
/// only): the name is opened with `O_NOFOLLOW | O_NONBLOCK`, so a FIFO does not block, and checked with `fstat`;
/// the open of a device node there runs its driver.
#[cfg(not(target_os = "linux"))]
fn open_regular(path: &Path) -> Result<Option<File>, Errno> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let file = File::from(rustix::fs::open(path, flags, Mode::empty())?);
    let regular =
        file.metadata().map_err(|e| e.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error))?.is_file();
    Ok(regular.then_some(file))
}

/// The head of the log at `path`: the last record's `seq` and `hash` (0 and [`GENESIS_HASH`] for an empty or
/// missing log). Reads only the last line; it does not verify the chain.
///
/// # Errors
///
/// [`AuditError::Io`] when the log cannot be read; [`AuditError::MalformedTail`] when its last complete line is
/// not a record.
pub fn head(path: impl AsRef<Path>) -> Result<(u64, String), AuditError> {
    let path = path.as_ref();
    let Some(file) = open_for_reading(path)? else {
        return Ok((0, GENESIS_HASH.to_owned()));
    };
    let fail = |source| AuditError::Io { path: path.to_owned(), op: "read", source };
    let len = file.metadata().map_err(fail)?.len();
    match crate::jsonl::last_line(&file, len).map_err(fail)? {
        None => Ok((0, GENESIS_HASH.to_owned())),
        Some((offset, bytes)) => match parse_line(&bytes) {
            Ok(record) => Ok((record.seq(), record.hash().to_owned())),
            Err(problem) => {
                Err(AuditError::MalformedTail { path: path.to_owned(), offset, detail: problem.to_string() })
            }
        },
    }
}

/// Writes the records of the log at `path` whose `seq` is at least `since`, at most `limit` of them, to `out`,
/// byte for byte as stored (one line each); returns how many. A missing log has none. Lines are not verified.
///
/// # Errors
///
/// [`AuditError::Io`] when the log cannot be read or `out` cannot be written.
pub fn show(
    path: impl AsRef<Path>,
    since: u64,
    limit: Option<u64>,
    out: &mut dyn io::Write,
) -> Result<u64, AuditError> {
    let path = path.as_ref();
    let Some(file) = open_for_reading(path)? else { return Ok(0) };
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut shown = 0u64;
    loop {
        if limit.is_some_and(|limit| shown >= limit) {
            return Ok(shown);
        }
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(fail("read"))? == 0 || !line.ends_with(b"\n") {
            // The end, or a torn final line (never acknowledged): not shown.
            return Ok(shown);
        }
        number += 1;
        if number >= since {
            out.write_all(&line).map_err(fail("print"))?;
            shown += 1;
        }
    }
}

/// Verifies a log read from `reader`, one line at a time.
///
/// # Errors
///
/// Only the reader's own errors.
pub fn verify_reader(reader: impl Read, key: Option<&AuditKey>) -> io::Result<VerifyReport> {
    verify_reader_expecting(reader, key, None)
}

/// [`verify_reader`] against a kept head, as [`verify_expecting`].
///
/// # Errors
///
/// Only the reader's own errors.
pub fn verify_reader_expecting(
    reader: impl Read,
    key: Option<&AuditKey>,
    expect: Option<&ExpectedHead>,
) -> io::Result<VerifyReport> {
    let mut reader = BufReader::new(reader);
    let mut walk = Walk::new(key, expect);
    // A kept head at position 0 names the empty log, which starts every chain.
    if let Err(report) = walk.check_expected() {
        return Ok(report);
    }
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
    let mut walk = Walk::new(key, None);
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
    expect: Option<&'k ExpectedHead>,
}

impl<'k> Walk<'k> {
    fn new(key: Option<&'k AuditKey>, expect: Option<&'k ExpectedHead>) -> Walk<'k> {
        Walk { head: ChainHead::genesis(), key, expect }
    }

    /// Whether the head now reached is the kept one, when it is the kept position.
    fn check_expected(&self) -> Result<(), VerifyReport> {
        match self.expect {
            Some(expect) if expect.seq == self.head.seq && expect.hash != self.head.hash => {
                Err(VerifyReport::Broken {
                    first_bad_seq: expect.seq,
                    reason: BreakReason::Diverged {
                        expected: expect.hash.clone(),
                        found: self.head.hash.clone(),
                    },
                })
            }
            _ => Ok(()),
        }
    }

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
        self.check_expected()
    }

    fn finish(self) -> VerifyReport {
        if let Err(report) = self.check_expected() {
            return report;
        }
        if let Some(expect) = self.expect.filter(|expect| expect.seq > self.head.seq) {
            return VerifyReport::Broken {
                first_bad_seq: expect.seq,
                reason: BreakReason::Truncated { records: self.head.seq },
            };
        }
        VerifyReport::Ok { records: self.head.seq, last_hash: self.head.hash }
    }
}
