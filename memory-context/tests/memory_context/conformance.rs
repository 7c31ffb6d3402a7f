//! Runs `conformance/context.json` (format in `conformance/README.md`).

use memory_context::{PlanTarget, build_memory_context, plan_read};
use memory_ranker::{DeterministicContextRanker, RankItem};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::support::Entry;

const VECTORS: &str = include_str!("../../../conformance/context.json");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    cases: Vec<Case>,
}

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
struct VectorEntry {
    id: String,
    content: String,
    updated_at: String,
    #[serde(rename = "type")]
    memory_type: Option<String>,
    key: Option<String>,
    scope: Option<String>,
    importance: Option<Importance>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
enum Importance {
    Critical,
    High,
    Medium,
    Low,
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

fn entry(vector: &VectorEntry) -> Entry {
    let updated_at = OffsetDateTime::parse(&vector.updated_at, &Rfc3339)
        .unwrap_or_else(|e| panic!("bad timestamp `{}`: {e}", vector.updated_at))
        .unix_timestamp_nanos();
    Entry {
        id: vector.id.clone(),
        content: vector.content.clone(),
        updated_at,
        memory_type: vector.memory_type.clone(),
        key: vector.key.clone(),
        scope: vector.scope.clone(),
        critical: vector.importance == Some(Importance::Critical),
    }
}

fn target(case: &Case) -> Option<PlanTarget<'_>> {
    match (case.task.as_deref(), case.feature.as_deref()) {
        (Some(task), feature) => Some(PlanTarget::Task { task, feature }),
        (None, Some(feature)) => Some(PlanTarget::Feature { feature }),
        (None, None) => None,
    }
}

#[test]
fn context_vectors() {
    let file: File = serde_json::from_str(VECTORS).unwrap();
    assert_eq!(file.version, 1);
    assert!(file.cases.len() >= 19, "vector file lost cases");
    for case in &file.cases {
        let name = &case.name;
        let entries: Vec<Entry> = case.entries.iter().map(entry).collect();
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
        let ids: Vec<&str> = order.iter().map(|e| e.id()).collect();
        assert_eq!(ids, case.expected.order, "order, case `{name}`");
        assert_eq!(shadowed, case.expected.shadowed, "shadowed, case `{name}`");

        let context = build_memory_context(&order, case.budget);
        let diagnostics = context.diagnostics();
        assert_eq!(context.entry_ids(), case.expected.included, "included, case `{name}`");
        assert_eq!(diagnostics.omitted_entry_ids(), case.expected.omitted, "omitted, case `{name}`");
        assert_eq!(diagnostics.characters_used(), case.expected.characters_used, "used, case `{name}`");
        assert_eq!(diagnostics.character_budget(), case.budget);
        assert_eq!(diagnostics.truncated(), !case.expected.omitted.is_empty(), "truncated, case `{name}`");
        if let Some(text) = &case.expected.text {
            assert_eq!(context.text(), text, "text, case `{name}`");
        }
    }
}
