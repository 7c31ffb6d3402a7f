//! Walking directories below the root, never following a symlink: the entry files a listing, a limit or a clash
//! check finds, handed over in batches with their directories held open. Reading each file is
//! [`entry_file`](crate::entry_file)'s.

use std::ffi::CStr;
use std::num::NonZeroU64;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use memory_fs::{Miss, RootHandle, TEMP_PREFIX, read_names};
use memory_id::{MAX_ID_BYTES, MAX_SEGMENTS, MemoryId, parse_memory_id, validate_segment};
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::case::has_casefold_flag;

/// The errno behind a std I/O error (`records` reaches it here).
pub(crate) use crate::entry_file::errno;

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
    /// The file's directory (one reference count for both the descriptor and the names: files are handed between
    /// threads, and each count is a cache line they share).
    pub(crate) dir: Arc<WalkedDir>,
    index: usize,
}

/// A directory a walk opened, with its names.
#[derive(Debug)]
pub(crate) struct WalkedDir {
    fd: OwnedFd,
    listed: Arc<Listed>,
}

impl FileRef {
    /// The open directory the file is in.
    pub(crate) fn dir_fd(&self) -> BorrowedFd<'_> {
        self.dir.fd.as_fd()
    }

    /// The file's name in its directory.
    pub(crate) fn name(&self) -> &str {
        self.dir.listed.files[self.index].name()
    }

    /// The file's name, as the system takes it.
    pub(crate) fn c_name(&self) -> &CStr {
        self.dir.listed.files[self.index].c_name()
    }

    /// The entry's ID.
    pub(crate) fn id(&self) -> &MemoryId {
        &self.dir.listed.files[self.index].id
    }

    /// The serial of the settled directory state the file's name was listed under, if any ([`Listed::settled`]).
    pub(crate) fn dir_settled(&self) -> Option<NonZeroU64> {
        self.dir.listed.settled()
    }
}

/// A directory's names as a walk uses them: the entry files with their IDs, built once for the listing (so a listing
/// kept by the entry cache builds no ID again while the directory is unchanged), and every other name with its type,
/// as [`read_names`] gives them.
#[derive(Debug)]
pub(crate) struct Listed {
    /// The ID prefix the files' IDs were built under: the directory's place below the root.
    prefix: String,
    /// The names that are not entry files.
    names: Vec<(String, FileType)>,
    files: Vec<ListedFile>,
    /// Set by the entry cache when the directory's stamp had settled as the names were read (see
    /// [`crate::cache`]): a serial naming that state of the directory. A listing handed out with it had that
    /// stamp when it was walked, so two listings with the same serial saw the same names bound to the same files.
    settled: Option<NonZeroU64>,
}

/// An entry file of a [`Listed`] directory.
#[derive(Debug)]
struct ListedFile {
    /// The name followed by a NUL byte, so that it is handed to the system without a copy.
    name: String,
    id: MemoryId,
}

impl ListedFile {
    fn name(&self) -> &str {
        self.name.strip_suffix('\0').unwrap_or(&self.name)
    }

    fn c_name(&self) -> &CStr {
        CStr::from_bytes_with_nul(self.name.as_bytes()).unwrap_or_default()
    }
}

impl Listed {
    /// Reads the names in `dir`, whose entries' IDs start with `prefix`.
    pub(crate) fn read(dir: BorrowedFd<'_>, prefix: &str) -> Result<Listed, Errno> {
        Ok(Listed::of(read_names(dir)?, prefix))
    }

    /// `names` as a listing of a directory whose entries' IDs start with `prefix`: the entry files are the regular
    /// files named `<segment>.md`.
    fn of(all: Vec<(String, FileType)>, prefix: &str) -> Listed {
        let mut names = Vec::new();
        let mut files = Vec::with_capacity(all.len());
        let mut scratch = String::with_capacity(prefix.len() + 32);
        for (mut name, kind) in all {
            let stem = name
                .strip_suffix(".md")
                .filter(|stem| kind == FileType::RegularFile && is_segment_name(stem));
            let id = stem.and_then(|stem| {
                scratch.clear();
                scratch.push_str(prefix);
                scratch.push(':');
                scratch.push_str(stem);
                parse_memory_id(&scratch).ok()
            });
            match id {
                Some(id) => {
                    // A name read from a directory holds no NUL.
                    name.push('\0');
                    files.push(ListedFile { name, id });
                }
                None => names.push((name, kind)),
            }
        }
        Listed { prefix: prefix.to_owned(), names, files, settled: None }
    }

    /// The serial of the settled directory state the names were read under (set by the entry cache), if any.
    pub(crate) fn settled(&self) -> Option<NonZeroU64> {
        self.settled
    }

    /// The listing, marked as read under the settled directory state `serial` (see [`Listed::settled`]).
    pub(crate) fn settled_as(mut self, serial: NonZeroU64) -> Listed {
        self.settled = Some(serial);
        self
    }

    /// The prefix the IDs were built under.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The IDs of the entry files.
    #[cfg(test)]
    pub(crate) fn ids(&self) -> impl Iterator<Item = &MemoryId> {
        self.files.iter().map(|file| &file.id)
    }

    /// The same names under another prefix (a directory met again at another place below the root).
    pub(crate) fn under(&self, prefix: &str) -> Listed {
        let files = self.files.iter().map(|file| (file.name().to_owned(), FileType::RegularFile));
        // The same directory in the same state: its serial holds.
        Listed {
            settled: self.settled,
            ..Listed::of(self.names.iter().cloned().chain(files).collect(), prefix)
        }
    }

    /// A rough count of the bytes the listing holds.
    pub(crate) fn cost(&self) -> usize {
        let names: usize = self.names.iter().map(|(name, _)| name.len() + 32).sum();
        let files: usize = self.files.iter().map(|file| file.name.len() + file.id.as_str().len() + 48).sum();
        96 + self.prefix.len() + names + files
    }
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

/// At most this many directories' files are handed over at once; bounds the directories held open.
const BATCH_DIRS: usize = 64;

/// Files are handed over as soon as a batch holds this many, so that reading can start while the walk goes on.
const BATCH_FILES: usize = 256;

/// What a walk does with the leftover temporary files of interrupted writers it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leftovers {
    /// Leaves them: a writer of the scope root may be using one.
    Leave,
    /// Removes them: only under the scope-root lock held exclusively, when no writer of the scope root can be using
    /// one.
    Remove,
}

/// Walks `roots` depth first, never following a symlink, and hands the entry files found to `consume` in
/// batches. Skipped: symlinks, names that are not valid segments (so lock and temporary files, and `a:b.md`),
/// files not ending in `.md`, and anything that is neither a regular file nor a directory. A root that is missing,
/// not a directory or a symlink yields nothing. With [`Leftovers::Remove`], leftover temporary files are removed on
/// the way.
pub(crate) fn walk<E>(
    root: &RootHandle,
    roots: &[WalkRoot],
    leftovers: Leftovers,
    consume: &mut dyn FnMut(Vec<FileRef>) -> Result<(), E>,
) -> Result<(), WalkError<E>> {
    walk_with(root, roots, leftovers, None, consume)
}

/// Where a walk gets the names of a directory it opened, given the ID prefix of its entries: a cache of listings
/// ([`crate::cache::EntryCache::dir_names`]).
pub(crate) type NameSource<'a> = &'a dyn Fn(BorrowedFd<'_>, &str) -> Result<Arc<Listed>, Errno>;

/// [`walk`], reading each directory's names through `names` when given.
pub(crate) fn walk_with<E>(
    root: &RootHandle,
    roots: &[WalkRoot],
    leftovers: Leftovers,
    names: Option<NameSource<'_>>,
    consume: &mut dyn FnMut(Vec<FileRef>) -> Result<(), E>,
) -> Result<(), WalkError<E>> {
    enum Pending {
        Start(usize),
        Child { parent: Arc<WalkedDir>, name: String, prefix: String, rel: String },
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
                (root.step_dir(parent.fd.as_fd(), &name), prefix, rel)
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
        let listed = match names {
            Some(source) => source(fd.as_fd(), &prefix),
            None => Listed::read(fd.as_fd(), &prefix).map(Arc::new),
        };
        let listed = listed.map_err(|e| WalkError::Dir { rel: rel.clone(), miss: Miss::Io(e) })?;
        let dir = Arc::new(WalkedDir { fd, listed });
        for (name, kind) in &dir.listed.names {
            match *kind {
                FileType::Directory => {
                    let depth = prefix.split(':').count() + 1;
                    if is_segment_name(name)
                        && depth < MAX_SEGMENTS
                        && prefix.len() + name.len() + 3 <= MAX_ID_BYTES
                    {
                        let child_prefix = format!("{prefix}:{name}");
                        let child_rel = format!("{rel}/{name}");
                        stack.push(Pending::Child {
                            parent: Arc::clone(&dir),
                            name: name.clone(),
                            prefix: child_prefix,
                            rel: child_rel,
                        });
                    }
                }
                FileType::RegularFile if leftovers == Leftovers::Remove && name.starts_with(TEMP_PREFIX) => {
                    let _ = rustix::fs::unlinkat(dir.fd.as_fd(), name.as_str(), AtFlags::empty());
                }
                FileType::Symlink => {
                    tracing::debug!(path = %format!("{rel}/{name}"), "listing skips a symbolic link")
                }
                _ => {}
            }
        }
        let found_here = !dir.listed.files.is_empty();
        batch.extend((0..dir.listed.files.len()).map(|index| FileRef { dir: Arc::clone(&dir), index }));
        if found_here {
            batch_dirs += 1;
            if batch_dirs >= BATCH_DIRS || batch.len() >= BATCH_FILES {
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
