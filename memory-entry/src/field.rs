//! The optional fields of an entry, once: [`Fields`] holds them, [`FieldName`] names one, [`FieldValue`] holds one
//! with its value. Requests, patches, filters, the file formats and the JSON views are all built from these, so a
//! field added here reaches every layer.

use std::fmt;
use std::str::FromStr;

use crate::MAX_SAFE_INTEGER;

/// A field value that is malformed (an unknown kind, a TTL of `0s`, a key with a newline, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {message}")]
pub struct InvalidFieldError {
    field: &'static str,
    message: String,
}

impl InvalidFieldError {
    /// A new error for `field` (`kind`, `type`, `importance`, `ttl`, `key`, `source`, `scope`, `content`, …).
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
                    format!("`{}` is not one of {}", memory_id::shown(s), [$($text),+].join(", ")),
                ))
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

/// A time to live (also the form of every duration setting): a positive integer without leading zeros and one of
/// `s` `m` `h` `d` `w` (`90d`), at most 2^53 − 1 seconds. It keeps the unit it was written with, so messages and
/// files show it as written.
///
/// ```
/// use memory_entry::Ttl;
/// assert_eq!("90d".parse::<Ttl>().unwrap().as_secs(), 90 * 86_400);
/// assert_eq!("90d".parse::<Ttl>().unwrap().to_string(), "90d");
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
                    memory_id::shown(text)
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

/// The (type, key, scope) of an entry with a key: no two live entries of one scope root share it.
pub type UniqueKey<'a> = (Option<MemoryType>, &'a Key, Option<&'a ScopeRef>);

/// The longest key, source or scope reference, in bytes.
pub const MAX_FIELD_BYTES: usize = 200;

/// Checks a one-line text field: non-empty, no control characters, at most [`MAX_FIELD_BYTES`] bytes.
fn check_text(field: &'static str, value: &str) -> Result<(), InvalidFieldError> {
    if value.is_empty() {
        return Err(InvalidFieldError::new(field, "it is empty"));
    }
    if value.chars().any(char::is_control) {
        return Err(InvalidFieldError::new(
            field,
            format!("`{}` holds a control character", memory_id::shown(value)),
        ));
    }
    if value.len() > MAX_FIELD_BYTES {
        return Err(InvalidFieldError::new(field, format!("it is longer than {MAX_FIELD_BYTES} bytes")));
    }
    Ok(())
}

macro_rules! text_field {
    ($(#[$meta:meta])* $name:ident, $field:literal, $check:expr) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Parses the field.
            ///
            /// # Errors
            ///
            #[doc = concat!("[`InvalidFieldError`] (field `", $field, "`) naming what is wrong.")]
            pub fn parse(text: &str) -> Result<$name, InvalidFieldError> {
                let check: fn(&str) -> Result<(), InvalidFieldError> = $check;
                check(text)?;
                Ok($name(text.to_owned()))
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = InvalidFieldError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::parse(s)
            }
        }
    };
}

text_field!(
    /// A lookup key: one line of text (no control characters), non-empty, at most 200 bytes; kebab-case is
    /// recommended. Unique within (type, scope) inside one scope root.
    ///
    /// ```
    /// use memory_entry::Key;
    /// assert_eq!(Key::parse("package-manager").unwrap().as_str(), "package-manager");
    /// assert!(Key::parse("two\nlines").is_err());
    /// ```
    Key, "key", |text| check_text("key", text)
);

text_field!(
    /// What created an entry (an agent, a process, a URL): one line, non-empty, at most 200 bytes.
    Source, "source", |text| check_text("source", text)
);

text_field!(
    /// The object an entry is scoped to (`feat-dashboard`, `task-db-setup`): one line without whitespace (the
    /// `.alp` format writes it bare after `->`), non-empty, at most 200 bytes. `project` means unscoped.
    ScopeRef, "scope", |text| {
        check_text("scope", text)?;
        if text.chars().any(char::is_whitespace) {
            return Err(InvalidFieldError::new("scope", format!("`{}` holds whitespace", memory_id::shown(text))));
        }
        Ok(())
    }
);

/// Names one of the seven fields: what `--clear` takes, what the frontmatter, `.alp` and JSON keys are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldName {
    /// `kind` (the seed's five kinds).
    Kind,
    /// `type` (the ALP 80 types).
    Type,
    /// `key`.
    Key,
    /// `importance`.
    Importance,
    /// `source`.
    Source,
    /// `scope`.
    Scope,
    /// `ttl`.
    Ttl,
}

impl FieldName {
    /// Every field, in the order files and JSON write them.
    pub const ALL: [FieldName; 7] = [
        FieldName::Kind,
        FieldName::Type,
        FieldName::Key,
        FieldName::Importance,
        FieldName::Source,
        FieldName::Scope,
        FieldName::Ttl,
    ];

    /// The fields a search filters on (every field but `ttl`), in the order the tools and the command line list
    /// them: a filter on one of them keeps the entries whose field has exactly that value.
    pub const FILTERABLE: [FieldName; 6] = [
        FieldName::Kind,
        FieldName::Type,
        FieldName::Importance,
        FieldName::Key,
        FieldName::Source,
        FieldName::Scope,
    ];

    /// The field's name in files, JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldName::Kind => "kind",
            FieldName::Type => "type",
            FieldName::Key => "key",
            FieldName::Importance => "importance",
            FieldName::Source => "source",
            FieldName::Scope => "scope",
            FieldName::Ttl => "ttl",
        }
    }

    /// The field named `name`.
    pub fn parse(name: &str) -> Option<FieldName> {
        FieldName::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

impl fmt::Display for FieldName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field with its value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldValue {
    /// `kind`.
    Kind(Kind),
    /// `type`.
    Type(MemoryType),
    /// `key`.
    Key(Key),
    /// `importance`.
    Importance(Importance),
    /// `source`.
    Source(Source),
    /// `scope`.
    Scope(ScopeRef),
    /// `ttl`.
    Ttl(Ttl),
}

impl FieldValue {
    /// Parses `text` as a value of `name`: the one mapping from text (a command line, a tool argument, a file) to
    /// a field.
    ///
    /// # Errors
    ///
    /// [`InvalidFieldError`] naming the field.
    ///
    /// ```
    /// use memory_entry::{FieldName, FieldValue, Kind};
    /// assert_eq!(FieldValue::parse(FieldName::Kind, "fact").unwrap(), FieldValue::Kind(Kind::Fact));
    /// assert!(FieldValue::parse(FieldName::Ttl, "soon").is_err());
    /// ```
    pub fn parse(name: FieldName, text: &str) -> Result<FieldValue, InvalidFieldError> {
        Ok(match name {
            FieldName::Kind => FieldValue::Kind(text.parse()?),
            FieldName::Type => FieldValue::Type(text.parse()?),
            FieldName::Key => FieldValue::Key(text.parse()?),
            FieldName::Importance => FieldValue::Importance(text.parse()?),
            FieldName::Source => FieldValue::Source(text.parse()?),
            FieldName::Scope => FieldValue::Scope(text.parse()?),
            FieldName::Ttl => FieldValue::Ttl(text.parse()?),
        })
    }

    /// Which field this is.
    pub fn name(&self) -> FieldName {
        match self {
            FieldValue::Kind(_) => FieldName::Kind,
            FieldValue::Type(_) => FieldName::Type,
            FieldValue::Key(_) => FieldName::Key,
            FieldValue::Importance(_) => FieldName::Importance,
            FieldValue::Source(_) => FieldName::Source,
            FieldValue::Scope(_) => FieldName::Scope,
            FieldValue::Ttl(_) => FieldName::Ttl,
        }
    }

    /// The value as written in files, JSON and on the command line.
    pub fn text(&self) -> String {
        match self {
            FieldValue::Kind(kind) => kind.as_str().to_owned(),
            FieldValue::Type(memory_type) => memory_type.as_str().to_owned(),
            FieldValue::Key(key) => key.as_str().to_owned(),
            FieldValue::Importance(importance) => importance.as_str().to_owned(),
            FieldValue::Source(source) => source.as_str().to_owned(),
            FieldValue::Scope(scope) => scope.as_str().to_owned(),
            FieldValue::Ttl(ttl) => ttl.to_string(),
        }
    }
}

/// The seven fields of an entry besides its ID, content, version and times: the seed's `kind` and the ALP 80
/// `type`, `key`, `importance`, `source`, `scope` and `ttl`. `kind` and `importance` always have a value (their
/// defaults are `reference` and `medium`); the others may be unset.
///
/// ```
/// use memory_entry::{FieldName, FieldValue, Fields, Importance, Key};
///
/// let mut fields = Fields::default();
/// fields.set(FieldValue::Key(Key::parse("package-manager").unwrap()));
/// fields.set(FieldValue::Importance(Importance::High));
/// let written: Vec<String> = fields.values().map(|v| format!("{}: {}", v.name(), v.text())).collect();
/// assert_eq!(written, ["kind: reference", "key: package-manager", "importance: high"]);
/// fields.clear(FieldName::Importance);
/// assert_eq!(fields.importance, Importance::Medium);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Fields {
    /// `reference` unless set.
    pub kind: Kind,
    /// The ALP 80 type.
    pub memory_type: Option<MemoryType>,
    /// The lookup key, unique within (type, scope) inside one scope root.
    pub key: Option<Key>,
    /// `medium` unless set.
    pub importance: Importance,
    /// What created the entry.
    pub source: Option<Source>,
    /// The object the entry is scoped to; none (or `project`) is unscoped.
    pub scope: Option<ScopeRef>,
    /// Time to live, counted from the last update.
    pub ttl: Option<Ttl>,
}

impl Fields {
    /// Sets one field.
    pub fn set(&mut self, value: FieldValue) {
        match value {
            FieldValue::Kind(kind) => self.kind = kind,
            FieldValue::Type(memory_type) => self.memory_type = Some(memory_type),
            FieldValue::Key(key) => self.key = Some(key),
            FieldValue::Importance(importance) => self.importance = importance,
            FieldValue::Source(source) => self.source = Some(source),
            FieldValue::Scope(scope) => self.scope = Some(scope),
            FieldValue::Ttl(ttl) => self.ttl = Some(ttl),
        }
    }

    /// Clears one field: `kind` and `importance` return to their defaults, the others are removed.
    pub fn clear(&mut self, name: FieldName) {
        match name {
            FieldName::Kind => self.kind = Kind::default(),
            FieldName::Type => self.memory_type = None,
            FieldName::Key => self.key = None,
            FieldName::Importance => self.importance = Importance::default(),
            FieldName::Source => self.source = None,
            FieldName::Scope => self.scope = None,
            FieldName::Ttl => self.ttl = None,
        }
    }

    /// The value of one field; `None` when it is unset (`kind` and `importance` are always set).
    pub fn get(&self, name: FieldName) -> Option<FieldValue> {
        match name {
            FieldName::Kind => Some(FieldValue::Kind(self.kind)),
            FieldName::Type => self.memory_type.map(FieldValue::Type),
            FieldName::Key => self.key.clone().map(FieldValue::Key),
            FieldName::Importance => Some(FieldValue::Importance(self.importance)),
            FieldName::Source => self.source.clone().map(FieldValue::Source),
            FieldName::Scope => self.scope.clone().map(FieldValue::Scope),
            FieldName::Ttl => self.ttl.map(FieldValue::Ttl),
        }
    }

    /// The fields that have a value, in [`FieldName::ALL`] order.
    pub fn values(&self) -> impl Iterator<Item = FieldValue> + '_ {
        FieldName::ALL.into_iter().filter_map(|name| self.get(name))
    }

    /// Whether `value` is this field's value.
    pub fn holds(&self, value: &FieldValue) -> bool {
        self.get(value.name()).as_ref() == Some(value)
    }

    /// The (type, key, scope) triple that must be unique within a scope root; `None` without a key.
    pub fn unique_key(&self) -> Option<UniqueKey<'_>> {
        self.key.as_ref().map(|key| (self.memory_type, key, self.scope.as_ref()))
    }
}
