//! History on disk: every kept version of an entry, at `<root>/history/<entry path>/<16-digit version>.md`.
//!
//! The entry file holds the current version; the history directory holds the versions before it and the
//! tombstones. Each write first archives the file as it was read (so a hand-written or hand-edited note is kept the
//! first time alp overwrites it), then, for a delete, the tombstone, and only then changes the entry file: a
//! `kill -9` in between leaves a version in history that is not current, which is ignored (history lists versions
//! below the current one, or up to the last tombstone when there is no entry file) and overwritten by the next
//! write. Every file is written with the store's atomic write and read with its no-follow, regular-files-only,
//! size-capped read; nothing here is ever listed as an entry, since listings walk only the scope directories.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use memory_entry::{Extra, MemoryEntry, StoreError, Version, versions_to_drop};
use memory_fs::{FILE_MODE, Install, Miss, Staged, TEMP_PREFIX, kind_at, read_names, rename_replace, sync};
use memory_id::MemoryId;
use memory_store::history_newest_first;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use crate::entry_file::{ReadOutcome, read_entry};
use crate::markdown::MarkdownStore;
use crate::path::EntryPath;
use crate::render_entry_file;

/// The names in a directory with their types, as `read_names` lists them.
type Names = Vec<(String, FileType)>;

/// The directory under the root that holds every entry's history.
pub(crate) const HISTORY_DIR: &str = "history";

/// The frontmatter key that marks a tombstone.
const DELETED: &str = "deleted";
/// The frontmatter key that marks a redacted version.
const REDACTED: &str = "redacted";

/// The file name of a version: 16 decimal digits and `.md`.
fn version_file(version: u64) -> String {
    format!("{version:016}.md")
}

/// The version a history file name holds, if it is one.
fn parse_version_file(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".md")?;
    (digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok())?
}

/// `extra` without the history markers (a hand-written key of the same name must not turn a version into a
/// tombstone), plus `marker: true` when given.
fn extra_with(extra: &Extra, marker: Option<&str>) -> Extra {
    let mut map: serde_json::Map<String, serde_json::Value> = extra
        .iter()
        .filter(|(key, _)| *key != DELETED && *key != REDACTED)
        .map(|(key, value)| (key.to_owned(), value.clone()))
        .collect();
    if let Some(marker) = marker {
        map.insert(marker.to_owned(), serde_json::Value::Bool(true));
    }
    Extra::new(map)
}

fn is_marked(extra: &Extra, marker: &str) -> bool {
    extra.iter().any(|(key, value)| key == marker && *value == serde_json::Value::Bool(true))
}

/// The text of a history file for `version`.
fn render_version(version: &Version) -> String {
    match version {
        Version::Entry(entry) => {
            render_entry_file(&MemoryEntry { extra: extra_with(&entry.extra, None), ..entry.clone() })
        }
        Version::Redacted(entry) => render_entry_file(&MemoryEntry {
            content: String::new(),
            extra: extra_with(&entry.extra, Some(REDACTED)),
            ..entry.clone()
        }),
        Version::Tombstone { version, deleted_at, .. } => {
            format!("---\nversion: {version}\nupdatedAt: {deleted_at}\n{DELETED}: true\n---\n")
        }
    }
}

/// An entry file a delete may move into its history as `version`, instead of writing a copy of it: the file read,
/// `bytes` long, with status `stat`.
pub(crate) struct Moving<'a> {
    pub(crate) from_dir: BorrowedFd<'a>,
    pub(crate) name: &'a str,
    pub(crate) version: &'a Version,
    pub(crate) stat: &'a rustix::fs::Stat,
}

impl<'a> Moving<'a> {
    /// `version` read from the file `name` in `from_dir` as exactly `bytes` with status `stat`, when moving that file
    /// into the history is the same as writing its copy there: a regular 0600 file with one link whose bytes are the
    /// copy's.
    pub(crate) fn of(
        from_dir: BorrowedFd<'a>,
        name: &'a str,
        version: &'a Version,
        bytes: &[u8],
        stat: &'a rustix::fs::Stat,
    ) -> Option<Moving<'a>> {
        let regular = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile;
        let same = regular
            && stat.st_nlink == 1
            && stat.st_mode & 0o7777 == FILE_MODE.bits()
            && render_version(version).as_bytes() == bytes;
        same.then_some(Moving { from_dir, name, version, stat })
    }
}

/// An ID's history directory, open, and the names in it.
pub(crate) struct HistoryDir {
    dir: OwnedFd,
    names: Names,
}

/// What the store knows of an ID's versions: the entry file's (when there is one) and the history's.
pub(crate) struct KnownVersions {
    /// The version of the entry file, when it exists and reads as an entry.
    pub(crate) current: Option<MemoryEntry>,
    /// The history's versions that count (below the current one, or all when there is no entry file), oldest
    /// first.
    pub(crate) older: Vec<Version>,
}

impl KnownVersions {
    /// The highest version the ID ever had, `None` for an ID that never existed.
    pub(crate) fn highest(&self) -> Option<u64> {
        self.current.as_ref().map(|entry| entry.version).or_else(|| self.older.last().map(Version::version))
    }

    /// Every version that counts, oldest first, the current one last.
    pub(crate) fn all(self) -> Vec<Version> {
        let mut all = self.older;
        all.extend(self.current.map(Version::Entry));
        all
    }
}

impl MarkdownStore {
    /// The path of `version`'s file in `t`'s history directory.
    fn history_path<'a>(t: &'a EntryPath<'a>, version: u64) -> EntryPath<'a> {
        let mut dirs = Vec::with_capacity(t.dirs.len() + 2);
        dirs.push(HISTORY_DIR);
        dirs.extend(t.dirs.iter().copied());
        dirs.push(t.file.as_str());
        let scope_len = dirs.len();
        EntryPath { id: t.id, dirs, file: version_file(version), scope_len }
    }

    /// `t`'s history directory, held open, and the names in it (`None` when there is no such directory).
    fn history_names(&self, t: &EntryPath<'_>) -> Result<Option<HistoryDir>, StoreError> {
        let h = MarkdownStore::history_path(t, 0);
        let dir = match self.root.open_dir(&h.dirs) {
            Ok(dir) => dir,
            Err(Miss::NotFound | Miss::NotDirectory) => return Ok(None),
            Err(miss) => return Err(MarkdownStore::miss_error(t.id, &h.dir_rel(), miss)),
        };
        let names = read_names(dir.as_fd())
            .map_err(|errno| MarkdownStore::io_error(t.id, "list", &h.dir_rel(), errno))?;
        Ok(Some(HistoryDir { dir, names }))
    }

    /// The versions kept in `t`'s history directory, by version, oldest first; files that are not regular
    /// version files (a symlink, a hard link, a file too large, a stray name) are skipped.
    fn history_files(&self, t: &EntryPath<'_>) -> Result<(Option<OwnedFd>, Vec<Version>), StoreError> {
        let Some(HistoryDir { dir, names }) = self.history_names(t)? else { return Ok((None, Vec::new())) };
        let h = MarkdownStore::history_path(t, 0);
        MarkdownStore::check_casefold(dir.as_fd(), &h.dir_rel())?;
        let mut out = Vec::new();
        for (name, kind) in names {
            let Some(number) = parse_version_file(&name) else { continue };
            if kind != FileType::RegularFile && kind != FileType::Unknown {
                tracing::warn!(id = %t.id, name = %name, "history skips a file that is not a regular file");
                continue;
            }
            let outcome = read_entry(&self.root, dir.as_fd(), &name, t.id.clone(), self.full_read())
                .map_err(|errno| {
                    MarkdownStore::io_error(t.id, "read", &format!("{}/{name}", h.dir_rel()), errno)
                })?;
            let ReadOutcome::Entry(parsed) = outcome else {
                tracing::warn!(id = %t.id, name = %name, "history skips a file it will not read");
                continue;
            };
            let mut entry = parsed.entry;
            if entry.version != number {
                tracing::warn!(id = %t.id, name = %name, "history skips a file whose version is not its name's");
                continue;
            }
            out.push(if is_marked(&entry.extra, DELETED) {
                Version::Tombstone { id: t.id.clone(), version: number, deleted_at: entry.updated_at }
            } else if is_marked(&entry.extra, REDACTED) {
                entry.extra = extra_with(&entry.extra, None);
                Version::Redacted(entry)
            } else {
                entry.extra = extra_with(&entry.extra, None);
                Version::Entry(entry)
            });
        }
        out.sort_by_key(Version::version);
        Ok((Some(dir), out))
    }

    /// The versions of `id` that count: the entry file's and those of its history below it.
    pub(crate) fn known_versions(&self, t: &EntryPath<'_>) -> Result<KnownVersions, StoreError> {
        let current = self.load_entry(t, self.full_read())?.map(|(_, parsed)| parsed.entry);
        let (_, mut older) = self.history_files(t)?;
        if let Some(current) = &current {
            // A version at or above the current one is a leftover of a write that never completed (or the copy of
            // the current version itself): it does not count.
            older.retain(|version| version.version() < current.version);
        }
        // A write killed after making its version current but before dropping the oldest leaves one too many: the
        // bound holds for readers all the same, and the next write drops it.
        let total = older.len() + usize::from(current.is_some());
        older.drain(..versions_to_drop(total, self.config.limits.keep_versions).min(older.len()));
        Ok(KnownVersions { current, older })
    }

    /// Writes `version` into `t`'s history (replacing a leftover of the same number), durably.
    pub(crate) fn archive_version(&self, t: &EntryPath<'_>, version: &Version) -> Result<(), StoreError> {
        self.archive_versions(t, std::slice::from_ref(version)).map(drop)
    }

    /// Writes `versions` into `t`'s history (each replacing a leftover of the same number), durably, with one sync
    /// of the history directory for all of them: each file written and synced under a temporary name, then each
    /// renamed to its version's name, then the directory synced. A crash before the end leaves the history as it
    /// was, or with some of these versions: all of them at or above the current version (a delete's copy of the
    /// entry and its tombstone), which do not count and are overwritten by the next write.
    ///
    /// Returns the history directory and the names in it, for [`prune_listed`](Self::prune_listed) to drop old
    /// versions without reading them again (`None` when they could not be listed).
    pub(crate) fn archive_versions(
        &self,
        t: &EntryPath<'_>,
        versions: &[Version],
    ) -> Result<Option<HistoryDir>, StoreError> {
        self.archive_versions_moving(t, versions, None).map(|(listed, _)| listed)
    }

    /// [`archive_versions`](Self::archive_versions), and then `moving`: the entry file moved into the history as its
    /// version (before the one sync of the directory), when it is exactly the file a copy would write; else, or
    /// when the move fails, a copy is written as any version is. Whether the entry file was moved (it is then gone
    /// from its directory, which the caller syncs).
    pub(crate) fn archive_versions_moving(
        &self,
        t: &EntryPath<'_>,
        versions: &[Version],
        moving: Option<Moving<'_>>,
    ) -> Result<(Option<HistoryDir>, bool), StoreError> {
        let Some(first) = versions.first() else { return Ok((None, false)) };
        let h = MarkdownStore::history_path(t, first.version());
        let (dir, made_in) = self.prepare_dir(&h)?;
        // Every writer of this ID's history holds its entry lock or its scope root's exclusive lock, so a temporary
        // file here is a leftover of a killed writer: it goes now, not at some later walk.
        let mut listed = read_names(dir.as_fd()).ok();
        if let Some(names) = &mut listed {
            names.retain(|(name, _)| {
                let temporary = name.starts_with(TEMP_PREFIX);
                if temporary {
                    let _ = rustix::fs::unlinkat(dir.as_fd(), name.as_str(), AtFlags::empty());
                }
                !temporary
            });
        }
        let mut staged = Vec::with_capacity(versions.len());
        for (i, version) in versions.iter().enumerate() {
            let h = MarkdownStore::history_path(t, version.version());
            if i > 0 {
                self.clear_name(&h, dir.as_fd())?;
            }
            let file = Staged::write(&self.root, dir.as_fd(), render_version(version).as_bytes())
                .map_err(|error| MarkdownStore::write_error(&h, error))?;
            staged.push((h, file));
        }
        for (h, file) in &mut staged {
            file.sync().map_err(|error| MarkdownStore::write_error(h, error))?;
        }
        for (h, file) in staged {
            file.install(&h.file, Install::Replace).map_err(|error| MarkdownStore::write_error(&h, error))?;
        }
        let moved = match &moving {
            Some(m) => self.move_in(t, dir.as_fd(), m)?,
            None => false,
        };
        sync(dir.as_fd()).map_err(|errno| MarkdownStore::io_error(t.id, "sync", &h.dir_rel(), errno))?;
        self.sync_made(&h, &made_in)?;
        let also = moving.map(|m| m.version);
        let listed = listed.map(|mut names| {
            for version in versions.iter().chain(also) {
                let name = version_file(version.version());
                if !names.iter().any(|(listed, _)| *listed == name) {
                    names.push((name, FileType::RegularFile));
                }
            }
            HistoryDir { dir, names }
        });
        Ok((listed, moved))
    }

    /// Moves `m`'s entry file into `dir`, `t`'s history directory, as its version; a copy when the move fails
    /// (`false`: the entry file is still there), or over the moved file when it is not the file read (someone
    /// changed it in place since).
    fn move_in(&self, t: &EntryPath<'_>, dir: BorrowedFd<'_>, m: &Moving<'_>) -> Result<bool, StoreError> {
        let h = MarkdownStore::history_path(t, m.version.version());
        let copy = || -> Result<(), StoreError> {
            let fail = |error| MarkdownStore::write_error(&h, error);
            let mut file =
                Staged::write(&self.root, dir, render_version(m.version).as_bytes()).map_err(fail)?;
            file.sync().map_err(fail)?;
            file.install(&h.file, Install::Replace).map_err(fail)
        };
        self.clear_name(&h, dir)?;
        if rename_replace(m.from_dir, m.name, dir, &h.file).is_err() {
            copy()?;
            return Ok(false);
        }
        // A move keeps the inode's size and mtime (only its ctime changes): anything else is an edit made since.
        let unchanged =
            rustix::fs::statat(dir, h.file.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|now| {
                (now.st_dev, now.st_ino, now.st_size, now.st_mtime, now.st_mtime_nsec)
                    == (m.stat.st_dev, m.stat.st_ino, m.stat.st_size, m.stat.st_mtime, m.stat.st_mtime_nsec)
            });
        if !unchanged {
            copy()?;
        }
        Ok(true)
    }

    /// Archives the entry file as it was read, before it is replaced or removed; returns what
    /// [`archive_versions`](Self::archive_versions) does.
    pub(crate) fn archive_current(
        &self,
        t: &EntryPath<'_>,
        read: &MemoryEntry,
    ) -> Result<Option<HistoryDir>, StoreError> {
        self.archive_versions(t, &[Version::Entry(read.clone())])
    }

    /// Drops the oldest versions beyond `history.keepVersions` after a write that made `highest` the ID's highest
    /// version. Best effort: the write is done and acknowledged whatever happens here (a version left behind is
    /// dropped by the next write).
    pub(crate) fn prune_history(&self, t: &EntryPath<'_>, highest: u64) {
        self.prune_listed(t, highest, None);
    }

    /// [`prune_history`](Self::prune_history) with the history directory and its names as the write that made
    /// `highest` left them (listed here when not given). The caller holds the ID's lock since.
    pub(crate) fn prune_listed(&self, t: &EntryPath<'_>, highest: u64, listed: Option<HistoryDir>) {
        let listed = match listed {
            Some(listed) => Ok(Some(listed)),
            None => self.history_names(t),
        };
        let dropped = listed.and_then(|listed| match listed {
            Some(listed) => self.drop_listed(t, highest, &listed),
            None => Ok(()),
        });
        if let Err(error) = dropped {
            tracing::warn!(id = %t.id, error = %error, "could not drop old versions beyond history.keepVersions");
        }
    }

    /// Drops the oldest versions beyond `history.keepVersions` from `listed`, `t`'s history directory and its
    /// names, `highest` being the ID's highest version (the current one or a tombstone). Files above it are
    /// leftovers and are left for the next write to overwrite.
    ///
    /// Only the names are read: what to drop depends on the version numbers alone, so an update costs the same
    /// whether the ID keeps two versions or a hundred.
    fn drop_listed(&self, t: &EntryPath<'_>, highest: u64, listed: &HistoryDir) -> Result<(), StoreError> {
        let mut numbers: Vec<u64> = listed
            .names
            .iter()
            .filter(|(_, kind)| matches!(kind, FileType::RegularFile | FileType::Unknown))
            .filter_map(|(name, _)| parse_version_file(name))
            .filter(|v| *v < highest)
            .collect();
        numbers.sort_unstable();
        // The highest version (the entry file, or the tombstone's own file) counts once.
        let drop = versions_to_drop(numbers.len() + 1, self.config.limits.keep_versions);
        // Not synced: a version dropped here and back after a crash is one too many, which readers do not count
        // and the next write drops again.
        for number in numbers.iter().take(drop) {
            let name = version_file(*number);
            let h = MarkdownStore::history_path(t, *number);
            rustix::fs::unlinkat(listed.dir.as_fd(), name.as_str(), AtFlags::empty())
                .map_err(|errno| MarkdownStore::io_error(t.id, "delete", &h.rel(), errno))?;
        }
        Ok(())
    }

    /// The ID whose history would share a name with `id`'s, if any: the one clash of the history layout. The
    /// versions of `shared:x` are the files `history/shared/x.md/<16 digits>.md`, and the history of
    /// `shared:x.md:<16 digits>` is the directory of that very name. So `id` cannot be created while such a file is
    /// kept for the ID above it, nor while such a directory is kept below it (its versions would need the name).
    /// Every other pair of IDs has histories of different names, as their entry paths differ.
    pub(crate) fn history_clash(&self, id: &MemoryId) -> Result<Option<MemoryId>, StoreError> {
        // `id` is `shared:x.md:<16 digits>`: is that version of `shared:x` kept?
        if let Some((parent, last)) = id.as_str().rsplit_once(':')
            && let Some(number) = parse_version_file(&format!("{last}.md"))
            && let Some(above) = parent.strip_suffix(".md")
            && let Ok(above) = memory_id::parse_memory_id(above)
        {
            let t = EntryPath::new(&above);
            let h = MarkdownStore::history_path(&t, number);
            match self.root.open_dir(&h.dirs) {
                Ok(dir) => match kind_at(dir.as_fd(), &h.file) {
                    Ok(_) => return Ok(Some(above)),
                    Err(Errno::NOENT) => {}
                    Err(errno) => return Err(MarkdownStore::io_error(id, "inspect", &h.rel(), errno)),
                },
                Err(Miss::NotFound | Miss::NotDirectory) => {}
                Err(miss) => return Err(MarkdownStore::miss_error(id, &h.dir_rel(), miss)),
            }
        }
        // Is a directory named like one of `id`'s version files kept in its history (`shared:x.md:<digits>`'s)?
        let Some(HistoryDir { names, .. }) = self.history_names(&EntryPath::new(id))? else {
            return Ok(None);
        };
        Ok(names
            .iter()
            .filter(|(name, kind)| *kind == FileType::Directory && parse_version_file(name).is_some())
            .filter_map(|(name, _)| {
                let digits = name.strip_suffix(".md")?;
                memory_id::parse_memory_id(&format!("{id}.md:{digits}")).ok()
            })
            .min())
    }

    /// The kept versions of `id`, newest first.
    pub(crate) fn history_of(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        let t = EntryPath::new(id);
        history_newest_first(id, self.known_versions(&t)?.all(), limit)
    }

    /// Rewrites the history file of `version` with its content erased. The caller holds the entry's lock and has
    /// checked that `version` may be redacted.
    pub(crate) fn redact_file(&self, t: &EntryPath<'_>, version: &Version) -> Result<(), StoreError> {
        self.archive_version(t, &version.clone().redacted())
    }

    /// Erases the content of `version` of `id` in its history, under the entry's locks, if it may be redacted.
    pub(crate) fn redact_locked(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        let t = EntryPath::new(id);
        let _scope = self.lock_scope_root(id, false)?;
        let _entry = self.lock_entry(id)?;
        let known = self.known_versions(&t)?;
        let current = known.current.as_ref().map(|entry| entry.version);
        let all = known.all();
        let found = memory_store::redactable(id, version, current, &all)?;
        self.redact_file(&t, found)
    }
}

impl MarkdownStore {
    /// Every ID that has a history directory under the root (deleted IDs included), sorted: with the entries, what
    /// `alp store copy` reads the histories of. Symbolic links are not followed; a directory that names no valid ID
    /// is left out.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when a directory cannot be read.
    pub fn history_ids(&self) -> Result<Vec<MemoryId>, StoreError> {
        let base = self.root().join(HISTORY_DIR);
        let mut ids = Vec::new();
        let mut stack: Vec<(std::path::PathBuf, Vec<String>)> = vec![(base, Vec::new())];
        while let Some((dir, parts)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(StoreError::Storage(memory_entry::StorageError::about(
                        memory_entry::StorageErrorKind::Io,
                        None,
                        format!("cannot list `{}`: {e}", dir.display()),
                    )));
                }
            };
            let mut holds_versions = false;
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else { continue };
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
                if kind.is_dir() {
                    let mut next = parts.clone();
                    next.push(name);
                    stack.push((entry.path(), next));
                } else if kind.is_file() && parse_version_file(&name).is_some() {
                    holds_versions = true;
                }
            }
            if holds_versions && let Some(id) = id_of_history_dir(&parts) {
                ids.push(id);
            }
        }
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(ids)
    }

    /// Writes `versions` into their IDs' histories exactly as given (numbers, tombstones and redactions kept, nothing
    /// dropped): what `alp store copy` writes into an empty root after the entries. The versions of the entry files
    /// themselves are not given (the entry file is the current version).
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when a file cannot be written.
    pub fn insert_history_exact(&self, versions: &[Version]) -> Result<(), StoreError> {
        for version in versions {
            self.archive_version(&EntryPath::new(version.id()), version)?;
        }
        Ok(())
    }
}

/// The ID whose history directory lies at `parts` under `history/` (`shared/a/b.md` is `shared:a:b`).
fn id_of_history_dir(parts: &[String]) -> Option<MemoryId> {
    let (last, dirs) = parts.split_last()?;
    let file = last.strip_suffix(".md")?;
    let (root, rest) = match dirs.first().map(String::as_str) {
        Some("shared") => ("shared".to_owned(), &dirs[1..]),
        Some(scope @ ("projects" | "private")) => {
            let owner = dirs.get(1)?;
            (format!("{}:{owner}", if scope == "projects" { "project" } else { "private" }), dirs.get(2..)?)
        }
        _ => return None,
    };
    let mut text = root;
    for segment in rest.iter().map(String::as_str).chain([file]) {
        text.push(':');
        text.push_str(segment);
    }
    memory_id::parse_memory_id(&text).ok()
}
