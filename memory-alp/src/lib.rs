//! The ALP 80 `.alp` memory file (`.alp/memory.alp`): [`parse_alp`] reads one, [`serialize_alp`] writes the
//! canonical form. Both are pure: text in, values out; reading and writing files is the caller's job.
//!
//! The grammar, every decision beyond the seed, and the error positions are documented on [`parse_alp`].
//!
//! ```
//! use memory_alp::{parse_alp, serialize_alp, AlpErrorKind};
//! use memory_entry::MemoryType;
//!
//! let text = "\
//! !alp-version: 80.0.0
//!
//! // Project-level memories
//! @memory
//!   id: mem-001
//!   type: project
//!   key: \"package-manager\"
//!   value: \"This project uses pnpm, not npm\"  // see https://pnpm.io
//!   importance: high
//! ";
//! let file = parse_alp(text).unwrap();
//! assert_eq!(file.version, "80.0.0");
//! assert_eq!(file.memories[0].fields.memory_type, Some(MemoryType::Project));
//! assert_eq!(file.memories[0].value, "This project uses pnpm, not npm");
//! // Writing and reading again gives the same memories.
//! assert_eq!(parse_alp(&serialize_alp(&file.memories)).unwrap().memories, file.memories);
//!
//! let err = parse_alp("!alp-version: 80.0.0\n@memory\n  id: mem-001\n  valeu: \"x\"\n").unwrap_err();
//! assert_eq!(err.kind(), AlpErrorKind::UnknownField);
//! assert_eq!((err.line(), err.column()), (4, 3));
//! assert_eq!(
//!     err.to_string(),
//!     "line 4, column 3: unknown field `valeu` in @memory `mem-001` \
//!      (expected id, type, key, value, scope, importance, source, ttl, created, updated)"
//! );
//! ```

//!
//! A portable crate of pure text handling: adopt it alone to read or write `.alp` files; the `alp-memory` crate
//! imports and exports them through its governed service.

use std::fmt;

use memory_entry::{Fields, Timestamp};
#[cfg(doc)]
use memory_entry::{Importance, MemoryType, Ttl};

mod parse;
mod write;

/// The version [`serialize_alp`] writes in the header.
pub const ALP_VERSION: &str = "80.0.0";

/// A parsed `.alp` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlpFile {
    /// The header's version exactly as written (`80.0.0`, `80.1`); always an `80.x` or `80.x.y` version.
    pub version: String,
    /// The `@memory` blocks, in file order.
    pub memories: Vec<AlpMemory>,
    /// Where each of `memories` is in the file, for checks made after parsing (an import's clock check).
    pub positions: Vec<AlpPosition>,
    /// The objects of other kinds (`@context`, `@feature`, …), in file order: read past, not interpreted.
    pub skipped: Vec<SkippedObject>,
}

/// One `@memory` block: the ALP 80 memory fields, validated with the entry model.
///
/// [`parse_alp`] only returns memories with a `type` and a `key` and a valid one-segment `id`; a hand-built one
/// without them is written by [`serialize_alp`] as given, and that file is then refused by [`parse_alp`]. `kind`
/// is not an `.alp` field: it is neither read nor written (a parsed memory has the default kind). Limits (value
/// length, longest TTL) are not checked here: they belong to the store, and an import checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlpMemory {
    /// One ID segment (`mem-001`); `alp memory import --project P` stores it as `project:P:<id>`.
    pub id: String,
    /// The stored knowledge, any text (possibly empty, possibly several lines).
    pub value: String,
    /// `type` and `key` (required in a file), `scope` (written `scope: -> feat-dashboard`), `importance` (written
    /// when not `medium`), `source`, `ttl`.
    pub fields: Fields,
    /// When the memory was created, truncated to whole milliseconds (the precision it is written with).
    pub created: Option<Timestamp>,
    /// When the memory was last updated, truncated to whole milliseconds.
    pub updated: Option<Timestamp>,
}

/// Where a `@memory` block is in its file: 1-based line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlpPosition {
    /// The `@memory` line.
    pub line: u64,
    /// The `created` field's line, when the block has one.
    pub created: Option<u64>,
    /// The `updated` field's line, when the block has one.
    pub updated: Option<u64>,
}

/// An object of another kind than `@memory`, read past with a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedObject {
    /// The kind without the `@` (`context`).
    pub kind: String,
    /// The line of the `@kind` line (1-based).
    pub line: u64,
    /// The value of its `id:` field, when it has a readable one at its first indentation level.
    pub id: Option<String>,
    /// One lowercase line for people: what was skipped and why.
    pub warning: String,
}

/// What is wrong with an `.alp` file. The codes are stable; new kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AlpErrorKind {
    /// No `!alp-version:` header before the first object (`missing_header`).
    MissingHeader,
    /// The header names a version other than `80.x` or `80.x.y` (`unsupported_version`).
    UnsupportedVersion,
    /// A `@memory` field that the format does not have (`unknown_field`).
    UnknownField,
    /// A `@memory` block without `id`, `type`, `key` or `value` (`missing_field`).
    MissingField,
    /// A field given twice in one block (`duplicate_field`).
    DuplicateField,
    /// Two blocks with the same `id` (`duplicate_id`).
    DuplicateId,
    /// A value the entry model refuses, or a field without a value (`bad_value`).
    BadValue,
    /// An unknown or malformed escape in a quoted string (`bad_escape`).
    BadEscape,
    /// A quoted string without its closing `"` on the same line (`unterminated_string`).
    UnterminatedString,
    /// A tab in indentation, or a field indented unlike the block's first field (`bad_indentation`).
    BadIndentation,
    /// Text where none may stand: outside a block, after a value, a line that is not `field: value`
    /// (`unexpected_text`).
    UnexpectedText,
}

impl AlpErrorKind {
    /// The stable machine-readable code (`unknown_field`, …).
    pub fn code(self) -> &'static str {
        match self {
            AlpErrorKind::MissingHeader => "missing_header",
            AlpErrorKind::UnsupportedVersion => "unsupported_version",
            AlpErrorKind::UnknownField => "unknown_field",
            AlpErrorKind::MissingField => "missing_field",
            AlpErrorKind::DuplicateField => "duplicate_field",
            AlpErrorKind::DuplicateId => "duplicate_id",
            AlpErrorKind::BadValue => "bad_value",
            AlpErrorKind::BadEscape => "bad_escape",
            AlpErrorKind::UnterminatedString => "unterminated_string",
            AlpErrorKind::BadIndentation => "bad_indentation",
            AlpErrorKind::UnexpectedText => "unexpected_text",
        }
    }
}

impl fmt::Display for AlpErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A file [`parse_alp`] refuses: the first problem found, with its 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct AlpParseError {
    line: u64,
    column: u64,
    kind: AlpErrorKind,
    message: String,
}

impl AlpParseError {
    fn new(kind: AlpErrorKind, line: u64, column: u64, message: String) -> AlpParseError {
        AlpParseError { line, column, kind, message }
    }

    /// The 1-based line (lines end at `\n`).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The 1-based column, in Unicode scalar values, of the offending character or field.
    pub fn column(&self) -> u64 {
        self.column
    }

    /// What kind of problem.
    pub fn kind(&self) -> AlpErrorKind {
        self.kind
    }

    /// The message without the position.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Reads an ALP 80 `.alp` file.
///
/// # Grammar
///
/// ```text
/// !alp-version: 80.0.0          the header: the first line that is not blank or a comment
///
/// // a comment
/// @memory                       a block: `@memory` at column 1, then its fields, indented
///   id: mem-002                 bare value: to the end of the line or a comment
///   type: architecture
///   key: "api-pattern"          quoted value, with escapes
///   value: |                    block scalar: the lines below, indented deeper than the field
///     All API routes follow the pattern:
///     /api/v1/{resource}
///   scope: -> feat-api          a reference (the `->` is optional when reading)
///
/// ---                           optional separator between objects
///
/// @context                      any other kind: skipped with a warning, its indented body ignored
///   ...
/// ```
///
/// - **Lines** end at `\n`; a `\r` before it is dropped, so CRLF files read like LF files. A leading byte order mark
///   is ignored. Blank lines (spaces and tabs only) may stand anywhere.
/// - **Header**: `!alp-version:` at column 1 and a version `80.x` or `80.x.y` (ASCII digits); any other version is
///   `unsupported_version`, anything else first is `missing_header`. It is kept as written in
///   [`AlpFile::version`].
/// - **Comments**: `//` at the start of a line (after any indentation) or after a space or tab starts a comment to the
///   end of the line, except inside a quoted string or a block scalar. So `https://x` and `"a // b"` survive, and
///   `value: x // note` is `x`.
/// - **Objects**: a line at column 1 is `@memory`, `@<kind>` (letters, digits, `_`, `-`), `---`, or a comment; any
///   of them may be followed by whitespace and a comment, except that the rest of an `@<kind>` line of another kind
///   is ignored. Other text at column 1 is `unexpected_text`, as is indented text outside an object.
/// - **Fields** are `name: value` lines, indented with spaces (a tab in indentation is `bad_indentation`), all by as
///   many spaces as the block's first field. Required: `id`, `type`, `key`, `value`; optional: `scope`,
///   `importance`, `source`, `ttl`, `created`, `updated`. An unknown field, a field given twice, a field without a
///   value, and an `id` used by two blocks are errors.
/// - **Bare values** run from the first non-blank character after the `:` to the end of the line or a comment,
///   trailing spaces and tabs trimmed. A value that starts with `"` is quoted, one that starts with `|` is a block
///   scalar.
/// - **Quoted values** are `"…"` on one line, with the escapes `\"` `\\` `\/` `\n` `\r` `\t` `\b` `\f`, `\u{X…}` (1
///   to 6 hex digits, a Unicode scalar value) and `\uXXXX` (4 hex digits; a surrogate pair as two of them), so a JSON
///   string literal is a quoted value. Other characters, tabs included, stand for themselves. After the closing `"`
///   only whitespace and a comment may follow.
/// - **Block scalars**: `|` alone (a comment may follow). Its content is the following lines that are blank or
///   indented by more spaces than the field; it ends at the first other line. The common indentation of its
///   non-blank lines is removed (a blank line loses up to that many spaces and keeps the rest); blank lines inside
///   are kept; trailing blank lines are dropped and the value ends with exactly one `\n` (YAML's default "clip"), or
///   is empty when there is no content line. `//` and `---` inside are content. YAML's `|-`, `|+` and indentation
///   indicators are not supported: write a quoted string instead.
/// - **Scope**: `scope: -> feat-x`; the `->` may be left out. Then a bare or quoted reference.
/// - **Values** are checked with the entry model: `type` ([`MemoryType`]), `importance` ([`Importance`]), `ttl`
///   ([`Ttl::parse`]: `90d`, not `0s` or `soon`), `created` and `updated` ([`Timestamp::parse`], any RFC 3339
///   timestamp, kept truncated to milliseconds; `created` may not be later than `updated`), `scope`
///   ([`memory_entry::ScopeRef`]), `key` and `source` ([`memory_entry::Key`], [`memory_entry::Source`]), and `id`
///   must be one valid ID segment ([`memory_id::validate_segment`], and no `:`).
///
/// # Errors
///
/// [`AlpParseError`] for the first problem in the file, with its [`AlpErrorKind`]. The column points at: the field
/// name (`unknown_field`, `duplicate_field`), the start of the value (`bad_value`, `duplicate_id`,
/// `unsupported_version`; the opening `"` of a quoted value, the `|` of a block scalar), the opening `"`
/// (`unterminated_string`), the `\` (`bad_escape`), the tab or the first character after the spaces
/// (`bad_indentation`), the offending text (`unexpected_text`); `missing_field` points at column 1 of the `@memory`
/// line, `missing_header` at column 1 of the first line that is not blank or a comment (line 1 when there is none).
pub fn parse_alp(text: &str) -> Result<AlpFile, AlpParseError> {
    parse::parse(text)
}

/// Writes `memories` as a canonical `.alp` file, in the order given (sorting is the caller's job).
///
/// The header is `!alp-version: 80.0.0`, then a blank line, then the blocks separated by a blank line, `---` and a
/// blank line. Fields are indented by two spaces and written in the order `id`, `type`, `key`, `value`, `scope`,
/// `importance`, `source`, `ttl`, `created`, `updated`, optional ones only when set (`importance` when not
/// `medium`). `key`, `value` and `source` are
/// double-quoted, escaping `"`, `\`, control characters and invisible characters that could hide text (line and
/// paragraph separators, bidirectional controls, the byte order mark); a value of several lines that ends with one
/// `\n` is written as a `|` block scalar instead, when that reads back exactly. `id` and `scope` are bare unless they
/// need quotes; timestamps are written in UTC with milliseconds.
///
/// For every file [`parse_alp`] accepts, `parse_alp(&serialize_alp(&file.memories))` gives back the same memories.
pub fn serialize_alp(memories: &[AlpMemory]) -> String {
    write::serialize(memories)
}

/// Shows user input inside backticks on one line, by the rule of [`memory_id::shown`], at most 60 characters.
fn shown(input: &str) -> impl fmt::Display + '_ {
    memory_id::shown_within(input, 60)
}
