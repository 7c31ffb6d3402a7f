//! The in-memory store: the reference every other store must match.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use memory_id::MemoryId;
use memory_ranker::FoldBuffer;

use crate::{
    Batch, BatchPlan, Existing, Listing, MemoryStore, ScopeView, Scored, Step, check_plan_unchanged,
    expired_at, history_newest_first, live, live_at, paths_clash, plan, redactable, restored,
};
use memory_entry::{
    Key, Limits, MemoryEntry, MemoryType, NewEntry, Patch, ScopeRef, StorageError, StorageErrorKind,
    StoreError, Timestamp, Version, next_version, versions_to_drop,
};

/// A store that keeps entries in memory: for tests, for embedders, and the model every store must match.
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_entry::{NewEntry, StoreError, Timestamp};
/// use memory_store::{InMemoryStore, MemoryStore};
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
    state: Mutex<State>,
}

type Entries = BTreeMap<MemoryId, MemoryEntry>;

/// The live entries, and every kept version of every ID (the current one included), oldest first.
#[derive(Debug, Default)]
struct State {
    entries: Entries,
    history: BTreeMap<MemoryId, Vec<Version>>,
}

impl State {
    fn highest(&self, id: &MemoryId) -> Option<u64> {
        self.history.get(id).and_then(|kept| kept.last()).map(Version::version)
    }

    /// Keeps `version` as the newest of its ID and drops the oldest beyond `keep`.
    fn keep(&mut self, version: Version, keep: u64) {
        let kept = self.history.entry(version.id().clone()).or_default();
        kept.push(version);
        let drop = versions_to_drop(kept.len(), keep);
        kept.drain(..drop);
    }

    /// Makes `entry` current and keeps it.
    fn put(&mut self, entry: MemoryEntry, keep: u64) {
        self.entries.insert(entry.id.clone(), entry.clone());
        self.keep(Version::Entry(entry), keep);
    }

    /// Removes the live entry `entry` and keeps a tombstone at the next version.
    fn bury(&mut self, entry: &MemoryEntry, now: Timestamp, keep: u64) -> Result<(), StoreError> {
        let version = next_version(&entry.id, Some(entry.version))?;
        self.entries.remove(&entry.id);
        self.keep(
            Version::Tombstone { id: entry.id.clone(), version, deleted_at: now.truncated_to_millis() },
            keep,
        );
        Ok(())
    }
}

impl InMemoryStore {
    /// An empty store with the default limits.
    pub fn new() -> InMemoryStore {
        InMemoryStore::default()
    }

    /// An empty store with the given limits.
    pub fn with_limits(limits: Limits) -> InMemoryStore {
        InMemoryStore { limits, state: Mutex::default() }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.state.lock().map_err(|_| {
            StoreError::Storage(StorageError::about(
                StorageErrorKind::Io,
                None,
                "the in-memory store was poisoned by a panic",
            ))
        })
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
        let state = self.lock()?;
        live(id, state.entries.get(id), now).cloned()
    }

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        let state = self.lock()?;
        let mut buffer = FoldBuffer::new();
        let mut kept = Vec::new();
        for entry in state.entries.values() {
            listing.check_cancelled()?;
            if listing.admits(entry)
                && let Some(score) = listing.score(entry, &mut buffer)
            {
                kept.push(Scored { entry: entry.clone(), score });
            }
        }
        Ok(listing.finish(kept))
    }

    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        let state = self.lock()?;
        let Some(root) = batch.scope_root() else { return Ok(BatchPlan::default()) };
        plan(&View { entries: &state.entries, root, leaving: None }, &self.limits, batch, now)
    }

    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let mut state = self.lock()?;
        let Some(root) = batch.scope_root() else { return Ok(Vec::new()) };
        let planned = plan(&View { entries: &state.entries, root, leaving: None }, &self.limits, batch, now)?;
        if let Some(expected) = expected {
            check_plan_unchanged(&planned, expected)?;
        }
        // Every step is checked, and every version it takes: only then is anything applied.
        let mut ready = Vec::new();
        for (new, step) in batch.entries().iter().zip(planned.steps()) {
            match step {
                Step::Create(id) => {
                    let mut entry = new.clone().into_entry(now);
                    entry.version = next_version(id, state.highest(id))?;
                    ready.push(entry);
                }
                Step::Update { id, expected_version } => {
                    let mut entry = live_at(id, state.entries.get(id), *expected_version, now)?.clone();
                    Patch::from(new).apply(&mut entry, now)?;
                    ready.push(entry);
                }
                Step::Skip { .. } => {}
            }
        }
        for entry in &ready {
            state.put(entry.clone(), self.limits.keep_versions);
        }
        Ok(ready)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut state = self.lock()?;
        let mut updated = live_at(id, state.entries.get(id), expected_version, now)?.clone();
        patch.apply(&mut updated, now)?;
        let view = View { entries: &state.entries, root: id.scope_root(), leaving: None };
        if patch.touches_unique_key()
            && let Some(unique) = updated.fields.unique_key()
        {
            crate::check_key_free(id, view.holder(id, unique)?)?;
        }
        state.put(updated.clone(), self.limits.keep_versions);
        Ok(updated)
    }

    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let entry = live_at(id, state.entries.get(id), expected_version, now)?.clone();
        state.bury(&entry, now, self.limits.keep_versions)
    }

    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let entry = expired_at(id, state.entries.get(id), expected_version, now)?.clone();
        state.bury(&entry, now, self.limits.keep_versions)
    }

    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut state = self.lock()?;
        let current = live_at(from, state.entries.get(from), expected_version, now)?.clone();
        let as_new = memory_entry::NewEntry {
            id: to.clone(),
            content: current.content.clone(),
            fields: current.fields.clone(),
            created_at: Some(current.created_at),
            updated_at: Some(current.updated_at),
        };
        let view = View { entries: &state.entries, root: to.scope_root(), leaving: Some(from) };
        plan(&view, &self.limits, &Batch::create(as_new), now)?;
        let moved =
            MemoryEntry { id: to.clone(), version: next_version(to, state.highest(to))?, ..current.clone() };
        next_version(from, Some(current.version))?;
        state.bury(&current, now, self.limits.keep_versions)?;
        state.put(moved.clone(), self.limits.keep_versions);
        Ok(moved)
    }

    fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        let state = self.lock()?;
        history_newest_first(id, state.history.get(id).cloned().unwrap_or_default(), limit)
    }

    fn restore(
        &self,
        id: &MemoryId,
        version: u64,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut state = self.lock()?;
        let kept = state.history.get(id).cloned().unwrap_or_default();
        let current = state.entries.get(id);
        let restored = restored(id, version, expected_version, current, &kept, now, &self.limits)?;
        let view = View { entries: &state.entries, root: id.scope_root(), leaving: None };
        match current {
            Some(_) => {
                if let Some(unique) = restored.fields.unique_key() {
                    crate::check_key_free(id, view.holder(id, unique)?)?;
                }
            }
            None => {
                plan(&view, &self.limits, &Batch::create(NewEntry::from(&restored)), now)?;
            }
        }
        state.put(restored.clone(), self.limits.keep_versions);
        Ok(restored)
    }

    fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        let current = state.entries.get(id).map(|entry| entry.version);
        let kept = state.history.get(id).cloned().unwrap_or_default();
        redactable(id, version, current, &kept)?;
        if let Some(kept) = state.history.get_mut(id)
            && let Some(slot) = kept.iter_mut().find(|kept| kept.version() == version)
        {
            *slot = slot.clone().redacted();
        }
        Ok(())
    }
}
