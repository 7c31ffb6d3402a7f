//! The rules of history every store applies the same way: what a history answers, what a restore writes, which
//! version a redaction erases. A store reads what it keeps its own way and calls these; none spells a rule out
//! again.

use memory_entry::{
    Limits, MemoryEntry, NewEntry, StoreError, Timestamp, Version, VersionMissing, next_version,
};
use memory_id::MemoryId;

use crate::live_at;

/// Finds `version` among the kept versions of `id` (`kept` in any order), or says why it is not there: above the
/// highest kept version it was never written; below it, missing, it is no longer kept (versions are numbered
/// without gaps, so a missing one was dropped). A tombstone is found; the caller decides what it means.
///
/// # Errors
///
/// [`StoreError::NotFound`] when nothing is kept for `id`; [`StoreError::VersionNotFound`] otherwise.
pub(crate) fn find_version<'a>(
    kept: &'a [Version],
    id: &MemoryId,
    version: u64,
) -> Result<&'a Version, StoreError> {
    let Some(highest) = kept.iter().map(Version::version).max() else {
        return Err(StoreError::NotFound { id: id.clone(), expired: false });
    };
    if let Some(found) = kept.iter().find(|kept| kept.version() == version) {
        return Ok(found);
    }
    let missing = if version > highest || version == 0 {
        VersionMissing::NeverWritten
    } else {
        VersionMissing::NoLongerKept
    };
    Err(StoreError::VersionNotFound { id: id.clone(), version, missing })
}

/// What a history answers from `kept`, the versions a store keeps of `id` in any order: newest first, the `limit`
/// newest with a limit.
///
/// # Errors
///
/// [`StoreError::NotFound`] when nothing is kept for `id` (it never existed).
pub fn history_newest_first(
    id: &MemoryId,
    mut kept: Vec<Version>,
    limit: Option<usize>,
) -> Result<Vec<Version>, StoreError> {
    if kept.is_empty() {
        return Err(StoreError::NotFound { id: id.clone(), expired: false });
    }
    kept.sort_by_key(|version| std::cmp::Reverse(version.version()));
    if let Some(limit) = limit {
        kept.truncate(limit);
    }
    Ok(kept)
}

/// What a restore of `version` of `id` writes, at `expected_version`: every rule of a restore but the create rules
/// and the (type, key, scope) check, which need the store's view of the scope root.
///
/// `current` is what the store holds at `id` (expired or not; `None` when the ID is deleted) and `kept` every
/// version it keeps of `id`, in any order. In this order: the live entry must be at `expected_version` ([`live_at`]),
/// or, on a deleted ID, its tombstone must be; `version` must be kept, not a tombstone and not redacted. The result
/// is version `expected_version + 1` with the content, fields and unknown keys of `version`, `createdAt` of the live
/// entry (of `version` when undeleting) and `updatedAt` now, checked against `limits`.
///
/// # Errors
///
/// [`StoreError::NotFound`], [`StoreError::VersionConflict`], [`StoreError::VersionNotFound`],
/// [`StoreError::VersionRedacted`], [`StoreError::VersionLimit`], or [`StoreError::Field`] for content or a TTL over
/// the limits in force now.
pub fn restored(
    id: &MemoryId,
    version: u64,
    expected_version: u64,
    current: Option<&MemoryEntry>,
    kept: &[Version],
    now: Timestamp,
    limits: &Limits,
) -> Result<MemoryEntry, StoreError> {
    let current = match current {
        Some(held) => Some(live_at(id, Some(held), expected_version, now)?),
        None => {
            let highest = kept.iter().map(Version::version).max();
            check_tombstone(id, highest, expected_version)?;
            None
        }
    };
    let source = restorable(find_version(kept, id, version)?)?;
    let next = next_version(id, Some(expected_version))?;
    let entry = MemoryEntry {
        id: source.id.clone(),
        version: next,
        created_at: current.map_or(source.created_at, |current| current.created_at),
        updated_at: now.truncated_to_millis(),
        content: source.content.clone(),
        fields: source.fields.clone(),
        extra: source.extra.clone(),
    };
    NewEntry::from(&entry)
        .validate(limits, now)
        .map_err(|error| StoreError::Field { id: entry.id.clone(), error })?;
    Ok(entry)
}

/// On a deleted ID, a restore's `expected_version` must be the tombstone's (`highest`, the ID's highest version).
fn check_tombstone(id: &MemoryId, highest: Option<u64>, expected: u64) -> Result<(), StoreError> {
    match highest {
        None => Err(StoreError::NotFound { id: id.clone(), expired: false }),
        Some(actual) if actual != expected => {
            Err(StoreError::VersionConflict { id: id.clone(), expected, actual })
        }
        Some(_) => Ok(()),
    }
}

/// The entry of a version a restore may write from: not a tombstone, not redacted.
fn restorable(version: &Version) -> Result<&MemoryEntry, StoreError> {
    match version {
        Version::Entry(entry) => Ok(entry),
        Version::Redacted(entry) => {
            Err(StoreError::VersionRedacted { id: entry.id.clone(), version: entry.version })
        }
        Version::Tombstone { id, version, .. } => Err(StoreError::VersionNotFound {
            id: id.clone(),
            version: *version,
            missing: VersionMissing::Tombstone,
        }),
    }
}

/// The version a redaction of `version` of `id` erases, from `kept` (every version the store keeps of `id`, in any
/// order), the live entry being at `current` (`None`: the ID is deleted).
///
/// # Errors
///
/// [`StoreError::NotFound`] when nothing is kept, [`StoreError::VersionNotFound`] for a version that is not kept or
/// is a tombstone, [`StoreError::RedactCurrent`] for the current version.
pub fn redactable<'a>(
    id: &MemoryId,
    version: u64,
    current: Option<u64>,
    kept: &'a [Version],
) -> Result<&'a Version, StoreError> {
    let found = find_version(kept, id, version)?;
    if current == Some(found.version()) {
        return Err(StoreError::RedactCurrent { id: id.clone(), version: found.version() });
    }
    if found.is_tombstone() {
        return Err(StoreError::VersionNotFound {
            id: id.clone(),
            version: found.version(),
            missing: VersionMissing::Tombstone,
        });
    }
    Ok(found)
}
