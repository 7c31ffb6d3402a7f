//! The live-entry rule, which every store applies before it reads, changes or deletes an entry: what it holds at an
//! ID must exist (else `NotFound`), must not have expired (else `NotFound` with `expired: true`) and, for a write,
//! must be at the version the caller expects (else `VersionConflict`). A prune deletes by the mirror rule: the
//! entry must have expired (else `NotExpired`). Stores find the entry their own way and call these functions; none
//! spells the rule out again.

use memory_id::MemoryId;

use memory_entry::{MemoryEntry, StoreError, Timestamp};

/// What a store holds at an ID, as the live-entry rule reads it: a version, which may have expired.
///
/// Implemented for [`MemoryEntry`], references and boxes of it, and a pair of something a store read the entry
/// through (a directory handle, say) with the entry, so a store passes what it found as it found it.
pub trait Held {
    /// Its version.
    fn version(&self) -> u64;
    /// Whether it has expired at `now`.
    fn is_expired(&self, now: Timestamp) -> bool;
}

impl Held for MemoryEntry {
    fn version(&self) -> u64 {
        self.version
    }

    fn is_expired(&self, now: Timestamp) -> bool {
        MemoryEntry::is_expired(self, now)
    }
}

impl<T: Held + ?Sized> Held for &T {
    fn version(&self) -> u64 {
        (**self).version()
    }

    fn is_expired(&self, now: Timestamp) -> bool {
        (**self).is_expired(now)
    }
}

impl<T: Held + ?Sized> Held for Box<T> {
    fn version(&self) -> u64 {
        (**self).version()
    }

    fn is_expired(&self, now: Timestamp) -> bool {
        (**self).is_expired(now)
    }
}

impl<D, T: Held> Held for (D, T) {
    fn version(&self) -> u64 {
        self.1.version()
    }

    fn is_expired(&self, now: Timestamp) -> bool {
        self.1.is_expired(now)
    }
}

/// The live entry: `found` (what the store holds at `id`, `None` for nothing) when it has not expired at `now`.
///
/// ```
/// use memory_entry::{MemoryEntry, NewEntry, StoreError, Timestamp};
/// use memory_store::live;
/// use memory_id::parse_memory_id;
///
/// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
/// let id = parse_memory_id("shared:a").unwrap();
/// let entry = NewEntry::new(id.clone(), "x").into_entry(now);
/// assert_eq!(live(&id, Some(&entry), now).unwrap().version, 1);
/// assert!(matches!(live(&id, None::<&MemoryEntry>, now), Err(StoreError::NotFound { expired: false, .. })));
/// ```
///
/// # Errors
///
/// [`StoreError::NotFound`], with `expired` saying whether an entry was there but expired.
pub fn live<E: Held>(id: &MemoryId, found: Option<E>, now: Timestamp) -> Result<E, StoreError> {
    match found {
        None => Err(StoreError::NotFound { id: id.clone(), expired: false }),
        Some(entry) if entry.is_expired(now) => Err(StoreError::NotFound { id: id.clone(), expired: true }),
        Some(entry) => Ok(entry),
    }
}

/// The live entry at `expected`: [`live`], and at version `expected` (what an update, a delete, a rename or a
/// restore over a live entry writes from).
///
/// # Errors
///
/// [`StoreError::NotFound`] as [`live`], then [`StoreError::VersionConflict`] for another version.
pub fn live_at<E: Held>(
    id: &MemoryId,
    found: Option<E>,
    expected: u64,
    now: Timestamp,
) -> Result<E, StoreError> {
    at_version(id, live(id, found, now)?, expected)
}

/// The expired entry at `expected`, which a prune deletes: `found`, expired at `now`, at version `expected`.
///
/// # Errors
///
/// [`StoreError::NotFound`] when nothing is held, [`StoreError::NotExpired`] for a live entry, then
/// [`StoreError::VersionConflict`] for another version.
pub fn expired_at<E: Held>(
    id: &MemoryId,
    found: Option<E>,
    expected: u64,
    now: Timestamp,
) -> Result<E, StoreError> {
    match found {
        None => Err(StoreError::NotFound { id: id.clone(), expired: false }),
        Some(entry) if !entry.is_expired(now) => Err(StoreError::NotExpired { id: id.clone() }),
        Some(entry) => at_version(id, entry, expected),
    }
}

fn at_version<E: Held>(id: &MemoryId, entry: E, expected: u64) -> Result<E, StoreError> {
    let actual = entry.version();
    if actual == expected {
        Ok(entry)
    } else {
        Err(StoreError::VersionConflict { id: id.clone(), expected, actual })
    }
}
