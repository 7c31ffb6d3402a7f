//! Reading entry files and walking directories below the root, for listings, limits and clash checks.

use std::fs::File;
use std::io::Read as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use memory_id::{MAX_ID_BYTES, MAX_SEGMENTS, MemoryId, parse_memory_id, validate_segment};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use time::OffsetDateTime;

use crate::handle::{Miss, RootHandle, TEMP_PREFIX, has_casefold_flag, read_names};
use crate::{ParsedEntryFile, Timestamp, parse_entry_file};

/// What was found at an entry's file name.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "moved out at once; a box would cost an allocation per file read"
)]
pub(crate) enum ReadOutcome {
    /// A regular file, read as an entry.
    Entry(ParsedEntryFile),
    /// Nothing there (or a component vanished).
    Missing,
    /// A symbolic link: never followed.
    Symlink,
    /// A directory, FIFO, socket or device: not an entry.
    NotRegular,
}

/// Reads the entry file `name` in `dir` as `id`, never following a symlink and never blocking on a FIFO.
pub(crate) fn read_entry(
    root: &RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    id: MemoryId,
) -> Result<ReadOutcome, Errno> {
    let fd = match root.open_at(dir, name, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok(ReadOutcome::Missing),
        Err(Errno::LOOP) => return Ok(ReadOutcome::Symlink),
        Err(e) => return Err(e),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(ReadOutcome::NotRegular);
    }
    let nanos = i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec);
    let mtime = OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .map_or(Timestamp::from(OffsetDateTime::UNIX_EPOCH), Timestamp::from)
        .truncated_to_millis();
    // One read of the whole file and one that sees its end; `read_to_end` would add an fstat and an lseek.
    let size = usize::try_from(stat.st_size).unwrap_or(0);
    let mut bytes = vec![0u8; size.saturating_add(1).max(64)];
    let mut file = File::from(fd);
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            bytes.resize(bytes.len() * 2, 0);
        }
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => {
                filled += n;
                // The buffer is one byte longer than the size fstat saw: a read that ends short of filling it
                // has reached the end of a regular file, which saves the read that would return 0. A file that
                // grew meanwhile fills the buffer and is read on.
                if filled < bytes.len() && filled >= size {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(errno(e)),
        }
    }
    bytes.truncate(filled);
    Ok(ReadOutcome::Entry(parse_entry_file(id, &bytes, mtime)))
}

/// The errno behind a std I/O error.
pub(crate) fn errno(error: std::io::Error) -> Errno {
    error.raw_os_error().map_or(Errno::IO, Errno::from_raw_os_error)
}

/// Whether a file or directory name can be one segment of an ID (and so map back to its own path).
pub(crate) fn is_segment_name(name: &str) -> bool {
    validate_segment(name).is_ok() && !name.contains(':')
}

/// A directory to walk: its components below the root and the ID prefix of the entries in it.
#[derive(Debug, Clone)]
pub(crate) struct WalkRoot {
    pub(crate) dirs: Vec<String>,
    pub(crate) prefix: String,
}

/// An entry file found by a walk; its directory stays open until the reference is dropped.
#[derive(Debug)]
pub(crate) struct FileRef {
    pub(crate) dir: Arc<OwnedFd>,
    pub(crate) name: String,
    pub(crate) id: MemoryId,
}

/// Why a walk stopped.
#[derive(Debug)]
pub(crate) enum WalkError<E> {
    /// Opening or reading a directory failed; `rel` is its path below the root.
    Dir { rel: String, miss: Miss },
    /// A directory has the casefold attribute.
    Casefold { rel: String },
    /// The batch consumer failed.
    Consumer(E),
}

/// How many directories' files are handed over at once; bounds the directories held open.
const BATCH_DIRS: usize = 64;

/// Walks `roots` depth first, never following a symlink, and hands the entry files found to `consume` in
/// batches. Skipped: symlinks, names that are not valid segments (so lock and temporary files, and `a:b.md`),
/// files not ending in `.md`, and anything that is neither a regular file nor a directory. A root that is missing,
/// not a directory or a symlink yields nothing. With `clean_temp`, leftover temporary files are removed on the way
/// (only under the scope-root lock held exclusively, when no writer of the scope root can be using one).
pub(crate) fn walk<E>(
    root: &RootHandle,
    roots: &[WalkRoot],
    clean_temp: bool,
    consume: &mut dyn FnMut(Vec<FileRef>) -> Result<(), E>,
) -> Result<(), WalkError<E>> {
    enum Pending {
        Start(usize),
        Child { parent: Arc<OwnedFd>, name: String, prefix: String, rel: String },
    }
    let mut stack: Vec<Pending> = (0..roots.len()).rev().map(Pending::Start).collect();
    let mut batch: Vec<FileRef> = Vec::new();
    let mut batch_dirs = 0;
    while let Some(pending) = stack.pop() {
        let (opened, prefix, rel) = match pending {
            Pending::Start(index) => {
                let start = &roots[index];
                let dirs: Vec<&str> = start.dirs.iter().map(String::as_str).collect();
                (root.open_dir(&dirs), start.prefix.clone(), start.dirs.join("/"))
            }
            Pending::Child { parent, name, prefix, rel } => {
                (root.step_dir(parent.as_fd(), &name), prefix, rel)
            }
        };
        let fd = match opened {
            Ok(fd) => fd,
            Err(Miss::NotFound | Miss::NotDirectory) => continue,
            Err(Miss::Symlink) => {
                tracing::debug!(path = %rel, "listing skips a symbolic link to a directory");
                continue;
            }
            Err(miss) => return Err(WalkError::Dir { rel, miss }),
        };
        if has_casefold_flag(fd.as_fd()) {
            return Err(WalkError::Casefold { rel });
        }
        let names =
            read_names(fd.as_fd()).map_err(|e| WalkError::Dir { rel: rel.clone(), miss: Miss::Io(e) })?;
        let dir = Arc::new(fd);
        let mut found_here = false;
        for (name, kind) in names {
            match kind {
                FileType::Directory => {
                    let depth = prefix.split(':').count() + 1;
                    if is_segment_name(&name)
                        && depth < MAX_SEGMENTS
                        && prefix.len() + name.len() + 3 <= MAX_ID_BYTES
                    {
                        let child_prefix = format!("{prefix}:{name}");
                        let child_rel = format!("{rel}/{name}");
                        stack.push(Pending::Child {
                            parent: Arc::clone(&dir),
                            name,
                            prefix: child_prefix,
                            rel: child_rel,
                        });
                    }
                }
                FileType::RegularFile => {
                    if clean_temp && name.starts_with(TEMP_PREFIX) {
                        let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_str(), AtFlags::empty());
                        continue;
                    }
                    let Some(stem) = name.strip_suffix(".md") else { continue };
                    if !is_segment_name(stem) {
                        continue;
                    }
                    if let Ok(id) = parse_memory_id(&format!("{prefix}:{stem}")) {
                        found_here = true;
                        batch.push(FileRef { dir: Arc::clone(&dir), name, id });
                    }
                }
                FileType::Symlink => {
                    tracing::debug!(path = %format!("{rel}/{name}"), "listing skips a symbolic link")
                }
                _ => {}
            }
        }
        if found_here {
            batch_dirs += 1;
            if batch_dirs >= BATCH_DIRS {
                consume(std::mem::take(&mut batch)).map_err(WalkError::Consumer)?;
                batch_dirs = 0;
            }
        }
    }
    if !batch.is_empty() {
        consume(batch).map_err(WalkError::Consumer)?;
    }
    Ok(())
}
