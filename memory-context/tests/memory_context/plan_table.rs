//! The task read plan as a table: entries, target and query in; planned order with tiers and shadowed IDs out.

use memory_context::{PlanTarget, Tier, plan_read};
use memory_ranker::{DeterministicContextRanker, RankItem};
use testkit::model::ranking::Entry;

const TASK_IN_FEATURE: PlanTarget<'static> = PlanTarget::Task { task: "task-1", feature: Some("feat-1") };

#[track_caller]
fn check(
    entries: &[Entry],
    target: PlanTarget<'_>,
    query: &str,
    order: &[(&str, Tier)],
    shadowed: &[(&str, &str)],
) {
    let plan = plan_read(entries, target, &DeterministicContextRanker::new(query));
    let got: Vec<(&str, Tier)> = plan.entries().iter().map(|p| (p.id(), p.tier())).collect();
    assert_eq!(got, order, "order");
    let got: Vec<(&str, &str)> = plan.shadowed().iter().map(|s| (s.item().id(), s.shadowed_by())).collect();
    assert_eq!(got, shadowed, "shadowed");
}

fn e(id: &str, at: i128) -> Entry {
    Entry::new(id, "", at)
}

#[test]
fn candidates_by_scope() {
    let entries = [
        e("shared:task", 0).scope("task-1"),
        e("shared:feature", 0).scope("feat-1"),
        e("shared:none", 0),
        e("shared:project", 0).scope("project"),
        e("shared:other-task", 0).scope("task-2"),
        e("shared:other-feature", 0).scope("feat-2"),
        e("shared:other-critical", 0).scope("task-2").critical(),
    ];
    check(
        &entries,
        TASK_IN_FEATURE,
        "",
        &[
            ("shared:other-critical", Tier::Critical),
            ("shared:task", Tier::Task),
            ("shared:feature", Tier::Feature),
            ("shared:none", Tier::Unscoped),
            ("shared:project", Tier::Unscoped),
        ],
        &[],
    );
}

#[test]
fn task_without_feature_leaves_feature_entries_out() {
    let entries =
        [e("shared:task", 0).scope("task-1"), e("shared:feature", 0).scope("feat-1"), e("shared:none", 0)];
    check(
        &entries,
        PlanTarget::Task { task: "task-1", feature: None },
        "",
        &[("shared:task", Tier::Task), ("shared:none", Tier::Unscoped)],
        &[],
    );
}

#[test]
fn feature_alone_leaves_task_entries_out_unless_critical() {
    let entries = [
        e("shared:task", 0).scope("task-1"),
        e("shared:task-critical", 0).scope("task-1").critical(),
        e("shared:feature", 0).scope("feat-1"),
    ];
    check(
        &entries,
        PlanTarget::Feature { feature: "feat-1" },
        "",
        &[("shared:task-critical", Tier::Critical), ("shared:feature", Tier::Feature)],
        &[],
    );
}

#[test]
fn tiers_split_unscoped_by_type() {
    let entries = [
        e("shared:a-knowledge", 9).typed("knowledge"),
        e("shared:b-untyped", 9),
        e("shared:c-architecture", 1).typed("architecture"),
        e("shared:d-project", 2).typed("project").scope("project"),
        e("shared:e-critical-project", 0).typed("project").critical(),
    ];
    check(
        &entries,
        TASK_IN_FEATURE,
        "",
        &[
            ("shared:e-critical-project", Tier::Critical),
            ("shared:d-project", Tier::ProjectOrArchitecture),
            ("shared:c-architecture", Tier::ProjectOrArchitecture),
            ("shared:a-knowledge", Tier::Unscoped),
            ("shared:b-untyped", Tier::Unscoped),
        ],
        &[],
    );
}

#[test]
fn narrower_scope_wins() {
    let db = |id: &str| e(id, 0).typed("architecture").key("database");
    let entries = [
        db("shared:db-unscoped"),
        db("shared:db-feature").scope("feat-1"),
        db("shared:db-task").scope("task-1"),
        db("shared:db-elsewhere").scope("task-9").critical(),
    ];
    check(
        &entries,
        TASK_IN_FEATURE,
        "",
        &[("shared:db-task", Tier::Task)],
        &[
            ("shared:db-elsewhere", "shared:db-task"),
            ("shared:db-feature", "shared:db-task"),
            ("shared:db-unscoped", "shared:db-task"),
        ],
    );
    // Without the task entry, the feature entry wins; without both, the unscoped one.
    check(
        &entries[..2],
        TASK_IN_FEATURE,
        "",
        &[("shared:db-feature", Tier::Feature)],
        &[("shared:db-unscoped", "shared:db-feature")],
    );
    let unscoped_and_elsewhere = [entries[0].clone(), entries[3].clone()];
    check(
        &unscoped_and_elsewhere,
        TASK_IN_FEATURE,
        "",
        &[("shared:db-unscoped", Tier::ProjectOrArchitecture)],
        &[("shared:db-elsewhere", "shared:db-unscoped")],
    );
}

#[test]
fn importance_does_not_beat_narrowness() {
    let entries = [
        e("shared:rule-unscoped", 0).typed("decision").key("retries").critical(),
        e("shared:rule-task", 0).typed("decision").key("retries").scope("task-1"),
    ];
    check(
        &entries,
        TASK_IN_FEATURE,
        "",
        &[("shared:rule-task", Tier::Task)],
        &[("shared:rule-unscoped", "shared:rule-task")],
    );
}

#[test]
fn shadowing_needs_the_same_type_and_key() {
    let entries = [
        e("shared:no-key-unscoped", 0).typed("decision"),
        e("shared:no-key-task", 0).typed("decision").scope("task-1"),
        e("shared:style-decision", 0).typed("decision").key("style"),
        e("shared:style-knowledge", 0).typed("knowledge").key("style").scope("task-1"),
        e("shared:owner-untyped", 0).key("owner"),
        e("shared:owner-untyped-task", 0).key("owner").scope("task-1"),
    ];
    check(
        &entries,
        TASK_IN_FEATURE,
        "",
        &[
            ("shared:no-key-task", Tier::Task),
            ("shared:owner-untyped-task", Tier::Task),
            ("shared:style-knowledge", Tier::Task),
            ("shared:no-key-unscoped", Tier::Unscoped),
            ("shared:style-decision", Tier::Unscoped),
        ],
        &[("shared:owner-untyped", "shared:owner-untyped-task")],
    );
}

#[test]
fn equally_narrow_entries_all_stay() {
    let entries = [
        e("shared:db", 0).typed("architecture").key("database"),
        e("project:alp:db", 0).typed("architecture").key("database").scope("project"),
        e("private:main:db", 0).typed("architecture").key("database").scope("task-9").critical(),
        e("private:worker:db", 0).typed("architecture").key("database").scope("feat-9").critical(),
    ];
    check(
        &entries[2..],
        TASK_IN_FEATURE,
        "",
        &[("private:main:db", Tier::Critical), ("private:worker:db", Tier::Critical)],
        &[],
    );
    // The smallest ID among equally narrow winners is named as the shadowing entry.
    check(
        &entries,
        TASK_IN_FEATURE,
        "",
        &[("project:alp:db", Tier::ProjectOrArchitecture), ("shared:db", Tier::ProjectOrArchitecture)],
        &[("private:main:db", "project:alp:db"), ("private:worker:db", "project:alp:db")],
    );
}

#[test]
fn query_orders_inside_a_tier_and_drops_nothing() {
    let entries = [
        Entry::new("shared:a", "unrelated", 9).scope("task-1"),
        Entry::new("shared:b", "redis cluster", 1).scope("task-1"),
        Entry::new("shared:c", "Redis", 5).scope("task-1"),
        Entry::new("shared:d", "nothing", 0),
    ];
    check(
        &entries,
        TASK_IN_FEATURE,
        "redis cluster",
        &[
            ("shared:b", Tier::Task),
            ("shared:c", Tier::Task),
            ("shared:a", Tier::Task),
            ("shared:d", Tier::Unscoped),
        ],
        &[],
    );
}

#[test]
fn scope_is_compared_byte_for_byte() {
    let entries = [e("shared:upper", 0).scope("Task-1"), e("shared:project-upper", 0).scope("Project")];
    check(&entries, TASK_IN_FEATURE, "", &[], &[]);
}

#[test]
fn empty_input_plans_nothing() {
    check(&[], TASK_IN_FEATURE, "anything", &[], &[]);
}
