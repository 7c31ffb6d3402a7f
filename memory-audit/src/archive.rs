//! Archiving: the oldest records moved out of the live log into a segment file, the chain unbroken.
//!
//! A segment is `audit-<first>-<last>.jsonl` (plain decimals) in the archive directory: the records `first` to
//! `last`, byte for byte as the live log held them, mode 0400. It verifies alone (it starts at `seq` 1, or continues
//! from the segment before it), and the live log continues from its last record.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use time::OffsetDateTime;

use crate::jsonl::{REOPENS, is_current, lock_within, sync_parent};
use crate::lines::{Line, LineReader};
use crate::record::{ChainHead, LineProblem, parse_line};
use crate::verify::{Walk, open_regular};
use crate::{
    AuditError, AuditEvent, AuditKey, AuditOperation, BreakReason, Door, GENESIS_HASH, MAX_LINE_BYTES,
    Outcome, VerifyReport,
};

/// How long an archive waits for the log's lock, and for the archive directory's.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The mode of a segment: read-only, for its owner only.
const SEGMENT_MODE: u32 = 0o400;

/// What an archive did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveReport {
    /// How many records were moved into the segment (0 when there was nothing to archive).
    pub archived: u64,
    /// The segment written, `DIR/audit-<first>-<last>.jsonl`; `None` when nothing was archived.
    pub file: Option<PathBuf>,
    /// The `seq` and `hash` of the record the live log continues from: the last archived record (when nothing was
    /// archived, the record it continued from already: `(0, GENESIS_HASH)` for a log never archived).
    pub from: (u64, String),
}

/// Why an archive did not happen, or did not finish. Whatever the error, no record is lost: the live log still
/// verifies and holds every record no segment holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The live log (or the database) could not be opened, locked, read or written, or the archive record could not
    /// be made.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// A system call on the archive directory or a segment failed.
    #[error("cannot {op} audit archive `{}`: {source}", path.display())]
    Io {
        /// The directory or the segment.
        path: PathBuf,
        /// What was being done, as a verb phrase: `create`, `lock`, `write to`, `sync`, `list`, ….
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The live log does not verify: nothing was archived (an archive would carry the break into the segment).
    #[error("audit log `{log}` is broken at record {first_bad_seq} ({}): {reason}; nothing was archived", reason.code())]
    Broken {
        /// The log, as its caller names it.
        log: String,
        /// Where the chain first breaks.
        first_bad_seq: u64,
        /// Why.
        reason: BreakReason,
    },
    /// `before` lies past the end of the log: the live log can start at most one past its last record (where the
    /// archive record then stands alone).
    #[error("cannot archive the records before seq {before}: the log's next record is seq {next}")]
    PastTheEnd {
        /// The `seq` asked for.
        before: u64,
        /// One past the log's last record.
        next: u64,
    },
    /// The segment's name is taken by a file that holds other bytes: nothing was moved.
    #[error("`{}` already exists and holds other records; nothing was archived", path.display())]
    SegmentDiffers {
        /// The file.
        path: PathBuf,
    },
    /// The live log was replaced (by another archive to another directory) between reading it and removing the
    /// archived records from it: nothing was removed, and the segment written holds records the log also holds.
    #[error(
        "audit log `{log}` was replaced while it was archived (another archive ran?); nothing was removed from it, \
         and `{}` holds a copy of records it still holds",
        segment.display()
    )]
    Replaced {
        /// The log, as its caller names it.
        log: String,
        /// The segment written.
        segment: PathBuf,
    },
}

/// A segment of an archive directory: `audit-<first>-<last>.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Segment {
    first: u64,
    last: u64,
    path: PathBuf,
}

impl Segment {
    /// The `seq` of its first record.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The `seq` of its last record.
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's name, `audit-<first>-<last>.jsonl`: the `id` of the archive record that made it.
    pub fn name(&self) -> String {
        segment_name(self.first, self.last)
    }
}

/// `audit-<first>-<last>.jsonl`.
fn segment_name(first: u64, last: u64) -> String {
    format!("audit-{first}-{last}.jsonl")
}

/// The `first` and `last` of a segment's file name: `audit-<first>-<last>.jsonl` with plain decimals (no sign, no
/// leading zero), 1 ≤ first ≤ last; `None` for any other name.
///
/// ```
/// use memory_audit::parse_segment_name;
/// assert_eq!(parse_segment_name("audit-1-99.jsonl"), Some((1, 99)));
/// assert_eq!(parse_segment_name("audit-01-99.jsonl"), None);
/// assert_eq!(parse_segment_name("audit-9-8.jsonl"), None);
/// ```
pub fn parse_segment_name(name: &str) -> Option<(u64, u64)> {
    let range = name.strip_prefix("audit-")?.strip_suffix(".jsonl")?;
    let (first, last) = range.split_once('-')?;
    let number = |s: &str| {
        let plain = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0');
        if plain { s.parse::<u64>().ok() } else { None }
    };
    let (first, last) = (number(first)?, number(last)?);
    (first <= last).then_some((first, last))
}

/// The segments in `dir`, in `seq` order (by first, then last record): every file named
/// `audit-<first>-<last>.jsonl` ([`parse_segment_name`]); anything else in the directory is left out.
///
/// # Errors
///
/// [`ArchiveError::Io`] when the directory cannot be listed.
pub fn segments(dir: impl AsRef<Path>) -> Result<Vec<Segment>, ArchiveError> {
    let dir = dir.as_ref();
    let fail = |source| ArchiveError::Io { path: dir.to_owned(), op: "list", source };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let name = entry.file_name();
        let Some((first, last)) = name.to_str().and_then(parse_segment_name) else { continue };
        found.push(Segment { first, last, path: entry.path() });
    }
    found.sort();
    Ok(found)
}

/// The event of the record an archive writes: actor `""`, operation and door `archive`, the segment's name
/// ([`Segment::name`]) as `id`, allowed.
pub fn archive_event(at: OffsetDateTime, segment_name: &str) -> AuditEvent {
    AuditEvent {
        timestamp: at,
        actor: String::new(),
        operation: AuditOperation::Archive,
        door: Some(Door::Archive),
        id: segment_name.to_owned(),
        outcome: Outcome::Allowed,
        code: None,
        grant: None,
        shown: Vec::new(),
        via: None,
    }
}

/// Checks before anything is written that an archive record at `at` can be made (its time is one a record holds).
fn check_archive_event(at: OffsetDateTime, key: Option<&AuditKey>) -> Result<(), ArchiveError> {
    ChainHead::genesis().seal(&archive_event(at, &segment_name(1, 1)), key)?;
    Ok(())
}

/// A segment being written into an archive directory: the records pushed, verified as a chain, go to a temporary
/// file; [`install`](Self::install) syncs it and gives it its name. The directory is locked (`flock`) from
/// [`create`](Self::create) until the writer is dropped, so archives into one directory run one at a time.
///
/// Store backends use it to write the segment before they remove anything from the live log.
#[derive(Debug)]
pub struct SegmentWriter {
    dir: PathBuf,
    /// The directory, open and locked.
    dir_file: File,
    temp_path: PathBuf,
    /// `None` once installed (or abandoned).
    temp: Option<BufWriter<File>>,
    /// The log the records come from, as errors name it.
    log: String,
    walk: Walk,
    records: u64,
}

impl SegmentWriter {
    /// Locks `dir` (created, mode 0700, when missing) and starts a segment there of records from the log named `log`
    /// (in errors), chained under `key`.
    ///
    /// # Errors
    ///
    /// [`ArchiveError::Io`] when the directory cannot be created, opened or locked, or the temporary file created.
    pub fn create(
        dir: impl AsRef<Path>,
        log: impl Into<String>,
        key: Option<&AuditKey>,
    ) -> Result<SegmentWriter, ArchiveError> {
        let dir = dir.as_ref().to_owned();
        let fail = |op| {
            let dir = dir.clone();
            move |source| ArchiveError::Io { path: dir, op, source }
        };
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => sync_parent(&dir).map_err(fail("sync the directory of"))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail("create")(e)),
        }
        let dir_file = File::open(&dir).map_err(fail("open"))?;
        if !dir_file.metadata().map_err(fail("open"))?.is_dir() {
            return Err(fail("open")(io::Error::new(io::ErrorKind::InvalidInput, "not a directory")));
        }
        lock_within(&dir_file, true, LOCK_TIMEOUT).map_err(fail("lock"))?;
        // One name: archives into this directory hold its lock, so no other writes it now, and a file left by one
        // that was killed is replaced.
        let temp_path = dir.join(".audit-segment.tmp");
        let temp = create_exclusive(&temp_path).map_err(|e| ArchiveError::Io {
            path: temp_path.clone(),
            op: "create",
            source: e,
        })?;
        Ok(SegmentWriter {
            dir,
            dir_file,
            temp_path,
            temp: Some(BufWriter::with_capacity(256 * 1024, temp)),
            log: log.into(),
            walk: Walk::new(key, &crate::VerifyOptions::new()),
            records: 0,
        })
    }

    /// Appends one stored line (with or without its `\n`), which must continue the chain of the lines before it
    /// (the first may start anywhere: a log archived before starts after `seq` 1).
    ///
    /// # Errors
    ///
    /// [`ArchiveError::Broken`] when the line does not continue the chain; [`ArchiveError::Io`] when it cannot be
    /// written.
    pub fn push(&mut self, line: &[u8]) -> Result<(), ArchiveError> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let checked = if line.len() > MAX_LINE_BYTES {
            Err(self.walk.too_long())
        } else {
            self.walk.step_complete(line)
        };
        if let Err(report) = checked {
            return Err(self.broken(report));
        }
        let fail = |source| ArchiveError::Io { path: self.temp_path.clone(), op: "write to", source };
        let Some(temp) = self.temp.as_mut() else {
            return Err(fail(io::Error::other("the segment is already installed")));
        };
        temp.write_all(line).and_then(|()| temp.write_all(b"\n")).map_err(fail)?;
        self.records += 1;
        Ok(())
    }

    fn broken(&self, report: VerifyReport) -> ArchiveError {
        match report {
            VerifyReport::Broken { first_bad_seq, reason } => {
                ArchiveError::Broken { log: self.log.clone(), first_bad_seq, reason }
            }
            VerifyReport::Ok { .. } => ArchiveError::Io {
                path: self.temp_path.clone(),
                op: "write to",
                source: io::Error::other("a verified line was reported broken"),
            },
        }
    }

    /// How many records were pushed.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The `seq` and `hash` of the last record pushed (what the log continues from once they are archived); `None`
    /// before any.
    pub fn last(&self) -> Option<(u64, String)> {
        self.walk.from()?;
        let head = self.walk.head();
        Some((head.seq, head.hash.clone()))
    }

    /// Makes the segment durable under its name, `audit-<first>-<last>.jsonl` (mode 0400): the temporary file is
    /// synced, linked to the name (never over another file: a file already there with the same bytes, left by an
    /// archive that was stopped before it finished, is the segment), removed, and the directory synced. `None` when
    /// no record was pushed (then nothing is left behind).
    ///
    /// # Errors
    ///
    /// [`ArchiveError::SegmentDiffers`] when the name holds other bytes; [`ArchiveError::Io`] when a step fails.
    pub fn install(&mut self) -> Result<Option<Segment>, ArchiveError> {
        let Some(temp) = self.temp.take() else {
            return Err(self.io("install", io::Error::other("the segment is already installed")));
        };
        let Some(from) = self.walk.from().cloned().filter(|_| self.records > 0) else {
            drop(temp);
            let _ = std::fs::remove_file(&self.temp_path);
            return Ok(None);
        };
        let temp_path = &self.temp_path;
        let fail = |op| move |source| ArchiveError::Io { path: temp_path.clone(), op, source };
        let file = temp.into_inner().map_err(|e| fail("write to")(e.into_error()))?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(SEGMENT_MODE))
            .map_err(|e| fail("set the mode of")(e.into()))?;
        file.sync_all().map_err(fail("sync"))?;
        drop(file);
        pause("segment-written");
        let segment = Segment {
            first: from.seq + 1,
            last: self.walk.head().seq,
            path: self.dir.join(segment_name(from.seq + 1, self.walk.head().seq)),
        };
        match std::fs::hard_link(&self.temp_path, &segment.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !same_bytes(&self.temp_path, &segment.path).map_err(|e| self.io("read", e))? {
                    let _ = std::fs::remove_file(&self.temp_path);
                    return Err(ArchiveError::SegmentDiffers { path: segment.path });
                }
            }
            Err(e) => return Err(self.io("link", e)),
        }
        pause("segment-linked");
        std::fs::remove_file(&self.temp_path).map_err(|e| self.io("remove", e))?;
        self.dir_file.sync_all().map_err(|e| self.io("sync", e))?;
        pause("segment-durable");
        Ok(Some(segment))
    }

    fn io(&self, op: &'static str, source: io::Error) -> ArchiveError {
        ArchiveError::Io { path: self.dir.clone(), op, source }
    }
}

impl Drop for SegmentWriter {
    /// A segment never installed leaves no temporary file (unless the process dies first: the next archive into the
    /// directory replaces it).
    fn drop(&mut self) {
        if self.temp.take().is_some() {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}

/// Whether the files at `a` and `b` hold the same bytes.
fn same_bytes(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut a, mut b) = (File::open(a)?, File::open(b)?);
    if a.metadata()?.len() != b.metadata()?.len() {
        return Ok(false);
    }
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the end of the file; how many bytes were read.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Creates `path` for writing (mode 0600 whatever the umask), never following a symlink, after removing whatever
/// file a stopped writer left there.
fn create_exclusive(path: &Path) -> io::Result<File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, memory_fs::FILE_MODE)?;
    rustix::fs::fchmod(&fd, memory_fs::FILE_MODE)?;
    Ok(File::from(fd))
}

/// A point of an archive where the tests of crash safety stop the process (feature `testkit`); nothing otherwise.
fn pause(point: &str) {
    #[cfg(feature = "testkit")]
    crate::testkit::pause_point(point);
    #[cfg(not(feature = "testkit"))]
    let _ = point;
}

/// Moves the records of the JSONL log at `log` with `seq` < `before` (default: all but the last) into `dir`
/// (created, 0700, when missing) as `audit-<first>-<last>.jsonl`, and appends one `archive` record (actor `""`, `id`
/// the segment's name, at `at`) to the log that remains, whose first record then links to the last archived one.
/// The chain is verified (under `key`) on the way: a broken log is not archived.
///
/// Nothing to archive — a missing or empty log, a log of one record (by default), a `before` at or below the first
/// record — is not an error: the report says 0 records and no file, and nothing is written.
///
/// How, so that a crash (even `kill -9`) at any point loses no record and leaves a live log that verifies:
/// 1. Under the archive directory's lock (archives into one directory run one at a time), the log's length is read
///    under its shared lock, and the records before `before` are read from that length without holding it,
///    verified, and written to a temporary file in `dir`; it is synced, linked to the segment's name (a file
///    already there must hold the same bytes: what an archive stopped after this step left), and the directory is
///    synced. Appends go on meanwhile.
/// 2. Under the log's exclusive lock (the one appenders take), the rest of the log is read, verified and written
///    with the archive record to a temporary file beside the log, which is synced and renamed over the log, and the
///    directory is synced. Appenders waiting for the old file's lock see that it is no longer the log and open the
///    new one.
///
/// A crash before step 2's rename leaves the log as it was (its oldest records then also in the segment, which a
/// reader of the archive and the log reads once: see [`select`](crate::select)); running the archive again finishes
/// it.
///
/// # Errors
///
/// [`ArchiveError`]: the log or the directory cannot be used, the log is broken, `before` is past its end, the
/// segment's name holds other bytes, or the log was replaced meanwhile.
pub fn archive(
    log: impl AsRef<Path>,
    dir: impl AsRef<Path>,
    before: Option<u64>,
    key: Option<&AuditKey>,
    at: OffsetDateTime,
) -> Result<ArchiveReport, ArchiveError> {
    let log = log.as_ref();
    let named = log.display().to_string();
    let fail = |op| move |source| AuditError::Io { path: log.to_owned(), op, source };
    check_archive_event(at, key)?;
    let mut writer = SegmentWriter::create(dir, named.clone(), key)?;

    // Step 1: the length of the log, read where no append is under way (an append that fails cuts the file back
    // to its previous length: what lies below this length stays as it is).
    let Some(file) = crate::verify::open_for_reading(log)? else {
        return match before {
            Some(before) if before > 1 => Err(ArchiveError::PastTheEnd { before, next: 1 }),
            _ => Ok(ArchiveReport { archived: 0, file: None, from: (0, GENESIS_HASH.to_owned()) }),
        };
    };
    let identity = file_identity(&file).map_err(fail("read"))?;
    let len = file.metadata().map_err(fail("read"))?.len();
    rustix::fs::flock(&file, FlockOperation::Unlock).map_err(|e| fail("unlock")(e.into()))?;

    let mut lines = LineReader::new((&file).take(len));
    // Where the log continues from, once its first line is read.
    let mut from: Option<ChainHead> = None;
    let mut held: Option<Vec<u8>> = None;
    let mut last_seq = 0u64;
    let mut reached_before = false;
    // Where the records that stay begin.
    let mut cut = 0u64;
    loop {
        match lines.next().map_err(fail("read"))? {
            // A torn final line was never acknowledged: it is not archived (the next append, or step 2, drops it).
            Line::End | Line::Torn => break,
            Line::TooLong => return Err(writer.broken(writer.walk.too_long())),
            Line::Complete => {}
        }
        let line = lines.line();
        if from.is_none() {
            from = Some(continued_from(line).map_err(|reason| ArchiveError::Broken {
                log: named.clone(),
                first_bad_seq: 1,
                reason,
            })?);
        }
        // A line that is no record fails its push (now, or in step 2); until then it follows the line before it.
        last_seq = crate::record::seq_of_line(line).unwrap_or(last_seq.saturating_add(1));
        match before {
            Some(before) if last_seq >= before => {
                reached_before = true;
                break;
            }
            Some(_) => {
                writer.push(line)?;
                cut = lines.offset() + line.len() as u64;
            }
            None => {
                // All but the last: each line is archived once another follows it.
                if let Some(previous) = held.replace(line.to_vec()) {
                    writer.push(&previous)?;
                    cut += previous.len() as u64;
                }
            }
        }
    }
    let from = from.unwrap_or_else(ChainHead::genesis);
    if let Some(before) = before.filter(|_| !reached_before) {
        let next = last_seq.max(from.seq).saturating_add(1);
        if before > next {
            return Err(ArchiveError::PastTheEnd { before, next });
        }
    }
    let Some(segment) = writer.install()? else {
        return Ok(ArchiveReport { archived: 0, file: None, from: (from.seq, from.hash) });
    };
    let archived = writer.records();
    let Some((last, last_hash)) = writer.last() else {
        return Err(ArchiveError::Io {
            path: segment.path,
            op: "write to",
            source: io::Error::other("no record"),
        });
    };
    drop(file);

    // Step 2: under the log's own lock, the rest of the log and the archive record become the log.
    let mut file = lock_log(log, identity).map_err(|e| match e {
        Locked::Failed(e) => ArchiveError::Audit(e),
        Locked::Replaced => ArchiveError::Replaced { log: named.clone(), segment: segment.path.clone() },
    })?;
    file.seek(io::SeekFrom::Start(cut)).map_err(fail("read"))?;
    let temp_path = beside(log, ".archiving");
    let temp = create_exclusive(&temp_path).map_err(fail("create a file beside"))?;
    let mut out = BufWriter::with_capacity(256 * 1024, temp);
    let mut walk = Walk::continuing(key, ChainHead { seq: last, hash: last_hash.clone() });
    let mut lines = LineReader::new(&file);
    let broken = |report: VerifyReport| match report {
        VerifyReport::Broken { first_bad_seq, reason } => {
            ArchiveError::Broken { log: named.clone(), first_bad_seq, reason }
        }
        VerifyReport::Ok { .. } => ArchiveError::Audit(AuditError::Io {
            path: log.to_owned(),
            op: "read",
            source: io::Error::other("a verified line was reported broken"),
        }),
    };
    let result = (|| {
        loop {
            match lines.next().map_err(fail("read"))? {
                Line::End | Line::Torn => break,
                Line::TooLong => return Err(broken(walk.too_long())),
                Line::Complete => {}
            }
            walk.step(lines.line()).map_err(broken)?;
            out.write_all(lines.line()).map_err(fail("write beside"))?;
        }
        let record = walk.head().seal(&archive_event(at, &segment.name()), key)?;
        out.write_all(record.to_line().as_bytes()).map_err(fail("write beside"))?;
        let temp = out.into_inner().map_err(|e| fail("write beside")(e.into_error()))?;
        temp.sync_all().map_err(fail("sync a file beside"))?;
        pause("live-written");
        std::fs::rename(&temp_path, log).map_err(fail("replace"))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&temp_path);
        return Err(e);
    }
    pause("live-renamed");
    sync_parent(log).map_err(fail("sync the directory of"))?;
    drop(file);
    Ok(ArchiveReport { archived, file: Some(segment.path), from: (last, last_hash) })
}

/// Where the log whose first line is `line` continues from: the record before it (nothing before `seq` 1).
fn continued_from(line: &[u8]) -> Result<ChainHead, BreakReason> {
    let record = parse_line(line.strip_suffix(b"\n").unwrap_or(line)).map_err(|problem| match problem {
        LineProblem::Malformed(detail) => BreakReason::Malformed { detail },
        LineProblem::NonCanonical => BreakReason::NonCanonical,
    })?;
    let (seq, hash) = record.follows();
    Ok(ChainHead { seq, hash: hash.to_owned() })
}

/// The device and inode of an open file.
fn file_identity(file: &File) -> io::Result<(u64, u64)> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// `.<name><suffix>` beside `path`.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}{suffix}"))
}

/// Why [`lock_log`] gave no file.
enum Locked {
    Failed(AuditError),
    /// The log at the path is no longer the file step 1 read.
    Replaced,
}

/// The log at `path` under its exclusive lock, which must be the file with `identity`.
fn lock_log(path: &Path, identity: (u64, u64)) -> Result<File, Locked> {
    let fail = |op| move |source| Locked::Failed(AuditError::Io { path: path.to_owned(), op, source });
    for _ in 0..REOPENS {
        let file = match open_regular(path) {
            Ok(Some(file)) => file,
            Ok(None) => {
                return Err(fail("open")(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")));
            }
            Err(Errno::NOENT) => return Err(Locked::Replaced),
            Err(e) => return Err(fail("open")(e.into())),
        };
        lock_within(&file, true, LOCK_TIMEOUT).map_err(fail("lock"))?;
        if !is_current(&file, path).map_err(fail("open"))? {
            continue;
        }
        return if file_identity(&file).map_err(fail("open"))? == identity {
            Ok(file)
        } else {
            Err(Locked::Replaced)
        };
    }
    Err(fail("open")(io::Error::other("it keeps being replaced")))
}
