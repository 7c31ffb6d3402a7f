//! Reading a log for people: records filtered as they stream by (`alp audit show`), and who received an entry
//! (`alp audit disclosed`). Lines are read one at a time, never the whole log; what is printed is each record's
//! stored bytes. Lines are not verified: [`verify`](crate::verify) does that.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::FlockOperation;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::archive::{Segment, segments};
use crate::lines::{Line, LineReader};
use crate::record::{format_timestamp, push_json_str};
use crate::{ArchiveError, AuditError, AuditOperation, AuditRecord, Door, Outcome, parse_shown_entry};

/// Which records to keep: every field that is set must match (they combine with AND); the default keeps every
/// record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordFilter {
    /// Records with `seq` at least this.
    pub since: Option<u64>,
    /// Records with `seq` below this: with [`Window::Last`], the page of a trail read newest first that comes
    /// before the one ending at this record.
    pub before: Option<u64>,
    /// Records at or after this time.
    pub from: Option<OffsetDateTime>,
    /// Records at or before this time.
    pub to: Option<OffsetDateTime>,
    /// Records of this actor (the role, `""` for an operator command), byte for byte.
    pub actor: Option<String>,
    /// Records of this door; a record written before doors were recorded is taken to be of the door its operation
    /// names ([`AuditRecord::door_or_operation`]).
    pub door: Option<Door>,
    /// Records with this outcome.
    pub outcome: Option<Outcome>,
    /// Records with this deny or error code.
    pub code: Option<String>,
    /// Records of calls that came with this bearer token.
    pub via: Option<String>,
    /// Records whose `id` lies under this prefix, segment by segment: `project:a` keeps `project:a` and
    /// `project:a:x`, never `project:ab`; `""` keeps every record.
    pub id: Option<String>,
    /// Records whose `shown` holds this ID, at any version.
    pub disclosed: Option<String>,
}

impl RecordFilter {
    /// Whether `record` is kept.
    pub fn matches(&self, record: &AuditRecord) -> bool {
        self.bounds().matches(&View::of(record))
    }

    /// The filter with its times as the strings records hold, so that records are compared without parsing theirs
    /// (the canonical timestamp orders as its text does).
    fn bounds(&self) -> Bounds<'_> {
        let (from, nothing_from) = match self.from {
            None => (None, false),
            Some(t) => match canonical(t) {
                Ok(text) => (Some(text), false),
                // Before the year 0000 no bound; after 9999 nothing is that late.
                Err(after) => (None, after),
            },
        };
        let (to, nothing_to) = match self.to {
            None => (None, false),
            Some(t) => match canonical(t) {
                Ok(text) => (Some(text), false),
                Err(after) => (None, !after),
            },
        };
        let disclosed = self.disclosed.as_deref().map(|id| {
            let mut pattern = String::with_capacity(id.len() + 2);
            push_json_str(&mut pattern, id);
            pattern.pop(); // the closing quote: an entry goes on with `@<version>"`
            pattern.push('@');
            pattern
        });
        Bounds { filter: self, from, to, nothing: nothing_from || nothing_to, disclosed }
    }
}

/// `t` in UTC, truncated to milliseconds, as a record writes it; `Err(true)` after the year 9999, `Err(false)`
/// before the year 0000.
fn canonical(t: OffsetDateTime) -> Result<String, bool> {
    let utc = t.checked_to_offset(time::UtcOffset::UTC).ok_or(t.year() > 0)?;
    match utc.year() {
        year if year > 9999 => Err(true),
        year if year < 0 => Err(false),
        _ => Ok(format_timestamp(utc)),
    }
}

/// A filter ready to compare records' stored text.
struct Bounds<'f> {
    filter: &'f RecordFilter,
    from: Option<String>,
    to: Option<String>,
    /// The times leave no record.
    nothing: bool,
    /// `"<id>@` as a `shown` entry of the disclosed ID starts in a stored line.
    disclosed: Option<String>,
}

impl Bounds<'_> {
    /// Whether a line that does not hold the disclosed ID's entry can be passed over without parsing it.
    fn passes_over(&self, line: &[u8]) -> bool {
        match (&self.disclosed, std::str::from_utf8(line)) {
            (Some(pattern), Ok(text)) => !text.contains(pattern.as_str()),
            _ => false,
        }
    }

    fn matches(&self, record: &View<'_>) -> bool {
        let f = self.filter;
        !self.nothing
            && f.since.is_none_or(|since| record.seq >= since)
            && f.before.is_none_or(|before| record.seq < before)
            && self.from.as_deref().is_none_or(|from| *record.timestamp >= *from)
            && self.to.as_deref().is_none_or(|to| *record.timestamp <= *to)
            && f.actor.as_deref().is_none_or(|actor| record.actor == actor)
            && f.door.is_none_or(|door| record.door.unwrap_or_else(|| Door::from(record.operation)) == door)
            && f.outcome.is_none_or(|outcome| record.outcome == outcome)
            && f.code.as_deref().is_none_or(|code| record.code.as_deref() == Some(code))
            && f.via.as_deref().is_none_or(|via| record.via.as_deref() == Some(via))
            && f.id.as_deref().is_none_or(|prefix| lies_under(&record.id, prefix))
            && f.disclosed.as_deref().is_none_or(|id| record.shows(id))
    }
}

/// Whether `id` lies under `prefix`, segment by segment (`""` holds everything).
pub(crate) fn lies_under(id: &str, prefix: &str) -> bool {
    prefix.is_empty() || id.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
}

/// The fields of a stored line a filter looks at, borrowed from the line where no escape stands in the way.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct View<'a> {
    seq: u64,
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(borrow)]
    actor: Cow<'a, str>,
    operation: AuditOperation,
    #[serde(default)]
    door: Option<Door>,
    #[serde(borrow)]
    id: Cow<'a, str>,
    outcome: Outcome,
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    shown: Vec<Cow<'a, str>>,
    #[serde(default, borrow)]
    via: Option<Cow<'a, str>>,
    #[serde(borrow)]
    prev_hash: Cow<'a, str>,
}

impl<'a> View<'a> {
    fn of(record: &'a AuditRecord) -> View<'a> {
        View {
            seq: record.seq(),
            timestamp: Cow::Owned(format_timestamp(record.timestamp())),
            actor: Cow::Borrowed(record.actor()),
            operation: record.operation(),
            door: record.door(),
            id: Cow::Borrowed(record.id()),
            outcome: record.outcome(),
            code: record.code().map(Cow::Borrowed),
            shown: record.shown().iter().map(|s| Cow::Borrowed(s.as_str())).collect(),
            via: record.via().map(Cow::Borrowed),
            prev_hash: Cow::Borrowed(record.prev_hash()),
        }
    }

    /// The versions of `id` in `shown`.
    fn versions_of<'s>(&'s self, id: &'s str) -> impl Iterator<Item = u64> + 's {
        self.shown.iter().filter_map(move |entry| match parse_shown_entry(entry) {
            Some((shown, version)) if shown == id => Some(version),
            _ => None,
        })
    }

    fn shows(&self, id: &str) -> bool {
        self.versions_of(id).next().is_some()
    }

    /// Where a log whose first record this is continues from.
    fn continued_from(&self) -> (u64, &str) {
        (self.seq - 1, if self.seq == 1 { crate::GENESIS_HASH } else { &self.prev_hash })
    }
}

/// How many of the matching records to keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Window {
    /// Every one.
    #[default]
    All,
    /// The first N (`--limit N`): reading stops once they are found.
    First(u64),
    /// The last N (`--tail N`): the log is read to its end, keeping at most N lines at a time.
    Last(u64),
}

/// Why a log could not be read for people.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The live log could not be opened.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The archive directory could not be listed, or a segment opened.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// A log could not be read.
    #[error("cannot read audit log `{log}`: {error}")]
    Read {
        /// The log, by the name its source was given.
        log: String,
        /// The underlying error.
        #[source]
        error: io::Error,
    },
    /// A line of a log is not a record, so no filter can be applied to it.
    #[error("line {line} of audit log `{log}` is not an audit record: {detail}; run `alp audit verify`")]
    NotARecord {
        /// The log.
        log: String,
        /// The 1-based line number in it.
        line: u64,
        /// What is wrong.
        detail: String,
    },
    /// A line of a log is longer than [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES), which no sink writes: it is not
    /// read.
    #[error(
        "line {line} of audit log `{log}` is longer than {} bytes; run `alp audit verify`",
        crate::MAX_LINE_BYTES
    )]
    LineTooLong {
        /// The log.
        log: String,
        /// The 1-based line number in it.
        line: u64,
    },
    /// The records could not be written out.
    #[error("cannot write the audit records: {0}")]
    Write(#[source] io::Error),
}

/// One log to read: a segment of an archive, the live log, or any stream of stored lines (a database's).
pub struct LogSource<'a> {
    name: String,
    kind: SourceKind<'a>,
}

enum SourceKind<'a> {
    Reader(Box<dyn Read + 'a>),
    /// Opened when it is reached, so that a directory of many segments holds one open at a time.
    Segment(Segment),
}

impl std::fmt::Debug for LogSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSource").field("name", &self.name).finish_non_exhaustive()
    }
}

impl<'a> LogSource<'a> {
    /// The stored lines `reader` gives (one record per line, each ending in `\n`), named `name` in errors.
    pub fn new(name: impl Into<String>, reader: impl Read + 'a) -> LogSource<'a> {
        LogSource { name: name.into(), kind: SourceKind::Reader(Box::new(reader)) }
    }

    /// A segment of an archive directory, opened when it is reached.
    pub fn segment(segment: &Segment) -> LogSource<'static> {
        LogSource { name: segment.path().display().to_string(), kind: SourceKind::Segment(segment.clone()) }
    }

    /// The JSONL log at `path` as it is now: its length is read under its shared lock, then the lines below it are
    /// read without holding the lock (appends and archives go on meanwhile; an archive replaces the file, and the
    /// one opened here stays readable). `None` when there is no log.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when the log cannot be opened, locked or examined.
    pub fn live(path: impl AsRef<Path>) -> Result<Option<LogSource<'static>>, AuditError> {
        let path = path.as_ref();
        Ok(open_live(path)?.map(|(file, len)| LogSource::new(path.display().to_string(), file.take(len))))
    }

    /// The name errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn open(self) -> Result<Opened<'a>, QueryError> {
        let reader: Box<dyn Read + 'a> = match self.kind {
            SourceKind::Reader(reader) => reader,
            SourceKind::Segment(segment) => {
                let fail = |source| ArchiveError::Io { path: segment.path().to_owned(), op: "open", source };
                Box::new(File::open(segment.path()).map_err(fail)?)
            }
        };
        let mut opened =
            Opened { name: self.name, lines: LineReader::new(reader), pending: false, from: None };
        opened.pending = opened.advance()?;
        opened.from = opened.pending.then(|| opened.first_from()).flatten();
        Ok(opened)
    }
}

/// The JSONL log at `path` opened for reading as it is now, with its length read under its shared lock (released
/// before returning): what is below that length is whole records and at most a torn final line, however many are
/// appended or archived meanwhile. `None` when there is no log.
fn open_live(path: &Path) -> Result<Option<(File, u64)>, AuditError> {
    let fail = |op| move |source| AuditError::Io { path: path.to_owned(), op, source };
    let Some(file) = crate::verify::open_for_reading(path)? else { return Ok(None) };
    let len = file.metadata().map_err(fail("read"))?.len();
    rustix::fs::flock(&file, FlockOperation::Unlock).map_err(|e| fail("unlock")(e.into()))?;
    Ok(Some((file, len)))
}

/// The sources of `alp audit show` and `disclosed` over a JSONL log: with `archive`, the segments of that directory
/// in `seq` order ([`segments`]), then the live log at `log` (left out when there is none). The live log is opened
/// first, so that an archive that runs meanwhile leaves its records in a source read here.
///
/// # Errors
///
/// [`QueryError::Audit`] when the live log cannot be opened; [`QueryError::Archive`] when the directory cannot be
/// listed.
pub fn log_sources(
    log: impl AsRef<Path>,
    archive: Option<&Path>,
) -> Result<Vec<LogSource<'static>>, QueryError> {
    let live = LogSource::live(log)?;
    let mut sources = archive_sources(archive)?;
    sources.extend(live);
    Ok(sources)
}

/// The segments of the archive directory `archive` as sources, in `seq` order; none without a directory.
///
/// # Errors
///
/// [`QueryError::Archive`] when the directory cannot be listed.
pub fn archive_sources(archive: Option<&Path>) -> Result<Vec<LogSource<'static>>, QueryError> {
    let Some(dir) = archive else { return Ok(Vec::new()) };
    Ok(segments(dir)?.iter().map(LogSource::segment).collect())
}

/// A source being read: the line in its reader's buffer is the next one to give when `pending`.
struct Opened<'a> {
    name: String,
    lines: LineReader<Box<dyn Read + 'a>>,
    pending: bool,
    /// Where the source continues from, read from its first line; `None` when it is empty or that line is not a
    /// record.
    from: Option<(u64, String)>,
}

impl Opened<'_> {
    /// Reads the next complete line; `false` at the end (a torn final line, never acknowledged, is the end too).
    fn advance(&mut self) -> Result<bool, QueryError> {
        let read = self.lines.next().map_err(|error| QueryError::Read { log: self.name.clone(), error })?;
        match read {
            Line::Complete => Ok(true),
            Line::End | Line::Torn => Ok(false),
            Line::TooLong => {
                Err(QueryError::LineTooLong { log: self.name.clone(), line: self.lines.number() })
            }
        }
    }

    fn first_from(&self) -> Option<(u64, String)> {
        let view: View<'_> = serde_json::from_slice(self.lines.line()).ok()?;
        let (seq, hash) = view.continued_from();
        Some((seq, hash.to_owned()))
    }

    /// The line read last, with its `\n`.
    fn line(&self) -> &[u8] {
        self.lines.line()
    }

    /// The line read last as a record's fields.
    fn view(&self) -> Result<View<'_>, QueryError> {
        serde_json::from_slice(self.lines.line()).map_err(|error| QueryError::NotARecord {
            log: self.name.clone(),
            line: self.lines.number(),
            detail: error.to_string(),
        })
    }
}

/// The lines of several sources read one after the other. A source is passed over when the one after it continues
/// from the same record: an archive stopped after it wrote its segment, before it replaced the log, leaves the
/// records in both (and a segment left by such an archive starts where the next one does), and the later source
/// holds them all.
struct Lines<'a> {
    rest: VecDeque<LogSource<'a>>,
    /// The source after the current one, opened to see where it continues from.
    peeked: Option<Opened<'a>>,
    current: Option<Opened<'a>>,
}

impl<'a> Lines<'a> {
    fn new(sources: Vec<LogSource<'a>>) -> Lines<'a> {
        Lines { rest: sources.into(), peeked: None, current: None }
    }

    /// Moves to the next line (with its `\n`); the source it is in, or `None` after the last.
    fn next(&mut self) -> Result<Option<&Opened<'a>>, QueryError> {
        loop {
            if let Some(current) = &mut self.current {
                let more = if current.pending {
                    current.pending = false;
                    true
                } else {
                    current.advance()?
                };
                if more {
                    return Ok(self.current.as_ref());
                }
                self.current = None;
            }
            let mut opened = match self.peeked.take() {
                Some(opened) => opened,
                None => match self.rest.pop_front() {
                    Some(source) => source.open()?,
                    None => return Ok(None),
                },
            };
            while let Some(source) = self.rest.pop_front() {
                let next = source.open()?;
                if opened.from.is_some() && opened.from == next.from {
                    opened = next;
                } else {
                    self.peeked = Some(next);
                    break;
                }
            }
            self.current = Some(opened);
        }
    }
}

/// Writes the records of `sources` (read in order) that `filter` keeps, at most as many as `window` says, to
/// `out`: each one's stored line, byte for byte, ending in `\n`. Returns how many.
///
/// Lines are read one at a time; [`Window::Last`] keeps at most its N lines at once. A source that the next one
/// continues from the same record is passed over (see [`archive`](crate::archive)). A torn final line (never
/// acknowledged) ends its source.
///
/// ```
/// use memory_audit::{select, AuditEvent, AuditOperation, AuditSink, LogSource, MemoryAuditSink, Outcome,
///     RecordFilter, Window};
///
/// let sink = MemoryAuditSink::new();
/// for (actor, id) in [("worker", "shared:team"), ("main", "project:a:x"), ("worker", "project:ab")] {
///     sink.record(&AuditEvent {
///         timestamp: time::macros::datetime!(2026-11-29 22:33:13.123 UTC),
///         actor: actor.into(),
///         operation: AuditOperation::Get,
///         door: None,
///         id: id.into(),
///         outcome: Outcome::Allowed,
///         code: None,
///         grant: None,
///         shown: Vec::new(),
///         via: None,
///     })?;
/// }
/// let log = sink.to_jsonl();
/// let filter = RecordFilter { id: Some("project:a".into()), ..RecordFilter::default() };
/// let mut out = Vec::new();
/// assert_eq!(select(vec![LogSource::new("log", log.as_bytes())], &filter, Window::All, &mut out)?, 1);
/// assert_eq!(out, log.lines().nth(1).unwrap().as_bytes().iter().chain(b"\n").copied().collect::<Vec<u8>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`QueryError`]: a source cannot be opened or read, a line is not a record (or is longer than a record may be),
/// or `out` cannot be written.
pub fn select(
    sources: Vec<LogSource<'_>>,
    filter: &RecordFilter,
    window: Window,
    out: &mut dyn io::Write,
) -> Result<u64, QueryError> {
    let bounds = filter.bounds();
    let mut lines = Lines::new(sources);
    let mut kept: VecDeque<Vec<u8>> = VecDeque::new();
    let mut count = 0u64;
    if window == Window::First(0) {
        return Ok(0);
    }
    while let Some(source) = lines.next()? {
        if bounds.passes_over(source.line()) || !bounds.matches(&source.view()?) {
            continue;
        }
        match window {
            Window::Last(n) => {
                if n == 0 {
                    continue;
                }
                if kept.len() as u64 == n {
                    kept.pop_front();
                }
                kept.push_back(source.line().to_vec());
            }
            Window::All | Window::First(_) => {
                out.write_all(source.line()).map_err(QueryError::Write)?;
                count += 1;
                if window == Window::First(count) {
                    break;
                }
            }
        }
    }
    for line in &kept {
        out.write_all(line).map_err(QueryError::Write)?;
        count += 1;
    }
    Ok(count)
}

/// How many bytes [`select_last`] reads at a time, going back from the end of the log.
const BACK_CHUNK: usize = 64 * 1024;

/// [`select`] with [`Window::Last`]`(n)` over the JSONL log at `path` alone (no archive), read from its end: the
/// last `n` records `filter` keeps, oldest first, each one's stored line. Only as much of the log is read as the
/// answer needs, so the newest page of a long log costs what the page holds, not what the log does.
///
/// The log is taken as [`LogSource::live`] takes it (its length under its shared lock). A torn final line, never
/// acknowledged, is left out as [`select`] leaves it out. Records are read newest first and, with
/// [`RecordFilter::since`], reading stops at the first record below it. A line that is not a record or is over
/// [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES), among those read, makes the whole log be read forward by [`select`]
/// instead, so the error names its line; lines older than the answer are not read, and a broken chain is
/// [`verify`](crate::verify)'s to find.
///
/// # Errors
///
/// As [`select`].
pub fn select_last(
    path: impl AsRef<Path>,
    filter: &RecordFilter,
    n: u64,
    out: &mut dyn io::Write,
) -> Result<u64, QueryError> {
    let path = path.as_ref();
    let Some((file, len)) = open_live(path)? else { return Ok(0) };
    let read = |at: u64, into: &mut [u8]| {
        use std::os::unix::fs::FileExt as _;
        file.read_exact_at(into, at)
            .map_err(|error| QueryError::Read { log: path.display().to_string(), error })
    };
    match last_records(len, read, filter, n, BACK_CHUNK)? {
        Some(kept) => {
            for line in kept.iter().rev() {
                out.write_all(line).map_err(QueryError::Write)?;
            }
            Ok(kept.len() as u64)
        }
        None => select(
            vec![LogSource::new(path.display().to_string(), file.take(len))],
            filter,
            Window::Last(n),
            out,
        ),
    }
}

/// The last `n` records `filter` keeps among the complete lines of a log of `len` bytes, newest first, read back
/// from its end `chunk` bytes at a time (as much as the line not yet complete holds, when that is more) through `read(at, into)`; `None` when a line
/// read is not a record or is too long (the caller reads forward for the error).
fn last_records(
    len: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> Result<(), QueryError>,
    filter: &RecordFilter,
    n: u64,
    chunk: usize,
) -> Result<Option<Vec<Vec<u8>>>, QueryError> {
    let bounds = filter.bounds();
    let mut kept: Vec<Vec<u8>> = Vec::new();
    if n == 0 {
        return Ok(Some(kept));
    }
    // `buf` holds the bytes from `pos` on that are read and not yet taken as lines.
    let mut pos = len;
    let mut buf: Vec<u8> = Vec::new();
    let chunk = chunk.max(1);
    let mut want = chunk;
    // Until the last `\n` is found, the bytes after it are a torn final line.
    let mut ends_in_newline = false;
    loop {
        if pos > 0 {
            let take = u64::try_from(want).unwrap_or(u64::MAX).min(pos);
            let mut block = vec![0; usize::try_from(take).unwrap_or(usize::MAX)];
            read(pos - take, &mut block)?;
            pos -= take;
            block.extend_from_slice(&buf);
            buf = block;
        }
        if !ends_in_newline {
            match buf.iter().rposition(|&b| b == b'\n') {
                Some(at) => {
                    buf.truncate(at + 1);
                    ends_in_newline = true;
                }
                None if pos == 0 => return Ok(Some(kept)),
                None if buf.len() > crate::MAX_LINE_BYTES => return Ok(None),
                None => {
                    want = chunk.max(buf.len());
                    continue;
                }
            }
        }
        // `buf` ends in `\n`: take its complete lines from the end, the first one once the start of the log is read.
        while let Some(last) = buf.len().checked_sub(1) {
            let start = match buf[..last].iter().rposition(|&b| b == b'\n') {
                Some(at) => at + 1,
                None if pos == 0 => 0,
                None => break,
            };
            let line = buf.split_off(start);
            if line.len() > crate::MAX_LINE_BYTES + 1 {
                return Ok(None);
            }
            if bounds.passes_over(&line) {
                continue;
            }
            let Ok(view) = serde_json::from_slice::<View<'_>>(&line) else { return Ok(None) };
            if filter.since.is_some_and(|since| view.seq < since) {
                return Ok(Some(kept));
            }
            if bounds.matches(&view) {
                kept.push(line);
                if kept.len() as u64 == n {
                    return Ok(Some(kept));
                }
            }
        }
        if pos == 0 {
            return Ok(Some(kept));
        }
        if buf.len() > crate::MAX_LINE_BYTES {
            return Ok(None);
        }
        // At least as much as the line not yet complete holds: a long line read back doubles what is read each time,
        // so it costs its length, not its square; a short one leaves the next read at `chunk`.
        want = chunk.max(buf.len());
    }
}

/// Who received an entry: every role whose records' `shown` holds it (`alp audit disclosed ID`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disclosed {
    /// The entry's ID.
    pub id: String,
    /// The roles that received it, sorted by name (byte order); empty when none did.
    pub roles: Vec<DisclosedRole>,
}

/// One role that received an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisclosedRole {
    /// The role (the records' actor; `""` for an operator's own reads).
    pub role: String,
    /// How many of its records showed the entry.
    pub records: u64,
    /// The timestamp of the first such record, as stored (RFC 3339 UTC with milliseconds).
    pub first: String,
    /// The timestamp of the last such record.
    pub last: String,
    /// The versions it received, ascending, each once.
    pub versions: Vec<u64>,
    /// The bearer tokens the records came with, sorted, each once; empty when none did.
    pub via: Vec<String>,
}

/// Who received the entry `id`, from the records of `sources` (read in order, as [`select`] reads them): for each
/// role, how many records showed it, the first and last of them, which versions and through which tokens.
/// Serialised, `{"id","roles":[{"role","records","first","last","versions","via"}]}`.
///
/// # Errors
///
/// As [`select`].
pub fn disclosed(id: &str, sources: Vec<LogSource<'_>>) -> Result<Disclosed, QueryError> {
    #[derive(Default)]
    struct Seen {
        records: u64,
        first: String,
        last: String,
        versions: BTreeSet<u64>,
        via: BTreeSet<String>,
    }
    let filter = RecordFilter { disclosed: Some(id.to_owned()), ..RecordFilter::default() };
    let bounds = filter.bounds();
    let mut roles: BTreeMap<String, Seen> = BTreeMap::new();
    let mut lines = Lines::new(sources);
    while let Some(source) = lines.next()? {
        if bounds.passes_over(source.line()) {
            continue;
        }
        let view = source.view()?;
        if !view.shows(id) {
            continue;
        }
        let seen = roles.entry(view.actor.clone().into_owned()).or_default();
        if seen.records == 0 {
            seen.first = view.timestamp.clone().into_owned();
        }
        seen.records += 1;
        seen.last = view.timestamp.clone().into_owned();
        seen.versions.extend(view.versions_of(id));
        if let Some(via) = &view.via {
            seen.via.insert(via.clone().into_owned());
        }
    }
    let roles = roles
        .into_iter()
        .map(|(role, seen)| DisclosedRole {
            role,
            records: seen.records,
            first: seen.first,
            last: seen.last,
            versions: seen.versions.into_iter().collect(),
            via: seen.via.into_iter().collect(),
        })
        .collect();
    Ok(Disclosed { id: id.to_owned(), roles })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{LogSource, QueryError, RecordFilter, Window, last_records, select};
    use crate::{AuditEvent, AuditOperation, AuditSink, Door, MemoryAuditSink, Outcome};

    /// A log of `calls`: each (actor, door, id, shown) a record.
    fn log(calls: &[(usize, usize, usize, bool)]) -> String {
        let actors = ["worker", "main", ""];
        let doors = [Door::Get, Door::Search, Door::Context, Door::Create];
        let ids = ["project:a:x", "project:ab", "shared:t", "project:a"];
        let sink = MemoryAuditSink::new();
        for (i, &(actor, door, id, shown)) in calls.iter().enumerate() {
            let event = AuditEvent {
                timestamp: time::macros::datetime!(2026-11-29 22:00 UTC) + time::Duration::seconds(i as i64),
                actor: actors[actor].to_owned(),
                operation: AuditOperation::Get,
                door: Some(doors[door]),
                id: ids[id].to_owned(),
                outcome: Outcome::Allowed,
                code: None,
                grant: None,
                shown: if shown { vec![format!("{}@1", ids[id])] } else { Vec::new() },
                via: None,
            };
            sink.record(&event).unwrap();
        }
        sink.to_jsonl()
    }

    /// What reading back gives, oldest first, or `None` where it hands over to the forward read.
    fn back(text: &[u8], filter: &RecordFilter, n: u64, chunk: usize) -> Option<Vec<u8>> {
        let read = |at: u64, into: &mut [u8]| -> Result<(), QueryError> {
            let at = usize::try_from(at).unwrap();
            into.copy_from_slice(&text[at..at + into.len()]);
            Ok(())
        };
        let kept = last_records(text.len() as u64, read, filter, n, chunk).unwrap()?;
        Some(kept.iter().rev().flatten().copied().collect())
    }

    fn forward(text: &[u8], filter: &RecordFilter, n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        select(vec![LogSource::new("log", text)], filter, Window::Last(n), &mut out).unwrap();
        out
    }

    fn filters() -> impl Strategy<Value = RecordFilter> {
        (
            prop::option::of(0u64..12),
            prop::option::of(0u64..12),
            prop::option::of(prop::sample::select(vec!["worker", "main", ""])),
            prop::option::of(prop::sample::select(vec![Door::Get, Door::Search])),
            prop::option::of(prop::sample::select(vec!["project:a", "shared", ""])),
            prop::option::of(prop::sample::select(vec!["project:a:x", "shared:t"])),
        )
            .prop_map(|(since, before, actor, door, id, disclosed)| RecordFilter {
                since,
                before,
                actor: actor.map(str::to_owned),
                door,
                id: id.map(str::to_owned),
                disclosed: disclosed.map(str::to_owned),
                ..RecordFilter::default()
            })
    }

    proptest! {
        /// Reading back from the end, in chunks of any size, gives what reading forward gives, a torn final line
        /// left out by both.
        #[test]
        fn reading_back_agrees_with_reading_forward(
            calls in prop::collection::vec((0usize..3, 0usize..4, 0usize..4, any::<bool>()), 0..12),
            torn in prop::option::of("[a-z{\":]{0,30}"),
            filter in filters(),
            n in 0u64..6,
            chunk in 1usize..400,
        ) {
            let mut text = log(&calls).into_bytes();
            if let Some(torn) = torn {
                text.extend_from_slice(torn.as_bytes());
            }
            prop_assert_eq!(back(&text, &filter, n, chunk), Some(forward(&text, &filter, n)));
        }
    }

    /// A line that is not a record, among those read back, hands over to the forward read (which names it); one
    /// older than the answer is never read.
    #[test]
    fn a_line_that_is_not_a_record_hands_over_to_the_forward_read() {
        let good = log(&[(0, 0, 0, true), (1, 1, 1, false), (0, 0, 2, true)]);
        let lines: Vec<&str> = good.lines().collect();
        let bad = format!("{}\nnot a record\n{}\n{}\n", lines[0], lines[1], lines[2]);
        let all = RecordFilter::default();
        // The newest two are read, never the bad line: what the forward read would give of a good log.
        let newest = format!("{}\n{}\n", lines[1], lines[2]);
        assert_eq!(back(bad.as_bytes(), &all, 2, 7), Some(newest.into_bytes()));
        assert_eq!(forward(good.as_bytes(), &all, 2), format!("{}\n{}\n", lines[1], lines[2]).into_bytes());
        assert_eq!(back(bad.as_bytes(), &all, 3, 7), None);
        // Reading stops at the first record below `since`, before a bad line older than it.
        let first_bad = format!("not a record\n{good}");
        let since = RecordFilter { since: Some(2), ..RecordFilter::default() };
        let newest = format!("{}\n{}\n", lines[1], lines[2]);
        assert_eq!(back(first_bad.as_bytes(), &since, 5, 7), Some(newest.into_bytes()));
        assert_eq!(back(first_bad.as_bytes(), &RecordFilter::default(), 5, 7), None);
    }
}
