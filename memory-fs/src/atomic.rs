//! The atomic durable write, its temporary files, and the leftover-link rule.

use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

#[cfg(any(test, feature = "testkit"))]
use crate::rename::link_then_unlink;
use crate::rename::{Fallback, rename_noreplace, rename_replace};
use crate::root::{DIR_FLAGS, retry};
use crate::{FILE_MODE, RootHandle, fresh_name, read_names};

/// Temporary files start with this: a dot, and a `:` (which no segment of a memory ID holds), so a temporary name
/// never clashes with an entry's file or directory, never ends in `.md`, and embeds nothing of the target's name.
pub const TEMP_PREFIX: &str = ".tmp:";

/// Creates a 0600 temporary file in `dir` (below `root`) with `O_CREAT | O_EXCL | O_NOFOLLOW`, named
/// [`TEMP_PREFIX`] and a fresh suffix; returns it open for writing, and its name.
///
/// # Errors
///
/// The system's error of the create (a name clash is retried with another name, up to 16 times) or of the
/// `fchmod` that undoes the umask (the file is then removed).
pub fn create_temp(root: &RootHandle, dir: BorrowedFd<'_>) -> Result<(OwnedFd, String), Errno> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
    let mut attempts = 0;
    loop {
        let name = fresh_name(TEMP_PREFIX);
        match root.open_at(dir, &name, flags, FILE_MODE) {
            Ok(fd) => {
                // The umask may have taken bits away; the mode is exactly 0600 either way.
                if let Err(e) = fs::fchmod(&fd, FILE_MODE) {
                    let _ = fs::unlinkat(dir, name.as_str(), AtFlags::empty());
                    return Err(e);
                }
                return Ok((fd, name));
            }
            Err(Errno::EXIST) if attempts < 16 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Removes the file `name` from `dir` and syncs the directory, so the removal survives a crash. A symbolic link at
/// the name is removed itself, never followed.
///
/// # Errors
///
/// The system's error of `unlinkat` (`ENOENT` when nothing is at the name) or of the directory's `fsync`.
pub fn remove_durably(dir: BorrowedFd<'_>, name: &str) -> Result<(), Errno> {
    retry(|| fs::unlinkat(dir, name, AtFlags::empty()))?;
    sync(dir)
}

/// `fsync` on a file or directory.
///
/// # Errors
///
/// The system's error of `fsync`.
pub fn sync(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    retry(|| fs::fsync(fd))
}

/// How [`write_atomic`] installs the new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// Over whatever is at the name, atomically (`renameat`).
    Replace,
    /// Only where nothing is at the name ([`rename_noreplace`]).
    NoReplace,
    /// As [`Install::NoReplace`], but by `link` + `unlink` even where `RENAME_NOREPLACE` works: the fallback of
    /// kernels without it, for tests of that fallback (feature `testkit`).
    #[cfg(any(test, feature = "testkit"))]
    NoReplaceByLink,
}

/// Which step of [`write_atomic`] failed, with the system's error. After any failure the temporary file is gone
/// and the target is as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// Creating the temporary file in the directory.
    CreateTemp(Errno),
    /// Writing or syncing the temporary file.
    Write(Errno),
    /// [`Install::NoReplace`] and something is at the name already.
    Exists,
    /// Renaming the temporary file to the name.
    Install(Errno),
    /// Syncing the directory after the rename (the new file is in place, but may not survive a crash).
    SyncDir(Errno),
}

/// Writes `bytes` to `name` in `dir` (below `root`) atomically and durably: a fresh 0600 temporary file in the same
/// directory ([`create_temp`]), written, `fsync`ed, renamed to `name` ([`Install`]), then the directory `fsync`ed.
/// A reader, or a crash at any instant, sees the old file or the new one, never a partial one, and never a
/// temporary file under the target's name.
///
/// # Errors
///
/// [`WriteError`], saying which step failed.
pub fn write_atomic(
    root: &RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
    install: Install,
) -> Result<(), WriteError> {
    let mut staged = Staged::write(root, dir, bytes)?;
    staged.sync()?;
    staged.install(name, install)?;
    sync(dir).map_err(WriteError::SyncDir)
}

/// A file written under a fresh temporary name of its directory ([`create_temp`]) and not yet in place: the steps
/// of [`write_atomic`] one by one, for a writer that makes several files of one directory durable together (each
/// [`sync`](Self::sync)ed, then each [`install`](Self::install)ed, then the directory synced once).
///
/// Dropped before it is installed, the temporary file is removed. Installed, it is in place but its name is durable
/// only once the caller syncs the directory.
#[derive(Debug)]
pub struct Staged<'d> {
    dir: BorrowedFd<'d>,
    temp: String,
    file: Option<std::fs::File>,
}

impl<'d> Staged<'d> {
    /// Creates a temporary file in `dir` (below `root`) and writes `bytes` to it, unsynced.
    ///
    /// # Errors
    ///
    /// [`WriteError::CreateTemp`] or [`WriteError::Write`]; the temporary file is then gone.
    pub fn write(root: &RootHandle, dir: BorrowedFd<'d>, bytes: &[u8]) -> Result<Staged<'d>, WriteError> {
        let (fd, temp) = create_temp(root, dir).map_err(WriteError::CreateTemp)?;
        let mut file = std::fs::File::from(fd);
        let written = file.write_all(bytes);
        let staged = Staged { dir, temp, file: Some(file) };
        // On an error, dropping `staged` removes the temporary file.
        written.map_err(|error| WriteError::Write(errno_of(&error)))?;
        Ok(staged)
    }

    /// `fsync`s the file.
    ///
    /// # Errors
    ///
    /// [`WriteError::Write`]; drop the file then, which removes it.
    pub fn sync(&mut self) -> Result<(), WriteError> {
        match &self.file {
            Some(file) => file.sync_all().map_err(|error| WriteError::Write(errno_of(&error))),
            None => Ok(()),
        }
    }

    /// Renames the file to `name` in its directory ([`Install`]), which the caller must then sync. Call it only
    /// after [`sync`](Self::sync): what a name points to must be durable before the name is.
    ///
    /// # Errors
    ///
    /// [`WriteError::Exists`] or [`WriteError::Install`]; the temporary file is then gone and the target as it was.
    pub fn install(mut self, name: &str, install: Install) -> Result<(), WriteError> {
        drop(self.file.take());
        let moved = match install {
            Install::Replace => rename_replace(self.dir, &self.temp, self.dir, name),
            Install::NoReplace => rename_noreplace(self.dir, &self.temp, self.dir, name, Fallback::Link),
            #[cfg(any(test, feature = "testkit"))]
            Install::NoReplaceByLink => link_then_unlink(self.dir, &self.temp, self.dir, name),
        };
        match moved {
            Ok(()) => {
                // In place: nothing is left to remove.
                self.temp.clear();
                Ok(())
            }
            Err(Errno::EXIST) if install != Install::Replace => Err(WriteError::Exists),
            Err(errno) => Err(WriteError::Install(errno)),
        }
    }
}

impl Drop for Staged<'_> {
    /// A file never installed is removed.
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.temp.is_empty() {
            let _ = fs::unlinkat(self.dir, self.temp.as_str(), AtFlags::empty());
        }
    }
}

/// The errno behind a std I/O error (`EIO` when it has none).
fn errno_of(error: &std::io::Error) -> Errno {
    error.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error)
}

/// The leftover-link rule: whether the second link of a file with two links is one of the writer's own temporary
/// files in the same directory. [`rename_noreplace`]'s fallback links the temporary file to the target's name and
/// then unlinks it, and a crash between the two leaves both names: such a file is the writer's own, not an alias
/// made by someone else. Any other file with more than one link is not.
pub fn is_own_leftover_link(dir: BorrowedFd<'_>, stat: &Stat) -> bool {
    if stat.st_nlink != 2 {
        return false;
    }
    // A fresh handle on the same directory: `dir` may have been read to its end already (a listing's walk).
    let Ok(fresh) = retry(|| fs::openat(dir, c".", DIR_FLAGS, Mode::empty())) else { return false };
    let dir = fresh.as_fd();
    let Ok(names) = read_names(dir) else { return false };
    names.iter().any(|(name, kind)| {
        *kind == FileType::RegularFile
            && name.starts_with(TEMP_PREFIX)
            && retry(|| fs::statat(dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW))
                .is_ok_and(|other| (other.st_dev, other.st_ino) == (stat.st_dev, stat.st_ino))
    })
}
