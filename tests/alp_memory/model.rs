//! Model-based test: random sequences of the five doors by several actors against a small model of the rules.
//! Results, versions, error codes and audit outcomes must all agree.

use std::collections::BTreeMap;

use alp_memory::memory_audit::Outcome;
use alp_memory::memory_policy::Decision;
use alp_memory::{CreateRequest, FieldInput, MemoryError, SearchRequest, UpdateRequest};
use proptest::prelude::*;

use crate::support::Harness;

/// The grants of `crate::support::team()`, written out again so the model does not share code with the policy.
fn model_grants(role: &str, write: bool) -> Option<&'static [&'static str]> {
    Some(match (role, write) {
        ("main", false) => &["shared", "project:alp", "private:main", "private:worker"],
        ("main", true) => &["shared", "project:alp", "private:main"],
        ("worker", false) => &["shared", "project:alp", "private:worker"],
        ("worker", true) => &["project:alp:log:*", "private:worker", "shared:team:*"],
        ("reviewer", false) => &["project:alp"],
        ("reviewer", true) => &[],
        _ => return None,
    })
}

/// The policy's decision for one ID, from the shared reference model of grants (testkit), which works on text
/// and never calls the policy it checks.
fn model_decide(role: &str, write: bool, id: &str) -> Result<(), &'static str> {
    let grants = model_grants(role, write).unwrap_or(&[]);
    match testkit::model::grant::authorize(role, grants.iter().copied(), id) {
        Decision::Allow => Ok(()),
        Decision::Deny(code) => Err(code.as_str()),
    }
}

/// Whether a search of the prefix (or of everything) may list anything: not another role's private memory, and some
/// read grant of the role overlaps it.
fn model_subtree(role: &str, prefix: Option<&str>) -> Result<(), &'static str> {
    let grants = model_grants(role, false).unwrap_or(&[]);
    testkit::model::grant::subtree(role, grants.iter().copied(), prefix)
        .map(|_| ())
        .map_err(|code| code.as_str())
}

const IDS: &[&str] = &[
    "shared:team",
    "shared:team:a",
    "shared:facts",
    "project:alp:goals",
    "project:alp:log:x",
    "project:other:y",
    "private:main:d",
    "private:worker:d",
    "shared:..",
    "nope:x",
];
const PREFIXES: &[Option<&str>] = &[
    None,
    Some("shared"),
    Some("shared:team"),
    Some("project"),
    Some("project:alp"),
    Some("private"),
    Some("private:main"),
    Some("private:worker"),
    Some("shared:"),
];
const ROLES: &[&str] = &["main", "worker", "reviewer", "ghost"];

#[derive(Debug, Clone)]
enum Op {
    Get(usize, usize),
    Create(usize, usize, u8),
    Update(usize, usize, u64, u8),
    Delete(usize, usize, u64),
    Search(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let role = 0..ROLES.len();
    let id = 0..IDS.len();
    prop_oneof![
        (role.clone(), id.clone()).prop_map(|(r, i)| Op::Get(r, i)),
        (role.clone(), id.clone(), any::<u8>()).prop_map(|(r, i, c)| Op::Create(r, i, c)),
        (role.clone(), id.clone(), 1..4u64, any::<u8>()).prop_map(|(r, i, v, c)| Op::Update(r, i, v, c)),
        (role.clone(), id, 1..4u64).prop_map(|(r, i, v)| Op::Delete(r, i, v)),
        (role, 0..PREFIXES.len()).prop_map(|(r, p)| Op::Search(r, p)),
    ]
}

/// What the model says a call returns: `Ok(Some(version))`, `Ok(None)` for delete, a list for search, or a code.
#[derive(Debug, PartialEq)]
enum Expect {
    Version(u64),
    Deleted,
    Found(Vec<(String, String)>),
    Code(&'static str),
}

fn gate(role: &str, write: bool, id: &str) -> Result<(), &'static str> {
    if alp_memory::memory_id::parse_memory_id(id).is_err() {
        return Err("INVALID_MEMORY_ID");
    }
    if model_grants(role, write).is_none() {
        return Err("INVALID_AGENT_DEFINITION");
    }
    model_decide(role, write, id)
}

fn outcome_of(code: Result<(), &'static str>) -> (Outcome, Option<&'static str>) {
    match code {
        Ok(()) => (Outcome::Allowed, None),
        Err(code @ ("PRIVATE_MEMORY_DENIED" | "MEMORY_NOT_GRANTED")) => (Outcome::Denied, Some(code)),
        Err(code) => (Outcome::Error, Some(code)),
    }
}

fn actual<T>(result: Result<T, MemoryError>, ok: impl FnOnce(T) -> Expect) -> Expect {
    match result {
        Ok(value) => ok(value),
        Err(error) => Expect::Code(error.code()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn service_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        check_against_the_model(&Harness::new(), ops)?;
    }
}

/// The same model-based test with the service over PostgreSQL (a fresh database per case, fewer cases): the rules
/// above the store do not change with the store.
#[test]
fn service_over_postgresql_matches_the_model() {
    if testkit::pg::test_database().is_none() {
        return; // skipped, with the notice test_database prints (a failure under ALP_REQUIRE_POSTGRES=1)
    }
    let config = ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&proptest::collection::vec(op(), 1..40), |ops| {
        let db = testkit::pg::test_database().expect("the cluster answered a moment ago");
        memory_postgres::init(db.url()).expect("the schema is created");
        let store = memory_postgres::PostgresStore::open(db.url()).expect("a fresh database opens");
        check_against_the_model(&Harness::over(Box::new(store), None), ops)
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

fn check_against_the_model(h: &Harness, ops: Vec<Op>) -> Result<(), TestCaseError> {
    {
        let mut model: BTreeMap<String, (u64, String)> = BTreeMap::new();
        // The highest version each ID ever had, its tombstone's included: version numbers are never reused, so a
        // create of a deleted ID continues one past it (docs/CLI.md, `memory history`).
        let mut highest: BTreeMap<String, u64> = BTreeMap::new();
        for op in ops {
            let records_before = h.records().len();
            let (expected, got, audit_id, operation, gate_result) = match op {
                Op::Get(r, i) => {
                    let (role, id) = (ROLES[r], IDS[i]);
                    let gate_result = gate(role, false, id);
                    let expected = match gate_result {
                        Err(code) => Expect::Code(code),
                        Ok(()) => match model.get(id) {
                            Some((v, _)) => Expect::Version(*v),
                            None => Expect::Code("NOT_FOUND"),
                        },
                    };
                    let got = actual(h.service.get(role, id), |e| Expect::Version(e.version));
                    (expected, got, id.to_owned(), "get", gate_result)
                }
                Op::Create(r, i, c) => {
                    let (role, id) = (ROLES[r], IDS[i]);
                    let content = format!("content {c}");
                    let gate_result = gate(role, true, id);
                    let expected = match gate_result {
                        Err(code) => Expect::Code(code),
                        Ok(()) if model.contains_key(id) => Expect::Code("ALREADY_EXISTS"),
                        Ok(()) => {
                            let version = highest.get(id).map_or(1, |h| h + 1);
                            highest.insert(id.to_owned(), version);
                            model.insert(id.to_owned(), (version, content.clone()));
                            Expect::Version(version)
                        }
                    };
                    let request = CreateRequest { id: id.into(), content, fields: FieldInput::new() };
                    let got = actual(h.service.create(role, request), |e| Expect::Version(e.version));
                    (expected, got, id.to_owned(), "create", gate_result)
                }
                Op::Update(r, i, expected_version, c) => {
                    let (role, id) = (ROLES[r], IDS[i]);
                    let content = format!("updated {c}");
                    let gate_result = gate(role, true, id);
                    let expected = match (gate_result, model.get_mut(id)) {
                        (Err(code), _) => Expect::Code(code),
                        (Ok(()), None) => Expect::Code("NOT_FOUND"),
                        (Ok(()), Some((v, _))) if *v != expected_version => Expect::Code("VERSION_CONFLICT"),
                        (Ok(()), Some((v, stored))) => {
                            *v += 1;
                            highest.insert(id.to_owned(), *v);
                            stored.clone_from(&content);
                            Expect::Version(*v)
                        }
                    };
                    let request = UpdateRequest {
                        id: id.into(),
                        expected_version,
                        content: Some(content),
                        fields: FieldInput::new(),
                        clear: vec![],
                    };
                    let got = actual(h.service.update(role, request), |e| Expect::Version(e.version()));
                    (expected, got, id.to_owned(), "update", gate_result)
                }
                Op::Delete(r, i, expected_version) => {
                    let (role, id) = (ROLES[r], IDS[i]);
                    let gate_result = gate(role, true, id);
                    let expected = match (gate_result, model.get(id)) {
                        (Err(code), _) => Expect::Code(code),
                        (Ok(()), None) => Expect::Code("NOT_FOUND"),
                        (Ok(()), Some((v, _))) if *v != expected_version => Expect::Code("VERSION_CONFLICT"),
                        (Ok(()), Some((v, _))) => {
                            // The tombstone takes the next version.
                            highest.insert(id.to_owned(), v + 1);
                            model.remove(id);
                            Expect::Deleted
                        }
                    };
                    let got = actual(h.service.delete(role, id, expected_version), |()| Expect::Deleted);
                    (expected, got, id.to_owned(), "delete", gate_result)
                }
                Op::Search(r, p) => {
                    let (role, prefix) = (ROLES[r], PREFIXES[p]);
                    let gate_result = match prefix.map(alp_memory::memory_id::MemoryPrefix::parse) {
                        Some(Err(_)) => Err("INVALID_MEMORY_ID"),
                        _ if model_grants(role, false).is_none() => Err("INVALID_AGENT_DEFINITION"),
                        _ => model_subtree(role, prefix),
                    };
                    let expected = match gate_result {
                        Err(code) => Expect::Code(code),
                        Ok(()) => Expect::Found(
                            model
                                .iter()
                                .filter(|(id, _)| {
                                    prefix.is_none_or(|p| **id == p || id.starts_with(&format!("{p}:")))
                                })
                                .filter(|(id, _)| model_decide(role, false, id).is_ok())
                                .map(|(id, (_, content))| (id.clone(), content.clone()))
                                .collect(),
                        ),
                    };
                    let request =
                        SearchRequest { prefix: prefix.map(Into::into), ..SearchRequest::default() };
                    // Same clock for every entry and an empty query: rank order is ID order.
                    let got = actual(h.service.search(role, &request), |found| {
                        Expect::Found(
                            found
                                .entries
                                .into_iter()
                                .map(|s| (s.entry.id.into_string(), s.entry.content))
                                .collect(),
                        )
                    });
                    (expected, got, prefix.unwrap_or("").to_owned(), "search", gate_result)
                }
            };
            prop_assert_eq!(&got, &expected);
            let records = h.records();
            prop_assert_eq!(records.len(), records_before + 1, "exactly one audit record per call");
            let last = records.last().unwrap();
            let (outcome, code) = outcome_of(gate_result);
            prop_assert_eq!(
                (last.operation().as_str(), last.id(), last.outcome(), last.code()),
                (operation, audit_id.as_str(), outcome, code)
            );
        }
    }
    Ok(())
}
