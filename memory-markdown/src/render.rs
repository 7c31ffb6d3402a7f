//! Writing an entry file, in the canonical form.
//!
//! [`render_entry_file`] writes the canonical form: `---\n`, the keys `kind`, `version`, `createdAt`,
//! `updatedAt`, `type`, `key`, `importance`, `source`, `scope`, `ttl` (optional ones only when set), the unknown
//! keys in file order, `---\n`, then the content. Strings are plain when that is unambiguous (an ASCII letter,
//! then letters, digits, `-`, `_`, `.`, `/`, and not a YAML keyword such as `null`, `true` or `no`) and
//! double-quoted with escapes otherwise; unknown keys that are not strings are written in JSON notation (a YAML
//! flow collection), so that everything reads back identically.

use std::fmt::Write as _;

use memory_entry::{FieldName, FieldValue, MemoryEntry};
use serde_json::Value;

use crate::yaml;
use crate::yaml_lines::{YAML_WORDS, needs_escape};

/// Whether the pair `key: value`, written as [`render_entry_file`] writes unknown keys, reads back the same.
pub(crate) fn writes_back(key: &str, value: &Value) -> bool {
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

/// Whether `text` can be written as a plain scalar and read back as the same string by any YAML reader.
fn is_plain_safe(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(first) = bytes.first() else { return false };
    first.is_ascii_alphabetic()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && !YAML_WORDS.iter().any(|word| text.eq_ignore_ascii_case(word))
}

/// Writes `text` as a YAML string: plain when that is unambiguous, double-quoted with escapes otherwise.
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
