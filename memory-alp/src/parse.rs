//! The reader. It walks the lines once; a block scalar takes the lines below its field. No indexing or slicing that
//! could panic: every cut is at an ASCII byte found by a search, and goes through `str::get`.

use std::collections::HashMap;
use std::iter::Peekable;
use std::str::CharIndices;

use super::{AlpErrorKind, AlpFile, AlpMemory, AlpParseError, AlpPosition, SkippedObject, shown};
use memory_entry::{FieldName, FieldValue, Fields, Timestamp};

const HEADER: &str = "!alp-version:";

/// The fields of a `@memory` block, in the spec's order (also the order they are written in).
const FIELDS: [&str; 10] =
    ["id", "type", "key", "value", "scope", "importance", "source", "ttl", "created", "updated"];
const ID: usize = 0;
const TYPE: usize = 1;
const KEY: usize = 2;
const VALUE: usize = 3;
const SCOPE: usize = 4;
const IMPORTANCE: usize = 5;
const SOURCE: usize = 6;
const TTL: usize = 7;
const CREATED: usize = 8;
const UPDATED: usize = 9;

pub(super) fn parse(text: &str) -> Result<AlpFile, AlpParseError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line)).collect();
    let mut parser = Parser {
        lines: &lines,
        memories: Vec::new(),
        positions: Vec::new(),
        skipped: Vec::new(),
        ids: HashMap::new(),
    };
    let (version, first_body_line) = parser.header()?;
    parser.body(first_body_line)?;
    Ok(AlpFile { version, memories: parser.memories, positions: parser.positions, skipped: parser.skipped })
}

struct Parser<'t> {
    lines: &'t [&'t str],
    memories: Vec<AlpMemory>,
    positions: Vec<AlpPosition>,
    skipped: Vec<SkippedObject>,
    /// Every `id` read so far, with the line it is on.
    ids: HashMap<String, u64>,
}

/// Where the walk is: outside any object, inside a `@memory` block, or inside the body of a skipped object.
enum Open {
    Outside,
    Memory(Box<Block>),
    Skipped { index: usize, indent: Option<usize> },
}

/// A `@memory` block being read.
#[derive(Default)]
struct Block {
    line: u64,
    /// The indentation of its first field; every field has it.
    indent: Option<usize>,
    /// The line of each field already read, by its index in `FIELDS`.
    seen: [Option<u64>; 10],
    id: Option<String>,
    value: Option<String>,
    fields: Fields,
    created: Option<Timestamp>,
    updated: Option<Timestamp>,
}

impl Block {
    /// How messages name the block: by its `id` once read.
    fn name(&self) -> String {
        match &self.id {
            Some(id) => format!("@memory `{}`", shown(id)),
            None => format!("the @memory at line {}", self.line),
        }
    }
}

fn line_number(index: usize) -> u64 {
    u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1)
}

/// The 1-based column of the character at `byte`.
fn column(line: &str, byte: usize) -> u64 {
    let before = line.get(..byte).map_or(0, |s| s.chars().count());
    u64::try_from(before).unwrap_or(u64::MAX).saturating_add(1)
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_blank(line: &str) -> bool {
    line.bytes().all(is_space)
}

fn is_comment(line: &str) -> bool {
    line.trim_start_matches([' ', '\t']).starts_with("//")
}

fn leading_spaces(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// The first byte at or after `from` that is not a space or tab (or the line's length).
fn skip_space(line: &str, from: usize) -> usize {
    from + line.as_bytes().get(from..).map_or(0, |rest| rest.iter().take_while(|&&b| is_space(b)).count())
}

/// Where a comment starts at or after `from`: `//` at the start of the line or after a space or tab.
fn comment_start(line: &str, from: usize) -> Option<usize> {
    let bytes = line.as_bytes();
    line.match_indices("//").map(|(at, _)| at).find(|&at| {
        at >= from
            && (at == 0
                || at.checked_sub(1).and_then(|before| bytes.get(before)).is_some_and(|&b| is_space(b)))
    })
}

/// Where the text from `from` on stops being only whitespace and a comment: `None` when it is only that.
fn stray_text(line: &str, from: usize) -> Option<usize> {
    let end = comment_start(line, from).unwrap_or(line.len());
    let start = skip_space(line, from);
    (start < end).then_some(start)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The text from `from` to the end of the line, for messages.
fn rest(line: &str, from: usize) -> &str {
    line.get(from..).unwrap_or_default().trim_end_matches([' ', '\t'])
}

fn supported_version(version: &str) -> bool {
    let mut parts = version.split('.');
    let all_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    parts.next() == Some("80") && {
        let rest: Vec<&str> = parts.collect();
        (1..=2).contains(&rest.len()) && rest.iter().all(|part| all_digits(part))
    }
}

fn error(kind: AlpErrorKind, line: u64, column: u64, message: String) -> AlpParseError {
    AlpParseError::new(kind, line, column, message)
}

fn unexpected(line_text: &str, number: u64, at: usize, after: &str) -> AlpParseError {
    error(
        AlpErrorKind::UnexpectedText,
        number,
        column(line_text, at),
        format!("unexpected text `{}` after {after}", shown(rest(line_text, at))),
    )
}

/// A value as read, before the field's checks.
struct Scalar {
    text: String,
    /// The byte where the value starts on the field's line (its opening `"`, its `|`).
    at: usize,
    /// The index of the last line it uses (below the field's line for a block scalar).
    last_line: usize,
}

impl<'t> Parser<'t> {
    fn line(&self, index: usize) -> &'t str {
        self.lines.get(index).copied().unwrap_or_default()
    }

    /// Reads the header; returns the version and the index of the line after it.
    fn header(&self) -> Result<(String, usize), AlpParseError> {
        for (index, &line) in self.lines.iter().enumerate() {
            if is_blank(line) || is_comment(line) {
                continue;
            }
            let number = line_number(index);
            let Some(after) = line.strip_prefix(HEADER) else {
                let found = line.trim_start_matches([' ', '\t']);
                if found.starts_with(HEADER) {
                    return Err(error(
                        AlpErrorKind::BadIndentation,
                        number,
                        1,
                        "the header `!alp-version:` must start at column 1".to_owned(),
                    ));
                }
                return Err(error(
                    AlpErrorKind::MissingHeader,
                    number,
                    1,
                    format!("missing header `!alp-version: 80.0.0` before `{}`", shown(rest(found, 0))),
                ));
            };
            let start = skip_space(line, line.len() - after.len());
            let end = comment_start(line, start).unwrap_or(line.len());
            let version = line.get(start..end).unwrap_or_default().trim_end_matches([' ', '\t']);
            if !supported_version(version) {
                return Err(error(
                    AlpErrorKind::UnsupportedVersion,
                    number,
                    column(line, start),
                    format!("unsupported version `{}` (this reader reads 80.x)", shown(version)),
                ));
            }
            return Ok((version.to_owned(), index + 1));
        }
        Err(error(AlpErrorKind::MissingHeader, 1, 1, "missing header `!alp-version: 80.0.0`".to_owned()))
    }

    fn body(&mut self, first: usize) -> Result<(), AlpParseError> {
        let mut open = Open::Outside;
        let mut index = first;
        while index < self.lines.len() {
            let line = self.line(index);
            let number = line_number(index);
            if is_blank(line) || is_comment(line) {
                index += 1;
                continue;
            }
            let spaces = leading_spaces(line);
            if spaces == 0 && !line.starts_with('\t') {
                let previous = std::mem::replace(&mut open, Open::Outside);
                self.close(previous)?;
                open = self.object_line(line, number)?;
                index += 1;
                continue;
            }
            if let Open::Skipped { index: skipped, indent } = &mut open {
                let indent = *indent.get_or_insert(spaces);
                self.skipped_id(*skipped, line, spaces, indent);
                index += 1;
                continue;
            }
            if line.as_bytes().get(spaces) == Some(&b'\t') {
                return Err(error(
                    AlpErrorKind::BadIndentation,
                    number,
                    column(line, spaces),
                    "tab in indentation (indent with spaces)".to_owned(),
                ));
            }
            match &mut open {
                Open::Memory(block) => index = self.field(block, index)? + 1,
                Open::Outside | Open::Skipped { .. } => {
                    return Err(error(
                        AlpErrorKind::UnexpectedText,
                        number,
                        column(line, spaces),
                        format!("unexpected text `{}` outside a @memory block", shown(rest(line, spaces))),
                    ));
                }
            }
        }
        self.close(open)
    }

    /// A line at column 1 that is not blank or a comment: an object, a separator, or an error.
    fn object_line(&mut self, line: &str, number: u64) -> Result<Open, AlpParseError> {
        if let Some(after_at) = line.strip_prefix('@') {
            let len = after_at.bytes().take_while(|&b| is_name_byte(b)).count();
            let kind = after_at.get(..len).unwrap_or_default();
            if kind.is_empty() {
                return Err(error(
                    AlpErrorKind::UnexpectedText,
                    number,
                    1,
                    format!("expected an object kind after `@`, found `{}`", shown(rest(line, 0))),
                ));
            }
            if kind == "memory" {
                if let Some(at) = stray_text(line, 1 + len) {
                    return Err(unexpected(line, number, at, "`@memory`"));
                }
                return Ok(Open::Memory(Box::new(Block { line: number, ..Block::default() })));
            }
            self.skipped.push(SkippedObject {
                kind: kind.to_owned(),
                line: number,
                id: None,
                warning: format!(
                    "skipped `@{}` at line {number}: only @memory objects are read",
                    shown(kind)
                ),
            });
            return Ok(Open::Skipped { index: self.skipped.len() - 1, indent: None });
        }
        if line.starts_with("---") {
            if let Some(at) = stray_text(line, 3) {
                return Err(unexpected(line, number, at, "`---`"));
            }
            return Ok(Open::Outside);
        }
        if line.starts_with(HEADER) {
            return Err(error(
                AlpErrorKind::UnexpectedText,
                number,
                1,
                "a second `!alp-version:` header".to_owned(),
            ));
        }
        Err(error(
            AlpErrorKind::UnexpectedText,
            number,
            1,
            format!("unexpected text `{}` outside a @memory block", shown(rest(line, 0))),
        ))
    }

    /// Notes the `id:` of a skipped object, when a line at its first indentation has a readable one.
    fn skipped_id(&mut self, index: usize, line: &str, spaces: usize, indent: usize) {
        let Some(object) = self.skipped.get_mut(index) else { return };
        if object.id.is_some() || spaces != indent {
            return;
        }
        let Some(after) = line.get(spaces..).and_then(|field| field.strip_prefix("id:")) else { return };
        let start = skip_space(line, line.len() - after.len());
        let id = if line.as_bytes().get(start) == Some(&b'"') {
            quoted(line, 0, start).ok().map(|(text, _)| text)
        } else {
            let end = comment_start(line, start).unwrap_or(line.len());
            line.get(start..end).map(|text| text.trim_end_matches([' ', '\t']).to_owned())
        };
        object.id = id.filter(|id| !id.is_empty());
    }

    /// Ends an object: a `@memory` block must have its required fields.
    fn close(&mut self, open: Open) -> Result<(), AlpParseError> {
        let Open::Memory(block) = open else { return Ok(()) };
        let name = block.name();
        let missing = |field: &str| {
            error(AlpErrorKind::MissingField, block.line, 1, format!("missing field `{field}` in {name}"))
        };
        let Some(id) = block.id else { return Err(missing("id")) };
        if block.fields.memory_type.is_none() {
            return Err(missing("type"));
        }
        if block.fields.key.is_none() {
            return Err(missing("key"));
        }
        let Some(value) = block.value else { return Err(missing("value")) };
        if let (Some(created), Some(updated), Some(line)) =
            (block.created, block.updated, block.seen[CREATED])
            && created > updated
        {
            return Err(error(
                AlpErrorKind::BadValue,
                line,
                1,
                format!("`created` {created} is later than `updated` {updated} in {name}"),
            ));
        }
        self.positions.push(AlpPosition {
            line: block.line,
            created: block.seen[CREATED],
            updated: block.seen[UPDATED],
        });
        self.memories.push(AlpMemory {
            id,
            value,
            fields: block.fields,
            created: block.created,
            updated: block.updated,
        });
        Ok(())
    }

    /// Reads the field on line `index` into `block`; returns the index of the last line it used.
    fn field(&mut self, block: &mut Block, index: usize) -> Result<usize, AlpParseError> {
        let line = self.line(index);
        let number = line_number(index);
        let spaces = leading_spaces(line);
        let indent = *block.indent.get_or_insert(spaces);
        if spaces != indent {
            return Err(error(
                AlpErrorKind::BadIndentation,
                number,
                column(line, spaces),
                format!(
                    "field indented by {spaces} spaces in {}, whose first field is indented by {indent}",
                    block.name()
                ),
            ));
        }
        let name_len = line.bytes().skip(spaces).take_while(|&b| is_name_byte(b)).count();
        let name = line.get(spaces..spaces + name_len).unwrap_or_default();
        if name.is_empty() || line.as_bytes().get(spaces + name_len) != Some(&b':') {
            return Err(error(
                AlpErrorKind::UnexpectedText,
                number,
                column(line, spaces),
                format!("expected `field: value` in {}, found `{}`", block.name(), shown(rest(line, spaces))),
            ));
        }
        let name_column = column(line, spaces);
        let Some(field) = FIELDS.iter().position(|&known| known == name) else {
            return Err(error(
                AlpErrorKind::UnknownField,
                number,
                name_column,
                format!("unknown field `{name}` in {} (expected {})", block.name(), FIELDS.join(", ")),
            ));
        };
        if let Some(first) = block.seen.get(field).copied().flatten() {
            return Err(error(
                AlpErrorKind::DuplicateField,
                number,
                name_column,
                format!("duplicate field `{name}` in {} (first at line {first})", block.name()),
            ));
        }
        if let Some(seen) = block.seen.get_mut(field) {
            *seen = Some(number);
        }

        let mut start = skip_space(line, spaces + name_len + 1);
        if field == SCOPE && line.get(start..).is_some_and(|value| value.starts_with("->")) {
            start = skip_space(line, start + 2);
        }
        let Some(scalar) = self.scalar(index, start, indent)? else {
            return Err(error(
                AlpErrorKind::BadValue,
                number,
                column(line, start),
                format!("field `{name}` has no value in {}", block.name()),
            ));
        };
        let bad = |detail: &str| {
            error(
                AlpErrorKind::BadValue,
                number,
                column(line, scalar.at),
                format!("invalid {name} in {}: {}", block.name(), one_line(detail)),
            )
        };
        let text = scalar.text;
        match field {
            ID => {
                check_id(&text).map_err(|detail| {
                    error(
                        AlpErrorKind::BadValue,
                        number,
                        column(line, scalar.at),
                        format!("invalid id `{}`: {detail}", shown(&text)),
                    )
                })?;
                if let Some(first) = self.ids.get(&text) {
                    return Err(error(
                        AlpErrorKind::DuplicateId,
                        number,
                        column(line, scalar.at),
                        format!("duplicate id `{}` (first at line {first})", shown(&text)),
                    ));
                }
                self.ids.insert(text.clone(), number);
                block.id = Some(text);
            }
            TYPE | KEY | SCOPE | IMPORTANCE | SOURCE | TTL => {
                let name = match field {
                    TYPE => FieldName::Type,
                    KEY => FieldName::Key,
                    SCOPE => FieldName::Scope,
                    IMPORTANCE => FieldName::Importance,
                    SOURCE => FieldName::Source,
                    _ => FieldName::Ttl,
                };
                block.fields.set(FieldValue::parse(name, &text).map_err(|e| bad(e.message()))?);
            }
            VALUE => block.value = Some(text),
            CREATED | UPDATED => {
                let at = Timestamp::parse(&text).map_err(|e| bad(e.message()))?.truncated_to_millis();
                if field == CREATED {
                    block.created = Some(at);
                } else {
                    block.updated = Some(at);
                }
            }
            _ => {}
        }
        Ok(scalar.last_line)
    }

    /// Reads the value that starts at byte `start` of line `index`: quoted, block scalar or bare. `None` when there
    /// is none (the line ends, or a comment starts).
    fn scalar(&self, index: usize, start: usize, indent: usize) -> Result<Option<Scalar>, AlpParseError> {
        let line = self.line(index);
        let number = line_number(index);
        match line.as_bytes().get(start) {
            None => Ok(None),
            Some(b'"') => {
                let (text, end) = quoted(line, number, start)?;
                if let Some(at) = stray_text(line, end) {
                    return Err(unexpected(line, number, at, "the quoted value"));
                }
                Ok(Some(Scalar { text, at: start, last_line: index }))
            }
            Some(b'|') => {
                if let Some(at) = stray_text(line, start + 1) {
                    return Err(error(
                        AlpErrorKind::UnexpectedText,
                        number,
                        column(line, at),
                        format!(
                            "unexpected text `{}` after `|` (only a plain `|` block scalar is supported; quote the \
                             value instead)",
                            shown(rest(line, at))
                        ),
                    ));
                }
                let (text, last_line) = self.block_scalar(index, indent);
                Ok(Some(Scalar { text, at: start, last_line }))
            }
            Some(_) => {
                let end = comment_start(line, start).unwrap_or(line.len());
                let text = line.get(start..end).unwrap_or_default().trim_end_matches([' ', '\t']);
                if text.is_empty() {
                    return Ok(None);
                }
                Ok(Some(Scalar { text: text.to_owned(), at: start, last_line: index }))
            }
        }
    }

    /// The content of the block scalar whose field, indented by `indent` spaces, is on line `index`; and the index
    /// of its last content line (`index` when it has none).
    fn block_scalar(&self, index: usize, indent: usize) -> (String, usize) {
        let mut taken: Vec<&str> = Vec::new();
        let mut last_line = index;
        for (offset, &line) in self.lines.iter().enumerate().skip(index + 1) {
            if is_blank(line) {
                taken.push(line);
            } else if leading_spaces(line) > indent {
                taken.push(line);
                last_line = offset;
            } else {
                break;
            }
        }
        // Trailing blank lines belong to the file, not to the value.
        while taken.last().is_some_and(|line| is_blank(line)) {
            taken.pop();
        }
        let Some(common) = taken.iter().filter(|line| !is_blank(line)).map(|line| leading_spaces(line)).min()
        else {
            return (String::new(), index);
        };
        let mut text = String::new();
        for line in taken {
            let cut = leading_spaces(line).min(common);
            text.push_str(line.get(cut..).unwrap_or_default());
            text.push('\n');
        }
        (text, last_line)
    }
}

/// `message` on one line, by the rule of [`memory_id::shown`], whatever its length (the entry model's messages quote
/// input that may hold a line separator).
fn one_line(message: &str) -> String {
    memory_id::shown_within(message, usize::MAX).to_string()
}

/// Why `id` is not one ID segment, if it is not.
fn check_id(id: &str) -> Result<(), String> {
    use memory_id::SegmentProblem;
    if let Err(problem) = memory_id::validate_segment(id) {
        let detail = match problem {
            SegmentProblem::Empty => "it is empty",
            SegmentProblem::DotSegment => "it is a dot segment",
            SegmentProblem::Separator => "it holds a path separator",
            SegmentProblem::ControlChar => "it holds a control character",
            SegmentProblem::TooLong => "it is longer than 200 bytes",
            _ => "it is not a valid id segment",
        };
        return Err(detail.to_owned());
    }
    if id.contains(':') {
        return Err(
            "it holds `:` (an id is one segment; an import stores it as `project:<P>:<id>`)".to_owned()
        );
    }
    Ok(())
}

/// Reads the quoted string whose `"` is at byte `open` of `line`; returns its text and the byte after the closing
/// `"`.
fn quoted(line: &str, number: u64, open: usize) -> Result<(String, usize), AlpParseError> {
    let unterminated = || {
        error(
            AlpErrorKind::UnterminatedString,
            number,
            column(line, open),
            "quoted string without its closing `\"` on the same line".to_owned(),
        )
    };
    let body = line.get(open + 1..).ok_or_else(unterminated)?;
    let base = open + 1;
    let mut chars = body.char_indices().peekable();
    let mut text = String::new();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Ok((text, base + at + 1)),
            '\\' => {
                let bad = |escape: &str, why: &str| {
                    error(
                        AlpErrorKind::BadEscape,
                        number,
                        column(line, base + at),
                        format!("invalid escape `{}` in a quoted string{why}", shown(escape)),
                    )
                };
                let Some((_, escape)) = chars.next() else { return Err(unterminated()) };
                let decoded = match escape {
                    '"' => '"',
                    '\\' => '\\',
                    '/' => '/',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'b' => '\u{8}',
                    'f' => '\u{C}',
                    'u' => unicode_escape(&mut chars).map_err(|end| {
                        let shown = body.get(at..end).or_else(|| body.get(at..)).unwrap_or_default();
                        bad(shown, " (expected `\\u{…}` or `\\uXXXX` naming a unicode scalar value)")
                    })?,
                    other => {
                        let mut shown = String::from('\\');
                        shown.push(other);
                        return Err(bad(&shown, ""));
                    }
                };
                text.push(decoded);
            }
            other => text.push(other),
        }
    }
    Err(unterminated())
}

/// Decodes what follows `\u`: `{X…}` (1 to 6 hex digits) or `XXXX` (a surrogate pair as `\uXXXX\uXXXX`). On error,
/// the byte (relative to the quoted body) where the shown escape should end.
fn unicode_escape(chars: &mut Peekable<CharIndices<'_>>) -> Result<char, usize> {
    let end_here = |chars: &mut Peekable<CharIndices<'_>>| chars.peek().map_or(usize::MAX, |&(at, _)| at);
    if chars.peek().is_some_and(|&(_, c)| c == '{') {
        chars.next();
        let mut value: u32 = 0;
        let mut digits = 0;
        loop {
            let Some((at, c)) = chars.next() else { return Err(usize::MAX) };
            if c == '}' {
                if digits == 0 {
                    return Err(at + 1);
                }
                return char::from_u32(value).ok_or(at + 1);
            }
            let Some(digit) = c.to_digit(16) else { return Err(at + c.len_utf8()) };
            digits += 1;
            if digits > 6 {
                return Err(at + 1);
            }
            value = value * 16 + digit;
        }
    }
    let first = hex4(chars).ok_or_else(|| end_here(chars))?;
    match first {
        0xD800..=0xDBFF => {
            let low = match (chars.next(), chars.next()) {
                (Some((_, '\\')), Some((_, 'u'))) => hex4(chars).ok_or_else(|| end_here(chars))?,
                _ => return Err(end_here(chars)),
            };
            if !(0xDC00..=0xDFFF).contains(&low) {
                return Err(end_here(chars));
            }
            char::from_u32(0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)).ok_or_else(|| end_here(chars))
        }
        _ => char::from_u32(first).ok_or_else(|| end_here(chars)),
    }
}

fn hex4(chars: &mut Peekable<CharIndices<'_>>) -> Option<u32> {
    let mut value = 0;
    for _ in 0..4 {
        let digit = chars.peek().and_then(|&(_, c)| c.to_digit(16))?;
        chars.next();
        value = value * 16 + digit;
    }
    Some(value)
}
