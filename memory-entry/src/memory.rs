//! The in-memory store: the reference every other store must match.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use memory_id::MemoryId;
use memory_ranker::FoldBuffer;

use crate::{
    Batch, BatchPlan, Existing, Key, Limits, Listing, MemoryEntry, MemoryStore, MemoryType, Patch, ScopeRef,
    ScopeView, Scored, Step, StorageError, StorageErrorKind, StoreError, Timestamp, check_plan_unchanged,
    import_patch, paths_clash, plan,
};

/// A store that keeps entries in memory: for tests, for embedders, and the model every store must match.
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_entry::{InMemoryStore, MemoryStore, NewEntry, StoreError, Timestamp};
///
/// let store = InMemoryStore::new();
/// let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
/// let id = parse_memory_id("shared:team:onboarding").unwrap();
/// let entry = store.create(NewEntry::new(id.clone(), "Read the README first."), now).unwrap();
/// assert_eq!(entry.version, 1);
///
/// // A create never overwrites.
/// let again = store.create(NewEntry::new(id, "Something else."), now);
/// assert!(matches!(again, Err(StoreError::AlreadyExists { .. })));
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    limits: Limits,
    entries: Mutex<BTreeMap<MemoryId, MemoryEntry>>,
}

type Entries = BTreeMap<MemoryId, MemoryEntry>;

impl InMemoryStore {
    /// An empty store with the default limits.
    pub fn new() -> InMemoryStore {
        InMemoryStore::default()
    }

    /// An empty store with the given limits.
    pub fn with_limits(limits: Limits) -> InMemoryStore {
        InMemoryStore { limits, entries: Mutex::default() }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Entries>, StoreError> {
        self.entries.lock().map_err(|_| {
            StoreError::Storage(StorageError::about(
                StorageErrorKind::Io,
                None,
                "the in-memory store was poisoned by a panic",
            ))
        })
    }

    /// The live entry at `id` at `expected_version`, or the error the doors report.
    fn live_at<'a>(
        entries: &'a Entries,
        id: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<&'a MemoryEntry, StoreError> {
        let entry = match entries.get(id) {
            Some(entry) if entry.is_expired(now) => {
                return Err(StoreError::NotFound { id: id.clone(), expired: true });
            }
            Some(entry) => entry,
            None => return Err(StoreError::NotFound { id: id.clone(), expired: false }),
        };
        if entry.version != expected_version {
            return Err(StoreError::VersionConflict {
                id: id.clone(),
                expected: expected_version,
                actual: entry.version,
            });
        }
        Ok(entry)
    }
}

/// The scope root of `root` in the map, for the create rules.
struct View<'a> {
    entries: &'a Entries,
    root: memory_id::MemoryPrefix,
    /// An entry being moved away (a rename): its name is about to be free, and its key is its own.
    leaving: Option<&'a MemoryId>,
}

impl View<'_> {
    fn in_root(&self) -> impl Iterator<Item = &MemoryEntry> {
        self.entries.values().filter(|entry| self.root.contains(&entry.id) && Some(&entry.id) != self.leaving)
    }
}

impl ScopeView for View<'_> {
    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.in_root().count() as u64)
    }

    fn existing(&self, id: &MemoryId) -> Result<Existing, StoreError> {
        Ok(match self.entries.get(id).filter(|_| Some(id) != self.leaving) {
            Some(entry) => Existing::Entry(Box::new(entry.clone())),
            None => Existing::None,
        })
    }

    fn clash(&self, id: &MemoryId) -> Result<Option<MemoryId>, StoreError> {
        Ok(self.in_root().map(|entry| &entry.id).filter(|other| paths_clash(id, other)).min().cloned())
    }

    fn holder(
        &self,
        id: &MemoryId,
        unique: (Option<MemoryType>, &Key, Option<&ScopeRef>),
    ) -> Result<Option<MemoryId>, StoreError> {
        Ok(self
            .in_root()
            .filter(|entry| entry.id != *id && entry.fields.unique_key() == Some(unique))
            .map(|entry| entry.id.clone())
            .min())
    }
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

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        let entries = self.lock()?;
        let mut buffer = FoldBuffer::new();
        let mut kept = Vec::new();
        for entry in entries.values() {
            listing.check_cancelled()?;
            if listing.admits(entry)
                && let Some(score) = listing.score(entry, &mut buffer)
            {
                kept.push(Scored { entry: entry.clone(), score });
            }
        }
        Ok(kept)
    }

    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        let entries = self.lock()?;
        let Some(root) = batch.scope_root() else { return Ok(BatchPlan::default()) };
        plan(&View { entries: &entries, root, leaving: None }, &self.limits, batch, now)
    }

    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let mut entries = self.lock()?;
        let Some(root) = batch.scope_root() else { return Ok(Vec::new()) };
        let planned = plan(&View { entries: &entries, root, leaving: None }, &self.limits, batch, now)?;
        if let Some(expected) = expected {
            check_plan_unchanged(&planned, expected)?;
        }
        // Every step is checked; apply them all (updates first checked against their version).
        let mut written = Vec::new();
        for (new, step) in batch.entries().iter().zip(planned.steps()) {
            match step {
                Step::Create(id) => {
                    let entry = new.clone().into_entry(now);
                    entries.insert(id.clone(), entry.clone());
                    written.push(entry);
                }
                Step::Update { id, expected_version } => {
                    let mut entry = InMemoryStore::live_at(&entries, id, *expected_version, now)?.clone();
                    import_patch(new).apply(&mut entry, now)?;
                    entries.insert(id.clone(), entry.clone());
                    written.push(entry);
                }
                Step::Skip { .. } => {}
            }
        }
        Ok(written)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut entries = self.lock()?;
        let mut updated = InMemoryStore::live_at(&entries, id, expected_version, now)?.clone();
        patch.apply(&mut updated, now)?;
        let view = View { entries: &entries, root: id.scope_root(), leaving: None };
        if patch.touches_unique_key()
            && let Some(unique) = updated.fields.unique_key()
            && let Some(holder) = view.holder(id, unique)?
        {
            return Err(StoreError::AlreadyExists {
                id: id.clone(),
                existing: holder.into_string(),
                reason: crate::ExistsReason::DuplicateKey,
            });
        }
        entries.insert(id.clone(), updated.clone());
        Ok(updated)
    }

    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        let mut entries = self.lock()?;
        InMemoryStore::live_at(&entries, id, expected_version, now)?;
        entries.remove(id);
        Ok(())
    }

    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        let mut entries = self.lock()?;
        let Some(entry) = entries.get(id) else {
            return Err(StoreError::NotFound { id: id.clone(), expired: false });
        };
        if !entry.is_expired(now) {
            return Err(StoreError::NotExpired { id: id.clone() });
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

    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut entries = self.lock()?;
        let current = InMemoryStore::live_at(&entries, from, expected_version, now)?.clone();
        let mut moved = current.clone();
        moved.id = to.clone();
        let as_new = crate::NewEntry {
            id: to.clone(),
            content: moved.content.clone(),
            fields: moved.fields.clone(),
            created_at: Some(moved.created_at),
            updated_at: Some(moved.updated_at),
        };
        let view = View { entries: &entries, root: to.scope_root(), leaving: Some(from) };
        plan(&view, &self.limits, &Batch::create(as_new), now)?;
        entries.remove(from);
        entries.insert(to.clone(), moved.clone());
        Ok(moved)
    }
}
