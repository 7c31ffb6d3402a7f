//! Limits of the ALP 80 memory model, and the integer bound every number in this project keeps.

use crate::Ttl;

/// The largest integer JavaScript runtimes read exactly (2^53 − 1). Versions, TTLs in seconds and every other
/// integer this project writes into JSON stay at most this.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The largest version an entry may hold (2^53 − 1): an update of an entry at this version is refused, never
/// wrapped, and a file claiming a larger one is refused when read.
pub const MAX_VERSION: u64 = MAX_SAFE_INTEGER;

/// The largest frontmatter (or other per-entry metadata) a store keeps next to a value: 64 KiB.
pub(crate) const METADATA_ROOM: u64 = 64 * 1024;

/// Limits on memory growth and on what a store reads. Defaults from the ALP 80 memory model (500 entries per scope
/// root, 2000 characters per value, a TTL of at most 365 days) and from the stores' hardening (an entry of at most
/// 1 MiB as stored).
///
/// ```
/// use memory_entry::Limits;
/// let limits = Limits::default();
/// assert_eq!((limits.max_entries_per_scope_root, limits.max_value_chars), (500, 2000));
/// assert_eq!(limits.max_file_bytes, 1024 * 1024);
/// assert_eq!(limits.min_file_bytes(), 4 * 2000 + 64 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries in one scope root (`shared`, each `project:<id>`, each `private:<role>`), expired ones included until
    /// pruned.
    pub max_entries_per_scope_root: u64,
    /// Characters (Unicode scalar values) in one value.
    pub max_value_chars: u64,
    /// The longest TTL.
    pub max_ttl: Ttl,
    /// The largest entry a store reads, in bytes as stored (a Markdown file). A larger one is refused on get and
    /// update, skipped by listings (it still counts against the entry limit), and may be deleted.
    pub max_file_bytes: u64,
    /// Versions kept per ID (`history.keepVersions`, at least 1): the current one, older ones and tombstones alike
    /// count, the oldest go first, and the highest is never dropped.
    pub keep_versions: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries_per_scope_root: 500,
            max_value_chars: 2000,
            max_ttl: Ttl::DEFAULT_MAX,
            max_file_bytes: 1024 * 1024,
            keep_versions: crate::DEFAULT_KEEP_VERSIONS,
        }
    }
}

impl Limits {
    /// The smallest `max_file_bytes` that holds a value at `max_value_chars` in 4-byte characters plus the largest
    /// frontmatter.
    pub fn min_file_bytes(&self) -> u64 {
        self.max_value_chars.saturating_mul(4).saturating_add(METADATA_ROOM)
    }
}
