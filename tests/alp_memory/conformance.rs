//! `conformance/bounds.json`: the bounds of a query and of a filter value, run against the facade's checks (the
//! ones every door uses) and against the reference model of the ranker's terms (`testkit::model::ranking`).

use alp_memory::{
    MAX_FILTER_CHARS, MAX_QUERY_CHARS, MAX_QUERY_TERMS, MemoryError, check_filter, check_query,
};
use serde::Deserialize;
use testkit::conformance::{Failures, Text, is_one_line, load_cases, run};
use testkit::model::ranking::terms;

/// A case: a `query`, or a `filter` name with its `value`; `code` is `null` when accepted, `"USAGE"` when refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default)]
    query: Option<Text>,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    value: Option<Text>,
    /// Unicode scalar values of the query or value.
    chars: usize,
    /// Distinct folded terms (query cases only).
    #[serde(default)]
    terms: Option<usize>,
    code: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "free text; never changes what is checked")]
    note: Option<String>,
}

/// The code a check answered with, checking the shape of a refusal on the way.
fn code(result: Result<(), MemoryError>, failures: &mut Failures, name: &str) -> Option<String> {
    let error = result.err()?;
    failures.check(error.kind() == "UsageError", || format!("{name}: kind {}", error.kind()));
    let message = error.to_string();
    failures.check(is_one_line(&message), || format!("{name}: message not one line: {message:?}"));
    failures.check(message.len() < 200, || format!("{name}: the message echoes the input: {message:?}"));
    Some(error.code().to_owned())
}

#[test]
fn bounds() {
    let cases: Vec<Case> = load_cases("bounds.json");
    run("bounds", &cases, |case, failures| {
        let name = &case.name;
        match (&case.query, &case.filter, &case.value, case.terms) {
            (Some(query), None, None, Some(expected_terms)) => {
                let query = query.expand();
                let chars = query.chars().count();
                let distinct = terms(&query).len();
                failures.check(chars == case.chars, || format!("{name}: {chars} characters"));
                failures.check(distinct == expected_terms, || {
                    format!("{name}: the model counts {distinct} terms")
                });
                let model =
                    (chars > MAX_QUERY_CHARS || distinct > MAX_QUERY_TERMS).then(|| "USAGE".to_owned());
                failures.check(model == case.code, || format!("{name}: the model answers {model:?}"));
                let got = code(check_query(&query), failures, name);
                failures.check(got == case.code, || format!("{name}: check_query answers {got:?}"));
            }
            (None, Some(filter), Some(value), None) => {
                let value = value.expand();
                let chars = value.chars().count();
                failures.check(chars == case.chars, || format!("{name}: {chars} characters"));
                let model = (chars > MAX_FILTER_CHARS).then(|| "USAGE".to_owned());
                failures.check(model == case.code, || format!("{name}: the model answers {model:?}"));
                let got = code(check_filter(filter, &value), failures, name);
                failures.check(got == case.code, || format!("{name}: check_filter answers {got:?}"));
            }
            _ => failures
                .check(false, || format!("{name}: a case has `query` and `terms`, or `filter` and `value`")),
        }
    });
}
