//! Budget invariants and the read plan, checked against the reference models `testkit::model::context` on generated
//! entries.

use memory_context::{PlanItem, PlanTarget, Tier, build_memory_context, plan_read};
use memory_ranker::{DeterministicContextRanker, RankItem};
use proptest::prelude::*;
use testkit::model::context::{self as model, Plan};
use testkit::model::ranking::Entry;

/// Content with every kind of line ending, Vietnamese in NFC and NFD, and astral characters.
fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z ệẾđươ\u{323}\u{302}😀\n\r\t]{0,40}",
        1 => any::<String>(),
    ]
}

/// Entries with distinct IDs (the store guarantees it), in arbitrary (already ranked) order.
fn entries() -> impl Strategy<Value = Vec<Entry>> {
    proptest::collection::vec((content(), "[a-zà-ỹ]{1,6}"), 0..10).prop_map(|items| {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (content, name))| Entry::new(&format!("shared:{name}-{i}"), &content, 0))
            .collect()
    })
}

/// Whether `part` is a subsequence of `whole`.
fn is_subsequence(part: &[String], whole: &[String]) -> bool {
    let mut rest = whole.iter();
    part.iter().all(|p| rest.any(|w| w == p))
}

fn plan_entries() -> impl Strategy<Value = Vec<Entry>> {
    let one = (
        prop::option::of(prop_oneof![Just("project"), Just("architecture"), Just("decision")]),
        prop::option::of(prop_oneof![Just("database"), Just("style")]),
        prop::option::of(prop_oneof![
            Just("project"),
            Just("task-1"),
            Just("task-2"),
            Just("feat-1"),
            Just("feat-2")
        ]),
        any::<bool>(),
        0i128..3,
    );
    proptest::collection::vec(one, 0..12).prop_map(|items| {
        items
            .into_iter()
            .enumerate()
            .map(|(i, (memory_type, key, scope, critical, at))| Entry {
                id: format!("project:alp:e{i:02}"),
                content: String::new(),
                updated_at: at,
                memory_type: memory_type.map(str::to_owned),
                key: key.map(str::to_owned),
                scope: scope.map(str::to_owned),
                critical,
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn budget_invariants(entries in entries(), budget in 0usize..300) {
        let context = build_memory_context(&entries, budget);
        let d = context.diagnostics();
        let all: Vec<String> = entries.iter().map(|e| e.id.clone()).collect();

        prop_assert_eq!(d.character_budget(), budget);
        prop_assert!(d.characters_used() <= budget);
        prop_assert_eq!(d.characters_used(), context.text().chars().count());
        prop_assert_eq!(d.truncated(), !d.omitted_entry_ids().is_empty());
        // included ∪ omitted = candidates, disjoint, each in rank order.
        prop_assert_eq!(context.entry_ids().len() + d.omitted_entry_ids().len(), all.len());
        prop_assert!(is_subsequence(context.entry_ids(), &all));
        prop_assert!(is_subsequence(d.omitted_entry_ids(), &all));
        prop_assert!(context.entry_ids().iter().all(|id| !d.omitted_entry_ids().contains(id)));

        let model = model::build(&entries, budget);
        prop_assert_eq!(context.text(), model.text);
        prop_assert_eq!(context.entry_ids(), model.included);
        prop_assert_eq!(d.omitted_entry_ids(), model.omitted);
    }

    #[test]
    fn zero_budget_omits_everything(entries in entries()) {
        let context = build_memory_context(&entries, 0);
        prop_assert_eq!(context.text(), "");
        prop_assert!(context.entry_ids().is_empty());
        prop_assert_eq!(context.diagnostics().omitted_entry_ids().len(), entries.len());
        prop_assert_eq!(context.diagnostics().truncated(), !entries.is_empty());
    }

    /// A budget that is large enough includes everything and truncates nothing.
    #[test]
    fn ample_budget_includes_everything(entries in entries()) {
        let context = build_memory_context(&entries, usize::MAX);
        prop_assert_eq!(context.entry_ids().len(), entries.len());
        prop_assert!(!context.diagnostics().truncated());
    }

    /// The plan equals a plain model of candidates, shadowing, tiers and the ranking inside a tier, and is
    /// independent of input order.
    #[test]
    fn plan_equals_model(
        (entries, shuffled) in plan_entries().prop_flat_map(|e| (Just(e.clone()), Just(e).prop_shuffle())),
        with_task in any::<bool>(),
        with_feature in any::<bool>(),
        query in prop::sample::select(vec!["", "e0", "E1 alp", "e03 E1"]),
    ) {
        let (task, feature) = match (with_task, with_feature) {
            (true, f) => (Some("task-1"), f.then_some("feat-1")),
            (false, _) => (None, Some("feat-1")),
        };
        let target = match task {
            Some(task) => PlanTarget::Task { task, feature },
            None => PlanTarget::Feature { feature: "feat-1" },
        };
        let ranker = DeterministicContextRanker::new(query);
        let plan = plan_read(&entries, target, &ranker);
        let got: Vec<(String, Tier)> = plan.entries().iter().map(|p| (p.id().to_owned(), p.tier())).collect();
        let shadowed: Vec<String> = plan.shadowed().iter().map(|s| s.item().id.clone()).collect();
        let Plan { entries: want, shadowed: want_shadowed } = model::plan(&entries, task, feature, query);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&shadowed, &want_shadowed);

        let again = plan_read(&shuffled, target, &ranker);
        let got_again: Vec<(String, Tier)> =
            again.entries().iter().map(|p| (p.id().to_owned(), p.tier())).collect();
        prop_assert_eq!(got, got_again);

        // Every shadowing entry is planned, with the same (type, key).
        for s in plan.shadowed() {
            let winner = plan.entries().iter().find(|p| p.id() == s.shadowed_by());
            prop_assert!(winner.is_some());
            if let Some(w) = winner {
                prop_assert_eq!(w.item().key(), s.item().key());
                prop_assert_eq!(w.item().memory_type(), s.item().memory_type());
            }
        }
    }
}
