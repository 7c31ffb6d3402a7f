//! The adapter boundary: what every store does, and the in-memory adapter.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use memory_id::{MemoryId, MemoryPrefix};

use crate::{
    EntryPatch, ExistsReason, Limits, ListQuery, MemoryEntry, NewEntry, StorageError, StorageErrorKind,
    StoreError, Timestamp,
};

/// A storage adapter. It holds no policy: the service authorizes every call before it reaches the store, so changing
/// the adapter never changes permissions.
///
/// Every adapter must behave alike; `tests/memory_store/adapter_suite.rs` is the suite that checks it. In short:
/// - `get`, `update` and `delete` see only live entries: an expired entry is [`StoreError::NotFound`] with
///   `expired: true`;
/// - `create` never overwrites: a live or expired entry at the ID, a file/directory clash (`shared:x` and
///   `shared:x.md:y` cannot both exist) or another entry of the scope root with the same (type, key, scope) is
///   [`StoreError::AlreadyExists`]; a full scope root is [`StoreError::LimitExceeded`];
/// - `update` and `delete` compare `expected_version` with the stored version and the write in one critical
///   section: of two racing writers exactly one wins, the other gets [`StoreError::VersionConflict`];
/// - the checks run in the order not found, version conflict, already exists, limit;
/// - timestamps are stored in whole milliseconds (the precision they are written with), so an entry reads back
///   equal to what `create` or `update` returned.
pub trait MemoryStore: Send + Sync {
    /// The limits this store enforces (and the service validates against).
    fn limits(&self) -> &Limits;

    /// Reads one live entry.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (with `expired`) or [`StoreError::Storage`].
    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError>;

    /// Lists the entries inside any of `roots` that `query` matches, each once, sorted by ID. Nothing outside the
    /// roots is opened.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn list(
        &self,
        roots: &[MemoryPrefix],
        query: &ListQuery,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError>;

    /// Like [`MemoryStore::list`], keeping only the entries `keep` also accepts. An adapter may call `keep` from
    /// several threads and drop rejected entries at once, so a search can filter (and score) in parallel without
    /// holding every entry; the default lists, then filters.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn list_where(
        &self,
        roots: &[MemoryPrefix],
        query: &ListQuery,
        now: Timestamp,
        keep: &(dyn Fn(&MemoryEntry) -> bool + Sync),
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let mut entries = self.list(roots, query, now)?;
        entries.retain(|entry| keep(entry));
        Ok(entries)
    }

    /// Creates an entry at version 1; never overwrites.
    ///
    /// # Errors
    ///
    /// [`StoreError::AlreadyExists`], [`StoreError::LimitExceeded`] or [`StoreError::Storage`].
    fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError>;

    /// Applies `patch` if the live entry is at `expected_version`; the new version is one more.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::VersionConflict`], [`StoreError::AlreadyExists`] (the patch would
    /// duplicate another entry's type, key and scope) or [`StoreError::Storage`].
    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &EntryPatch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError>;

    /// Deletes the live entry if it is at `expected_version`.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::VersionConflict`] or [`StoreError::Storage`].
    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError>;

    /// Deletes the entry if it has expired at `now` and is at `expected_version` (prune).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (no entry at all), [`StoreError::NotExpired`], [`StoreError::VersionConflict`] or
    /// [`StoreError::Storage`].
    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError>;
}

/// Whether two IDs cannot both exist in the Markdown layout, because the file of one would be a directory on the path
/// of the other: `shared:x` is the file `shared/x.md`, while `shared:x.md:y` lives in the directory `shared/x.md/`.
/// Every adapter refuses such a pair (a create names the other ID), so that changing adapters never changes which
/// IDs may coexist.
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_store::paths_clash;
///
/// let id = |text| parse_memory_id(text).unwrap();
/// assert!(paths_clash(&id("shared:x"), &id("shared:x.md:y")));
/// assert!(paths_clash(&id("project:alp:notes:a.md:b"), &id("project:alp:notes:a")));
/// assert!(!paths_clash(&id("shared:x"), &id("shared:x.md")));
/// ```
pub fn paths_clash(a: &MemoryId, b: &MemoryId) -> bool {
    let in_directory_of = |file: &MemoryId, other: &MemoryId| {
        other.as_str().strip_prefix(file.as_str()).is_some_and(|rest| rest.starts_with(".md:"))
    };
    in_directory_of(a, b) || in_directory_of(b, a)
}

/// An adapter that keeps entries in memory: for tests, and the model the Markdown store must match.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    limits: Limits,
    entries: Mutex<BTreeMap<MemoryId, MemoryEntry>>,
}

impl InMemoryStore {
    /// An empty store with the default limits.
    pub fn new() -> InMemoryStore {
        InMemoryStore::default()
    }

    /// An empty store with the given limits.
    pub fn with_limits(limits: Limits) -> InMemoryStore {
        InMemoryStore { limits, entries: Mutex::default() }
    }

    fn lock(&self) -> Result<MutexGuard<'_, BTreeMap<MemoryId, MemoryEntry>>, StoreError> {
        self.entries.lock().map_err(|_| {
            StoreError::Storage(StorageError::about(
                StorageErrorKind::Io,
                None,
                "the in-memory store was poisoned by a panic",
            ))
        })
    }
}

/// Looks for another entry of `id`'s scope root holding `entry`'s (type, key, scope).
fn duplicate_key<'a>(
    entries: &'a BTreeMap<MemoryId, MemoryEntry>,
    id: &MemoryId,
    entry: &MemoryEntry,
) -> Option<&'a MemoryId> {
    let wanted = entry.unique_key()?;
    let root = id.scope_root();
    entries
        .values()
        .filter(|other| other.id != *id && root.contains(&other.id))
        .find(|other| other.unique_key() == Some(wanted))
        .map(|other| &other.id)
}

impl MemoryStore for InMemoryStore {
    fn limits(&self) -> &Limits {
        &self.limits
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let entries = self.lock()?;
        match entries.get(id) {
            Some(entry) if entry.is_expired(now) => {
                Err(StoreError::NotFound { id: id.clone(), expired: true })
            }
            Some(entry) => Ok(entry.clone()),
            None => Err(StoreError::NotFound { id: id.clone(), expired: false }),
        }
    }

    fn list(
        &self,
        roots: &[MemoryPrefix],
        query: &ListQuery,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let entries = self.lock()?;
        Ok(entries
            .values()
            .filter(|e| roots.iter().any(|root| root.contains(&e.id)) && query.matches(e, now))
            .cloned()
            .collect())
    }

    fn create(&self, new: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let mut entries = self.lock()?;
        let id = new.id.clone();
        if let Some(existing) = entries.get(&id) {
            let reason = if existing.is_expired(now) { ExistsReason::Expired } else { ExistsReason::SameId };
            return Err(StoreError::AlreadyExists {
                id: id.clone(),
                existing: id.as_str().to_owned(),
                reason,
            });
        }
        if let Some(other) = entries.keys().find(|other| paths_clash(&id, other)).cloned() {
            return Err(StoreError::AlreadyExists {
                id,
                existing: other.into_string(),
                reason: ExistsReason::FileDirectoryClash,
            });
        }
        let mut entry = new.into_entry(now);
        // Stored as any persistent adapter stores them: whole milliseconds.
        entry.created_at = entry.created_at.truncated_to_millis();
        entry.updated_at = entry.updated_at.truncated_to_millis();
        if let Some(holder) = duplicate_key(&entries, &id, &entry) {
            return Err(StoreError::AlreadyExists {
                id: id.clone(),
                existing: holder.as_str().to_owned(),
                reason: ExistsReason::DuplicateKey,
            });
        }
        let root = id.scope_root();
        let count = entries.keys().filter(|other| root.contains(other)).count() as u64;
        if count >= self.limits.max_entries_per_scope_root {
            return Err(StoreError::LimitExceeded {
                scope_root: root,
                limit: self.limits.max_entries_per_scope_root,
                count,
            });
        }
        entries.insert(id, entry.clone());
        Ok(entry)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &EntryPatch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut entries = self.lock()?;
        let current = match entries.get(id) {
            Some(entry) if entry.is_expired(now) => {
                return Err(StoreError::NotFound { id: id.clone(), expired: true });
            }
            Some(entry) => entry,
            None => return Err(StoreError::NotFound { id: id.clone(), expired: false }),
        };
        if current.version != expected_version {
            return Err(StoreError::VersionConflict {
                id: id.clone(),
                expected: expected_version,
                actual: current.version,
            });
        }
        let mut updated = current.clone();
        patch.apply(&mut updated, now.truncated_to_millis())?;
        if let Some(holder) = duplicate_key(&entries, id, &updated) {
            return Err(StoreError::AlreadyExists {
                id: id.clone(),
                existing: holder.as_str().to_owned(),
                reason: ExistsReason::DuplicateKey,
            });
        }
        entries.insert(id.clone(), updated.clone());
        Ok(updated)
    }

    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.remove_if(id, expected_version, |entry| {
            entry.is_expired(now).then(|| StoreError::NotFound { id: id.clone(), expired: true })
        })
    }

    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.remove_if(id, expected_version, |entry| {
            (!entry.is_expired(now)).then(|| StoreError::NotExpired { id: id.clone() })
        })
    }
}

impl InMemoryStore {
    /// Removes the entry at `expected_version` unless `refuse` names a reason not to (checked before the version).
    fn remove_if(
        &self,
        id: &MemoryId,
        expected_version: u64,
        refuse: impl FnOnce(&MemoryEntry) -> Option<StoreError>,
    ) -> Result<(), StoreError> {
        let mut entries = self.lock()?;
        let Some(entry) = entries.get(id) else {
            return Err(StoreError::NotFound { id: id.clone(), expired: false });
        };
        if let Some(error) = refuse(entry) {
            return Err(error);
        }
        if entry.version != expected_version {
            return Err(StoreError::VersionConflict {
                id: id.clone(),
                expected: expected_version,
                actual: entry.version,
            });
        }
        entries.remove(id);
        Ok(())
    }
}
