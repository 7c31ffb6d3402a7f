//! The Markdown store: one file per entry under a memory root, race-free and durable. This file holds the type and
//! its [`MemoryStore`] face; the work is in `open` (opening a root), `reads`, `writes`, `history`, `locks` and
//! `errors` (what the system's answers mean to a caller).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memory_entry::{Limits, MemoryEntry, Patch, StoreError, Timestamp, Version};
use memory_fs::{Opening, Resolution, RootHandle};
use memory_id::MemoryId;
use memory_store::{Batch, BatchPlan, Listing, MemoryStore, Scored};

use crate::StoreConfig;
use crate::cache::{CacheStats, EntryCache};
use crate::path::EntryPath;

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
/// with a [`StorageError`](memory_entry::StorageError) of kind
/// [`StorageErrorKind::SymlinkEscape`](memory_entry::StorageErrorKind::SymlinkEscape) ("memory path symlink
/// escape"). Listing skips symlinks instead of failing. Files are created 0600 and directories 0700.
///
/// # Case folding
///
/// Two IDs that differ only in case must not alias one file. Refused with
/// [`StorageErrorKind::CaseInsensitive`](memory_entry::StorageErrorKind::CaseInsensitive):
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
/// Those of [`MemoryStore`], checked by the adapter suite against [`InMemoryStore`](memory_store::InMemoryStore). Two
/// things only a hand-edited root can show: (type, key, scope) uniqueness is checked when a create or an update
/// sets one of the three (so an update of a hand-made duplicate that leaves them alone succeeds), and a directory
/// or special file at an entry's name is not an entry (a get finds nothing there).
#[derive(Debug)]
pub struct MarkdownStore {
    pub(crate) root_path: PathBuf,
    pub(crate) root: RootHandle,
    pub(crate) config: StoreConfig,
    pub(crate) locks: OnceLock<OwnedFd>,
    /// Threads a listing reads with: asked of the system (which reads cgroup files) by the first listing, not by
    /// calls that never list.
    pub(crate) threads: OnceLock<usize>,
    pub(crate) force_link_fallback: bool,
    pub(crate) cache: Option<EntryCache>,
}

impl MarkdownStore {
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

    /// How full the entry cache is; `None` when the store has none
    /// ([`StoreOptions::entry_cache`](crate::StoreOptions::entry_cache)).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache.as_ref().map(EntryCache::stats)
    }
}

impl MemoryStore for MarkdownStore {
    fn limits(&self) -> &Limits {
        &self.config.limits
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let t = EntryPath::new(id);
        self.load_live(&t, now).map(|(_, parsed)| parsed.entry)
    }

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        self.list_entries(listing)
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
        self.update_locked(id, expected_version, patch, now)
    }

    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.remove(id, now, &|found| memory_store::live_at(id, found, expected_version, now))
    }

    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.remove(id, now, &|found| memory_store::expired_at(id, found, expected_version, now))
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
        self.redact_locked(id, version)
    }
}
