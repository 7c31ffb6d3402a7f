//! History's model: every version an ID had, kept up to a bound; which version a write takes and which versions a
//! bound drops. The rules of restores, redactions and history answers are memory-store's.

use memory_id::MemoryId;

use crate::{MAX_VERSION, MemoryEntry, NewEntry, StoreError, Timestamp};

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

/// `entry` as a create with its timestamps kept, for the create rules (memory-store's `plan`): what a restore of a
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
