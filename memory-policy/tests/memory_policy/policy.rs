//! The grant policy as tables: one request, one expected decision (`conformance/README.md`).

use memory_id::{MemoryPrefix, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, Decision, DenyCode, GrantPolicy, Operation, PolicyEngine, SubtreeDecision,
};

use crate::actor;

const ALLOW: Decision = Decision::Allow;
const NOT_GRANTED: Decision = Decision::Deny(DenyCode::MemoryNotGranted);
const PRIVATE: Decision = Decision::Deny(DenyCode::PrivateMemoryDenied);

fn check(actor: &Actor, operation: Operation, id: &str, expected: Decision) {
    let id = parse_memory_id(id).unwrap();
    let got = GrantPolicy.authorize(&AccessRequest { actor, operation, id: &id });
    assert_eq!(got, expected, "{} {operation} {id}", actor.role());
}

fn check_subtree(
    actor: &Actor,
    operation: Operation,
    prefix: Option<&str>,
    expected: Result<&[&str], DenyCode>,
) {
    let prefix = prefix.map(|p| MemoryPrefix::parse(p).unwrap());
    let got = match GrantPolicy.authorize_subtree(actor, operation, prefix.as_ref()) {
        SubtreeDecision::Allow { roots } => {
            Ok(roots.iter().map(|r| r.as_str().to_owned()).collect::<Vec<_>>())
        }
        SubtreeDecision::Deny(code) => Err(code),
    };
    let expected = expected.map(|roots| roots.iter().map(|r| (*r).to_owned()).collect::<Vec<_>>());
    assert_eq!(got, expected, "{} {operation} {prefix:?}", actor.role());
}

fn worker() -> Actor {
    actor("worker", &["shared", "project:alp", "private:worker"], &["project:alp:log:*", "private:worker"])
        .with_reports_to(Some("main".parse().unwrap()))
}

/// A manager holding every grant that could possibly reach a report's private memory.
fn main_with_everything() -> Actor {
    let all =
        ["shared", "project:*", "private", "private:*", "private:worker", "private:worker:*", "private:main"];
    actor("main", &all, &all)
}

#[test]
fn the_design_worker() {
    let worker = worker();
    let cases = [
        (Operation::Read, "shared:team:onboarding", ALLOW),
        (Operation::Read, "project:alp:goals", ALLOW),
        (Operation::Read, "project:other:goals", NOT_GRANTED),
        (Operation::Read, "private:worker:drafts", ALLOW),
        (Operation::Read, "private:main:notes", PRIVATE),
        (Operation::Write, "project:alp:log:2026-09", ALLOW),
        (Operation::Write, "project:alp:log", NOT_GRANTED),
        (Operation::Write, "project:alp:goals", NOT_GRANTED),
        (Operation::Write, "shared:team", NOT_GRANTED),
        (Operation::Write, "private:worker:drafts", ALLOW),
        (Operation::Write, "private:main:notes", PRIVATE),
    ];
    for (operation, id, expected) in cases {
        check(&worker, operation, id, expected);
    }
}

#[test]
fn a_manager_never_reads_a_reports_drafts() {
    let main = main_with_everything();
    for operation in [Operation::Read, Operation::Write] {
        check(&main, operation, "private:worker:drafts", PRIVATE);
        check(&main, operation, "private:worker:a:b:c", PRIVATE);
        check(&main, operation, "private:main:notes", ALLOW);
        check(&main, operation, "project:any:x", ALLOW);
        check_subtree(&main, operation, Some("private:worker"), Err(DenyCode::PrivateMemoryDenied));
        check_subtree(&main, operation, Some("private"), Ok(&["private:main"]));
        check_subtree(&main, operation, None, Ok(&["private:main", "project", "shared"]));
    }
}

#[test]
fn reports_to_grants_nothing() {
    let report = actor("worker", &[], &[]).with_reports_to(Some("main".parse().unwrap()));
    check(&report, Operation::Read, "private:main:x", PRIVATE);
    check(&report, Operation::Read, "private:worker:x", NOT_GRANTED);
    check(&report, Operation::Read, "shared:x", NOT_GRANTED);
    let boss = actor("main", &["shared"], &[]);
    check(&boss, Operation::Read, "private:worker:x", PRIVATE);
}

#[test]
fn own_private_memory_every_spelling() {
    for grant in ["private:*", "private", "private:worker", "private:worker:*"] {
        let worker = actor("worker", &[grant], &[]);
        check(&worker, Operation::Read, "private:worker:drafts", ALLOW);
        check(&worker, Operation::Write, "private:worker:drafts", NOT_GRANTED);
        check(&worker, Operation::Read, "private:main:drafts", PRIVATE);
        check_subtree(&worker, Operation::Read, None, Ok(&["private:worker"]));
        check_subtree(&worker, Operation::Read, Some("private"), Ok(&["private:worker"]));
        check_subtree(&worker, Operation::Read, Some("private:main"), Err(DenyCode::PrivateMemoryDenied));
    }
    check(&actor("worker", &[], &[]), Operation::Read, "private:worker:x", NOT_GRANTED);
}

#[test]
fn subtrees() {
    let worker = worker();
    check_subtree(&worker, Operation::Read, None, Ok(&["private:worker", "project:alp", "shared"]));
    check_subtree(&worker, Operation::Write, None, Ok(&["private:worker", "project:alp:log"]));
    check_subtree(&worker, Operation::Read, Some("shared:team"), Ok(&["shared:team"]));
    check_subtree(&worker, Operation::Write, Some("shared"), Err(DenyCode::MemoryNotGranted));
    check_subtree(
        &actor("r", &["shared", "project:*"], &[]),
        Operation::Read,
        None,
        Ok(&["project", "shared"]),
    );
    check_subtree(&actor("r", &[], &[]), Operation::Read, None, Err(DenyCode::MemoryNotGranted));
    check_subtree(
        &actor("r", &["shared:team"], &[]),
        Operation::Read,
        Some("shared:te"),
        Err(DenyCode::MemoryNotGranted),
    );
    let nested = actor("r", &["shared:team:*", "shared", "shared:team", "shared"], &[]);
    check_subtree(&nested, Operation::Read, None, Ok(&["shared"]));
    let team = actor("r", &["shared:team:*"], &[]);
    check_subtree(&team, Operation::Read, Some("shared"), Ok(&["shared:team"]));
    check_subtree(&team, Operation::Read, Some("shared:team:x"), Ok(&["shared:team:x"]));
    check_subtree(&team, Operation::Read, Some("shared:other"), Err(DenyCode::MemoryNotGranted));
}

mod coverage {
    use memory_id::MemoryPrefix;
    use memory_policy::{Coverage, Operation};

    use crate::actor;

    /// `coverage` of `prefix` by `read` grants for role `r`: `whole` / `part` with the grants, or `nothing`.
    fn check(read: &[&str], prefix: &str, expected: Coverage) {
        let got = actor("r", read, &[]).coverage(Operation::Read, &MemoryPrefix::parse(prefix).unwrap());
        assert_eq!(got, expected, "{read:?} on {prefix}");
    }

    fn whole(grants: &[&str]) -> Coverage {
        Coverage::Whole(grants.iter().map(|g| (*g).to_owned()).collect())
    }

    fn part(grants: &[&str]) -> Coverage {
        Coverage::Part(grants.iter().map(|g| (*g).to_owned()).collect())
    }

    #[test]
    fn scope_roots() {
        check(&["shared"], "shared", whole(&["shared"]));
        check(&["shared:*"], "shared", whole(&["shared:*"]));
        check(&["shared:team"], "shared", part(&["shared:team"]));
        check(&["shared:team", "shared"], "shared", whole(&["shared"]));
        check(&["project:*"], "project:alp", whole(&["project:*"]));
        check(&["project:alp:*"], "project:alp", whole(&["project:alp:*"]));
        check(
            &["project:alp:log:*", "project:alp:goals"],
            "project:alp",
            part(&["project:alp:log:*", "project:alp:goals"]),
        );
        check(&["project:web"], "project:alp", Coverage::Nothing);
        check(&["private"], "private:r", whole(&["private"]));
        check(&["private:*"], "private:r", whole(&["private:*"]));
        check(&["private:r:notes"], "private:r", part(&["private:r:notes"]));
        // Another role's private memory: never, whatever the grants say.
        check(&["private", "private:*", "private:other"], "private:other", Coverage::Nothing);
        check(&[], "shared", Coverage::Nothing);
    }

    #[test]
    fn a_wildcard_misses_a_prefix_that_is_an_id_of_its_own() {
        check(&["shared:team:*"], "shared:team", part(&["shared:team:*"]));
        check(&["shared:team"], "shared:team", whole(&["shared:team"]));
        check(&["shared:*"], "shared:team", whole(&["shared:*"]));
    }
}
