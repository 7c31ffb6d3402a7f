//! The `.alp` file: the seed's examples, valid inputs, every parse error with its position and code, comments,
//! skipped objects, and properties (round trips, no panic on any input).

use memory_alp::{AlpErrorKind, AlpFile, AlpMemory, AlpParseError, parse_alp, serialize_alp};
use memory_entry::{Fields, Importance, Key, MemoryType, ScopeRef, Source, Timestamp, Ttl};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn parse(text: &str) -> AlpFile {
    parse_alp(text).unwrap_or_else(|e| panic!("{e}\n--- input ---\n{text}"))
}

fn parse_err(text: &str) -> AlpParseError {
    match parse_alp(text) {
        Ok(file) => panic!("parsed, expected an error: {file:?}\n--- input ---\n{text}"),
        Err(e) => e,
    }
}

/// Reading the canonical form of `file` gives back its memories.
fn assert_round_trip(file: &AlpFile) {
    let written = serialize_alp(&file.memories);
    let again = parse(&written);
    assert_eq!(again.memories, file.memories, "--- written ---\n{written}");
    assert_eq!(serialize_alp(&again.memories), written);
}

/// A file with the header and one `@memory` block holding `fields` (line 1 is the header, line 2 `@memory`, the
/// fields start on line 3).
fn one_block(fields: &str) -> String {
    format!("!alp-version: 80.0.0\n@memory\n{fields}")
}

/// `fields` plus whatever required fields it lacks, so that only the field under test can be wrong.
fn value_of(fields: &str) -> AlpMemory {
    let mut text = String::from(fields);
    for (name, line) in
        [("id", "  id: m\n"), ("type", "  type: task\n"), ("key", "  key: k\n"), ("value", "  value: v\n")]
    {
        if !fields.lines().any(|l| l.trim_start().starts_with(&format!("{name}:"))) {
            text.push_str(line);
        }
    }
    let file = parse(&one_block(&text));
    assert_eq!(file.memories.len(), 1);
    file.memories.into_iter().next().unwrap()
}

mod seed {
    use super::*;

    #[test]
    fn the_example_file_of_section_4() {
        let text = fixture("seed-memory.alp");
        let file = parse(&text);
        assert_eq!(file.version, "80.0.0");
        assert!(file.skipped.is_empty());
        let ids: Vec<&str> = file.memories.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["mem-001", "mem-002", "mem-003", "mem-004"]);
        assert_eq!(
            file.memories[1].value,
            "All API routes follow the pattern:\n/api/v1/{resource}\nControllers → Services → Repositories\n\
             Validation happens at the controller level using Zod schemas.\n"
        );
        assert_eq!(file.memories[2].fields.scope.as_ref().map(ScopeRef::as_str), Some("task-db-setup"));
        assert_eq!(file.memories[2].fields.ttl, Some(Ttl::parse("90d").unwrap()));
        insta::assert_debug_snapshot!("seed_memory_parsed", file);
        insta::assert_snapshot!("seed_memory_serialized", serialize_alp(&file.memories));
        assert_round_trip(&file);
    }

    #[test]
    fn the_update_of_section_5_4() {
        let file = parse(&fixture("seed-update.alp"));
        assert_eq!(file.memories.len(), 1);
        let memory = &file.memories[0];
        assert_eq!(memory.id, "mem-004");
        assert_eq!(memory.fields.memory_type, Some(MemoryType::Decision));
        assert_eq!(memory.fields.scope.as_ref().map(ScopeRef::as_str), Some("feat-dashboard"));
        assert_eq!(memory.fields.importance, Importance::Critical);
        // `// Updated` after the timestamp is a comment.
        assert_eq!(memory.updated, Some(Timestamp::parse("2026-07-23T10:00:00Z").unwrap()));
        insta::assert_snapshot!("seed_update_serialized", serialize_alp(&file.memories));
        assert_round_trip(&file);
    }

    #[test]
    fn the_update_of_section_5_4_alone_has_no_header() {
        let text = fixture("seed-update.alp");
        let snippet: String = text.lines().skip(3).map(|l| format!("{l}\n")).collect();
        assert!(snippet.starts_with("@memory\n"));
        let err = parse_err(&snippet);
        assert_eq!((err.kind(), err.line(), err.column()), (AlpErrorKind::MissingHeader, 1, 1));
    }

    #[test]
    fn the_blocks_of_section_6_3_have_no_id() {
        let err = parse_err(&fixture("seed-scope-conflict.alp"));
        assert_eq!((err.kind(), err.line(), err.column()), (AlpErrorKind::MissingField, 5, 1));
        assert_eq!(err.to_string(), "line 5, column 1: missing field `id` in the @memory at line 5");
    }

    #[test]
    fn the_blocks_of_section_6_3_with_ids() {
        let text = fixture("seed-scope-conflict.alp")
            .replace("@memory\n  type: architecture\n  key: \"database\"\n  value: \"PostgreSQL\"", "@memory\n  id: db-project\n  type: architecture\n  key: \"database\"\n  value: \"PostgreSQL\"")
            .replace("@memory\n  type: architecture\n  key: \"database\"\n  value: \"SQLite", "@memory\n  id: db-offline\n  type: architecture\n  key: \"database\"\n  value: \"SQLite");
        let file = parse(&text);
        let scopes: Vec<Option<&str>> =
            file.memories.iter().map(|m| m.fields.scope.as_ref().map(ScopeRef::as_str)).collect();
        assert_eq!(scopes, [None, Some("feat-offline-mode")]);
        assert_round_trip(&file);
    }
}

mod valid {
    use super::*;

    #[test]
    fn every_field() {
        let memory = value_of(
            "  id: mem-9\n  type: knowledge\n  key: \"k\"\n  value: \"v\"\n  scope: -> task-1\n  importance: low\n  \
             source: \"agent-x\"\n  ttl: 2w\n  created: 2026-01-02T03:04:05Z\n  updated: 2026-01-03T00:00:00.5+01:00\n",
        );
        assert_eq!(
            memory,
            AlpMemory {
                id: "mem-9".into(),
                value: "v".into(),
                fields: Fields {
                    memory_type: Some(MemoryType::Knowledge),
                    key: Some(Key::parse("k").unwrap()),
                    scope: Some(ScopeRef::parse("task-1").unwrap()),
                    importance: Importance::Low,
                    source: Some(Source::parse("agent-x").unwrap()),
                    ttl: Some(Ttl::parse("2w").unwrap()),
                    ..Fields::default()
                },
                created: Some(Timestamp::parse("2026-01-02T03:04:05.000Z").unwrap()),
                updated: Some(Timestamp::parse("2026-01-02T23:00:00.500Z").unwrap()),
            }
        );
    }

    /// Importance defaults to `medium` (ALP 80); the canonical writer leaves the default out.
    #[test]
    fn importance_absent_is_medium_and_written_only_when_not() {
        assert_eq!(value_of("").fields.importance, Importance::Medium);
        let explicit = value_of("  importance: medium\n");
        assert_eq!(explicit.fields.importance, Importance::Medium);
        assert!(!serialize_alp(&[explicit]).contains("importance"));
        assert!(serialize_alp(&[value_of("  importance: low\n")]).contains("  importance: low\n"));
    }

    #[test]
    fn versions_80_x_and_80_x_y() {
        for version in ["80.0.0", "80.1", "80.12.3", "80.0"] {
            let file = parse(&format!("!alp-version: {version}\n"));
            assert_eq!(file.version, version);
            assert!(file.memories.is_empty());
        }
        assert_eq!(parse("!alp-version:80.0.0   // the header\n").version, "80.0.0");
    }

    #[test]
    fn header_after_blank_lines_comments_and_a_byte_order_mark() {
        let file = parse("\u{FEFF}\n// a comment\n   \n!alp-version: 80.0.0\n");
        assert_eq!(file.version, "80.0.0");
    }

    #[test]
    fn timestamps_are_instants_kept_to_the_millisecond() {
        let memory = value_of("  created: 2026-07-23T10:00:00.123456789+02:00\n");
        assert_eq!(memory.created.unwrap().to_string(), "2026-07-23T08:00:00.123Z");
    }

    #[test]
    fn scope_with_or_without_arrow() {
        assert_eq!(
            value_of("  scope: -> feat-x\n").fields.scope.as_ref().map(ScopeRef::as_str),
            Some("feat-x")
        );
        assert_eq!(
            value_of("  scope: ->feat-x\n").fields.scope.as_ref().map(ScopeRef::as_str),
            Some("feat-x")
        );
        assert_eq!(value_of("  scope: feat-x\n").fields.scope.as_ref().map(ScopeRef::as_str), Some("feat-x"));
        assert_eq!(
            value_of("  scope: -> \"feat-x\"\n").fields.scope.as_ref().map(ScopeRef::as_str),
            Some("feat-x")
        );
    }

    #[test]
    fn quoted_values_and_escapes() {
        let cases = [
            (r#""""#, ""),
            (r#""a \"b\" \\ c""#, "a \"b\" \\ c"),
            (r#""tab\there\nnew\rline""#, "tab\there\nnew\rline"),
            (r#""\/\b\f""#, "/\u{8}\u{c}"),
            (r#""\u{41}\u{1F600}\u{0}""#, "A😀\0"),
            (r#""\u0041\u00e9\ud83d\ude00""#, "Aé😀"),
            ("\"raw\ttab and Tiếng Việt\"", "raw\ttab and Tiếng Việt"),
            (r#""a // b" // a comment"#, "a // b"),
            (r#""x"   "#, "x"),
        ];
        for (written, expected) in cases {
            assert_eq!(value_of(&format!("  value: {written}\n")).value, expected, "{written}");
        }
    }

    #[test]
    fn bare_values() {
        let cases = [
            ("plain text", "plain text"),
            ("trailing spaces and tabs \t ", "trailing spaces and tabs"),
            ("say \"hi\" there", "say \"hi\" there"),
            ("it's 'single' quoted", "it's 'single' quoted"),
            ("a//b", "a//b"),
            ("@memory ---", "@memory ---"),
        ];
        for (written, expected) in cases {
            assert_eq!(value_of(&format!("  value: {written}\n")).value, expected, "{written:?}");
        }
    }

    #[test]
    fn block_scalars() {
        let cases: [(&str, &str); 8] = [
            // Clip: one final newline, trailing blank lines dropped.
            ("  value: |\n    a\n    b\n\n\n", "a\nb\n"),
            // Internal blank lines kept, blank lines lose at most the common indentation.
            ("  value: |\n    a\n\n      \n    b\n", "a\n\n  \nb\n"),
            // The common indentation, not the first line's.
            ("  value: |\n      deeper\n    less\n", "  deeper\nless\n"),
            // Tabs after the indentation are content.
            ("  value: |\n    \tcode\n    x\n", "\tcode\nx\n"),
            // Comments, separators and objects inside are content.
            (
                "  value: |\n    // not a comment\n    ---\n    @memory\n    a // b\n",
                "// not a comment\n---\n@memory\na // b\n",
            ),
            // A comment may follow the indicator.
            ("  value: |   // a comment\n    x\n", "x\n"),
            // No content: empty.
            ("  value: |\n  type: task\n", ""),
            // Leading blank lines are kept; any indentation deeper than the field will do.
            ("  value: |\n\n   x\n", "\nx\n"),
        ];
        for (fields, expected) in cases {
            assert_eq!(value_of(fields).value, expected, "{fields:?}");
        }
    }

    #[test]
    fn block_scalar_ends_at_the_next_field_object_or_separator() {
        let file = parse(
            "!alp-version: 80.0.0\n@memory\n  id: a\n  type: task\n  key: k\n  value: |\n    one\n  // a comment\n  \
             source: s\n@memory\n  id: b\n  type: task\n  key: k\n  value: |\n    two\n---\n@memory\n  id: c\n  \
             type: task\n  key: k\n  value: |\n    three\n",
        );
        let values: Vec<&str> = file.memories.iter().map(|m| m.value.as_str()).collect();
        assert_eq!(values, ["one\n", "two\n", "three\n"]);
        assert_eq!(file.memories[0].fields.source.as_ref().map(Source::as_str), Some("s"));
    }

    #[test]
    fn crlf_reads_like_lf() {
        let lf = fixture("seed-memory.alp");
        let crlf = lf.replace('\n', "\r\n");
        assert_eq!(parse(&crlf), parse(&lf));
    }

    #[test]
    fn separators_blank_lines_and_any_field_indentation() {
        let file = parse(
            "!alp-version: 80.0.0\n---\n\n@memory\n\n    id: a\n\n    type: task\n    key: k\n    value: v\n---\n---\n",
        );
        assert_eq!(file.memories.len(), 1);
    }

    #[test]
    fn fields_in_any_order() {
        let memory = value_of("  value: v\n  ttl: 1s\n  key: k\n  type: agent\n  id: z\n");
        assert_eq!((memory.id.as_str(), memory.fields.memory_type), ("z", Some(MemoryType::Agent)));
    }

    #[test]
    fn every_type_and_importance() {
        for memory_type in MemoryType::ALL {
            assert_eq!(value_of(&format!("  type: {memory_type}\n")).fields.memory_type, Some(*memory_type));
        }
        for importance in Importance::ALL {
            assert_eq!(value_of(&format!("  importance: {importance}\n")).fields.importance, *importance);
        }
    }
}

mod comments {
    use super::*;

    #[test]
    fn urls_survive_in_bare_and_quoted_values() {
        assert_eq!(value_of("  value: https://example.com/a?b=c\n").value, "https://example.com/a?b=c");
        assert_eq!(
            value_of("  value: see https://example.com/x // where\n").value,
            "see https://example.com/x"
        );
        assert_eq!(value_of("  value: \"https://example.com/x // y\"\n").value, "https://example.com/x // y");
        assert_eq!(
            value_of("  source: https://ci.example.com\n").fields.source.as_ref().map(Source::as_str),
            Some("https://ci.example.com")
        );
    }

    #[test]
    fn a_comment_after_a_value_is_stripped() {
        assert_eq!(value_of("  value: x // note\n").value, "x");
        assert_eq!(value_of("  value: x\t// note\n").value, "x");
        assert_eq!(value_of("  ttl: 90d // three months\n").fields.ttl, Some(Ttl::parse("90d").unwrap()));
        assert_eq!(value_of("  id: mem-1 // the id\n").id, "mem-1");
        assert_eq!(
            value_of("  scope: -> feat-a // the feature\n").fields.scope.as_ref().map(ScopeRef::as_str),
            Some("feat-a")
        );
    }

    #[test]
    fn a_comment_line_inside_a_block_scalar_is_content() {
        assert_eq!(
            value_of("  value: |\n    first\n    // kept\n    last\n").value,
            "first\n// kept\nlast\n"
        );
    }

    #[test]
    fn comment_lines_anywhere_else() {
        let file = parse(
            "// before\n!alp-version: 80.0.0 // after the header\n// c\n@memory // after the object\n  // c\n      // \
             deeper c\n  id: a\n// at column 1\n  type: task\n\t// tab-indented c\n  key: k\n  value: v\n--- // c\n",
        );
        assert_eq!(file.memories.len(), 1);
    }
}

mod skipped {
    use super::*;

    #[test]
    fn other_kinds_are_skipped_and_listed() {
        let file = parse(
            "!alp-version: 80.0.0\n\n@context\n  id: ctx-1\n  name: \"anything\"\n  body: |\n    @memory\n    id: \
             nope\n\t\tweird: indentation\n---\n@memory\n  id: m\n  type: context\n  key: k\n  value: v\n\n@feature \
             feat-auth\n  title: x\n  id: \"feat-auth\"\n@Memory\n",
        );
        assert_eq!(file.memories.len(), 1);
        let skipped: Vec<(&str, u64, Option<&str>)> =
            file.skipped.iter().map(|s| (s.kind.as_str(), s.line, s.id.as_deref())).collect();
        assert_eq!(
            skipped,
            [("context", 3, Some("ctx-1")), ("feature", 17, Some("feat-auth")), ("Memory", 20, None)]
        );
        assert_eq!(file.skipped[0].warning, "skipped `@context` at line 3: only @memory objects are read");
    }
}

mod invalid {
    use super::*;
    use AlpErrorKind::*;

    /// (input, code, line, column)
    fn cases() -> Vec<(String, AlpErrorKind, u64, u64)> {
        let b = one_block;
        let full = |extra: &str| b(&format!("  id: m\n  type: task\n  key: k\n  value: v\n{extra}"));
        let s = |text: &str| text.to_owned();
        vec![
            // The header.
            (s(""), MissingHeader, 1, 1),
            (s("// only a comment\n\n"), MissingHeader, 1, 1),
            (s("\n// c\n@memory\n  id: m\n"), MissingHeader, 3, 1),
            (s("!alp-version 80.0.0\n"), MissingHeader, 1, 1),
            (s("  !alp-version: 80.0.0\n"), BadIndentation, 1, 1),
            (s("!alp-version: 79.0.0\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version: 81.0.0\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version: 80\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version: 80.0.0.0\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version: 80.0.0-beta\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version: 80.x\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version: v80.0.0\n"), UnsupportedVersion, 1, 15),
            (s("!alp-version:\n"), UnsupportedVersion, 1, 14),
            (s("!alp-version: 80.0.0\n!alp-version: 80.0.0\n"), UnexpectedText, 2, 1),
            // Fields.
            (b("  id: m\n  type: task\n  key: k\n  valeu: v\n"), UnknownField, 6, 3),
            (b("  Id: m\n"), UnknownField, 3, 3),
            (b("  type: task\n  key: k\n  value: v\n"), MissingField, 2, 1),
            (b("  id: m\n  key: k\n  value: v\n"), MissingField, 2, 1),
            (b("  id: m\n  type: task\n  value: v\n"), MissingField, 2, 1),
            (b("  id: m\n  type: task\n  key: k\n"), MissingField, 2, 1),
            (b(""), MissingField, 2, 1),
            (b("  id: m\n  id: n\n"), DuplicateField, 4, 3),
            (full("  ttl: 1d\n  ttl: 1d\n"), DuplicateField, 8, 3),
            (full("\n@memory\n  id: m\n"), DuplicateId, 9, 7),
            (full("---\n@memory\n  id: \"m\"\n"), DuplicateId, 9, 7),
            // Values.
            (b("  id: m\n  type: projekt\n"), BadValue, 4, 9),
            (b("  id: m\n  type: Project\n"), BadValue, 4, 9),
            (full("  importance: urgent\n"), BadValue, 7, 15),
            (full("  ttl: 0s\n"), BadValue, 7, 8),
            (full("  ttl: soon\n"), BadValue, 7, 8),
            (full("  ttl: 90\n"), BadValue, 7, 8),
            (full("  created: 2026-13-01T00:00:00Z\n"), BadValue, 7, 12),
            (full("  updated: yesterday\n"), BadValue, 7, 12),
            (full("  created: 2026-07-23\n"), BadValue, 7, 12),
            (b("  id: a:b\n"), BadValue, 3, 7),
            (b("  id: ..\n"), BadValue, 3, 7),
            (b("  id: .\n"), BadValue, 3, 7),
            (b("  id: a/b\n"), BadValue, 3, 7),
            (b("  id: a\\b\n"), BadValue, 3, 7),
            (b("  id: \"\"\n"), BadValue, 3, 7),
            (b("  id: \"a\\u{0}\"\n"), BadValue, 3, 7),
            (b(&format!("  id: {}\n", "x".repeat(201))), BadValue, 3, 7),
            (b("  id: m\n  type: task\n  key: \"\"\n"), BadValue, 5, 8),
            (b("  id: m\n  type: task\n  key: \"a\\nb\"\n"), BadValue, 5, 8),
            (b(&format!("  id: m\n  type: task\n  key: {}\n", "k".repeat(201))), BadValue, 5, 8),
            (full("  source: \"a\\tb\"\n"), BadValue, 7, 11),
            (full("  scope: -> feat x\n"), BadValue, 7, 13),
            (full("  scope: -> \"\"\n"), BadValue, 7, 13),
            (full("  scope: ->\n"), BadValue, 7, 12),
            (full("  scope: -> |\n    a\n"), BadValue, 7, 13),
            (b("  id: m\n  key:\n"), BadValue, 4, 7),
            (b("  id: m\n  key:    \n"), BadValue, 4, 11),
            (b("  id: m\n  key: // nothing\n"), BadValue, 4, 8),
            // Quoted strings.
            (b("  id: m\n  key: \"abc\n"), UnterminatedString, 4, 8),
            (b("  id: m\n  key: \"abc\\\"\n"), UnterminatedString, 4, 8),
            (b("  id: m\n  key: \"abc\\\n"), UnterminatedString, 4, 8),
            (b("  id: m\n  value: \"first\n  second\"\n"), UnterminatedString, 4, 10),
            (b("  id: m\n  key: \"a\\qb\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u{}\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u{110000}\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u{D800}\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u{1234567}\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u{12\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u{xyz}\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\uD800\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\uD800\\u0041\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\uDC00\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"a\\u12\"\n"), BadEscape, 4, 10),
            (b("  id: m\n  key: \"é\\x\"\n"), BadEscape, 4, 10),
            // Indentation.
            (b("\tid: m\n"), BadIndentation, 3, 1),
            (b("  \tid: m\n"), BadIndentation, 3, 3),
            (b("  id: m\n    type: task\n"), BadIndentation, 4, 5),
            (b("    id: m\n  type: task\n"), BadIndentation, 4, 3),
            (b("  id: m\n  value: bare\n    continued\n"), BadIndentation, 5, 5),
            (b("  id: m\n  value: |\n    x\n  \ttype: task\n"), BadIndentation, 6, 3),
            // Text where none may stand.
            (s("!alp-version: 80.0.0\nhello\n"), UnexpectedText, 2, 1),
            (s("!alp-version: 80.0.0\n  id: m\n"), UnexpectedText, 2, 3),
            (full("---\n  type: task\n"), UnexpectedText, 8, 3),
            (s("!alp-version: 80.0.0\n@memory extra\n"), UnexpectedText, 2, 9),
            (s("!alp-version: 80.0.0\n@memory// c\n"), UnexpectedText, 2, 8),
            (s("!alp-version: 80.0.0\n@ memory\n"), UnexpectedText, 2, 1),
            (s("!alp-version: 80.0.0\n---x\n"), UnexpectedText, 2, 4),
            (s("!alp-version: 80.0.0\n----\n"), UnexpectedText, 2, 4),
            (s("!alp-version: 80.0.0\nid: m\n"), UnexpectedText, 2, 1),
            (b("  id m\n"), UnexpectedText, 3, 3),
            (b("  : m\n"), UnexpectedText, 3, 3),
            (b("  id: m\n  key: \"k\" extra\n"), UnexpectedText, 4, 12),
            (b("  id: m\n  key: \"k\"// c\n"), UnexpectedText, 4, 11),
            (b("  id: m\n  value: |-\n    x\n"), UnexpectedText, 4, 11),
            (b("  id: m\n  value: |2\n    x\n"), UnexpectedText, 4, 11),
            (b("  id: m\n  value: | x\n"), UnexpectedText, 4, 12),
        ]
    }

    #[test]
    fn every_error_with_its_position_and_code() {
        let mut wrong = Vec::new();
        for (input, kind, line, column) in cases() {
            let err = parse_err(&input);
            if (err.kind(), err.line(), err.column()) != (kind, line, column) {
                wrong
                    .push(format!("expected {kind} at {line}:{column}, got {err:?}\n--- input ---\n{input}"));
            }
            assert_eq!(err.kind().code(), err.kind().to_string());
            assert!(err.to_string().starts_with(&format!("line {}, column {}: ", err.line(), err.column())));
            assert!(!err.message().contains('\n'), "{err}");
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    }

    #[test]
    fn messages() {
        let text: Vec<String> = cases()
            .into_iter()
            .map(|(input, _, _, _)| {
                let err = parse_err(&input);
                format!("{}: {err}", err.kind().code())
            })
            .collect();
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let err = parse_err(&one_block("  id: m\n  key: \"Tiếng Việt \\q\"\n"));
        assert_eq!((err.kind(), err.column()), (BadEscape, 20));
    }

    #[test]
    fn a_file_with_an_error_anywhere_gives_nothing() {
        let mut text = fixture("seed-memory.alp");
        text.push_str("@memory\n  id: late\n");
        assert_eq!(parse_err(&text).kind(), MissingField);
    }
}

mod serialize {
    use super::*;

    fn memory(value: &str) -> AlpMemory {
        AlpMemory {
            id: "m".into(),
            value: value.into(),
            fields: Fields {
                memory_type: Some(MemoryType::Task),
                key: Some(Key::parse("k").unwrap()),
                ..Fields::default()
            },
            created: None,
            updated: None,
        }
    }

    #[test]
    fn no_memories_is_a_header() {
        assert_eq!(serialize_alp(&[]), "!alp-version: 80.0.0\n");
        assert_eq!(parse(&serialize_alp(&[])).memories, []);
    }

    #[test]
    fn values_as_written() {
        let values = [
            "one line",
            "ends with a newline\n",
            "two\nlines\n",
            "two\nlines, no final newline",
            "two\nlines and blank lines at the end\n\n\n",
            "  all\n  lines\n  indented\n",
            "  first indented\nthen not\n",
            "\n\nleading blank lines\n\n  \n\tand a tab\n",
            "last line blank\n   \n",
            "carriage\r\nreturns\r\n",
            "\"quotes\" and \\backslashes\\ // and a comment\n---\n@memory\n",
            "invisible \u{202E}bidi\u{202C} and \u{2028} and \u{FEFF} and \u{0}\n",
            "",
            " ",
        ];
        let memories: Vec<AlpMemory> = values
            .iter()
            .enumerate()
            .map(|(i, value)| AlpMemory { id: format!("m{i}"), ..memory(value) })
            .collect();
        let written = serialize_alp(&memories);
        insta::assert_snapshot!(written);
        assert_eq!(parse(&written).memories, memories);
    }

    #[test]
    fn ids_and_scopes_quoted_only_when_needed() {
        let ids = [" lead", "trail ", "\"q", "|bar", "->x", "a b", "x #y", "Tiếng-Việt", "ok-id.v2"];
        let scopes = ["\"q", "|bar", "//x", "a//b", "->x", "ü", "ok"];
        let mut memories: Vec<AlpMemory> =
            ids.iter().map(|id| AlpMemory { id: (*id).to_owned(), ..memory("v") }).collect();
        memories.extend(scopes.iter().enumerate().map(|(i, scope)| {
            let mut scoped = AlpMemory { id: format!("s{i}"), ..memory("v") };
            scoped.fields.scope = Some(ScopeRef::parse(scope).unwrap());
            scoped
        }));
        let written = serialize_alp(&memories);
        insta::assert_snapshot!(written);
        assert_eq!(parse(&written).memories, memories);
    }
}

mod properties {
    use std::collections::HashSet;

    use proptest::prelude::*;
    use proptest::sample::select;

    use super::*;

    const PIECES: &[&str] = &[
        " ",
        "  ",
        "\t",
        "\n",
        "\n\n",
        "\r",
        "\r\n",
        "\"",
        "\\",
        "\\n",
        "//",
        " // note",
        "https://x.y/z",
        "---",
        "@memory",
        "@context",
        "|",
        "->",
        "!alp-version: 80.0.0",
        "  id: x",
        "Tiếng Việt có dấu",
        "ả ẫ ự ơ ư đ",
        "👍🏽",
        "\u{2028}",
        "\u{202E}",
        "\u{FEFF}",
        "\u{0}",
        "\u{7F}",
        "\u{85}",
        "é",
        "{}",
        "\\u{41}",
        ":",
    ];

    fn text_from(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
        prop::collection::vec(prop_oneof![3 => select(pieces).prop_map(str::to_owned), 2 => ".{0,6}"], 0..max)
            .prop_map(|parts| parts.concat())
    }

    fn one_line_text() -> impl Strategy<Value = String> {
        // No control characters: what `key`, `source` and the references accept.
        text_from(PIECES, 8).prop_map(|s| s.chars().filter(|c| !c.is_control()).collect())
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            text_from(PIECES, 16),
            // Lines that end with a newline: block scalars.
            prop::collection::vec(text_from(PIECES, 4), 1..6).prop_map(|lines| {
                lines.iter().map(|l| format!("{}\n", l.replace(['\n', '\r'], ""))).collect::<String>()
            }),
        ]
    }

    /// At most 200 bytes, cut at a character boundary.
    fn at_most_200_bytes(mut text: String) -> String {
        while text.len() > 200 {
            text.pop();
        }
        text
    }

    fn id() -> impl Strategy<Value = String> {
        one_line_text()
            .prop_map(|text| {
                let id: String = text.chars().filter(|c| !matches!(c, '/' | '\\' | ':')).collect();
                at_most_200_bytes(if matches!(id.as_str(), "" | "." | "..") { format!("i{id}") } else { id })
            })
            .prop_filter("an id is one valid segment", |id| memory_id::validate_segment(id).is_ok())
    }

    fn text_field() -> impl Strategy<Value = String> {
        one_line_text()
            .prop_map(|text| at_most_200_bytes(if text.is_empty() { "k".to_owned() } else { text }))
            .prop_filter("a text field", |text| Key::parse(text).is_ok())
    }

    fn scope() -> impl Strategy<Value = String> {
        text_field()
            .prop_map(|text| {
                let scope: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                if scope.is_empty() { "s".to_owned() } else { scope }
            })
            .prop_filter("a reference", |text| ScopeRef::parse(text).is_ok())
    }

    fn timestamp() -> impl Strategy<Value = Timestamp> {
        // Years 1 to 9999, whole milliseconds.
        (-62_135_596_800_000_i64..253_402_300_799_999).prop_map(|ms| Timestamp::from_unix_millis(ms).unwrap())
    }

    fn ttl() -> impl Strategy<Value = Ttl> {
        (1_u64..100_000, select(&["s", "m", "h", "d", "w"][..]))
            .prop_map(|(amount, unit)| Ttl::parse(&format!("{amount}{unit}")).unwrap())
    }

    fn memory() -> impl Strategy<Value = AlpMemory> {
        (
            (id(), select(MemoryType::ALL), text_field(), value()),
            (
                prop::option::of(scope()),
                select(Importance::ALL),
                prop::option::of(text_field()),
                prop::option::of(ttl()),
                prop::option::of(timestamp()),
                prop::option::of(timestamp()),
            ),
        )
            .prop_map(
                |((id, memory_type, key, value), (scope, importance, source, ttl, created, updated))| {
                    // A file holds `created` no later than `updated` (the parser refuses the other order).
                    let (created, updated) = match (created, updated) {
                        (Some(c), Some(u)) if c > u => (Some(u), Some(c)),
                        other => other,
                    };
                    let fields = Fields {
                        memory_type: Some(memory_type),
                        key: Some(Key::parse(&key).unwrap()),
                        scope: scope.map(|s| ScopeRef::parse(&s).unwrap()),
                        importance,
                        source: source.map(|s| Source::parse(&s).unwrap()),
                        ttl,
                        ..Fields::default()
                    };
                    AlpMemory { id, value, fields, created, updated }
                },
            )
    }

    fn memories() -> impl Strategy<Value = Vec<AlpMemory>> {
        prop::collection::vec(memory(), 0..5).prop_filter("unique ids", |memories| {
            let ids: HashSet<&str> = memories.iter().map(|m| m.id.as_str()).collect();
            ids.len() == memories.len()
        })
    }

    /// Lines that look like `.alp`, so that many inputs parse (or fail late).
    const LINES: &[&str] = &[
        "",
        "  ",
        "// c",
        "---",
        "@memory",
        "@context",
        "  id: a",
        "  id: b",
        "  id: \"c\\u{41}\"",
        "  type: task",
        "  type: projekt",
        "  key: k",
        "  key: \"k // q\"",
        "  value: v // c",
        "  value: |",
        "    block line",
        "      deeper",
        "    // kept",
        "\t",
        "  \t",
        "  scope: -> feat",
        "  importance: high",
        "  ttl: 90d",
        "  created: 2026-07-23T10:00:00.123456Z",
        "  updated: 2026-07-23T10:00:00+07:00",
        "  source: https://x",
        "  value: \"\\uD83D\\uDE00\"",
        "  valeu: x",
        "\r",
        "!alp-version: 80.1",
    ];

    fn alp_like() -> impl Strategy<Value = String> {
        prop::collection::vec(prop_oneof![4 => select(LINES).prop_map(str::to_owned), 1 => ".{0,12}"], 0..30)
            .prop_map(|lines| format!("!alp-version: 80.0.0\n{}", lines.join("\n")))
    }

    /// One line of text from the pieces, without line breaks.
    fn line_text() -> impl Strategy<Value = String> {
        text_from(PIECES, 6).prop_map(|text| text.replace(['\n', '\r'], ""))
    }

    /// A `value:` field as a person might write it: bare, quoted (escapes and all), or a block scalar whose lines
    /// are indented anyhow.
    fn value_field() -> impl Strategy<Value = String> {
        prop_oneof![
            line_text().prop_map(|text| format!("  value: {text}")),
            line_text().prop_map(|text| format!(
                "  value: \"{}\" // c",
                text.replace('\\', "\\\\").replace('"', "\\\"")
            )),
            prop::collection::vec((0_usize..3, line_text()), 0..6).prop_map(|lines| {
                let body: Vec<String> =
                    lines.iter().map(|(extra, text)| format!("    {}{text}", " ".repeat(*extra))).collect();
                format!("  value: |\n{}", body.join("\n"))
            }),
        ]
    }

    const OPTIONAL: &[&str] = &[
        "  scope: -> feat-a",
        "  scope: task-b // c",
        "  importance: low",
        "  source: \"agent \\\"x\\\"\"",
        "  source: https://ci.example.com/run",
        "  ttl: 90d",
        "  created: 2026-07-23T10:00:00.123456Z",
        "  updated: 2026-07-23T10:00:00+07:00 // c",
        "  // a comment",
        "",
    ];

    /// Files as people might write them: mostly valid blocks with odd values, comments and separators.
    fn written_by_hand() -> impl Strategy<Value = String> {
        let block = (
            select(&["a", "b", "mem-1", "\"x y\"", "Tiếng-Việt"][..]),
            select(MemoryType::ALL),
            one_line_text(),
            value_field(),
            prop::collection::vec(select(OPTIONAL), 0..4),
        )
            .prop_map(|(id, memory_type, key, value, optional)| {
                format!(
                    "@memory\n  id: {id}\n  type: {memory_type}\n  key: k{key}\n{value}\n{}",
                    optional.join("\n")
                )
            });
        let between = select(&["\n", "\n---\n\n", "\n// c\n", "\n@context\n  id: c\n"][..]);
        prop::collection::vec((block, between), 0..4).prop_map(|blocks| {
            let body: String =
                blocks.into_iter().map(|(block, between)| format!("{block}{between}")).collect();
            format!("!alp-version: 80.0.0\n{body}")
        })
    }

    /// What the fuzz target asserts: no panic, and what parses reads back the same after writing.
    fn check_any(text: &str) -> Result<(), TestCaseError> {
        match parse_alp(text) {
            Ok(file) => {
                let written = serialize_alp(&file.memories);
                let again = parse_alp(&written);
                prop_assert_eq!(
                    again.as_ref().map(|f| &f.memories),
                    Ok(&file.memories),
                    "written:\n{}",
                    written
                );
            }
            Err(e) => {
                // The position exists: a line of the file, a column at most one past its end.
                let lines: Vec<&str> = text.strip_prefix('\u{FEFF}').unwrap_or(text).split('\n').collect();
                let line = lines.get(usize::try_from(e.line()).unwrap() - 1);
                prop_assert!(line.is_some(), "{}", e);
                let line = line.unwrap();
                let width = line.strip_suffix('\r').unwrap_or(line).chars().count() + 1;
                prop_assert!(
                    (1..=width).contains(&usize::try_from(e.column()).unwrap()),
                    "{} (width {})",
                    e,
                    width
                );
                let message = e.to_string();
                prop_assert!(
                    !message.contains(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}']),
                    "{:?}",
                    message
                );
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn reading_what_was_written_gives_it_back(memories in memories()) {
            let written = serialize_alp(&memories);
            let file = parse_alp(&written);
            prop_assert!(file.is_ok(), "{:?}\n{}", file, written);
            let file = file.unwrap();
            prop_assert_eq!(&file.memories, &memories, "{}", written);
            prop_assert_eq!(file.version.as_str(), "80.0.0");
            prop_assert!(file.skipped.is_empty());
            prop_assert_eq!(serialize_alp(&file.memories), written);
        }

        #[test]
        fn any_text_never_panics(text in ".*") {
            check_any(&text)?;
        }

        #[test]
        fn any_text_after_a_header_never_panics(text in "(.|\n){0,200}") {
            check_any(&format!("!alp-version: 80.0.0\n@memory\n{text}"))?;
            check_any(&format!("!alp-version: 80.0.0\n{text}"))?;
        }

        #[test]
        fn alp_like_text_never_panics_and_reads_back(text in alp_like()) {
            check_any(&text)?;
        }

        #[test]
        fn hand_written_files_read_back(text in written_by_hand()) {
            check_any(&text)?;
        }
    }
}
