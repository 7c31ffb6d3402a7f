//! What a person (or an agent) reads: rendered context text and the CLI's JSON shape.

use memory_context::{PlanTarget, build_memory_context, plan_read};
use memory_ranker::DeterministicContextRanker;
use testkit::model::ranking::Entry;

fn vietnamese_notes() -> Vec<Entry> {
    vec![
        Entry::new(
            "project:alp:kien-truc",
            "Kiến trúc: dịch vụ bộ nhớ kiểm tra quyền trước mọi thao tác I/O.\nMọi truy cập đều được ghi nhật ký.\n",
            3,
        ),
        Entry::new("project:alp:cơ-sở-dữ-liệu", "Cơ sở dữ liệu: PostgreSQL 16, không xoá cứng.\r\n", 2),
        Entry::new("project:alp:quy-ước", "Khoá (key) viết theo kebab-case.", 1),
        Entry::new("project:alp:lịch-sử", &"Một câu chuyện rất dài về bộ nhớ. ".repeat(12), 4),
    ]
}

#[test]
fn vietnamese_search_context() {
    let notes = vietnamese_notes();
    let ranked = DeterministicContextRanker::new("bộ NHỚ dữ").rank(&notes);
    let context = build_memory_context(&ranked, 300);
    insta::assert_snapshot!(context.text());
    insta::assert_snapshot!(
        "vietnamese_search_context_json",
        serde_json::to_string_pretty(&context).unwrap()
    );
}

#[test]
fn empty_query_context_with_everything() {
    let notes = vietnamese_notes();
    let ranked = DeterministicContextRanker::new("").rank(&notes);
    let context = build_memory_context(&ranked, 10_000);
    insta::assert_snapshot!(context.text());
}

#[test]
fn task_plan_context() {
    let entries = [
        Entry::new("project:alp:goals", "Ship the dashboard by September.", 1).typed("project").key("goals"),
        Entry::new("project:alp:db", "PostgreSQL", 1).typed("architecture").key("database"),
        Entry::new("project:alp:db-offline", "SQLite for local caching.\n", 2)
            .typed("architecture")
            .key("database")
            .scope("feat-offline"),
        Entry::new("project:alp:sync", "Sync runs every 5 minutes; conflicts: last writer wins.", 3)
            .typed("task")
            .scope("task-sync"),
        Entry::new("project:alp:no-secrets", "Không bao giờ ghi token vào nhật ký.", 0)
            .typed("knowledge")
            .scope("task-auth")
            .critical(),
        Entry::new("project:alp:glossary", "A tenant is a customer.", 5).typed("knowledge"),
    ];
    let target = PlanTarget::Task { task: "task-sync", feature: Some("feat-offline") };
    let plan = plan_read(&entries, target, &DeterministicContextRanker::new("sync"));
    let context = build_memory_context(plan.entries(), 220);
    let tiers: Vec<String> =
        plan.entries().iter().map(|p| format!("{} {}", p.tier().as_str(), p.item().id)).collect();
    let shadowed: Vec<String> =
        plan.shadowed().iter().map(|s| format!("{} (by {})", s.item().id, s.shadowed_by())).collect();
    insta::assert_snapshot!(format!(
        "plan:\n{}\nshadowed:\n{}\n\n{}\n--- diagnostics\n{}",
        tiers.join("\n"),
        shadowed.join("\n"),
        context.text(),
        serde_json::to_string(context.diagnostics()).unwrap()
    ));
}
