//! Refused inputs, as tables: the exact reason, the segment it names, and a few exact messages.

use memory_id::{InvalidIdReason, MemoryPrefix, SegmentProblem, parse_memory_id, validate_segment};

/// `input` is refused with reason `code` (and, for segment reasons, at 1-based `segment`).
fn check(input: &str, code: &str, segment: Option<usize>) {
    let err = parse_memory_id(input).expect_err(input);
    assert_eq!(err.reason().code(), code, "{input:?}");
    let index = match err.reason() {
        InvalidIdReason::Segment { index, .. } => Some(index),
        _ => None,
    };
    assert_eq!(index, segment, "{input:?}");
    assert_eq!(err.input(), input);
}

#[test]
fn traversal_is_never_an_id() {
    let cases = [
        ("../../.ssh/id_rsa", "unknown_scope", None),
        ("..", "unknown_scope", None),
        ("/", "unknown_scope", None),
        ("\\", "unknown_scope", None),
        ("/etc/passwd", "unknown_scope", None),
        ("file:///etc/passwd", "unknown_scope", None),
        ("shared:../x", "separator", Some(2)),
        ("shared:..", "dot_segment", Some(2)),
        ("shared:.", "dot_segment", Some(2)),
        ("shared:..:x", "dot_segment", Some(2)),
        ("shared:a/b", "separator", Some(2)),
        ("shared:a\\b", "separator", Some(2)),
        ("project:alp:../../x", "separator", Some(3)),
        ("private:worker:..", "dot_segment", Some(3)),
    ];
    for (input, code, segment) in cases {
        check(input, code, segment);
    }
}

#[test]
fn empty_segments() {
    let cases = [
        ("shared:", "empty", Some(2)),
        ("shared::x", "empty", Some(2)),
        (":shared:x", "unknown_scope", None),
        ("shared:x:", "empty", Some(3)),
        ("private::", "empty", Some(2)),
        ("", "unknown_scope", None),
    ];
    for (input, code, segment) in cases {
        check(input, code, segment);
    }
}

#[test]
fn scope_keywords_are_exact() {
    for input in ["Shared:x", "SHARED:x", "projects:x:y", "privat:x:y", " shared:x", "shared :x", "*:x"] {
        check(input, "unknown_scope", None);
    }
}

#[test]
fn too_few_parts() {
    for input in ["shared", "project", "private", "project:alp", "private:worker", "project:", "project:.."] {
        check(input, "too_few_parts", None);
    }
}

#[test]
fn control_characters() {
    let cases = [
        ("shared:a\0b", Some(2)),
        ("shared:a\tb", Some(2)),
        ("shared:a\nb", Some(2)),
        ("shared:a\u{7f}", Some(2)),
        ("shared:a\u{1f}", Some(2)),
        ("private:worker:x\r", Some(3)),
    ];
    for (input, segment) in cases {
        check(input, "control_char", segment);
    }
}

#[test]
fn limits() {
    check(&format!("shared:{}", "a".repeat(201)), "segment_too_long", Some(2));
    check(&format!("shared:{}a", "\u{e9}".repeat(100)), "segment_too_long", Some(2));
    check(&format!("shared:{}", "\u{20ac}".repeat(67)), "segment_too_long", Some(2));
    check(&format!("shared:{}", "a".repeat(1018)), "too_long", None);
    check(&format!("shared{}", ":a".repeat(64)), "too_many_segments", None);
}

#[test]
fn check_order() {
    let cases = [
        (format!("x{}", ":a".repeat(512)), "too_long", None),
        (format!("x{}", ":a".repeat(64)), "too_many_segments", None),
        ("foo:..:a/b".to_owned(), "unknown_scope", None),
        ("project:".to_owned(), "too_few_parts", None),
        ("shared:a/b:..".to_owned(), "separator", Some(2)),
        ("shared:..:a/b".to_owned(), "dot_segment", Some(2)),
        ("shared:a/\0".to_owned(), "separator", Some(2)),
        (format!("shared:\0{}", "a".repeat(201)), "control_char", Some(2)),
        ("shared:..\n".to_owned(), "control_char", Some(2)),
    ];
    for (input, code, segment) in cases {
        check(&input, code, segment);
    }
}

#[test]
fn structured_reasons() {
    assert_eq!(
        parse_memory_id("project:alp").unwrap_err().reason(),
        InvalidIdReason::TooFewParts { count: 2, min: 3 }
    );
    assert_eq!(
        parse_memory_id("shared:x::").unwrap_err().reason(),
        InvalidIdReason::Segment { index: 3, problem: SegmentProblem::Empty }
    );
    let long = "a".repeat(1100);
    assert_eq!(parse_memory_id(&long).unwrap_err().reason(), InvalidIdReason::TooLong { len: 1100 });
    let many = format!("shared{}", ":a".repeat(70));
    assert_eq!(parse_memory_id(&many).unwrap_err().reason(), InvalidIdReason::TooManySegments { count: 71 });
}

#[test]
fn segments_alone() {
    let cases = [
        ("", SegmentProblem::Empty),
        (".", SegmentProblem::DotSegment),
        ("..", SegmentProblem::DotSegment),
        ("a/b", SegmentProblem::Separator),
        ("a\\b", SegmentProblem::Separator),
        ("a\0", SegmentProblem::ControlChar),
        ("..\n", SegmentProblem::ControlChar),
    ];
    for (segment, problem) in cases {
        assert_eq!(validate_segment(segment), Err(problem), "{segment:?}");
    }
    assert_eq!(validate_segment(&"a".repeat(201)), Err(SegmentProblem::TooLong));
}

#[test]
fn prefixes() {
    let cases = [
        ("", "unknown_scope"),
        ("shared:", "empty"),
        ("project:", "empty"),
        ("project:..", "dot_segment"),
        ("private:../x", "separator"),
        ("Shared", "unknown_scope"),
    ];
    for (input, code) in cases {
        assert_eq!(MemoryPrefix::parse(input).unwrap_err().reason().code(), code, "{input:?}");
    }
}

#[test]
fn messages() {
    let long_segment = "a".repeat(201);
    let shown = "a".repeat(113);
    let cases = [
        ("shared:..".to_owned(), "invalid memory id `shared:..`: segment 2 is `..`, a dot segment".to_owned()),
        ("shared:".to_owned(), "invalid memory id `shared:`: segment 2 is ``, empty".to_owned()),
        ("shared:a/b".to_owned(), "invalid memory id `shared:a/b`: segment 2 is `a/b`, holding a path separator".to_owned()),
        (
            "shared:a\\b".to_owned(),
            "invalid memory id `shared:a\\b`: segment 2 is `a\\b`, holding a path separator".to_owned(),
        ),
        (
            "shared:a\nb".to_owned(),
            "invalid memory id `shared:a\\u{a}b`: segment 2 is `a\\u{a}b`, holding a control character".to_owned(),
        ),
        (
            "Shared:x".to_owned(),
            "invalid memory id `Shared:x`: `Shared` is not a scope (expected `shared`, `project` or `private`)".to_owned(),
        ),
        (
            "\u{2028}:x".to_owned(),
            "invalid memory id `\\u{2028}:x`: `\\u{2028}` is not a scope (expected `shared`, `project` or `private`)"
                .to_owned(),
        ),
        (
            "project:alp".to_owned(),
            "invalid memory id `project:alp`: it has 2 part(s), `project` needs at least 3 (`project:<projectId>:<segment>`)"
                .to_owned(),
        ),
        (
            "shared".to_owned(),
            "invalid memory id `shared`: it has 1 part(s), `shared` needs at least 2 (`shared:<segment>`)".to_owned(),
        ),
        (
            format!("shared{}", ":a".repeat(64)),
            format!("invalid memory id `shared{}…`: it has 65 segments, the limit is 64", ":a".repeat(57)),
        ),
        (
            format!("shared:{long_segment}"),
            format!("invalid memory id `shared:{shown}…`: segment 2 is `{}…`, longer than 200 bytes", "a".repeat(120)),
        ),
        (
            format!("shared:{}", "a".repeat(1018)),
            format!("invalid memory id `shared:{shown}…`: it is 1025 bytes long, the limit is 1024"),
        ),
    ];
    for (input, message) in cases {
        let err = parse_memory_id(&input).unwrap_err();
        assert_eq!(err.to_string(), message, "{input:?}");
    }
}

#[test]
fn messages_are_one_line() {
    for input in ["shared:a\nb", "x\r\n:y", "shared:\u{2028}\u{2029}\u{85}:\0", "\n\n\n", "private:w\norker"]
    {
        let message = parse_memory_id(input).unwrap_err().to_string();
        assert!(!message.chars().any(char::is_control), "{message:?}");
        assert!(!message.contains(['\u{2028}', '\u{2029}']), "{message:?}");
    }
}
