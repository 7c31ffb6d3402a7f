//! Accepted grants and what they cover, as tables (`conformance/README.md`).

use memory_id::parse_memory_id;
use memory_policy::Grant;

/// `grant` parses into `base` (+ wildcard) and covers exactly the IDs marked `true`.
fn check(grant: &str, base: &str, wildcard: bool, ids: &[(&str, bool)]) {
    let parsed = Grant::parse(grant).unwrap_or_else(|e| panic!("{grant:?} refused: {e}"));
    assert_eq!((parsed.base().as_str(), parsed.is_wildcard()), (base, wildcard), "{grant:?}");
    for &(id, covers) in ids {
        assert_eq!(parsed.covers(&parse_memory_id(id).unwrap()), covers, "{grant} covers {id}");
    }
}

#[test]
fn the_design_table() {
    check(
        "shared",
        "shared",
        false,
        &[
            ("shared:a", true),
            ("shared:team:onboarding", true),
            ("project:alp:goals", false),
            ("private:worker:x", false),
        ],
    );
    check(
        "project:alp",
        "project:alp",
        false,
        &[("project:alp:goals", true), ("project:alp:log:2026-09", true), ("project:other:goals", false)],
    );
    check(
        "project:*",
        "project",
        true,
        &[
            ("project:alp:goals", true),
            ("project:other:x", true),
            ("shared:x", false),
            ("private:worker:x", false),
        ],
    );
    check(
        "private:worker",
        "private:worker",
        false,
        &[("private:worker:drafts", true), ("private:worker:a:b", true), ("private:main:notes", false)],
    );
    check(
        "shared:team:*",
        "shared:team",
        true,
        &[("shared:team:onboarding", true), ("shared:team:onboarding:day1", true), ("shared:team", false)],
    );
}

#[test]
fn wildcard_at_the_base() {
    check("shared:*", "shared", true, &[("shared:a", true), ("project:a:b", false)]);
    check(
        "project:alp:*",
        "project:alp",
        true,
        &[("project:alp:goals", true), ("project:alpx:goals", false)],
    );
    check(
        "project:alp:goals:*",
        "project:alp:goals",
        true,
        &[("project:alp:goals", false), ("project:alp:goals:x", true)],
    );
    check("private:*", "private", true, &[("private:worker:x", true), ("private:main:x", true)]);
}

#[test]
fn whole_segments_and_bytes() {
    check(
        "shared:te",
        "shared:te",
        false,
        &[("shared:team", false), ("shared:te", true), ("shared:te:am", true)],
    );
    check("shared:team", "shared:team", false, &[("shared:team", true), ("shared:teams", false)]);
    check("shared:Team", "shared:Team", false, &[("shared:team:x", false), ("shared:Team:x", true)]);
    check(
        "shared:\u{e9}",
        "shared:\u{e9}",
        false,
        &[("shared:e\u{301}:x", false), ("shared:\u{e9}:x", true)],
    );
    check("shared:e\u{301}", "shared:e\u{301}", false, &[("shared:\u{e9}", false)]);
}

#[test]
fn literal_star_in_an_id() {
    check("shared:*", "shared", true, &[("shared:*", true)]);
    check("shared:a", "shared:a", false, &[("shared:a:*", true)]);
}

#[test]
fn effective_for_a_role() {
    let cases = [
        ("private:*", "worker", Some("private:worker")),
        ("private", "worker", Some("private:worker")),
        ("private:worker", "worker", Some("private:worker")),
        ("private:worker:*", "worker", Some("private:worker:*")),
        ("private:main", "worker", None),
        ("private:main:*", "worker", None),
        ("shared:*", "worker", Some("shared:*")),
        ("project:alp", "worker", Some("project:alp")),
    ];
    for (grant, role, effective) in cases {
        let grant = Grant::parse(grant).unwrap();
        assert_eq!(grant.effective_for(role).as_ref().map(Grant::as_str), effective, "{grant} for {role}");
        assert_eq!(grant.is_foreign_private(role), effective.is_none(), "{grant} for {role}");
    }
}
