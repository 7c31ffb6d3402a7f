//! The file format of one entry: YAML frontmatter between `---` lines, then the content, byte for byte.
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
//!   is a valid [`Key`], [`Source`] or [`ScopeRef`]; anything else (a list, `null`, a key with a control
//!   character or over 200 bytes) → none;
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
//! Most frontmatter is the YAML people write by hand: one `key: scalar` per line, in any order, plain or quoted,
//! with comments and blank lines. A line reader reads that subset without the general YAML parser (which costs
//! far more per file); whatever it cannot be sure of (indentation, flow or block collections, tags, anchors,
//! escapes it does not know, a plain scalar YAML could read as a number, a boolean or null) it leaves to the YAML
//! parser. Where the line reader answers, its answer is exactly the YAML parser's (a property test checks it).
//!
//! # Writing
//!
//! [`render_entry_file`] writes the canonical form: `---\n`, the keys `kind`, `version`, `createdAt`,
//! `updatedAt`, `type`, `key`, `importance`, `source`, `scope`, `ttl` (optional ones only when set), the unknown
//! keys in file order, `---\n`, then the content. Strings are plain when that is unambiguous (an ASCII letter,
//! then letters, digits, `-`, `_`, `.`, `/`, and not a YAML keyword such as `null`, `true` or `no`) and
//! double-quoted with escapes otherwise; unknown keys that are not strings are written in JSON notation (a YAML
//! flow collection), so that everything reads back identically.
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

use std::fmt::Write as _;

use memory_entry::{Extra, FieldName, FieldValue, Fields, MAX_VERSION, MemoryEntry, Timestamp};
use memory_id::MemoryId;
use serde_json::{Map, Value};

use crate::yaml;

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

/// Reads the bytes of an entry file. Never fails: see the module docs for the fallbacks.
///
/// `id` is the ID the file's path maps to; `mtime` is the file's modification time, used for missing timestamps.
pub fn parse_entry_file(id: MemoryId, bytes: &[u8], mtime: Timestamp) -> ParsedEntryFile {
    let (frontmatter, content) = split(bytes);
    // SIMD validation of valid text; only invalid text takes the slow, lossy path.
    let (content, lossy_utf8) = match simdutf8::basic::from_utf8(content) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (String::from_utf8_lossy(content).into_owned(), true),
    };
    let (front, status) = match frontmatter {
        None => (Front::default(), FrontmatterStatus::Missing),
        // Longer frontmatter is broken frontmatter: reading it would cost more than it is worth.
        Some(raw) if raw.len() > yaml::MAX_BYTES => (Front::default(), FrontmatterStatus::Broken),
        Some(raw) => match std::str::from_utf8(raw).ok().and_then(read_mapping) {
            Some((map, checked)) => (Front::interpret(map, checked), FrontmatterStatus::Present),
            None => (Front::default(), FrontmatterStatus::Broken),
        },
    };
    let entry = MemoryEntry {
        id,
        version: front.version.unwrap_or(1),
        created_at: front.created_at.unwrap_or(mtime),
        updated_at: front.updated_at.unwrap_or(mtime),
        content,
        fields: front.fields,
        extra: Extra::new(front.extra),
    };
    ParsedEntryFile { entry, frontmatter: status, lossy_utf8, version_over_cap: front.version_over_cap }
}

/// Splits a file into its frontmatter (between the `---` lines) and its content.
fn split(bytes: &[u8]) -> (Option<&[u8]>, &[u8]) {
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

/// The frontmatter as a mapping: the line reader's when it is sure, else the YAML parser's. `None` when it is not a
/// mapping the reader accepts. The flag says whether unknown keys are already known to write back (the line
/// reader's values always do).
fn read_mapping(text: &str) -> Option<(Map<String, Value>, bool)> {
    if let Some(map) = read_lines(text) {
        return Some((map, true));
    }
    match yaml::parse_value(text).ok()? {
        Value::Null => Some((Map::new(), false)),
        Value::Object(map) => Some((map, false)),
        _ => None,
    }
}

/// The frontmatter fields as read; `None` means missing or malformed (the fallbacks apply).
#[derive(Debug, Default, PartialEq)]
struct Front {
    fields: Fields,
    version: Option<u64>,
    created_at: Option<Timestamp>,
    updated_at: Option<Timestamp>,
    extra: Map<String, Value>,
    /// A `version` above [`MAX_VERSION`], as written.
    version_over_cap: Option<String>,
}

impl Front {
    /// What a mapping says, field by field, with the fallbacks of the module docs. `checked`: every value is known
    /// to write back as itself.
    fn interpret(map: Map<String, Value>, checked: bool) -> Front {
        let mut front = Front::default();
        for (key, value) in map {
            let field = |name: FieldName| match yaml_text(&value) {
                Some(text) => FieldValue::parse(name, &text).ok(),
                None => None,
            };
            let keyword =
                |name: FieldName| value.as_str().and_then(|text| FieldValue::parse(name, text).ok());
            let set = match key.as_str() {
                "id" => None,
                "version" => {
                    match yaml_version(&value) {
                        Version::Valid(version) => front.version = Some(version),
                        Version::OverCap(text) => front.version_over_cap = Some(text),
                        Version::Malformed => {}
                    }
                    None
                }
                "createdAt" => {
                    front.created_at = yaml_timestamp(&value);
                    None
                }
                "updatedAt" => {
                    front.updated_at = yaml_timestamp(&value);
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
                    if checked || writes_back(&key, &value) {
                        front.extra.insert(key, value);
                    } else {
                        // A value this crate cannot write back so that it reads the same (a float YAML readers
                        // write differently, a string a flow collection cannot hold): keeping it would change it on
                        // the next update, so it is dropped, as a broken field would be.
                        tracing::warn!("dropping a frontmatter key that cannot be written back");
                    }
                    None
                }
            };
            if let Some(value) = set {
                front.fields.set(value);
            }
        }
        front
    }
}

/// Whether the pair `key: value`, written as [`render_entry_file`] writes unknown keys, reads back the same.
fn writes_back(key: &str, value: &Value) -> bool {
    let mut line = String::new();
    push_extra(&mut line, key, value);
    match yaml::parse_value(&line) {
        Ok(Value::Object(back)) => back.len() == 1 && back.get(key) == Some(value),
        _ => false,
    }
}

/// Writes one unknown key: the key as a string, then a string value as a string and any other value in JSON
/// notation (a flow collection YAML reads as the same value).
fn push_extra(out: &mut String, key: &str, value: &Value) {
    push_string(out, key);
    out.push_str(": ");
    match value {
        Value::String(text) => push_string(out, text),
        other => out.push_str(&other.to_string()),
    }
    out.push('\n');
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

fn yaml_version(value: &Value) -> Version {
    match value {
        Value::Number(number) => match (number.as_u64(), number.as_f64()) {
            (Some(0), _) => Version::Malformed,
            (Some(n), _) if n <= MAX_VERSION => Version::Valid(n),
            (Some(n), _) => Version::OverCap(n.to_string()),
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
/// hand-written `…00.0001Z` and writing it gives back the same entry. The canonical form is read without the
/// general parser.
fn yaml_timestamp(value: &Value) -> Option<Timestamp> {
    let text = value.as_str()?;
    fast_timestamp(text).or_else(|| Timestamp::parse(text).ok().map(Timestamp::truncated_to_millis))
}

/// A scalar's text: a string as written, a number or boolean as its YAML text.
fn yaml_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

// ----- the line reader -----

/// Reads frontmatter written as one `key: scalar` per line (comments and blank lines allowed), giving exactly the
/// mapping the YAML parser would, or `None` when any line is something it is not sure of.
fn read_lines(text: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let trimmed = line.trim_start_matches(' ');
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.len() != line.len() {
            return None; // indentation: a nested value or a continuation
        }
        let (key, rest) = line.split_once(':')?;
        if !is_plain_key(key) {
            return None;
        }
        let value = read_scalar(rest.strip_prefix(' ')?)?;
        if map.insert(key.to_owned(), value).is_some() {
            return None; // a duplicate key: YAML refuses it
        }
    }
    Some(map)
}

/// A key written plain: an ASCII letter or `_`, then letters, digits, `_` and `-`.
fn is_plain_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The value after `key: `, up to an optional ` # comment`: a plain scalar of the sure kinds, or a quoted string.
fn read_scalar(rest: &str) -> Option<Value> {
    let rest = rest.trim_start_matches(' ');
    let (value, after) = match rest.as_bytes().first()? {
        b'"' => double_quoted(rest)?,
        b'\'' => single_quoted(rest)?,
        _ => {
            let end = rest.find(' ').unwrap_or(rest.len());
            (plain(&rest[..end])?, &rest[end..])
        }
    };
    // Only spaces may follow, then a comment, which YAML starts only after a space.
    let trimmed = after.trim_start_matches(' ');
    if trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < after.len()) {
        return Some(value);
    }
    None
}

/// A plain scalar the YAML parser reads as this exact string or integer, or `None` when it might read it otherwise.
fn plain(text: &str) -> Option<Value> {
    let bytes = text.as_bytes();
    let first = *bytes.first()?;
    if first.is_ascii_digit() {
        if bytes.iter().all(u8::is_ascii_digit) && (text == "0" || first != b'0') {
            return text.parse::<u64>().ok().map(Value::from);
        }
        return (is_ttl_shape(text) || is_timestamp_shape(text)).then(|| Value::String(text.to_owned()));
    }
    let sure = (first.is_ascii_alphabetic() || first == b'_' || first == b'/')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b':' | b'+'))
        && !text.ends_with(':')
        && !YAML_WORDS.iter().any(|word| text.eq_ignore_ascii_case(word));
    sure.then(|| Value::String(text.to_owned()))
}

/// `90d`: digits without a leading zero and a unit.
fn is_ttl_shape(text: &str) -> bool {
    let (digits, unit) = text.split_at(text.len() - 1);
    matches!(unit, "s" | "m" | "h" | "d" | "w")
        && !digits.is_empty()
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `2026-11-29T10:00:00Z`, `2026-11-29T10:00:00.123+02:00`: an RFC 3339 date-time, which YAML reads as a string.
fn is_timestamp_shape(text: &str) -> bool {
    let b = text.as_bytes();
    let digits =
        |range: std::ops::Range<usize>| b.get(range).is_some_and(|part| part.iter().all(u8::is_ascii_digit));
    let head = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !head {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return false;
        }
        rest = &fraction[len..];
    }
    rest == "Z" || {
        let z = rest.as_bytes();
        z.len() == 6
            && matches!(z[0], b'+' | b'-')
            && z[1..3].iter().all(u8::is_ascii_digit)
            && z[3] == b':'
            && z[4..6].iter().all(u8::is_ascii_digit)
    }
}

/// `"…"` with the escapes `\\ \" \/ \n \t \r`, `\xXX` and `\uXXXX`; returns the string and what follows the
/// closing quote.
fn double_quoted(rest: &str) -> Option<(Value, &str)> {
    let inner = &rest[1..];
    let mut out = String::new();
    let mut chars = inner.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((Value::String(out), &inner[at + 1..])),
            '\\' => {
                let decoded = match chars.next()?.1 {
                    '\\' => '\\',
                    '"' => '"',
                    '/' => '/',
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    // The canonical writer's escapes for characters YAML must not see raw.
                    hex @ ('x' | 'u') => {
                        let mut code = 0u32;
                        for _ in 0..if hex == 'x' { 2 } else { 4 } {
                            code = code * 16 + chars.next()?.1.to_digit(16)?;
                        }
                        char::from_u32(code)?
                    }
                    _ => return None,
                };
                out.push(decoded);
            }
            c if needs_escape(c) || c == '\t' => return None,
            c => out.push(c),
        }
    }
    None
}

/// `'…'` with `''` for a quote; returns the string and what follows the closing quote.
fn single_quoted(rest: &str) -> Option<(Value, &str)> {
    let inner = &rest[1..];
    let mut out = String::new();
    let mut chars = inner.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' if chars.peek().is_some_and(|(_, next)| *next == '\'') => {
                chars.next();
                out.push('\'');
            }
            '\'' => return Some((Value::String(out), &inner[at + 1..])),
            c if needs_escape(c) || c == '\t' => return None,
            c => out.push(c),
        }
    }
    None
}

/// `2026-11-29T22:33:13.123Z` exactly as written, built from its digits without the general RFC 3339 parser.
fn fast_timestamp(value: &str) -> Option<Timestamp> {
    let shaped = value.len() == 24
        && value.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            19 => b == b'.',
            23 => b == b'Z',
            _ => b.is_ascii_digit(),
        });
    if !shaped {
        return None;
    }
    let digits = |from: usize, to: usize| {
        value.as_bytes()[from..to].iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'))
    };
    let year = i32::from(digits(0, 4));
    if year < 1 {
        return None;
    }
    let month = time::Month::try_from(u8::try_from(digits(5, 7)).ok()?).ok()?;
    let date = time::Date::from_calendar_date(year, month, u8::try_from(digits(8, 10)).ok()?).ok()?;
    let at = time::Time::from_hms_milli(
        u8::try_from(digits(11, 13)).ok()?,
        u8::try_from(digits(14, 16)).ok()?,
        u8::try_from(digits(17, 19)).ok()?,
        digits(20, 23),
    )
    .ok()?;
    Some(Timestamp::from(date.with_time(at).assume_utc()))
}

// ----- writing -----

/// Words some YAML reader takes for something other than a string (null, booleans of YAML 1.1 and 1.2, special
/// floats), compared in lowercase.
const YAML_WORDS: &[&str] =
    &["null", "true", "false", "yes", "no", "on", "off", "y", "n", "inf", "nan", "infinity"];

/// Whether `text` can be written as a plain scalar and read back as the same string by any YAML reader.
fn is_plain_safe(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(first) = bytes.first() else { return false };
    first.is_ascii_alphabetic()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && !YAML_WORDS.iter().any(|word| text.eq_ignore_ascii_case(word))
}

/// Characters that must be escaped inside a double-quoted YAML string: those the YAML reader refuses or treats as
/// line breaks (besides tab, `\n` and `\r`, which get their own escapes).
fn needs_escape(c: char) -> bool {
    let code = u32::from(c);
    code < 0x20 || (0x7f..=0x9f).contains(&code) || matches!(code, 0x2028 | 0x2029 | 0xfeff | 0xfffe | 0xffff)
}

fn push_string(out: &mut String, text: &str) {
    if is_plain_safe(text) {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let code = u32::from(c);
                // `write!` to a `String` cannot fail.
                let _ =
                    if code < 0x100 { write!(out, "\\x{code:02X}") } else { write!(out, "\\u{code:04X}") };
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes an entry in the canonical form (see the module docs). `id` is not written: the path decides it.
///
/// Unknown keys are kept only when they read back the same (checked when the file is read), so what is written
/// here reads back as `entry`.
pub fn render_entry_file(entry: &MemoryEntry) -> String {
    let mut out = String::with_capacity(256 + entry.content.len());
    out.push_str("---\n");
    // `write!` to a `String` cannot fail.
    let _ = write!(
        out,
        "kind: {}\nversion: {}\ncreatedAt: {}\nupdatedAt: {}\n",
        entry.fields.kind, entry.version, entry.created_at, entry.updated_at
    );
    for value in entry.fields.values().filter(|value| value.name() != FieldName::Kind) {
        out.push_str(value.name().as_str());
        out.push_str(": ");
        match &value {
            FieldValue::Key(key) => push_string(&mut out, key.as_str()),
            FieldValue::Source(source) => push_string(&mut out, source.as_str()),
            FieldValue::Scope(scope) => push_string(&mut out, scope.as_str()),
            other => out.push_str(&other.text()),
        }
        out.push('\n');
    }
    for (key, value) in entry.extra.iter() {
        push_extra(&mut out, key, value);
    }
    out.push_str("---\n");
    out.push_str(&entry.content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_entry::{Importance, Key, Kind, MemoryType, ScopeRef, Source, Ttl, TtlUnit};
    use memory_id::parse_memory_id;
    use proptest::prelude::*;

    fn id() -> MemoryId {
        parse_memory_id("shared:t").unwrap()
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
    /// shape the line reader must either read exactly or leave alone, comments, blank lines, indentation.
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
        ]);
        let value = prop_oneof![
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
        ];
        prop_oneof![
            6 => (key, value).prop_map(|(k, v)| format!("{k}: {v}")),
            1 => prop::sample::select(vec!["# a comment", "  # indented comment", "", "   ", "  nested: x", "- item", "key:", "\tx: 1"]).prop_map(str::to_owned),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Canonical output reads back identically, through the line reader and through the YAML parser.
        #[test]
        fn canonical_output_reads_back_through_both_readers(entry in arb_entry()) {
            let text = render_entry_file(&entry);
            let (frontmatter, _) = split(text.as_bytes());
            let frontmatter = std::str::from_utf8(frontmatter.unwrap()).unwrap();
            let lines = read_lines(frontmatter);
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
            let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            if let Some(map) = read_lines(&text) {
                let yaml = yaml::parse_value(&text);
                prop_assert!(yaml.is_ok(), "the line reader accepted what YAML refuses:\n{}", text);
                let yaml = match yaml.unwrap() { Value::Null => Value::Object(Map::new()), other => other };
                prop_assert_eq!(&Value::Object(map.clone()), &yaml, "\n{}", text);
                for (key, value) in &map {
                    prop_assert!(writes_back(key, value), "{}: {} does not write back", key, value);
                }
            }
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
        let map = read_lines(text).unwrap();
        assert_eq!(Value::Object(map.clone()), yaml::parse_value(text).unwrap());
        let front = Front::interpret(map, true);
        assert_eq!((front.fields.kind, front.version), (Kind::Fact, Some(3)));
        assert_eq!(front.updated_at.unwrap().to_string(), "2026-11-30T08:00:00.000Z");
        assert_eq!(front.fields.key.unwrap().as_str(), "db-choice");
        assert_eq!(front.extra.len(), 2);
    }

    #[test]
    fn the_line_reader_leaves_what_it_is_not_sure_of() {
        for text in [
            "key: yes\n",
            "key: 0x10\n",
            "key: 1e3\n",
            "key: 007\n",
            "key: null\n",
            "key:\n",
            "key: [a]\n",
            "key: &a x\n",
            "key: !t x\n",
            "  key: x\n",
            "key: x\nkey: y\n",
            "key: \"a\\e\"\n",
            "key: x:\n",
            "key: two words\n",
            "key: \"x\"#c\n",
            "\"key\": x\n",
            "key: é\n",
            "key:\tx\n",
        ] {
            assert_eq!(read_lines(text), None, "{text:?}");
        }
    }
}
