//! The JSONL file sink: one `write` per record under an exclusive `flock`, then `fdatasync`.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use crate::record::{ChainHead, parse_line};
use crate::sink::AuditSink;
use crate::{AuditError, AuditEvent, AuditKey, AuditRecord};

/// How many bytes are read at a time when looking backwards for the start of the last line.
const TAIL_CHUNK: u64 = 8 * 1024;

/// The audit log file: appends records to a JSONL file, safely across threads and processes.
///
/// Each [`record`](AuditSink::record) opens the file (creating it with mode 0600 if missing, and syncing its
/// directory), takes an exclusive `flock`, reads only the tail of the file to find the last record's `seq` and
/// `hash`, truncates a torn final line left by a writer that crashed mid-write (that record was never
/// acknowledged), appends the new line with one `write`, and syncs the data before returning. The lock is released
/// when the file is closed. Every appender must go through this lock; anything else appending to the file breaks
/// the chain, which [`verify`](crate::verify) then reports.
///
/// The log's final path component must not be a symbolic link, and the log must be a regular file: a symlink
/// planted in its place would otherwise redirect appends to another file.
#[derive(Debug)]
pub struct JsonlAuditSink {
    path: PathBuf,
    key: Option<AuditKey>,
}

impl JsonlAuditSink {
    /// A SHA-256 chain in the file at `path`, created (mode 0600) if missing. The file is opened once here so that
    /// a misconfigured path is reported at once, not at the first record.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when the file cannot be opened or created.
    pub fn open(path: impl Into<PathBuf>) -> Result<JsonlAuditSink, AuditError> {
        let path = path.into();
        open_log(&path)?;
        Ok(JsonlAuditSink { path, key: None })
    }

    /// An HMAC-SHA256 chain under `key` in the file at `path`, created (mode 0600) if missing.
    ///
    /// # Errors
    ///
    /// [`AuditError::Io`] when the file cannot be opened or created.
    pub fn with_key(path: impl Into<PathBuf>, key: AuditKey) -> Result<JsonlAuditSink, AuditError> {
        let path = path.into();
        open_log(&path)?;
        Ok(JsonlAuditSink { path, key: Some(key) })
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io_error(&self, op: &'static str) -> impl FnOnce(io::Error) -> AuditError + '_ {
        move |source| AuditError::Io { path: self.path.clone(), op, source }
    }
}

impl AuditSink for JsonlAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        // A fresh open file description per append: `flock` locks belong to open file descriptions, so threads
        // sharing one descriptor would not exclude each other.
        let file = open_log(&self.path)?;
        lock(&file, FlockOperation::LockExclusive).map_err(self.io_error("lock"))?;
        let len = file.metadata().map_err(self.io_error("read"))?.len();
        let tail = read_tail(&file, len).map_err(self.io_error("read"))?;
        let head = match tail.last_line {
            None => ChainHead::genesis(),
            Some((offset, bytes)) => match parse_line(&bytes) {
                Ok(record) => ChainHead::of(&record),
                Err(problem) => {
                    return Err(AuditError::MalformedTail {
                        path: self.path.clone(),
                        offset,
                        detail: problem.to_string(),
                    });
                }
            },
        };
        let record = head.seal(event, self.key.as_ref())?;
        let line = record.to_line();
        if tail.complete_len < len {
            file.set_len(tail.complete_len).map_err(self.io_error("truncate the torn final line of"))?;
        }
        // One `write` of the whole line: a reader holding the lock never sees part of it, and a crash leaves at
        // most one torn line, which the next appender removes.
        let written = loop {
            match (&file).write(line.as_bytes()) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other,
            }
        };
        match written {
            Ok(n) if n == line.len() => {}
            Ok(n) => {
                // Best effort: a partial line left behind is a torn line, which the next appender removes.
                let _ = file.set_len(tail.complete_len);
                return Err(self.io_error("write to")(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("short write of {n} of {} bytes", line.len()),
                )));
            }
            Err(e) => {
                let _ = file.set_len(tail.complete_len);
                return Err(self.io_error("write to")(e));
            }
        }
        file.sync_data().map_err(self.io_error("sync"))?;
        Ok(record)
    }
}

/// What the end of the log holds.
struct Tail {
    /// The length of the file without a torn final line (the whole length when the file ends in `\n`).
    complete_len: u64,
    /// The last complete line, without its `\n`, and where it starts; `None` when there is none.
    last_line: Option<(u64, Vec<u8>)>,
}

/// Reads backwards from the end of the file, in chunks, only as far as the start of the last complete line.
fn read_tail(file: &File, len: u64) -> io::Result<Tail> {
    if len == 0 {
        return Ok(Tail { complete_len: 0, last_line: None });
    }
    let mut last = [0u8];
    file.read_exact_at(&mut last, len - 1)?;
    let complete_len = if last[0] == b'\n' { len } else { line_start(file, len)? };
    if complete_len == 0 {
        return Ok(Tail { complete_len, last_line: None });
    }
    let end = complete_len - 1; // the final `\n`
    let start = line_start(file, end)?;
    let line_len = usize::try_from(end - start)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the last line does not fit in memory"))?;
    let mut line = vec![0u8; line_len];
    file.read_exact_at(&mut line, start)?;
    Ok(Tail { complete_len, last_line: Some((start, line)) })
}

/// The position just after the last `\n` in the first `end` bytes of the file, or 0 when there is none.
fn line_start(file: &File, end: u64) -> io::Result<u64> {
    let mut buf = [0u8; TAIL_CHUNK as usize];
    let mut pos = end;
    while pos > 0 {
        let from = pos.saturating_sub(TAIL_CHUNK);
        let chunk = &mut buf[..(pos - from) as usize];
        file.read_exact_at(chunk, from)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(from + i as u64 + 1);
        }
        pos = from;
    }
    Ok(0)
}

/// Takes or releases a `flock`, retrying when a signal interrupts the wait.
pub(crate) fn lock(file: &File, operation: FlockOperation) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, operation) {
            Err(Errno::INTR) => {}
            other => return other.map_err(io::Error::from),
        }
    }
}

/// Opens the log for reading and appending without following a final symlink, creating it (0600) if missing.
fn open_log(path: &Path) -> Result<File, AuditError> {
    let fail = |op, source| AuditError::Io { path: path.to_owned(), op, source };
    let flags = OFlags::RDWR | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    // Open, or create exclusively so that only the creator syncs the directory; retry if another process
    // creates or removes the file in between.
    for _ in 0..8 {
        let file = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::NOENT) => {
                match rustix::fs::open(path, flags | OFlags::CREATE | OFlags::EXCL, Mode::RUSR | Mode::WUSR) {
                    Ok(fd) => {
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
fn sync_parent(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail_of(content: &[u8]) -> (u64, Option<(u64, Vec<u8>)>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, content).unwrap();
        let file = File::open(&path).unwrap();
        let tail = read_tail(&file, content.len() as u64).unwrap();
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
