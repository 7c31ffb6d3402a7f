//! Accepted IDs and prefixes, as tables.

use memory_id::{MAX_SEGMENT_BYTES, MemoryPrefix, Scope, parse_memory_id, validate_segment};

/// `input` parses, round-trips, and splits into `segments` (the scope keyword first).
fn check(input: &str, scope: Scope, owner: Option<&str>, segments: &[&str]) {
    let id = parse_memory_id(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
    assert_eq!(id.as_str(), input);
    assert_eq!(id.scope(), scope, "{input:?}");
    assert_eq!(id.owner(), owner, "{input:?}");
    assert_eq!(id.segments().collect::<Vec<_>>(), segments, "{input:?}");
    let skip = if scope == Scope::Shared { 1 } else { 2 };
    assert_eq!(id.path_segments().collect::<Vec<_>>(), &segments[skip..], "{input:?}");
}

#[test]
fn the_three_shapes() {
    let cases: &[(&str, Scope, Option<&str>, &[&str])] = &[
        ("shared:a", Scope::Shared, None, &["shared", "a"]),
        ("shared:team:onboarding", Scope::Shared, None, &["shared", "team", "onboarding"]),
        ("project:alp:goals", Scope::Project, Some("alp"), &["project", "alp", "goals"]),
        ("project:alp:log:2026-09", Scope::Project, Some("alp"), &["project", "alp", "log", "2026-09"]),
        ("private:worker:drafts", Scope::Private, Some("worker"), &["private", "worker", "drafts"]),
        (
            "private:worker:private:main",
            Scope::Private,
            Some("worker"),
            &["private", "worker", "private", "main"],
        ),
    ];
    for &(input, scope, owner, segments) in cases {
        check(input, scope, owner, segments);
    }
}

#[test]
fn look_alikes_of_traversal_are_plain_segments() {
    let cases: &[(&str, &[&str])] = &[
        ("shared:%2e%2e", &["shared", "%2e%2e"]),
        ("shared:...", &["shared", "..."]),
        ("shared:.hidden", &["shared", ".hidden"]),
        ("shared: ..", &["shared", " .."]),
        ("shared:..%2f..", &["shared", "..%2f.."]),
        ("shared:\u{ff0e}\u{ff0e}", &["shared", "\u{ff0e}\u{ff0e}"]),
        ("shared:*", &["shared", "*"]),
    ];
    for &(input, segments) in cases {
        check(input, Scope::Shared, None, segments);
    }
}

#[test]
fn bytes_are_kept_as_written() {
    let nfc = parse_memory_id("shared:\u{e9}").unwrap();
    let nfd = parse_memory_id("shared:e\u{301}").unwrap();
    assert_ne!(nfc, nfd, "no Unicode normalisation");
    assert_ne!(parse_memory_id("shared:Team").unwrap(), parse_memory_id("shared:team").unwrap());
    // Only C0 controls and DEL are refused; C1 controls and Unicode separators are ordinary characters.
    check("shared:a\u{85}b", Scope::Shared, None, &["shared", "a\u{85}b"]);
    check("shared:a\u{2028}b", Scope::Shared, None, &["shared", "a\u{2028}b"]);
}

#[test]
fn limits_are_inclusive() {
    let segment = "a".repeat(MAX_SEGMENT_BYTES);
    check(&format!("shared:{segment}"), Scope::Shared, None, &["shared", &segment]);
    let two_byte = "\u{e9}".repeat(100);
    check(&format!("shared:{two_byte}"), Scope::Shared, None, &["shared", &two_byte]);
    let sixty_four = format!("shared{}", ":a".repeat(63));
    assert_eq!(parse_memory_id(&sixty_four).unwrap().segment_count(), 64);
    let long = format!("shared{}:{}", format!(":{segment}").repeat(5), "b".repeat(12));
    assert_eq!(long.len(), 1024);
    assert!(parse_memory_id(&long).is_ok());
}

#[test]
fn prefixes() {
    let cases: &[(&str, Scope, Option<&str>, bool)] = &[
        ("shared", Scope::Shared, None, false),
        ("project", Scope::Project, None, false),
        ("private", Scope::Private, None, false),
        ("project:alp", Scope::Project, Some("alp"), false),
        ("private:worker", Scope::Private, Some("worker"), false),
        ("project:alp:log", Scope::Project, Some("alp"), true),
        ("shared:team", Scope::Shared, None, true),
    ];
    for &(input, scope, owner, is_id) in cases {
        let prefix = MemoryPrefix::parse(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
        assert_eq!(
            (prefix.scope(), prefix.owner(), prefix.to_id().is_some()),
            (scope, owner, is_id),
            "{input:?}"
        );
    }
}

#[test]
fn prefix_contains_whole_segments() {
    let cases = [
        ("shared:team", "shared:team", true),
        ("shared:team", "shared:team:onboarding", true),
        ("shared:te", "shared:team", false),
        ("shared:team", "shared:teams", false),
        ("project", "project:alp:goals", true),
        ("project:alp", "project:alpine:x", false),
        ("private", "private:main:x", true),
        ("shared:team:x", "shared:team", false),
    ];
    for (prefix, id, expected) in cases {
        let prefix = MemoryPrefix::parse(prefix).unwrap();
        assert_eq!(prefix.contains(&parse_memory_id(id).unwrap()), expected, "{prefix} contains {id}");
    }
}

#[test]
fn scope_roots() {
    let cases = [
        ("shared:a:b", "shared"),
        ("project:alp:log:x", "project:alp"),
        ("private:worker:drafts", "private:worker"),
    ];
    for (id, root) in cases {
        assert_eq!(parse_memory_id(id).unwrap().scope_root().as_str(), root);
    }
}

#[test]
fn segments_alone() {
    for segment in ["a", "...", ".a", "a.", "%2e%2e", "*", " ", "\u{e9}", "\u{85}"] {
        assert_eq!(validate_segment(segment), Ok(()), "{segment:?}");
    }
}
