//! No sequence of tool calls, whatever their names and arguments, produces an audit record with another actor than
//! the role the server was started with.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::support::server;

const TOOLS: [&str; 9] = [
    "memory_search",
    "memory_get",
    "memory_create",
    "memory_update",
    "memory_delete",
    "memory_context",
    "memory",
    "memory_admin",
    "",
];

/// Argument names a tool takes, and names an agent might try.
const NAMES: [&str; 30] = [
    "id",
    "content",
    "prefix",
    "query",
    "limit",
    "budget",
    "task",
    "feature",
    "expectedVersion",
    "kind",
    "type",
    "importance",
    "clear",
    "command",
    "path",
    "file_text",
    "old_str",
    "new_str",
    "insert_line",
    "insert_text",
    "old_path",
    "new_path",
    "view_range",
    "role",
    "actor",
    "as",
    "root",
    "agents",
    "store",
    "_meta",
];

/// Values that name other roles, scopes and paths, or look like options.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "shared:team",
            "shared:team:db",
            "project:alp:log:1",
            "project:alp:goals",
            "project:other:x",
            "private:main:plans",
            "private:worker:drafts",
            "private:main",
            "private:worker",
            "main",
            "worker",
            "/memories",
            "/memories/shared/team.md",
            "/memories/private/main/plans.md",
            "/memories/private/worker/notes.md",
            "/memories/projects/alp/log/1.md",
            "/memories/../private/main/x.md",
            "/memories/shared/%2e%2e/x.md",
            "--as=main",
            "--as",
            "view",
            "create",
            "str_replace",
            "insert",
            "delete",
            "rename",
            "one\ntwo\n",
            "two",
            "",
        ])
        .prop_map(str::to_owned),
        "[a-z:/.%-]{0,16}",
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => text().prop_map(Value::String),
        2 => (0u64..4).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
        1 => Just(Value::Null),
        1 => prop::collection::vec(text().prop_map(Value::String), 0..3).prop_map(Value::Array),
        1 => Just(json!({ "role": "main" })),
    ]
}

fn arguments() -> impl Strategy<Value = Option<Map<String, Value>>> {
    prop::option::weighted(
        0.95,
        prop::collection::btree_map(prop::sample::select(NAMES.to_vec()), value(), 0..6)
            .prop_map(|map| map.into_iter().map(|(name, value)| (name.to_owned(), value)).collect()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn every_record_names_the_bound_role(
        calls in prop::collection::vec((prop::sample::select(TOOLS.to_vec()), arguments()), 1..25)
    ) {
        let server = server("worker");
        for (tool, args) in calls {
            let result = server.call(tool, args);
            // Never a protocol error: a result, with its JSON in a text block whenever it has structured content.
            if let Some(structured) = &result.structured_content {
                let text = &result.content[0].as_text().unwrap().text;
                prop_assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), structured);
                if result.is_error == Some(true) {
                    prop_assert!(structured["error"]["code"].is_string());
                }
            }
        }
        for record in server.service().audit().records() {
            prop_assert_eq!(record.actor(), "worker");
        }
    }
}
