//! `memory_path`: the paths of the MCP `memory` tool and the IDs they name (`docs/CLI.md`, `memory_mcp::path`).
//!
//! Input: any bytes; UTF-8 is read as a path of the tool, and also as an ID and as a prefix.
//!
//! Properties:
//! - nothing outside `/memories` is accepted: an accepted path is `/memories` or starts with `/memories/`;
//! - nothing is decoded or resolved: an accepted path holds no `%`, no `:`, no `\`, no control character, no empty,
//!   `.` or `..` segment (the only empty segment allowed is after one final `/`);
//! - every accepted path maps to a valid ID (a file, ending in `.md`) or prefix (a directory) that maps back to the
//!   same path: exactly for a file, and for a directory either exactly or with one final `/` the canonical path
//!   does without; the canonical path parses back to the same value;
//! - every valid ID or prefix without `%` has a path, and that path parses back to it; one with `%` has none;
//! - a refusal keeps the path as given, has one of the documented reason codes, and its message is one line;
//! - nothing panics.

use memory_id::{MemoryPrefix, parse_memory_id};
use memory_mcp::path::{MEMORIES, MemoryPath, directory_path, file_path, parse_memory_path};

/// The reason codes a refused path may carry.
const CODES: [&str; 12] = [
    "outside_memories",
    "percent_sign",
    "colon",
    "unknown_scope",
    "empty",
    "dot_segment",
    "separator",
    "control_char",
    "segment_too_long",
    "too_long",
    "too_many_segments",
    "too_few_parts",
];

/// Checks the properties on `data`; inputs that are not UTF-8 are skipped (a path is text).
pub fn check(data: &[u8]) {
    if let Ok(input) = std::str::from_utf8(data) {
        check_path(input);
        check_names(input);
    }
}

/// The properties of `input` read as a path.
pub fn check_path(input: &str) {
    let parsed = match parse_memory_path(input) {
        Ok(parsed) => parsed,
        Err(error) => {
            assert_eq!(error.path(), input, "a refusal keeps the path as given");
            let code = error.problem().code();
            assert!(CODES.contains(&code), "{input:?}: undocumented reason {code}");
            let message = error.to_string();
            assert!(!message.contains('\n') && !message.contains('\r'), "{input:?}: message spans lines");
            return;
        }
    };
    assert!(
        input == MEMORIES || input.starts_with("/memories/"),
        "{input:?} is accepted but does not lie under /memories"
    );
    for bad in ['%', ':', '\\'] {
        assert!(!input.contains(bad), "{input:?} is accepted but holds {bad:?}");
    }
    assert!(
        !input.chars().any(|c| c < ' ' || c == '\u{7f}'),
        "{input:?} is accepted with a control character"
    );
    let rest = input.strip_prefix(MEMORIES).unwrap_or_default();
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if !rest.is_empty() {
        for segment in rest.split('/') {
            assert!(
                !segment.is_empty() && segment != "." && segment != "..",
                "{input:?} is accepted with the segment {segment:?}"
            );
        }
    }

    let Some(canonical) = parsed.to_path() else {
        panic!("{input:?} is accepted as {parsed:?}, which has no path")
    };
    match &parsed {
        MemoryPath::File(id) => {
            assert!(input.ends_with(".md"), "{input:?} names the file {id} without .md");
            assert_eq!(canonical, input, "the file {id} does not map back to its path");
            assert_eq!(parse_memory_id(id.as_str()).as_ref(), Ok(id), "{id} is not a valid ID");
        }
        MemoryPath::Directory(_) => {
            assert!(
                canonical == input || format!("{canonical}/") == input,
                "{input:?} maps to the directory {parsed:?}, whose path is {canonical:?}"
            );
        }
    }
    assert_eq!(parse_memory_path(&canonical).as_ref(), Ok(&parsed), "{canonical:?} does not read back");
}

/// The properties of `input` read as an ID and as a prefix: a path for each, unless a segment holds `%`.
pub fn check_names(input: &str) {
    if let Ok(id) = parse_memory_id(input) {
        match file_path(&id) {
            Some(path) => assert_eq!(
                parse_memory_path(&path),
                Ok(MemoryPath::File(id.clone())),
                "{id} maps to {path:?}, which does not read back"
            ),
            None => assert!(input.contains('%'), "{id} has no path"),
        }
    }
    if let Ok(prefix) = MemoryPrefix::parse(input) {
        match directory_path(Some(&prefix)) {
            Some(path) => assert_eq!(
                parse_memory_path(&path),
                Ok(MemoryPath::Directory(Some(prefix.clone()))),
                "{prefix} maps to {path:?}, which does not read back"
            ),
            None => assert!(input.contains('%'), "{prefix} has no path"),
        }
    }
}
