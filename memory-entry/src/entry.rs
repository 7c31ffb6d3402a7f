//! An entry, and what a create, an update and a filter give: each built from [`Fields`].

use memory_id::MemoryId;
use memory_ranker::RankItem;

use crate::{FieldName, FieldValue, Fields, InvalidFieldError, Limits, StoreError, Timestamp, Ttl};

/// Keys a hand-written file holds that the model does not know (unknown frontmatter keys), kept as read so that an
/// update does not drop them. Values are JSON values, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra(serde_json::Map<String, serde_json::Value>);

impl Extra {
    /// Unknown keys, in the order given.
    pub fn new(map: serde_json::Map<String, serde_json::Value>) -> Extra {
        Extra(map)
    }

    /// Whether there are no unknown keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The unknown keys, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The unknown keys with their values, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &serde_json::Value)> {
        self.0.iter().map(|(key, value)| (key.as_str(), value))
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEntry {
    /// The logical ID (on disk, the path decides it; a frontmatter `id:` is ignored).
    pub id: MemoryId,
    /// Starts at 1, increases by 1 on every update, never above [`MAX_VERSION`](crate::MAX_VERSION).
    pub version: u64,
    /// When the entry was created.
    pub created_at: Timestamp,
    /// When the entry was last updated (the TTL counts from here).
    pub updated_at: Timestamp,
    /// The text, byte for byte as given (`value` in the ALP 80 model).
    pub content: String,
    /// Kind, type, key, importance, source, scope and TTL.
    pub fields: Fields,
    /// Unknown keys of a hand-written file, kept on update.
    pub extra: Extra,
}

impl MemoryEntry {
    /// `updated_at + ttl`, when a TTL is set (and the sum is representable).
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.fields.ttl.and_then(|ttl| self.updated_at.checked_add(ttl))
    }

    /// Whether the entry has expired at `now` (expiry is the first instant at which it is no longer visible).
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at().is_some_and(|at| now >= at)
    }
}

/// A well-formed value over a configured limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldLimitError {
    /// The content has more characters than `max_value_chars`.
    #[error("content is more than {limit} characters")]
    Content {
        /// `max_value_chars`.
        limit: u64,
        /// The content's length in characters (or `limit + 1` when it was read only that far).
        count: u64,
    },
    /// The TTL is longer than `max_ttl`.
    #[error("ttl {ttl} is over the limit of {max}")]
    Ttl {
        /// The TTL, as written.
        ttl: Ttl,
        /// `max_ttl`, as configured.
        max: Ttl,
    },
}

impl FieldLimitError {
    /// `content` or `ttl`.
    pub fn field(&self) -> &'static str {
        match self {
            FieldLimitError::Content { .. } => "content",
            FieldLimitError::Ttl { .. } => "ttl",
        }
    }

    /// The limit, in characters or seconds.
    pub fn limit(&self) -> u64 {
        match self {
            FieldLimitError::Content { limit, .. } => *limit,
            FieldLimitError::Ttl { max, .. } => max.as_secs(),
        }
    }

    /// The value's size, in characters or seconds.
    pub fn count(&self) -> u64 {
        match self {
            FieldLimitError::Content { count, .. } => *count,
            FieldLimitError::Ttl { ttl, .. } => ttl.as_secs(),
        }
    }
}

/// Why a create or an update was refused before any store call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryFieldError {
    /// A malformed field.
    #[error(transparent)]
    Invalid(#[from] InvalidFieldError),
    /// A well-formed field over a limit.
    #[error(transparent)]
    Limit(#[from] FieldLimitError),
}

/// Malformed first (U+0000 in the content, a TTL ending after the year 9999), then limits (content length, TTL).
fn validate(
    content: Option<&str>,
    ttl: Option<Ttl>,
    ttl_from: Timestamp,
    limits: &Limits,
) -> Result<(), EntryFieldError> {
    if let Some(content) = content
        && let Some(at) = content.find('\0')
    {
        return Err(InvalidFieldError::new(
            "content",
            format!("it holds U+0000 at character {}; remove it", content[..at].chars().count() + 1),
        )
        .into());
    }
    if let Some(ttl) = ttl
        && ttl_from.checked_add(ttl).is_none()
    {
        return Err(InvalidFieldError::new(
            "ttl",
            format!("`{ttl}` would expire after the year 9999; choose a shorter ttl"),
        )
        .into());
    }
    if let Some(content) = content {
        let count = content.chars().count() as u64;
        if count > limits.max_value_chars {
            return Err(FieldLimitError::Content { limit: limits.max_value_chars, count }.into());
        }
    }
    if let Some(ttl) = ttl
        && ttl.as_secs() > limits.max_ttl.as_secs()
    {
        return Err(FieldLimitError::Ttl { ttl, max: limits.max_ttl }.into());
    }
    Ok(())
}

/// What a create asks to store. The store sets `version` to 1 and the timestamps to `now` unless given.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    /// The ID to create; a create never overwrites.
    pub id: MemoryId,
    /// The text.
    pub content: String,
    /// The fields.
    pub fields: Fields,
    /// Kept from an import; `now` when `None`.
    pub created_at: Option<Timestamp>,
    /// Kept from an import (so a TTL does not restart); `now` when `None`.
    pub updated_at: Option<Timestamp>,
}

impl NewEntry {
    /// A new entry with the given content and every field at its default.
    pub fn new(id: MemoryId, content: impl Into<String>) -> NewEntry {
        NewEntry {
            id,
            content: content.into(),
            fields: Fields::default(),
            created_at: None,
            updated_at: None,
        }
    }

    /// The same entry with these fields.
    #[must_use]
    pub fn with_fields(mut self, fields: Fields) -> NewEntry {
        self.fields = fields;
        self
    }

    /// Checks the content and the value and TTL limits, for a create at `now`. Malformed input is reported before
    /// limits. (Keys, sources and scopes are valid by construction.)
    ///
    /// # Errors
    ///
    /// [`EntryFieldError::Invalid`] for content holding U+0000 or a TTL that would end after the year 9999;
    /// [`EntryFieldError::Limit`] for content over `max_value_chars` characters or a TTL over `max_ttl`.
    pub fn validate(&self, limits: &Limits, now: Timestamp) -> Result<(), EntryFieldError> {
        let ttl_from = self.updated_at.or(self.created_at).unwrap_or(now);
        validate(Some(&self.content), self.fields.ttl, ttl_from, limits)
    }

    /// The entry this create stores at `now`, with version 1, timestamps in whole milliseconds (the precision every
    /// store keeps).
    pub fn into_entry(self, now: Timestamp) -> MemoryEntry {
        // An import may carry only one of the two; the other follows it, so a TTL never restarts.
        let created_at = self.created_at.or(self.updated_at).unwrap_or(now).truncated_to_millis();
        let updated_at = self.updated_at.or(self.created_at).unwrap_or(now).truncated_to_millis();
        MemoryEntry {
            id: self.id,
            version: 1,
            created_at,
            updated_at,
            content: self.content,
            fields: self.fields,
            extra: Extra::default(),
        }
    }
}

/// What an update changes: new content (or none), fields to set and fields to clear. Everything else is kept.
///
/// ```
/// use memory_entry::{FieldName, FieldValue, Importance, Patch};
/// let patch = Patch::new(None, vec![FieldValue::Importance(Importance::High)], vec![FieldName::Ttl]).unwrap();
/// assert!(!patch.touches_unique_key());
/// let both = Patch::new(None, vec![FieldValue::Importance(Importance::High)], vec![FieldName::Importance]);
/// assert!(both.is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    content: Option<String>,
    set: Vec<FieldValue>,
    clear: Vec<FieldName>,
}

impl Patch {
    /// A patch; a field may be named at most once, either set or cleared.
    ///
    /// # Errors
    ///
    /// [`InvalidFieldError`] naming a field that is set twice, cleared twice, or both set and cleared.
    pub fn new(
        content: Option<String>,
        set: Vec<FieldValue>,
        clear: Vec<FieldName>,
    ) -> Result<Patch, InvalidFieldError> {
        let mut named: Vec<FieldName> =
            set.iter().map(FieldValue::name).chain(clear.iter().copied()).collect();
        named.sort();
        if let Some(twice) = named.windows(2).find(|pair| pair[0] == pair[1]).map(|pair| pair[0]) {
            let message = if set.iter().any(|v| v.name() == twice) && clear.contains(&twice) {
                format!("`{twice}` is both set and cleared")
            } else {
                format!("`{twice}` is given twice")
            };
            return Err(InvalidFieldError::new(twice.as_str(), message));
        }
        Ok(Patch { content, set, clear })
    }

    /// A patch that only replaces the content.
    pub fn content_only(content: impl Into<String>) -> Patch {
        Patch { content: Some(content.into()), set: Vec::new(), clear: Vec::new() }
    }

    /// The new content, if any.
    pub fn content(&self) -> Option<&str> {
        self.content.as_deref()
    }

    /// Whether the patch clears `name`.
    pub(crate) fn clears(&self, name: FieldName) -> bool {
        self.clear.contains(&name)
    }

    /// Whether the patch sets or clears `name`.
    pub(crate) fn touches(&self, name: FieldName) -> bool {
        self.clears(name) || self.set.iter().any(|value| value.name() == name)
    }

    /// Whether the patch may change the (type, key, scope) triple that must be unique in a scope root.
    pub fn touches_unique_key(&self) -> bool {
        [FieldName::Type, FieldName::Key, FieldName::Scope].into_iter().any(|name| self.touches(name))
    }

    /// Checks the content and TTL it sets, like [`NewEntry::validate`], for an update at `now`.
    ///
    /// # Errors
    ///
    /// As [`NewEntry::validate`].
    pub fn validate(&self, limits: &Limits, now: Timestamp) -> Result<(), EntryFieldError> {
        let ttl = self.set.iter().find_map(|value| match value {
            FieldValue::Ttl(ttl) => Some(*ttl),
            _ => None,
        });
        validate(self.content.as_deref(), ttl, now, limits)
    }

    /// Applies the patch: changes the given fields, moves the entry to its next version
    /// ([`next_version`](crate::next_version), even when nothing else changes) and sets `updated_at` to `now`.
    /// Unknown keys are kept.
    ///
    /// # Errors
    ///
    /// [`StoreError::VersionLimit`] when the entry is already at [`MAX_VERSION`](crate::MAX_VERSION); the entry is
    /// then unchanged.
    pub fn apply(&self, entry: &mut MemoryEntry, now: Timestamp) -> Result<(), StoreError> {
        let version = crate::next_version(&entry.id, Some(entry.version))?;
        if let Some(content) = &self.content {
            entry.content.clone_from(content);
        }
        for value in &self.set {
            entry.fields.set(value.clone());
        }
        for name in &self.clear {
            entry.fields.clear(*name);
        }
        entry.version = version;
        entry.updated_at = now.truncated_to_millis();
        Ok(())
    }
}

/// Exact-match filters: an entry passes when every value given is its field's value.
///
/// ```
/// use memory_entry::{FieldValue, Fields, Filter, Kind};
/// let filter = Filter::new(vec![FieldValue::Kind(Kind::Fact)]);
/// assert!(!filter.matches(&Fields::default()));
/// assert!(Filter::default().matches(&Fields::default()));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter(Vec<FieldValue>);

impl Filter {
    /// A filter on these values.
    pub fn new(values: Vec<FieldValue>) -> Filter {
        Filter(values)
    }

    /// The values every entry must hold.
    pub fn values(&self) -> &[FieldValue] {
        &self.0
    }

    /// Whether `fields` holds every value of the filter.
    pub fn matches(&self, fields: &Fields) -> bool {
        self.0.iter().all(|value| fields.holds(value))
    }
}

/// An entry ranks by its ID, content and `updated_at` (as nanoseconds since the Unix epoch), so
/// `Ranked<&MemoryEntry>` orders entries exactly as the service does.
impl RankItem for MemoryEntry {
    fn id(&self) -> &str {
        self.id.as_str()
    }

    fn content(&self) -> &str {
        &self.content
    }

    fn updated_at(&self) -> i128 {
        self.updated_at.unix_nanos()
    }
}

/// The fields an `.alp` import carries (ALP 80): what it compares and what it sets or clears (timestamps and
/// `kind` are not among them).
const IMPORT_FIELDS: [FieldName; 6] = [
    FieldName::Type,
    FieldName::Key,
    FieldName::Scope,
    FieldName::Importance,
    FieldName::Source,
    FieldName::Ttl,
];

/// The update an import makes to an existing entry: the new content and every ALP 80 field set or cleared as the
/// imported entry has it.
impl From<&NewEntry> for Patch {
    fn from(new: &NewEntry) -> Patch {
        let set: Vec<FieldValue> = IMPORT_FIELDS.iter().filter_map(|name| new.fields.get(*name)).collect();
        let clear: Vec<FieldName> =
            IMPORT_FIELDS.into_iter().filter(|name| new.fields.get(*name).is_none()).collect();
        // Each name appears once, set or cleared.
        Patch::new(Some(new.content.clone()), set, clear)
            .unwrap_or_else(|_| Patch::content_only(new.content.clone()))
    }
}
