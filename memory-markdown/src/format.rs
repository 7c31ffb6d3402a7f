//! The file format of one entry: YAML frontmatter between `---` lines, then the content, byte for byte; and how a
//! file's bytes are read into an entry's fields. Writing the canonical form is `render`'s
//! ([`render_entry_file`](crate::render_entry_file)).
//!
//! # Reading
//!
//! If the file starts with a `---` line and has a closing `---` line, the frontmatter is the text between them and
//! the content is every byte after the closing line, even when the YAML between is broken. Otherwise the whole file
//! is content. A line is `---` when its text, without the `\n` or `\r\n` that ends it, is exactly `---`; the
//! closing line may also end the file without a line break. A byte-order mark before the first `---` is content
//! like any other byte (the file then has no frontmatter).
//!
//! A hand-written note must stay readable, so nothing in the frontmatter makes a file unreadable:
//! - missing frontmatter, or frontmatter that is not UTF-8, longer than 64 KiB, not YAML the reader accepts (an
//!   alias, nesting deeper than 32, a duplicate or non-string key, a non-finite float) or not a mapping (broken):
//!   kind `reference`, version 1, both timestamps from the file's mtime, importance `medium`, no other fields, no
//!   unknown keys;
//! - a malformed field in otherwise good frontmatter falls back on its own, the other fields are kept:
//!   `kind` (missing, unknown or not a string) → `reference`; `version` (not a positive integer, e.g. `banana` or
//!   `0`) → 1; `createdAt`/`updatedAt` (missing or not an RFC 3339 timestamp) → the file's mtime; `importance`
//!   (e.g. `extreme`) → `medium`; `type` (unknown) → none; `ttl` (e.g. `soon`, `0s`) → none, so the entry does
//!   not expire; `key`, `source`, `scope` → a string as written, a number or boolean as its YAML text, when that
//!   is a valid [`Key`](memory_entry::Key), [`Source`](memory_entry::Source) or
//!   [`ScopeRef`](memory_entry::ScopeRef); anything else (a list, `null`, a key with a control character or over
//!   200 bytes) → none;
//! - `version` above 2^53 − 1 is not a fallback case: [`ParsedEntryFile::version_over_cap`] keeps it, and the
//!   Markdown store refuses the file (its version must never be read as another);
//! - `id:` is ignored and dropped (the path decides the ID, and writing a stale `id:` back would mislead);
//! - every other key is kept, in file order, in [`MemoryEntry::extra`], and written back after the known keys
//!   (only when it reads back the same; otherwise it is dropped with a warning).
//!
//! A fallen-back field is written back with its fallback value when the entry is updated: what an update writes
//! is what a read returned. Broken frontmatter is likewise replaced by canonical frontmatter on update.
//!
//! Content that is not valid UTF-8 is read lossily (each invalid sequence becomes U+FFFD) so that one bad file
//! never makes a note or a search unreadable; [`ParsedEntryFile::lossy_utf8`] says so, and the Markdown store
//! refuses an update of such a file unless the update replaces the content, so that bytes it could not read are
//! never silently rewritten.
//!
//! ## Two readers, one result
//!
//! Most frontmatter is the YAML people write by hand: one `key: value` per line, in any order, with comments and
//! blank lines, where a value is a scalar (plain words, a quoted string, an integer, `true`/`false`, `null`, any
//! RFC 3339 timestamp), a flow list of scalars (`tags: [a, b]`), a block list of scalars (`- a` lines below
//! `tags:`) or a mapping one level deep whose values are such scalars or flow lists (indented `key: value` lines
//! below `meta:`). A line reader reads that subset without the general YAML parser (which costs about ten times
//! more per file); whatever it cannot be sure of (deeper nesting, continuation lines, tags, anchors, escapes it
//! does not know, a plain scalar YAML could read as a float or a YAML 1.1 boolean) it leaves to the YAML parser.
//! Where the line reader (`yaml_lines`) answers, its answer is exactly the YAML parser's (a property test here
//! checks it).
//!
//! ```
//! use memory_id::parse_memory_id;
//! use memory_entry::{Kind, Timestamp};
//! use memory_markdown::{parse_entry_file, render_entry_file, FrontmatterStatus};
//!
//! let id = parse_memory_id("shared:team:onboarding").unwrap();
//! let mtime = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
//! let file = b"---\nkind: fact\nversion: 3\nimportance: extreme\nowner: ana\n---\nRead the README.\n";
//! let parsed = parse_entry_file(id, file, mtime);
//! assert_eq!(parsed.frontmatter, FrontmatterStatus::Present);
//! assert_eq!((parsed.entry.fields.kind, parsed.entry.version), (Kind::Fact, 3));
//! assert_eq!(parsed.entry.content, "Read the README.\n");
//!
//! let written = render_entry_file(&parsed.entry);
//! assert!(written.starts_with("---\nkind: fact\nversion: 3\ncreatedAt: 2026-11-29T12:00:00.000Z\n"));
//! assert!(written.contains("importance: medium\nowner: ana\n---\n"));
//! ```

use std::borrow::Cow;

use memory_entry::{Extra, FieldName, FieldValue, Fields, MAX_VERSION, MemoryEntry, Timestamp};
use memory_id::MemoryId;
use serde_json::Value;

use crate::render::writes_back;
use crate::yaml;
use crate::yaml_lines::{Scalar, fast_timestamp, read_lines};

/// What the frontmatter of a file looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrontmatterStatus {
    /// No opening `---` line, or no closing one: the whole file is content.
    Missing,
    /// Frontmatter lines exist but are not a YAML mapping the reader accepts; every field has its fallback.
    Broken,
    /// A YAML mapping (possibly empty); malformed fields fell back one by one.
    Present,
}

/// A file read as an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedEntryFile {
    /// The entry, with fallbacks applied.
    pub entry: MemoryEntry,
    /// Whether the frontmatter was present, broken or missing.
    pub frontmatter: FrontmatterStatus,
    /// Whether the content was not valid UTF-8 and was read lossily.
    pub lossy_utf8: bool,
    /// A frontmatter `version` above [`MAX_VERSION`], as written. Such a file must not be read or written with
    /// another version (the entry then holds version 1, a fallback only): the Markdown store refuses it.
    pub version_over_cap: Option<String>,
}

impl memory_store::Held for ParsedEntryFile {
    fn version(&self) -> u64 {
        self.entry.version
    }

    fn is_expired(&self, now: Timestamp) -> bool {
        self.entry.is_expired(now)
    }
}

/// Reads the bytes of an entry file. Never fails: see the module docs for the fallbacks.
///
/// `id` is the ID the file's path maps to; `mtime` is the file's modification time, used for missing timestamps.
pub fn parse_entry_file(id: MemoryId, bytes: &[u8], mtime: Timestamp) -> ParsedEntryFile {
    let (frontmatter, content) = split(bytes);
    let (content, lossy_utf8) = decode_content(content);
    let (front, frontmatter, unknown) = read_front(frontmatter);
    let version_over_cap = front.version_over_cap.clone();
    let mut entry = front.into_entry(id, content.into_owned(), mtime);
    entry.extra = unknown.into_extra();
    ParsedEntryFile { entry, frontmatter, lossy_utf8, version_over_cap }
}

/// The content as text: borrowed when it is valid UTF-8 (checked with SIMD), read lossily otherwise (each invalid
/// sequence becomes U+FFFD), with a flag saying so.
pub(crate) fn decode_content(content: &[u8]) -> (Cow<'_, str>, bool) {
    match simdutf8::basic::from_utf8(content) {
        Ok(text) => (Cow::Borrowed(text), false),
        Err(_) => (String::from_utf8_lossy(content), true),
    }
}

/// Reads the frontmatter (the bytes between the `---` lines, if any) into the fields it gives, with the fallbacks
/// of the module docs. The unknown keys are set aside as read: a listing turns them into the entry's
/// [`Extra`] only for the entries it keeps.
pub(crate) fn read_front(frontmatter: Option<&[u8]>) -> (Front, FrontmatterStatus, Unknown<'_>) {
    match frontmatter {
        None => (Front::default(), FrontmatterStatus::Missing, Unknown::None),
        // Longer frontmatter is broken frontmatter: reading it would cost more than it is worth.
        Some(raw) if raw.len() > yaml::MAX_BYTES => {
            (Front::default(), FrontmatterStatus::Broken, Unknown::None)
        }
        Some(raw) => {
            let Ok(text) = std::str::from_utf8(raw) else {
                return (Front::default(), FrontmatterStatus::Broken, Unknown::None);
            };
            if let Some(pairs) = read_lines(text) {
                let (front, unknown) = Front::interpret(pairs);
                return (front, FrontmatterStatus::Present, Unknown::Lines(unknown));
            }
            match yaml::parse_value(text) {
                Ok(Value::Null) => (Front::default(), FrontmatterStatus::Present, Unknown::None),
                Ok(Value::Object(map)) => {
                    let (front, unknown) = Front::interpret(map);
                    (front, FrontmatterStatus::Present, Unknown::Yaml(unknown))
                }
                _ => (Front::default(), FrontmatterStatus::Broken, Unknown::None),
            }
        }
    }
}

/// The unknown keys of a frontmatter, in file order, as the reader that read it gave them.
#[derive(Debug)]
pub(crate) enum Unknown<'a> {
    None,
    /// From the line reader: every value writes back as itself.
    Lines(Vec<(&'a str, Scalar<'a>)>),
    /// From the YAML parser: values that would not write back as themselves are dropped.
    Yaml(Vec<(String, Value)>),
}

impl Unknown<'_> {
    /// The unknown keys an entry keeps.
    pub(crate) fn into_extra(self) -> Extra {
        match self {
            Unknown::None => Extra::default(),
            Unknown::Lines(pairs) => Extra::new(
                pairs
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), FrontValue::into_value(value)))
                    .collect(),
            ),
            Unknown::Yaml(pairs) => Extra::new(
                pairs
                    .into_iter()
                    .filter(|(key, value)| {
                        let keeps = writes_back(key, value);
                        if !keeps {
                            // A value this crate cannot write back so that it reads the same (a float YAML readers
                            // write differently, a string a flow collection cannot hold): keeping it would change
                            // it on the next update, so it is dropped, as a broken field would be.
                            tracing::warn!("dropping a frontmatter key that cannot be written back");
                        }
                        keeps
                    })
                    .collect(),
            ),
        }
    }
}

/// Splits a file into its frontmatter (between the `---` lines) and its content.
pub(crate) fn split(bytes: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let start = if bytes.starts_with(b"---\n") {
        4
    } else if bytes.starts_with(b"---\r\n") {
        5
    } else {
        return (None, bytes);
    };
    let mut pos = start;
    loop {
        let newline = memchr::memchr(b'\n', &bytes[pos..]).map(|i| pos + i);
        let (line, next) = match newline {
            Some(end) => (&bytes[pos..end], end + 1),
            None => (&bytes[pos..], bytes.len()),
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line == b"---" {
            return (Some(&bytes[start..pos]), &bytes[next..]);
        }
        if newline.is_none() {
            return (None, bytes);
        }
        pos = next;
    }
}

/// The frontmatter fields as read; `None` means missing or malformed (the fallbacks apply).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Front {
    fields: Fields,
    version: Option<u64>,
    created_at: Option<Timestamp>,
    updated_at: Option<Timestamp>,
    /// A `version` above [`MAX_VERSION`], as written.
    pub(crate) version_over_cap: Option<String>,
    /// `renamedFrom` and `renamedFromVersion`: the file is an entry being renamed, not yet at its new name
    /// ([`RENAMED_FROM`]).
    renamed_from: Option<String>,
    renamed_from_version: Option<u64>,
}

/// The frontmatter keys of a rename in progress. A rename first rewrites the entry file at its old name with the
/// moved entry (its new version) and these two keys (the old ID and its version), then moves that one file to its
/// new name with `RENAME_NOREPLACE`: a reader at the old name reads the old ID at its old version, a reader at the
/// new name the moved entry, and no instant shows both names or neither. A reader of any other ID ignores them,
/// and they are never kept as unknown keys, so the next write drops them. A rename out of a role's private memory
/// (`private:<role>:…` to an ID outside `private:<role>`) never writes them: it makes the new file without them,
/// then removes the old one, so another scope's private ID is never written into a file outside that scope.
pub(crate) const RENAMED_FROM: [&str; 2] = ["renamedFrom", "renamedFromVersion"];

/// A frontmatter value from either reader: what interpreting a field needs of it.
trait FrontValue {
    /// The value when it is a string.
    fn as_str(&self) -> Option<&str>;
    /// A scalar's text: a string as written, a number or boolean as its YAML text.
    fn text(&self) -> Option<Cow<'_, str>>;
    /// The value read as a `version`.
    fn version(&self) -> Version;
    /// The value as JSON, to keep as an unknown key.
    fn into_value(self) -> Value;
}

impl FrontValue for Value {
    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }

    fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::String(text) => Some(Cow::Borrowed(text)),
            Value::Number(number) => Some(Cow::Owned(number.to_string())),
            Value::Bool(flag) => Some(Cow::Borrowed(if *flag { "true" } else { "false" })),
            _ => None,
        }
    }

    fn version(&self) -> Version {
        match self {
            Value::Number(number) => match (number.as_u64(), number.as_f64()) {
                (Some(n), _) => integer_version(n),
                // An integer too large for 64 bits arrives as a float; only the sign and size matter here.
                (None, Some(f)) if f.fract() == 0.0 && f > MAX_VERSION as f64 => {
                    Version::OverCap(number.to_string())
                }
                _ => Version::Malformed,
            },
            Value::String(text) => canonical_version(text),
            _ => Version::Malformed,
        }
    }

    fn into_value(self) -> Value {
        self
    }
}

impl FrontValue for Scalar<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Str(text) => Some(text),
            _ => None,
        }
    }

    fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Scalar::Str(text) => Some(Cow::Borrowed(text)),
            Scalar::Int(n) => Some(Cow::Owned(n.to_string())),
            Scalar::Bool(flag) => Some(Cow::Borrowed(if *flag { "true" } else { "false" })),
            Scalar::Null | Scalar::Seq(_) | Scalar::Map(_) => None,
        }
    }

    fn version(&self) -> Version {
        match self {
            Scalar::Int(n) => integer_version(*n),
            Scalar::Str(text) => canonical_version(text),
            _ => Version::Malformed,
        }
    }

    fn into_value(self) -> Value {
        match self {
            Scalar::Str(text) => Value::String(text.into_owned()),
            Scalar::Int(n) => Value::from(n),
            Scalar::Bool(flag) => Value::Bool(flag),
            Scalar::Null => Value::Null,
            Scalar::Seq(items) => Value::Array(items.into_iter().map(FrontValue::into_value).collect()),
            Scalar::Map(pairs) => Value::Object(
                pairs
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), FrontValue::into_value(value)))
                    .collect(),
            ),
        }
    }
}

impl Front {
    /// What the key/value pairs of a mapping say, field by field, with the fallbacks of the module docs; the pairs
    /// of unknown keys are returned as they are, in order.
    fn interpret<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> (Front, Vec<(K, V)>)
    where
        K: AsRef<str>,
        V: FrontValue,
    {
        let mut front = Front::default();
        let mut unknown = Vec::new();
        for (key, value) in pairs {
            let field = |name: FieldName| value.text().and_then(|text| FieldValue::parse(name, &text).ok());
            let keyword =
                |name: FieldName| value.as_str().and_then(|text| FieldValue::parse(name, text).ok());
            let set = match key.as_ref() {
                "id" => None,
                "version" => {
                    match value.version() {
                        Version::Valid(version) => front.version = Some(version),
                        Version::OverCap(text) => front.version_over_cap = Some(text),
                        Version::Malformed => {}
                    }
                    None
                }
                "createdAt" => {
                    front.created_at = value.as_str().and_then(read_timestamp);
                    None
                }
                "updatedAt" => {
                    front.updated_at = value.as_str().and_then(read_timestamp);
                    None
                }
                "renamedFrom" => {
                    front.renamed_from = value.as_str().map(str::to_owned);
                    None
                }
                "renamedFromVersion" => {
                    if let Version::Valid(version) = value.version() {
                        front.renamed_from_version = Some(version);
                    }
                    None
                }
                "kind" => keyword(FieldName::Kind),
                "type" => keyword(FieldName::Type),
                "importance" => keyword(FieldName::Importance),
                "ttl" => keyword(FieldName::Ttl),
                "key" => field(FieldName::Key),
                "source" => field(FieldName::Source),
                "scope" => field(FieldName::Scope),
                _ => {
                    unknown.push((key, value));
                    None
                }
            };
            if let Some(value) = set {
                front.fields.set(value);
            }
        }
        (front, unknown)
    }

    /// The entry these fields make with `content`; missing timestamps are the file's `mtime`. No unknown keys: see
    /// [`Unknown::into_extra`].
    pub(crate) fn into_entry(self, id: MemoryId, content: String, mtime: Timestamp) -> MemoryEntry {
        let version = match (&self.renamed_from, self.renamed_from_version) {
            (Some(from), Some(version)) if from == id.as_str() => version,
            _ => self.version.unwrap_or(1),
        };
        MemoryEntry {
            id,
            version,
            created_at: self.created_at.unwrap_or(mtime),
            updated_at: self.updated_at.unwrap_or(mtime),
            content,
            fields: self.fields,
            extra: Extra::default(),
        }
    }
}

/// A frontmatter `version` as read.
enum Version {
    /// 1 to [`MAX_VERSION`].
    Valid(u64),
    /// An integer above [`MAX_VERSION`], as written: the file is refused, never read with another version.
    OverCap(String),
    /// Anything else (`banana`, `0`, `-3`, `1.5`): falls back to 1.
    Malformed,
}

fn integer_version(n: u64) -> Version {
    match n {
        0 => Version::Malformed,
        n if n <= MAX_VERSION => Version::Valid(n),
        n => Version::OverCap(n.to_string()),
    }
}

/// A version written as decimal digits without a leading zero (a quoted string of the canonical form).
fn canonical_version(text: &str) -> Version {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && !text.starts_with('0');
    if !digits {
        return Version::Malformed;
    }
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_VERSION => Version::Valid(n),
        _ => Version::OverCap(text.to_owned()),
    }
}

/// Any RFC 3339 timestamp, kept to the millisecond: the precision it is written back with, so that reading a
/// hand-written `…00.0001Z` and writing it gives back the same entry. The usual shapes are read without the general
/// parser.
fn read_timestamp(text: &str) -> Option<Timestamp> {
    fast_timestamp(text).or_else(|| Timestamp::parse(text).ok().map(Timestamp::truncated_to_millis))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::render_entry_file;
    use crate::yaml_lines::is_ttl_shape;
    use memory_entry::{Importance, Key, Kind, MemoryType, ScopeRef, Source, Ttl, TtlUnit};
    use memory_id::parse_memory_id;
    use proptest::prelude::*;
    use serde_json::Map;

    fn id() -> MemoryId {
        parse_memory_id("shared:t").unwrap()
    }

    /// Found by the `frontmatter_parse` fuzz target: a plain value ending in a multi-byte character was cut at a
    /// byte position inside it.
    #[test]
    fn ttl_shape_takes_any_utf8() {
        for text in ["", "d", "0d", "00˥", "2026-11-21T10:00:00.00˥", "9˥", "ä", "90d", "7w"] {
            let expected = matches!(text, "90d" | "7w");
            assert_eq!(is_ttl_shape(text), expected, "{text:?}");
        }
        let file = "---\nkind: fact\nscope: 90˥\nkey: 12ü\n---\nbody\n";
        let parsed = parse_entry_file(id(), file.as_bytes(), mtime());
        assert_eq!(parsed.entry.content, "body\n");
    }

    fn mtime() -> Timestamp {
        Timestamp::parse("2020-01-02T03:04:05.006Z").unwrap()
    }

    fn arb_timestamp() -> impl Strategy<Value = Timestamp> {
        // Years 1 to 9999, whole milliseconds.
        (-62_135_596_800_000_i64..253_402_300_799_999).prop_map(|ms| Timestamp::from_unix_millis(ms).unwrap())
    }

    fn arb_ttl() -> impl Strategy<Value = Ttl> {
        (
            1u64..100_000,
            prop::sample::select(vec![
                TtlUnit::Seconds,
                TtlUnit::Minutes,
                TtlUnit::Hours,
                TtlUnit::Days,
                TtlUnit::Weeks,
            ]),
        )
            .prop_map(|(amount, unit)| Ttl::new(amount, unit).unwrap())
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-zA-Z][a-zA-Z0-9_./-]{0,12}",
            prop::sample::select(vec![
                "null",
                "Null",
                "true",
                "no",
                "~",
                " ",
                "a: b",
                "- x",
                "#c",
                "'q'",
                "\"",
                "\\",
                "---",
                "1e3",
                "0x10",
                ".inf",
                "2026-01-01",
                "\u{85}",
                "\u{2028}",
                "\u{feff}x",
                "é",
                "a\r\nb",
            ])
            .prop_map(str::to_owned),
        ]
    }

    prop_compose! {
        fn arb_entry()(
            kind in prop::sample::select(Kind::ALL.to_vec()),
            version in 1u64..=MAX_VERSION,
            created_at in arb_timestamp(),
            updated_at in arb_timestamp(),
            content in prop_oneof![any::<String>(), "(---\r?\n|[a-z ]{0,5}\r?\n|\r\n|---)*"],
            memory_type in prop::option::of(prop::sample::select(MemoryType::ALL.to_vec())),
            key in prop::option::of(arb_text()),
            importance in prop::sample::select(Importance::ALL.to_vec()),
            source in prop::option::of(arb_text()),
            scope in prop::option::of(arb_text()),
            ttl in prop::option::of(arb_ttl()),
        ) -> MemoryEntry {
            let fields = Fields {
                kind,
                memory_type,
                key: key.and_then(|k| Key::parse(&k).ok()),
                importance,
                source: source.and_then(|s| Source::parse(&s).ok()),
                scope: scope.and_then(|s| ScopeRef::parse(&s).ok()),
                ttl,
            };
            MemoryEntry { id: id(), version, created_at, updated_at, content, fields, extra: Extra::default() }
        }
    }

    /// Lines as people write frontmatter by hand: the known keys and others, plain and quoted values of every
    /// shape the line reader must either read exactly or leave alone, block lists and nested mappings below a
    /// `key:` line, comments, blank lines, indentation.
    fn hand_written_line() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "kind",
            "version",
            "createdAt",
            "updatedAt",
            "type",
            "key",
            "importance",
            "source",
            "scope",
            "ttl",
            "id",
            "owner",
            "tags",
            "_x",
            "a-b",
            "Title",
            "meta",
            "true",
            "null",
        ]);
        prop_oneof![
            6 => (key.clone(), value_text()).prop_map(|(k, v)| format!("{k}: {v}")),
            2 => (key.clone(), block_list_text()).prop_map(|(k, v)| format!("{k}:{v}")),
            3 => (key, nested_map_text()).prop_map(|(k, v)| format!("{k}:{v}")),
            1 => prop::sample::select(vec![
                "# a comment", "  # indented comment", "", "   ", "  nested: x", "- item", "key:", "\tx: 1",
                "# a\rb: 1", "  - stray",
            ])
            .prop_map(str::to_owned),
        ]
    }

    /// Values of a `key: value` line, of every shape the line reader must either read exactly or leave alone.
    fn value_text() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "fact",
                "decision",
                "banana",
                "3",
                "0",
                "007",
                "9007199254740992",
                "18446744073709551616",
                "-1",
                "1.5",
                "1e3",
                "0x10",
                "yes",
                "No",
                "null",
                "~",
                "",
                "inf",
                ".nan",
                "90d",
                "0s",
                "soon",
                "2026-11-29T10:00:00Z",
                "2026-11-29T10:00:00.123456+02:00",
                "2026-11-29",
                "2026-11-29 10:00:00",
                "12:30",
                "https://x.y/z",
                "a:b",
                "x:",
                "c++",
                "feat-x",
                "/abs/path",
                "\"quoted value\"",
                "\"esc \\\"q\\\" \\u00e9 \\n\"",
                "\"bad \\x41\"",
                "'single'",
                "'it''s'",
                "\"unterminated",
                "[a, b]",
                "{a: 1}",
                "&a x",
                "*a",
                "!tag x",
                "x # comment",
                "\"x\" # comment",
                "x#no",
                "|",
                ">",
                "é",
                "two words",
            ])
            .prop_map(str::to_owned),
            "[a-z0-9:/._+-]{1,8}",
            phrase(),
            flow_list_text(),
        ]
    }

    /// The lines after `meta:`: a head (nothing, spaces or a comment), then the lines of a nested mapping at one
    /// indentation — `key: value` and `key:` lines, mostly with values the line reader reads, blank lines and
    /// comments at any indentation — and, often enough, what makes it something else: a line indented more or less
    /// (mixed indentation, deeper nesting, a continuation), a duplicate key (the keys are few), `- item` lines
    /// before or after the keys, a key that is not plain, a tab.
    fn nested_map_text() -> impl Strategy<Value = String> {
        let nested_key = prop_oneof![
            8 => prop::sample::select(vec!["owner", "reviewed", "a", "kind", "tags", "x-y", "_k", "updatedAt"]),
            1 => prop::sample::select(vec![
                "true", "y", "No", "null", "NULL", "\"q\"", "'q'", "a b", "1", "-k", "? k", "k:",
            ]),
        ];
        let good_value = prop::sample::select(vec![
            "someone",
            "2026-10-03",
            "2026-10-03T10:07:00+02:00",
            "Note 7",
            "12",
            "false",
            "~",
            "[a, b]",
            "[]",
            "'q r'",
            "\"s\" # c",
            "x # comment",
            "\"\\x7f\"",
            "[\"\\x9f\"]",
        ])
        .prop_map(str::to_owned);
        let line = prop_oneof![
            6 => (nested_key.clone(), good_value).prop_map(|(k, v)| (format!("{k}: {v}"), true)),
            1 => (nested_key.clone(), value_text()).prop_map(|(k, v)| (format!("{k}: {v}"), true)),
            1 => (nested_key, prop::sample::select(vec!["", " ", "  # c", "#c"]))
                .prop_map(|(k, v)| (format!("{k}:{v}"), true)),
            2 => prop::sample::select(vec!["", "   ", "# c", "  # c", "      # deep comment"])
                .prop_map(|l| (l.to_owned(), false)),
            1 => prop::sample::select(vec![
                "- x", "- 'y'", "deeper: x", "continued words", "-", "\tt: 1", "k:\tv", "k: {a: 1}",
            ])
            .prop_map(|l| (l.to_owned(), true)),
        ];
        (
            prop::sample::select(vec!["", " ", "   # c"]),
            prop::sample::select(vec![1usize, 2, 2, 2, 4]),
            prop::collection::vec(
                (line, prop::sample::select(vec![0isize, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, -1])),
                1..6,
            ),
        )
            .prop_map(|(head, indent, lines)| {
                let mut text = head.to_owned();
                for ((line, indented), shift) in lines {
                    text.push('\n');
                    if indented {
                        text.push_str(&" ".repeat(indent.saturating_add_signed(shift)));
                    }
                    text.push_str(&line);
                }
                text
            })
    }

    /// Frontmatter of these lines: where the line reader answers, the YAML parser gives the same mapping, and every
    /// value kept writes back as itself.
    fn agrees_with_the_yaml_parser(lines: &[String]) -> Result<(), TestCaseError> {
        let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        if let Some(map) = read_lines_map(&text) {
            let yaml = yaml::parse_value(&text);
            prop_assert!(yaml.is_ok(), "the line reader accepted what YAML refuses:\n{}", text);
            let yaml = match yaml.unwrap() {
                Value::Null => Value::Object(Map::new()),
                other => other,
            };
            prop_assert_eq!(&Value::Object(map.clone()), &yaml, "\n{}", text);
            for (key, value) in &map {
                prop_assert!(writes_back(key, value), "{}: {} does not write back", key, value);
            }
        }
        Ok(())
    }

    /// A line of frontmatter where nested mappings are common: mostly a nested mapping (under a key of few, so
    /// that a top-level duplicate happens too), or a `key: value` line the line reader reads, or any hand-written
    /// line.
    fn nested_document_line() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec!["meta", "kind", "tags", "title"]);
        let value =
            prop::sample::select(vec!["Note 7", "decision", "[a, b]", "2026-10-03T10:07:00+02:00", "3"]);
        prop_oneof![
            4 => (key.clone(), nested_map_text()).prop_map(|(k, v)| format!("{k}:{v}")),
            2 => (key, value).prop_map(|(k, v)| format!("{k}: {v}")),
            1 => hand_written_line(),
        ]
    }

    /// Words people write, and words YAML reads otherwise (indicators, numbers, booleans, separators).
    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-zA-Z][a-z0-9]{0,5}",
            1 => "[0-9]{1,4}",
            2 => prop::sample::select(vec![
                "x", "Note", "12", "1.5", "1e3", "0x1", ".5", "true", "True", "tRue", "yes", "no", "y", "N", "on",
                "null", "NULL", "~", "é", "dữ", "liệu", "a:b", "a:", ":", "#", "#x", "-", "-x", "?", "?x", "&a", "*a",
                "!", "x!", "%", "@", "`", "'", "it's", "\"", "(x)", "x,", ",", "[y]", "{z}", "|", ">", "2026-11-29",
                "2026-11-29T10:00:00Z", "90d", "\\", "x\u{85}", "x\u{2028}y", "\u{a0}", "\u{301}", "½",
            ])
            .prop_map(str::to_owned),
        ]
    }

    /// Several words on one line, separated by one or more spaces, maybe with trailing spaces or a comment.
    fn phrase() -> impl Strategy<Value = String> {
        (
            prop::collection::vec((word(), prop::sample::select(vec![" ", " ", "  "])), 1..5),
            prop::sample::select(vec!["", " ", "  # c", " #c", "#c"]),
        )
            .prop_map(|(words, tail)| {
                let mut text: String = words.iter().map(|(w, sep)| format!("{w}{sep}")).collect();
                text.truncate(text.trim_end().len());
                text.push_str(tail);
                text
            })
    }

    /// `[…]` lists of words, phrases and quoted strings, well formed or not.
    fn flow_list_text() -> impl Strategy<Value = String> {
        let item = prop_oneof![
            3 => word(),
            1 => phrase(),
            1 => prop::sample::select(vec![
                "'q r'", "\"s\"", "\"t\\\"u\"", "''", "", " ", "[a]", "a: b", "\"\\x85\"", "\"\\u009f\"",
            ])
            .prop_map(str::to_owned),
        ];
        (
            prop::collection::vec(item, 0..4),
            prop::sample::select(vec![", ", ",", " , ", ",  "]),
            prop::sample::select(vec!["]", ",]", " ]", "] # c", "]x", ""]),
        )
            .prop_map(|(items, sep, close)| format!("[{}{close}", items.join(sep)))
    }

    /// The lines after `key:`: a comment, then `- item` lines at some indentation (sometimes a wrong one).
    fn block_list_text() -> impl Strategy<Value = String> {
        let item = prop_oneof![
            3 => word(),
            2 => phrase(),
            1 => prop::sample::select(vec![
                "'q'", "\"s\" # c", "[a, b]", "a: b", "- x", "", "# c", "\"\\x7f\"", "\"\\u00e9\"",
            ])
            .prop_map(str::to_owned),
        ];
        (
            prop::sample::select(vec!["", " ", " # c"]),
            prop::sample::select(vec![0usize, 2, 3]),
            prop::collection::vec(
                (item, prop::sample::select(vec![0usize, 0, 0, 1, 2]), any::<bool>()),
                0..4,
            ),
        )
            .prop_map(|(head, indent, items)| {
                let mut text = head.to_owned();
                for (item, shift, blank) in items {
                    if blank {
                        text.push('\n');
                    }
                    text.push_str(&format!("\n{}- {item}", " ".repeat(indent + shift)));
                }
                text
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Canonical output reads back identically, through the line reader and through the YAML parser.
        #[test]
        fn canonical_output_reads_back_through_both_readers(entry in arb_entry()) {
            let text = render_entry_file(&entry);
            let (frontmatter, _) = split(text.as_bytes());
            let frontmatter = std::str::from_utf8(frontmatter.unwrap()).unwrap();
            let lines = read_lines_map(frontmatter);
            prop_assert!(lines.is_some(), "the line reader refused canonical frontmatter:\n{}", frontmatter);
            let yaml = yaml::parse_value(frontmatter).unwrap();
            prop_assert_eq!(Value::Object(lines.clone().unwrap()), yaml.clone());
            let parsed = parse_entry_file(id(), text.as_bytes(), mtime());
            prop_assert_eq!(&parsed.entry, &entry);
            prop_assert_eq!(parsed.frontmatter, FrontmatterStatus::Present);
            prop_assert!(!parsed.lossy_utf8);
        }

        /// Wherever the line reader answers, it answers exactly what the YAML parser does: the same mapping, so the
        /// same entry; and every value it keeps writes back as itself.
        #[test]
        fn the_line_reader_agrees_with_the_yaml_parser(lines in prop::collection::vec(hand_written_line(), 0..8)) {
            agrees_with_the_yaml_parser(&lines)?;
        }

        /// The same, on frontmatter where nested mappings are most of the lines, so that many are read.
        #[test]
        fn the_line_reader_agrees_with_the_yaml_parser_on_nested_mappings(
            lines in prop::collection::vec(nested_document_line(), 1..5),
        ) {
            agrees_with_the_yaml_parser(&lines)?;
        }

        /// Whatever the bytes, reading never panics, and the content is a suffix of the file.
        #[test]
        fn any_bytes_read(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let parsed = parse_entry_file(id(), &bytes, mtime());
            if !parsed.lossy_utf8 {
                prop_assert!(bytes.ends_with(parsed.entry.content.as_bytes()));
            }
        }
    }

    #[test]
    fn the_line_reader_reads_hand_written_frontmatter() {
        let text = "# written by hand\nkind: fact\nversion: 3\ncreatedAt: 2026-11-29T10:00:00Z   # UTC\n\n\
                    updatedAt: \"2026-11-30T10:00:00+02:00\"\nkey: 'db-choice'\nowner: ana\ncount: 12\n";
        let map = read_lines_map(text).unwrap();
        assert_eq!(Value::Object(map.clone()), yaml::parse_value(text).unwrap());
        let (front, unknown) = Front::interpret(map);
        assert_eq!((front.fields.kind, front.version), (Kind::Fact, Some(3)));
        assert_eq!(front.updated_at.unwrap().to_string(), "2026-11-30T08:00:00.000Z");
        assert_eq!(front.fields.key.unwrap().as_str(), "db-choice");
        assert_eq!(unknown.len(), 2);
    }

    #[test]
    fn the_line_reader_reads_lists_phrases_and_nulls() {
        for text in [
            "key: null\n",
            "key:\n",
            "key: # nothing\n",
            "key: [a]\n",
            "tags: [a, 'b c', \"d\", 3, true, ~]\nnext: 1\n",
            "tags: []\n",
            "tags:\n  - a\n  - \"b\"  # quoted\n\n  - two words\nnext: x\n",
            "tags:\n- a\n- b\n",
            "title: Note 12, about things (draft)\n",
            "key: two words\n",
            "key: é\n",
            "key: dữ liệu\n",
            "date: 2026-11-29\n",
            "draft: false\n",
        ] {
            let map = read_lines_map(text).unwrap_or_else(|| panic!("{text:?}"));
            let yaml = match yaml::parse_value(text).unwrap() {
                Value::Null => Value::Object(Map::new()),
                other => other,
            };
            assert_eq!(Value::Object(map), yaml, "{text:?}");
        }
    }

    #[test]
    fn the_line_reader_leaves_what_it_is_not_sure_of() {
        for text in [
            "key: yes\n",
            "key: 0x10\n",
            "key: 1e3\n",
            "key: 007\n",
            "key: &a x\n",
            "key: !t x\n",
            "  key: x\n",
            "key: x\nkey: y\n",
            "key: \"a\\e\"\n",
            "key: x:\n",
            "key: x: y\n",
            "key: \"x\"#c\n",
            "\"key\": x\n",
            "key:\tx\n",
            "key: [a: b]\n",
            "key: [a, [b]]\n",
            "key: [a\n",
            "key:\n  - x\n    - y\n",
            "key:\n  -\n",
            "key: x\n  continued\n",
            "# comment\rkey: x\n",
            // A null key: YAML refuses it (keys are strings).
            "null: x\n",
            "meta:\n  NULL: x\n",
            // Nesting deeper than one level, or a list in a nested mapping.
            "meta:\n  a:\n    b: x\n",
            "meta:\n  a:\n  - x\n",
            "meta:\n  a:\n    - x\n",
            "meta:\n  a: [x, [y]]\n",
            "meta:\n  a: {b: 1}\n",
            // Mixed indentation, continuation lines, items after keys.
            "meta:\n  a: x\n    b: y\n",
            "meta:\n  a: x\n b: y\n",
            "meta:\n  a: x\n  continued\n",
            "meta:\n  a: x\n\n    continued\n",
            "meta:\n  a: x\n  - y\n",
            "meta:\n  a: x\n- y\n",
            "meta:\n  - y\n  a: x\n",
            // A duplicate nested key, a key that is not plain, tabs, what the top level refuses too.
            "meta:\n  a: 1\n  a: 2\n",
            "meta:\n  \"a\": x\n",
            "meta:\n  a b: x\n",
            "meta:\n  ? a\n",
            "meta:\n\ta: x\n",
            "meta:\n  a:\tx\n",
            "meta:\n  a:x\n",
            "meta:\n  a: yes\n",
            "meta:\n  a: x: y\n",
            "meta: x\n  a: y\n",
            // A decoded character JSON notation would write raw, and YAML does not read raw, in a list or a nested
            // mapping (both written back as JSON).
            "tags: [\"\\x7f\"]\n",
            "tags:\n  - \"\\u009f\"\n",
            "meta:\n  a: \"\\x7f\"\n",
        ] {
            assert_eq!(read_lines(text), None, "{text:?}");
        }
    }

    /// What the line reader refuses of a nested mapping because YAML does: the general parser says so too.
    #[test]
    fn the_yaml_parser_refuses_these_nested_mappings_too() {
        for text in [
            "meta:\n  a: 1\n  a: 2\n",
            "meta:\n  null: x\n",
            "meta:\n  a: x\n b: y\n",
            "meta:\n  a: x\n  continued\n",
            "meta:\n  a: x\n  - y\n",
            "meta:\n  a: x\n- y\n",
            "meta:\n  a:\n- x\n",
        ] {
            assert!(yaml::parse_value(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn the_line_reader_reads_nested_mappings() {
        let example = "title: Note 7\nkind: decision\nmeta:\n  owner: someone\n  reviewed: 2026-10-03\n\
                       updatedAt: 2026-10-03T10:07:00+02:00\n";
        let expected = serde_json::json!({
            "title": "Note 7",
            "kind": "decision",
            "meta": {"owner": "someone", "reviewed": "2026-10-03"},
            "updatedAt": "2026-10-03T10:07:00+02:00",
        });
        assert_eq!(Value::Object(read_lines_map(example).unwrap()), expected);
        assert_eq!(yaml::parse_value(example).unwrap(), expected);
        let keys: Vec<&str> = expected["meta"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["owner", "reviewed"], "file order");

        let spaced = "meta:   # comment\n  owner: someone # comment\n\n  # a comment\n# at column 0\n\
                      \x20     # deeper\n  tags: [a, 'b c', 3]\n  none:\n  quiet: # nothing\n  q: \"x\"\nnext: 1\n";
        let expected = serde_json::json!({
            "meta": {"owner": "someone", "tags": ["a", "b c", 3], "none": null, "quiet": null, "q": "x"},
            "next": 1,
        });
        assert_eq!(Value::Object(read_lines_map(spaced).unwrap()), expected);
        assert_eq!(yaml::parse_value(spaced).unwrap(), expected);

        for text in [
            "key:\n  nested: x\n",
            "meta:\n a: 1\n",
            "meta:\n    a: x\n    b: z\nother:\n  - item\n",
            "meta:\n  a: x\n\n",
            "meta:\n  a:\n",
            "meta:\n  a:\nnext: x\n",
            "a:\n  b: 1\nc:\n  b: 2\n",
            "meta:\n  kind: fact\nkind: decision\n",
            "meta:\n  true: x\n  y: z\n  No: 2026-10-03T10:07:00Z\n",
            "meta:\r\n  a: x\r\n",
            "tags:\n- a\nmeta:\n  a: b\n",
            "meta:\n  a: \"\\u00e9\"\n",
        ] {
            let map = read_lines_map(text).unwrap_or_else(|| panic!("{text:?}"));
            assert_eq!(Value::Object(map), yaml::parse_value(text).unwrap(), "{text:?}");
        }
    }

    /// The entry and unknown keys `read_front` gives, and those the YAML parser's path gives for the same
    /// frontmatter.
    fn through_both_readers(text: &str) -> ((Front, Extra), (Front, Extra)) {
        let (front, status, unknown) = read_front(Some(text.as_bytes()));
        assert_eq!(status, FrontmatterStatus::Present, "{text:?}");
        assert!(matches!(unknown, Unknown::Lines(_)), "not read by the line reader: {text:?}");
        let Ok(Value::Object(map)) = yaml::parse_value(text) else { panic!("{text:?}") };
        let (yaml_front, yaml_unknown) = Front::interpret(map);
        ((front, unknown.into_extra()), (yaml_front, Unknown::Yaml(yaml_unknown).into_extra()))
    }

    #[test]
    fn an_entry_with_a_nested_mapping_reads_as_through_the_yaml_parser() {
        let file = "---\ntitle: Note 7\nkind: decision\nmeta:\n  owner: someone\n  reviewed: 2026-10-03\n\
                    updatedAt: 2026-10-03T10:07:00+02:00\n---\nBody.\n";
        let (frontmatter, _) = split(file.as_bytes());
        let frontmatter = std::str::from_utf8(frontmatter.unwrap()).unwrap();
        let (lines, general) = through_both_readers(frontmatter);
        assert_eq!(lines, general);

        let parsed = parse_entry_file(id(), file.as_bytes(), mtime());
        let extra = Extra::new(
            [
                ("title".to_owned(), Value::from("Note 7")),
                ("meta".to_owned(), serde_json::json!({"owner": "someone", "reviewed": "2026-10-03"})),
            ]
            .into_iter()
            .collect(),
        );
        let expected = MemoryEntry {
            id: id(),
            version: 1,
            created_at: mtime(),
            updated_at: Timestamp::parse("2026-10-03T08:07:00Z").unwrap(),
            content: "Body.\n".to_owned(),
            fields: Fields { kind: Kind::Decision, ..Fields::default() },
            extra,
        };
        assert_eq!(parsed.entry, expected);
        assert_eq!(parsed.frontmatter, FrontmatterStatus::Present);

        // Written back, the mapping is one line of JSON notation, which reads back the same.
        let written = render_entry_file(&parsed.entry);
        assert!(
            written
                .contains("title: \"Note 7\"\nmeta: {\"owner\":\"someone\",\"reviewed\":\"2026-10-03\"}\n")
        );
        assert_eq!(parse_entry_file(id(), written.as_bytes(), mtime()).entry, expected);
    }

    /// A known field given as a nested mapping falls back as it does when the YAML parser gives the mapping.
    #[test]
    fn a_known_field_given_as_a_nested_mapping_falls_back_as_before() {
        for text in [
            "kind:\n  a: fact\n",
            "version:\n  a: 3\n",
            "createdAt:\n  at: 2026-10-03T10:07:00Z\n",
            "updatedAt:\n  at: 2026-10-03T10:07:00Z\n",
            "type:\n  a: b\n",
            "key:\n  a: b\n",
            "importance:\n  a: high\n",
            "source:\n  a: b\n",
            "scope:\n  a: b\n",
            "ttl:\n  a: 90d\n",
            "id:\n  a: b\n",
            "renamedFrom:\n  a: b\nrenamedFromVersion:\n  a: 2\n",
        ] {
            let (lines, general) = through_both_readers(text);
            assert_eq!(lines, general, "{text:?}");
            assert_eq!(lines.0.fields, Fields::default(), "{text:?}");
        }
        let (lines, _) = through_both_readers("tags:\n  a: b\nkind: fact\n");
        assert_eq!(lines.0.fields.kind, Kind::Fact);
        assert_eq!(lines.1.iter().collect::<Vec<_>>(), [("tags", &serde_json::json!({"a": "b"}))]);
    }

    /// A list item YAML does not read raw (U+007F), decoded from an escape: the line reader leaves it to the YAML
    /// parser, whose path drops the key, since written back as JSON it would not read the same.
    #[test]
    fn a_list_or_mapping_that_would_not_write_back_is_dropped() {
        for text in ["tags: [\"\\x7f\"]\n", "tags:\n  - \"\\x9f\"\n", "meta:\n  a: \"\\uFFFE\"\n"] {
            let file = format!("---\n{text}---\n");
            let parsed = parse_entry_file(id(), file.as_bytes(), mtime());
            assert_eq!(parsed.frontmatter, FrontmatterStatus::Present, "{text:?}");
            assert_eq!(parsed.entry.extra, Extra::default(), "{text:?}");
        }
    }

    /// The line reader's pairs as a mapping, as the YAML parser gives it.
    fn read_lines_map(text: &str) -> Option<Map<String, Value>> {
        read_lines(text).map(|pairs| {
            pairs.into_iter().map(|(key, value)| (key.to_owned(), FrontValue::into_value(value))).collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The fast timestamp reader agrees with the general one wherever it answers.
        #[test]
        fn fast_timestamps_agree_with_the_general_parser(
            date in "[0-9]{4}-[0-1][0-9]-[0-3][0-9]",
            time in "[0-2][0-9]:[0-6][0-9]:[0-6][0-9]",
            fraction in prop::option::of("[0-9]{1,11}"),
            zone in prop_oneof![Just("Z".to_owned()), "[+-][0-2][0-9]:[0-6][0-9]", Just("z".to_owned())],
        ) {
            let text = format!("{date}T{time}{}{zone}", fraction.map(|f| format!(".{f}")).unwrap_or_default());
            if let Some(fast) = fast_timestamp(&text) {
                let general = Timestamp::parse(&text);
                prop_assert!(general.is_ok(), "{} read fast but not by the general parser", text);
                prop_assert_eq!(fast, general.unwrap().truncated_to_millis(), "{}", text);
            }
        }
    }

    #[test]
    fn fast_timestamps_cover_the_usual_shapes() {
        for text in [
            "2026-11-29T10:00:00Z",
            "2026-11-29T10:00:00.5Z",
            "2026-11-29T10:00:00.123Z",
            "2026-11-29T10:00:00.123456789+02:00",
            "2026-11-29T10:00:00-05:30",
        ] {
            assert_eq!(
                fast_timestamp(text),
                Some(Timestamp::parse(text).unwrap().truncated_to_millis()),
                "{text}"
            );
        }
        assert_eq!(fast_timestamp("2026-02-30T10:00:00Z"), None);
        assert_eq!(fast_timestamp("2026-11-29 10:00:00Z"), None);
    }
}
