//! Receipts end to end: through the real `alp` on the command line, over stdio MCP (rmcp's client) and over HTTP
//! (`alp serve`, rmcp's HTTP client), every allowed read's record names its door and exactly what the answer held
//! (`shown`, `<id>@<version>` in answer order); writes and refusals name nothing.

use serde_json::{Value, json};

use crate::cli::Env;
use crate::serve::{RECORD_KEYS, Serve, ok as http_ok, token};

/// `(door, shown)` of the last record, `shown` empty when the record has none.
fn last_receipt(env: &Env) -> (String, Vec<String>) {
    let record = env.audit_lines().pop().expect("a record");
    let door = record["door"].as_str().expect("every record of this version names its door").to_owned();
    let shown = match record.get("shown") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            assert!(!items.is_empty(), "`shown` is absent rather than empty: {record}");
            items.iter().map(|item| item.as_str().unwrap().to_owned()).collect()
        }
        Some(other) => panic!("`shown` is a list: {other}"),
    };
    (door, shown)
}

fn receipt(door: &str, shown: &[&str]) -> (String, Vec<String>) {
    (door.to_owned(), shown.iter().map(|s| (*s).to_owned()).collect())
}

fn seeded() -> Env {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:team:db", "--content", "postgres in production"]);
    env.ok("main", &["memory", "create", "shared:team:ci", "--content", "postgres in ci"]);
    env.ok(
        "main",
        &["memory", "update", "shared:team:ci", "--expected-version", "1", "--content", "postgres in ci too"],
    );
    env
}

#[test]
fn the_command_line_records_what_each_read_disclosed() {
    let env = seeded();
    assert_eq!(last_receipt(&env), receipt("update", &[]), "a write names nothing");

    let got = env.ok("worker", &["memory", "get", "shared:team:db"]);
    assert_eq!(got["version"], 1);
    assert_eq!(last_receipt(&env), receipt("get", &["shared:team:db@1"]));

    let found = env.ok("worker", &["memory", "search", "--prefix", "shared", "--", "postgres"]);
    let answered: Vec<String> = found["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}@{}", e["id"].as_str().unwrap(), e["version"]))
        .collect();
    assert_eq!(answered.len(), 2);
    let (door, shown) = last_receipt(&env);
    assert_eq!((door.as_str(), shown), ("search", answered));

    env.ok("worker", &["memory", "list", "shared"]);
    assert_eq!(last_receipt(&env), receipt("list", &["shared:team:ci@2", "shared:team:db@1"]));

    env.ok("worker", &["memory", "history", "shared:team:ci"]);
    assert_eq!(last_receipt(&env), receipt("history", &["shared:team:ci@2", "shared:team:ci@1"]));

    let context = env.ok("worker", &["memory", "context", "production", "--budget", "400"]);
    assert_eq!(context["entryIds"], json!(["shared:team:db"]));
    assert_eq!(last_receipt(&env), receipt("context", &["shared:team:db@1"]));

    // A refusal is recorded before anything is read, and names nothing.
    let run = env.run(&["--json", "--as", "reviewer", "memory", "get", "shared:team:db"], None);
    assert_eq!(run.error()["code"], "MEMORY_NOT_GRANTED");
    assert_eq!(last_receipt(&env), receipt("get", &[]));
}

#[tokio::test]
async fn stdio_mcp_records_the_tools_reads_and_the_memory_tools_view() {
    let env = seeded();
    let server = crate::mcp::start(&env, "worker").await;
    let found = server.ok("memory_search", json!({ "query": "production" })).await;
    assert_eq!(found["entries"][0]["id"], "shared:team:db");
    assert_eq!(last_receipt(&env), receipt("search", &["shared:team:db@1"]));

    let view =
        server.call("memory", json!({ "command": "view", "path": "/memories/shared/team/db.md" })).await;
    assert_eq!(view.is_error, Some(false), "{view:?}");
    let (door, shown) = last_receipt(&env);
    assert_eq!((door.as_str(), shown), ("view", vec!["shared:team:db@1".to_owned()]));

    let listing = server.call("memory", json!({ "command": "view", "path": "/memories/shared/team" })).await;
    assert_eq!(listing.is_error, Some(false), "{listing:?}");
    assert_eq!(last_receipt(&env), receipt("view", &["shared:team:ci@2", "shared:team:db@1"]));
    let status = server.stop().await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn http_records_the_receipt_with_the_token_that_received_it() {
    let env = seeded();
    let (id, secret) = token(&env, "worker", &["--name", "receipts"]);
    let server = Serve::start(&env);
    let client = server.client(&secret, &[]).await;
    let got = http_ok(&client, "memory_get", json!({ "id": "shared:team:ci" })).await;
    assert_eq!(got["version"], 2);
    let record = env.audit_lines().pop().unwrap();
    assert_eq!(
        (record["actor"].as_str(), record["door"].as_str(), record["via"].as_str()),
        (Some("worker"), Some("get"), Some(id.as_str()))
    );
    assert_eq!(record["shown"], json!(["shared:team:ci@2"]));
    let keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, RECORD_KEYS, "every field, in the log's order");
    drop(client);
    server.terminate();
}
