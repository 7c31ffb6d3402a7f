//! The one error type of this crate: an audit record that could not be made durable.

use std::io;
use std::path::PathBuf;

/// Why an event could not be recorded, a log could not be read, or a key could not be loaded.
///
/// A service must treat every variant the same way: the audit is unavailable, so the operation fails closed and the
/// store is not touched. Messages name the log (or key) file so that an operator knows where to look.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A system call on the log failed: opening, locking, reading, writing, truncating or syncing it.
    #[error("cannot {op} audit log `{}`: {source}", path.display())]
    Io {
        /// The log file.
        path: PathBuf,
        /// What was being done, as a verb phrase: `open`, `lock`, `read`, `write to`, `sync`, ….
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The last complete line of the log is not a record, so the chain cannot be continued.
    #[error(
        "audit log `{}` ends with a malformed record at byte {offset}: {detail}; run `alp audit verify`",
        path.display()
    )]
    MalformedTail {
        /// The log file.
        path: PathBuf,
        /// Where the last line starts, in bytes from the start of the file.
        offset: u64,
        /// What is wrong with it.
        detail: String,
    },
    /// A line of the log is longer than [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES), which no sink writes: it is not
    /// read.
    #[error(
        "audit log `{}` has a line longer than {} bytes at byte {offset}; run `alp audit verify`",
        path.display(),
        crate::MAX_LINE_BYTES
    )]
    LineTooLong {
        /// The log file.
        path: PathBuf,
        /// Where the line starts (or, at the end of the log, where it ends), in bytes from the start of the file.
        offset: u64,
    },
    /// The event cannot be written as a record: an `allowed` outcome with a code, a `denied` or `error` outcome
    /// without one, a timestamp outside the years 0000–9999, `grant` or `shown` where they do not belong, or a
    /// record longer than a line may be.
    #[error("cannot audit event: {detail}")]
    InvalidEvent {
        /// What is wrong with it.
        detail: String,
    },
    /// The key file could not be read.
    #[error("cannot read audit key file `{}`: {source}", path.display())]
    KeyUnreadable {
        /// The key file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The key file is empty; an empty HMAC key would protect nothing.
    #[error("audit key file `{}` is empty", path.display())]
    EmptyKey {
        /// The key file.
        path: PathBuf,
    },
}

impl AuditError {
    /// A copy of this error for each other caller of a failed group commit: the same variant and message (an
    /// operating system error keeps its code).
    pub(crate) fn duplicate(&self) -> AuditError {
        let copy_io = |source: &io::Error| match source.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(source.kind(), source.to_string()),
        };
        match self {
            AuditError::Io { path, op, source } => {
                AuditError::Io { path: path.clone(), op, source: copy_io(source) }
            }
            AuditError::MalformedTail { path, offset, detail } => {
                AuditError::MalformedTail { path: path.clone(), offset: *offset, detail: detail.clone() }
            }
            AuditError::LineTooLong { path, offset } => {
                AuditError::LineTooLong { path: path.clone(), offset: *offset }
            }
            AuditError::InvalidEvent { detail } => AuditError::InvalidEvent { detail: detail.clone() },
            AuditError::KeyUnreadable { path, source } => {
                AuditError::KeyUnreadable { path: path.clone(), source: copy_io(source) }
            }
            AuditError::EmptyKey { path } => AuditError::EmptyKey { path: path.clone() },
        }
    }

    /// Whether this is the key file failing to open or read for a reason of the system's other than its absence
    /// (too many open files, a permission error, an I/O error): a storage failure, not a bad key. A missing, empty
    /// or oversized key file is not.
    ///
    /// ```
    /// use std::io;
    /// use memory_audit::AuditError;
    ///
    /// let key = |source| AuditError::KeyUnreadable { path: "/etc/alp/key".into(), source };
    /// assert!(key(io::Error::from_raw_os_error(24)).is_io()); // EMFILE
    /// assert!(!key(io::Error::from(io::ErrorKind::NotFound)).is_io());
    /// assert!(!key(io::Error::new(io::ErrorKind::InvalidData, "the key is larger than 65536 bytes")).is_io());
    /// ```
    pub fn is_io(&self) -> bool {
        match self {
            AuditError::KeyUnreadable { source, .. } => {
                source.raw_os_error().is_some() && source.kind() != io::ErrorKind::NotFound
            }
            _ => false,
        }
    }
}
