//! Runs every vector of `conformance/ids.json`; the format is described in `conformance/README.md`. The loader,
//! the Text notation and the failure list are `testkit::conformance`; every vector is also run against the
//! reference model `testkit::model::id`, so a wrong vector is told apart from a wrong parser.

use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use serde::Deserialize;
use testkit::conformance::{Failures, Invalid, Refused, Text, expand_all, run};
use testkit::model;
use testkit::model::id::{Refusal, id_refusal, prefix_refusal};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IdVectors {
    valid: Vec<ValidId>,
    invalid: Vec<Invalid>,
    prefixes: PrefixVectors,
    prefix_contains: Vec<Contains>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ValidId {
    input: Text,
    scope: String,
    owner: Option<String>,
    segments: Vec<Text>,
    path_segments: Vec<Text>,
    scope_root: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrefixVectors {
    valid: Vec<ValidPrefix>,
    invalid: Vec<Invalid>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ValidPrefix {
    input: Text,
    scope: String,
    owner: Option<String>,
    segments: Vec<Text>,
    is_id: bool,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Contains {
    prefix: Text,
    id: Text,
    contains: bool,
    #[serde(default)]
    note: Option<String>,
}

fn load() -> IdVectors {
    testkit::conformance::load("ids.json")
}

#[test]
fn valid_ids() {
    run("valid id", &load().valid, |v, failures| {
        let input = v.input.expand();
        let _ = &v.note;
        let id = match parse_memory_id(&input) {
            Ok(id) => id,
            Err(e) => return failures.check(false, || format!("{input:?}: refused: {e}")),
        };
        let segments: Vec<&str> = id.segments().collect();
        let path: Vec<&str> = id.path_segments().collect();
        let checks = [
            ("as_str", id.as_str() == input),
            ("display", id.to_string() == input),
            ("scope", id.scope().keyword() == v.scope),
            ("owner", id.owner() == v.owner.as_deref()),
            ("segments", segments == expand_all(&v.segments)),
            ("segment_count", id.segment_count() == v.segments.len()),
            ("pathSegments", path == expand_all(&v.path_segments)),
            ("scopeRoot", id.scope_root().as_str() == v.scope_root),
            ("from_str", input.parse::<MemoryId>().as_ref() == Ok(&id)),
            (
                "prefix",
                MemoryPrefix::parse(&input).is_ok_and(|p| p.contains(&id) && p.to_id() == Some(id.clone())),
            ),
            ("scope root contains", id.scope_root().contains(&id)),
        ];
        for (what, ok) in checks {
            failures.check(ok, || format!("{input:?}: {what} differs (got {id:?})"));
        }
    });
}

fn check_invalid(
    failures: &mut Failures,
    v: &Invalid,
    what: &str,
    result: Result<(), memory_id::InvalidMemoryIdError>,
) {
    let _ = &v.note;
    let message = result.as_ref().err().map(ToString::to_string).unwrap_or_default();
    let refused = result.as_ref().err().map(|e| Refused {
        reason: crate::refusal(e),
        input: e.input(),
        message: &message,
    });
    v.check(failures, what, refused);
}

#[test]
fn invalid_ids() {
    run("invalid id", &load().invalid, |v, failures| {
        let input = v.input.expand();
        check_invalid(failures, v, "id", parse_memory_id(&input).map(drop));
        // Everything but the part count applies to prefixes too, with the same reason.
        if v.reason != "too_few_parts" {
            check_invalid(failures, v, "prefix of id vector", MemoryPrefix::parse(&input).map(drop));
        }
    });
}

#[test]
fn valid_prefixes() {
    run("valid prefix", &load().prefixes.valid, |v, failures| {
        let input = v.input.expand();
        let _ = &v.note;
        let prefix = match MemoryPrefix::parse(&input) {
            Ok(prefix) => prefix,
            Err(e) => return failures.check(false, || format!("prefix {input:?}: refused: {e}")),
        };
        let segments: Vec<&str> = prefix.segments().collect();
        let checks = [
            ("as_str", prefix.as_str() == input),
            ("display", prefix.to_string() == input),
            ("scope", prefix.scope().keyword() == v.scope),
            ("owner", prefix.owner() == v.owner.as_deref()),
            ("segments", segments == expand_all(&v.segments)),
            ("isId", prefix.to_id().is_some() == v.is_id),
            ("isId agrees with parse_memory_id", parse_memory_id(&input).is_ok() == v.is_id),
            ("contains itself", prefix.contains_prefix(&prefix)),
        ];
        for (what, ok) in checks {
            failures.check(ok, || format!("prefix {input:?}: {what} differs (got {prefix:?})"));
        }
    });
}

#[test]
fn invalid_prefixes() {
    run("invalid prefix", &load().prefixes.invalid, |v, failures| {
        check_invalid(failures, v, "prefix", MemoryPrefix::parse(&v.input.expand()).map(drop));
    });
}

#[test]
fn prefix_contains() {
    run("prefixContains", &load().prefix_contains, |v, failures| {
        let (prefix, id) = (v.prefix.expand(), v.id.expand());
        let _ = &v.note;
        let (Ok(p), Ok(i)) = (MemoryPrefix::parse(&prefix), parse_memory_id(&id)) else {
            return failures.check(false, || format!("{prefix:?} contains {id:?}: an input is invalid"));
        };
        failures.check(p.contains(&i) == v.contains, || {
            format!("{prefix:?} contains {id:?}: got {}, expected {}", p.contains(&i), v.contains)
        });
        failures.check(p.contains_prefix(&i.to_prefix()) == v.contains, || {
            format!("{prefix:?} contains_prefix {id:?}: disagrees with contains")
        });
    });
}

/// Records a disagreement between the model's answer and the vector's.
fn agree(
    failures: &mut Failures,
    what: &str,
    input: &str,
    model: Option<Refusal>,
    vector: Option<(&str, Option<usize>)>,
) {
    failures
        .check(model == vector, || format!("{what} {input:?}: model says {model:?}, the vector {vector:?}"));
}

/// Every vector also runs against the reference model, so that a wrong vector is told apart from a wrong parser.
#[test]
fn vectors_agree_with_the_model() {
    let vectors = load();
    run("valid id (model)", &vectors.valid, |v, failures| {
        let input = v.input.expand();
        agree(failures, "id", &input, id_refusal(&input), None);
        agree(failures, "prefix of id", &input, prefix_refusal(&input), None);
    });
    run("invalid id (model)", &vectors.invalid, |v, failures| {
        let input = v.input.expand();
        agree(failures, "id", &input, id_refusal(&input), Some((&v.reason, v.segment)));
        if v.reason != "too_few_parts" {
            agree(
                failures,
                "prefix of id vector",
                &input,
                prefix_refusal(&input),
                Some((&v.reason, v.segment)),
            );
        }
    });
    run("valid prefix (model)", &vectors.prefixes.valid, |v, failures| {
        let input = v.input.expand();
        agree(failures, "prefix", &input, prefix_refusal(&input), None);
        failures.check(id_refusal(&input).is_none() == v.is_id, || format!("prefix {input:?}: isId differs"));
    });
    run("invalid prefix (model)", &vectors.prefixes.invalid, |v, failures| {
        let input = v.input.expand();
        agree(failures, "prefix", &input, prefix_refusal(&input), Some((&v.reason, v.segment)));
    });
    run("prefixContains (model)", &vectors.prefix_contains, |v, failures| {
        let (prefix, id) = (v.prefix.expand(), v.id.expand());
        failures.check(model::id::contains(&prefix, &id) == v.contains, || {
            format!("{prefix:?} contains {id:?}: the model says {}", !v.contains)
        });
    });
}
