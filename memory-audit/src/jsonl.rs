//! The JSONL file sink: one `write` per group of concurrent records under an exclusive `flock`, then one
//! `fdatasync`.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memory_fs::FILE_MODE;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::group::{AppendStats, Batch, GroupCommit, GroupOutcome};
use crate::record::{ChainHead, parse_line};
use crate::sink::AuditSink;
use crate::{AuditError, AuditEvent, AuditKey, AuditRecord, MAX_LINE_BYTES};

/// How many bytes are read at a time when looking backwards for the start of the last line.
const TAIL_CHUNK: u64 = 8 * 1024;

/// The audit log file: appends records to a JSONL file, safely across threads and processes.
///
/// Each [`record`](AuditSink::record) opens the file (creating it with mode 0600 if missing, and syncing its
/// directory), takes an exclusive `flock`, reads only the tail of the file to find the last record's `seq` and
/// `hash`, truncates a torn final line left by a writer that crashed mid-write (that record was never
/// acknowledged), appends the new line with one `write`, and syncs the data before returning. The lock is released
/// when the file is closed.
///
/// Concurrent appends through one sink are committed together (group commit, see [`GroupCommit`]): while one
/// thread appends, the records of the threads that call meanwhile queue up, and the next of them appends them all
/// under one lock, in one `write`, made durable by one `fdatasync`. Each call still returns only once its own record
/// is synced, and a failed write or sync fails every call of that group; the chain is the same as with one call at
/// a time, and other processes appending under the lock between two groups keep it intact. [`stats`](Self::stats)
/// counts records and syncs. Every appender must go through this lock; anything else appending to the file breaks
/// the chain, which [`verify`](crate::verify) then reports.
///
/// The log's final path component must not be a symbolic link, and the log must be a regular file: a symlink
/// planted in its place would otherwise redirect appends to another file.
pub struct JsonlAuditSink {
    path: PathBuf,
    /// What errors name the log as ([`named`](Self::named)): the path unless told otherwise.
    shown: PathBuf,
    key: Option<AuditKey>,
    lock_timeout: Duration,
    group: GroupCommit,
    records: AtomicU64,
    syncs: AtomicU64,
    /// Fails a step of the append on demand, for the tests of failing groups.
    #[cfg(test)]
    fault: Box<FaultHook>,
}

/// What a test runs at each step of an append: an error fails the append there.
#[cfg(test)]
type FaultHook = dyn Fn(Fault, &GroupCommit) -> io::Result<()> + Send + Sync;

/// A step of an append where a test can make it fail.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The lock is held; the group's events are not yet taken.
    Locked,
    /// Instead of the write.
    Write,
    /// Instead of the sync.
    Sync,
}

impl std::fmt::Debug for JsonlAuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlAuditSink")
            .field("path", &self.path)
            .field("key", &self.key)
            .field("lock_timeout", &self.lock_timeout)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// How long an append waits for the log's lock unless told otherwise.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

impl JsonlAuditSink {
    /// A SHA-256 chain in the file at `path`, created (mode 0600) if missing. The file is opened once here so that
    /// a misconfigured path is reported at once, not at the first record.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when the file cannot be opened or created.
    pub fn open(path: impl Into<PathBuf>) -> Result<JsonlAuditSink, AuditError> {
        let path = path.into();
        JsonlAuditSink::new(path, None)
    }

    /// An HMAC-SHA256 chain under `key` in the file at `path`, created (mode 0600) if missing.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when the file cannot be opened or created.
    pub fn with_key(path: impl Into<PathBuf>, key: AuditKey) -> Result<JsonlAuditSink, AuditError> {
        let path = path.into();
        JsonlAuditSink::new(path, Some(key))
    }

    fn new(path: PathBuf, key: Option<AuditKey>) -> Result<JsonlAuditSink, AuditError> {
        open_log(&path)?;
        Ok(JsonlAuditSink {
            shown: path.clone(),
            path,
            key,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            group: GroupCommit::new(),
            records: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            #[cfg(test)]
            fault: Box::new(|_, _| Ok(())),
        })
    }

    /// Waits at most `timeout` for the log's lock (10 s by default); a log locked longer by someone else makes
    /// [`record`](AuditSink::record) fail with [`AuditError::Io`] (`lock`, `TimedOut`), so a call fails closed
    /// instead of hanging.
    #[must_use]
    pub fn with_lock_timeout(mut self, timeout: Duration) -> JsonlAuditSink {
        self.lock_timeout = timeout;
        self
    }

    /// Errors of appends name the log as `shown` instead of its path: a server whose errors reach remote callers
    /// names it relative to its root (`audit.jsonl`), never by the absolute path of the server's files.
    #[must_use]
    pub fn named(mut self, shown: impl Into<PathBuf>) -> JsonlAuditSink {
        self.shown = shown.into();
        self
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io_error(&self, op: &'static str) -> impl FnOnce(io::Error) -> AuditError + '_ {
        move |source| AuditError::Io { path: self.shown.clone(), op, source }
    }
}

impl JsonlAuditSink {
    /// Opens the log for appending, takes its lock and reads the head of the chain: everything an append does
    /// before it writes. A log replaced while the lock was awaited (an archive renames a new log over it) is opened
    /// again: an append to the old file, which no longer has the log's name, would be lost.
    fn open_locked(&self) -> Result<(File, Tail, ChainHead, u64), AuditError> {
        for _ in 0..REOPENS {
            // A fresh open file description per append: `flock` locks belong to open file descriptions, so threads
            // sharing one descriptor would not exclude each other.
            let file = open_log(&self.path).map_err(|e| match e {
                AuditError::Io { op, source, .. } => AuditError::Io { path: self.shown.clone(), op, source },
                other => other,
            })?;
            lock_within(&file, true, self.lock_timeout).map_err(self.io_error("lock"))?;
            if !is_current(&file, &self.path).map_err(self.io_error("open"))? {
                continue;
            }
            let len = file.metadata().map_err(self.io_error("read"))?.len();
            let tail = read_tail(&file, len, &self.shown)?;
            let head = match &tail.last_line {
                None => ChainHead::genesis(),
                Some((offset, bytes)) => match parse_line(bytes) {
                    Ok(record) => ChainHead::of(&record),
                    Err(problem) => {
                        return Err(AuditError::MalformedTail {
                            path: self.shown.clone(),
                            offset: *offset,
                            detail: problem.to_string(),
                        });
                    }
                },
            };
            return Ok((file, tail, head, len));
        }
        Err(self.io_error("open")(io::Error::other("it keeps being replaced")))
    }
}

impl AuditSink for JsonlAuditSink {
    /// Opens the log for appending (an immutable or read-only log fails here), takes its lock within the timeout
    /// and reads the last record, then releases it: everything [`record`](AuditSink::record) does but the write.
    fn check_ready(&self) -> Result<(), AuditError> {
        self.open_locked().map(|_| ())
    }

    /// Appends `event` with every other record being appended through this sink at the same time (group commit):
    /// see [`JsonlAuditSink`].
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        self.group.submit(event, |batch| self.append_group(batch))
    }
}

impl JsonlAuditSink {
    /// How many records this sink has appended, and with how many syncs: fewer syncs than records when appends
    /// were grouped. Counts only this sink's appends, not other processes'.
    pub fn stats(&self) -> AppendStats {
        AppendStats {
            records: self.records.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
        }
    }

    /// A group's append, by its leader: lock, take the queued events, seal them after the last record, write them
    /// in one `write`, sync once.
    fn append_group(&self, batch: &mut Batch<'_>) -> GroupOutcome {
        let (file, tail, mut head, len) = self.open_locked()?;
        #[cfg(test)]
        (self.fault)(Fault::Locked, &self.group).map_err(self.io_error("lock"))?;
        let events = batch.take();
        let mut results = Vec::with_capacity(events.len());
        let mut lines = String::new();
        let mut sealed = 0u64;
        for event in &events {
            // An event that cannot be a record fails alone; the chain goes on from the previous record.
            let result = head.seal(event, self.key.as_ref());
            if let Ok(record) = &result {
                lines.push_str(&record.to_line());
                head = ChainHead::of(record);
                sealed += 1;
            }
            results.push(result);
        }
        if sealed == 0 {
            return Ok(results);
        }
        if tail.complete_len < len {
            file.set_len(tail.complete_len).map_err(self.io_error("truncate the torn final line of"))?;
        }
        // One `write` of all the lines: a reader holding the lock never sees part of them, and a crash leaves at
        // most one torn line, which the next appender removes (the complete lines before it were never
        // acknowledged, like a record written but not yet synced).
        let written = loop {
            #[cfg(test)]
            if let Err(e) = (self.fault)(Fault::Write, &self.group) {
                break Err(e);
            }
            match (&file).write(lines.as_bytes()) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other,
            }
        };
        match written {
            Ok(n) if n == lines.len() => {}
            Ok(n) => {
                // Best effort: a partial line left behind is a torn line, which the next appender removes.
                let _ = file.set_len(tail.complete_len);
                return Err(self.io_error("write to")(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("short write of {n} of {} bytes", lines.len()),
                )));
            }
            Err(e) => {
                let _ = file.set_len(tail.complete_len);
                return Err(self.io_error("write to")(e));
            }
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        #[cfg(test)]
        (self.fault)(Fault::Sync, &self.group).map_err(self.io_error("sync"))?;
        file.sync_data().map_err(self.io_error("sync"))?;
        self.records.fetch_add(sealed, Ordering::Relaxed);
        Ok(results)
    }
}

/// What the end of the log holds.
pub(crate) struct Tail {
    /// The length of the file without a torn final line (the whole length when the file ends in `\n`).
    pub(crate) complete_len: u64,
    /// The last complete line, without its `\n`, and where it starts; `None` when there is none.
    pub(crate) last_line: Option<(u64, Vec<u8>)>,
}

/// Reads backwards from the end of the file, in chunks, only as far as the start of the last complete line. Errors
/// name the log `shown`.
pub(crate) fn read_tail(file: &File, len: u64, shown: &Path) -> Result<Tail, AuditError> {
    let fail = |source| AuditError::Io { path: shown.to_owned(), op: "read", source };
    let too_long = |offset| AuditError::LineTooLong { path: shown.to_owned(), offset };
    if len == 0 {
        return Ok(Tail { complete_len: 0, last_line: None });
    }
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1).map_err(fail)?;
    let complete_len = if last[0] == b'\n' {
        len
    } else {
        // A torn final line is one line at most (its `\n` unwritten); the `\n` before it is looked at too.
        line_start(file, len, MAX_LINE_BYTES as u64 + 1).map_err(fail)?.ok_or_else(|| too_long(len))?
    };
    if complete_len == 0 {
        return Ok(Tail { complete_len, last_line: None });
    }
    let end = complete_len - 1; // the final `\n`
    let start =
        line_start(file, end, MAX_LINE_BYTES as u64 + 1).map_err(fail)?.ok_or_else(|| too_long(end))?;
    // At most MAX_LINE_BYTES, which fits in memory.
    let mut line = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut line, start).map_err(fail)?;
    Ok(Tail { complete_len, last_line: Some((start, line)) })
}

/// The position just after the last `\n` in the first `end` bytes of the file (0 when there is none), looking back
/// at most `within` bytes; `None` when those hold no `\n` and do not reach the start of the file.
fn line_start(file: &File, end: u64, within: u64) -> io::Result<Option<u64>> {
    let mut buf = [0u8; TAIL_CHUNK as usize];
    let mut pos = end;
    let floor = end.saturating_sub(within);
    while pos > floor {
        let from = pos.saturating_sub(TAIL_CHUNK).max(floor);
        let chunk = &mut buf[..(pos - from) as usize];
        file.read_exact_at(chunk, from)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(from + i as u64 + 1));
        }
        pos = from;
    }
    Ok((floor == 0).then_some(0))
}

/// How many times an open is tried again when the log was replaced (by an archive) while its lock was awaited.
pub(crate) const REOPENS: usize = 16;

/// Whether `file` is the file now at `path` (same device and inode, the final component not followed): an archive
/// renames a new log over the old one, and whoever waited for the old one's lock must open the new one.
pub(crate) fn is_current(file: &File, path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt as _;
    let open = file.metadata()?;
    match std::fs::symlink_metadata(path) {
        Ok(named) => Ok(named.dev() == open.dev() && named.ino() == open.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Takes a `flock` (exclusive or shared), waiting at most `timeout` (`memory_fs::flock_within`). A lock held
/// longer by someone else is `TimedOut`.
pub(crate) fn lock_within(file: &File, exclusive: bool, timeout: Duration) -> io::Result<()> {
    use std::os::fd::AsFd as _;
    memory_fs::flock_within(file.as_fd(), exclusive, timeout).map_err(|failure| match failure {
        memory_fs::LockFailure::Busy => io::Error::new(
            io::ErrorKind::TimedOut,
            format!("another process has held its lock for {} s", timeout.as_secs_f64()),
        ),
        memory_fs::LockFailure::Io(errno) => errno.into(),
    })
}

/// Opens the log for reading and appending without following a final symlink, creating it (0600) if missing.
pub(crate) fn open_log(path: &Path) -> Result<File, AuditError> {
    let fail = |op, source| AuditError::Io { path: path.to_owned(), op, source };
    let flags = OFlags::RDWR | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    // Open, or create exclusively so that only the creator syncs the directory; retry if another process
    // creates or removes the file in between.
    for _ in 0..8 {
        let file = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::NOENT) => {
                match rustix::fs::open(path, flags | OFlags::CREATE | OFlags::EXCL, FILE_MODE) {
                    Ok(fd) => {
                        // Exactly FILE_MODE: the umask narrows what `open` creates (0400 under 0277, which its
                        // owner could no longer append to once reopened).
                        rustix::fs::fchmod(&fd, FILE_MODE).map_err(|e| fail("set the mode of", e.into()))?;
                        sync_parent(path).map_err(|e| fail("sync the directory of", e))?;
                        File::from(fd)
                    }
                    Err(Errno::EXIST) => continue,
                    Err(e) => return Err(fail("create", e.into())),
                }
            }
            Err(e) => return Err(fail("open", e.into())),
        };
        let meta = file.metadata().map_err(|e| fail("open", e))?;
        if !meta.is_file() {
            return Err(fail("open", io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")));
        }
        return Ok(file);
    }
    Err(fail("open", io::Error::other("it keeps appearing and disappearing")))
}

/// Syncs the directory holding `path`, so that a newly created log survives a crash.
pub(crate) fn sync_parent(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;

    use super::*;
    use crate::{AuditOperation, Outcome};

    const CALLERS: usize = 16;

    const CHILD_LOG: &str = "MEMORY_AUDIT_CREATE_LOG_IN";

    /// Not a test of its own: creates a log in the directory the parent test names, under the umask it was started
    /// with, and does nothing unless started by that test.
    #[test]
    fn create_log_child() {
        let Ok(dir) = std::env::var(CHILD_LOG) else { return };
        let sink = JsonlAuditSink::open(Path::new(&dir).join("audit.jsonl")).unwrap();
        sink.record(&event(0)).unwrap();
    }

    #[test]
    fn a_created_log_is_0600_whatever_the_umask() {
        use std::os::unix::fs::PermissionsExt as _;
        for umask in ["0277", "0077", "0022", "0"] {
            let tmp = tempfile::tempdir().unwrap();
            // The umask is the process's: set in a child, so that no other test of this binary runs under it.
            let status = std::process::Command::new("sh")
                .args([
                    "-c",
                    "umask \"$1\" && exec \"$2\" --exact jsonl::tests::create_log_child --test-threads=1",
                    "sh",
                ])
                .arg(umask)
                .arg(std::env::current_exe().unwrap())
                .env(CHILD_LOG, tmp.path())
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "umask {umask}");
            let log = tmp.path().join("audit.jsonl");
            let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o600, "umask {umask}");
            // And the owner can append to it again.
            JsonlAuditSink::open(&log).unwrap().record(&event(1)).unwrap();
        }
    }

    fn event(caller: usize) -> AuditEvent {
        AuditEvent {
            timestamp: time::macros::datetime!(2026-11-29 22:33:13.123 UTC),
            actor: format!("caller-{caller}"),
            operation: AuditOperation::Get,
            door: None,
            id: format!("shared:note:{caller}"),
            outcome: Outcome::Allowed,
            code: None,
            grant: None,
            shown: Vec::new(),
            via: None,
        }
    }

    /// A sink whose first group waits, lock held, until all `CALLERS` records are queued, and then fails at
    /// `fail` (if any): the first group holds every caller's record.
    fn held_sink(path: &Path, fail: Option<Fault>) -> JsonlAuditSink {
        let first = AtomicBool::new(true);
        let mut sink = JsonlAuditSink::open(path).unwrap();
        sink.fault = Box::new(move |at, group| {
            if at == Fault::Locked && first.swap(false, Ordering::SeqCst) {
                let start = Instant::now();
                while group.queued() < CALLERS && start.elapsed() < Duration::from_secs(20) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                assert_eq!(group.queued(), CALLERS, "every caller queued behind the first group's lock");
            }
            match fail {
                Some(step) if step == at => Err(io::Error::from_raw_os_error(5)), // EIO
                _ => Ok(()),
            }
        });
        sink
    }

    fn record_from_every_caller(sink: &Arc<JsonlAuditSink>) -> Vec<Result<AuditRecord, AuditError>> {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..CALLERS)
                .map(|caller| {
                    let sink = Arc::clone(sink);
                    scope.spawn(move || sink.record(&event(caller)))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    /// A sink told to name its log `audit.jsonl` never names the absolute path in an append's error: not for a log
    /// that cannot be opened, nor for one whose last line is not a record.
    #[test]
    fn a_named_sink_names_its_log_as_told_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let sink = JsonlAuditSink::open(&path).unwrap().named("audit.jsonl");
        let absolute = dir.path().to_str().unwrap();
        std::fs::write(&path, "not a record\n").unwrap();
        let malformed = sink.record(&event(1)).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let unopenable = sink.record(&event(2)).unwrap_err().to_string();
        for error in [malformed, unopenable] {
            assert!(error.contains("audit log `audit.jsonl`") && !error.contains(absolute), "{error}");
        }
        // Unnamed, the path is the name (the operator's own commands).
        let unnamed = JsonlAuditSink::open(dir.path().join("other.jsonl")).unwrap();
        std::fs::write(unnamed.path(), "not a record\n").unwrap();
        assert!(unnamed.record(&event(3)).unwrap_err().to_string().contains(absolute));
    }

    #[test]
    fn callers_queued_behind_one_lock_share_one_write_and_one_sync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let sink = Arc::new(held_sink(&path, None));
        let results = record_from_every_caller(&sink);
        assert_eq!(sink.stats(), AppendStats { records: CALLERS as u64, syncs: 1 });
        let mut seqs: Vec<u64> = results.into_iter().map(|r| r.unwrap().seq()).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=CALLERS as u64).collect::<Vec<_>>());
        assert!(matches!(
            crate::verify(&path, None).unwrap(),
            crate::VerifyReport::Ok { records, .. } if records == CALLERS as u64
        ));
    }

    /// A failed write or sync fails every caller of the group, and none is acknowledged; the next group goes on
    /// from the last durable record.
    #[test]
    fn a_failed_write_or_sync_fails_every_caller_of_the_group() {
        for (step, op) in [(Fault::Write, "write to"), (Fault::Sync, "sync"), (Fault::Locked, "lock")] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.jsonl");
            let before = JsonlAuditSink::open(&path).unwrap().record(&event(99)).unwrap();
            let sink = Arc::new(held_sink(&path, Some(step)));
            let results = record_from_every_caller(&sink);
            assert_eq!(results.len(), CALLERS);
            for result in results {
                match result {
                    Err(AuditError::Io { op: got, source, .. }) => {
                        assert_eq!((got, source.raw_os_error()), (op, Some(5)), "{step:?}");
                    }
                    other => panic!("a caller of the failed group got {other:?} ({step:?})"),
                }
            }
            assert_eq!(sink.stats().records, 0, "{step:?}: nothing acknowledged");
            let log = std::fs::read_to_string(&path).unwrap();
            if step != Fault::Sync {
                assert_eq!(log, before.to_line(), "{step:?}: nothing appended");
            }
            // The sink stays usable; the chain goes on from what is in the file.
            let next = JsonlAuditSink::open(&path).unwrap().record(&event(100)).unwrap();
            let expected = if step == Fault::Sync { CALLERS as u64 + 2 } else { 2 };
            assert_eq!(next.seq(), expected, "{step:?}");
            assert!(matches!(crate::verify(&path, None).unwrap(), crate::VerifyReport::Ok { .. }));
        }
    }

    fn tail_of(content: &[u8]) -> (u64, Option<(u64, Vec<u8>)>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, content).unwrap();
        let file = File::open(&path).unwrap();
        let tail = read_tail(&file, content.len() as u64, &path).unwrap();
        (tail.complete_len, tail.last_line)
    }

    #[test]
    fn tail_is_found_across_chunks() {
        let long = vec![b'x'; 3 * TAIL_CHUNK as usize + 17];
        let mut content = b"first\n".to_vec();
        content.extend_from_slice(&long);
        content.push(b'\n');
        assert_eq!(tail_of(&content), (content.len() as u64, Some((6, long.clone()))));

        let mut torn = content.clone();
        torn.extend_from_slice(&long[..TAIL_CHUNK as usize * 2]);
        assert_eq!(tail_of(&torn), (content.len() as u64, Some((6, long))));
    }

    #[test]
    fn tail_edge_cases() {
        assert_eq!(tail_of(b""), (0, None));
        assert_eq!(tail_of(b"torn"), (0, None));
        assert_eq!(tail_of(b"a\n"), (2, Some((0, b"a".to_vec()))));
        assert_eq!(tail_of(b"a\nb\ntorn"), (4, Some((2, b"b".to_vec()))));
        assert_eq!(tail_of(b"a\n\n"), (3, Some((2, Vec::new()))));
    }
}
