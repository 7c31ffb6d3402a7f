//! Walking a chain from the first line to the last.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::io::Errno;

use crate::jsonl::{REOPENS, is_current, lock_within};
use crate::lines::{Line, LineReader};
use crate::record::{ChainHead, GENESIS_HASH, LineProblem, parse_line, seq_of_line};
use crate::{AuditError, AuditKey, MAX_LINE_BYTES};

/// The result of walking a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyReport {
    /// Every line is a record in canonical form, numbered one after the other, linked to its predecessor, and its
    /// hash recomputes.
    Ok {
        /// How many records the log holds (0 for an empty or missing log).
        records: u64,
        /// The last record's hash (the hash it continues from for an empty log: [`GENESIS_HASH`]). Keeping it
        /// elsewhere is what detects records later removed from the end, which the chain alone cannot.
        last_hash: String,
        /// The `seq` and `hash` of the record the log continues from: `(0, GENESIS_HASH)` for a log that starts at
        /// `seq` 1 (and for an empty one); for an archived log, whose first record has `seq` N > 1, N − 1 and that
        /// record's `prevHash` (the last archived record).
        from: (u64, String),
    },
    /// The chain breaks.
    Broken {
        /// The `seq` at which the chain first breaks (the line's position: one after the previous record's `seq`,
        /// and 1 when the first line itself is not a record); every record before it verified.
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

/// Why a line breaks the chain. Checked in this order for each line: too long, torn, malformed, canonical form,
/// `seq`, `prevHash`, `hash`; then the kept head and the anchor, if any ([`VerifyOptions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakReason {
    /// The final line has no `\n`: a writer crashed mid-write. The next appender removes it.
    TornFinalLine,
    /// The line is longer than [`MAX_LINE_BYTES`], which no writer writes: it is not read, nor anything after it.
    LineTooLong,
    /// The line is not a record: not JSON, a missing or unknown field, a value of the wrong shape.
    Malformed {
        /// What is wrong.
        detail: String,
    },
    /// The line is a record but not byte for byte as the canonical encoding writes it (spacing, field order,
    /// escapes).
    NonCanonical,
    /// The record's `seq` is not one more than the previous record's: a record was removed, inserted or moved.
    BadSeq {
        /// The previous record's `seq` + 1.
        expected: u64,
        /// The record's `seq`.
        found: u64,
    },
    /// The record's `prevHash` is not the previous record's `hash` (or, for a record with `seq` 1, not
    /// [`GENESIS_HASH`]).
    BrokenLink {
        /// The previous record's `hash` ([`GENESIS_HASH`] before `seq` 1).
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
    /// The kept head lies before the record this (archived) log continues from: it is in an archive, and this log
    /// alone cannot show it is unchanged. `first_bad_seq` is the kept head's `seq`.
    Archived {
        /// The `seq` of the record the log continues from.
        from_seq: u64,
    },
    /// The log does not continue from the anchor it was given ([`VerifyOptions::continuing_from`]): it continues
    /// from another record, starts after the anchor, holds another record at its position, or ends before it.
    /// `first_bad_seq` is the `seq` of the log's first record (`from_seq` + 1).
    NotContinued {
        /// The anchor's `seq`.
        anchor_seq: u64,
        /// The anchor's hash.
        anchor_hash: String,
        /// The `seq` of the record the log continues from.
        from_seq: u64,
        /// The hash the log has at the anchor's position (the hash it continues from, or its record's there);
        /// `None` when the log does not hold that position.
        found: Option<String>,
    },
    /// The live log starts after `seq` 1, but holds no `archive` record for the records before it
    /// ([`VerifyOptions::announced_start`]): its start was cut, not archived. `first_bad_seq` is its first record's.
    UnannouncedStart {
        /// The `seq` of the record the log continues from.
        from_seq: u64,
    },
}

impl BreakReason {
    /// The stable machine-readable reason: `torn_final_line`, `line_too_long`, `malformed`, `non_canonical`,
    /// `bad_seq`, `broken_link`, `altered`, `truncated`, `diverged`, `archived`, `not_continued` or
    /// `unannounced_start`.
    pub fn code(&self) -> &'static str {
        match self {
            BreakReason::Truncated { .. } => "truncated",
            BreakReason::Diverged { .. } => "diverged",
            BreakReason::Archived { .. } => "archived",
            BreakReason::NotContinued { .. } => "not_continued",
            BreakReason::UnannouncedStart { .. } => "unannounced_start",
            BreakReason::TornFinalLine => "torn_final_line",
            BreakReason::LineTooLong => "line_too_long",
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
            BreakReason::LineTooLong => write!(
                f,
                "the line is longer than {MAX_LINE_BYTES} bytes, the most a record may be; nothing after it was read"
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
            BreakReason::Archived { from_seq } => write!(
                f,
                "the kept record lies before this log, which continues from seq {from_seq}: verify the archive that \
                 holds it"
            ),
            BreakReason::NotContinued { anchor_seq, anchor_hash, from_seq, found } => match found {
                Some(found) => write!(
                    f,
                    "the log has hash `{found}` at seq {anchor_seq} where the anchor has `{anchor_hash}`: it does not \
                     continue from the anchor (it was rewritten, or started again)"
                ),
                None if anchor_seq < from_seq => write!(
                    f,
                    "the log continues from seq {from_seq}, after the anchor at seq {anchor_seq}: the records \
                     between are not in it"
                ),
                None => write!(f, "the log ends before the anchor at seq {anchor_seq}"),
            },
            BreakReason::UnannouncedStart { from_seq } => write!(
                f,
                "the log starts after seq {from_seq} but holds no `archive` record for the records up to it: they \
                 were cut, not archived"
            ),
        }
    }
}

/// A head of the chain kept where the log's writers cannot change it (`alp audit head` prints one): `seq` 0 with
/// [`GENESIS_HASH`] names the empty log. Verifying against it also detects records cut from the end. The same
/// `SEQ:HASH` names an anchor an archived log must continue from ([`VerifyOptions::continuing_from`]).
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

/// What a walk checks beyond the chain itself: a kept head the log must still hold, and an anchor it must continue
/// from.
///
/// ```
/// use memory_audit::{verify_bytes_with, ExpectedHead, VerifyOptions, VerifyReport, GENESIS_HASH};
///
/// let genesis = ExpectedHead::new(0, GENESIS_HASH);
/// let options = VerifyOptions::new().continuing_from(Some(genesis));
/// assert!(verify_bytes_with(b"", None, &options).is_ok());
/// let elsewhere = VerifyOptions::new().continuing_from(Some(ExpectedHead::new(7, "ab".repeat(32))));
/// let VerifyReport::Broken { first_bad_seq, reason } = verify_bytes_with(b"", None, &elsewhere) else { panic!() };
/// assert_eq!((first_bad_seq, reason.code()), (1, "not_continued"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    expect: Option<ExpectedHead>,
    from: Option<ExpectedHead>,
    announced: bool,
}

impl VerifyOptions {
    /// Nothing beyond the chain.
    pub fn new() -> VerifyOptions {
        VerifyOptions::default()
    }

    /// Also fails unless the record at `head`'s position has its hash (`alp audit verify --expect`): a log that ends
    /// before it is `truncated` (`first_bad_seq` its position), another hash there is `diverged`, and a position
    /// before the record the log continues from is `archived`.
    #[must_use]
    pub fn expecting(mut self, head: Option<ExpectedHead>) -> VerifyOptions {
        self.expect = head;
        self
    }

    /// Also fails, with `not_continued` at the log's first record, unless the log continues from `anchor` (`alp
    /// audit verify --from`): the anchor is the record the log continues from, or one of its own records, with that
    /// hash. Give the last line of the archive before the log, or a head kept before it was archived.
    #[must_use]
    pub fn continuing_from(mut self, anchor: Option<ExpectedHead>) -> VerifyOptions {
        self.from = anchor;
        self
    }

    /// Also fails, with `unannounced_start` at the log's first record, when the log starts after `seq` 1 without an
    /// `archive` record (actor `""`, allowed) naming the segment that ends where it starts: for a live log, whose
    /// archives always leave that record behind, so that records cut from its start are found without an anchor
    /// (with a key, the record cannot be forged). Not for an archive segment verified alone, which need not hold it.
    #[must_use]
    pub fn announced_start(mut self) -> VerifyOptions {
        self.announced = true;
        self
    }

    /// The kept head, if any.
    pub fn expected(&self) -> Option<&ExpectedHead> {
        self.expect.as_ref()
    }

    /// The anchor, if any.
    pub fn anchor(&self) -> Option<&ExpectedHead> {
        self.from.as_ref()
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
    verify_with(path, key, &VerifyOptions::new())
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
    verify_with(path, key, &VerifyOptions::new().expecting(expect.cloned()))
}

/// [`verify`] with the checks of `options`: a kept head, an anchor.
///
/// # Errors
///
/// As [`verify`].
pub fn verify_with(
    path: impl AsRef<Path>,
    key: Option<&AuditKey>,
    options: &VerifyOptions,
) -> Result<VerifyReport, AuditError> {
    let path = path.as_ref();
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let Some(file) = open_for_reading(path)? else {
        return Ok(Walk::new(key, options).finish());
    };
    verify_reader_with(file, key, options).map_err(fail("read"))
}

/// Opens the log for reading under a shared lock (so no append is half done while it is read); `None` when it does
/// not exist. The final component must not be a symlink, and the log must be a regular file. A log replaced while
/// the lock was awaited (by an archive) is opened again, so what is read is the log at `path`.
pub(crate) fn open_for_reading(path: &Path) -> Result<Option<File>, AuditError> {
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    for _ in 0..REOPENS {
        let file = match open_regular(path) {
            Ok(Some(file)) => file,
            Ok(None) => {
                return Err(fail("open")(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")));
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(fail("open")(e.into())),
        };
        lock_within(&file, false, std::time::Duration::from_secs(10)).map_err(fail("lock"))?;
        if is_current(&file, path).map_err(fail("open"))? {
            return Ok(Some(file));
        }
    }
    Err(fail("open")(io::Error::other("it keeps being replaced")))
}

/// The regular file at `path`, opened for reading without following a final symlink (`ELOOP`); `None` for anything
/// else at the name. memory-fs's open (`memory_fs::open_regular_path`), which opens nothing but a regular file for
/// reading: a FIFO, socket or device node is refused before any open.
#[cfg(target_os = "linux")]
pub(crate) fn open_regular(path: &Path) -> Result<Option<File>, Errno> {
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
pub(crate) fn open_regular(path: &Path) -> Result<Option<File>, Errno> {
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
/// not a record; [`AuditError::LineTooLong`] when it is longer than [`MAX_LINE_BYTES`].
pub fn head(path: impl AsRef<Path>) -> Result<(u64, String), AuditError> {
    let path = path.as_ref();
    let Some(file) = open_for_reading(path)? else {
        return Ok((0, GENESIS_HASH.to_owned()));
    };
    let fail = |source| AuditError::Io { path: path.to_owned(), op: "read", source };
    let len = file.metadata().map_err(fail)?.len();
    match crate::jsonl::read_tail(&file, len, path)?.last_line {
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
/// byte for byte as stored (one line each); returns how many. A missing log has none. Lines are not verified (a
/// line that is not a record is taken to follow the line before it). [`select`](crate::select) filters records.
///
/// # Errors
///
/// [`AuditError::Io`] when the log cannot be read or `out` cannot be written; [`AuditError::LineTooLong`] at a line
/// longer than [`MAX_LINE_BYTES`].
pub fn show(
    path: impl AsRef<Path>,
    since: u64,
    limit: Option<u64>,
    out: &mut dyn io::Write,
) -> Result<u64, AuditError> {
    let path = path.as_ref();
    let Some(file) = open_for_reading(path)? else { return Ok(0) };
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let mut lines = LineReader::new(file);
    let mut shown = 0u64;
    let mut seq = 0u64;
    loop {
        if limit.is_some_and(|limit| shown >= limit) {
            return Ok(shown);
        }
        match lines.next().map_err(fail("read"))? {
            // The end, or a torn final line (never acknowledged): not shown.
            Line::End | Line::Torn => return Ok(shown),
            Line::TooLong => {
                return Err(AuditError::LineTooLong { path: path.to_owned(), offset: lines.offset() });
            }
            Line::Complete => {}
        }
        // A line that is not a record is taken to follow the line before it.
        seq = seq_of_line(lines.line()).unwrap_or(seq.saturating_add(1));
        if seq >= since {
            out.write_all(lines.line()).map_err(fail("print"))?;
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
    verify_reader_with(reader, key, &VerifyOptions::new())
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
    verify_reader_with(reader, key, &VerifyOptions::new().expecting(expect.cloned()))
}

/// [`verify_reader`] with the checks of `options`, as [`verify_with`].
///
/// # Errors
///
/// Only the reader's own errors.
pub fn verify_reader_with(
    reader: impl Read,
    key: Option<&AuditKey>,
    options: &VerifyOptions,
) -> io::Result<VerifyReport> {
    let mut lines = LineReader::new(reader);
    let mut walk = Walk::new(key, options);
    loop {
        let line = match lines.next()? {
            Line::End => return Ok(walk.finish()),
            Line::TooLong => return Ok(walk.too_long()),
            Line::Complete | Line::Torn => lines.line(),
        };
        if let Err(report) = walk.step(line) {
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
/// let genesis = (0, GENESIS_HASH.to_owned());
/// assert_eq!(report, VerifyReport::Ok { records: 0, last_hash: GENESIS_HASH.to_owned(), from: genesis });
/// ```
pub fn verify_bytes(bytes: &[u8], key: Option<&AuditKey>) -> VerifyReport {
    verify_bytes_with(bytes, key, &VerifyOptions::new())
}

/// [`verify_bytes`] with the checks of `options`, as [`verify_with`].
pub fn verify_bytes_with(bytes: &[u8], key: Option<&AuditKey>, options: &VerifyOptions) -> VerifyReport {
    let mut walk = Walk::new(key, options);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if line.strip_suffix(b"\n").unwrap_or(line).len() > MAX_LINE_BYTES {
            return walk.too_long();
        }
        if let Err(report) = walk.step(line) {
            return report;
        }
    }
    walk.finish()
}

/// A walk along the chain, line by line.
pub(crate) struct Walk {
    key: Option<AuditKey>,
    options: VerifyOptions,
    /// Where the log continues from, once its first record is read.
    from: Option<ChainHead>,
    /// The last record read (`from` before the first).
    head: ChainHead,
    /// Whether an `archive` record names the segment that ends where the log starts.
    announced: bool,
}

impl fmt::Debug for Walk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Walk").field("head", &self.head).field("from", &self.from).finish_non_exhaustive()
    }
}

impl Walk {
    pub(crate) fn new(key: Option<&AuditKey>, options: &VerifyOptions) -> Walk {
        Walk {
            key: key.cloned(),
            options: options.clone(),
            from: None,
            head: ChainHead::genesis(),
            announced: false,
        }
    }

    /// A walk of lines that continue the chain after the record `head`.
    pub(crate) fn continuing(key: Option<&AuditKey>, head: ChainHead) -> Walk {
        Walk {
            key: key.cloned(),
            options: VerifyOptions::new(),
            from: Some(head.clone()),
            head,
            announced: false,
        }
    }

    /// The last record read: its `seq` and `hash` (where the log continues from, before the first).
    pub(crate) fn head(&self) -> &ChainHead {
        &self.head
    }

    /// Where the log continues from, once its first record is read.
    pub(crate) fn from(&self) -> Option<&ChainHead> {
        self.from.as_ref()
    }

    /// The position of the next line: one after the last record, and 1 before the first.
    fn position(&self) -> u64 {
        // A chain of more than u64::MAX lines cannot be written (`seq` would overflow), so saturating is exact.
        self.head.seq.saturating_add(1)
    }

    pub(crate) fn broken(&self, reason: BreakReason) -> VerifyReport {
        VerifyReport::Broken { first_bad_seq: self.position(), reason }
    }

    /// A line longer than a record may be, at the next position.
    pub(crate) fn too_long(&self) -> VerifyReport {
        self.refuse(BreakReason::LineTooLong)
    }

    /// Checks one line (with its `\n`, if it has one) against the chain so far, and moves the head past it.
    pub(crate) fn step(&mut self, line: &[u8]) -> Result<(), VerifyReport> {
        match line.strip_suffix(b"\n") {
            Some(line) => self.step_complete(line),
            None => Err(self.refuse(BreakReason::TornFinalLine)),
        }
    }

    /// The line is not a record (or not a whole one): the chain breaks at the next position.
    fn refuse(&self, reason: BreakReason) -> VerifyReport {
        // A log that cannot be read from its start is checked against the kept head as one from `seq` 1.
        match self.from.is_none().then(|| self.check_start()).and_then(Result::err) {
            Some(report) => report,
            None => self.broken(reason),
        }
    }

    /// [`step`](Self::step) for a line known to be whole, given without its `\n`.
    pub(crate) fn step_complete(&mut self, line: &[u8]) -> Result<(), VerifyReport> {
        let record = parse_line(line).map_err(|problem| {
            self.refuse(match problem {
                LineProblem::Malformed(detail) => BreakReason::Malformed { detail },
                LineProblem::NonCanonical => BreakReason::NonCanonical,
            })
        })?;
        if self.from.is_none() {
            // Only the first record of a chain follows the genesis hash: this one's `seq` was changed.
            if record.seq() > 1 && record.prev_hash() == GENESIS_HASH {
                return Err(self.refuse(BreakReason::BadSeq { expected: 1, found: record.seq() }));
            }
            // The first record: the log continues from the record before it (an archived log's first record has
            // `seq` N > 1 and the last archived record's hash as `prevHash`).
            let (seq, hash) = record.follows();
            let from = ChainHead { seq, hash: hash.to_owned() };
            self.head = from.clone();
            self.from = Some(from);
            self.check_start()?;
        }
        if record.seq() != self.position() {
            return Err(self.broken(BreakReason::BadSeq { expected: self.position(), found: record.seq() }));
        }
        if record.prev_hash() != self.head.hash {
            return Err(self.broken(BreakReason::BrokenLink {
                expected: self.head.hash.clone(),
                found: record.prev_hash().to_owned(),
            }));
        }
        // The line is canonical (parse_line checked it), so its own bytes are what the hash covers.
        let expected = crate::record::line_hash(record.prev_hash(), line, self.key.as_ref())
            .unwrap_or_else(|| record.expected_hash(self.key.as_ref()));
        if expected != record.hash() {
            return Err(self.broken(BreakReason::Altered));
        }
        self.head = ChainHead::of(&record);
        if !self.announced {
            self.announced = self.from.as_ref().is_some_and(|from| announces(&record, from.seq));
        }
        self.check_reached()
    }

    /// Once the log's start is known: the kept head and the anchor against the record the log continues from.
    fn check_start(&self) -> Result<(), VerifyReport> {
        let from = self.from.clone().unwrap_or_else(ChainHead::genesis);
        if let Some(expect) = &self.options.expect {
            if expect.seq < from.seq {
                return Err(VerifyReport::Broken {
                    first_bad_seq: expect.seq,
                    reason: BreakReason::Archived { from_seq: from.seq },
                });
            }
            if expect.seq == from.seq && expect.hash != from.hash {
                return Err(VerifyReport::Broken {
                    first_bad_seq: expect.seq,
                    reason: BreakReason::Diverged { expected: expect.hash.clone(), found: from.hash },
                });
            }
        }
        match &self.options.from {
            Some(anchor) if anchor.seq < from.seq => Err(self.not_continued(anchor, &from, None)),
            Some(anchor) if anchor.seq == from.seq && anchor.hash != from.hash => {
                Err(self.not_continued(anchor, &from, Some(from.hash.clone())))
            }
            _ => Ok(()),
        }
    }

    /// After a record: whether it is at the kept head's or the anchor's position with another hash.
    fn check_reached(&self) -> Result<(), VerifyReport> {
        let head = &self.head;
        let at_head = |kept: &&ExpectedHead| kept.seq == head.seq && kept.hash != head.hash;
        if let Some(expect) = self.options.expect.as_ref().filter(at_head) {
            return Err(VerifyReport::Broken {
                first_bad_seq: expect.seq,
                reason: BreakReason::Diverged { expected: expect.hash.clone(), found: head.hash.clone() },
            });
        }
        if let Some(anchor) = self.options.from.as_ref().filter(at_head) {
            let from = self.from.clone().unwrap_or_else(ChainHead::genesis);
            return Err(self.not_continued(anchor, &from, Some(head.hash.clone())));
        }
        Ok(())
    }

    fn not_continued(&self, anchor: &ExpectedHead, from: &ChainHead, found: Option<String>) -> VerifyReport {
        VerifyReport::Broken {
            first_bad_seq: from.seq.saturating_add(1),
            reason: BreakReason::NotContinued {
                anchor_seq: anchor.seq,
                anchor_hash: anchor.hash.clone(),
                from_seq: from.seq,
                found,
            },
        }
    }

    pub(crate) fn finish(self) -> VerifyReport {
        if self.from.is_none() {
            // An empty log continues from the start of every chain.
            if let Err(report) = self.check_start() {
                return report;
            }
        }
        let from = self.from.clone().unwrap_or_else(ChainHead::genesis);
        if let Some(expect) = self.options.expect.as_ref().filter(|expect| expect.seq > self.head.seq) {
            return VerifyReport::Broken {
                first_bad_seq: expect.seq,
                reason: BreakReason::Truncated { records: self.head.seq - from.seq },
            };
        }
        if let Some(anchor) = self.options.from.as_ref().filter(|anchor| anchor.seq > self.head.seq) {
            return self.not_continued(anchor, &from, None);
        }
        if self.options.announced && from.seq > 0 && !self.announced {
            return VerifyReport::Broken {
                first_bad_seq: from.seq.saturating_add(1),
                reason: BreakReason::UnannouncedStart { from_seq: from.seq },
            };
        }
        VerifyReport::Ok {
            records: self.head.seq - from.seq,
            last_hash: self.head.hash,
            from: (from.seq, from.hash),
        }
    }
}

/// Whether `record` is the `archive` record of the segment that ends at `last`: an operator's (actor `""`) allowed
/// `archive` whose ID is `audit-<first>-<last>.jsonl`.
fn announces(record: &crate::AuditRecord, last: u64) -> bool {
    record.operation() == crate::AuditOperation::Archive
        && record.actor().is_empty()
        && record.outcome() == crate::Outcome::Allowed
        && crate::parse_segment_name(record.id()).is_some_and(|(_, segment_last)| segment_last == last)
}
