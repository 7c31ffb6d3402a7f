//! `alp --as ROLE mcp` end to end (`docs/CLI.md`, "The MCP server"): the real binary driven by rmcp's own client, and
//! by raw JSON lines for what a client never sends (a malformed line, an over-long request, end of input). Also the
//! runtime configuration that starts it: `alp adapter mcp`, `alp adapter claude|codex --via-mcp` (§10).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::cli::Env;

const ALP: &str = env!("CARGO_BIN_EXE_alp");
const WAIT: Duration = Duration::from_secs(30);

/// The nine tools, in the order `tools/list` gives them.
pub(crate) const TOOLS: [&str; 9] = [
    "memory_search",
    "memory_get",
    "memory_create",
    "memory_update",
    "memory_delete",
    "memory_context",
    "memory_history",
    "memory_restore",
    "memory",
];

/// `alp --root R --agents A [ARGS…]` with the environment the CLI tests use (no real home, no key).
fn command(env: &Env, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(env.command());
    command.arg("--root").arg(env.root()).arg("--agents").arg(env.agents()).args(args).kill_on_drop(true);
    command
}

fn client_config(version: ProtocolVersion) -> ClientConfig {
    let mut config =
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("alp-e2e", "0.0.0"));
    config.protocol_version = version;
    config
}

/// A running `alp --as ROLE mcp` and the rmcp client connected to it.
pub(crate) struct Server {
    client: RunningService<RoleClient, ClientConfig>,
    child: tokio::process::Child,
}

pub(crate) async fn start(env: &Env, role: &str) -> Server {
    start_with(env, role, ProtocolVersion::V_2025_11_25).await
}

async fn start_with(env: &Env, role: &str, version: ProtocolVersion) -> Server {
    start_command(command(env, &["--as", role, "mcp"]), version).await
}

/// Starts `command` (an `alp … mcp`, however it is wrapped) and connects rmcp's client to it.
async fn start_command(mut command: tokio::process::Command, version: ProtocolVersion) -> Server {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn alp mcp");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let client = tokio::time::timeout(WAIT, client_config(version).serve((stdout, stdin)))
        .await
        .expect("initialize in time")
        .expect("initialize");
    Server { client, child }
}

fn arguments(args: Value) -> CallToolRequestParams {
    match args {
        Value::Object(map) => CallToolRequestParams::new("x").with_arguments(map),
        _ => CallToolRequestParams::new("x"),
    }
}

/// The text block of a result, read as JSON, equals its structured content.
fn assert_text_mirrors(result: &CallToolResult) {
    let structured = result.structured_content.clone().expect("structuredContent");
    assert_eq!(result.content.len(), 1, "{result:?}");
    let text = &result.content[0].as_text().expect("a text block").text;
    let from_text: Value = serde_json::from_str(text).expect("the text block is JSON");
    assert_eq!(from_text, structured);
}

impl Server {
    pub(crate) async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let mut params = arguments(args);
        params.name = tool.to_owned().into();
        tokio::time::timeout(WAIT, self.client.call_tool(params))
            .await
            .expect("an answer in time")
            .expect("a tool result, never a protocol error")
    }

    /// A successful call of a JSON tool: its structured content.
    pub(crate) async fn ok(&self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args.clone()).await;
        assert_eq!(result.is_error, Some(false), "{tool} {args}: {result:?}");
        assert_text_mirrors(&result);
        result.structured_content.expect("structuredContent")
    }

    /// A failed call: the error object, `{"error": …}` checked for shape and mirrored in the text block.
    pub(crate) async fn fails(&self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{tool} {args}: {result:?}");
        assert_text_mirrors(&result);
        let document = result.structured_content.expect("structuredContent");
        let keys: Vec<&str> = document.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(keys, ["error"]);
        let error = document["error"].clone();
        let keys: Vec<&str> = error.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(keys[..3], ["kind", "code", "message"], "{error}");
        error
    }

    /// A successful `memory` command: its text.
    async fn memory(&self, args: Value) -> String {
        let result = self.call("memory", args.clone()).await;
        assert_eq!(result.is_error, Some(false), "memory {args}: {result:?}");
        assert_eq!(result.content.len(), 1);
        result.content[0].as_text().expect("text").text.clone()
    }

    /// Closes the client (the server's stdin) and waits for the server to exit.
    pub(crate) async fn stop(mut self) -> ExitStatus {
        let _ = self.client.cancel().await;
        tokio::time::timeout(WAIT, self.child.wait()).await.expect("exit after end of input").expect("wait")
    }
}

/// `(operation, outcome, code, id)` of the audit records after the first `skip`, checking every actor is `role`.
fn records_since(env: &Env, skip: usize, role: &str) -> Vec<(String, String, Option<String>, String)> {
    env.audit_lines()
        .into_iter()
        .skip(skip)
        .map(|record| {
            assert_eq!(record["actor"], role, "{record}");
            (
                record["operation"].as_str().unwrap().to_owned(),
                record["outcome"].as_str().unwrap().to_owned(),
                record["code"].as_str().map(str::to_owned),
                record["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn record(
    operation: &str,
    outcome: &str,
    code: Option<&str>,
    id: &str,
) -> (String, String, Option<String>, String) {
    (operation.to_owned(), outcome.to_owned(), code.map(str::to_owned), id.to_owned())
}

mod session {
    use super::*;

    /// Property names a tool must never take: who acts, where the memory is, which definitions apply.
    const FORBIDDEN: [&str; 9] =
        ["role", "actor", "as", "root", "agents", "store", "user", "identity", "principal"];

    fn property_names(schema: &Value, names: &mut Vec<String>) {
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, inner) in properties {
                names.push(name.clone());
                property_names(inner, names);
            }
        }
        if let Some(items) = schema.get("items") {
            property_names(items, names);
        }
    }

    #[tokio::test]
    async fn initialize_and_tools_list() {
        let env = Env::new();
        let server = start(&env, "worker").await;
        let info = server.client.peer_info().expect("initialize result");
        assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("alp-memory"));
        assert!(info.capabilities.tools.is_some());
        assert!(info.instructions.as_deref().unwrap_or_default().contains("role `worker`"));

        let tools = tokio::time::timeout(WAIT, server.client.list_all_tools()).await.unwrap().unwrap();
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names, TOOLS);
        for tool in &tools {
            let schema = Value::Object(tool.input_schema.as_ref().clone());
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
            let mut names = Vec::new();
            property_names(&schema, &mut names);
            for name in names {
                let lower = name.to_lowercase();
                assert!(
                    !FORBIDDEN.contains(&lower.as_str())
                        && !lower.contains("role")
                        && !lower.contains("actor"),
                    "{} has a role-like argument `{name}`",
                    tool.name
                );
            }
        }
        let listed = serde_json::to_string_pretty(&tools).unwrap();
        insta::assert_snapshot!("tools_list", listed);
        assert!(server.stop().await.success());
        assert!(env.audit_lines().is_empty(), "initialize and tools/list reach no door");
    }

    #[tokio::test]
    async fn protocol_revisions_with_a_handshake_only() {
        let env = Env::new();
        for (asked, answered) in [
            (ProtocolVersion::V_2024_11_05, ProtocolVersion::V_2024_11_05),
            (ProtocolVersion::V_2025_03_26, ProtocolVersion::V_2025_03_26),
            (ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_06_18),
            (ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_11_25),
            // No `initialize` in 2026-07-28: the server answers the newest revision that has one.
            (ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25),
        ] {
            let server = start_with(&env, "worker", asked.clone()).await;
            let info = server.client.peer_info().unwrap();
            assert_eq!(info.protocol_version, answered, "asked {asked}");
            let result = server.call("memory_search", json!({})).await;
            assert_eq!(result.is_error, Some(false), "asked {asked}: {result:?}");
            assert!(server.stop().await.success());
        }
    }
}

mod tools {
    use super::*;

    /// Rewrites `path` with `text` (the same size) and gives it back its modification time.
    fn edit_keeping_size_and_mtime(path: &Path, text: &str) {
        let before = std::fs::metadata(path).unwrap();
        assert_eq!(before.len(), text.len() as u64);
        std::fs::write(path, text).unwrap();
        let times = std::fs::FileTimes::new().set_modified(before.modified().unwrap());
        std::fs::File::options().write(true).open(path).unwrap().set_times(times).unwrap();
    }

    /// The server keeps what it has read (its entry cache), yet a file edited by hand between two searches is seen
    /// by the next one: one cached long ago and edited keeping its size and mtime, and one written and edited
    /// within the same second.
    #[tokio::test]
    async fn a_hand_edit_between_two_searches_is_seen() {
        let env = Env::new();
        let shared = env.root().join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        let (old, fresh) = (shared.join("old.md"), shared.join("fresh.md"));
        std::fs::write(&old, "---\nkind: fact\n---\nalpha\n").unwrap();
        // Older than a second: the first search caches it.
        std::thread::sleep(Duration::from_millis(1100));
        let server = start(&env, "main").await;
        let ids = |found: Value| -> Vec<String> {
            found["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(ids(server.ok("memory_search", json!({ "query": "alpha" })).await), ["shared:old"]);
        assert_eq!(ids(server.ok("memory_search", json!({ "query": "alpha" })).await), ["shared:old"]);
        std::fs::write(&fresh, "---\nkind: fact\n---\nalpha\n").unwrap();
        assert_eq!(
            ids(server.ok("memory_search", json!({ "query": "alpha" })).await),
            ["shared:fresh", "shared:old"]
        );
        edit_keeping_size_and_mtime(&fresh, "---\nkind: fact\n---\ngamma\n");
        edit_keeping_size_and_mtime(&old, "---\nkind: fact\n---\ngamma\n");
        assert!(ids(server.ok("memory_search", json!({ "query": "alpha" })).await).is_empty());
        assert_eq!(
            ids(server.ok("memory_search", json!({ "query": "gamma" })).await),
            ["shared:fresh", "shared:old"]
        );
        assert!(server.stop().await.success());
    }

    /// Each JSON tool answers with exactly the document `alp --json` prints.
    #[tokio::test]
    async fn every_tool_returns_the_cli_document() {
        let env = Env::new();
        let server = start(&env, "main").await;
        let created = server
            .ok(
                "memory_create",
                json!({ "id": "shared:team:db", "content": "PostgreSQL 16 for every service", "kind": "decision",
                        "type": "architecture", "key": "database", "importance": "high" }),
            )
            .await;
        assert_eq!(created["version"], 1);
        assert_eq!(created, env.ok("main", &["memory", "get", "shared:team:db"]));

        let got = server.ok("memory_get", json!({ "id": "shared:team:db" })).await;
        assert_eq!(got, created);

        let updated = server
            .ok(
                "memory_update",
                json!({ "id": "shared:team:db", "expectedVersion": 1, "content": "PostgreSQL 17 for every service",
                        "clear": ["key", "importance"], "ttl": "30d" }),
            )
            .await;
        assert_eq!((updated["version"].as_u64(), updated["importance"].as_str()), (Some(2), Some("medium")));
        assert!(updated.get("key").is_none() && updated["ttl"] == "30d");
        assert_eq!(updated, env.ok("main", &["memory", "get", "shared:team:db"]));

        server
            .ok("memory_create", json!({ "id": "shared:team:ci", "content": "CI runs on every push" }))
            .await;
        let found = server.ok("memory_search", json!({ "query": "postgresql service", "limit": 5 })).await;
        assert_eq!(found, env.ok("main", &["memory", "search", "--limit", "5", "postgresql", "service"]));
        assert_eq!(found["entries"][0]["id"], "shared:team:db");
        assert_eq!(found["entries"][0]["score"], 2);
        let filtered = server.ok("memory_search", json!({ "type": "architecture" })).await;
        assert_eq!(filtered, env.ok("main", &["memory", "search", "--type", "architecture"]));

        let context = server.ok("memory_context", json!({ "query": "postgresql", "budget": 60 })).await;
        assert_eq!(context, env.ok("main", &["memory", "context", "postgresql", "--budget", "60"]));

        let deleted =
            server.ok("memory_delete", json!({ "id": "shared:team:db", "expectedVersion": 2 })).await;
        assert_eq!(deleted, json!({ "id": "shared:team:db", "deleted": true }));
        assert_eq!(env.fails("main", &["memory", "get", "shared:team:db"], 5)["code"], "NOT_FOUND");
        assert!(server.stop().await.success());
        let operations: Vec<String> =
            records_since(&env, 0, "main").into_iter().map(|(operation, ..)| operation).collect();
        // Only the server's own calls and the CLI's gets/searches, one record per door call.
        assert_eq!(operations.iter().filter(|op| *op == "update").count(), 1);
        assert_eq!(operations.iter().filter(|op| *op == "delete").count(), 1);
        assert_eq!(operations.iter().filter(|op| *op == "create").count(), 2);
    }

    /// Every error code a tool can answer, the records it leaves (exactly one per door call, none for `USAGE`), and
    /// the bound role in each.
    #[tokio::test]
    async fn error_codes_and_their_records() {
        let env = Env::new();
        env.ok("worker", &["memory", "create", "project:alp:log:seed", "--content", "seeded"]);
        let server = start(&env, "worker").await;
        let long = "x".repeat(2001);
        type Case = (&'static str, Value, &'static str, Vec<(&'static str, &'static str)>);
        let cases: Vec<Case> = vec![
            ("memory_get", json!({ "id": "shared:.." }), "INVALID_MEMORY_ID", vec![("get", "error")]),
            ("memory_get", json!({ "id": "../../.ssh/id_rsa" }), "INVALID_MEMORY_ID", vec![("get", "error")]),
            (
                "memory_get",
                json!({ "id": "private:main:plans" }),
                "PRIVATE_MEMORY_DENIED",
                vec![("get", "denied")],
            ),
            ("memory_get", json!({ "id": "project:other:x" }), "MEMORY_NOT_GRANTED", vec![("get", "denied")]),
            ("memory_get", json!({ "id": "shared:nothing" }), "NOT_FOUND", vec![("get", "allowed")]),
            (
                "memory_create",
                json!({ "id": "project:alp:goals", "content": "x" }),
                "MEMORY_NOT_GRANTED",
                vec![("create", "denied")],
            ),
            (
                "memory_create",
                json!({ "id": "project:alp:log:a", "content": "x", "kind": "bogus" }),
                "INVALID_ENTRY",
                vec![("create", "error")],
            ),
            (
                "memory_create",
                json!({ "id": "project:alp:log:a", "content": long }),
                "LIMIT_EXCEEDED",
                vec![("create", "error")],
            ),
            (
                "memory_create",
                json!({ "id": "project:alp:log:seed", "content": "again" }),
                "ALREADY_EXISTS",
                vec![("create", "allowed")],
            ),
            (
                "memory_update",
                json!({ "id": "project:alp:log:seed", "expectedVersion": 7, "content": "stale" }),
                "VERSION_CONFLICT",
                vec![("update", "allowed")],
            ),
            (
                "memory_delete",
                json!({ "id": "project:alp:log:seed", "expectedVersion": 3 }),
                "VERSION_CONFLICT",
                vec![("delete", "allowed")],
            ),
            (
                "memory_search",
                json!({ "prefix": "private:main" }),
                "PRIVATE_MEMORY_DENIED",
                vec![("search", "denied")],
            ),
            (
                "memory_context",
                json!({ "budget": 100, "prefix": "project:other" }),
                "MEMORY_NOT_GRANTED",
                vec![("search", "denied")],
            ),
            // The tool's own errors: USAGE, before any door, so no record.
            (
                "memory_update",
                json!({ "id": "project:alp:log:seed", "expectedVersion": 1, "clear": ["bogus"] }),
                "USAGE",
                vec![],
            ),
            ("memory_search", json!({ "kind": "bogus" }), "USAGE", vec![]),
            ("memory_search", json!({ "limit": -1 }), "USAGE", vec![]),
            ("memory_search", json!({ "limit": 1.5 }), "USAGE", vec![]),
            ("memory_context", json!({ "query": "x" }), "USAGE", vec![]),
            ("memory_get", json!({}), "USAGE", vec![]),
            ("memory_get", json!({ "id": 5 }), "USAGE", vec![]),
            ("memory_get", json!({ "id": "private:main:plans", "role": "main" }), "USAGE", vec![]),
            ("memory_get", json!({ "id": "shared:x", "actor": "main" }), "USAGE", vec![]),
            ("memory_search", json!({ "as": "main" }), "USAGE", vec![]),
            ("memory_search", json!({ "root": "/tmp", "agents": "/tmp" }), "USAGE", vec![]),
            (
                "memory_delete",
                json!({ "id": "shared:x", "expectedVersion": 9_007_199_254_740_992u64 }),
                "USAGE",
                vec![],
            ),
            ("memory_create", json!({ "id": "project:alp:log:b" }), "USAGE", vec![]),
            ("no_such_tool", json!({}), "USAGE", vec![]),
            ("memory", json!({ "command": "format" }), "USAGE", vec![]),
            ("memory", json!({ "command": "view", "path": "/memories", "file_text": "x" }), "USAGE", vec![]),
        ];
        for (tool, args, code, expected) in cases {
            let before = env.audit_lines().len();
            let error = server.fails(tool, args.clone()).await;
            assert_eq!(error["code"], code, "{tool} {args}: {error}");
            let records = records_since(&env, before, "worker");
            let got: Vec<(&str, &str)> =
                records.iter().map(|(op, outcome, ..)| (op.as_str(), outcome.as_str())).collect();
            assert_eq!(got, expected, "{tool} {args}");
            for (_, outcome, record_code, _) in &records {
                if outcome != "allowed" {
                    assert_eq!(record_code.as_deref(), Some(code), "{tool} {args}");
                }
            }
            if code == "VERSION_CONFLICT" {
                assert_eq!(error["actual"], 1, "{error}");
                assert!(error["expected"] == 7 || error["expected"] == 3, "{error}");
            }
        }
        assert!(server.stop().await.success());
    }

    #[tokio::test]
    async fn a_stale_expected_version_is_a_version_conflict() {
        let env = Env::new();
        let server = start(&env, "main").await;
        server.ok("memory_create", json!({ "id": "project:alp:goals", "content": "v1" })).await;
        server
            .ok("memory_update", json!({ "id": "project:alp:goals", "expectedVersion": 1, "content": "v2" }))
            .await;
        let error = server
            .fails(
                "memory_update",
                json!({ "id": "project:alp:goals", "expectedVersion": 1, "content": "lost" }),
            )
            .await;
        assert_eq!(error["kind"], "MemoryVersionConflictError");
        assert_eq!(
            (error["code"].as_str(), error["id"].as_str()),
            (Some("VERSION_CONFLICT"), Some("project:alp:goals"))
        );
        assert_eq!((error["expected"].as_u64(), error["actual"].as_u64()), (Some(1), Some(2)));
        assert_eq!(server.ok("memory_get", json!({ "id": "project:alp:goals" })).await["content"], "v2");
        assert!(server.stop().await.success());
    }

    /// A store failure (here the seed's symlink check) is a tool result like any other error.
    #[tokio::test]
    async fn a_store_error_is_a_tool_error() {
        let env = Env::new();
        std::fs::create_dir_all(env.root().join("shared")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", env.root().join("shared/evil.md")).unwrap();
        let server = start(&env, "worker").await;
        let error = server.fails("memory_get", json!({ "id": "shared:evil" })).await;
        assert_eq!(
            (error["kind"].as_str(), error["code"].as_str()),
            (Some("MemoryStorageError"), Some("STORAGE_ERROR"))
        );
        assert_eq!(
            server.ok("memory_search", json!({})).await,
            json!({ "entries": [] }),
            "the server goes on"
        );
        assert!(server.stop().await.success());
    }
}

mod audit {
    use super::*;

    /// Whatever the agent sends, every record names the role the server was started with.
    #[tokio::test]
    async fn every_record_names_the_bound_role() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "private:main:plans", "--content", "secret"]);
        let before = env.audit_lines().len();
        let server = start(&env, "worker").await;
        let smuggled = [
            ("memory_get", json!({ "id": "private:main:plans", "role": "main" })),
            ("memory_get", json!({ "id": "private:main:plans" })),
            ("memory_search", json!({ "prefix": "private:main", "as": "main" })),
            ("memory_search", json!({ "query": "--as=main secret" })),
            (
                "memory_create",
                json!({ "id": "private:worker:note", "content": "--as main", "source": "main" }),
            ),
            ("memory_create", json!({ "id": "private:main:note", "content": "x" })),
            ("memory", json!({ "command": "view", "path": "/memories/private/main/plans.md" })),
            ("memory", json!({ "command": "view", "path": "/memories" })),
            (
                "memory",
                json!({ "command": "create", "path": "/memories/private/main/x.md", "file_text": "x" }),
            ),
            ("memory", json!({ "command": "view", "path": "/memories/private/worker/../main/plans.md" })),
            ("memory_context", json!({ "budget": 1000, "task": "main" })),
        ];
        for (tool, args) in smuggled {
            server.call(tool, args).await;
        }
        assert!(server.stop().await.success());
        let records = records_since(&env, before, "worker");
        assert_eq!(records.len(), 9, "one record per door call, none for the refused arguments: {records:?}");
        assert_eq!(env.ok("main", &["memory", "get", "private:main:plans"])["content"], "secret");
    }
}

mod concurrency {
    use super::*;

    /// A server whose open-file limit is lower than the entries a search reads: the entry cache holds only the
    /// share of descriptors the limit leaves it (here (2,000 − 1,024) × 3/4 = 732), counted while the listing
    /// reads, so every search over 3,000 entries answers, the first (which reads and caches them) and the next
    /// (which checks them, some by their held file and the rest by name).
    #[tokio::test]
    async fn a_search_over_more_entries_than_descriptors_answers_cold_and_warm() {
        let env = Env::new();
        let notes = env.root().join("shared/notes");
        std::fs::create_dir_all(&notes).unwrap();
        for i in 0..3000 {
            let word = if i % 3 == 0 { "needle" } else { "hay" };
            std::fs::write(notes.join(format!("n{i:04}.md")), format!("note {i} {word}\n")).unwrap();
        }
        searches_under_2000_files(&env, 1000).await;
    }

    /// As above with the files in 1,500 directories: a warm search, which walks every directory before it checks
    /// the files, holds only a bounded number of them open (all of them and the cache's 732 files would be over
    /// the limit).
    #[tokio::test]
    async fn a_search_over_more_directories_than_descriptors_answers_cold_and_warm() {
        let env = Env::new();
        for dir in 0..1500 {
            let notes = env.root().join(format!("shared/notes/d{dir:04}"));
            std::fs::create_dir_all(&notes).unwrap();
            let word = if dir % 3 == 0 { "needle" } else { "hay" };
            std::fs::write(notes.join("a.md"), format!("note {dir} {word}\n")).unwrap();
            std::fs::write(notes.join("b.md"), format!("note {dir} hay\n")).unwrap();
        }
        searches_under_2000_files(&env, 500).await;
    }

    /// Three searches for `needle` under `shared:notes` (cold, warm, warm again) by an `alp mcp` under `ulimit -n
    /// 2000`, each finding `needles` entries; skipped with a note where the limit cannot be set.
    async fn searches_under_2000_files(env: &Env, needles: usize) {
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        if hard.is_some_and(|hard| hard < 2000) && !rustix::process::geteuid().is_root() {
            eprintln!("note: skipped: `ulimit -n 2000` needs a hard limit of 2000 open files or root");
            return;
        }
        // Files changed within the last second are not cached.
        std::thread::sleep(Duration::from_millis(1100));
        let mut limited = tokio::process::Command::from(testkit::process::isolated("sh", &env.home()));
        limited.arg("-c").arg("ulimit -n 2000 && exec \"$0\" \"$@\"").arg(env!("CARGO_BIN_EXE_alp"));
        limited.arg("--root").arg(env.root()).arg("--agents").arg(env.agents()).args(["--as", "main", "mcp"]);
        let server = start_command(limited, ProtocolVersion::V_2025_11_25).await;
        for round in ["cold", "warm", "warm again"] {
            let found =
                server.ok("memory_search", json!({ "query": "needle", "prefix": "shared:notes" })).await;
            assert_eq!(found["entries"].as_array().map(Vec::len), Some(needles), "{round}: {found}");
        }
        assert!(server.stop().await.success());
    }

    /// Two servers update one entry at the same version: exactly one wins, the other learns it lost.
    #[tokio::test]
    async fn two_servers_race_on_one_entry() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "shared:race", "--content", "0"]);
        let (a, b) = tokio::join!(start(&env, "main"), start(&env, "main"));
        for round in 1..=15u64 {
            let args = |who: &str| json!({ "id": "shared:race", "expectedVersion": round, "content": format!("{round}{who}") });
            let (ra, rb) =
                tokio::join!(a.call("memory_update", args("a")), b.call("memory_update", args("b")));
            let winners: Vec<&CallToolResult> =
                [&ra, &rb].into_iter().filter(|r| r.is_error == Some(false)).collect();
            assert_eq!(winners.len(), 1, "round {round}: {ra:?} {rb:?}");
            let loser = if ra.is_error == Some(true) { &ra } else { &rb };
            let error = &loser.structured_content.as_ref().unwrap()["error"];
            assert_eq!(error["code"], "VERSION_CONFLICT");
            assert_eq!(
                (error["expected"].as_u64(), error["actual"].as_u64()),
                (Some(round), Some(round + 1))
            );
            let won = winners[0].structured_content.as_ref().unwrap();
            assert_eq!(won["version"], round + 1);
            let stored = env.ok("main", &["memory", "get", "shared:race"]);
            assert_eq!(stored["content"], won["content"], "the winner's content is stored");
        }
        assert!(a.stop().await.success());
        assert!(b.stop().await.success());
        assert_eq!(env.ok("main", &["memory", "get", "shared:race"])["version"], 16);
    }

    /// The server keeps nothing between calls: a change by the CLI, a hand edit and a revoked grant are each seen by
    /// the next call.
    #[tokio::test]
    async fn changes_made_by_others_are_seen_by_the_next_call() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "project:alp:goals", "--content", "Ship the store."]);
        let server = start(&env, "worker").await;
        let first = server.ok("memory_get", json!({ "id": "project:alp:goals" })).await;
        assert_eq!(first["version"], 1);

        env.ok(
            "main",
            &["memory", "update", "project:alp:goals", "--expected-version", "1", "--content", "Ship MCP."],
        );
        let second = server.ok("memory_get", json!({ "id": "project:alp:goals" })).await;
        assert_eq!((second["version"].as_u64(), second["content"].as_str()), (Some(2), Some("Ship MCP.")));

        let file = env.root().join("projects/alp/goals.md");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("Ship MCP.", "Edited by hand.")).unwrap();
        let third = server.ok("memory_get", json!({ "id": "project:alp:goals" })).await;
        assert_eq!(third["content"], "Edited by hand.");
        let listed =
            server.memory(json!({ "command": "view", "path": "/memories/projects/alp/goals.md" })).await;
        assert!(listed.ends_with("     1\tEdited by hand."), "{listed}");

        let definition = env.agents().join("worker.yaml");
        let yaml = std::fs::read_to_string(&definition).unwrap();
        std::fs::write(&definition, yaml.replace("\"project:alp\", ", "")).unwrap();
        let revoked = server.fails("memory_get", json!({ "id": "project:alp:goals" })).await;
        assert_eq!(revoked["code"], "MEMORY_NOT_GRANTED");
        assert!(server.stop().await.success());
    }
}

pub(crate) mod transport {
    use super::*;

    /// The server's stdin and stdout as raw lines.
    pub(crate) struct Raw {
        child: std::process::Child,
        stdin: Option<std::process::ChildStdin>,
        lines: Receiver<String>,
    }

    impl Raw {
        pub(crate) fn spawn(env: &Env, role: &str) -> Raw {
            let mut child = env
                .command()
                .arg("--root")
                .arg(env.root())
                .arg("--agents")
                .arg(env.agents())
                .args(["--as", role, "mcp"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (sender, lines) = channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
            let stdin = child.stdin.take();
            Raw { child, stdin, lines }
        }

        pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
            let stdin = self.stdin.as_mut().unwrap();
            stdin.write_all(bytes).unwrap();
            stdin.flush().unwrap();
        }

        pub(crate) fn send(&mut self, message: &Value) {
            self.send_bytes(format!("{message}\n").as_bytes());
        }

        pub(crate) fn receive(&self) -> Value {
            let line = self.lines.recv_timeout(WAIT).expect("a line in time");
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout holds only JSON ({e}): {line}"))
        }

        /// A line already written, if any, once the server is gone (its output ended or nothing comes in time).
        pub(crate) fn receive_left(&self) -> Option<Value> {
            let line = self.lines.recv_timeout(WAIT).ok()?;
            Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout holds only JSON ({e}): {line}")),
            )
        }

        pub(crate) fn initialize(&mut self) {
            self.send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
            assert_eq!(self.receive()["result"]["protocolVersion"], "2025-11-25");
            self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        }

        /// The server's process ID.
        pub(crate) fn pid(&self) -> u32 {
            self.child.id()
        }

        pub(crate) fn close(&mut self) -> ExitStatus {
            drop(self.stdin.take());
            let deadline = std::time::Instant::now() + WAIT;
            while std::time::Instant::now() < deadline {
                if let Some(status) = self.child.try_wait().unwrap() {
                    return status;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!("the server did not exit after end of input");
        }

        /// Ends the input, waits for the server to exit, and returns its status and every line it wrote since the
        /// last [`Raw::receive`].
        fn finish(&mut self) -> (ExitStatus, Vec<Value>) {
            let status = self.close();
            let rest = self
                .lines
                .iter()
                .map(|line| serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
                .collect();
            (status, rest)
        }

        /// The next `count` lines, by their `id` (as JSON text), each id once.
        fn receive_by_id(&self, count: usize) -> std::collections::BTreeMap<String, Value> {
            let mut by_id = std::collections::BTreeMap::new();
            for _ in 0..count {
                let line = self.receive();
                let previous = by_id.insert(line["id"].to_string(), line.clone());
                assert!(previous.is_none(), "two answers for one id: {line}");
            }
            by_id
        }

        /// The most memory the server has held (`VmHWM`), in KiB.
        fn peak_kib(&self) -> u64 {
            let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap()
        }
    }

    impl Drop for Raw {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[test]
    fn a_malformed_line_gets_a_json_rpc_error_and_the_server_goes_on() {
        let env = Env::new();
        let mut raw = Raw::spawn(&env, "worker");
        raw.initialize();
        raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\n");
        assert_eq!(
            raw.receive(),
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "Parse error" } })
        );
        raw.send_bytes(b"not json at all\n");
        assert_eq!(raw.receive()["error"]["code"], -32700);
        raw.send(&json!({ "foo": "bar" }));
        let invalid = raw.receive();
        assert_eq!((invalid["id"].clone(), invalid["error"]["code"].clone()), (Value::Null, json!(-32600)));
        // A tools/call whose arguments are not an object is still a tool result.
        raw.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "memory_get", "arguments": "x" } }));
        let result = raw.receive();
        assert_eq!(result["id"], 2);
        assert_eq!(result["result"]["isError"], true);
        assert_eq!(result["result"]["structuredContent"]["error"]["code"], "USAGE");
        raw.send(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }));
        let listed = raw.receive();
        assert_eq!(listed["id"], 3);
        assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), TOOLS.len());
        // A second initialize is refused (the session's revision stays), an unknown method is -32601.
        raw.send(&json!({ "jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {
            "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": { "name": "again", "version": "0" } } }));
        let again = raw.receive();
        assert_eq!(
            (again["id"].clone(), again["error"]["code"].clone()),
            (json!(4), json!(-32600)),
            "{again}"
        );
        raw.send(&json!({ "jsonrpc": "2.0", "id": 5, "method": "memory/admin", "params": {} }));
        let unknown = raw.receive();
        assert_eq!(
            (unknown["id"].clone(), unknown["error"]["code"].clone()),
            (json!(5), json!(-32601)),
            "{unknown}"
        );
        assert!(raw.close().success());
        assert!(env.audit_lines().is_empty());
    }

    #[test]
    fn an_oversized_request_is_refused_without_being_held_and_the_server_goes_on() {
        let env = Env::new();
        let mut raw = Raw::spawn(&env, "main");
        raw.initialize();
        let before = raw.peak_kib();
        // 24 MiB of content: six times the limit.
        let mut line = br#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"memory_create","arguments":{"id":"shared:big","content":""#.to_vec();
        line.resize(line.len() + 24 * 1024 * 1024, b'a');
        line.extend_from_slice(b"\"}}}\n");
        raw.send_bytes(&line);
        let refused = raw.receive();
        assert_eq!(refused["id"], 41);
        assert_eq!(refused["error"]["code"], -32600);
        assert_eq!(refused["error"]["data"]["maxBytes"], 4 * 1024 * 1024);
        raw.send(&json!({ "jsonrpc": "2.0", "id": 42, "method": "ping" }));
        assert_eq!(raw.receive(), json!({ "jsonrpc": "2.0", "id": 42, "result": {} }));
        let grown = raw.peak_kib().saturating_sub(before);
        assert!(grown < 16 * 1024, "the server held {grown} KiB more for a 24 MiB line");
        assert!(raw.close().success());
        assert!(env.audit_lines().is_empty(), "nothing reached a door");
    }

    /// The `_meta` of a request that names a revision of the session era and client capabilities: still a request
    /// that waits for `initialize` (a stateless one, naming `2026-07-28`, does not: `eras.rs`).
    fn inline_meta() -> Value {
        json!({ "io.modelcontextprotocol/protocolVersion": "2025-11-25",
                "io.modelcontextprotocol/clientCapabilities": {} })
    }

    fn not_initialized(id: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32002, "message": "server not initialized" } })
    }

    /// Before `initialize`, only `initialize` and `ping` are served of the session era: every other request is -32002
    /// and does nothing, even when its `_meta` names a session revision, and a notification or a response gets no
    /// reply and does not end the session.
    /// After `initialize`, a request is served even before `notifications/initialized`.
    #[test]
    fn requests_before_initialize_are_refused_and_do_nothing() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "shared:team:db", "--content", "Postgres 16."]);
        let before = env.audit_lines().len();
        let mut raw = Raw::spawn(&env, "main");
        let get = json!({ "name": "memory_get", "arguments": { "id": "shared:team:db" } });
        let mut get_meta = get.clone();
        get_meta["_meta"] = inline_meta();
        let create = json!({ "name": "memory_create", "arguments": { "id": "shared:early", "content": "x" },
                             "_meta": inline_meta() });
        raw.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": get_meta }));
        raw.send(&json!({ "jsonrpc": "2.0", "id": "two", "method": "tools/call", "params": create }));
        raw.send(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": get }));
        raw.send(&json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": { "_meta": inline_meta() } }));
        raw.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        raw.send(&json!({ "jsonrpc": "2.0", "method": "tools/call", "params": get }));
        raw.send(&json!({ "jsonrpc": "2.0", "id": 99, "result": {} }));
        raw.send(&json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }));
        let answers = raw.receive_by_id(5);
        assert_eq!(answers["1"], not_initialized(json!(1)), "a call with a protocol revision in _meta");
        assert_eq!(answers["\"two\""], not_initialized(json!("two")));
        assert_eq!(answers["3"], not_initialized(json!(3)));
        assert_eq!(answers["4"], not_initialized(json!(4)));
        assert_eq!(answers["\"p\""], json!({ "jsonrpc": "2.0", "id": "p", "result": {} }));
        assert_eq!(env.audit_lines().len(), before, "nothing reached a door before initialize");

        raw.send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
        assert_eq!(raw.receive()["result"]["protocolVersion"], "2025-11-25");
        // Before notifications/initialized: served.
        raw.send(&json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": get }));
        let served = raw.receive();
        assert_eq!(served["id"], 5, "{served}");
        assert_eq!(served["result"]["structuredContent"]["content"], "Postgres 16.");
        raw.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        let (status, rest) = raw.finish();
        assert_eq!(status.code(), Some(0));
        assert_eq!(rest, Vec::<Value>::new(), "a notification or a response gets no reply");
        assert_eq!(records_since(&env, before, "main"), [record("get", "allowed", None, "shared:team:db")]);
        assert_eq!(env.fails("main", &["memory", "get", "shared:early"], 5)["code"], "NOT_FOUND");
    }

    /// A request whose id is not a string or an integer from -(2^53 - 1) to 2^53 - 1 gets -32600 with a null id
    /// (it is never left unanswered) and does nothing; ids at the edges are answered under themselves.
    #[test]
    fn a_request_with_a_bad_id_gets_invalid_request_with_a_null_id_and_does_nothing() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "shared:team:db", "--content", "Postgres 16."]);
        let before = env.audit_lines().len();
        let mut raw = Raw::spawn(&env, "main");
        raw.initialize();
        let refused = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32600,
            "message": "Invalid Request: the id must be a string or an integer from -(2^53 - 1) to 2^53 - 1" } });
        let bad = [
            "null",
            "1.5",
            "1.0",
            "1e3",
            "true",
            "false",
            "{}",
            "{\"a\":1}",
            "[]",
            "[1]",
            "9007199254740992",
            "-9007199254740992",
            "9223372036854775807",
            "18446744073709551616",
        ];
        for (n, id) in bad.iter().enumerate() {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"memory_create","arguments":{{"id":"shared:bad{n}","content":"x"}}}}}}"#
            );
            raw.send_bytes(format!("{line}\n").as_bytes());
            assert_eq!(raw.receive(), refused, "id {id}");
        }
        // Not a notification: a null id is still an id.
        raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"notifications/initialized\"}\n");
        assert_eq!(raw.receive(), refused);
        for id in
            [json!(9_007_199_254_740_991_i64), json!(-9_007_199_254_740_991_i64), json!(""), json!("1.5")]
        {
            let get = json!({ "name": "memory_get", "arguments": { "id": "shared:team:db" } });
            raw.send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": get }));
            let answer = raw.receive();
            assert_eq!(answer["id"], id, "{answer}");
            assert_eq!(answer["result"]["structuredContent"]["content"], "Postgres 16.", "{answer}");
        }
        let (status, rest) = raw.finish();
        assert_eq!(status.code(), Some(0));
        assert_eq!(rest, Vec::<Value>::new());
        let records = records_since(&env, before, "main");
        assert_eq!(
            records,
            vec![record("get", "allowed", None, "shared:team:db"); 4],
            "the refused ones did nothing"
        );
    }

    #[test]
    fn end_of_input_ends_the_server_with_status_zero() {
        let env = Env::new();
        let mut raw = Raw::spawn(&env, "worker");
        raw.initialize();
        assert_eq!(raw.close().code(), Some(0));
        let mut raw = Raw::spawn(&env, "worker");
        assert_eq!(raw.close().code(), Some(0), "end of input before initialize");
    }
}

mod command_line {
    use super::*;

    #[test]
    fn mcp_needs_a_role_before_the_subcommand_an_existing_root_and_a_definition() {
        let env = Env::new();
        let no_role = env.run(&["--json", "mcp"], Some(""));
        assert_eq!(no_role.status, 2, "{no_role:?}");
        assert_eq!(no_role.error()["code"], "USAGE");
        let after = env.run(&["--json", "mcp", "--as", "worker"], Some(""));
        assert_eq!((after.status, after.error()["code"].as_str()), (2, Some("USAGE")));
        let unknown = env.run(&["--json", "--as", "nobody", "mcp"], Some(""));
        assert_eq!((unknown.status, unknown.error()["code"].as_str()), (2, Some("INVALID_AGENT_DEFINITION")));
        let missing = env
            .command()
            .args(["--json", "--root", "/nonexistent/alp", "--agents"])
            .arg(env.agents())
            .args(["--as", "worker", "mcp"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(missing.status.code(), Some(9), "{missing:?}");
        let last = String::from_utf8(missing.stderr).unwrap();
        let error: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
        assert_eq!(error["error"]["code"], "AUDIT_UNAVAILABLE");
        assert!(env.audit_lines().is_empty());
        assert!(!Path::new("/nonexistent/alp").exists());
        let ok = env.run(&["--as", "worker", "mcp"], Some(""));
        assert_eq!((ok.status, ok.stdout.as_str()), (0, ""), "{ok:?}");
    }
}

mod memory_tool {
    use super::*;

    /// Paths and IDs, both ways: what the memory tool writes, memory_get reads by ID, and the other way round.
    #[tokio::test]
    async fn paths_and_ids_both_ways() {
        let env = Env::new();
        let server = start(&env, "main").await;
        let table = [
            ("/memories/shared/a.md", "shared:a"),
            ("/memories/shared/team/onboarding.md", "shared:team:onboarding"),
            ("/memories/projects/alp/log/2026-11.md", "project:alp:log:2026-11"),
            ("/memories/private/main/journal.md", "private:main:journal"),
            ("/memories/shared/x.md.md", "shared:x.md"),
            ("/memories/shared/with space.md", "shared:with space"),
        ];
        for (path, id) in table {
            let text = server
                .memory(json!({ "command": "create", "path": path, "file_text": format!("at {path}") }))
                .await;
            assert_eq!(text, format!("File created successfully at: {path}"));
            let entry = server.ok("memory_get", json!({ "id": id })).await;
            assert_eq!(entry["content"], format!("at {path}"), "{path} -> {id}");
        }
        for (path, id) in table {
            let other = format!("{id}:again");
            server.ok("memory_create", json!({ "id": other, "content": format!("by id {id}") })).await;
            let again = format!("{}/again.md", path.strip_suffix(".md").unwrap());
            let text = server.memory(json!({ "command": "view", "path": again })).await;
            assert_eq!(
                text,
                format!("Here's the content of {again} with line numbers:\n     1\tby id {id}"),
                "{id} -> {again}"
            );
        }
        assert!(server.stop().await.success());
    }

    /// Traversal and malformed paths are refused before any door: one `error` record with the path as given
    /// (or, for another role's private memory, one `denied` record), and nothing read or written.
    #[tokio::test]
    async fn traversal_and_malformed_paths_read_nothing() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "private:main:plans", "--content", "secret"]);
        let files_before = files(&env.root());
        let server = start(&env, "worker").await;
        type Case = (Value, &'static str, Option<(&'static str, &'static str, &'static str)>);
        let cases: Vec<Case> = vec![
            (
                json!({ "command": "view", "path": "/memories/../private/main/plans.md" }),
                "INVALID_MEMORY_ID",
                Some(("get", "error", "/memories/../private/main/plans.md")),
            ),
            (
                json!({ "command": "view", "path": "/memories/shared/%2e%2e/private/main/plans.md" }),
                "INVALID_MEMORY_ID",
                Some(("get", "error", "/memories/shared/%2e%2e/private/main/plans.md")),
            ),
            (
                json!({ "command": "view", "path": "/memories//private/main" }),
                "INVALID_MEMORY_ID",
                Some(("search", "error", "/memories//private/main")),
            ),
            (
                json!({ "command": "view", "path": "/etc/passwd" }),
                "INVALID_MEMORY_ID",
                Some(("search", "error", "/etc/passwd")),
            ),
            (
                json!({ "command": "view", "path": "private:main:plans" }),
                "INVALID_MEMORY_ID",
                Some(("search", "error", "private:main:plans")),
            ),
            (
                json!({ "command": "create", "path": "/memories/../x.md", "file_text": "x" }),
                "INVALID_MEMORY_ID",
                Some(("create", "error", "/memories/../x.md")),
            ),
            (
                json!({ "command": "create", "path": "shared:a", "file_text": "x" }),
                "INVALID_MEMORY_ID",
                Some(("create", "error", "shared:a")),
            ),
            (
                json!({ "command": "str_replace", "path": "/memories/shared/a:b.md", "old_str": "a", "new_str": "b" }),
                "INVALID_MEMORY_ID",
                Some(("update", "error", "/memories/shared/a:b.md")),
            ),
            (
                json!({ "command": "insert", "path": "/memories/private/worker/../main/plans.md", "insert_line": 0, "insert_text": "x" }),
                "INVALID_MEMORY_ID",
                Some(("update", "error", "/memories/private/worker/../main/plans.md")),
            ),
            (
                json!({ "command": "delete", "path": "/memories/private/main/%70lans.md" }),
                "INVALID_MEMORY_ID",
                Some(("delete", "error", "/memories/private/main/%70lans.md")),
            ),
            (
                json!({ "command": "rename", "old_path": "/memories/private/worker/a.md", "new_path": "/memories/shared/../private/main/a.md" }),
                "INVALID_MEMORY_ID",
                Some(("create", "error", "/memories/shared/../private/main/a.md")),
            ),
            // A directory where a file is needed: the tool's own error, no record.
            (
                json!({ "command": "create", "path": "/memories/private/main", "file_text": "x" }),
                "USAGE",
                None,
            ),
            (json!({ "command": "delete", "path": "/memories/private/main" }), "USAGE", None),
            // Another role's private memory: denied at the gate.
            (
                json!({ "command": "view", "path": "/memories/private/main" }),
                "PRIVATE_MEMORY_DENIED",
                Some(("search", "denied", "private:main")),
            ),
            (
                json!({ "command": "view", "path": "/memories/private/main/plans.md" }),
                "PRIVATE_MEMORY_DENIED",
                Some(("get", "denied", "private:main:plans")),
            ),
            (
                json!({ "command": "delete", "path": "/memories/private/main/plans.md" }),
                "PRIVATE_MEMORY_DENIED",
                Some(("get", "denied", "private:main:plans")),
            ),
            (
                json!({ "command": "create", "path": "/memories/private/main/new.md", "file_text": "x" }),
                "PRIVATE_MEMORY_DENIED",
                Some(("create", "denied", "private:main:new")),
            ),
        ];
        for (args, code, expected) in cases {
            let before = env.audit_lines().len();
            let error = server.fails("memory", args.clone()).await;
            assert_eq!(error["code"], code, "{args}: {error}");
            let records = records_since(&env, before, "worker");
            let expected: Vec<_> =
                expected.into_iter().map(|(op, outcome, id)| record(op, outcome, Some(code), id)).collect();
            assert_eq!(records, expected, "{args}");
            if code == "INVALID_MEMORY_ID" {
                assert_eq!(error["kind"], "InvalidMemoryIdError");
                assert_eq!(error["id"], expected[0].3.as_str());
                assert!(error["reason"].is_string(), "{error}");
            }
        }
        assert!(server.stop().await.success());
        assert_eq!(files(&env.root()), files_before, "nothing was written");
        assert_eq!(env.ok("main", &["memory", "get", "private:main:plans"])["content"], "secret");
    }

    /// The entry files under `root` (the audit log and lock files left out).
    fn files(root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "md") {
                    found.push(format!("{}={}", path.display(), std::fs::read_to_string(&path).unwrap()));
                }
            }
        }
        found.sort();
        found
    }

    #[tokio::test]
    async fn view_of_memories_shows_only_what_the_role_may_read() {
        let env = Env::new();
        for (id, content) in [
            ("shared:team:db", "PostgreSQL 16"),
            ("shared:team:ci:runners", "two runners"),
            ("shared:.hidden", "hidden"),
            ("project:alp:goals", "Ship the MCP server."),
            ("project:other:secret", "not for worker"),
            ("private:main:plans", "not for worker either"),
        ] {
            env.ok("main", &["memory", "create", id, "--content", content]);
        }
        env.ok("worker", &["memory", "create", "private:worker:drafts:mcp", "--content", "A draft."]);
        let server = start(&env, "worker").await;
        let listing = server.memory(json!({ "command": "view", "path": "/memories" })).await;
        insta::assert_snapshot!("view_memories_as_worker", listing);
        let paths = listing.split_once('\n').unwrap().1;
        assert!(
            !paths.contains("other") && !paths.contains("main") && !paths.contains("hidden"),
            "{listing}"
        );
        let shared = server.memory(json!({ "command": "view", "path": "/memories/shared/" })).await;
        assert_eq!(
            shared,
            "Here're the files and directories up to 2 levels deep in /memories/shared/, excluding hidden items:\n\
             24B\t/memories/shared\n24B\t/memories/shared/team/\n11B\t/memories/shared/team/ci/\n13B\t/memories/shared/team/db.md"
        );
        let missing =
            server.fails("memory", json!({ "command": "view", "path": "/memories/projects/other" })).await;
        assert_eq!(missing["code"], "MEMORY_NOT_GRANTED");
        let empty =
            server.fails("memory", json!({ "command": "view", "path": "/memories/shared/none" })).await;
        assert_eq!(empty["code"], "NOT_FOUND");
        assert_eq!(
            empty["message"],
            "The path /memories/shared/none does not exist. Please provide a valid path."
        );
        assert!(server.stop().await.success());
    }

    #[tokio::test]
    async fn str_replace_and_insert_answer_like_the_reference() {
        let env = Env::new();
        let server = start(&env, "worker").await;
        let path = "/memories/private/worker/list.md";
        server
            .memory(json!({ "command": "create", "path": path, "file_text": "alpha\nbeta\nalpha\n" }))
            .await;

        let before = env.audit_lines().len();
        let none = server
            .fails(
                "memory",
                json!({ "command": "str_replace", "path": path, "old_str": "gamma", "new_str": "x" }),
            )
            .await;
        assert_eq!(none["code"], "USAGE");
        assert_eq!(
            none["message"],
            format!("No replacement was performed, old_str `gamma` did not appear verbatim in {path}.")
        );
        let twice = server
            .fails(
                "memory",
                json!({ "command": "str_replace", "path": path, "old_str": "alpha", "new_str": "x" }),
            )
            .await;
        assert_eq!(
            twice["message"],
            "No replacement was performed. Multiple occurrences of old_str `alpha` in lines: 1, 3. Please ensure it is unique"
        );
        let ops: Vec<String> = records_since(&env, before, "worker").into_iter().map(|r| r.0).collect();
        assert_eq!(ops, ["get", "get"], "a refused replacement reads and writes nothing more");

        let edited = server
            .memory(json!({ "command": "str_replace", "path": path, "old_str": "beta", "new_str": "BETA" }))
            .await;
        assert_eq!(
            edited,
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\talpha\n     2\tBETA\n     3\talpha\n     4\t"
        );
        let inserted = server
            .memory(json!({ "command": "insert", "path": path, "insert_line": 1, "insert_text": "one\n" }))
            .await;
        assert_eq!(inserted, format!("The file {path} has been edited."));
        let entry = server.ok("memory_get", json!({ "id": "private:worker:list" })).await;
        assert_eq!(
            (entry["content"].as_str(), entry["version"].as_u64()),
            (Some("alpha\none\nBETA\nalpha\n"), Some(3))
        );
        let out = server
            .fails(
                "memory",
                json!({ "command": "insert", "path": path, "insert_line": 9, "insert_text": "x" }),
            )
            .await;
        assert_eq!(
            out["message"],
            "Invalid `insert_line` parameter: 9. It should be within the range [0, 4]."
        );
        let missing = server.fails("memory", json!({ "command": "str_replace", "path": "/memories/private/worker/none.md", "old_str": "a", "new_str": "b" })).await;
        assert_eq!(
            (missing["code"].as_str(), missing["id"].as_str()),
            (Some("NOT_FOUND"), Some("private:worker:none"))
        );
        assert_eq!(
            missing["message"],
            "The path /memories/private/worker/none.md does not exist. Please provide a valid path."
        );
        let exists =
            server.fails("memory", json!({ "command": "create", "path": path, "file_text": "x" })).await;
        assert_eq!(
            (exists["code"].as_str(), exists["message"].as_str()),
            (Some("ALREADY_EXISTS"), Some(format!("File {path} already exists").as_str()))
        );
        assert!(server.stop().await.success());
    }

    /// The reference memory-tool session as Claude plays it, replayed through the real server: a `view` of
    /// `/memories` first (which shows a project's notes from the top), a `.txt` path (refused in words a model
    /// understands), then create, str_replace, insert, view and rename. Every answer is text, snapshotted exactly.
    #[tokio::test]
    async fn the_reference_memory_tool_session_replays() {
        let env = Env::new();
        for (id, content) in [
            ("project:web:decisions:db", "PostgreSQL 16, schema v3."),
            ("project:web:log:2026-11", "Moved CI to two runners."),
            ("shared:team:glossary", "ALP: agent language protocol."),
        ] {
            env.ok("main", &["memory", "create", id, "--content", content]);
        }
        env.ok("main", &["memory", "create", "private:main:plans", "--content", "Mine."]);
        let server = start(&env, "main").await;
        let path = "/memories/projects/web/progress.md";
        let steps = [
            json!({ "command": "view", "path": "/memories" }),
            json!({ "command": "create", "path": "/memories/shared/notes.txt", "file_text": "x" }),
            json!({ "command": "create", "path": path, "file_text": "# Progress\n- [ ] schema\n- [ ] API\n" }),
            json!({ "command": "str_replace", "path": path, "old_str": "- [ ] schema", "new_str": "- [x] schema" }),
            json!({ "command": "insert", "path": path, "insert_line": 3, "insert_text": "- [ ] tests\n" }),
            json!({ "command": "view", "path": path }),
            json!({ "command": "rename", "old_path": path, "new_path": "/memories/projects/web/done/progress.md" }),
            json!({ "command": "view", "path": "/memories" }),
        ];
        let mut transcript = String::new();
        for step in steps {
            let result = server.call("memory", step.clone()).await;
            let text = &result.content[0].as_text().expect("text").text;
            let shown = if result.is_error == Some(true) {
                let error: Value = serde_json::from_str(text).unwrap();
                format!("error {}: {}", error["error"]["code"], error["error"]["message"].as_str().unwrap())
            } else {
                text.clone()
            };
            transcript.push_str(&format!("> {step}\n{shown}\n\n"));
        }
        insta::assert_snapshot!("reference_memory_tool_session", transcript);
        // The notes below a project are listed from the top, and a .txt path is never called a directory.
        assert!(transcript.contains("/memories/projects/web/decisions/db.md"), "{transcript}");
        assert!(
            transcript.contains(
                "error \"USAGE\": memory files end in .md: `/memories/shared/notes.txt` is not one"
            )
        );
        assert!(!transcript.contains("is a directory"), "{transcript}");
        assert!(server.stop().await.success());
    }

    #[tokio::test]
    async fn rename_and_delete_leave_exactly_one_entry_or_none() {
        let env = Env::new();
        let server = start(&env, "worker").await;
        let (old, new) = ("/memories/private/worker/a.md", "/memories/private/worker/notes/b.md");
        server.memory(json!({ "command": "create", "path": old, "file_text": "moving" })).await;
        server.memory(json!({ "command": "create", "path": "/memories/private/worker/taken.md", "file_text": "stays" })).await;
        let before = env.audit_lines().len();
        let text = server.memory(json!({ "command": "rename", "old_path": old, "new_path": new })).await;
        assert_eq!(text, format!("Successfully renamed {old} to {new}"));
        assert_eq!(
            records_since(&env, before, "worker"),
            [
                record("get", "allowed", None, "private:worker:a"),
                record("create", "allowed", None, "private:worker:notes:b"),
                record("delete", "allowed", None, "private:worker:a"),
            ]
        );
        let listed = server.ok("memory_search", json!({ "prefix": "private:worker" })).await;
        let ids: Vec<&str> =
            listed["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids.iter().filter(|id| id.ends_with(":a") || id.ends_with(":b")).count(), 1, "{ids:?}");
        let moved = server.ok("memory_get", json!({ "id": "private:worker:notes:b" })).await;
        assert_eq!((moved["content"].as_str(), moved["version"].as_u64()), (Some("moving"), Some(1)));
        assert_eq!(
            server.fails("memory_get", json!({ "id": "private:worker:a" })).await["code"],
            "NOT_FOUND"
        );

        let taken = server.fails("memory", json!({ "command": "rename", "old_path": new, "new_path": "/memories/private/worker/taken.md" })).await;
        assert_eq!(taken["code"], "ALREADY_EXISTS");
        assert_eq!(taken["message"], "The destination /memories/private/worker/taken.md already exists");
        assert_eq!(
            server.ok("memory_get", json!({ "id": "private:worker:taken" })).await["content"],
            "stays"
        );
        let gone = server
            .fails(
                "memory",
                json!({ "command": "rename", "old_path": old, "new_path": "/memories/private/worker/c.md" }),
            )
            .await;
        assert_eq!(
            (gone["code"].as_str(), gone["message"].as_str()),
            (Some("NOT_FOUND"), Some(format!("The path {old} does not exist").as_str()))
        );

        let deleted = server.memory(json!({ "command": "delete", "path": new })).await;
        assert_eq!(deleted, format!("Successfully deleted {new}"));
        assert_eq!(
            server.fails("memory_get", json!({ "id": "private:worker:notes:b" })).await["code"],
            "NOT_FOUND"
        );
        let root = server.fails("memory", json!({ "command": "delete", "path": "/memories" })).await;
        assert_eq!(root["message"], "Cannot delete the /memories directory itself");
        assert!(server.stop().await.success());
    }
}

mod adapters {
    use super::*;

    fn redact(env: &Env, text: &str) -> String {
        let root = env.root().canonicalize().unwrap();
        let dir = env.dir.path().canonicalize().unwrap();
        let alp = Path::new(ALP).canonicalize().unwrap();
        text.replace(alp.to_str().unwrap(), "<ALP>")
            .replace(root.to_str().unwrap(), "<ROOT>")
            .replace(dir.to_str().unwrap(), "<CWD>")
    }

    /// `alp ARGS…` with `ALP_AUDIT_KEY` naming a key file outside the root.
    fn run_with_key(env: &Env, args: &[&str]) -> std::process::Output {
        let key = env.dir.path().join("audit.key");
        std::fs::write(&key, "k".repeat(32)).unwrap();
        env.command()
            .env("ALP_AUDIT_KEY", &key)
            .arg("--root")
            .arg(env.root())
            .arg("--agents")
            .arg(env.agents())
            .args(args)
            .output()
            .unwrap()
    }

    #[test]
    fn adapter_mcp_json_and_toml() {
        let env = Env::new();
        let run = env.run(&["--json", "adapter", "mcp", "worker"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let document = run.json();
        let server = &document["mcpServers"]["alp-memory"];
        assert_eq!(server["type"], "stdio");
        assert_eq!(Path::new(server["command"].as_str().unwrap()), Path::new(ALP).canonicalize().unwrap());
        let args: Vec<&str> =
            server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert_eq!(args[args.len() - 3..], ["--as", "worker", "mcp"]);
        assert!(args.iter().filter(|a| a.starts_with('/')).all(|a| Path::new(a).is_absolute()));
        assert!(server.get("env").is_none(), "no key, no env");
        insta::assert_snapshot!(
            "adapter_mcp_json",
            redact(&env, &serde_json::to_string_pretty(&document).unwrap())
        );

        let toml = env.run(&["adapter", "mcp", "worker", "--format", "toml"], None);
        assert_eq!(toml.status, 0, "{toml:?}");
        insta::assert_snapshot!("adapter_mcp_toml", redact(&env, &toml.stdout));
        let wrapped = env.run(&["--json", "adapter", "mcp", "worker", "--format", "toml"], None).json();
        assert_eq!(wrapped["configToml"].as_str().unwrap().trim_end(), toml.stdout.trim_end());

        let keyed = run_with_key(&env, &["--json", "adapter", "mcp", "worker"]);
        assert!(keyed.status.success(), "{keyed:?}");
        let keyed: Value = serde_json::from_slice(&keyed.stdout).unwrap();
        let key = env.dir.path().join("audit.key").canonicalize().unwrap();
        assert_eq!(
            keyed["mcpServers"]["alp-memory"]["env"],
            json!({ "ALP_AUDIT_KEY": key.to_str().unwrap() })
        );
        let keyed_toml = run_with_key(&env, &["adapter", "mcp", "worker", "--format", "toml"]);
        let keyed_toml = String::from_utf8(keyed_toml.stdout).unwrap();
        assert!(
            keyed_toml.ends_with(&format!("env = {{ \"ALP_AUDIT_KEY\" = \"{}\" }}\n", key.display())),
            "{keyed_toml}"
        );

        let unknown = env.run(&["--json", "adapter", "mcp", "nobody"], None);
        assert_eq!((unknown.status, unknown.error()["code"].as_str()), (2, Some("INVALID_AGENT_DEFINITION")));
    }

    /// The server started from the printed configuration works: `command` and `args` exactly as printed.
    #[tokio::test]
    async fn the_printed_configuration_starts_a_working_server() {
        let env = Env::new();
        let document = env.run(&["--json", "adapter", "mcp", "worker"], None).json();
        let server = &document["mcpServers"]["alp-memory"];
        let args: Vec<&str> =
            server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        let printed = testkit::process::isolated(server["command"].as_str().unwrap(), &env.home());
        let mut child = tokio::process::Command::from(printed)
            .args(&args)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let client = client_config(ProtocolVersion::V_2025_11_25).serve((stdout, stdin)).await.unwrap();
        let mut params = CallToolRequestParams::new("memory_search");
        params.arguments = Some(serde_json::Map::new());
        let result = client.call_tool(params).await.unwrap();
        assert_eq!(result.is_error, Some(false), "{result:?}");
        drop(client);
        let status = tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap();
        assert!(status.success());
        assert_eq!(env.audit_lines()[0]["actor"], "worker");
    }

    #[test]
    fn adapter_claude_and_codex_via_mcp() {
        let env = Env::new();
        let run = env.run(&["--json", "adapter", "claude", "worker", "--via-mcp"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let settings = run.json();
        let root = env.root().canonicalize().unwrap();
        let agents = env.agents().canonicalize().unwrap();
        let cwd = env.dir.path().canonicalize().unwrap();
        assert_eq!(
            settings,
            json!({
                "permissions": { "deny": [
                    format!("Read(/{}/**)", root.display()),
                    format!("Edit(/{}/**)", root.display()),
                    format!("Edit(/{}/**)", agents.display()),
                    format!("Edit(/{}/.mcp.json)", cwd.display()),
                    format!("Edit(/{}/.claude/**)", cwd.display()),
                ] },
                "sandbox": { "filesystem": { "denyRead": [format!("/{}", root.display())] } }
            })
        );
        insta::assert_snapshot!(
            "adapter_claude_via_mcp",
            redact(&env, &serde_json::to_string_pretty(&settings).unwrap())
        );

        let codex = env.run(&["--json", "adapter", "codex", "worker", "--via-mcp"], None);
        assert_eq!(codex.status, 0, "{codex:?}");
        let setup = codex.json();
        assert_eq!(setup["sandboxMode"], "workspace-write");
        assert!(setup["prompt"].as_str().unwrap().contains("memory_search"));
        let toml = env.run(&["adapter", "mcp", "worker", "--format", "toml"], None).stdout;
        assert_eq!(setup["configToml"].as_str().unwrap(), toml);
        insta::assert_snapshot!(
            "adapter_codex_via_mcp",
            redact(&env, &serde_json::to_string_pretty(&setup).unwrap())
        );
        let human = env.run(&["adapter", "codex", "worker", "--via-mcp"], None);
        assert_eq!(human.stdout, setup["prompt"].as_str().unwrap(), "stdout holds the prompt alone");
        assert!(human.stderr.contains("codex mcp add alp-memory -- "), "{human:?}");

        let without = env.run(&["--json", "adapter", "codex", "worker"], None).json();
        assert!(without.get("configToml").is_none(), "only --via-mcp adds the server table");
    }
}

mod history {
    use super::*;

    /// The issue's reproduction through a real MCP client: create `a` and `c`, rename `a → b`, rename `c → a`, then
    /// a stale `memory_update a` expecting version 1 conflicts instead of replacing `c`'s content; history, get with
    /// a version and restore answer as `alp --json` does, audited as one `get` and one `update`.
    #[tokio::test]
    async fn renames_never_let_a_stale_writer_win_and_history_restores() {
        let env = Env::new();
        let server = start(&env, "main").await;
        let write = |path: &str, text: &str| json!({ "command": "create", "path": path, "file_text": text });
        server.memory(write("/memories/shared/a.md", "a's fact")).await;
        server.memory(write("/memories/shared/c.md", "c's fact")).await;
        let rename = |old: &str, new: &str| json!({ "command": "rename", "old_path": old, "new_path": new });
        server.memory(rename("/memories/shared/a.md", "/memories/shared/b.md")).await;
        server.memory(rename("/memories/shared/c.md", "/memories/shared/a.md")).await;
        let conflict = server
            .fails(
                "memory_update",
                json!({ "id": "shared:a", "expectedVersion": 1, "content": "lost update" }),
            )
            .await;
        assert_eq!(
            (&conflict["code"], &conflict["expected"], &conflict["actual"]),
            (&json!("VERSION_CONFLICT"), &json!(1), &json!(3))
        );
        assert_eq!(server.ok("memory_get", json!({ "id": "shared:a" })).await["content"], "c's fact");

        let skip = env.audit_lines().len();
        let history = server.ok("memory_history", json!({ "id": "shared:a" })).await;
        let versions = history["versions"].as_array().unwrap();
        let numbers: Vec<u64> = versions.iter().map(|v| v["version"].as_u64().unwrap()).collect();
        assert_eq!(numbers, [3, 2, 1]);
        assert_eq!(versions[1]["deleted"], true);
        assert_eq!(versions[2]["content"], "a's fact");
        let first = server.ok("memory_get", json!({ "id": "shared:a", "version": 1 })).await;
        assert_eq!(first, versions[2]);
        let tombstone = server.fails("memory_get", json!({ "id": "shared:a", "version": 2 })).await;
        assert_eq!((&tombstone["code"], &tombstone["reason"]), (&json!("NOT_FOUND"), &json!("tombstone")));
        let restored = server
            .ok("memory_restore", json!({ "id": "shared:a", "version": 1, "expectedVersion": 3 }))
            .await;
        assert_eq!((&restored["version"], &restored["content"]), (&json!(4), &json!("a's fact")));
        assert_eq!(
            records_since(&env, skip, "main"),
            [
                record("get", "allowed", None, "shared:a"),
                record("get", "allowed", None, "shared:a"),
                record("get", "allowed", None, "shared:a"),
                record("update", "allowed", None, "shared:a"),
            ]
        );
        // Bad arguments are USAGE results that reach no door.
        let skip = env.audit_lines().len();
        for (tool, args) in [
            ("memory_get", json!({ "id": "shared:a", "version": 0 })),
            ("memory_get", json!({ "id": "shared:a", "version": 9_007_199_254_740_992_u64 })),
            ("memory_restore", json!({ "id": "shared:a", "version": 1 })),
            ("memory_history", json!({ "id": "shared:a", "as": "worker" })),
        ] {
            assert_eq!(server.fails(tool, args.clone()).await["code"], "USAGE", "{tool} {args}");
        }
        assert_eq!(env.audit_lines().len(), skip);
        assert!(server.stop().await.success());
    }
}
