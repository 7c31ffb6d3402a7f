//! The store's locks: `flock` on files in `<root>/.locks/`, one per scope root and one per bucket of entry IDs (the
//! order they are taken in is written down on [`MarkdownStore`]).

use std::os::fd::{AsFd, BorrowedFd};

use memory_entry::{StorageError, StorageErrorKind, StoreError};
use memory_fs::{
    LockFailure, LockGuard, MakeDirError, Miss, bucket_lock_name, lock_file, lock_name, make_dir,
};
use memory_id::MemoryId;
use rustix::io::Errno;

use crate::markdown::MarkdownStore;
use crate::path::{SYMLINK_ESCAPE, lower};

/// The directory under the root that holds the lock files.
pub(crate) const LOCK_DIR: &str = ".locks";
/// Per-entry locks are spread over this many lock files (by a stable hash of the ID), so that the lock directory
/// stays bounded however many IDs come and go; two entries that share a lock file only wait for each other.
const ENTRY_LOCK_BUCKETS: u64 = 4096;

impl MarkdownStore {
    fn lock_dir(&self) -> Result<BorrowedFd<'_>, StoreError> {
        if let Some(fd) = self.locks.get() {
            return Ok(fd.as_fd());
        }
        let error = |what: &str, errno: Errno| {
            StoreError::Storage(StorageError::about(
                StorageErrorKind::Io,
                None,
                format!(
                    "cannot {what} the lock directory `{LOCK_DIR}`: {}",
                    lower(&std::io::Error::from(errno))
                ),
            ))
        };
        let fd = match make_dir(&self.root, self.root.fd(), LOCK_DIR) {
            Ok(made) => made.into_fd(),
            Err(MakeDirError::Create(errno)) => return Err(error("create", errno)),
            Err(MakeDirError::Open(Miss::Symlink)) => {
                return Err(StoreError::Storage(StorageError::about(
                    StorageErrorKind::SymlinkEscape,
                    None,
                    format!("{SYMLINK_ESCAPE}: `{LOCK_DIR}` is a symbolic link"),
                )));
            }
            Err(MakeDirError::Open(Miss::Io(errno))) => return Err(error("open", errno)),
            Err(MakeDirError::Open(_)) => return Err(error("open", Errno::NOTDIR)),
            Err(MakeDirError::SetMode(errno)) => return Err(error("set the mode of", errno)),
        };
        let _ = self.locks.set(fd);
        match self.locks.get() {
            Some(fd) => Ok(fd.as_fd()),
            None => Err(error("open", Errno::NOENT)),
        }
    }

    fn lock(&self, id: &MemoryId, name: &str, exclusive: bool) -> Result<LockGuard, StoreError> {
        let dir = self.lock_dir()?;
        let rel = format!("{LOCK_DIR}/{name}");
        lock_file(&self.root, dir, name, exclusive, self.config.lock_timeout).map_err(|failure| match failure {
            LockFailure::Busy => StoreError::Storage(StorageError::new(
                StorageErrorKind::LockTimeout,
                Some(id),
                format!(
                    "the lock `{rel}` is busy: another process has held it for {} s (lockTimeout); try again, or \
                     find the process that holds it",
                    self.config.lock_timeout.as_secs_f64()
                ),
            )),
            LockFailure::Io(errno) => MarkdownStore::io_error(id, "lock", &rel, errno),
        })
    }

    /// The lock of the directory of records `dir` ([`MarkdownStore::lock_records`]): exclusive, waiting at most
    /// `lockTimeout`.
    pub(crate) fn lock_record_dir(&self, dir: &str) -> Result<LockGuard, StorageError> {
        let locks = self.lock_dir().map_err(|error| match error {
            StoreError::Storage(error) => error,
            other => StorageError::about(StorageErrorKind::Io, None, other.to_string()),
        })?;
        let name = lock_name("records", dir.as_bytes());
        lock_file(&self.root, locks, &name, true, self.config.lock_timeout).map_err(|failure| match failure {
            LockFailure::Busy => StorageError::about(
                StorageErrorKind::LockTimeout,
                None,
                format!(
                    "the lock of `{dir}` (`{LOCK_DIR}/{name}`) is busy: another process has held it for {} s \
                     (lockTimeout); try again, or find the process that holds it",
                    self.config.lock_timeout.as_secs_f64()
                ),
            ),
            LockFailure::Io(errno) => StorageError::about(
                StorageErrorKind::Io,
                None,
                format!("cannot lock `{LOCK_DIR}/{name}`: {}", lower(&std::io::Error::from(errno))),
            ),
        })
    }

    pub(crate) fn lock_scope_root(&self, id: &MemoryId, exclusive: bool) -> Result<LockGuard, StoreError> {
        self.lock(id, &lock_name("scope", id.scope_root().as_str().as_bytes()), exclusive)
    }

    pub(crate) fn lock_entry(&self, id: &MemoryId) -> Result<LockGuard, StoreError> {
        self.lock(id, &bucket_lock_name("entry", id.as_str().as_bytes(), ENTRY_LOCK_BUCKETS), true)
    }
}
