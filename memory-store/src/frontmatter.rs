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
//! - missing frontmatter, or frontmatter that is not UTF-8, not YAML, or not a mapping (broken): kind `reference`,
//!   version 1, both timestamps from the file's mtime, importance `medium`, no typed fields, no unknown keys;
//! - a malformed field in otherwise good frontmatter falls back on its own, the other fields are kept:
//!   `kind` (missing, unknown or not a string) → `reference`; `version` (not a positive integer, e.g. `banana` or
//!   `0`) → 1; `createdAt`/`updatedAt` (missing or not an RFC 3339 timestamp) → the file's mtime; `importance`
//!   (e.g. `extreme`) → `medium`; `type` (unknown) → none; `ttl` (e.g. `soon`, `0s`) → none, so the entry does
//!   not expire; `key`, `source`, `scope` → a string as written, a number or boolean as its YAML text, anything
//!   else (a list, a mapping, `null`) → none. Free-text fields are not validated on read: a hand-written key with a
//!   control character is returned as written;
//! - `id:` is ignored and dropped (the path decides the ID, and writing a stale `id:` back would mislead);
//! - every other key is kept, in file order, in [`MemoryEntry::extra`], and written back after the known keys.
//!
//! A fallen-back field is written back with its fallback value when the entry is updated: what an update writes
//! is what a read returned. Broken frontmatter is likewise replaced by canonical frontmatter on update.
//!
//! Content that is not valid UTF-8 is read lossily (each invalid sequence becomes U+FFFD) so that one bad file
//! never makes a note or a search unreadable; [`ParsedEntryFile::lossy_utf8`] says so, and the Markdown store
//! refuses an update of such a file unless the update replaces the content, so that bytes it could not read are
//! never silently rewritten.
//!
//! # Writing
//!
//! [`render_entry_file`] writes the canonical form: `---\n`, the keys `kind`, `version`, `createdAt`,
//! `updatedAt`, `type`, `key`, `importance`, `source`, `scope`, `ttl` (optional ones only when set), the unknown
//! keys in file order, `---\n`, then the content. Strings are plain when that is unambiguous (an ASCII letter,
//! then letters, digits, `-`, `_`, `.`, `/`, and not a YAML keyword such as `null`, `true` or `no`) and
//! double-quoted with escapes otherwise, so that every string reads back identically.
//!
//! Reading has a fast path for this canonical form (simple `key: value` lines of the known keys) that does not go
//! through `serde_yaml`; anything else is parsed by `serde_yaml`. Both give the same entry for canonical input.
//!
//! ```
//! use memory_id::parse_memory_id;
//! use memory_store::{parse_entry_file, render_entry_file, FrontmatterStatus, Kind, Timestamp};
//!
//! let id = parse_memory_id("shared:team:onboarding").unwrap();
//! let mtime = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
//! let file = b"---\nkind: fact\nversion: 3\nimportance: extreme\nowner: ana\n---\nRead the README.\n";
//! let parsed = parse_entry_file(id, file, mtime);
//! assert_eq!(parsed.frontmatter, FrontmatterStatus::Present);
//! assert_eq!((parsed.entry.kind, parsed.entry.version), (Kind::Fact, 3));
//! assert_eq!(parsed.entry.content, "Read the README.\n");
//!
//! let written = render_entry_file(&parsed.entry);
//! assert!(written.starts_with("---\nkind: fact\nversion: 3\ncreatedAt: 2026-11-29T12:00:00.000Z\n"));
//! assert!(written.contains("importance: medium\nowner: ana\n---\n"));
//! ```

use std::fmt::Write as _;

use memory_id::MemoryId;
use serde_json::{Map, Value};

use crate::yaml;
use crate::{Extra, Importance, Kind, MAX_VERSION, MemoryEntry, MemoryType, Timestamp, Ttl};

/// What the frontmatter of a file looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrontmatterStatus {
    /// No opening `---` line, or no closing one: the whole file is content.
    Missing,
    /// Frontmatter lines exist but are not a YAML mapping (or not UTF-8); every field has its fallback.
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
    parse_with(id, bytes, mtime, true)
}

fn parse_with(id: MemoryId, bytes: &[u8], mtime: Timestamp, fast: bool) -> ParsedEntryFile {
    let (frontmatter, content) = split(bytes);
    // SIMD validation of valid text; only invalid text takes the slow, lossy path.
    let (content, lossy_utf8) = match simdutf8::basic::from_utf8(content) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (String::from_utf8_lossy(content).into_owned(), true),
    };
    let (fields, status) = match frontmatter {
        None => (Fields::default(), FrontmatterStatus::Missing),
        // Longer frontmatter is broken frontmatter: reading it would cost more than it is worth.
        Some(raw) if raw.len() > yaml::MAX_BYTES => (Fields::default(), FrontmatterStatus::Broken),
        Some(raw) => {
            let parsed = std::str::from_utf8(raw).ok().and_then(|text| {
                let quick = if fast { parse_fast(text) } else { None };
                quick.or_else(|| parse_yaml(text))
            });
            match parsed {
                Some(fields) => (fields, FrontmatterStatus::Present),
                None => (Fields::default(), FrontmatterStatus::Broken),
            }
        }
    };
    let entry = MemoryEntry {
        id,
        kind: fields.kind.unwrap_or_default(),
        version: fields.version.unwrap_or(1),
        created_at: fields.created_at.unwrap_or(mtime),
        updated_at: fields.updated_at.unwrap_or(mtime),
        content,
        memory_type: fields.memory_type,
        key: fields.key,
        importance: fields.importance.unwrap_or_default(),
        source: fields.source,
        scope: fields.scope,
        ttl: fields.ttl,
        extra: Extra(fields.extra),
    };
    ParsedEntryFile { entry, frontmatter: status, lossy_utf8, version_over_cap: fields.version_over_cap }
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
        let newline = bytes[pos..].iter().position(|&b| b == b'\n').map(|i| pos + i);
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

/// The frontmatter fields as read; `None` means missing or malformed (the caller applies the fallback).
#[derive(Debug, Default, PartialEq)]
struct Fields {
    kind: Option<Kind>,
    version: Option<u64>,
    created_at: Option<Timestamp>,
    updated_at: Option<Timestamp>,
    memory_type: Option<MemoryType>,
    key: Option<String>,
    importance: Option<Importance>,
    source: Option<String>,
    scope: Option<String>,
    ttl: Option<Ttl>,
    extra: Map<String, Value>,
    /// A `version` above [`MAX_VERSION`], as written.
    version_over_cap: Option<String>,
}

/// The general path: any YAML mapping, through the YAML parser with its limits (see `yaml.rs`: no aliases, depth at
/// most 32, at most 64 KiB). `None` when the text is not a mapping or is refused.
fn parse_yaml(text: &str) -> Option<Fields> {
    let map = match yaml::parse_value(text).ok()? {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        _ => return None,
    };
    let mut fields = Fields::default();
    for (key, value) in map {
        match key.as_str() {
            "id" => {}
            "kind" => fields.kind = value.as_str().and_then(Kind::parse),
            "version" => match yaml_version(&value) {
                Version::Valid(version) => fields.version = Some(version),
                Version::OverCap(text) => fields.version_over_cap = Some(text),
                Version::Malformed => {}
            },
            "createdAt" => fields.created_at = yaml_timestamp(&value),
            "updatedAt" => fields.updated_at = yaml_timestamp(&value),
            "type" => fields.memory_type = value.as_str().and_then(MemoryType::parse),
            "key" => fields.key = yaml_text(value),
            "importance" => fields.importance = value.as_str().and_then(Importance::parse),
            "source" => fields.source = yaml_text(value),
            "scope" => fields.scope = yaml_text(value),
            "ttl" => fields.ttl = value.as_str().and_then(|text| Ttl::parse(text).ok()),
            _ if writes_back(&key, &value) => {
                fields.extra.insert(key, value);
            }
            _ => {
                // A value this crate cannot write back so that it reads the same (a float written in a form YAML
                // readers disagree on, a string with characters a flow collection cannot hold): keeping it would
                // change it on the next update, so it is dropped, as a broken field would be.
                tracing::warn!("dropping a frontmatter key that cannot be written back");
            }
        }
    }
    Some(fields)
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
    let from_u64 = |n: u64, text: String| match n {
        0 => Version::Malformed,
        n if n <= MAX_VERSION => Version::Valid(n),
        _ => Version::OverCap(text),
    };
    match value {
        Value::Number(number) => match (number.as_u64(), number.as_f64()) {
            (Some(n), _) => from_u64(n, n.to_string()),
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

/// A version written as decimal digits without a leading zero (the canonical form, or a quoted string of it).
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
/// hand-written `…00.0001Z` and writing it gives back the same entry.
fn yaml_timestamp(value: &Value) -> Option<Timestamp> {
    value.as_str().and_then(|text| Timestamp::parse(text).ok()).map(Timestamp::truncated_to_millis)
}

fn yaml_text(value: Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// The fast path: exactly the lines [`render_entry_file`] writes for an entry without unknown keys. `None` sends
/// the text to `serde_yaml`, so this function only has to accept what it is sure of.
fn parse_fast(text: &str) -> Option<Fields> {
    let body = if text.is_empty() { text } else { text.strip_suffix('\n')? };
    let mut fields = Fields::default();
    let mut seen = 0u16;
    if !body.is_empty() {
        for line in body.split('\n') {
            let (key, value) = line.split_once(": ")?;
            let bit = match key {
                "kind" => {
                    fields.kind = Some(Kind::parse(value)?);
                    1
                }
                "version" => {
                    fields.version = match canonical_version(value) {
                        Version::Valid(version) => Some(version),
                        Version::OverCap(_) | Version::Malformed => return None,
                    };
                    2
                }
                "createdAt" => {
                    fields.created_at = Some(fast_timestamp(value)?);
                    4
                }
                "updatedAt" => {
                    fields.updated_at = Some(fast_timestamp(value)?);
                    8
                }
                "type" => {
                    fields.memory_type = Some(MemoryType::parse(value)?);
                    16
                }
                "key" => {
                    fields.key = Some(fast_string(value)?);
                    32
                }
                "importance" => {
                    fields.importance = Some(Importance::parse(value)?);
                    64
                }
                "source" => {
                    fields.source = Some(fast_string(value)?);
                    128
                }
                "scope" => {
                    fields.scope = Some(fast_string(value)?);
                    256
                }
                "ttl" => {
                    fields.ttl = Some(Ttl::parse(value).ok()?);
                    512
                }
                _ => return None,
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
        }
    }
    // The keys the canonical form always writes; without them the fallbacks are `serde_yaml`'s business.
    let required = 1 | 2 | 4 | 8 | 64;
    (seen & required == required).then_some(fields)
}

/// A timestamp exactly as written (`2026-11-29T22:33:13.123Z`), so that plain YAML reads it as a string too.
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
    // The shape is checked, so build the instant from its digits instead of running the general RFC 3339 parser.
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

fn fast_string(value: &str) -> Option<String> {
    if is_plain_safe(value) {
        return Some(value.to_owned());
    }
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let decoded = match chars.next()? {
                    '\\' => '\\',
                    '"' => '"',
                    't' => '\t',
                    'n' => '\n',
                    'r' => '\r',
                    'x' => hex_char(&mut chars, 2)?,
                    'u' => hex_char(&mut chars, 4)?,
                    _ => return None,
                };
                out.push(decoded);
            }
            '"' | '\t' | '\n' | '\r' => return None,
            c if needs_escape(c) => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

fn hex_char(chars: &mut std::str::Chars<'_>, digits: usize) -> Option<char> {
    let mut code = 0u32;
    for _ in 0..digits {
        code = code * 16 + chars.next()?.to_digit(16)?;
    }
    char::from_u32(code)
}

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
        entry.kind, entry.version, entry.created_at, entry.updated_at
    );
    if let Some(memory_type) = entry.memory_type {
        let _ = writeln!(out, "type: {memory_type}");
    }
    if let Some(key) = &entry.key {
        out.push_str("key: ");
        push_string(&mut out, key);
        out.push('\n');
    }
    let _ = writeln!(out, "importance: {}", entry.importance);
    if let Some(source) = &entry.source {
        out.push_str("source: ");
        push_string(&mut out, source);
        out.push('\n');
    }
    if let Some(scope) = &entry.scope {
        out.push_str("scope: ");
        push_string(&mut out, scope);
        out.push('\n');
    }
    if let Some(ttl) = entry.ttl {
        let _ = writeln!(out, "ttl: {ttl}");
    }
    for (key, value) in &entry.extra.0 {
        push_extra(&mut out, key, value);
    }
    out.push_str("---\n");
    out.push_str(&entry.content);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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
                crate::TtlUnit::Seconds,
                crate::TtlUnit::Minutes,
                crate::TtlUnit::Hours,
                crate::TtlUnit::Days,
                crate::TtlUnit::Weeks,
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
                "",
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
            MemoryEntry {
                id: id(), kind, version, created_at, updated_at, content, memory_type, key, importance, source,
                scope, ttl, extra: Extra::default(),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Canonical output reads back identically through the fast path and through serde_yaml.
        #[test]
        fn fast_path_and_serde_yaml_agree_on_canonical_output(entry in arb_entry()) {
            let text = render_entry_file(&entry);
            let (frontmatter, _) = split(text.as_bytes());
            let frontmatter = std::str::from_utf8(frontmatter.unwrap()).unwrap();
            let fast = parse_fast(frontmatter);
            prop_assert!(fast.is_some(), "fast path refused canonical frontmatter:\n{}", frontmatter);
            prop_assert_eq!(&fast, &parse_yaml(frontmatter));
            let via_fast = parse_with(id(), text.as_bytes(), mtime(), true);
            let via_yaml = parse_with(id(), text.as_bytes(), mtime(), false);
            prop_assert_eq!(&via_fast, &via_yaml);
            prop_assert_eq!(&via_fast.entry, &entry);
            prop_assert_eq!(via_fast.frontmatter, FrontmatterStatus::Present);
            prop_assert!(!via_fast.lossy_utf8);
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
    fn fast_path_declines_what_it_is_not_sure_of() {
        let base = "kind: fact\nversion: 2\ncreatedAt: 2026-01-01T00:00:00.000Z\nupdatedAt: 2026-01-01T00:00:00.000Z\nimportance: low\n";
        assert!(parse_fast(base).is_some());
        for bad in [
            format!("{base}other: x\n"),
            format!("{base}key: null\n"),
            format!("{base}key: 'single'\n"),
            format!("{base}key: \"\\a\"\n"),
            format!("{base}kind: log\n"),
            base.replace("version: 2", "version: 02"),
            base.replace("version: 2", "version: 0"),
            base.replace("kind: fact", "kind: banana"),
            base.replace(".000Z", "Z"),
            base.replace('\n', "\r\n"),
            base.replace("importance: low\n", ""),
            base.trim_end().to_owned(),
        ] {
            assert_eq!(parse_fast(&bad), None, "{bad}");
        }
    }
}
