//! Runs `conformance/context.json` (format in `conformance/README.md`), against the crate and against the reference
//! models `testkit::model::{ranking, context}`.

use memory_context::{PlanTarget, build_memory_context, plan_read};
use memory_ranker::{DeterministicContextRanker, RankItem};
use serde::Deserialize;
use testkit::conformance::{Failures, VectorEntry, load_cases, run};
use testkit::model::context::{self as model, Plan};
use testkit::model::ranking::{self, Entry};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    name: String,
    query: String,
    budget: usize,
    task: Option<String>,
    feature: Option<String>,
    entries: Vec<VectorEntry>,
    expected: Expected,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Expected {
    order: Vec<String>,
    included: Vec<String>,
    omitted: Vec<String>,
    characters_used: usize,
    shadowed: Option<Vec<String>>,
    text: Option<String>,
}

fn cases() -> Vec<Case> {
    let cases: Vec<Case> = load_cases("context.json");
    assert!(cases.len() >= 19, "vector file lost cases");
    cases
}

fn target(case: &Case) -> Option<PlanTarget<'_>> {
    match (case.task.as_deref(), case.feature.as_deref()) {
        (Some(task), feature) => Some(PlanTarget::Task { task, feature }),
        (None, Some(feature)) => Some(PlanTarget::Feature { feature }),
        (None, None) => None,
    }
}

/// What the crate or the models computed for a case, to compare with `expected`.
struct Outcome<'a> {
    order: &'a [String],
    shadowed: Option<&'a [String]>,
    included: &'a [String],
    omitted: &'a [String],
    used: usize,
    text: &'a str,
}

/// Records every field of `case.expected` that differs from what `who` computed.
fn compare(failures: &mut Failures, case: &Case, who: &str, got: Outcome<'_>) {
    let Outcome { order, shadowed, included, omitted, used, text } = got;
    let expected = &case.expected;
    let name = &case.name;
    failures.check(order == expected.order, || format!("case `{name}`: {who} order {order:?}"));
    failures.check(shadowed == expected.shadowed.as_deref(), || {
        format!("case `{name}`: {who} shadowed {shadowed:?}")
    });
    failures.check(included == expected.included, || format!("case `{name}`: {who} included {included:?}"));
    failures.check(omitted == expected.omitted, || format!("case `{name}`: {who} omitted {omitted:?}"));
    failures
        .check(used == expected.characters_used, || format!("case `{name}`: {who} used {used} characters"));
    if let Some(want) = &expected.text {
        failures.check(text == want, || format!("case `{name}`: {who} text {text:?}"));
    }
}

#[test]
fn context_vectors() {
    run("context", &cases(), |case, failures| {
        let name = &case.name;
        let entries: Vec<Entry> = case.entries.iter().map(VectorEntry::entry).collect();
        let ranker = DeterministicContextRanker::new(&case.query);
        let (order, shadowed): (Vec<&Entry>, Option<Vec<String>>) = match target(case) {
            None => (ranker.rank(&entries).into_iter().map(|r| r.into_item()).collect(), None),
            Some(target) => {
                let (planned, shadowed) = plan_read(&entries, target, &ranker).into_parts();
                (
                    planned.into_iter().map(|p| p.into_item()).collect(),
                    Some(shadowed.iter().map(|s| s.item().id.clone()).collect()),
                )
            }
        };
        let ids: Vec<String> = order.iter().map(|e| e.id().to_owned()).collect();
        let context = build_memory_context(&order, case.budget);
        let diagnostics = context.diagnostics();
        let got = Outcome {
            order: &ids,
            shadowed: shadowed.as_deref(),
            included: context.entry_ids(),
            omitted: diagnostics.omitted_entry_ids(),
            used: diagnostics.characters_used(),
            text: context.text(),
        };
        compare(failures, case, "crate", got);
        failures.check(diagnostics.character_budget() == case.budget, || format!("case `{name}`: budget"));
        let truncated = diagnostics.truncated();
        failures.check(truncated != case.expected.omitted.is_empty(), || {
            format!("case `{name}`: truncated {truncated}")
        });
    });
}

/// The vectors are also run against the reference models, so a wrong vector is told apart from a wrong crate.
#[test]
fn context_vectors_agree_with_the_models() {
    run("context (model)", &cases(), |case, failures| {
        let entries: Vec<Entry> = case.entries.iter().map(VectorEntry::entry).collect();
        let (order, shadowed): (Vec<String>, Option<Vec<String>>) = match (&case.task, &case.feature) {
            (None, None) => {
                (ranking::rank(&case.query, &entries, false).into_iter().map(|(id, _)| id).collect(), None)
            }
            (task, feature) => {
                let Plan { entries: planned, shadowed } =
                    model::plan(&entries, task.as_deref(), feature.as_deref(), &case.query);
                (planned.into_iter().map(|(id, _)| id).collect(), Some(shadowed))
            }
        };
        let ordered: Vec<Entry> =
            order.iter().filter_map(|id| entries.iter().find(|e| e.id == *id).cloned()).collect();
        let built = model::build(&ordered, case.budget);
        let got = Outcome {
            order: &order,
            shadowed: shadowed.as_deref(),
            included: &built.included,
            omitted: &built.omitted,
            used: built.text.chars().count(),
            text: &built.text,
        };
        compare(failures, case, "model", got);
    });
}
