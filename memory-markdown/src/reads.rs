//! Reading entries: one entry by ID (its directory opened from the root, its file read without following a link),
//! the live-entry rule on what was read, and the walks of listings and of the create rules' scope-root views.

use std::os::fd::{AsFd, OwnedFd};

use memory_entry::{
    Key, MemoryEntry, MemoryType, ScopeRef, StorageError, StorageErrorKind, StoreError, Timestamp,
};
use memory_fs::Miss;
use memory_id::{MemoryId, MemoryPrefix};
use memory_ranker::FoldBuffer;
use memory_store::{Listing, Scored};

use crate::ParsedEntryFile;
use crate::cache::EntryCache;
use crate::entry_file::{ReadMode, ReadOutcome, read_entry};
use crate::listing;
use crate::markdown::MarkdownStore;
use crate::path::EntryPath;
use crate::path::scope_dirs;
use crate::walk::{FileRef, Leftovers, WalkRoot, walk};

/// Scores an entry for a listing: its score when the listing takes it, `None` when it drops it. Called from
/// several threads, each with its own folding buffer.
type Scorer<'a> = &'a (dyn Fn(&MemoryEntry, &mut FoldBuffer) -> Option<usize> + Sync);

impl MarkdownStore {
    /// Opens the entry's directory and reads what is at the entry's name (`Missing` when the directory does not
    /// exist).
    pub(crate) fn load(
        &self,
        t: &EntryPath<'_>,
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
        t: &EntryPath<'_>,
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

    /// The live entry at `t` ([`memory_store::live`]), read whole, with its directory.
    pub(crate) fn load_live(
        &self,
        t: &EntryPath<'_>,
        now: Timestamp,
    ) -> Result<(OwnedFd, ParsedEntryFile), StoreError> {
        memory_store::live(t.id, self.load_entry(t, self.full_read())?, now)
    }

    /// The live entry at `t` at `expected_version` ([`memory_store::live_at`]), read whole, with its directory.
    pub(crate) fn load_live_at(
        &self,
        t: &EntryPath<'_>,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<(OwnedFd, ParsedEntryFile), StoreError> {
        memory_store::live_at(t.id, self.load_entry(t, self.full_read())?, expected_version, now)
    }

    /// Threads a listing reads with: the available parallelism, at most 8.
    fn threads(&self) -> usize {
        *self.threads.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(8))
    }

    /// How an entry is read whole: at most `limits.maxFileBytes`.
    pub(crate) fn full_read(&self) -> ReadMode {
        ReadMode::Full { max_bytes: self.config.limits.max_file_bytes }
    }

    /// What a listing takes of `outcome`: the entry, when `scorer` scores it. Files that are not read as entries are
    /// skipped (they still count against the entry limit, which counts names), as every listing skips them
    /// ([`listing::skipped`]).
    fn listed(
        outcome: ReadOutcome,
        id: &MemoryId,
        scorer: Scorer<'_>,
        buffer: &mut FoldBuffer,
    ) -> Option<Scored> {
        match outcome {
            ReadOutcome::Entry(parsed) => {
                scorer(&parsed.entry, buffer).map(|score| Scored { entry: parsed.entry, score })
            }
            other => {
                listing::skipped(id, &other);
                None
            }
        }
    }

    /// Reads the files of a walk batch, in parallel when there are many, taking those `scorer` scores.
    fn read_files(&self, files: &[FileRef], scorer: Scorer<'_>) -> Result<Vec<Scored>, StoreError> {
        let read_part = |part: &[FileRef]| -> Result<Vec<Scored>, StoreError> {
            // One folding buffer per thread, reused for every entry it scores.
            let mut buffer = FoldBuffer::new();
            let mut out = Vec::with_capacity(part.len());
            for file in part {
                let outcome =
                    read_entry(&self.root, file.dir_fd(), file.name(), file.id().clone(), self.full_read())
                        .map_err(|errno| MarkdownStore::io_error(file.id(), "read", file.name(), errno))?;
                out.extend(MarkdownStore::listed(outcome, file.id(), scorer, &mut buffer));
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

    /// Every entry under `roots` that `scorer` scores, unsorted.
    pub(crate) fn collect(
        &self,
        name: &str,
        roots: &[WalkRoot],
        leftovers: Leftovers,
        scorer: Scorer<'_>,
    ) -> Result<Vec<Scored>, StoreError> {
        let mut out = Vec::new();
        walk(&self.root, roots, leftovers, &mut |files: Vec<FileRef>| {
            out.extend(self.read_files(&files, scorer)?);
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
        leftovers: Leftovers,
    ) -> Result<Vec<MemoryId>, StoreError> {
        let mut out = Vec::new();
        walk(&self.root, roots, leftovers, &mut |files: Vec<FileRef>| {
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
        let scorer = |other: &MemoryEntry, _: &mut FoldBuffer| {
            (other.id != *id && other.fields.unique_key() == Some(wanted)).then_some(0)
        };
        let holders =
            self.collect(root.as_str(), &[MarkdownStore::scope_walk_root(id)], Leftovers::Leave, &scorer)?;
        Ok(holders.into_iter().map(|scored| scored.entry.id).min())
    }

    /// What [`MemoryStore::list`](memory_store::MemoryStore::list) returns: the direct entry files of `listing`'s
    /// roots, then what the walks of its roots find, ranked and cut as the listing asks.
    pub(crate) fn list_entries(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        let (walks, files) = plan_listing(listing.roots());
        let scorer = |entry: &MemoryEntry, buffer: &mut FoldBuffer| {
            if listing.admits(entry) { listing.score(entry, buffer) } else { None }
        };
        let mut buffer = FoldBuffer::new();
        let mut out = Vec::new();
        for id in &files {
            listing.check_cancelled()?;
            let t = EntryPath::new(id);
            match self.load(&t, self.full_read()) {
                Ok((_, outcome)) => out.extend(MarkdownStore::listed(outcome, id, &scorer, &mut buffer)),
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
}

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
