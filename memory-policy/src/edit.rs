//! Changing a definition's text: a new definition, and one grant added to or removed from one list in place.
//!
//! An operator's definition may hold comments, other top-level keys and a layout of their own; an edit changes
//! only the bytes of the one list it touches and keeps every other byte. The list may be a one-line flow sequence
//! (`read: [shared, "project:alp"]`), a block sequence (one `- grant` per line), empty (`read:` or `read: []`) or
//! missing (then a `read: [grant]` line is added under `memory:`, or a `memory:` block at the end). Whatever the
//! edit produced is parsed again and must be the same definition with exactly the one change; anything else (a
//! flow sequence over several lines, a `memory` written as a flow mapping, …) is refused as
//! [`NotEditable`](crate::AgentDefinitionProblem::NotEditable) and the text is left as it was.
//!
//! ```
//! use std::path::Path;
//! use memory_policy::{Grant, GrantEdit, Operation, edit_grant};
//!
//! let text = "role: worker   # the file's own comment\nmemory:\n  read: [shared]\n";
//! let file = Path::new("agents/worker.yaml");
//! let grant = Grant::parse("project:alp").unwrap();
//! let edit = |text: &str, how| edit_grant(text, "worker", file, Operation::Read, &grant, how).unwrap();
//! let added = edit(text, GrantEdit::Add).unwrap();
//! assert_eq!(added, "role: worker   # the file's own comment\nmemory:\n  read: [shared, \"project:alp\"]\n");
//! // Added twice: nothing to change.
//! assert_eq!(edit(&added, GrantEdit::Add), None);
//! assert_eq!(edit(&added, GrantEdit::Remove).unwrap(), text);
//! ```

use std::path::Path;

use crate::definition::not_editable;
use crate::{Actor, AgentDefinitionError, Grant, Operation, Role, parse_agent_definition};

/// The text of a new definition of `role`: a comment saying what the file is, `role`, `reportsTo` (or a comment
/// showing how to set it) and the two grant lists, each as a one-line flow sequence.
///
/// ```
/// use memory_policy::{Grant, Role, new_definition};
///
/// let role = Role::parse("qa").unwrap();
/// let read = [Grant::parse("shared").unwrap(), Grant::parse("project:*").unwrap()];
/// let text = new_definition(&role, None, &read, &[]);
/// assert!(text.contains("  read: [shared, \"project:*\"]\n  write: []\n"));
/// ```
pub fn new_definition(role: &Role, reports_to: Option<&Role>, read: &[Grant], write: &[Grant]) -> String {
    let reports = match reports_to {
        Some(manager) => {
            format!("reportsTo: {manager}          # who the role reports to (grants no memory access)")
        }
        None => "# reportsTo: main          # who the role reports to (grants no memory access)".to_owned(),
    };
    let list = |grants: &[Grant]| grants.iter().map(|g| written(g.as_str())).collect::<Vec<_>>().join(", ");
    format!(
        "# The memory grants of role `{role}`: what it may read and write (see `alp agent show {role}`).\n\
         role: {role}\n\
         {reports}\n\
         memory:\n\
         \x20 read: [{}]\n\
         \x20 write: [{}]\n",
        list(read),
        list(write)
    )
}

/// Which change [`edit_grant`] makes to a grant list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantEdit {
    /// Add the grant at the end of the list (nothing to do when the list holds it).
    Add,
    /// Remove every occurrence of the grant (nothing to do when the list does not hold it).
    Remove,
}

/// `text` (the definition of `role` in `file`) with `grant` added to or removed from its `operation` list, changing
/// no other byte; `None` when there is nothing to change (the list holds it already, or does not hold it).
///
/// # Errors
///
/// The [`AgentDefinitionError`] of a text that is not a definition of `role` (as [`parse_agent_definition`]), and
/// [`NotEditable`](crate::AgentDefinitionProblem::NotEditable) for a layout this edit does not change in place.
pub fn edit_grant(
    text: &str,
    role: &str,
    file: &Path,
    operation: Operation,
    grant: &Grant,
    edit: GrantEdit,
) -> Result<Option<String>, AgentDefinitionError> {
    let before = parse_agent_definition(text, role, file)?;
    let holds = before.grants(operation).contains(grant);
    let refuse = |why: &str| not_editable(role, file, operation, why);
    let (edited, expected) = match edit {
        GrantEdit::Add if holds => return Ok(None),
        GrantEdit::Remove if !holds => return Ok(None),
        GrantEdit::Add => {
            let edited =
                insert(text, operation.as_str(), &written(grant.as_str())).map_err(|why| refuse(&why))?;
            let mut expected = before.grants(operation).to_vec();
            expected.push(grant.clone());
            (edited, expected)
        }
        GrantEdit::Remove => {
            let mut edited = text.to_owned();
            // One occurrence at a time, each found again in the text as it now is; a list holds at most as many.
            for _ in 0..before.grants(operation).len() {
                match remove_one(&edited, operation.as_str(), grant.as_str()).map_err(|why| refuse(&why))? {
                    Some(next) => edited = next,
                    None => break,
                }
            }
            (edited, before.grants(operation).iter().filter(|g| *g != grant).cloned().collect())
        }
    };
    check(&edited, role, file, &before, operation, &expected).map_err(|why| refuse(&why))?;
    Ok(Some(edited))
}

/// A grant as a YAML scalar: plain when it is letters, digits, `-`, `_` and `.` only, else double-quoted (as the
/// definitions `alp init` writes).
fn written(grant: &str) -> String {
    if grant.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        grant.to_owned()
    } else {
        format!("\"{}\"", grant.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// The edit is the one asked for: the same role and manager, the other list unchanged, this list `expected`.
fn check(
    edited: &str,
    role: &str,
    file: &Path,
    before: &Actor,
    operation: Operation,
    expected: &[Grant],
) -> Result<(), String> {
    let after = parse_agent_definition(edited, role, file)
        .map_err(|e| format!("the edited text would not load: {e}"))?;
    let other = match operation {
        Operation::Read => Operation::Write,
        Operation::Write => Operation::Read,
    };
    let same = after.reports_to() == before.reports_to()
        && after.grants(other) == before.grants(other)
        && after.grants(operation) == expected;
    if same { Ok(()) } else { Err("the edited text would not hold exactly the one change".to_owned()) }
}

/// A line of the text: where it starts, and its bytes without the line break.
#[derive(Debug, Clone, Copy)]
struct Line<'t> {
    start: usize,
    text: &'t str,
    /// Where the next line starts (past the line break, or the end of the text).
    next: usize,
}

impl Line<'_> {
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start_matches(' ').len()
    }

    /// Blank, or a comment only.
    fn is_filler(&self) -> bool {
        let body = self.text.trim_start_matches([' ', '\t']);
        body.is_empty() || body.starts_with('#')
    }
}

fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let body = text[start..end].strip_suffix('\r').unwrap_or(&text[start..end]);
        out.push(Line { start, text: body, next: if end < text.len() { end + 1 } else { end } });
        start = end + 1;
    }
    out
}

/// What follows `key:` on a line (`None` when the line is not that key).
fn after_key<'t>(body: &'t str, key: &str) -> Option<&'t str> {
    let rest = body.strip_prefix(key)?.strip_prefix(':')?;
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then_some(rest)
}

/// Nothing, or a comment.
fn is_empty_value(rest: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.is_empty() || rest.starts_with('#')
}

/// Where a grant list is in the text.
enum Place<'t> {
    /// No top-level `memory:` key.
    NoMemory,
    /// `memory:` on line `memory`, without the key; `indent` is its keys' indentation.
    NoKey { memory: usize, indent: usize },
    /// `key:` with nothing after it and no items below: the line, and the offset just past `key:`.
    Empty { colon: usize },
    /// A one-line flow sequence: its items' spans (offsets in the text) and the offset just past `[`.
    Flow { open: usize, items: Vec<(usize, usize)> },
    /// A block sequence: its item lines.
    Block { items: Vec<Line<'t>> },
}

fn find<'t>(text: &'t str, key: &str) -> Result<Place<'t>, String> {
    if text.contains('\t') {
        return Err("it holds tab characters".to_owned());
    }
    let all = lines(text);
    let tops: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, l)| after_key(l.text, "memory").is_some())
        .map(|(i, _)| i)
        .collect();
    let memory = match tops.as_slice() {
        [] => return Ok(Place::NoMemory),
        [one] => *one,
        _ => return Err("it has more than one `memory:` line".to_owned()),
    };
    if !is_empty_value(after_key(all[memory].text, "memory").unwrap_or_default()) {
        return Err("`memory` is not written as an indented block".to_owned());
    }
    // The block: the lines after `memory:` up to the next line at column 0 that is not filler.
    let block: Vec<Line<'t>> =
        all[memory + 1..].iter().copied().take_while(|l| l.is_filler() || l.indent() > 0).collect();
    let Some(indent) = block.iter().find(|l| !l.is_filler()).map(Line::indent) else {
        return Ok(Place::NoKey { memory, indent: 2 });
    };
    let keys: Vec<usize> = block
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            !l.is_filler() && l.indent() == indent && after_key(&l.text[indent..], key).is_some()
        })
        .map(|(i, _)| i)
        .collect();
    let at = match keys.as_slice() {
        [] => return Ok(Place::NoKey { memory, indent }),
        [one] => *one,
        _ => return Err(format!("it has more than one `{key}:` line")),
    };
    let line = block[at];
    let rest = after_key(&line.text[indent..], key).unwrap_or_default();
    let colon = line.start + indent + key.len() + 1;
    let value = rest.trim_start_matches(' ');
    if value.starts_with('[') {
        let open = colon + (rest.len() - value.len()) + 1;
        return flow_items(text, open).map(|items| Place::Flow { open, items });
    }
    if !is_empty_value(rest) {
        return Err(format!("`{key}` is not a list"));
    }
    // A block sequence: `- item` lines below the key, at one indentation no less than the key's.
    let below: Vec<Line<'t>> = block[at + 1..].iter().copied().filter(|l| !l.is_filler()).collect();
    let Some(first) = below.first().filter(|l| l.indent() >= indent && l.text[l.indent()..].starts_with('-'))
    else {
        return Ok(Place::Empty { colon });
    };
    let dash = first.indent();
    let mut items = Vec::new();
    for line in below {
        if line.indent() > dash {
            return Err(format!("an item of `{key}` spans several lines"));
        }
        if !is_item(&line, dash) {
            break;
        }
        items.push(line);
    }
    Ok(Place::Block { items })
}

fn is_item(line: &Line<'_>, dash: usize) -> bool {
    line.indent() == dash && {
        let body = &line.text[dash..];
        body == "-" || body.starts_with("- ")
    }
}

/// The spans of the items of the flow sequence whose `[` is just before `open`, which must close on its line.
fn flow_items(text: &str, open: usize) -> Result<Vec<(usize, usize)>, String> {
    let bytes = text.as_bytes();
    let end_of_line = text[open..].find('\n').map_or(text.len(), |i| open + i);
    let not_one_line = || "its list does not close on the line it opens".to_owned();
    let mut items = Vec::new();
    let mut i = open;
    let skip = |mut i: usize| {
        while i < end_of_line && bytes[i] == b' ' {
            i += 1;
        }
        i
    };
    loop {
        i = skip(i);
        if i >= end_of_line {
            return Err(not_one_line());
        }
        if bytes[i] == b']' && items.is_empty() {
            return Ok(items);
        }
        let start = i;
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < end_of_line && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\'' => {
                i += 1;
                while i < end_of_line {
                    if bytes[i] == b'\'' {
                        if bytes.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' | b',' | b']' => return Err("its list holds something other than grants".to_owned()),
            _ => {
                while i < end_of_line && !matches!(bytes[i], b',' | b']') {
                    i += 1;
                }
                while i > start && bytes[i - 1] == b' ' {
                    i -= 1;
                }
            }
        }
        if i > end_of_line {
            return Err(not_one_line());
        }
        items.push((start, i));
        i = skip(i);
        match bytes.get(i) {
            Some(b',') if i < end_of_line => i += 1,
            Some(b']') if i < end_of_line => return Ok(items),
            _ => return Err(not_one_line()),
        }
    }
}

/// The value of one written item (`shared`, `"project:*"`, `'x'`, with a trailing comment on a block line).
fn decoded(item: &str) -> Option<String> {
    memory_fs::yaml::from_str::<String>(item).ok()
}

fn insert(text: &str, key: &str, grant: &str) -> Result<String, String> {
    let mut out = text.to_owned();
    match find(text, key)? {
        Place::NoMemory => {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("memory:\n  {key}: [{grant}]\n"));
        }
        Place::NoKey { memory, indent } => {
            let after = lines(text)[memory].next;
            let mut line = format!("{}{key}: [{grant}]\n", " ".repeat(indent));
            if after == text.len() && !text.ends_with('\n') {
                line.insert(0, '\n');
            }
            out.insert_str(after, &line);
        }
        Place::Empty { colon } => out.insert_str(colon, &format!(" [{grant}]")),
        Place::Flow { open, items } => match items.last() {
            Some(&(_, end)) => out.insert_str(end, &format!(", {grant}")),
            None => out.insert_str(open, grant),
        },
        Place::Block { items } => {
            let last = items.last().ok_or("its list is empty")?;
            let mut line = format!("{}- {grant}\n", " ".repeat(last.indent()));
            if last.next == text.len() && !text.ends_with('\n') {
                line.insert(0, '\n');
            }
            out.insert_str(last.next, &line);
        }
    }
    Ok(out)
}

/// The text without the first item equal to `grant` in the list of `key`; `None` when there is none.
fn remove_one(text: &str, key: &str, grant: &str) -> Result<Option<String>, String> {
    let mut out = text.to_owned();
    match find(text, key)? {
        Place::NoMemory | Place::NoKey { .. } | Place::Empty { .. } => return Ok(None),
        Place::Flow { items, .. } => {
            let Some(at) = items.iter().position(|&(s, e)| decoded(&text[s..e]).as_deref() == Some(grant))
            else {
                return Ok(None);
            };
            let (start, end) = items[at];
            let span = match (at.checked_sub(1).map(|p| items[p]), items.get(at + 1)) {
                (_, Some(&(next, _))) => start..next,
                (Some((_, previous_end)), None) => previous_end..end,
                (None, None) => start..end,
            };
            out.replace_range(span, "");
        }
        Place::Block { items } => {
            let Some(line) = items.iter().find(|l| {
                let body = l.text[l.indent() + 1..].trim_start_matches(' ');
                decoded(body).as_deref() == Some(grant)
            }) else {
                return Ok(None);
            };
            out.replace_range(line.start..line.next, "");
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{GrantEdit, edit_grant};
    use crate::{Grant, Operation};

    const FILE: &str = "agents/worker.yaml";

    /// `before` with `grant` added to the read list is `after`, and removing it again gives `before` back.
    fn check(before: &str, grant: &str, after: &str) {
        check_back(before, grant, after, before);
    }

    /// As [`check`], where removing gives `back` (a list that was missing stays, empty).
    fn check_back(before: &str, grant: &str, after: &str, back: &str) {
        let grant = Grant::parse(grant).unwrap();
        let added =
            edit_grant(before, "worker", Path::new(FILE), Operation::Read, &grant, GrantEdit::Add).unwrap();
        assert_eq!(added.as_deref(), Some(after), "adding to {before:?}");
        let removed =
            edit_grant(after, "worker", Path::new(FILE), Operation::Read, &grant, GrantEdit::Remove).unwrap();
        assert_eq!(removed.as_deref(), Some(back), "removing from {after:?}");
    }

    #[test]
    fn flow_lists() {
        check(
            "role: worker\nmemory:\n  read: [shared]\n",
            "project:a",
            "role: worker\nmemory:\n  read: [shared, \"project:a\"]\n",
        );
        check(
            "role: worker\nmemory:\n  read: [ 'shared' ,  \"project:b\" ]   # mine\n  write: []\n",
            "project:a",
            "role: worker\nmemory:\n  read: [ 'shared' ,  \"project:b\", \"project:a\" ]   # mine\n  write: []\n",
        );
        check("role: worker\nmemory:\n  read: []\n", "shared", "role: worker\nmemory:\n  read: [shared]\n");
    }

    #[test]
    fn block_lists() {
        check(
            "role: worker\nmemory:\n  read:\n    - shared   # the team\n    # next\n  write: [shared]\n",
            "project:a",
            "role: worker\nmemory:\n  read:\n    - shared   # the team\n    - \"project:a\"\n    # next\n  write: [shared]\n",
        );
        check(
            "role: worker\nmemory:\n  read:\n  - shared\n  write: [shared]\n",
            "project:a",
            "role: worker\nmemory:\n  read:\n  - shared\n  - \"project:a\"\n  write: [shared]\n",
        );
    }

    #[test]
    fn missing_lists() {
        check_back(
            "role: worker\n",
            "shared",
            "role: worker\nmemory:\n  read: [shared]\n",
            "role: worker\nmemory:\n  read: []\n",
        );
        check_back(
            "role: worker\nmemory:\n    write: []\n",
            "shared",
            "role: worker\nmemory:\n    read: [shared]\n    write: []\n",
            "role: worker\nmemory:\n    read: []\n    write: []\n",
        );
        check_back(
            "role: worker\nmemory:\n  read:   # none yet\n",
            "shared",
            "role: worker\nmemory:\n  read: [shared]   # none yet\n",
            "role: worker\nmemory:\n  read: []   # none yet\n",
        );
    }

    #[test]
    fn removal_of_a_middle_item_and_of_duplicates() {
        let grant = Grant::parse("shared").unwrap();
        let text = "role: worker\nmemory:\n  read: [\"project:a\", shared, 'shared', \"project:b\"]\n";
        let removed =
            edit_grant(text, "worker", Path::new(FILE), Operation::Read, &grant, GrantEdit::Remove).unwrap();
        assert_eq!(
            removed.as_deref(),
            Some("role: worker\nmemory:\n  read: [\"project:a\", \"project:b\"]\n")
        );
        assert_eq!(
            edit_grant(
                "role: worker\n",
                "worker",
                Path::new(FILE),
                Operation::Read,
                &grant,
                GrantEdit::Remove
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn layouts_it_does_not_change_are_refused() {
        let grant = Grant::parse("project:z").unwrap();
        for text in [
            "role: worker\nmemory: {read: [project]}\n",
            "role: worker\nmemory:\n  read: [\n    project\n  ]\n",
            "role: worker\nmemory:\n  read:\n    - \"project:a\"\n      # fine\n    - >-\n      shared\n",
        ] {
            let error = edit_grant(text, "worker", Path::new(FILE), Operation::Read, &grant, GrantEdit::Add);
            match error {
                Err(e) => assert_eq!(e.problem().code(), "not_editable", "{text:?}"),
                Ok(edited) => panic!("{text:?} was edited: {edited:?}"),
            }
        }
    }
}
