//! History: every version an ID had, kept up to a bound, and the rules every store applies to it the same way
//! (which version a write takes, what a lookup of a version reports, which versions a bound drops).

use memory_id::MemoryId;

use crate::{Limits, MAX_VERSION, MemoryEntry, NewEntry, StoreError, Timestamp};

/// How many versions a store keeps per ID unless configured (`history.keepVersions`).
pub const DEFAULT_KEEP_VERSIONS: u64 = 100;

/// One kept version of an ID.
///
/// ```
/// use memory_entry::{NewEntry, Timestamp, Version};
/// use memory_id::parse_memory_id;
///
/// let at = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
/// let id = parse_memory_id("shared:a").unwrap();
/// let kept = Version::Entry(NewEntry::new(id.clone(), "x").into_entry(at));
/// let gone = Version::Tombstone { id, version: 2, deleted_at: at };
/// assert_eq!((kept.version(), gone.version()), (1, 2));
/// assert!(gone.is_tombstone() && !kept.is_redacted());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Version {
    /// The entry as it was at that version.
    Entry(MemoryEntry),
    /// The entry as it was at that version, its content erased (`content` is empty); the other fields stay.
    Redacted(MemoryEntry),
    /// The ID was deleted (or renamed away) at this version.
    Tombstone {
        /// The ID.
        id: MemoryId,
        /// The tombstone's version: one past the entry it ended.
        version: u64,
        /// When it was deleted.
        deleted_at: Timestamp,
    },
}

impl Version {
    /// The version number.
    pub fn version(&self) -> u64 {
        match self {
            Version::Entry(entry) | Version::Redacted(entry) => entry.version,
            Version::Tombstone { version, .. } => *version,
        }
    }

    /// The ID.
    pub fn id(&self) -> &MemoryId {
        match self {
            Version::Entry(entry) | Version::Redacted(entry) => &entry.id,
            Version::Tombstone { id, .. } => id,
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Version::Tombstone { .. })
    }

    /// Whether its content was redacted.
    pub fn is_redacted(&self) -> bool {
        matches!(self, Version::Redacted(_))
    }

    /// The entry of this version, when it is not a tombstone.
    pub fn entry(&self) -> Option<&MemoryEntry> {
        match self {
            Version::Entry(entry) | Version::Redacted(entry) => Some(entry),
            Version::Tombstone { .. } => None,
        }
    }

    /// When this version was written: the entry's `updated_at`, or when it was deleted.
    pub fn updated_at(&self) -> Timestamp {
        match self {
            Version::Entry(entry) | Version::Redacted(entry) => entry.updated_at,
            Version::Tombstone { deleted_at, .. } => *deleted_at,
        }
    }

    /// This version with its content erased (a tombstone stays as it is).
    #[must_use]
    pub fn redacted(self) -> Version {
        match self {
            Version::Entry(mut entry) | Version::Redacted(mut entry) => {
                entry.content = String::new();
                Version::Redacted(entry)
            }
            tombstone @ Version::Tombstone { .. } => tombstone,
        }
    }
}

/// Why a version of an ID cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VersionMissing {
    /// The ID never reached that version.
    NeverWritten,
    /// The version was written but dropped by `history.keepVersions`.
    NoLongerKept,
    /// The version is a tombstone: the ID was deleted there, so it has no content.
    Tombstone,
}

impl VersionMissing {
    /// `never_written`, `no_longer_kept` or `tombstone`.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionMissing::NeverWritten => "never_written",
            VersionMissing::NoLongerKept => "no_longer_kept",
            VersionMissing::Tombstone => "tombstone",
        }
    }
}

/// Finds `version` among the kept versions of `id` (`kept` in any order), or says why it is not there: above the
/// highest kept version it was never written; below it, missing, it is no longer kept (versions are numbered
/// without gaps, so a missing one was dropped). A tombstone is found; the caller decides what it means.
///
/// # Errors
///
/// [`StoreError::NotFound`] when nothing is kept for `id`; [`StoreError::VersionNotFound`] otherwise.
pub fn find_version<'a>(kept: &'a [Version], id: &MemoryId, version: u64) -> Result<&'a Version, StoreError> {
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

/// The version the next write of an ID takes: one past the highest it ever had (`None`: it never existed), 1 for a
/// new ID.
///
/// # Errors
///
/// [`StoreError::VersionLimit`] when the highest is already [`MAX_VERSION`].
pub fn next_version(id: &MemoryId, highest: Option<u64>) -> Result<u64, StoreError> {
    match highest {
        None => Ok(1),
        Some(version) if version >= MAX_VERSION => {
            Err(StoreError::VersionLimit { id: id.clone(), limit: MAX_VERSION })
        }
        Some(version) => Ok(version + 1),
    }
}

/// How many of `count` kept versions a store drops, oldest first, to keep at most `keep` (at least 1, so the highest
/// version, which a re-create continues from, is never dropped).
///
/// ```
/// use memory_entry::versions_to_drop;
/// assert_eq!(versions_to_drop(5, 3), 2);
/// assert_eq!(versions_to_drop(2, 3), 0);
/// assert_eq!(versions_to_drop(4, 0), 3, "the highest version is always kept");
/// ```
pub fn versions_to_drop(count: usize, keep: u64) -> usize {
    let keep = usize::try_from(keep.max(1)).unwrap_or(usize::MAX);
    count.saturating_sub(keep)
}

/// A history newest first, the `limit` newest with a limit.
pub fn newest_first(mut kept: Vec<Version>, limit: Option<usize>) -> Vec<Version> {
    kept.sort_by_key(|version| std::cmp::Reverse(version.version()));
    if let Some(limit) = limit {
        kept.truncate(limit);
    }
    kept
}

/// On a deleted ID, a restore's `expected_version` must be the tombstone's (`highest`, the ID's highest version).
///
/// # Errors
///
/// [`StoreError::NotFound`] when the ID never existed, [`StoreError::VersionConflict`] when `expected` is not the
/// tombstone's version.
pub fn check_tombstone(id: &MemoryId, highest: Option<u64>, expected: u64) -> Result<(), StoreError> {
    match highest {
        None => Err(StoreError::NotFound { id: id.clone(), expired: false }),
        Some(actual) if actual != expected => {
            Err(StoreError::VersionConflict { id: id.clone(), expected, actual })
        }
        Some(_) => Ok(()),
    }
}

/// The entry of a version a restore may write from.
///
/// # Errors
///
/// [`StoreError::VersionNotFound`] for a tombstone, [`StoreError::VersionRedacted`] for a redacted version.
pub fn restorable(version: &Version) -> Result<&MemoryEntry, StoreError> {
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

/// What a restore of `source` writes over `current` (`None` on a deleted ID) at `expected_version`: version
/// `expected_version + 1`, the content, fields and unknown keys of `source`, `createdAt` of `current` (of `source`
/// when undeleting), `updatedAt` now; checked against the limits in force now.
///
/// # Errors
///
/// [`StoreError::VersionLimit`], or [`StoreError::Field`] for content or a TTL over today's limits.
pub fn restored_entry(
    source: &MemoryEntry,
    current: Option<&MemoryEntry>,
    expected_version: u64,
    now: Timestamp,
    limits: &Limits,
) -> Result<MemoryEntry, StoreError> {
    let version = next_version(&source.id, Some(expected_version))?;
    let entry = MemoryEntry {
        id: source.id.clone(),
        version,
        created_at: current.map_or(source.created_at, |current| current.created_at),
        updated_at: now.truncated_to_millis(),
        content: source.content.clone(),
        fields: source.fields.clone(),
        extra: source.extra.clone(),
    };
    as_create(&entry)
        .validate(limits, now)
        .map_err(|error| StoreError::Field { id: entry.id.clone(), error })?;
    Ok(entry)
}

/// `entry` as a create with its timestamps kept, for the create rules ([`plan`](crate::plan)).
pub fn as_create(entry: &MemoryEntry) -> NewEntry {
    NewEntry {
        id: entry.id.clone(),
        content: entry.content.clone(),
        fields: entry.fields.clone(),
        created_at: Some(entry.created_at),
        updated_at: Some(entry.updated_at),
    }
}

/// Whether `version` may be redacted, the live entry being at `current` (`None`: the ID is deleted).
///
/// # Errors
///
/// [`StoreError::RedactCurrent`] for the current version, [`StoreError::VersionNotFound`] for a tombstone.
pub fn check_redactable(version: &Version, current: Option<u64>) -> Result<(), StoreError> {
    if current == Some(version.version()) {
        return Err(StoreError::RedactCurrent { id: version.id().clone(), version: version.version() });
    }
    if version.is_tombstone() {
        return Err(StoreError::VersionNotFound {
            id: version.id().clone(),
            version: version.version(),
            missing: VersionMissing::Tombstone,
        });
    }
    Ok(())
}
