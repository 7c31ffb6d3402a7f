//! Logical IDs for ALP memory: the only door through which a name reaches the store.
//!
//! An agent never names a file. It names a logical ID that a policy understands:
//!
//! ```text
//! shared:<segment>[:<segment>…]              at least 2 parts
//! project:<projectId>:<segment>[:<segment>…] at least 3 parts
//! private:<role>:<segment>[:<segment>…]      at least 3 parts
//! ```
//!
//! [`parse_memory_id`] splits on `:` and checks, in this order: the ID is at most [`MAX_ID_BYTES`] bytes
//! (`too_long`) and [`MAX_SEGMENTS`] segments (`too_many_segments`), the first segment is exactly `shared`,
//! `project` or `private` (`unknown_scope`), the part count (`too_few_parts`), then every other segment from the
//! left: non-empty (`empty`), not `.` or `..` (`dot_segment`), no `/` or `\` (`separator`), no control character
//! U+0000–U+001F or U+007F (`control_char`), at most [`MAX_SEGMENT_BYTES`] bytes (`segment_too_long`). The seed
//! defines the first four segment rules' spirit (non-empty, not a dot segment, no separator); the control-character
//! rule and the three size limits are additions of this crate, so that an ID can always be shown on one line and
//! mapped to a file name within the usual 255-byte limit.
//!
//! A path such as `../../.ssh/id_rsa` is never recognised as an ID, so it never reaches a file system.
//!
//! ```
//! use memory_id::{parse_memory_id, Scope};
//!
//! let id = parse_memory_id("project:alp:log:2026-09").unwrap();
//! assert_eq!(id.scope(), Scope::Project);
//! assert_eq!(id.owner(), Some("alp"));
//! assert_eq!(id.path_segments().collect::<Vec<_>>(), ["log", "2026-09"]);
//!
//! let err = parse_memory_id("../../.ssh/id_rsa").unwrap_err();
//! assert_eq!(err.reason().code(), "unknown_scope");
//! assert_eq!(
//!     parse_memory_id("shared:..").unwrap_err().to_string(),
//!     "invalid memory id `shared:..`: segment 2 is `..`, a dot segment"
//! );
//! ```
//!
//! IDs are compared byte for byte: there is no case folding and no Unicode normalisation, so `shared:Team` and
//! `shared:team` are different IDs, and an ID written in NFC differs from the same text written in NFD.
//!
//! Most users want the `alp-memory` crate, which puts these IDs behind a policy-checked, audited service; this crate
//! is for projects that only need to parse and validate IDs. It does no I/O.

use std::fmt;
use std::str::FromStr;

/// The longest accepted ID or prefix, in bytes.
pub const MAX_ID_BYTES: usize = 1024;
/// The most segments an ID or prefix may have, the scope keyword included.
pub const MAX_SEGMENTS: usize = 64;
/// The longest accepted segment, in bytes.
pub const MAX_SEGMENT_BYTES: usize = 200;

/// The three memory scopes, named by an ID's first segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// `shared:…`: facts and references every granted role may use.
    Shared,
    /// `project:<projectId>:…`: goals, decisions and logs of one project.
    Project,
    /// `private:<role>:…`: drafts and notes of exactly one role.
    Private,
}

impl Scope {
    /// All scopes, in keyword order.
    pub const ALL: [Scope; 3] = [Scope::Shared, Scope::Project, Scope::Private];

    /// The keyword that starts IDs of this scope: `shared`, `project` or `private`.
    pub fn keyword(self) -> &'static str {
        match self {
            Scope::Shared => "shared",
            Scope::Project => "project",
            Scope::Private => "private",
        }
    }

    /// The scope whose keyword is exactly `keyword` (case-sensitive).
    pub fn from_keyword(keyword: &str) -> Option<Scope> {
        match keyword {
            "shared" => Some(Scope::Shared),
            "project" => Some(Scope::Project),
            "private" => Some(Scope::Private),
            _ => None,
        }
    }

    /// The fewest parts a full ID of this scope has: 2 for `shared`, 3 for `project` and `private`.
    pub fn min_id_parts(self) -> usize {
        match self {
            Scope::Shared => 2,
            Scope::Project | Scope::Private => 3,
        }
    }

    /// Whether the second segment names an owner (a project ID or a role).
    pub fn has_owner(self) -> bool {
        !matches!(self, Scope::Shared)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// What is wrong with one segment. Shared by IDs, prefixes, grants and anything else that must be a valid segment
/// (a role name, a file name in the store).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SegmentProblem {
    /// The segment is empty (`shared::x`, `shared:`).
    Empty,
    /// The segment is `.` or `..`.
    DotSegment,
    /// The segment contains `/` or `\`.
    Separator,
    /// The segment contains a control character (U+0000–U+001F or U+007F).
    ControlChar,
    /// The segment is longer than [`MAX_SEGMENT_BYTES`] bytes.
    TooLong,
}

impl SegmentProblem {
    /// The stable machine-readable reason: `empty`, `dot_segment`, `separator`, `control_char` or
    /// `segment_too_long`.
    pub fn code(self) -> &'static str {
        match self {
            SegmentProblem::Empty => "empty",
            SegmentProblem::DotSegment => "dot_segment",
            SegmentProblem::Separator => "separator",
            SegmentProblem::ControlChar => "control_char",
            SegmentProblem::TooLong => "segment_too_long",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            SegmentProblem::Empty => "empty",
            SegmentProblem::DotSegment => "a dot segment",
            SegmentProblem::Separator => "holding a path separator",
            SegmentProblem::ControlChar => "holding a control character",
            SegmentProblem::TooLong => "longer than 200 bytes",
        }
    }
}

/// Checks one segment, in the order of the crate docs: empty, dot segment, separator, control character, length.
///
/// ```
/// use memory_id::{validate_segment, SegmentProblem};
/// assert_eq!(validate_segment("onboarding"), Ok(()));
/// assert_eq!(validate_segment(".."), Err(SegmentProblem::DotSegment));
/// assert_eq!(validate_segment("a/b"), Err(SegmentProblem::Separator));
/// ```
pub fn validate_segment(segment: &str) -> Result<(), SegmentProblem> {
    if segment.is_empty() {
        return Err(SegmentProblem::Empty);
    }
    if segment == "." || segment == ".." {
        return Err(SegmentProblem::DotSegment);
    }
    if segment.bytes().any(|b| b == b'/' || b == b'\\') {
        return Err(SegmentProblem::Separator);
    }
    if segment.bytes().any(is_control_byte) {
        return Err(SegmentProblem::ControlChar);
    }
    if segment.len() > MAX_SEGMENT_BYTES {
        return Err(SegmentProblem::TooLong);
    }
    Ok(())
}

/// U+0000–U+001F and U+007F are single bytes in UTF-8 and never occur inside a multi-byte sequence.
fn is_control_byte(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// The single machine-readable reason an input is not a valid ID or prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidIdReason {
    /// The input is longer than [`MAX_ID_BYTES`] bytes.
    TooLong {
        /// The input's length in bytes.
        len: usize,
    },
    /// The input has more than [`MAX_SEGMENTS`] segments.
    TooManySegments {
        /// How many `:`-separated segments the input has.
        count: usize,
    },
    /// The first segment is not exactly `shared`, `project` or `private`.
    UnknownScope,
    /// The ID has fewer parts than its scope requires.
    TooFewParts {
        /// How many parts the input has.
        count: usize,
        /// How many its scope requires.
        min: usize,
    },
    /// One segment is invalid.
    Segment {
        /// The 1-based position of the first invalid segment; the scope keyword is segment 1.
        index: usize,
        /// What is wrong with it.
        problem: SegmentProblem,
    },
}

impl InvalidIdReason {
    /// The stable machine-readable reason: `too_long`, `too_many_segments`, `unknown_scope`, `too_few_parts`,
    /// `empty`, `dot_segment`, `separator`, `control_char` or `segment_too_long`.
    pub fn code(&self) -> &'static str {
        match self {
            InvalidIdReason::TooLong { .. } => "too_long",
            InvalidIdReason::TooManySegments { .. } => "too_many_segments",
            InvalidIdReason::UnknownScope => "unknown_scope",
            InvalidIdReason::TooFewParts { .. } => "too_few_parts",
            InvalidIdReason::Segment { problem, .. } => problem.code(),
        }
    }
}

/// An input that is not a valid memory ID (or prefix), with the input and the first reason found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid memory id `{}`: {}", shown(&self.input), self.detail())]
pub struct InvalidMemoryIdError {
    input: String,
    reason: InvalidIdReason,
}

impl InvalidMemoryIdError {
    /// The input exactly as given.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why it was refused.
    pub fn reason(&self) -> InvalidIdReason {
        self.reason
    }

    fn detail(&self) -> String {
        match self.reason {
            InvalidIdReason::TooLong { len } => {
                format!("it is {len} bytes long, the limit is {MAX_ID_BYTES}")
            }
            InvalidIdReason::TooManySegments { count } => {
                format!("it has {count} segments, the limit is {MAX_SEGMENTS}")
            }
            InvalidIdReason::UnknownScope => {
                let first = self.input.split(':').next().unwrap_or_default();
                format!("`{}` is not a scope (expected `shared`, `project` or `private`)", shown(first))
            }
            InvalidIdReason::TooFewParts { count, min } => {
                let scope = self.input.split(':').next().unwrap_or_default();
                let shape = match Scope::from_keyword(scope) {
                    Some(Scope::Shared) => "shared:<segment>",
                    Some(Scope::Project) => "project:<projectId>:<segment>",
                    Some(Scope::Private) | None => "private:<role>:<segment>",
                };
                format!("it has {count} part(s), `{scope}` needs at least {min} (`{shape}`)")
            }
            InvalidIdReason::Segment { index, problem } => {
                let segment = self.input.split(':').nth(index - 1).unwrap_or_default();
                format!("segment {index} is `{}`, {}", shown(segment), problem.describe())
            }
        }
    }
}

/// Shows user input in a one-line message, the one rule every crate of alp-memory shows input by: each character
/// [`must_escape`] holds for is written as `\u{…}`, and after 120 characters the rest is `…`.
///
/// Every error of this crate renders input with it; crates that report IDs, grants, roles, file names or parser
/// messages in their own errors use it too ([`shown_within`] for another length), so that no message ever spans two
/// lines or reads differently from what it holds.
///
/// ```
/// assert_eq!(memory_id::shown("shared:a\nb").to_string(), "shared:a\\u{a}b");
/// assert_eq!(memory_id::shown(&"x".repeat(200)).to_string(), format!("{}…", "x".repeat(120)));
/// ```
pub fn shown(input: &str) -> impl fmt::Display + '_ {
    shown_within(input, 120)
}

/// [`shown`] with at most `max_chars` characters before the `…` (a parser's message, which quotes input at length,
/// gets more room than a name).
///
/// ```
/// assert_eq!(memory_id::shown_within("abcdef", 3).to_string(), "abc…");
/// assert_eq!(memory_id::shown_within("a\u{202E}b", 3).to_string(), "a\\u{202e}b");
/// ```
pub fn shown_within(input: &str, max_chars: usize) -> impl fmt::Display + '_ {
    ShownInput { input, max_chars }
}

/// A message that quotes input at length (a parser's, a system error's) on one line by the rule of [`shown`], at
/// most 300 characters: the one length every crate gives such messages.
///
/// ```
/// assert_eq!(memory_id::shown_message("line 1\nline 2").to_string(), "line 1\\u{a}line 2");
/// ```
pub fn shown_message(message: &str) -> impl fmt::Display + '_ {
    shown_within(message, 300)
}

/// The characters never written raw in a message or a text file alp-memory writes: control characters, the line and
/// paragraph separators (U+2028, U+2029, which some readers break lines at), the bidirectional controls (U+202A to
/// U+202E, U+2066 to U+2069, which make text read differently from how it parses) and the byte order mark (U+FEFF).
///
/// ```
/// assert!(memory_id::must_escape('\n') && memory_id::must_escape('\u{2066}') && !memory_id::must_escape('é'));
/// ```
#[must_use]
pub fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

struct ShownInput<'a> {
    input: &'a str,
    max_chars: usize,
}

impl fmt::Display for ShownInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.input.chars().enumerate() {
            if i == self.max_chars {
                return f.write_str("…");
            }
            if must_escape(c) {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                f.write_str(c.encode_utf8(&mut [0; 4]))?;
            }
        }
        Ok(())
    }
}

/// Validates `input` as an ID or a prefix whose scope needs `min_parts(scope)` parts.
fn validate(input: &str, min_parts: fn(Scope) -> usize) -> Result<Scope, InvalidMemoryIdError> {
    let fail = |reason| Err(InvalidMemoryIdError { input: input.to_owned(), reason });
    if input.len() > MAX_ID_BYTES {
        return fail(InvalidIdReason::TooLong { len: input.len() });
    }
    let count = input.split(':').count();
    if count > MAX_SEGMENTS {
        return fail(InvalidIdReason::TooManySegments { count });
    }
    let mut segments = input.split(':');
    let Some(scope) = segments.next().and_then(Scope::from_keyword) else {
        return fail(InvalidIdReason::UnknownScope);
    };
    let min = min_parts(scope);
    if count < min {
        return fail(InvalidIdReason::TooFewParts { count, min });
    }
    for (offset, segment) in segments.enumerate() {
        if let Err(problem) = validate_segment(segment) {
            return fail(InvalidIdReason::Segment { index: offset + 2, problem });
        }
    }
    Ok(scope)
}

/// Parses a logical memory ID. This is the only way to obtain a [`MemoryId`].
///
/// # Errors
///
/// [`InvalidMemoryIdError`] with the first reason found, in the order of the crate docs.
pub fn parse_memory_id(input: &str) -> Result<MemoryId, InvalidMemoryIdError> {
    let scope = validate(input, Scope::min_id_parts)?;
    Ok(MemoryId { raw: input.to_owned(), scope })
}

/// A valid logical memory ID. A `MemoryId` that exists has passed [`parse_memory_id`].
///
/// Ordering and equality are byte order of the ID text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryId {
    raw: String,
    scope: Scope,
}

impl MemoryId {
    /// The ID as text, exactly as parsed.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The scope named by the first segment.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The project ID of a `project:` ID or the role of a `private:` ID; `None` for `shared:`.
    pub fn owner(&self) -> Option<&str> {
        if self.scope.has_owner() { self.raw.split(':').nth(1) } else { None }
    }

    /// Every segment, the scope keyword first.
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.raw.split(':')
    }

    /// How many segments the ID has, the scope keyword included.
    pub fn segment_count(&self) -> usize {
        self.raw.split(':').count()
    }

    /// The segments below the scope root: after `shared`, after `project:<id>`, or after `private:<role>`.
    /// Never empty.
    pub fn path_segments(&self) -> impl Iterator<Item = &str> + '_ {
        let skip = if self.scope.has_owner() { 2 } else { 1 };
        self.raw.split(':').skip(skip)
    }

    /// The scope root this ID belongs to: `shared`, `project:<id>` or `private:<role>`. Limits and uniqueness of
    /// (type, key, scope) are counted per scope root.
    pub fn scope_root(&self) -> MemoryPrefix {
        let end = match self.owner() {
            Some(owner) => self.scope.keyword().len() + 1 + owner.len(),
            None => self.scope.keyword().len(),
        };
        MemoryPrefix { raw: self.raw[..end].to_owned(), scope: self.scope }
    }

    /// This ID as a prefix naming its own subtree.
    pub fn to_prefix(&self) -> MemoryPrefix {
        MemoryPrefix { raw: self.raw.clone(), scope: self.scope }
    }

    /// The ID's text, consuming it.
    pub fn into_string(self) -> String {
        self.raw
    }
}

impl fmt::Debug for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemoryId({:?})", self.raw)
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl FromStr for MemoryId {
    type Err = InvalidMemoryIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_memory_id(s)
    }
}

impl AsRef<str> for MemoryId {
    fn as_ref(&self) -> &str {
        &self.raw
    }
}

/// A subtree of memory, for search and listing: an ID with a relaxed minimum length.
///
/// `shared`, `project`, `project:alp`, `private:worker` and `project:alp:log` are prefixes. A prefix matches whole
/// segments (`shared:te` does not contain `shared:team`), and its subtree includes the entry named by the prefix
/// itself (`shared:team` contains the ID `shared:team`).
///
/// ```
/// use memory_id::{parse_memory_id, MemoryPrefix};
///
/// let prefix: MemoryPrefix = "shared:team".parse().unwrap();
/// assert!(prefix.contains(&parse_memory_id("shared:team").unwrap()));
/// assert!(prefix.contains(&parse_memory_id("shared:team:onboarding").unwrap()));
/// assert!(!prefix.contains(&parse_memory_id("shared:teams").unwrap()));
/// assert_eq!(MemoryPrefix::parse("shared:").unwrap_err().reason().code(), "empty");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryPrefix {
    raw: String,
    scope: Scope,
}

impl MemoryPrefix {
    /// Parses a prefix: the grammar of an ID, but the scope keyword alone (or with just an owner) is enough.
    ///
    /// # Errors
    ///
    /// [`InvalidMemoryIdError`] with the same reasons as [`parse_memory_id`] (a prefix never has too few parts).
    pub fn parse(input: &str) -> Result<MemoryPrefix, InvalidMemoryIdError> {
        let scope = validate(input, |_| 1)?;
        Ok(MemoryPrefix { raw: input.to_owned(), scope })
    }

    /// The prefix covering a whole scope (`shared`, `project`, `private`).
    pub fn of_scope(scope: Scope) -> MemoryPrefix {
        MemoryPrefix { raw: scope.keyword().to_owned(), scope }
    }

    /// The prefix as text.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The scope named by the first segment.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Every segment, the scope keyword first.
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.raw.split(':')
    }

    /// How many segments the prefix has, the scope keyword included.
    pub fn segment_count(&self) -> usize {
        self.raw.split(':').count()
    }

    /// The project ID or role, when the prefix is deep enough to name one.
    pub fn owner(&self) -> Option<&str> {
        if self.scope.has_owner() { self.raw.split(':').nth(1) } else { None }
    }

    /// Whether `id` is this prefix's own entry or lies below it, matching whole segments.
    pub fn contains(&self, id: &MemoryId) -> bool {
        starts_with_segments(id.as_str(), &self.raw)
    }

    /// Whether `other`'s whole subtree lies inside this one (true when they are equal).
    pub fn contains_prefix(&self, other: &MemoryPrefix) -> bool {
        starts_with_segments(&other.raw, &self.raw)
    }

    /// The ID this prefix names, when it has enough parts for its scope to be a full ID.
    pub fn to_id(&self) -> Option<MemoryId> {
        (self.segment_count() >= self.scope.min_id_parts())
            .then(|| MemoryId { raw: self.raw.clone(), scope: self.scope })
    }
}

/// `text` equals `prefix` or continues it after a `:`.
fn starts_with_segments(text: &str, prefix: &str) -> bool {
    match text.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(':'),
        None => false,
    }
}

impl fmt::Debug for MemoryPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemoryPrefix({:?})", self.raw)
    }
}

impl fmt::Display for MemoryPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl FromStr for MemoryPrefix {
    type Err = InvalidMemoryIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemoryPrefix::parse(s)
    }
}

impl From<&MemoryId> for MemoryPrefix {
    fn from(id: &MemoryId) -> Self {
        id.to_prefix()
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::{MemoryId, MemoryPrefix, Scope};
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    impl Serialize for MemoryId {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_str(self.as_str())
        }
    }

    impl<'de> Deserialize<'de> for MemoryId {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let text = String::deserialize(deserializer)?;
            super::parse_memory_id(&text).map_err(D::Error::custom)
        }
    }

    impl Serialize for MemoryPrefix {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_str(self.as_str())
        }
    }

    impl<'de> Deserialize<'de> for MemoryPrefix {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let text = String::deserialize(deserializer)?;
            MemoryPrefix::parse(&text).map_err(D::Error::custom)
        }
    }

    impl Serialize for Scope {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_str(self.keyword())
        }
    }

    impl<'de> Deserialize<'de> for Scope {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let text = String::deserialize(deserializer)?;
            Scope::from_keyword(&text)
                .ok_or_else(|| D::Error::custom(format_args!("unknown memory scope `{text}`")))
        }
    }
}
