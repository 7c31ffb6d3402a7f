//! The line reader: frontmatter written as the YAML people write by hand, read without the general YAML parser.
//!
//! One `key: value` per line, in any order, with comments and blank lines, where a value is a scalar (plain words,
//! a quoted string, an integer, `true`/`false`, `null`, any RFC 3339 timestamp), a flow list of scalars
//! (`tags: [a, b]`), a block list of scalars (`- a` lines below `tags:`) or a mapping one level deep (indented
//! `key: value` lines below `meta:`, each value a scalar or a flow list of scalars, or nothing for `null`).
//! Whatever it cannot be sure of (deeper nesting, a list in a nested mapping, continuation lines, tags, anchors,
//! escapes it does not know, a plain scalar YAML could read as a float or a YAML 1.1 boolean) it leaves to the YAML
//! parser: [`read_lines`] answers `None`. Where it answers, its answer is exactly the YAML parser's (a property test
//! of the format checks it). The usual shapes of a timestamp are read here too, from their digits
//! ([`fast_timestamp`]).

use std::borrow::Cow;

use memory_entry::Timestamp;

/// A value as the line reader reads it, borrowing the frontmatter's text where no escape had to be decoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar<'a> {
    Str(Cow<'a, str>),
    Int(u64),
    Bool(bool),
    Null,
    Seq(Vec<Scalar<'a>>),
    /// A nested mapping, in file order, without duplicate keys.
    Map(Vec<(&'a str, Scalar<'a>)>),
}

/// Above this many keys, duplicates are looked for with a hash set rather than by comparing with every earlier key.
const LINEAR_KEY_CHECK: usize = 32;

/// Reads frontmatter written as the YAML people write by hand — one `key: value` per line, where a value is a
/// scalar (plain words, a quoted string, an integer, `true`/`false`, `null`), a flow list of scalars (`[a, b]`), a
/// block list of scalars (`- a` lines below a `key:` line) or a mapping one level deep (`key: value` lines below a
/// `key:` line, all at one indentation, each value a scalar, a flow list or nothing) — with comments and blank
/// lines, giving exactly the pairs the YAML parser would, in file order; `None` when any line is something it is
/// not sure of.
pub(crate) fn read_lines(text: &str) -> Option<Vec<(&str, Scalar<'_>)>> {
    let mut pairs: Vec<(&str, Scalar<'_>)> = Vec::new();
    let mut keys = Keys::default();
    let mut lines = text.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line)).peekable();
    while let Some(line) = lines.next() {
        if !is_clean_line(line) {
            return None;
        }
        if is_blank_or_comment(line) {
            continue;
        }
        if line.starts_with(' ') {
            return None; // indentation: a nested value or a continuation
        }
        let (key, value) = key_line(line)?;
        let value = match value {
            Some(value) => value,
            None => block_value(&mut lines)?,
        };
        if !keys.is_new(&pairs, key) {
            return None;
        }
        pairs.push((key, value));
    }
    Some(pairs)
}

/// The keys of one mapping so far, to find a duplicate (YAML refuses it): compared with every earlier key while
/// there are few, looked up in a hash set above [`LINEAR_KEY_CHECK`].
#[derive(Default)]
struct Keys<'a> {
    set: Option<std::collections::HashSet<&'a str>>,
}

impl<'a> Keys<'a> {
    /// Whether `key` is not yet a key of `pairs`, the mapping read so far, to which the caller then adds it.
    fn is_new(&mut self, pairs: &[(&'a str, Scalar<'a>)], key: &'a str) -> bool {
        match &mut self.set {
            Some(set) => set.insert(key),
            None if pairs.len() < LINEAR_KEY_CHECK => pairs.iter().all(|(other, _)| *other != key),
            None => {
                let mut set: std::collections::HashSet<&str> =
                    pairs.iter().map(|(other, _)| *other).collect();
                let new = set.insert(key);
                self.set = Some(set);
                new
            }
        }
    }
}

/// A `key: value` line without its indentation: the key and the value, or no value when nothing but spaces or a
/// comment follows the `:` (the value, if any, is on the lines below).
fn key_line(line: &str) -> Option<(&str, Option<Scalar<'_>>)> {
    let (key, rest) = line.split_once(':')?;
    if !is_plain_key(key) {
        return None;
    }
    if rest.is_empty() {
        return Some((key, None));
    }
    // `key:x` is not a mapping entry.
    let rest = rest.strip_prefix(' ')?.trim_start_matches(' ');
    let value = if rest.is_empty() || rest.starts_with('#') { None } else { Some(read_value(rest)?) };
    Some((key, value))
}

/// The value of a top-level `key:` line with nothing after it, read from the lines below. The first of them that
/// is not blank or a comment decides: `- item` (indented or not) starts a block list, any other indented line a
/// nested mapping, and anything else (the next key, or the end) leaves the value `null`.
fn block_value<'a>(lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>) -> Option<Scalar<'a>> {
    match next_content(lines)? {
        Some((body, spaces)) if spaces > 0 && !body.starts_with('-') => nested_map(lines),
        _ => block_list(lines),
    }
}

/// The next line below a `key:` line that is not blank or a comment (those are skipped), without its indentation,
/// and how many spaces that was; left in `lines`. `Some(None)` at the end, `None` when a line is not clean.
fn next_content<'a>(
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>,
) -> Option<Option<(&'a str, usize)>> {
    while let Some(&line) = lines.peek() {
        if !is_clean_line(line) {
            return None;
        }
        if !is_blank_or_comment(line) {
            let body = line.trim_start_matches(' ');
            return Some(Some((body, line.len() - body.len())));
        }
        lines.next();
    }
    Some(None)
}

/// A mapping one level down: `key: value` lines, all at the indentation of the first, up to the next line without
/// indentation; blank and comment lines anywhere. A value is what a top-level line holds, or nothing for `null`.
/// Anything else (a deeper line: nesting or a continuation; another indentation; `- item`; a duplicate key) is
/// `None`.
fn nested_map<'a>(lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>) -> Option<Scalar<'a>> {
    let mut pairs: Vec<(&str, Scalar<'_>)> = Vec::new();
    let mut keys = Keys::default();
    let mut indent = None;
    while let Some((body, spaces)) = next_content(lines)? {
        if spaces == 0 {
            break; // the next top-level key
        }
        if *indent.get_or_insert(spaces) != spaces {
            return None;
        }
        lines.next();
        // A list or mapping below a `key:` with nothing after it would be a second level: its first line, deeper
        // or `- item` at this indentation, is refused on the next turn, so here nothing after it is `null`.
        let (key, value) = key_line(body)?;
        let value = in_collection(value.unwrap_or(Scalar::Null))?;
        if !keys.is_new(&pairs, key) {
            return None;
        }
        pairs.push((key, value));
    }
    Some(Scalar::Map(pairs))
}

/// A value inside a list or a nested mapping, which is written back in JSON notation: JSON writes every character
/// from U+0020 on raw, and YAML refuses some of them raw (U+007F to U+009F, U+FFFE…), so a string that decoded to
/// one is left to the YAML parser (which drops the key, as it cannot be written back).
fn in_collection(value: Scalar<'_>) -> Option<Scalar<'_>> {
    // Only a decoded escape can give such a character: a clean line holds none raw.
    let raw_unsafe = |text: &str| text.chars().any(|c| c >= ' ' && needs_escape(c));
    match &value {
        Scalar::Str(Cow::Owned(text)) if raw_unsafe(text) => None,
        _ => Some(value),
    }
}

/// Whether a line holds nothing YAML treats differently from this reader: no character that is a line break to
/// some YAML reader (`\r`, U+0085, U+2028, U+2029), no tab, no other control or non-character.
fn is_clean_line(line: &str) -> bool {
    if line.is_ascii() {
        return !line.bytes().any(|b| b < 0x20 || b == 0x7f);
    }
    !line.chars().any(needs_escape)
}

/// Blank, or only a comment.
fn is_blank_or_comment(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    trimmed.is_empty() || trimmed.starts_with('#')
}

/// A key written plain: an ASCII letter or `_`, then letters, digits, `_` and `-`; not `null`, which YAML reads
/// as a null key (refused: keys are strings).
fn is_plain_key(key: &str) -> bool {
    let mut bytes = key.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !matches!(key, "null" | "Null" | "NULL")
}

/// The value after `key: ` (not empty, not a comment), up to an optional ` # comment`.
fn read_value(rest: &str) -> Option<Scalar<'_>> {
    match rest.as_bytes().first()? {
        b'"' => quoted_with_tail(double_quoted(rest)?),
        b'\'' => quoted_with_tail(single_quoted(rest)?),
        b'[' => {
            let (list, after) = flow_list(rest)?;
            tail_is_empty(after).then_some(list)
        }
        _ => plain_block(rest),
    }
}

fn quoted_with_tail<'a>((text, after): (Cow<'a, str>, &str)) -> Option<Scalar<'a>> {
    tail_is_empty(after).then_some(Scalar::Str(text))
}

/// What follows a closed value: only spaces, then a comment, which YAML starts only after a space.
fn tail_is_empty(after: &str) -> bool {
    let trimmed = after.trim_start_matches(' ');
    trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < after.len())
}

/// A plain scalar in block context, on one line: the text up to a ` #` comment, without trailing spaces. Words
/// separated by spaces are a string; one word is read by [`plain_word`].
fn plain_block(rest: &str) -> Option<Scalar<'_>> {
    let text = match rest.find(" #") {
        Some(at) => &rest[..at],
        None => rest,
    };
    let text = text.trim_end_matches(' ');
    if text.is_empty() || text.contains(": ") || text.ends_with(':') {
        return None;
    }
    if text.contains(' ') {
        return starts_plain_phrase(text).then_some(Scalar::Str(Cow::Borrowed(text)));
    }
    plain_word(text)
}

/// Whether several words can start with this character and read as a string: a letter or digit, `_`, `/` or `(`
/// (never a YAML indicator such as `-`, `?`, `&`, `*`, `!`, `|`, `>`, `%`, `@`, a quote or a bracket).
fn starts_plain_phrase(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '/' | '('))
}

/// One plain word the YAML parser reads as this exact string, integer, boolean or null, or `None` when it might
/// read it otherwise.
fn plain_word(text: &str) -> Option<Scalar<'_>> {
    let bytes = text.as_bytes();
    let first = *bytes.first()?;
    if first.is_ascii_digit() {
        if bytes.iter().all(u8::is_ascii_digit) && (text == "0" || first != b'0') {
            return text.parse::<u64>().ok().map(Scalar::Int);
        }
        let string = is_ttl_shape(text) || is_timestamp_shape(text) || is_date_shape(text);
        return string.then_some(Scalar::Str(Cow::Borrowed(text)));
    }
    match text {
        "true" | "True" | "TRUE" => return Some(Scalar::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Scalar::Bool(false)),
        "null" | "Null" | "NULL" | "~" => return Some(Scalar::Null),
        _ => {}
    }
    let starts = text.chars().next().is_some_and(|c| c.is_alphabetic() || matches!(c, '_' | '/'));
    let sure = starts
        && text.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | '+' | '\'' | '(' | ')' | ',' | '!')
        })
        && !text.ends_with(':')
        && !YAML_WORDS.iter().any(|word| text.eq_ignore_ascii_case(word));
    sure.then_some(Scalar::Str(Cow::Borrowed(text)))
}

/// `[a, b]`: plain words or phrases, quoted strings, integers, booleans and nulls, on one line; returns the list and
/// what follows the closing bracket.
fn flow_list(rest: &str) -> Option<(Scalar<'_>, &str)> {
    let mut rest = &rest[1..];
    let mut items = Vec::new();
    loop {
        rest = rest.trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix(']') {
            return Some((Scalar::Seq(items), after));
        }
        let (item, after) = match rest.as_bytes().first()? {
            b'"' => {
                let (text, after) = double_quoted(rest)?;
                (in_collection(Scalar::Str(text))?, after)
            }
            b'\'' => {
                let (text, after) = single_quoted(rest)?;
                (Scalar::Str(text), after)
            }
            _ => {
                let end = rest.find([',', ']']).unwrap_or(rest.len());
                let text = rest[..end].trim_end_matches(' ');
                // Inside brackets `:` and `#` may start a mapping or a comment, and quotes and brackets nest.
                if text.is_empty() || text.contains([':', '#', '[', ']', '{', '}', '"', '\'']) {
                    return None;
                }
                let item = if text.contains(' ') {
                    starts_plain_phrase(text).then_some(Scalar::Str(Cow::Borrowed(text)))?
                } else {
                    plain_word(text)?
                };
                (item, &rest[end..])
            }
        };
        items.push(item);
        rest = after.trim_start_matches(' ');
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with(']') {
            return None;
        }
    }
}

/// The value of a `key:` line with nothing after it: the `- item` lines that follow, all at one indentation (which
/// may be none), as a list; `null` when no such line follows.
fn block_list<'a>(lines: &mut std::iter::Peekable<impl Iterator<Item = &'a str>>) -> Option<Scalar<'a>> {
    let mut items = Vec::new();
    let mut indent = None;
    while let Some((body, spaces)) = next_content(lines)? {
        let item = body.strip_prefix("- ");
        match (indent, item) {
            (None, Some(_)) => indent = Some(spaces),
            // The next key: the list (or the null) ends here.
            (_, None) if spaces == 0 => break,
            (Some(expected), Some(_)) if spaces == expected => {}
            // A nested mapping, a continuation line, another indentation, or `-` with nothing after it.
            _ => return None,
        }
        lines.next();
        let text = item?.trim_start_matches(' ');
        let value = match text.as_bytes().first()? {
            b'"' => quoted_with_tail(double_quoted(text)?)?,
            b'\'' => quoted_with_tail(single_quoted(text)?)?,
            b'#' | b'[' => return None,
            _ => plain_block(text)?,
        };
        items.push(in_collection(value)?);
    }
    Some(if items.is_empty() { Scalar::Null } else { Scalar::Seq(items) })
}

/// `90d`: digits without a leading zero and a unit.
pub(crate) fn is_ttl_shape(text: &str) -> bool {
    // The unit is matched as a character, never by byte position: the text is arbitrary UTF-8.
    let Some(digits) = text.strip_suffix(['s', 'm', 'h', 'd', 'w']) else { return false };
    !digits.is_empty() && !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `2026-11-29`: a date alone, which YAML reads as a string.
fn is_date_shape(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
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

/// `"…"` with the escapes `\\ \" \/ \n \t \r`, `\xXX` and `\uXXXX`; returns the string (borrowed when it has no
/// escape) and what follows the closing quote.
fn double_quoted(rest: &str) -> Option<(Cow<'_, str>, &str)> {
    let inner = &rest[1..];
    if let Some(end) = inner.find(['"', '\\'])
        && inner.as_bytes()[end] == b'"'
    {
        let text = &inner[..end];
        if text.chars().any(|c| needs_escape(c) || c == '\t') {
            return None;
        }
        return Some((Cow::Borrowed(text), &inner[end + 1..]));
    }
    let mut out = String::new();
    let mut chars = inner.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((Cow::Owned(out), &inner[at + 1..])),
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

/// `'…'` with `''` for a quote; returns the string (borrowed when it has no `''`) and what follows the closing
/// quote.
fn single_quoted(rest: &str) -> Option<(Cow<'_, str>, &str)> {
    let inner = &rest[1..];
    let mut out: Option<String> = None;
    let mut chars = inner.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' if chars.peek().is_some_and(|(_, next)| *next == '\'') => {
                chars.next();
                out.get_or_insert_with(|| inner[..at].to_owned()).push('\'');
            }
            '\'' => {
                let text = match out {
                    Some(text) => Cow::Owned(text),
                    None => Cow::Borrowed(&inner[..at]),
                };
                return Some((text, &inner[at + 1..]));
            }
            c if needs_escape(c) || c == '\t' => return None,
            c => {
                if let Some(text) = &mut out {
                    text.push(c);
                }
            }
        }
    }
    None
}

/// An RFC 3339 timestamp of the usual shape — `2026-11-29T22:33:13Z`, with an optional fraction of up to nine
/// digits and `Z` or a `±hh:mm` offset — read from its digits without the general parser, to the millisecond.
/// `None` for anything else (the general parser decides).
pub(crate) fn fast_timestamp(value: &str) -> Option<Timestamp> {
    let b = value.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let digits = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    let shaped = b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':';
    if !shaped {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 7)?, digits(8, 10)?);
    let (hour, minute, second) = (digits(11, 13)?, digits(14, 16)?, digits(17, 19)?);
    let mut rest = &b[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let len = fraction.iter().take_while(|d| d.is_ascii_digit()).count();
        if len == 0 || len > 9 {
            return None;
        }
        let value = fraction[..len].iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
        nanos = value * 10u32.pow(u32::try_from(9 - len).ok()?);
        rest = &fraction[len..];
    }
    let offset_seconds = match rest {
        b"Z" => 0i32,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |d: &u8| d.is_ascii_digit().then(|| i32::from(d - b'0'));
            let (hours, minutes) = (digit(h1)? * 10 + digit(h2)?, digit(m1)? * 10 + digit(m2)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = hours * 3600 + minutes * 60;
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    if second > 59 {
        return None; // a leap second: the general parser decides
    }
    let month = time::Month::try_from(u8::try_from(month).ok()?).ok()?;
    let date =
        time::Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?).ok()?;
    let at = time::Time::from_hms_nano(
        u8::try_from(hour).ok()?,
        u8::try_from(minute).ok()?,
        u8::try_from(second).ok()?,
        nanos - nanos % 1_000_000,
    )
    .ok()?;
    let offset = time::UtcOffset::from_whole_seconds(offset_seconds).ok()?;
    let utc = date.with_time(at).assume_offset(offset).to_offset(time::UtcOffset::UTC);
    (1..=9999).contains(&utc.year()).then(|| Timestamp::from(utc))
}

/// Characters that must be escaped inside a double-quoted YAML string: those the YAML reader refuses or treats as
/// line breaks (besides tab, `\n` and `\r`, which get their own escapes).
pub(crate) fn needs_escape(c: char) -> bool {
    let code = u32::from(c);
    code < 0x20 || (0x7f..=0x9f).contains(&code) || matches!(code, 0x2028 | 0x2029 | 0xfeff | 0xfffe | 0xffff)
}

/// Words some YAML reader takes for something other than a string (null, booleans of YAML 1.1 and 1.2, special
/// floats), compared in lowercase.
pub(crate) const YAML_WORDS: &[&str] =
    &["null", "true", "false", "yes", "no", "on", "off", "y", "n", "inf", "nan", "infinity"];
