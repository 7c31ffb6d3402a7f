//! The adapter boundary: the `MemoryStore` trait every store implements, and its forwarding through a box or an
//! `Arc` (a store chosen at run time).

use memory_entry::{Limits, MemoryEntry, NewEntry, Patch, StoreError, Timestamp, Version};
use memory_id::MemoryId;

use crate::{Batch, BatchPlan, Listing, Scored};

/// A storage adapter. It holds no policy: the service authorizes every call before it reaches the store, so changing
/// the adapter never changes permissions.
///
/// Every adapter must behave alike; the adapter suite (feature `testkit`, `memory_store::testkit`) checks it. In
/// short:
/// - `get`, `update`, `delete` and `rename` see only live entries: an expired entry is [`StoreError::NotFound`] with
///   `expired: true`;
/// - creates never overwrite and follow [`plan`](crate::plan), the create rules written once for every store;
/// - `update`, `delete` and `rename` compare `expected_version` with the stored version and write in one critical
///   section: of two racing writers exactly one wins, the other gets [`StoreError::VersionConflict`];
/// - the checks run in the order not found, version conflict, already exists, limit;
/// - timestamps are stored in whole milliseconds, so an entry reads back equal to what a write returned;
/// - `list` returns each entry once, sorted by ID, scored once with the listing's [`Scorer`](memory_ranker::Scorer).
pub trait MemoryStore: Send + Sync {
    /// The limits this store enforces (and the service validates against).
    fn limits(&self) -> &Limits;

    /// Reads one live entry.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (with `expired`) or [`StoreError::Storage`].
    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError>;

    /// The entries inside the listing's roots that it admits and whose score it keeps, each once, at most its limit,
    /// in its order ([`Listing::finish`]). Nothing outside the roots is opened.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError>;

    /// Plans `batch` against the store as it is ([`plan`](crate::plan)); writes nothing.
    ///
    /// # Errors
    ///
    /// As [`plan`](crate::plan).
    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError>;

    /// Writes `batch` all-or-nothing: under the scope-root lock, plans it ([`plan`](crate::plan)) and, when `expected` is given,
    /// refuses with [`StoreError::BatchStale`] unless that plan equals it (the store changed since it was planned),
    /// then writes every create and update. Returns the entries written, in batch order (skips are left out).
    /// Every check precedes every write; a crash during the writes can leave a prefix of them.
    ///
    /// # Errors
    ///
    /// As [`plan`](crate::plan), [`StoreError::BatchStale`], or [`StoreError::Storage`].
    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError>;

    /// Creates an entry; never overwrites. A batch of one. It takes version 1, or, for an ID that existed before,
    /// one past the highest version that ID ever had (a store with history; [`next_version`](memory_entry::next_version)).
    ///
    /// # Errors
    ///
    /// [`StoreError::AlreadyExists`], [`StoreError::LimitExceeded`] or [`StoreError::Storage`].
    fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let id = entry.id.clone();
        self.write_batch(&Batch::create(entry), None, now)?.into_iter().next().ok_or_else(|| {
            StoreError::Storage(memory_entry::StorageError::new(
                memory_entry::StorageErrorKind::Corrupt,
                Some(&id),
                "the store wrote nothing for a create",
            ))
        })
    }

    /// Applies `patch` if the live entry is at `expected_version`; the new version is one more.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::VersionConflict`], [`StoreError::AlreadyExists`] (the patch would
    /// duplicate another entry's type, key and scope), [`StoreError::VersionLimit`] or [`StoreError::Storage`].
    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError>;

    /// Deletes the live entry if it is at `expected_version`. A store with history leaves a tombstone at the next
    /// version.
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

    /// Moves the live entry at `from`, if it is at `expected_version`, to `to` in one step: it keeps its fields,
    /// content and timestamps, and no moment shows both IDs or neither. A store with history gives it the next
    /// version of `to` ([`next_version`](memory_entry::next_version)) and leaves a tombstone at `from`; one without keeps
    /// its version. `to` follows the create rules
    /// ([`plan`](crate::plan)) in its scope root, where the moved entry's own (type, key, scope) never clashes with itself.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (`from`), [`StoreError::VersionConflict`], [`StoreError::AlreadyExists`] (`to`),
    /// [`StoreError::LimitExceeded`] (`to`'s scope root) or [`StoreError::Storage`].
    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError>;

    /// The kept versions of `id`, newest first (the `limit` newest with a limit): entries, redacted entries and
    /// tombstones, expired and deleted IDs included. A store that keeps no history reports
    /// [`StorageErrorKind::Unsupported`](memory_entry::StorageErrorKind::Unsupported).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when `id` has no version at all, or [`StoreError::Storage`].
    fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        let _ = limit;
        Err(unsupported(id, "history"))
    }

    /// One kept version of `id` (a tombstone too; the caller decides what it means).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (no version at all), [`StoreError::VersionNotFound`] (never written or no longer
    /// kept) or [`StoreError::Storage`].
    fn get_version(&self, id: &MemoryId, version: u64) -> Result<Version, StoreError> {
        let kept = self.history(id, None)?;
        crate::history::find_version(&kept, id, version).cloned()
    }

    /// Writes version `expected_version + 1` of `id` with the content and fields of `version`: `createdAt` of the
    /// current entry (of `version` when the ID is deleted, which brings it back under the create rules), `updatedAt`
    /// now. `expected_version` is checked first (the live entry's version, or the tombstone's on a deleted ID), then
    /// `version`; the limits in force now apply.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (no such ID, or the live entry has expired), [`StoreError::VersionConflict`],
    /// [`StoreError::VersionNotFound`] (also for a tombstone), [`StoreError::VersionRedacted`],
    /// [`StoreError::Field`], [`StoreError::AlreadyExists`], [`StoreError::LimitExceeded`],
    /// [`StoreError::VersionLimit`] or [`StoreError::Storage`].
    fn restore(
        &self,
        id: &MemoryId,
        version: u64,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let _ = (version, expected_version, now);
        Err(unsupported(id, "restore"))
    }

    /// Erases the content of `version` of `id` wherever the store keeps it; the other fields stay. Redacting a
    /// redacted version again is allowed.
    ///
    /// # Errors
    ///
    /// [`StoreError::RedactCurrent`] for the version the live entry is at, [`StoreError::NotFound`],
    /// [`StoreError::VersionNotFound`] (also for a tombstone) or [`StoreError::Storage`].
    fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        let _ = version;
        Err(unsupported(id, "redaction"))
    }
}

/// The error of a store that keeps no history.
fn unsupported(id: &MemoryId, what: &str) -> StoreError {
    StoreError::Storage(memory_entry::StorageError::new(
        memory_entry::StorageErrorKind::Unsupported,
        Some(id),
        format!("this store keeps no version history, so {what} is not available on it yet"),
    ))
}

macro_rules! forward_store {
    ($($outer:tt)*) => {
        impl<S: MemoryStore + ?Sized> MemoryStore for $($outer)*<S> {
            fn limits(&self) -> &Limits {
                (**self).limits()
            }
            fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
                (**self).get(id, now)
            }
            fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
                (**self).list(listing)
            }
            fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
                (**self).plan_batch(batch, now)
            }
            fn write_batch(
                &self,
                batch: &Batch,
                expected: Option<&BatchPlan>,
                now: Timestamp,
            ) -> Result<Vec<MemoryEntry>, StoreError> {
                (**self).write_batch(batch, expected, now)
            }
            fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
                (**self).create(entry, now)
            }
            fn update(
                &self,
                id: &MemoryId,
                expected_version: u64,
                patch: &Patch,
                now: Timestamp,
            ) -> Result<MemoryEntry, StoreError> {
                (**self).update(id, expected_version, patch, now)
            }
            fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
                (**self).delete(id, expected_version, now)
            }
            fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
                (**self).delete_expired(id, expected_version, now)
            }
            fn rename(
                &self,
                from: &MemoryId,
                to: &MemoryId,
                expected_version: u64,
                now: Timestamp,
            ) -> Result<MemoryEntry, StoreError> {
                (**self).rename(from, to, expected_version, now)
            }
            fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
                (**self).history(id, limit)
            }
            fn get_version(&self, id: &MemoryId, version: u64) -> Result<Version, StoreError> {
                (**self).get_version(id, version)
            }
            fn restore(
                &self,
                id: &MemoryId,
                version: u64,
                expected_version: u64,
                now: Timestamp,
            ) -> Result<MemoryEntry, StoreError> {
                (**self).restore(id, version, expected_version, now)
            }
            fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
                (**self).redact(id, version)
            }
        }
    };
}

// A store chosen at run time (Markdown or PostgreSQL) is a `Box<dyn MemoryStore>`; a shared one an `Arc`.
forward_store!(Box);
forward_store!(std::sync::Arc);
