//! The entry model: what a memory holds, and the typed fields of the ALP 80 memory model.

use std::fmt;
use std::str::FromStr;

use memory_id::MemoryId;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::{Limits, StoreError};

macro_rules! keyword_enum {
    (
        $(#[$meta:meta])*
        $name:ident, $what:literal { $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The keyword as written in files and on the command line.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The value whose keyword is exactly `text` (lowercase, no surrounding space).
            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = InvalidFieldError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::parse(s).ok_or_else(|| InvalidFieldError::new(
                    $what,
                    format!(
                        "`{}` is not one of {}",
                        s.escape_debug(),
                        [$($text),+].join(", ")
                    ),
                ))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

keyword_enum! {
    /// The seed's five kinds. A file whose kind is missing or unknown reads as [`Kind::Reference`].
    Kind, "kind" {
        /// Something true.
        Fact => "fact",
        /// Something decided.
        Decision => "decision",
        /// Something to look up (the default).
        Reference => "reference",
        /// A record of what happened.
        Log => "log",
        /// Work in progress.
        Draft => "draft",
    }
}

#[expect(
    clippy::derivable_impls,
    reason = "keyword_enum! derives the same traits for every keyword enum; only some have a default"
)]
impl Default for Kind {
    fn default() -> Self {
        Kind::Reference
    }
}

keyword_enum! {
    /// The ten memory types of the ALP 80 memory model. Independent of [`Kind`].
    MemoryType, "type" {
        /// Project-wide knowledge.
        Project => "project",
        /// Architectural decisions and patterns.
        Architecture => "architecture",
        /// Feature-specific knowledge.
        Feature => "feature",
        /// Task-specific notes.
        Task => "task",
        /// Why something was decided.
        Decision => "decision",
        /// Known bugs, workarounds, gotchas.
        Error => "error",
        /// Agent-specific preferences or state.
        Agent => "agent",
        /// General technical knowledge.
        Knowledge => "knowledge",
        /// Key takeaways from agent interactions.
        Conversation => "conversation",
        /// Contextual information for tasks.
        Context => "context",
    }
}

keyword_enum! {
    /// How much an entry matters; `critical` entries reach every task's context.
    Importance, "importance" {
        /// Always loaded, whatever the scope.
        Critical => "critical",
        /// Important.
        High => "high",
        /// The default.
        Medium => "medium",
        /// Least important.
        Low => "low",
    }
}

#[expect(
    clippy::derivable_impls,
    reason = "keyword_enum! derives the same traits for every keyword enum; only some have a default"
)]
impl Default for Importance {
    fn default() -> Self {
        Importance::Medium
    }
}

/// A field value that is malformed (an unknown kind, a TTL of `0s`, a key with a newline, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {message}")]
pub struct InvalidFieldError {
    field: &'static str,
    message: String,
}

impl InvalidFieldError {
    /// A new error for `field` (`kind`, `type`, `importance`, `ttl`, `key`, `source`, `scope`, `createdAt`, …).
    pub fn new(field: &'static str, message: impl Into<String>) -> InvalidFieldError {
        InvalidFieldError { field, message: message.into() }
    }

    /// The field in question.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// What is wrong with it, for people.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The largest integer JavaScript runtimes read exactly (2^53 − 1). Versions, TTLs in seconds and every other
/// integer this project writes into JSON stay at most this.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The largest version an entry may hold (2^53 − 1): an update of an entry at this version is refused, never
/// wrapped, and a file claiming a larger one is refused when read.
pub const MAX_VERSION: u64 = MAX_SAFE_INTEGER;

/// The unit of a [`Ttl`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TtlUnit {
    /// `s`
    Seconds,
    /// `m`
    Minutes,
    /// `h`
    Hours,
    /// `d`
    Days,
    /// `w`
    Weeks,
}

impl TtlUnit {
    fn seconds(self) -> u64 {
        match self {
            TtlUnit::Seconds => 1,
            TtlUnit::Minutes => 60,
            TtlUnit::Hours => 3_600,
            TtlUnit::Days => 86_400,
            TtlUnit::Weeks => 604_800,
        }
    }

    fn suffix(self) -> char {
        match self {
            TtlUnit::Seconds => 's',
            TtlUnit::Minutes => 'm',
            TtlUnit::Hours => 'h',
            TtlUnit::Days => 'd',
            TtlUnit::Weeks => 'w',
        }
    }
}

/// A time to live: a positive integer without leading zeros and one of `s` `m` `h` `d` `w` (`90d`).
///
/// ```
/// use memory_store::Ttl;
/// assert_eq!("90d".parse::<Ttl>().unwrap().as_secs(), 90 * 86_400);
/// assert!("0s".parse::<Ttl>().is_err());
/// assert!("soon".parse::<Ttl>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ttl {
    amount: u64,
    unit: TtlUnit,
}

impl Ttl {
    /// The ALP 80 default for the longest TTL: `365d`.
    pub const DEFAULT_MAX: Ttl = Ttl { amount: 365, unit: TtlUnit::Days };

    /// Parses a TTL.
    ///
    /// # Errors
    ///
    /// [`InvalidFieldError`] (field `ttl`) for anything but `<positive integer><s|m|h|d|w>`, or a value whose
    /// length in seconds exceeds [`MAX_SAFE_INTEGER`].
    pub fn parse(text: &str) -> Result<Ttl, InvalidFieldError> {
        let bad = || {
            InvalidFieldError::new(
                "ttl",
                format!(
                    "`{}` is not a duration (a positive integer and one of s, m, h, d, w, e.g. `90d`)",
                    text.escape_debug()
                ),
            )
        };
        let unit = match text.chars().last() {
            Some('s') => TtlUnit::Seconds,
            Some('m') => TtlUnit::Minutes,
            Some('h') => TtlUnit::Hours,
            Some('d') => TtlUnit::Days,
            Some('w') => TtlUnit::Weeks,
            _ => return Err(bad()),
        };
        let digits = &text[..text.len() - 1];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
            return Err(bad());
        }
        let amount: u64 = digits.parse().map_err(|_| bad())?;
        Ttl::new(amount, unit).ok_or_else(bad)
    }

    /// A TTL of `amount` units. `None` when `amount` is zero or the length exceeds [`MAX_SAFE_INTEGER`] seconds
    /// (so that every TTL, in seconds, is an integer JavaScript runtimes read exactly).
    pub fn new(amount: u64, unit: TtlUnit) -> Option<Ttl> {
        let secs = amount.checked_mul(unit.seconds())?;
        (amount > 0 && secs <= MAX_SAFE_INTEGER).then_some(Ttl { amount, unit })
    }

    /// The length in seconds.
    pub fn as_secs(self) -> u64 {
        self.amount.saturating_mul(self.unit.seconds())
    }

    /// The number as written.
    pub fn amount(self) -> u64 {
        self.amount
    }

    /// The unit as written.
    pub fn unit(self) -> TtlUnit {
        self.unit
    }
}

impl fmt::Display for Ttl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.amount, self.unit.suffix())
    }
}

impl FromStr for Ttl {
    type Err = InvalidFieldError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ttl::parse(s)
    }
}

impl serde::Serialize for Ttl {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// An instant. Any RFC 3339 timestamp is read and compared as an instant; it is always written in UTC with
/// millisecond precision (`2026-11-29T22:33:13.123Z`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(OffsetDateTime);

const WRITTEN_FORMAT: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

impl Timestamp {
    /// The current time, from the system clock. The pure crates never call this; the service does, once per call.
    pub fn now() -> Timestamp {
        Timestamp(OffsetDateTime::now_utc())
    }

    /// Parses any RFC 3339 timestamp (any offset, any sub-second precision).
    ///
    /// # Errors
    ///
    /// [`InvalidFieldError`] (field `timestamp`) when `text` is not RFC 3339 or lies outside years 1–9999.
    pub fn parse(text: &str) -> Result<Timestamp, InvalidFieldError> {
        let bad = || {
            InvalidFieldError::new(
                "timestamp",
                format!("`{}` is not an RFC 3339 timestamp", text.escape_debug()),
            )
        };
        let parsed = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| bad())?;
        let utc = parsed.to_offset(time::UtcOffset::UTC);
        if !(1..=9999).contains(&utc.year()) {
            return Err(bad());
        }
        Ok(Timestamp(utc))
    }

    /// The instant `millis` milliseconds after the Unix epoch, if representable.
    pub fn from_unix_millis(millis: i64) -> Option<Timestamp> {
        let nanos = i128::from(millis) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos).ok().map(Timestamp)
    }

    /// The instant `nanos` nanoseconds after the Unix epoch, clamped to the years 1–9999 that timestamps are written
    /// in (a file's mtime can lie outside them; it must still print as a four-digit year).
    pub fn from_unix_nanos_clamped(nanos: i128) -> Timestamp {
        const FIRST: i128 = -62_135_596_800_000_000_000; // 0001-01-01T00:00:00Z
        const LAST: i128 = 253_402_300_799_999_000_000; // 9999-12-31T23:59:59.999Z
        let nanos = nanos.clamp(FIRST, LAST);
        OffsetDateTime::from_unix_timestamp_nanos(nanos)
            .map_or(Timestamp(OffsetDateTime::UNIX_EPOCH), Timestamp)
    }

    /// Nanoseconds since the Unix epoch (for ordering by instant).
    pub fn unix_nanos(self) -> i128 {
        self.0.unix_timestamp_nanos()
    }

    /// Milliseconds since the Unix epoch, truncated.
    pub fn unix_millis(self) -> i64 {
        let millis = self.0.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(millis).unwrap_or(i64::MAX)
    }

    /// This instant plus `ttl`; `None` when the result is past year 9999.
    pub fn checked_add(self, ttl: Ttl) -> Option<Timestamp> {
        let secs = i64::try_from(ttl.as_secs()).ok()?;
        let later = self.0.checked_add(time::Duration::seconds(secs))?;
        (later.year() <= 9999).then_some(Timestamp(later))
    }

    /// This instant truncated to whole milliseconds, as it will read back after being written.
    pub fn truncated_to_millis(self) -> Timestamp {
        let nanos = self.0.unix_timestamp_nanos();
        let truncated = nanos - nanos.rem_euclid(1_000_000);
        OffsetDateTime::from_unix_timestamp_nanos(truncated).map(Timestamp).unwrap_or(self)
    }

    /// The `time` value, in UTC.
    pub fn as_offset_date_time(self) -> OffsetDateTime {
        self.0
    }
}

impl From<OffsetDateTime> for Timestamp {
    fn from(value: OffsetDateTime) -> Self {
        Timestamp(value.to_offset(time::UtcOffset::UTC))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.format(WRITTEN_FORMAT) {
            Ok(text) => f.write_str(&text),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

impl FromStr for Timestamp {
    type Err = InvalidFieldError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Timestamp::parse(s)
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Frontmatter keys this crate does not know, kept as read so that an update does not drop them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra(pub(crate) serde_json::Map<String, serde_json::Value>);

impl Extra {
    /// Whether there are no unknown keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The unknown keys, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEntry {
    /// The logical ID (on disk, the path decides it; a frontmatter `id:` is ignored).
    pub id: MemoryId,
    /// The seed's kind; `reference` when missing or unknown.
    pub kind: Kind,
    /// Starts at 1, increases by 1 on every update.
    pub version: u64,
    /// When the entry was created.
    pub created_at: Timestamp,
    /// When the entry was last updated (the TTL counts from here).
    pub updated_at: Timestamp,
    /// The text, byte for byte as given (`value` in the ALP 80 model).
    pub content: String,
    /// The ALP 80 type, when set.
    pub memory_type: Option<MemoryType>,
    /// The lookup key, unique within (type, scope) inside one scope root.
    pub key: Option<String>,
    /// `medium` unless set.
    pub importance: Importance,
    /// What created the entry.
    pub source: Option<String>,
    /// The object the entry is scoped to (a feature or task reference); `None` (or `project`) is unscoped.
    pub scope: Option<String>,
    /// Time to live, counted from `updated_at`.
    pub ttl: Option<Ttl>,
    /// Unknown frontmatter keys, kept on update.
    pub extra: Extra,
}

impl MemoryEntry {
    /// `updated_at + ttl`, when a TTL is set (and the sum is representable).
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.ttl.and_then(|ttl| self.updated_at.checked_add(ttl))
    }

    /// Whether the entry has expired at `now` (expiry is the first instant at which it is no longer visible).
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at().is_some_and(|at| now >= at)
    }

    /// The (type, key, scope) triple that must be unique within a scope root; `None` when the entry has no key.
    pub fn unique_key(&self) -> Option<(Option<MemoryType>, &str, Option<&str>)> {
        self.key.as_deref().map(|key| (self.memory_type, key, self.scope.as_deref()))
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

/// Why entry fields were refused before any store call.
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

/// The longest accepted key, source or scope reference, in bytes.
pub const MAX_FIELD_BYTES: usize = 200;

/// Checks a free-text field (`key`, `source`): non-empty, one line (no control characters), at most
/// [`MAX_FIELD_BYTES`] bytes.
///
/// # Errors
///
/// [`InvalidFieldError`] naming the field.
pub fn validate_text_field(field: &'static str, value: &str) -> Result<(), InvalidFieldError> {
    if value.is_empty() {
        return Err(InvalidFieldError::new(field, "it is empty"));
    }
    if value.chars().any(char::is_control) {
        return Err(InvalidFieldError::new(
            field,
            format!("`{}` holds a control character", value.escape_debug()),
        ));
    }
    if value.len() > MAX_FIELD_BYTES {
        return Err(InvalidFieldError::new(field, format!("it is longer than {MAX_FIELD_BYTES} bytes")));
    }
    Ok(())
}

/// Checks a scope reference (`feat-dashboard`, `task-db-setup`): a text field without whitespace, since the ALP 80
/// file writes it bare after `->`.
///
/// # Errors
///
/// [`InvalidFieldError`] (field `scope`).
pub fn validate_scope_ref(value: &str) -> Result<(), InvalidFieldError> {
    validate_text_field("scope", value)?;
    if value.chars().any(char::is_whitespace) {
        return Err(InvalidFieldError::new("scope", format!("`{}` holds whitespace", value.escape_debug())));
    }
    Ok(())
}

/// The fields a create or an update gives, as far as validation cares.
struct GivenFields<'a> {
    key: Option<&'a str>,
    source: Option<&'a str>,
    scope: Option<&'a str>,
    content: Option<&'a str>,
    ttl: Option<Ttl>,
    /// The instant the TTL will count from.
    ttl_from: Timestamp,
}

impl GivenFields<'_> {
    /// Malformed fields first, then limits.
    fn validate(&self, limits: &Limits) -> Result<(), EntryFieldError> {
        if let Some(content) = self.content {
            check_no_nul(content)?;
        }
        if let Some(ttl) = self.ttl
            && self.ttl_from.checked_add(ttl).is_none()
        {
            return Err(InvalidFieldError::new(
                "ttl",
                format!("`{ttl}` would expire after the year 9999; choose a shorter ttl"),
            )
            .into());
        }
        if let Some(key) = self.key {
            validate_text_field("key", key)?;
        }
        if let Some(source) = self.source {
            validate_text_field("source", source)?;
        }
        if let Some(scope) = self.scope {
            validate_scope_ref(scope)?;
        }
        if let Some(content) = self.content {
            check_content(content, limits)?;
        }
        if let Some(ttl) = self.ttl {
            check_ttl(ttl, limits)?;
        }
        Ok(())
    }
}

/// Content may hold any text but U+0000, which no store can keep alike (DESIGN §4).
fn check_no_nul(content: &str) -> Result<(), InvalidFieldError> {
    match content.find('\0') {
        Some(at) => Err(InvalidFieldError::new(
            "content",
            format!("it holds U+0000 at character {}; remove it", content[..at].chars().count() + 1),
        )),
        None => Ok(()),
    }
}

fn check_content(content: &str, limits: &Limits) -> Result<(), FieldLimitError> {
    let count = content.chars().count() as u64;
    if count > limits.max_value_chars {
        return Err(FieldLimitError::Content { limit: limits.max_value_chars, count });
    }
    Ok(())
}

fn check_ttl(ttl: Ttl, limits: &Limits) -> Result<(), FieldLimitError> {
    if ttl.as_secs() > limits.max_ttl.as_secs() {
        return Err(FieldLimitError::Ttl { ttl, max: limits.max_ttl });
    }
    Ok(())
}

/// What a create asks to store. The store sets `version` to 1 and the timestamps to `now` unless given.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    /// The ID to create; a create never overwrites.
    pub id: MemoryId,
    /// Defaults to `reference`.
    pub kind: Kind,
    /// The text.
    pub content: String,
    /// The ALP 80 type.
    pub memory_type: Option<MemoryType>,
    /// The lookup key.
    pub key: Option<String>,
    /// Defaults to `medium`.
    pub importance: Importance,
    /// What creates it.
    pub source: Option<String>,
    /// The feature or task it is scoped to.
    pub scope: Option<String>,
    /// Time to live.
    pub ttl: Option<Ttl>,
    /// Kept from an import; `now` when `None`.
    pub created_at: Option<Timestamp>,
    /// Kept from an import (so a TTL does not restart); `now` when `None`.
    pub updated_at: Option<Timestamp>,
}

impl NewEntry {
    /// A new entry with the given content and every other field at its default.
    pub fn new(id: MemoryId, content: impl Into<String>) -> NewEntry {
        NewEntry {
            id,
            kind: Kind::default(),
            content: content.into(),
            memory_type: None,
            key: None,
            importance: Importance::default(),
            source: None,
            scope: None,
            ttl: None,
            created_at: None,
            updated_at: None,
        }
    }

    /// Checks the free-text fields, the content and the value and TTL limits, for a create at `now`. Malformed
    /// fields are reported before limits.
    ///
    /// # Errors
    ///
    /// [`EntryFieldError::Invalid`] for a malformed key, source or scope, content holding U+0000, or a TTL that
    /// would end after the year 9999; [`EntryFieldError::Limit`] for content over `max_value_chars` characters or a
    /// TTL over `max_ttl`.
    pub fn validate(&self, limits: &Limits, now: Timestamp) -> Result<(), EntryFieldError> {
        let fields = GivenFields {
            key: self.key.as_deref(),
            source: self.source.as_deref(),
            scope: self.scope.as_deref(),
            content: Some(&self.content),
            ttl: self.ttl,
            ttl_from: self.updated_at.or(self.created_at).unwrap_or(now),
        };
        fields.validate(limits)
    }

    /// The entry this create stores at `now`, with version 1.
    pub fn into_entry(self, now: Timestamp) -> MemoryEntry {
        // An import may carry only one of the two; the other follows it, so a TTL never restarts.
        let created_at = self.created_at.or(self.updated_at).unwrap_or(now);
        let updated_at = self.updated_at.or(self.created_at).unwrap_or(now);
        MemoryEntry {
            id: self.id,
            kind: self.kind,
            version: 1,
            created_at,
            updated_at,
            content: self.content,
            memory_type: self.memory_type,
            key: self.key,
            importance: self.importance,
            source: self.source,
            scope: self.scope,
            ttl: self.ttl,
            extra: Extra::default(),
        }
    }
}

/// The fields an update changes; `None` keeps a field. For optional fields, `Some(None)` clears it.
/// Clearing `kind` or `importance` is setting them to their defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryPatch {
    /// New kind.
    pub kind: Option<Kind>,
    /// New content.
    pub content: Option<String>,
    /// New type, or clear it.
    pub memory_type: Option<Option<MemoryType>>,
    /// New key, or clear it.
    pub key: Option<Option<String>>,
    /// New importance.
    pub importance: Option<Importance>,
    /// New source, or clear it.
    pub source: Option<Option<String>>,
    /// New scope reference, or clear it.
    pub scope: Option<Option<String>>,
    /// New TTL, or clear it.
    pub ttl: Option<Option<Ttl>>,
}

impl EntryPatch {
    /// Checks the fields it sets, like [`NewEntry::validate`], for an update at `now`.
    ///
    /// # Errors
    ///
    /// As [`NewEntry::validate`].
    pub fn validate(&self, limits: &Limits, now: Timestamp) -> Result<(), EntryFieldError> {
        let fields = GivenFields {
            key: self.key.as_ref().and_then(Option::as_deref),
            source: self.source.as_ref().and_then(Option::as_deref),
            scope: self.scope.as_ref().and_then(Option::as_deref),
            content: self.content.as_deref(),
            ttl: self.ttl.flatten(),
            ttl_from: now,
        };
        fields.validate(limits)
    }

    /// Applies the patch: changes the given fields, bumps the version by one (even when nothing else changes) and
    /// sets `updated_at` to `now`. Unknown frontmatter keys are kept.
    ///
    /// # Errors
    ///
    /// [`StoreError::VersionLimit`] when the entry is already at [`MAX_VERSION`]; the entry is then unchanged.
    pub fn apply(&self, entry: &mut MemoryEntry, now: Timestamp) -> Result<(), StoreError> {
        if entry.version >= MAX_VERSION {
            return Err(StoreError::VersionLimit { id: entry.id.clone(), limit: MAX_VERSION });
        }
        if let Some(kind) = self.kind {
            entry.kind = kind;
        }
        if let Some(content) = &self.content {
            entry.content.clone_from(content);
        }
        if let Some(memory_type) = self.memory_type {
            entry.memory_type = memory_type;
        }
        if let Some(key) = &self.key {
            entry.key.clone_from(key);
        }
        if let Some(importance) = self.importance {
            entry.importance = importance;
        }
        if let Some(source) = &self.source {
            entry.source.clone_from(source);
        }
        if let Some(scope) = &self.scope {
            entry.scope.clone_from(scope);
        }
        if let Some(ttl) = self.ttl {
            entry.ttl = ttl;
        }
        entry.version += 1;
        entry.updated_at = now;
        Ok(())
    }
}

/// Which entries a listing returns with respect to expiry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExpiryFilter {
    /// Only entries not expired at `now` (search, context, export).
    #[default]
    Live,
    /// Only entries expired at `now` (prune).
    Expired,
    /// Both.
    Any,
}

/// Filters for a listing; every set field must match exactly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListQuery {
    /// Only this kind.
    pub kind: Option<Kind>,
    /// Only this type.
    pub memory_type: Option<MemoryType>,
    /// Only this importance.
    pub importance: Option<Importance>,
    /// Only this key.
    pub key: Option<String>,
    /// Only this source.
    pub source: Option<String>,
    /// Only this scope reference.
    pub scope: Option<String>,
    /// Live, expired or both.
    pub expiry: ExpiryFilter,
}

impl ListQuery {
    /// Whether `entry` passes every filter at `now`.
    pub fn matches(&self, entry: &MemoryEntry, now: Timestamp) -> bool {
        let expiry_ok = match self.expiry {
            ExpiryFilter::Live => !entry.is_expired(now),
            ExpiryFilter::Expired => entry.is_expired(now),
            ExpiryFilter::Any => true,
        };
        expiry_ok
            && self.kind.is_none_or(|k| entry.kind == k)
            && self.memory_type.is_none_or(|t| entry.memory_type == Some(t))
            && self.importance.is_none_or(|i| entry.importance == i)
            && self.key.as_deref().is_none_or(|k| entry.key.as_deref() == Some(k))
            && self.source.as_deref().is_none_or(|s| entry.source.as_deref() == Some(s))
            && self.scope.as_deref().is_none_or(|s| entry.scope.as_deref() == Some(s))
    }
}
