//! Small records kept beside the entries, one file per record in a directory of the root (`<root>/tokens/<id>.json`
//! holds a bearer token's record): read, written and listed with the same guarantees as entry files. Every name
//! is resolved from the held root handle without following a symlink, only a regular file is ever read, and a
//! write goes through a 0600 temporary file, `fsync`, an atomic rename over the old file and a directory `fsync`,
//! so a reader sees the old record or the new one, never a mix, and a crash loses at most the write in flight.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};

use memory_entry::{StorageError, StorageErrorKind};
use memory_fs::{
    Install, MakeDirError, Miss, Opened, TEMP_PREFIX, WriteError, make_dir, open_regular, read_names,
    write_atomic,
};
use rustix::fs::FileType;
use rustix::io::Errno;

use crate::MarkdownStore;
use crate::path::{SYMLINK_ESCAPE, lower};

/// The lock of one directory of records, held from [`MarkdownStore::lock_records`] until it is dropped.
#[derive(Debug)]
pub struct RecordsLock {
    _guard: memory_fs::LockGuard,
}

/// The largest record file read, in bytes: records are a few hundred bytes; anything larger is not one.
pub const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// A directory or file name of a record: 1 to 64 of `a-z 0-9 . _ -`, not starting with a dot.
fn check_name(what: &str, name: &str) -> Result<(), StorageError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StorageError::about(
            StorageErrorKind::Corrupt,
            None,
            format!("`{}` cannot name a record {what}", name.escape_debug()),
        ))
    }
}

fn io_error(what: &str, rel: &str, errno: Errno) -> StorageError {
    StorageError::about(
        StorageErrorKind::Io,
        None,
        format!("cannot {what} `{rel}`: {}", lower(&std::io::Error::from(errno))),
    )
}

fn symlink_error(rel: &str) -> StorageError {
    StorageError::about(
        StorageErrorKind::SymlinkEscape,
        None,
        format!("{SYMLINK_ESCAPE}: `{rel}` is a symbolic link"),
    )
}

/// The error for `<root>/<dir>` that could not be opened as a directory (`NotFound` is the caller's to decide).
fn dir_miss(dir: &str, miss: Miss) -> StorageError {
    match miss {
        Miss::Symlink | Miss::Escape => symlink_error(dir),
        Miss::NotDirectory => StorageError::about(
            StorageErrorKind::Corrupt,
            None,
            format!("`{dir}` in the root is not a directory"),
        ),
        Miss::NotFound => io_error("open", dir, Errno::NOENT),
        Miss::Io(errno) => io_error("open", dir, errno),
    }
}

impl MarkdownStore {
    /// Opens `<root>/<dir>`; `None` when it does not exist.
    fn record_dir(&self, dir: &str) -> Result<Option<OwnedFd>, StorageError> {
        check_name("directory", dir)?;
        match self.root.step_dir(self.root.fd(), dir) {
            Ok(fd) => Ok(Some(fd)),
            Err(Miss::NotFound) => Ok(None),
            Err(miss) => Err(dir_miss(dir, miss)),
        }
    }

    /// Opens `<root>/<dir>`, made 0700 ([`make_dir`]) when missing.
    fn make_record_dir(&self, dir: &str) -> Result<OwnedFd, StorageError> {
        check_name("directory", dir)?;
        match make_dir(&self.root, self.root.fd(), dir) {
            Ok(made) => Ok(made.into_fd()),
            Err(MakeDirError::Create(errno)) => Err(io_error("create", dir, errno)),
            Err(MakeDirError::Open(miss)) => Err(dir_miss(dir, miss)),
            Err(MakeDirError::SetMode(errno)) => Err(io_error("set the mode of", dir, errno)),
        }
    }

    /// The bytes of the record `<root>/<dir>/<name>`, or `None` when there is none. Names are `a-z 0-9 . _ -`
    /// and start with no dot.
    ///
    /// # Errors
    ///
    /// [`StorageError`] for a bad name, a symlink, something that is not a regular file, a file over
    /// [`MAX_RECORD_BYTES`], or an I/O failure.
    pub fn read_record(&self, dir: &str, name: &str) -> Result<Option<Vec<u8>>, StorageError> {
        check_name("file", name)?;
        let Some(dir_fd) = self.record_dir(dir)? else { return Ok(None) };
        let rel = format!("{dir}/{name}");
        let (fd, size) = match open_regular(&self.root, dir_fd.as_fd(), name) {
            Ok(Opened::Regular { fd, stat }) => (fd, u64::try_from(stat.st_size).unwrap_or(0)),
            Ok(Opened::Symlink) | Err(Errno::LOOP) => return Err(symlink_error(&rel)),
            Ok(Opened::Directory | Opened::Special) => {
                return Err(StorageError::about(
                    StorageErrorKind::Corrupt,
                    None,
                    format!("`{rel}` is not a regular file"),
                ));
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(errno) => return Err(io_error("open", &rel, errno)),
        };
        let mut bytes = Vec::new();
        let whole = memory_fs::read_bounded(File::from(fd), size, MAX_RECORD_BYTES, &mut bytes)
            .map_err(|e| io_error("read", &rel, crate::walk::errno(e)))?;
        if !whole {
            return Err(StorageError::about(
                StorageErrorKind::Corrupt,
                None,
                format!("`{rel}` is larger than {MAX_RECORD_BYTES} bytes"),
            ));
        }
        Ok(Some(bytes))
    }

    /// Writes the record `<root>/<dir>/<name>` (0600; the directory is created 0700 when missing), replacing any
    /// earlier one atomically and durably.
    ///
    /// # Errors
    ///
    /// [`StorageError`] for a bad name, a symlink in the way, or an I/O failure; the old record is then intact.
    pub fn write_record(&self, dir: &str, name: &str, bytes: &[u8]) -> Result<(), StorageError> {
        check_name("file", name)?;
        let dir_fd = self.make_record_dir(dir)?;
        let dir_fd = dir_fd.as_fd();
        let rel = format!("{dir}/{name}");
        write_atomic(&self.root, dir_fd, name, bytes, Install::Replace).map_err(|error| match error {
            WriteError::CreateTemp(errno) => io_error("create a temporary file in", dir, errno),
            WriteError::Write(errno) => io_error("write", &rel, errno),
            WriteError::Exists => io_error("replace", &rel, Errno::EXIST),
            WriteError::Install(errno) => io_error("replace", &rel, errno),
            WriteError::SyncDir(errno) => io_error("sync", dir, errno),
        })
    }

    /// Locks the directory of records `dir` against every other holder of this lock, in this process or another
    /// (`flock` on a file of `<root>/.locks/`), waiting at most the store's `lockTimeout`: for a change that reads
    /// records and then writes one, and must not interleave with another such change (a token's name is checked
    /// free, then the token that takes it is written). Reads and writes of single records do not take it.
    ///
    /// # Errors
    ///
    /// [`StorageError`] of kind `LockTimeout` when another holder kept it for `lockTimeout`, else for a bad name or
    /// an I/O failure.
    pub fn lock_records(&self, dir: &str) -> Result<RecordsLock, StorageError> {
        check_name("directory", dir)?;
        Ok(RecordsLock { _guard: self.lock_record_dir(dir)? })
    }

    /// The names of the regular files in `<root>/<dir>` that could name a record, sorted; empty when the
    /// directory does not exist. Temporary files of an interrupted write are left out.
    ///
    /// # Errors
    ///
    /// [`StorageError`] for a symlink or an I/O failure.
    pub fn record_names(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        let Some(dir_fd) = self.record_dir(dir)? else { return Ok(Vec::new()) };
        let mut names: Vec<String> = read_names(dir_fd.as_fd())
            .map_err(|errno| io_error("list", dir, errno))?
            .into_iter()
            .filter(|(name, kind)| {
                *kind == FileType::RegularFile
                    && !name.starts_with(TEMP_PREFIX)
                    && check_name("file", name).is_ok()
            })
            .map(|(name, _)| name)
            .collect();
        names.sort_unstable();
        Ok(names)
    }
}
