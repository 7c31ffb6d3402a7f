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

impl Limits {
    /// The key of each limit, as `config.yaml` and the PostgreSQL settings row name it, in this order:
    /// `max_entries_per_scope_root`, `max_value_chars`, `max_ttl`, `max_file_bytes`, `keep_versions`. Every store
    /// reads its settings through [`Limits::set`], so a key added here reaches every source.
    pub const KEYS: [&'static str; 5] = [
        "limits.maxEntriesPerScopeRoot",
        "limits.maxValueChars",
        "limits.maxTtl",
        "limits.maxFileBytes",
        "history.keepVersions",
    ];

    /// Sets the limit `key` names (one of [`Limits::KEYS`]) to `value`: an integer limit takes a whole number from 1
    /// to 2^53 − 1, `limits.maxTtl` a duration such as `365d`. It does not check the limits against each other: that
    /// is [`Limits::check`].
    ///
    /// ```
    /// use memory_entry::{LimitError, LimitValue, Limits};
    /// let mut limits = Limits::default();
    /// limits.set("limits.maxValueChars", LimitValue::Integer(Some(4000))).unwrap();
    /// assert_eq!(limits.max_value_chars, 4000);
    /// let refused = limits.set("history.keepVersions", LimitValue::Integer(Some(0))).unwrap_err();
    /// assert_eq!(refused.message("0"), "0 is not a positive integer of at most 9007199254740991");
    /// assert_eq!(limits.set("limits.maxValueChar", LimitValue::Text("1")), Err(LimitError::UnknownKey));
    /// ```
    ///
    /// # Errors
    ///
    /// [`LimitError`]: an unknown key, or a value the limit does not take.
    pub fn set(&mut self, key: &str, value: LimitValue<'_>) -> Result<(), LimitError> {
        let count = || match value {
            LimitValue::Integer(Some(n)) if (1..=MAX_SAFE_INTEGER).contains(&n) => Ok(n),
            _ => Err(LimitError::NotPositive),
        };
        match key {
            "limits.maxEntriesPerScopeRoot" => self.max_entries_per_scope_root = count()?,
            "limits.maxValueChars" => self.max_value_chars = count()?,
            "limits.maxTtl" => {
                self.max_ttl = match value {
                    LimitValue::Text(text) => {
                        Ttl::parse(text).map_err(|e| LimitError::InvalidTtl(e.message().to_owned()))?
                    }
                    LimitValue::Integer(_) => return Err(LimitError::NotDuration),
                }
            }
            "limits.maxFileBytes" => self.max_file_bytes = count()?,
            "history.keepVersions" => self.keep_versions = count()?,
            _ => return Err(LimitError::UnknownKey),
        }
        Ok(())
    }

    /// Checks limits as a whole, however they were built: every integer limit from 1 to 2^53 − 1, and
    /// `max_file_bytes` at least [`Limits::min_file_bytes`].
    ///
    /// # Errors
    ///
    /// The key of the first limit that fails (one of [`Limits::KEYS`]) and the message saying why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        for (key, value) in [
            (Limits::KEYS[0], self.max_entries_per_scope_root),
            (Limits::KEYS[1], self.max_value_chars),
            (Limits::KEYS[3], self.max_file_bytes),
            (Limits::KEYS[4], self.keep_versions),
        ] {
            if !(1..=MAX_SAFE_INTEGER).contains(&value) {
                return Err((key, LimitError::NotPositive.message(&value.to_string())));
            }
        }
        let min = self.min_file_bytes();
        if self.max_file_bytes < min {
            let error = LimitError::FileBytesBelowMinimum { max_file_bytes: self.max_file_bytes, min };
            return Err((Limits::KEYS[3], error.to_string()));
        }
        Ok(())
    }
}

/// A value read for one of [`Limits::KEYS`], as its source holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitValue<'a> {
    /// A number or any other non-text value: `Some` when it is a non-negative integer (a YAML `4000`, a PostgreSQL
    /// `bigint` of at least 0), `None` otherwise (`-1`, `1.5`, a list).
    Integer(Option<u64>),
    /// Text (a YAML string, a PostgreSQL `text` column).
    Text(&'a str),
}

/// Why [`Limits::set`] or [`Limits::check`] refuses a value. The two "is not" reasons leave out the value: each
/// source quotes what it read its own way, through [`LimitError::message`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The key is not one of [`Limits::KEYS`].
    #[error("unknown setting")]
    UnknownKey,
    /// An integer limit holds something other than a whole number from 1 to 2^53 − 1.
    #[error("is not a positive integer of at most {MAX_SAFE_INTEGER}")]
    NotPositive,
    /// `limits.maxTtl` holds something other than text.
    #[error("is not a duration such as `10s` or `365d`")]
    NotDuration,
    /// `limits.maxTtl` holds text that is not a duration; the message says why.
    #[error("{0}")]
    InvalidTtl(String),
    /// `limits.maxFileBytes` is below [`Limits::min_file_bytes`].
    #[error(
        "{max_file_bytes} is below 4 × maxValueChars + 65536 = {min}: a value at the limit would not fit"
    )]
    FileBytesBelowMinimum {
        /// The value set.
        max_file_bytes: u64,
        /// The smallest it may be.
        min: u64,
    },
}

impl LimitError {
    /// The message, with `read` (the value as its source shows it) before the reasons that leave it out.
    pub fn message(&self, read: &str) -> String {
        match self {
            LimitError::NotPositive | LimitError::NotDuration => format!("{read} {self}"),
            _ => self.to_string(),
        }
    }
}
