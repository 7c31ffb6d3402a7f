//! Refused grants and role names: exact reasons and messages.

use memory_id::SegmentProblem;
use memory_policy::{Grant, InvalidGrantReason, InvalidRoleReason, Role};

fn check(input: &str, expected: InvalidGrantReason) {
    let err = Grant::parse(input).expect_err(input);
    assert_eq!(err.reason(), expected, "{input:?}");
    assert_eq!(err.input(), input);
}

#[test]
fn grants() {
    use InvalidGrantReason::{MisplacedWildcard, Segment, TooLong, TooManySegments, UnknownScope};
    let seg = |index, problem| Segment { index, problem };
    let cases = [
        ("", UnknownScope),
        ("*", UnknownScope),
        ("Shared", UnknownScope),
        ("../../.ssh/id_rsa", UnknownScope),
        ("shared:**", MisplacedWildcard { index: 2 }),
        ("shared:a*", MisplacedWildcard { index: 2 }),
        ("project:*:goals", MisplacedWildcard { index: 2 }),
        ("shared:*:*", MisplacedWildcard { index: 2 }),
        ("shared:a:*:", MisplacedWildcard { index: 3 }),
        ("shared:../*", MisplacedWildcard { index: 2 }),
        ("shared:", seg(2, SegmentProblem::Empty)),
        ("shared::*", seg(2, SegmentProblem::Empty)),
        ("shared:..:*", seg(2, SegmentProblem::DotSegment)),
        ("private:../main", seg(2, SegmentProblem::Separator)),
        ("project:alp:\0", seg(3, SegmentProblem::ControlChar)),
    ];
    for (input, reason) in cases {
        check(input, reason);
    }
    check(&format!("shared:{}", "a".repeat(201)), seg(2, SegmentProblem::TooLong));
    check(&format!("shared:{}", "a".repeat(1018)), TooLong { len: 1025 });
    check(&format!("shared{}:*", ":a".repeat(63)), TooManySegments { count: 65 });
}

#[test]
fn grant_messages() {
    let cases = [
        ("shared:..", "invalid grant `shared:..`: segment 2 (`..`) is invalid: dot_segment"),
        (
            "project:*:goals",
            "invalid grant `project:*:goals`: segment 2 holds a `*`, which may only be the whole last segment",
        ),
        ("Shared", "invalid grant `Shared`: it must start with `shared`, `project` or `private`"),
        ("shared:a\\b", "invalid grant `shared:a\\b`: segment 2 (`a\\b`) is invalid: separator"),
        ("shared:a\nb", "invalid grant `shared:a\\u{a}b`: segment 2 (`a\\u{a}b`) is invalid: control_char"),
        ("shared:it's:", "invalid grant `shared:it's:`: segment 3 (``) is invalid: empty"),
    ];
    for (input, message) in cases {
        assert_eq!(Grant::parse(input).unwrap_err().to_string(), message, "{input:?}");
    }
}

#[test]
fn roles() {
    let cases = [
        ("", InvalidRoleReason::Segment(SegmentProblem::Empty)),
        ("..", InvalidRoleReason::Segment(SegmentProblem::DotSegment)),
        ("../main", InvalidRoleReason::Segment(SegmentProblem::Separator)),
        ("a\\b", InvalidRoleReason::Segment(SegmentProblem::Separator)),
        ("main\n", InvalidRoleReason::Segment(SegmentProblem::ControlChar)),
        ("a:b", InvalidRoleReason::ReservedChar(':')),
        ("worker:drafts", InvalidRoleReason::ReservedChar(':')),
        ("*", InvalidRoleReason::ReservedChar('*')),
        ("a*", InvalidRoleReason::ReservedChar('*')),
        ("a/:b", InvalidRoleReason::Segment(SegmentProblem::Separator)),
    ];
    for (input, reason) in cases {
        let err = Role::parse(input).expect_err(input);
        assert_eq!(err.reason(), reason, "{input:?}");
        assert_eq!(err.input(), input);
        let problem = match reason {
            InvalidRoleReason::Segment(problem) => Some(problem),
            _ => None,
        };
        assert_eq!(err.problem(), problem);
    }
    assert_eq!(Role::parse(&"r".repeat(201)).unwrap_err().reason().code(), "segment_too_long");
}

#[test]
fn role_messages() {
    assert_eq!(Role::parse("../main").unwrap_err().to_string(), "invalid role `../main`: separator");
    assert_eq!(Role::parse("a:b").unwrap_err().to_string(), "invalid role `a:b`: reserved_char");
    assert_eq!(Role::parse("main\n").unwrap_err().to_string(), "invalid role `main\\u{a}`: control_char");
}
