//! Reading one entry file: the one reader behind get, update, delete, history and every listing.
//!
//! [`read_file`] holds every rule of reading a file at an entry's name: it is opened without following a symlink, and only when it is a regular file (a FIFO, socket or device is
//! never opened for reading); a second hard link is refused (unless it is the store's own link left by a crash, the
//! leftover-link rule), and so is a size over `limits.maxFileBytes`, checked before reading and again while
//! reading (a file that grew after `fstat`); a frontmatter `version` over the cap is refused once the frontmatter is
//! read ([`version_refusal`]). What a caller does with a file not read is its own: a door reports an error
//! ([`read_entry`]'s callers), a listing skips it with a warning and reads the frontmatter only of the files it may
//! keep (`listing`).

use std::fs::File;
use std::os::fd::{BorrowedFd, OwnedFd};

use memory_entry::Timestamp;
use memory_fs::{Opened, RootHandle, is_own_leftover_link, open_regular};
use memory_id::MemoryId;
use rustix::fs::Stat;
use rustix::io::Errno;

use crate::{ParsedEntryFile, parse_entry_file};

/// What was found at an entry's file name: with [`read_entry`], the entry (`E` is [`ParsedEntryFile`]); with
/// [`read_file`], the file's status, its bytes in the caller's buffer.
///
/// Not boxed, though `E` may be large: it is moved out at once, and a box would cost an allocation per file read.
#[derive(Debug)]
pub(crate) enum ReadOutcome<E = ParsedEntryFile> {
    /// A regular file, read as an entry.
    Entry(E),
    /// Nothing there (or a component vanished).
    Missing,
    /// A symbolic link: never followed.
    Symlink,
    /// A directory: not an entry (the file/directory clash rule).
    Directory,
    /// A FIFO, socket or device: never opened for reading.
    Special,
    /// A regular file the store will not read as an entry.
    Refused(Refusal),
}

impl<E> ReadOutcome<E> {
    /// The entry, or the outcome that is not one (as an outcome of any entry type).
    pub(crate) fn into_entry<F>(self) -> Result<E, ReadOutcome<F>> {
        Err(match self {
            ReadOutcome::Entry(entry) => return Ok(entry),
            ReadOutcome::Missing => ReadOutcome::Missing,
            ReadOutcome::Symlink => ReadOutcome::Symlink,
            ReadOutcome::Directory => ReadOutcome::Directory,
            ReadOutcome::Special => ReadOutcome::Special,
            ReadOutcome::Refused(refusal) => ReadOutcome::Refused(refusal),
        })
    }

    /// The same outcome, its entry (if it is one) mapped by `f`.
    pub(crate) fn map<F>(self, f: impl FnOnce(E) -> F) -> ReadOutcome<F> {
        self.into_entry().map_or_else(|other| other, |entry| ReadOutcome::Entry(f(entry)))
    }
}

/// Why a regular file at an entry's name is not read as an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// More than one link: the name could alias another role's entry, the audit log or a file outside the root.
    HardLink { links: u64 },
    /// Larger than `limits.maxFileBytes`.
    TooLarge { bytes: u64, limit: u64 },
    /// A frontmatter `version` above the largest an entry may hold.
    VersionOverCap { version: String },
}

/// How much of an entry file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadMode {
    /// The whole file, which must be at most `max_bytes` and have one link.
    Full { max_bytes: u64 },
    /// Only enough to read the frontmatter (version, timestamps, TTL), whatever the size and links: for a delete,
    /// which only unlinks a name, and for a create's check that the name is taken.
    Head,
}

/// What [`ReadMode::Head`] reads: the largest frontmatter and its two `---` lines.
const HEAD_BYTES: u64 = 64 * 1024 + 16;

/// Reads the entry file `name` in `dir` as `id`: [`read_file`], then the whole file parsed, refused when its
/// `version` is over the cap.
pub(crate) fn read_entry(
    root: &RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    id: MemoryId,
    mode: ReadMode,
) -> Result<ReadOutcome, Errno> {
    let mut bytes = Vec::new();
    let parsed = match read_file(root, dir, name, mode, &mut bytes)?.into_entry() {
        Ok(stat) => parse_entry_file(id, &bytes, mtime(&stat)),
        Err(other) => return Ok(other),
    };
    if let Some(refusal) = version_refusal(parsed.version_over_cap.as_ref()) {
        return Ok(ReadOutcome::Refused(refusal));
    }
    Ok(ReadOutcome::Entry(parsed))
}

/// Reads the file `name` in `dir` into `buffer` (cleared first; it keeps its allocation, so one buffer serves every
/// file a thread reads): never following a symlink, never opening anything but a regular file for reading, never
/// reading more than `mode` allows (with [`ReadMode::Head`], the first bytes of a longer file). The file's status
/// when it was read; the frontmatter is the caller's to read, and to check with [`version_refusal`].
pub(crate) fn read_file(
    root: &RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    mode: ReadMode,
    buffer: &mut Vec<u8>,
) -> Result<ReadOutcome<Stat>, Errno> {
    Ok(read_file_held(root, dir, name, mode, buffer)?.map(|(stat, _file)| stat))
}

/// [`read_file`], giving back the open file it read with its status (the entry cache holds it, to check the file
/// again without looking its name up).
pub(crate) fn read_file_held(
    root: &RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    mode: ReadMode,
    buffer: &mut Vec<u8>,
) -> Result<ReadOutcome<(Stat, OwnedFd)>, Errno> {
    let (fd, stat) = match open_regular(root, dir, name) {
        Ok(Opened::Regular { fd, stat }) => (fd, stat),
        Ok(Opened::Symlink) | Err(Errno::LOOP) => return Ok(ReadOutcome::Symlink),
        Ok(Opened::Directory) => return Ok(ReadOutcome::Directory),
        Ok(Opened::Special) => return Ok(ReadOutcome::Special),
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(ReadOutcome::Missing),
        Err(e) => return Err(e),
    };
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    let (cap, truncate) = match mode {
        ReadMode::Full { max_bytes } => {
            let links = stat.st_nlink;
            if links > 1 && !is_own_leftover_link(dir, &stat) {
                return Ok(ReadOutcome::Refused(Refusal::HardLink { links }));
            }
            if size > max_bytes {
                return Ok(ReadOutcome::Refused(Refusal::TooLarge { bytes: size, limit: max_bytes }));
            }
            (max_bytes, false)
        }
        ReadMode::Head => (HEAD_BYTES, true),
    };
    let file = File::from(fd);
    let whole = memory_fs::read_bounded(&file, size.min(cap), cap, buffer).map_err(errno)?;
    if !whole {
        if !truncate {
            // The file grew past the limit after `fstat`.
            return Ok(ReadOutcome::Refused(Refusal::TooLarge { bytes: cap.saturating_add(1), limit: cap }));
        }
        buffer.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    }
    Ok(ReadOutcome::Entry((*stat, OwnedFd::from(file))))
}

/// The refusal of a file whose frontmatter `version` is over the cap ([`ParsedEntryFile::version_over_cap`]).
pub(crate) fn version_refusal(version_over_cap: Option<&String>) -> Option<Refusal> {
    version_over_cap.map(|version| Refusal::VersionOverCap { version: version.clone() })
}

/// The file's modification time, to the millisecond: what a missing timestamp of its frontmatter falls back to.
pub(crate) fn mtime(stat: &Stat) -> Timestamp {
    let nanos = i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec);
    Timestamp::from_unix_nanos_clamped(nanos).truncated_to_millis()
}

/// The errno behind a std I/O error.
pub(crate) fn errno(error: std::io::Error) -> Errno {
    error.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error)
}
