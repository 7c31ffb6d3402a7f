//! Uses only the public API, the way the CLI and an adopter would.

use memory_context::{PlanTarget, Tier, build_memory_context, content_in_block, plan_read};
use memory_ranker::DeterministicContextRanker;
use serde_json::json;
use testkit::model::ranking::Entry;

#[test]
fn serialises_as_the_cli_prints_it() {
    let entries = [Entry::new("shared:a", "alpha\n", 2), Entry::new("shared:b", &"b".repeat(50), 1)];
    let context = build_memory_context(&entries, 20);
    let value = serde_json::to_value(&context).unwrap();
    assert_eq!(
        value,
        json!({
            "text": "## shared:a\nalpha\n\n",
            "entryIds": ["shared:a"],
            "diagnostics": {
                "characterBudget": 20,
                "charactersUsed": 19,
                "truncated": true,
                "omittedEntryIds": ["shared:b"]
            }
        })
    );
}

#[test]
fn search_then_context() {
    let entries = [
        Entry::new("shared:vi", "Xin chào, thế giới", 1),
        Entry::new("shared:en", "Hello, world", 2),
        Entry::new("shared:fr", "Bonjour", 3),
    ];
    let ranked = DeterministicContextRanker::new("THẾ hello").rank(&entries);
    let context = build_memory_context(&ranked, 1000);
    assert_eq!(context.entry_ids(), ["shared:en", "shared:vi"]);
    assert!(!context.diagnostics().truncated());
    assert_eq!(context.clone().into_text(), context.text());
}

#[test]
fn plan_then_context_with_owned_entries() {
    let entries = vec![
        Entry::new("shared:crit", "critical", 0).scope("task-x").critical(),
        Entry::new("shared:t", "task", 0).scope("task-1"),
    ];
    let plan = plan_read(
        entries,
        PlanTarget::Task { task: "task-1", feature: None },
        &DeterministicContextRanker::new(""),
    );
    let context = build_memory_context(plan.entries(), 1000);
    assert_eq!(context.entry_ids(), ["shared:crit", "shared:t"]);
    let (planned, shadowed) = plan.into_parts();
    assert!(shadowed.is_empty());
    let tiers: Vec<Tier> = planned.iter().map(|p| p.tier()).collect();
    assert_eq!(tiers, [Tier::Critical, Tier::Task]);
    assert_eq!(
        planned.into_iter().map(|p| p.into_item().id).collect::<Vec<_>>(),
        ["shared:crit", "shared:t"]
    );
}

#[test]
fn tier_names_are_stable() {
    let names: Vec<&str> = Tier::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(names, ["critical", "task", "feature", "project-or-architecture", "unscoped"]);
}

#[test]
fn trailing_newline_rule() {
    assert_eq!(content_in_block("a\n\r\n\r"), "a");
    assert_eq!(content_in_block("a \n"), "a ");
    assert_eq!(content_in_block("\n\n"), "");
}
