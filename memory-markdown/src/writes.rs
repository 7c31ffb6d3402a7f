//! The writes that follow the create rules of `memory-entry` (`plan`), under the scope-root lock: batches (a create
//! is a batch of one), renames, restores, and the exact inserts of a store copy. The rules themselves are not here:
//! this module shows them the scope root ([`View`]) and writes what they planned. Updates and deletes, which follow
//! no create rule, are here too, as are the atomic write of one file and the pruning of emptied directories.

use std::cell::OnceCell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use memory_entry::{
    ExistsReason, Extra, Key, MemoryEntry, MemoryType, NewEntry, Patch, ScopeRef, StorageError,
    StorageErrorKind, StoreError, Timestamp, Version, next_version,
};
use memory_fs::{
    Fallback, Install, MadeDir, MakeDirError, Miss, Staged, TEMP_PREFIX, WriteError, kind_at, make_dir,
    read_names, rename_noreplace, sync, write_atomic,
};
use memory_id::{MemoryId, MemoryPrefix};
use memory_ranker::FoldBuffer;
use memory_store::{
    Batch, BatchPlan, Existing, ScopeView, Step, check_plan_unchanged, paths_clash, plan, restored,
};
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::entry_file::{ReadMode, ReadOutcome, mtime, read_file};
use crate::history::Moving;
use crate::markdown::MarkdownStore;
use crate::path::EntryPath;
use crate::walk::{Leftovers, WalkRoot};
use crate::{ParsedEntryFile, parse_entry_file, render_entry_file};

/// One scope root of the store as the create rules see it, while its lock is held. Listings are made once and kept.
pub(crate) struct View<'a> {
    store: &'a MarkdownStore,
    root: MemoryPrefix,
    /// Remove leftover temporary files on the way (only under the exclusive lock).
    leftovers: Leftovers,
    /// An entry being moved out of this root (a rename): its name is as good as free.
    leaving: Option<&'a MemoryId>,
    ids: OnceCell<Vec<MemoryId>>,
    keys: OnceCell<Vec<(MemoryId, Option<OwnedKey>)>>,
}

/// An entry's (type, key, scope), owned, as the view caches it.
type OwnedKey = (Option<MemoryType>, Key, Option<ScopeRef>);

impl<'a> View<'a> {
    fn new(
        store: &'a MarkdownStore,
        root: MemoryPrefix,
        leftovers: Leftovers,
        leaving: Option<&'a MemoryId>,
    ) -> Self {
        View { store, root, leftovers, leaving, ids: OnceCell::new(), keys: OnceCell::new() }
    }

    fn walk_root(&self) -> WalkRoot {
        WalkRoot {
            dirs: crate::path::scope_dirs(self.root.scope(), self.root.owner())
                .into_iter()
                .map(str::to_owned)
                .collect(),
            prefix: self.root.as_str().to_owned(),
        }
    }

    /// Every name of the scope root that maps to an ID (read or not: the limit counts names).
    fn ids(&self) -> Result<&[MemoryId], StoreError> {
        if self.ids.get().is_none() {
            let mut ids = self.store.ids(self.root.as_str(), &[self.walk_root()], self.leftovers)?;
            ids.retain(|id| Some(id) != self.leaving);
            let _ = self.ids.set(ids);
        }
        Ok(self.ids.get().map(Vec::as_slice).unwrap_or_default())
    }

    /// The (type, key, scope) of every readable entry of the scope root.
    fn keys(&self) -> Result<&[(MemoryId, Option<OwnedKey>)], StoreError> {
        if self.keys.get().is_none() {
            let everything = |_: &MemoryEntry, _: &mut FoldBuffer| Some(0);
            let entries =
                self.store.collect(self.root.as_str(), &[self.walk_root()], Leftovers::Leave, &everything)?;
            let keys = entries
                .into_iter()
                .filter(|scored| Some(&scored.entry.id) != self.leaving)
                .map(|scored| {
                    let fields = &scored.entry.fields;
                    let unique = fields.unique_key().map(|(t, k, s)| (t, k.clone(), s.cloned()));
                    (scored.entry.id, unique)
                })
                .collect();
            let _ = self.keys.set(keys);
        }
        Ok(self.keys.get().map(Vec::as_slice).unwrap_or_default())
    }
}

impl ScopeView for View<'_> {
    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.ids()?.len() as u64)
    }

    fn existing(&self, id: &MemoryId) -> Result<Existing, StoreError> {
        if Some(id) == self.leaving {
            return Ok(Existing::None);
        }
        let t = EntryPath::new(id);
        Ok(match self.store.load(&t, self.store.full_read())?.1 {
            ReadOutcome::Entry(parsed) => Existing::Entry(Box::new(parsed.entry)),
            ReadOutcome::Missing | ReadOutcome::Directory => Existing::None,
            ReadOutcome::Refused(_) | ReadOutcome::Special => Existing::Unreadable,
            ReadOutcome::Symlink => return Err(MarkdownStore::symlink_error(id, &t.rel())),
        })
    }

    fn clash(&self, id: &MemoryId) -> Result<Option<MemoryId>, StoreError> {
        match self.ids()?.iter().filter(|other| paths_clash(id, other)).min() {
            Some(live) => Ok(Some(live.clone())),
            None => self.store.history_clash(id),
        }
    }

    fn holder(
        &self,
        id: &MemoryId,
        unique: (Option<MemoryType>, &Key, Option<&ScopeRef>),
    ) -> Result<Option<MemoryId>, StoreError> {
        let (memory_type, key, scope) = unique;
        Ok(self
            .keys()?
            .iter()
            .filter(|(other, held)| {
                other != id
                    && held
                        .as_ref()
                        .is_some_and(|(t, k, s)| *t == memory_type && k == key && s.as_ref() == scope)
            })
            .map(|(other, _)| other)
            .min()
            .cloned())
    }
}

impl MarkdownStore {
    /// Plans a batch under the shared scope-root lock (a consistent view; nothing is written).
    pub(crate) fn plan_batch_locked(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        let Some(first) = batch.entries().first() else { return Ok(BatchPlan::default()) };
        let _scope = self.lock_scope_root(&first.id, false)?;
        plan(&View::new(self, first.id.scope_root(), Leftovers::Leave, None), &self.config.limits, batch, now)
    }

    /// Plans and writes a batch under the exclusive scope-root lock: every check before any write.
    pub(crate) fn write_batch_locked(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let Some(first) = batch.entries().first() else { return Ok(Vec::new()) };
        let _scope = self.lock_scope_root(&first.id, true)?;
        let planned = plan(
            &View::new(self, first.id.scope_root(), Leftovers::Remove, None),
            &self.config.limits,
            batch,
            now,
        )?;
        if let Some(expected) = expected {
            check_plan_unchanged(&planned, expected)?;
        }
        let mut written = Vec::new();
        for (new, step) in batch.entries().iter().zip(planned.steps()) {
            match step {
                Step::Create(id) => {
                    let t = EntryPath::new(id);
                    let mut entry = new.clone().into_entry(now);
                    entry.version = next_version(id, self.known_versions(&t)?.highest())?;
                    let entry = self.write_create(entry)?;
                    self.prune_history(&t, entry.version);
                    written.push(entry);
                }
                Step::Update { id, expected_version } => {
                    // The exclusive scope-root lock keeps every other writer of the root out.
                    let t = EntryPath::new(id);
                    let (dir, parsed) = self.load_live(&t, now)?;
                    if parsed.entry.version != *expected_version {
                        return Err(StoreError::BatchStale { id: id.clone() });
                    }
                    let mut entry = parsed.entry.clone();
                    Patch::from(new).apply(&mut entry, now)?;
                    let history = self.archive_current(&t, &parsed.entry)?;
                    self.write_file(&t, dir.as_fd(), render_entry_file(&entry).as_bytes(), true)?;
                    self.prune_listed(&t, entry.version, history);
                    written.push(entry);
                }
                Step::Skip { .. } => {}
            }
        }
        Ok(written)
    }

    /// Writes `entries` exactly as given — versions, timestamps, fields and content kept — each under its
    /// scope-root lock and never over an existing entry, calling `progress(done)` after each. For moving a whole
    /// store into an empty root (`alp store copy`): the entries come from a store that already enforced the create
    /// rules, so they are not planned again; an entry whose name is taken is [`StoreError::AlreadyExists`] and the
    /// entries before it stay written.
    ///
    /// # Errors
    ///
    /// [`StoreError::AlreadyExists`] or [`StoreError::Storage`].
    pub fn insert_exact(
        &self,
        entries: &[MemoryEntry],
        progress: &mut dyn FnMut(usize),
    ) -> Result<(), StoreError> {
        for (done, entry) in entries.iter().enumerate() {
            let _scope = self.lock_scope_root(&entry.id, true)?;
            self.write_create(entry.clone())?;
            progress(done + 1);
        }
        Ok(())
    }

    /// Writes a planned create: the directories it needs (0700), then the file, never over an existing one.
    pub(crate) fn write_create(&self, entry: MemoryEntry) -> Result<MemoryEntry, StoreError> {
        let t = EntryPath::new(&entry.id);
        let (dir, made_in) = self.prepare_dir(&t)?;
        self.write_file(&t, dir.as_fd(), render_entry_file(&entry).as_bytes(), false)?;
        self.sync_made(&t, &made_in)?;
        Ok(entry)
    }

    /// Opens (creating what is missing) the directory of `t`'s file, and clears its name of an empty directory
    /// tree left by deleted entries. Returns the directory and the parents of the directories it made, to fsync
    /// once the entry is in place.
    pub(crate) fn prepare_dir(&self, t: &EntryPath<'_>) -> Result<(OwnedFd, Vec<OwnedFd>), StoreError> {
        let id = t.id;
        // Most often every directory is there already: one resolution opens them all. Anything else (a missing
        // component, something in the way) goes the step-by-step way below, which makes them and names what failed.
        if let Ok(dir) = self.root.open_dir(&t.dirs) {
            return self.prepared_dir(t, dir, Vec::new());
        }
        let mut dir = self.root.open_dir(&[]).map_err(|miss| MarkdownStore::miss_error(id, ".", miss))?;
        let mut made_in: Vec<OwnedFd> = Vec::new();
        for (index, name) in t.dirs.iter().enumerate() {
            let rel = || t.dirs[..=index].join("/");
            match make_dir(&self.root, dir.as_fd(), name) {
                Ok(MadeDir::Created(next)) => made_in.push(std::mem::replace(&mut dir, next)),
                Ok(MadeDir::Existed(next)) => dir = next,
                Err(MakeDirError::Create(errno)) => {
                    return Err(MarkdownStore::io_error(id, "create", &rel(), errno));
                }
                Err(MakeDirError::Open(Miss::NotDirectory)) => {
                    return Err(self.in_the_way(t, dir.as_fd(), index));
                }
                Err(MakeDirError::Open(miss)) => return Err(MarkdownStore::miss_error(id, &rel(), miss)),
                Err(MakeDirError::SetMode(errno)) => {
                    return Err(MarkdownStore::io_error(id, "set the mode of", &rel(), errno));
                }
            }
        }
        self.prepared_dir(t, dir, made_in)
    }

    /// The end of [`prepare_dir`](Self::prepare_dir), once `dir` is `t`'s directory: refuses a case-folding
    /// directory, and clears `t`'s name of an empty directory tree.
    fn prepared_dir(
        &self,
        t: &EntryPath<'_>,
        dir: OwnedFd,
        made_in: Vec<OwnedFd>,
    ) -> Result<(OwnedFd, Vec<OwnedFd>), StoreError> {
        MarkdownStore::check_casefold(dir.as_fd(), &t.dir_rel())?;
        self.clear_name(t, dir.as_fd())?;
        Ok((dir, made_in))
    }

    /// Clears `t`'s name in `dir`, its directory, of an empty directory tree; refuses a symlink there.
    pub(crate) fn clear_name(&self, t: &EntryPath<'_>, dir: BorrowedFd<'_>) -> Result<(), StoreError> {
        match kind_at(dir, &t.file) {
            // The rules found no entry below it (no clash), so what is left is empty directories.
            Ok(FileType::Directory) if !self.remove_empty_tree(dir, &t.file, 0) => {
                Err(StoreError::Storage(StorageError::new(
                    StorageErrorKind::Corrupt,
                    Some(t.id),
                    format!("`{}` is a directory without entries that cannot be removed", t.rel()),
                )))
            }
            Ok(FileType::Symlink) => Err(MarkdownStore::symlink_error(t.id, &t.rel())),
            _ => Ok(()),
        }
    }

    pub(crate) fn sync_made(&self, t: &EntryPath<'_>, made_in: &[OwnedFd]) -> Result<(), StoreError> {
        for parent in made_in.iter().rev() {
            sync(parent.as_fd())
                .map_err(|errno| MarkdownStore::io_error(t.id, "sync", &t.dir_rel(), errno))?;
        }
        Ok(())
    }

    /// Moves `from` to `to` under the exclusive locks of both scope roots (taken in byte order of the roots, one
    /// lock when they are the same): `to` takes its next version and `from` a tombstone; the new file is created
    /// with `RENAME_NOREPLACE`, then the old name removed.
    pub(crate) fn rename_locked(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let (first, second) = if from.scope_root() <= to.scope_root() { (from, to) } else { (to, from) };
        let _first = self.lock_scope_root(first, true)?;
        let _second = if first.scope_root() == second.scope_root() {
            None
        } else {
            Some(self.lock_scope_root(second, true)?)
        };
        let source = EntryPath::new(from);
        let (from_dir, parsed) = self.load_live_at(&source, expected_version, now)?;
        let as_new = NewEntry::from(&MemoryEntry { id: to.clone(), ..parsed.entry.clone() });
        let view = View::new(self, to.scope_root(), Leftovers::Remove, Some(from));
        plan(&view, &self.config.limits, &Batch::create(as_new), now)?;
        let target = EntryPath::new(to);
        let moved = MemoryEntry {
            id: to.clone(),
            version: next_version(to, self.known_versions(&target)?.highest())?,
            ..parsed.entry.clone()
        };
        let tombstone_version = next_version(from, Some(parsed.entry.version))?;
        // History first (the old entry as read, then its tombstone): a crash after it leaves versions above the
        // current one, which do not count and are overwritten, and never a version number used twice. Then the file
        // at the old name becomes the moved entry marked as a rename in progress (`format::RENAMED_FROM`: read at
        // the old name it is still the old ID at its old version), and that one file moves to the new name with
        // `RENAME_NOREPLACE`, so no instant shows both names or neither. Except when the marker would carry another
        // scope's private ID out of it ([`carries_private_id_out`]): then the move is the two steps below, and the
        // file at the new name never holds the old ID.
        let source_history = self.archive_versions(
            &source,
            &[
                Version::Entry(parsed.entry.clone()),
                Version::Tombstone {
                    id: from.clone(),
                    version: tombstone_version,
                    deleted_at: now.truncated_to_millis(),
                },
            ],
        )?;
        let (to_dir, made_in) = self.prepare_dir(&target)?;
        let moved_in_one_step = !self.force_link_fallback && !carries_private_id_out(from, to) && {
            let staged =
                MemoryEntry { extra: renaming(&moved.extra, from, parsed.entry.version), ..moved.clone() };
            self.write_file(&source, from_dir.as_fd(), render_entry_file(&staged).as_bytes(), true)?;
            let renamed = rename_noreplace(
                from_dir.as_fd(),
                &source.file,
                to_dir.as_fd(),
                &target.file,
                Fallback::Refuse,
            );
            match renamed {
                Ok(()) => true,
                // No RENAME_NOREPLACE here (`Fallback::Refuse`), or the two names on different mounts: the file at
                // the old name still reads as the old entry, and the move is done in two steps below.
                Err(Errno::NOSYS | Errno::XDEV) => false,
                Err(Errno::EXIST) => {
                    return Err(StoreError::AlreadyExists {
                        id: to.clone(),
                        existing: to.as_str().to_owned(),
                        reason: ExistsReason::SameId,
                    });
                }
                Err(errno) => return Err(MarkdownStore::io_error(to, "move", &target.rel(), errno)),
            }
        };
        if moved_in_one_step {
            sync(to_dir.as_fd())
                .map_err(|errno| MarkdownStore::io_error(to, "sync", &target.dir_rel(), errno))?;
            self.sync_made(&target, &made_in)?;
        } else {
            // Two steps: the new name, then the old one goes (for an instant both are visible, each at a version
            // of its own).
            self.write_file(&target, to_dir.as_fd(), render_entry_file(&moved).as_bytes(), false)?;
            self.sync_made(&target, &made_in)?;
            rustix::fs::unlinkat(from_dir.as_fd(), source.file.as_str(), AtFlags::empty())
                .map_err(|errno| MarkdownStore::io_error(from, "delete", &source.rel(), errno))?;
        }
        sync(from_dir.as_fd())
            .map_err(|errno| MarkdownStore::io_error(from, "sync", &source.dir_rel(), errno))?;
        drop(from_dir);
        self.prune_empty_dirs(&source);
        self.prune_listed(&source, tombstone_version, source_history);
        self.prune_history(&target, moved.version);
        Ok(moved)
    }

    /// Restores `version` of `id` as version `expected_version + 1`, under the exclusive scope-root lock (a restore
    /// may bring a deleted entry back, under the create rules, or set a (type, key, scope)).
    pub(crate) fn restore_locked(
        &self,
        id: &MemoryId,
        version: u64,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let t = EntryPath::new(id);
        let _scope = self.lock_scope_root(id, true)?;
        let known = self.known_versions(&t)?;
        let current = known.current.clone();
        let all = known.all();
        let restored =
            restored(id, version, expected_version, current.as_ref(), &all, now, &self.config.limits)?;
        match &current {
            Some(read) => {
                if let Some(unique) = restored.fields.unique_key() {
                    memory_store::check_key_free(id, self.duplicate_holder(id, unique)?)?;
                }
                let (dir, _) = self.load_live(&t, now)?;
                self.archive_current(&t, read)?;
                self.write_file(&t, dir.as_fd(), render_entry_file(&restored).as_bytes(), true)?;
            }
            None => {
                let view = View::new(self, id.scope_root(), Leftovers::Remove, None);
                plan(&view, &self.config.limits, &Batch::create(NewEntry::from(&restored)), now)?;
                self.write_create(restored.clone())?;
            }
        }
        self.prune_history(&t, restored.version);
        Ok(restored)
    }
}

/// Whether a rename-in-progress marker naming `from` would end up in a file outside `from`'s private memory: `from`
/// is `private:<role>:…` and `to` is not. A role's private ID is never written into a file outside its scope root,
/// where anyone who may read that place (or its files) would see it.
fn carries_private_id_out(from: &MemoryId, to: &MemoryId) -> bool {
    from.scope() == memory_id::Scope::Private && from.scope_root() != to.scope_root()
}

/// `extra` with the keys that mark a rename from `from`, at `version`, in progress ([`crate::format::RENAMED_FROM`]).
fn renaming(extra: &Extra, from: &MemoryId, version: u64) -> Extra {
    let [id_key, version_key] = crate::format::RENAMED_FROM;
    // The two keys are read as fields, never kept as unknown keys, so `extra` cannot already hold them.
    let mut map: serde_json::Map<String, serde_json::Value> =
        extra.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect();
    map.insert(id_key.to_owned(), serde_json::Value::String(from.as_str().to_owned()));
    map.insert(version_key.to_owned(), serde_json::Value::from(version));
    Extra::new(map)
}

/// An entry file as read, with the directory it was read from.
type Loaded = (OwnedFd, ParsedEntryFile);

impl MarkdownStore {
    /// Writes `bytes` to `file` in `dir` atomically and durably: temporary file, fsync, rename, directory fsync.
    pub(crate) fn write_file(
        &self,
        t: &EntryPath<'_>,
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
    pub(crate) fn prune_empty_dirs(&self, t: &EntryPath<'_>) {
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
    pub(crate) fn remove(
        &self,
        id: &MemoryId,
        now: Timestamp,
        check: &dyn Fn(Option<Loaded>) -> Result<Loaded, StoreError>,
    ) -> Result<(), StoreError> {
        let t = EntryPath::new(id);
        let _scope = self.lock_scope_root(id, false)?;
        let _entry = self.lock_entry(id)?;
        // Only the frontmatter is read: a delete unlinks a name, so a file too large to read, or with a second link,
        // may be deleted (an alias is removed through `alp` like any entry).
        let (dir, parsed) = check(self.load_entry(&t, ReadMode::Head)?)?;
        let tombstone_version = memory_entry::next_version(id, Some(parsed.entry.version))?;
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
        let tombstone = Version::Tombstone {
            id: id.clone(),
            version: tombstone_version,
            deleted_at: now.truncated_to_millis(),
        };
        let moving = whole
            .as_ref()
            .and_then(|(version, stat)| Moving::of(dir.as_fd(), &t.file, version, &bytes, stat));
        let (history, moved) = match (moving, &whole) {
            (Some(moving), _) => {
                self.archive_versions_moving(&t, std::slice::from_ref(&tombstone), Some(moving))?
            }
            (None, Some((version, _))) => (self.archive_versions(&t, &[version.clone(), tombstone])?, false),
            (None, None) => (self.archive_versions(&t, std::slice::from_ref(&tombstone))?, false),
        };
        if !moved {
            rustix::fs::unlinkat(dir.as_fd(), t.file.as_str(), AtFlags::empty())
                .map_err(|errno| MarkdownStore::io_error(id, "delete", &t.rel(), errno))?;
        }
        sync(dir.as_fd()).map_err(|errno| MarkdownStore::io_error(id, "sync", &t.dir_rel(), errno))?;
        drop(dir);
        self.prune_empty_dirs(&t);
        self.prune_listed(&t, tombstone_version, history);
        Ok(())
    }

    /// Replaces the live entry at `expected_version` with `patch` applied, keeping the file as read in history
    /// first; under the exclusive scope-root lock when the patch sets `type`, `key` or `scope`, else under the
    /// shared one and the entry lock.
    pub(crate) fn update_locked(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let t = EntryPath::new(id);
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
            memory_store::check_key_free(id, self.duplicate_holder(id, unique)?)?;
        }
        // The file as read goes to history first: a hand-written note is archived the first time alp overwrites it.
        // The new file is written and synced under a temporary name meanwhile, on a thread of its own (the two
        // syncs are independent, and the file system may make them one); it takes the entry's name only once the
        // archived version is durable.
        let bytes = render_entry_file(&updated);
        let stage = || {
            let mut staged = Staged::write(&self.root, dir.as_fd(), bytes.as_bytes())?;
            staged.sync()?;
            Ok::<_, WriteError>(staged)
        };
        let (history, staged) = std::thread::scope(|scope| {
            let staging = std::thread::Builder::new().spawn_scoped(scope, stage);
            let history = self.archive_current(&t, &parsed.entry);
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
}
