//! The canonical writer. Every choice here is made so that the reader gives back exactly what was written.

use std::fmt::Write as _;

use memory_entry::Importance;

use memory_id::must_escape;

use super::{ALP_VERSION, AlpMemory};

pub(super) fn serialize(memories: &[AlpMemory]) -> String {
    let mut out = format!("!alp-version: {ALP_VERSION}\n");
    for (index, memory) in memories.iter().enumerate() {
        out.push_str(if index == 0 { "\n" } else { "\n---\n\n" });
        block(&mut out, memory);
    }
    out
}

fn block(out: &mut String, memory: &AlpMemory) {
    let fields = &memory.fields;
    out.push_str("@memory\n");
    field(out, "id", &bare_or_quoted(&memory.id));
    if let Some(memory_type) = fields.memory_type {
        field(out, "type", memory_type.as_str());
    }
    if let Some(key) = &fields.key {
        field(out, "key", &quote(key.as_str()));
    }
    match block_scalar_lines(&memory.value) {
        Some(lines) => {
            out.push_str("  value: |\n");
            for line in lines {
                if !line.is_empty() {
                    out.push_str("    ");
                    out.push_str(line);
                }
                out.push('\n');
            }
        }
        None => field(out, "value", &quote(&memory.value)),
    }
    if let Some(scope) = &fields.scope {
        field(out, "scope", &format!("-> {}", bare_or_quoted(scope.as_str())));
    }
    if fields.importance != Importance::default() {
        field(out, "importance", fields.importance.as_str());
    }
    if let Some(source) = &fields.source {
        field(out, "source", &quote(source.as_str()));
    }
    // `Display` of a TTL or a timestamp cannot fail for a value that exists; a failure would only cut the line
    // short, never panic (which `to_string` would).
    if let Some(ttl) = fields.ttl {
        let _ = writeln!(out, "  ttl: {ttl}");
    }
    if let Some(created) = memory.created {
        let _ = writeln!(out, "  created: {created}");
    }
    if let Some(updated) = memory.updated {
        let _ = writeln!(out, "  updated: {updated}");
    }
}

fn field(out: &mut String, name: &str, value: &str) {
    out.push_str("  ");
    out.push_str(name);
    out.push_str(": ");
    out.push_str(value);
    out.push('\n');
}

fn is_space(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// `text` as a bare value when it reads back as itself, else quoted.
fn bare_or_quoted(text: &str) -> String {
    let reads_back = !text.is_empty()
        && !text.starts_with(['"', '|'])
        && !text.starts_with(is_space)
        && !text.ends_with(is_space)
        && !text.starts_with("//")
        && !text.contains(" //")
        && !text.contains("\t//")
        && !text.chars().any(must_escape);
    if reads_back { text.to_owned() } else { quote(text) }
}

/// `text` as a quoted string.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if must_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The lines of `value` when it is written as a `|` block scalar: when it has several lines and ends with exactly
/// one `\n` after a non-blank line (the reader drops trailing blank lines and adds one `\n`), holds nothing that
/// must be escaped but tabs, and has a non-blank line that does not start with a space (the reader removes the
/// common indentation).
fn block_scalar_lines(value: &str) -> Option<Vec<&str>> {
    let body = value.strip_suffix('\n')?;
    if !body.contains('\n') || value.chars().any(|c| c != '\n' && c != '\t' && must_escape(c)) {
        return None;
    }
    let lines: Vec<&str> = body.split('\n').collect();
    let blank = |line: &str| line.chars().all(is_space);
    let last_is_content = lines.last().is_some_and(|line| !blank(line));
    let some_line_unindented = lines.iter().any(|line| !blank(line) && !line.starts_with(' '));
    (last_is_content && some_line_unindented).then_some(lines)
}
