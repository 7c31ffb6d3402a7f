//! History: every version an ID had, kept up to a bound, and the rules every store applies to it the same way
//! (which version a write takes, what a lookup of a version reports, which versions a bound drops).

use memory_id::MemoryId;

use crate::{Limits, MAX_VERSION, MemoryEntry, NewEntry, StoreError, Timestamp, live_at};

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

/// `entry` as a create with its timestamps kept, for the create rules ([`plan`](crate::plan)): what a restore of a
/// deleted ID and a rename write under them.
impl From<&MemoryEntry> for NewEntry {
    fn from(entry: &MemoryEntry) -> NewEntry {
        NewEntry {
            id: entry.id.clone(),
            content: entry.content.clone(),
            fields: entry.fields.clone(),
            created_at: Some(entry.created_at),
            updated_at: Some(entry.updated_at),
        }
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
