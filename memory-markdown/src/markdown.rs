//! The Markdown store: one file per entry under a memory root, race-free and durable.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memory_fs::{
    Install, LockFailure, LockGuard, MakeDirError, Miss, Opened, Opening, Resolution, RootHandle, Staged,
    TEMP_PREFIX, WriteError, fnv1a64, kind_at, lock_file, make_dir, make_dir_all, open_regular, read_names,
    sync, write_atomic,
};
use memory_id::{MemoryId, MemoryPrefix};
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::cache::{CacheStats, EntryCache};
use crate::case::{self, CaseProbe, case_error, has_casefold_flag};
use crate::entry_file::{ReadMode, ReadOutcome, Refusal, mtime, read_entry, read_file};
use crate::history::Moving;
use crate::listing;
use crate::path::{ESCAPES_ROOT, SYMLINK_ESCAPE, entry_components, lower, scope_dirs};
use crate::walk::{FileRef, WalkError, WalkRoot, is_segment_name, walk};
use crate::{CONFIG_FILE, ConfigError, ParsedEntryFile, StoreConfig, parse_entry_file, render_entry_file};
use memory_entry::{
    Batch, BatchPlan, ExistsReason, Key, Limits, Listing, MAX_VERSION, MemoryEntry, MemoryStore, MemoryType,
    Patch, ScopeRef, Scored, StorageError, StorageErrorKind, StoreError, Timestamp, Version,
};
use memory_ranker::FoldBuffer;

/// Decides what a listing keeps: the score of an entry it keeps, `None` for one it drops. Called from several
/// threads, each with its own folding buffer.
type Keep<'a> = &'a (dyn Fn(&MemoryEntry, &mut FoldBuffer) -> Option<usize> + Sync);

/// An entry file as read, with the directory it was read from.
type Loaded = (OwnedFd, ParsedEntryFile);

/// The directory under the root that holds the lock files.
pub(crate) const LOCK_DIR: &str = ".locks";
/// Per-entry locks are spread over this many lock files (by a stable hash of the ID), so that the lock directory
/// stays bounded however many IDs come and go; two entries that share a lock file only wait for each other.
const ENTRY_LOCK_BUCKETS: u64 = 4096;

/// The descriptors the entry cache may hold by default ([`StoreOptions::entry_cache_handles`]): three quarters of
/// what the soft `RLIMIT_NOFILE` leaves above 1,024, so that the process keeps at least 1,024 for everything else
/// (connections, listings, the audit log).
fn default_cache_handles() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let limit = limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    limit.saturating_sub(1024) / 4 * 3
}

/// Options for [`MarkdownStore::open_with`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    config: Option<StoreConfig>,
    create_missing: bool,
    force_component_walk: bool,
    force_link_fallback: bool,
    #[cfg(feature = "testkit")]
    force_opening: Option<Opening>,
    entry_cache: Option<usize>,
    entry_cache_handles: Option<usize>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            config: None,
            create_missing: true,
            force_component_walk: false,
            force_link_fallback: false,
            #[cfg(feature = "testkit")]
            force_opening: None,
            entry_cache: None,
            entry_cache_handles: None,
        }
    }
}

/// Why a store could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RootOpenError {
    /// The root does not exist, and the options say not to create it.
    #[error("the memory root `{}` does not exist; create it with `alp init`", .0.display())]
    Missing(PathBuf),
    /// The root exists but is not a directory.
    #[error("the memory root `{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// `config.yaml` cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The root cannot be created, opened or used (it folds case, …).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl StoreOptions {
    /// The defaults: settings from `<root>/config.yaml`, a missing root created, `openat2` where the kernel offers
    /// it.
    pub fn new() -> StoreOptions {
        StoreOptions::default()
    }

    /// Whether a missing root is created (0700, with any missing parents; the default) or refused with
    /// [`RootOpenError::Missing`], leaving no trace (what a command line wants for a mistyped root).
    #[must_use]
    pub fn create_missing(mut self, create: bool) -> StoreOptions {
        self.create_missing = create;
        self
    }

    /// Enforce these limits (and the default lock timeout) instead of reading `<root>/config.yaml`.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> StoreOptions {
        self.config = Some(StoreConfig { limits, ..self.config.unwrap_or_default() });
        self
    }

    /// Use these settings instead of reading `<root>/config.yaml`.
    #[must_use]
    pub fn config(mut self, config: StoreConfig) -> StoreOptions {
        self.config = Some(config);
        self
    }

    /// Open entry files the given way instead of the one the root's mount decides ([`Opening::Direct`] on a root
    /// mounted `nodev`, [`Opening::ProcReopen`] elsewhere), for tests of both ways. [`Opening::Direct`] on a file
    /// system that allows device nodes would open a device node planted below the root: never outside tests
    /// (feature `testkit`).
    #[cfg(feature = "testkit")]
    #[must_use]
    pub fn force_opening(mut self, opening: Opening) -> StoreOptions {
        self.force_opening = Some(opening);
        self
    }

    /// Install a created entry with `link` + `unlink` instead of `RENAME_NOREPLACE`, as on kernels without it (for
    /// tests of that fallback; feature `testkit`).
    #[cfg(feature = "testkit")]
    #[must_use]
    pub fn force_link_fallback(mut self, force: bool) -> StoreOptions {
        self.force_link_fallback = force;
        self
    }

    /// Keep the entries listings read in memory, up to `bytes`, and reuse them while their files are unchanged: for
    /// a long-running process (`alp mcp`), where a repeated search then costs one `fstat` per file (of the file the
    /// entry holds open, [`StoreOptions::entry_cache_handles`]; else one `fstatat` by name) instead of opening,
    /// reading, parsing and folding it. Off by default (a command that lists once gains nothing).
    ///
    /// Never stale: a cached entry is used only while its file has the same device, inode, size, link count,
    /// modification and status-change times (to the nanosecond) as when it was read, checked on every listing; a
    /// file changed within a second before a listing began is not cached, so that a second change in the same
    /// clock tick cannot go unseen. Bounded: each entry is counted as its content, its folded text, its ID twice
    /// and its unknown frontmatter keys, plus [`ENTRY_OVERHEAD_BYTES`](crate::ENTRY_OVERHEAD_BYTES) (about 2 KB for
    /// a note of 800 bytes); entries not used by the latest listing make room first, and what does not fit is not
    /// cached. [`MarkdownStore::cache_stats`] says how full it is.
    ///
    /// ```
    /// use memory_markdown::{MarkdownStore, StoreOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = MarkdownStore::open_with(dir.path(), StoreOptions::new().entry_cache(64 << 20)).unwrap();
    /// assert_eq!(store.cache_stats().map(|stats| stats.entries), Some(0));
    /// ```
    #[must_use]
    pub fn entry_cache(mut self, bytes: usize) -> StoreOptions {
        self.entry_cache = Some(bytes);
        self
    }

    /// At most `handles` entries of the [entry cache](StoreOptions::entry_cache) hold their file open. An entry
    /// that holds its file is checked with one `fstat` of it while its directory is unchanged, instead of a lookup
    /// of its name (most of the cost of a repeated search); the others are checked by name. Each is a file
    /// descriptor of the process, and keeps its file's inode (a file deleted or replaced meanwhile stays allocated
    /// until the entry leaves the cache). By default, three quarters of what the soft `RLIMIT_NOFILE` leaves above
    /// 1,024 descriptors (none when the limit is 1,024 or lower); 0 holds none.
    ///
    /// ```
    /// use memory_markdown::{MarkdownStore, StoreOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = StoreOptions::new().entry_cache(1 << 20).entry_cache_handles(100);
    /// let store = MarkdownStore::open_with(dir.path(), options).unwrap();
    /// assert_eq!(store.cache_stats().map(|stats| stats.max_handles), Some(100));
    /// ```
    #[must_use]
    pub fn entry_cache_handles(mut self, handles: usize) -> StoreOptions {
        self.entry_cache_handles = Some(handles);
        self
    }

    /// Resolve paths with the `O_NOFOLLOW | O_DIRECTORY` component walk even where `openat2` works (for tests of
    /// the fallback, and for kernels whose `openat2` misbehaves).
    #[must_use]
    pub fn force_component_walk(mut self, force: bool) -> StoreOptions {
        self.force_component_walk = force;
        self
    }
}

/// The store on disk: one Markdown file with YAML frontmatter per entry (see
/// [`parse_entry_file`](crate::parse_entry_file) for the format and [`MemoryPathMapper`](crate::MemoryPathMapper) for
/// the layout).
///
/// ```text
/// <root>/shared/<segments…>.md
/// <root>/projects/<projectId>/<segments…>.md
/// <root>/private/<role>/<segments…>.md
/// <root>/config.yaml          optional limits
/// <root>/.locks/              lock files, never deleted
/// ```
///
/// # Path safety
///
/// The root is canonicalised once, when the store opens (so the root itself may be a symlink), and held open as a
/// directory handle. Every open, create, rename, delete and directory listing is resolved from that handle, one
/// component at a time, never following a symbolic link: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`,
/// or, where `openat2` is missing (`ENOSYS`) or filtered (`EPERM`), `openat` with `O_NOFOLLOW | O_DIRECTORY` one
/// component at a time ([`Resolution`]). No symlink below the root is followed, even one that stays inside
/// (`shared/team -> ../private/main` would let a `shared:` grant read main's private memory): such a path fails
/// with a [`StorageError`] of kind [`StorageErrorKind::SymlinkEscape`] ("memory path symlink escape"). Listing
/// skips symlinks instead of failing. Files are created 0600 and directories 0700.
///
/// # Case folding
///
/// Two IDs that differ only in case must not alias one file. Refused with [`StorageErrorKind::CaseInsensitive`]:
/// a root on a case-insensitive volume (detected when the store opens by looking a name of the root up in the
/// other ASCII case, or, in an empty root, a probe file created and removed for the purpose), and the casefold
/// attribute (`FS_CASEFOLD_FL`, ext4/f2fs/tmpfs) on the root, on any directory a listing walks, and on the
/// directory of every entry read or written. Since the attribute can only be set on an empty directory and is
/// inherited by new subdirectories, that also catches folding ancestors. Not detected: a case-insensitive file
/// system mounted below the root, a casefolded ancestor above a subdirectory whose attribute was cleared, and an
/// empty root that cannot be written (nothing can be stored there anyway).
///
/// # Durability
///
/// A write goes to a 0600 temporary file in the entry's directory (created with `O_CREAT | O_EXCL | O_NOFOLLOW`,
/// named `.tmp:<pid>:<counter>:<random>`: dot-named, holding a `:` that no segment holds, never ending in `.md`,
/// never embedding a segment), is fsynced, renamed over the entry (`renameat`; a create uses `RENAME_NOREPLACE`
/// so it can never overwrite), and the directory is fsynced, as are the parents of directories a create made.
/// `kill -9` at any instant leaves the old file or the new one. A temporary file left by a crash is invisible to
/// listings and removed by the next create in its scope root.
///
/// # Locks
///
/// `flock` on files in `<root>/.locks/` that are never deleted (a lock on the entry itself would be lost when a
/// rename installs a new inode); the kernel releases them when a holder dies. Each acquisition opens its own file
/// description, so the locks exclude threads of one process as well as other processes.
/// - `scope-<hash of the scope root>`: taken exclusively by `create` (entry count, (type, key, scope)
///   uniqueness, file/directory clashes, cleaning of temporary files) and by an `update` that sets `type`, `key`
///   or `scope`; shared by every other `update`, `delete` and `delete_expired`.
/// - `entry-<hash of the ID mod 4096>`: taken exclusively, under the shared scope-root lock, around the version
///   check and the rename (or unlink).
///
/// Hierarchy: the scope-root lock is always taken first and the entry lock second; no call holds two scope-root
/// locks or two entry locks, and no call waits for a scope-root lock while holding an entry lock, so there is no
/// cycle and no deadlock (two names that share a lock file by hash only add waiting). Reads take no lock: a
/// rename is atomic, so a reader sees the old file or the new one.
///
/// # Semantics
///
/// Those of [`MemoryStore`], checked by the adapter suite against [`InMemoryStore`](memory_entry::InMemoryStore). Two
/// things only a hand-edited root can show: (type, key, scope) uniqueness is checked when a create or an update
/// sets one of the three (so an update of a hand-made duplicate that leaves them alone succeeds), and a directory
/// or special file at an entry's name is not an entry (a get finds nothing there).
#[derive(Debug)]
pub struct MarkdownStore {
    root_path: PathBuf,
    pub(crate) root: RootHandle,
    pub(crate) config: StoreConfig,
    locks: OnceLock<OwnedFd>,
    /// Threads a listing reads with: asked of the system (which reads cgroup files) by the first listing, not by
    /// calls that never list.
    threads: OnceLock<usize>,
    pub(crate) force_link_fallback: bool,
    cache: Option<EntryCache>,
}

/// Where an entry lives: the directories from the root (scope root first) and the file name.
pub(crate) struct Target<'a> {
    pub(crate) id: &'a MemoryId,
    pub(crate) dirs: Vec<&'a str>,
    pub(crate) file: String,
    pub(crate) scope_len: usize,
}

impl<'a> Target<'a> {
    pub(crate) fn new(id: &'a MemoryId) -> Target<'a> {
        let (dirs, file) = entry_components(id);
        let scope_len = if id.scope().has_owner() { 2 } else { 1 };
        Target { id, dirs, file, scope_len }
    }

    pub(crate) fn dir_rel(&self) -> String {
        self.dirs.join("/")
    }

    pub(crate) fn rel(&self) -> String {
        format!("{}/{}", self.dir_rel(), self.file)
    }
}

impl MarkdownStore {
    /// Opens the store at `root`, creating the root (0700, with any missing parents) if it does not exist, and
    /// reading its settings from `<root>/config.yaml` (defaults when the file is absent).
    ///
    /// # Errors
    ///
    /// [`RootOpenError`]: the root cannot be created or opened, is not a directory, folds case
    /// ([`StorageErrorKind::CaseInsensitive`]), or `config.yaml` cannot be used ([`RootOpenError::Config`]).
    pub fn open(root: impl AsRef<Path>) -> Result<MarkdownStore, RootOpenError> {
        MarkdownStore::open_with(root, StoreOptions::new())
    }

    /// Opens the store at `root` with explicit limits; `config.yaml` is not read.
    ///
    /// # Errors
    ///
    /// As [`open`](MarkdownStore::open), without the configuration errors.
    pub fn open_with_limits(root: impl AsRef<Path>, limits: Limits) -> Result<MarkdownStore, RootOpenError> {
        MarkdownStore::open_with(root, StoreOptions::new().limits(limits))
    }

    /// Opens the store at `root` with `options`.
    ///
    /// # Errors
    ///
    /// As [`open`](MarkdownStore::open); [`RootOpenError::Missing`] for a missing root when it is not to be created.
    pub fn open_with(root: impl AsRef<Path>, options: StoreOptions) -> Result<MarkdownStore, RootOpenError> {
        let given = root.as_ref();
        let root_error = |what: &str, e: &dyn std::fmt::Display| {
            StorageError::about(
                StorageErrorKind::Io,
                None,
                format!("cannot {what} the memory root `{}`: {}", given.display(), lower(e)),
            )
        };
        match given.metadata() {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(RootOpenError::NotADirectory(given.to_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !options.create_missing => {
                return Err(RootOpenError::Missing(given.to_owned()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                make_dir_all(given).map_err(|errno| root_error("create", &std::io::Error::from(errno)))?;
            }
            Err(e) => return Err(root_error("open", &e).into()),
        }
        let root_path = given.canonicalize().map_err(|e| root_error("resolve", &e))?;
        let root =
            RootHandle::open(&root_path, options.force_component_walk).map_err(|e| root_error("open", &e))?;
        #[cfg(feature = "testkit")]
        let root = match options.force_opening {
            Some(opening) => root.force_opening(opening),
            None => root,
        };
        let casefold = has_casefold_flag(root.fd());
        let probe = case::probe_case(&root).unwrap_or(CaseProbe::Unknown);
        case::case_verdict(probe, casefold, &root_path)?;
        let config = match options.config {
            Some(config) => config,
            None => read_config(&root, &root_path.join(CONFIG_FILE))?,
        };
        Ok(MarkdownStore {
            root_path,
            root,
            config,
            locks: OnceLock::new(),
            threads: OnceLock::new(),
            force_link_fallback: options.force_link_fallback,
            cache: options.entry_cache.map(|bytes| {
                EntryCache::new(bytes, options.entry_cache_handles.unwrap_or_else(default_cache_handles))
            }),
        })
    }

    /// The settings in force (from `config.yaml`, or as given).
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root_path
    }

    /// How paths below the root are resolved (`openat2`, or the component walk).
    pub fn resolution(&self) -> Resolution {
        self.root.resolution()
    }

    /// How entry files are opened for reading: directly on a root mounted `nodev` (where no device node can be
    /// opened), else by an `O_PATH` handle reopened through `/proc/self/fd`.
    pub fn opening(&self) -> Opening {
        self.root.opening()
    }

    /// How full the entry cache is; `None` when the store has none ([`StoreOptions::entry_cache`]).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache.as_ref().map(EntryCache::stats)
    }

    // ----- errors -----

    pub(crate) fn symlink_error(id: &MemoryId, rel: &str) -> StoreError {
        StoreError::Storage(StorageError::new(
            StorageErrorKind::SymlinkEscape,
            Some(id),
            format!("{SYMLINK_ESCAPE}: `{rel}` is or passes through a symbolic link"),
        ))
    }

    pub(crate) fn io_error(id: &MemoryId, what: &str, rel: &str, errno: Errno) -> StoreError {
        let error = std::io::Error::from(errno);
        StoreError::Storage(StorageError::new(
            StorageErrorKind::Io,
            Some(id),
            format!("cannot {what} `{rel}`: {}", lower(&error)),
        ))
    }

    pub(crate) fn miss_error(id: &MemoryId, rel: &str, miss: Miss) -> StoreError {
        match miss {
            Miss::Symlink => MarkdownStore::symlink_error(id, rel),
            Miss::Escape => StoreError::Storage(StorageError::new(
                StorageErrorKind::PathEscape,
                Some(id),
                format!("{ESCAPES_ROOT}: `{rel}`"),
            )),
            Miss::NotFound => MarkdownStore::io_error(id, "open", rel, Errno::NOENT),
            Miss::NotDirectory => MarkdownStore::io_error(id, "open", rel, Errno::NOTDIR),
            Miss::Io(errno) => MarkdownStore::io_error(id, "open", rel, errno),
        }
    }

    fn walk_error(name: &str, error: WalkError<StoreError>) -> StoreError {
        match error {
            WalkError::Consumer(error) => error,
            WalkError::Casefold { rel } => {
                StoreError::Storage(case_error(&format!("the directory `{rel}` has the casefold attribute")))
            }
            WalkError::Dir { rel, miss } => {
                let message = match miss {
                    Miss::Symlink => format!("{SYMLINK_ESCAPE}: `{rel}` is a symbolic link"),
                    Miss::Escape => format!("{ESCAPES_ROOT}: `{rel}`"),
                    Miss::NotFound => format!("cannot list `{rel}`: it vanished"),
                    Miss::NotDirectory => format!("cannot list `{rel}`: not a directory"),
                    Miss::Io(errno) => {
                        format!("cannot list `{rel}`: {}", lower(&std::io::Error::from(errno)))
                    }
                };
                let kind = match miss {
                    Miss::Symlink => StorageErrorKind::SymlinkEscape,
                    Miss::Escape => StorageErrorKind::PathEscape,
                    _ => StorageErrorKind::Io,
                };
                StoreError::Storage(StorageError::about(kind, Some(name), message))
            }
        }
    }

    pub(crate) fn check_casefold(dir: BorrowedFd<'_>, rel: &str) -> Result<(), StoreError> {
        if has_casefold_flag(dir) {
            return Err(StoreError::Storage(case_error(&format!(
                "the directory `{rel}` has the casefold attribute"
            ))));
        }
        Ok(())
    }

    // ----- locks -----

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

    pub(crate) fn lock_scope_root(&self, id: &MemoryId, exclusive: bool) -> Result<LockGuard, StoreError> {
        let hash = fnv1a64(id.scope_root().as_str().as_bytes());
        self.lock(id, &format!("scope-{hash:016x}"), exclusive)
    }

    pub(crate) fn lock_entry(&self, id: &MemoryId) -> Result<LockGuard, StoreError> {
        let bucket = fnv1a64(id.as_str().as_bytes()) % ENTRY_LOCK_BUCKETS;
        self.lock(id, &format!("entry-{bucket:03x}"), true)
    }

    // ----- reading -----

    /// Opens the entry's directory and reads what is at the entry's name (`Missing` when the directory does not
    /// exist).
    pub(crate) fn load(
        &self,
        t: &Target<'_>,
        mode: ReadMode,
    ) -> Result<(Option<OwnedFd>, ReadOutcome), StoreError> {
        let dir = match self.root.open_dir(&t.dirs) {
            Ok(dir) => dir,
            Err(Miss::NotFound | Miss::NotDirectory) => return Ok((None, ReadOutcome::Missing)),
            Err(miss) => return Err(MarkdownStore::miss_error(t.id, &t.dir_rel(), miss)),
        };
        MarkdownStore::check_casefold(dir.as_fd(), &t.dir_rel())?;
        let outcome = read_entry(&self.root, dir.as_fd(), &t.file, t.id.clone(), mode)
            .map_err(|errno| MarkdownStore::io_error(t.id, "read", &t.rel(), errno))?;
        Ok((Some(dir), outcome))
    }

    /// The entry at `t`, read in `mode`, with its directory; `None` when there is none (a directory at its name is
    /// none, by the file/directory clash rule). Anything else at its name is the error a door reports.
    pub(crate) fn load_entry(
        &self,
        t: &Target<'_>,
        mode: ReadMode,
    ) -> Result<Option<(OwnedFd, ParsedEntryFile)>, StoreError> {
        match self.load(t, mode)? {
            (Some(dir), ReadOutcome::Entry(parsed)) => Ok(Some((dir, parsed))),
            (_, ReadOutcome::Entry(_) | ReadOutcome::Missing | ReadOutcome::Directory) => Ok(None),
            (_, ReadOutcome::Symlink) => Err(MarkdownStore::symlink_error(t.id, &t.rel())),
            (_, ReadOutcome::Special) => Err(StoreError::Storage(StorageError::new(
                StorageErrorKind::NotRegular,
                Some(t.id),
                format!("`{}` is a FIFO, socket or device, not an entry file; it was not opened", t.rel()),
            ))),
            (_, ReadOutcome::Refused(refusal)) => Err(MarkdownStore::refusal_error(t.id, &t.rel(), &refusal)),
        }
    }

    fn refusal_error(id: &MemoryId, rel: &str, refusal: &Refusal) -> StoreError {
        let (kind, message) = match refusal {
            Refusal::HardLink { links } => (
                StorageErrorKind::HardLink,
                format!(
                    "{SYMLINK_ESCAPE}: `{rel}` has {links} hard links, so it may alias another role's entry, the audit \
                     log or a file outside the root; it is not read (`alp memory delete` removes this name)"
                ),
            ),
            Refusal::TooLarge { bytes, limit } => (
                StorageErrorKind::TooLarge,
                format!(
                    "`{rel}` is {bytes} bytes, over the limit of {limit} (limits.maxFileBytes); it is not read (delete \
                     it, or raise the limit)"
                ),
            ),
            Refusal::VersionOverCap { version } => (
                StorageErrorKind::VersionOverCap,
                format!(
                    "`{rel}` claims version {}, above the largest version an entry may hold ({MAX_VERSION}); fix the \
                     file's version or delete it",
                    memory_id::shown(version)
                ),
            ),
        };
        StoreError::Storage(StorageError::new(kind, Some(id), message))
    }

    /// The live entry at `t` ([`memory_entry::live`]), read whole, with its directory.
    pub(crate) fn load_live(
        &self,
        t: &Target<'_>,
        now: Timestamp,
    ) -> Result<(OwnedFd, ParsedEntryFile), StoreError> {
        memory_entry::live(t.id, self.load_entry(t, self.full_read())?, now)
    }

    /// The live entry at `t` at `expected_version` ([`memory_entry::live_at`]), read whole, with its directory.
    pub(crate) fn load_live_at(
        &self,
        t: &Target<'_>,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<(OwnedFd, ParsedEntryFile), StoreError> {
        memory_entry::live_at(t.id, self.load_entry(t, self.full_read())?, expected_version, now)
    }

    /// Threads a listing reads with: the available parallelism, at most 8.
    fn threads(&self) -> usize {
        *self.threads.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(8))
    }

    /// How an entry is read whole: at most `limits.maxFileBytes`.
    pub(crate) fn full_read(&self) -> ReadMode {
        ReadMode::Full { max_bytes: self.config.limits.max_file_bytes }
    }

    /// Keeps what a listing returns: entries `keep` scores. Files that are not read as entries are skipped (they
    /// still count against the entry limit, which counts names), as every listing skips them
    /// ([`listing::skipped`]).
    fn listed(
        outcome: ReadOutcome,
        id: &MemoryId,
        keep: Keep<'_>,
        buffer: &mut FoldBuffer,
    ) -> Option<Scored> {
        match outcome {
            ReadOutcome::Entry(parsed) => {
                keep(&parsed.entry, buffer).map(|score| Scored { entry: parsed.entry, score })
            }
            other => {
                listing::skipped(id, &other);
                None
            }
        }
    }

    /// Reads the files of a walk batch, in parallel when there are many, keeping those `keep` accepts.
    fn read_files(&self, files: &[FileRef], keep: Keep<'_>) -> Result<Vec<Scored>, StoreError> {
        let read_part = |part: &[FileRef]| -> Result<Vec<Scored>, StoreError> {
            // One folding buffer per thread, reused for every entry it scores.
            let mut buffer = FoldBuffer::new();
            let mut out = Vec::with_capacity(part.len());
            for file in part {
                let outcome =
                    read_entry(&self.root, file.dir_fd(), file.name(), file.id().clone(), self.full_read())
                        .map_err(|errno| MarkdownStore::io_error(file.id(), "read", file.name(), errno))?;
                out.extend(MarkdownStore::listed(outcome, file.id(), keep, &mut buffer));
            }
            Ok(out)
        };
        let threads = self.threads();
        if threads <= 1 || files.len() < 64 {
            return read_part(files);
        }
        let size = files.len().div_ceil(threads);
        let results: Vec<Option<Result<Vec<Scored>, StoreError>>> = std::thread::scope(|scope| {
            let handles: Vec<_> =
                files.chunks(size).map(|part| scope.spawn(move || read_part(part))).collect();
            handles.into_iter().map(|handle| handle.join().ok()).collect()
        });
        let mut out = Vec::with_capacity(files.len());
        for result in results {
            match result {
                Some(Ok(entries)) => out.extend(entries),
                Some(Err(error)) => return Err(error),
                None => {
                    return Err(StoreError::Storage(StorageError::about(
                        StorageErrorKind::Io,
                        None,
                        "a listing thread panicked",
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Every entry under `roots` that `keep` scores, unsorted.
    pub(crate) fn collect(
        &self,
        name: &str,
        roots: &[WalkRoot],
        clean_temp: bool,
        keep: Keep<'_>,
    ) -> Result<Vec<Scored>, StoreError> {
        let mut out = Vec::new();
        walk(&self.root, roots, clean_temp, &mut |files: Vec<FileRef>| {
            out.extend(self.read_files(&files, keep)?);
            Ok(())
        })
        .map_err(|e| MarkdownStore::walk_error(name, e))?;
        Ok(out)
    }

    /// The IDs under `roots`, without reading the files.
    pub(crate) fn ids(
        &self,
        name: &str,
        roots: &[WalkRoot],
        clean_temp: bool,
    ) -> Result<Vec<MemoryId>, StoreError> {
        let mut out = Vec::new();
        walk(&self.root, roots, clean_temp, &mut |files: Vec<FileRef>| {
            out.extend(files.iter().map(|file| file.id().clone()));
            Ok::<(), StoreError>(())
        })
        .map_err(|e| MarkdownStore::walk_error(name, e))?;
        Ok(out)
    }

    pub(crate) fn scope_walk_root(id: &MemoryId) -> WalkRoot {
        WalkRoot {
            dirs: scope_dirs(id.scope(), id.owner()).into_iter().map(str::to_owned).collect(),
            prefix: id.scope_root().as_str().to_owned(),
        }
    }

    /// The smallest ID of another entry of `id`'s scope root holding this (type, key, scope).
    pub(crate) fn duplicate_holder(
        &self,
        id: &MemoryId,
        wanted: (Option<MemoryType>, &Key, Option<&ScopeRef>),
    ) -> Result<Option<MemoryId>, StoreError> {
        let root = id.scope_root();
        let keep = |other: &MemoryEntry, _: &mut FoldBuffer| {
            (other.id != *id && other.fields.unique_key() == Some(wanted)).then_some(0)
        };
        let holders = self.collect(root.as_str(), &[MarkdownStore::scope_walk_root(id)], false, &keep)?;
        Ok(holders.into_iter().map(|scored| scored.entry.id).min())
    }

    // ----- writing -----

    /// Writes `bytes` to `file` in `dir` atomically and durably: temporary file, fsync, rename, directory fsync.
    pub(crate) fn write_file(
        &self,
        t: &Target<'_>,
        dir: BorrowedFd<'_>,
        bytes: &[u8],
        replace: bool,
    ) -> Result<(), StoreError> {
        let install = match (replace, self.force_link_fallback) {
            (true, _) => Install::Replace,
            #[cfg(feature = "testkit")]
            (false, true) => Install::NoReplaceByLink,
            (false, _) => Install::NoReplace,
        };
        write_atomic(&self.root, dir, &t.file, bytes, install)
            .map_err(|error| MarkdownStore::write_error(t, error))
    }

    /// What a failed step of an atomic write of `t`'s file means.
    pub(crate) fn write_error(t: &Target<'_>, error: WriteError) -> StoreError {
        match error {
            WriteError::CreateTemp(errno) => {
                MarkdownStore::io_error(t.id, "create a temporary file in", &t.dir_rel(), errno)
            }
            WriteError::Write(errno) => MarkdownStore::io_error(t.id, "write", &t.rel(), errno),
            WriteError::Exists => StoreError::AlreadyExists {
                id: t.id.clone(),
                existing: t.id.as_str().to_owned(),
                reason: ExistsReason::SameId,
            },
            WriteError::Install(errno) => MarkdownStore::io_error(t.id, "replace", &t.rel(), errno),
            WriteError::SyncDir(errno) => MarkdownStore::io_error(t.id, "sync", &t.dir_rel(), errno),
        }
    }

    /// The error for a component of `t`'s directories, at index `index`, that exists but is not a directory.
    pub(crate) fn in_the_way(&self, t: &Target<'_>, parent: BorrowedFd<'_>, index: usize) -> StoreError {
        let name = t.dirs[index];
        let rel = t.dirs[..=index].join("/");
        let is_file = matches!(kind_at(parent, name), Ok(FileType::RegularFile));
        if is_file
            && index >= t.scope_len
            && let Some(stem) = name.strip_suffix(".md").filter(|stem| is_segment_name(stem))
        {
            let segments: Vec<&str> = t.id.path_segments().collect();
            let mut holder = t.id.scope_root().as_str().to_owned();
            for segment in &segments[..index - t.scope_len] {
                holder.push(':');
                holder.push_str(segment);
            }
            holder.push(':');
            holder.push_str(stem);
            if memory_id::parse_memory_id(&holder).is_ok() {
                return StoreError::AlreadyExists {
                    id: t.id.clone(),
                    existing: holder,
                    reason: ExistsReason::FileDirectoryClash,
                };
            }
        }
        StoreError::Storage(StorageError::new(
            StorageErrorKind::Corrupt,
            Some(t.id),
            format!("`{rel}` is not a directory but the entry's path needs one there"),
        ))
    }

    /// Removes the directory `name` in `parent` if it and its subdirectories hold nothing but subdirectories and
    /// leftover temporary files. Only under the exclusive scope-root lock.
    pub(crate) fn remove_empty_tree(&self, parent: BorrowedFd<'_>, name: &str, depth: usize) -> bool {
        if depth > memory_id::MAX_SEGMENTS {
            return false;
        }
        let Ok(dir) = self.root.step_dir(parent, name) else { return false };
        let Ok(names) = read_names(dir.as_fd()) else { return false };
        for (child, kind) in names {
            let removed = match kind {
                FileType::Directory => self.remove_empty_tree(dir.as_fd(), &child, depth + 1),
                FileType::RegularFile if child.starts_with(TEMP_PREFIX) => {
                    rustix::fs::unlinkat(dir.as_fd(), child.as_str(), AtFlags::empty()).is_ok()
                }
                _ => false,
            };
            if !removed {
                return false;
            }
        }
        rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR).is_ok()
    }

    /// After a delete: removes the entry's directories that are now empty, up to (not including) the scope root,
    /// so that a later create of the file they would clash with succeeds. Best effort.
    pub(crate) fn prune_empty_dirs(&self, t: &Target<'_>) {
        for end in (t.scope_len..t.dirs.len()).rev() {
            let Ok(parent) = self.root.open_dir(&t.dirs[..end]) else { return };
            if rustix::fs::unlinkat(parent.as_fd(), t.dirs[end], AtFlags::REMOVEDIR).is_err() {
                return;
            }
            let _ = sync(parent.as_fd());
        }
    }

    /// Deletes the entry if `check` accepts what is found at `id` (the live or the expired entry at the expected
    /// version, as the caller wants).
    fn remove(
        &self,
        id: &MemoryId,
        now: Timestamp,
        check: &dyn Fn(Option<Loaded>) -> Result<Loaded, StoreError>,
    ) -> Result<(), StoreError> {
        let t = Target::new(id);
        let _scope = self.lock_scope_root(id, false)?;
        let _entry = self.lock_entry(id)?;
        // Only the frontmatter is read: a delete unlinks a name, so a file too large to read, or with a second link,
        // may be deleted (an alias is removed through `alp` like any entry).
        let (dir, parsed) = check(self.load_entry(&t, ReadMode::Head)?)?;
        let tombstone = memory_entry::next_version(id, Some(parsed.entry.version))?;
        // History first: the entry as read (when it can be read whole: a file refused for its size or links is
        // deleted without a copy) and the tombstone, both durable, and only then the name goes.
        // The entry file itself moves into the history when it is exactly the copy that would be written there (a
        // file alp wrote): one rename instead of a second durable write.
        let mut bytes = Vec::new();
        let whole = match read_file(&self.root, dir.as_fd(), &t.file, self.full_read(), &mut bytes)
            .map_err(|errno| MarkdownStore::io_error(id, "read", &t.rel(), errno))?
        {
            ReadOutcome::Entry(stat) => {
                let parsed = parse_entry_file(id.clone(), &bytes, mtime(&stat));
                parsed.version_over_cap.is_none().then_some((Version::Entry(parsed.entry), stat))
            }
            _ => None,
        };
        let ghost =
            Version::Tombstone { id: id.clone(), version: tombstone, deleted_at: now.truncated_to_millis() };
        let moving = whole
            .as_ref()
            .and_then(|(version, stat)| Moving::of(dir.as_fd(), &t.file, version, &bytes, stat));
        let (history, moved) = match (moving, &whole) {
            (Some(moving), _) => self.keep_versions_moving(&t, std::slice::from_ref(&ghost), Some(moving))?,
            (None, Some((version, _))) => (self.keep_versions(&t, &[version.clone(), ghost])?, false),
            (None, None) => (self.keep_versions(&t, std::slice::from_ref(&ghost))?, false),
        };
        if !moved {
            rustix::fs::unlinkat(dir.as_fd(), t.file.as_str(), AtFlags::empty())
                .map_err(|errno| MarkdownStore::io_error(id, "delete", &t.rel(), errno))?;
        }
        sync(dir.as_fd()).map_err(|errno| MarkdownStore::io_error(id, "sync", &t.dir_rel(), errno))?;
        drop(dir);
        self.prune_empty_dirs(&t);
        self.prune_listed(&t, tombstone, history);
        Ok(())
    }
}

/// Reads `<root>/config.yaml` (`path`) through the root handle: a regular file of at most 64 KiB, never a symlink,
/// never anything else opened for reading; absent → defaults. A file that is there but cannot be opened or read for
/// a reason of the system's (too many open files, a permission error, an I/O error) says nothing about the
/// settings: it is a storage failure ([`StorageErrorKind::Io`]) naming the file and the reason, not a broken
/// `config.yaml`.
fn read_config(root: &RootHandle, path: &Path) -> Result<StoreConfig, RootOpenError> {
    let bad = |why: &str| RootOpenError::Config(ConfigError::file_problem(why).in_file(path));
    let io = |error: &std::io::Error| {
        RootOpenError::Storage(StorageError::about(
            StorageErrorKind::Io,
            None,
            format!("cannot read `{}`: {}", path.display(), lower(error)),
        ))
    };
    let too_large = || bad(&format!("it is larger than {} KiB", CONFIG_MAX_BYTES / 1024));
    let (fd, size) = match open_regular(root, root.fd(), CONFIG_FILE) {
        Ok(Opened::Regular { fd, stat })
            if u64::try_from(stat.st_size).unwrap_or(u64::MAX) <= CONFIG_MAX_BYTES =>
        {
            (fd, u64::try_from(stat.st_size).unwrap_or(0))
        }
        Ok(Opened::Regular { .. }) => return Err(too_large()),
        Ok(Opened::Symlink) | Err(Errno::LOOP) => return Err(bad("it is a symbolic link")),
        Ok(Opened::Directory | Opened::Special) => return Err(bad("it is not a regular file")),
        Err(Errno::NOENT) => return Ok(StoreConfig::default()),
        Err(errno) => return Err(io(&std::io::Error::from(errno))),
    };
    let mut bytes = Vec::new();
    if !memory_fs::read_bounded(File::from(fd), size, CONFIG_MAX_BYTES, &mut bytes).map_err(|e| io(&e))? {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|_| bad("it is not UTF-8"))?;
    StoreConfig::from_yaml(&text).map_err(|e| RootOpenError::Config(e.in_file(path)))
}

/// The largest `config.yaml` read.
const CONFIG_MAX_BYTES: u64 = 64 * 1024;

/// The walk roots and direct entry files of a listing, after dropping prefixes inside other prefixes.
fn plan_listing(roots: &[MemoryPrefix]) -> (Vec<WalkRoot>, Vec<MemoryId>) {
    let mut kept: Vec<&MemoryPrefix> = Vec::new();
    for prefix in roots {
        let inside_other = roots.iter().any(|other| other != prefix && other.contains_prefix(prefix));
        if !inside_other && !kept.contains(&prefix) {
            kept.push(prefix);
        }
    }
    let mut walks = Vec::new();
    let mut files = Vec::new();
    for prefix in kept {
        let mut dirs: Vec<String> =
            scope_dirs(prefix.scope(), prefix.owner()).into_iter().map(str::to_owned).collect();
        let skip = dirs.len();
        dirs.extend(prefix.segments().skip(skip).map(str::to_owned));
        walks.push(WalkRoot { dirs, prefix: prefix.as_str().to_owned() });
        if let Some(id) = prefix.to_id() {
            files.push(id);
        }
    }
    (walks, files)
}

impl MemoryStore for MarkdownStore {
    fn limits(&self) -> &Limits {
        &self.config.limits
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let t = Target::new(id);
        self.load_live(&t, now).map(|(_, parsed)| parsed.entry)
    }

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        let (walks, files) = plan_listing(listing.roots());
        let keep = |entry: &MemoryEntry, buffer: &mut FoldBuffer| {
            if listing.admits(entry) { listing.score(entry, buffer) } else { None }
        };
        let mut buffer = FoldBuffer::new();
        let mut out = Vec::new();
        for id in &files {
            listing.check_cancelled()?;
            let t = Target::new(id);
            match self.load(&t, self.full_read()) {
                Ok((_, outcome)) => out.extend(MarkdownStore::listed(outcome, id, &keep, &mut buffer)),
                Err(StoreError::Storage(e)) if e.kind() == StorageErrorKind::SymlinkEscape => {
                    tracing::debug!(id = %id, "listing skips a symbolic link");
                }
                Err(e) => return Err(e),
            }
        }
        let name = listing.roots().first().map_or("", MemoryPrefix::as_str);
        let cx = listing::Context {
            root: &self.root,
            listing,
            max_bytes: self.config.limits.max_file_bytes,
            cache: self.cache.as_ref(),
            generation: self.cache.as_ref().map_or(0, EntryCache::next_generation),
        };
        let walked = listing::list_walked(&cx, &walks, self.threads())
            .map_err(|e| MarkdownStore::walk_error(name, e))?;
        out.extend(walked);
        Ok(listing.finish(out))
    }

    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        self.plan_batch_locked(batch, now)
    }

    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        self.write_batch_locked(batch, expected, now)
    }

    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.rename_locked(from, to, expected_version, now)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let t = Target::new(id);
        let sets_unique = patch.touches_unique_key();
        let _scope = self.lock_scope_root(id, sets_unique)?;
        let _entry = if sets_unique { None } else { Some(self.lock_entry(id)?) };
        let (dir, parsed) = self.load_live_at(&t, expected_version, now)?;
        if parsed.lossy_utf8 && patch.content().is_none() {
            return Err(StoreError::Storage(StorageError::new(
                StorageErrorKind::Corrupt,
                Some(id),
                format!(
                    "`{}` holds content that is not valid utf-8; an update must replace the content",
                    t.rel()
                ),
            )));
        }
        let mut updated = parsed.entry.clone();
        patch.apply(&mut updated, now.truncated_to_millis())?;
        if sets_unique && let Some(unique) = updated.fields.unique_key() {
            memory_entry::check_key_free(id, self.duplicate_holder(id, unique)?)?;
        }
        // The file as read goes to history first: a hand-written note is kept the first time alp overwrites it.
        // The new file is written and synced under a temporary name meanwhile, on a thread of its own (the two
        // syncs are independent, and the file system may make them one); it takes the entry's name only once the
        // kept version is durable.
        let bytes = render_entry_file(&updated);
        let stage = || {
            let mut staged = Staged::write(&self.root, dir.as_fd(), bytes.as_bytes())?;
            staged.sync()?;
            Ok::<_, WriteError>(staged)
        };
        let (history, staged) = std::thread::scope(|scope| {
            let staging = std::thread::Builder::new().spawn_scoped(scope, stage);
            let history = self.keep_current(&t, &parsed.entry);
            let staged = match staging {
                Ok(staging) => staging.join(),
                // No thread to be had (a process at its limit): one after the other, as any write.
                Err(_) => Ok(stage()),
            };
            (history, staged)
        });
        let staged = match staged {
            Ok(staged) => staged.map_err(|error| MarkdownStore::write_error(&t, error)),
            Err(_) => Err(StoreError::Storage(StorageError::new(
                StorageErrorKind::Io,
                Some(id),
                format!("the thread writing `{}` panicked", t.rel()),
            ))),
        };
        // Either failure drops the staged file, which removes it: the entry is as it was.
        let history = history?;
        staged?.install(&t.file, Install::Replace).map_err(|error| MarkdownStore::write_error(&t, error))?;
        sync(dir.as_fd()).map_err(|errno| MarkdownStore::write_error(&t, WriteError::SyncDir(errno)))?;
        self.prune_listed(&t, updated.version, history);
        Ok(updated)
    }

    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.remove(id, now, &|found| memory_entry::live_at(id, found, expected_version, now))
    }

    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.remove(id, now, &|found| memory_entry::expired_at(id, found, expected_version, now))
    }

    fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        self.history_of(id, limit)
    }

    fn restore(
        &self,
        id: &MemoryId,
        version: u64,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.restore_locked(id, version, expected_version, now)
    }

    fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        let t = Target::new(id);
        let _scope = self.lock_scope_root(id, false)?;
        let _entry = self.lock_entry(id)?;
        let kept = self.kept(&t)?;
        let current = kept.current.as_ref().map(|entry| entry.version);
        let all = kept.all();
        let found = memory_entry::find_version(&all, id, version)?;
        memory_entry::check_redactable(found, current)?;
        self.redact_file(&t, found)
    }
}
