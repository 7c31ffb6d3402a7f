//! `alp_parse`: any UTF-8 text as an `.alp` file (`memory_alp::parse_alp` / `serialize_alp`).
//!
//! Properties:
//! - parsing never panics;
//! - on what parses: the version is an `80.` version; memory IDs are distinct; writing the memories and reading
//!   them back gives the same memories (parse ∘ serialise is the identity), under the current version and with
//!   nothing skipped; and writing is canonical (writing what was read back gives the same text);
//! - on what does not: the error has a documented code, a 1-based line that exists in the file and a 1-based column
//!   at most one past the end of that line, and a one-line message.

use memory_alp::{ALP_VERSION, AlpParseError, parse_alp, serialize_alp};

/// The codes `AlpErrorKind::code` documents.
const CODES: [&str; 11] = [
    "missing_header",
    "unsupported_version",
    "unknown_field",
    "missing_field",
    "duplicate_field",
    "duplicate_id",
    "bad_value",
    "bad_escape",
    "unterminated_string",
    "bad_indentation",
    "unexpected_text",
];

/// Checks the properties on `data`; inputs that are not UTF-8 are skipped (the format is text).
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        check_str(text);
    }
}

/// Checks the properties on one text.
pub fn check_str(text: &str) {
    let file = match parse_alp(text) {
        Ok(file) => file,
        Err(error) => return check_error(text, &error),
    };
    assert!(file.version.starts_with("80."), "accepted version {:?}", file.version);
    let mut ids: Vec<&str> = file.memories.iter().map(|m| m.id.as_str()).collect();
    ids.sort_unstable();
    assert!(ids.windows(2).all(|w| w[0] != w[1]), "duplicate ids accepted: {ids:?}");

    let written = serialize_alp(&file.memories);
    let again = match parse_alp(&written) {
        Ok(again) => again,
        Err(e) => panic!("the written file does not parse: {e}\n{written}"),
    };
    assert_eq!(
        again.memories, file.memories,
        "written and read back, the memories changed; written:\n{written}"
    );
    assert_eq!(again.version, ALP_VERSION);
    assert!(again.skipped.is_empty());
    assert_eq!(serialize_alp(&again.memories), written, "writing is not canonical");
}

fn check_error(text: &str, error: &AlpParseError) {
    let code = error.kind().code();
    assert!(CODES.contains(&code), "undocumented code {code}");
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let line = usize::try_from(error.line()).unwrap_or(usize::MAX);
    assert!(line >= 1 && line <= lines.len(), "{code}: line {line} of {} lines", lines.len());
    let width = lines[line - 1].chars().count() + 1;
    let column = usize::try_from(error.column()).unwrap_or(usize::MAX);
    assert!(
        column >= 1 && column <= width,
        "{code}: line {line}, column {column} past the line's end ({width})"
    );
    let message = error.to_string();
    assert!(!message.contains(['\n', '\r']), "message on several lines: {message:?}");
}
