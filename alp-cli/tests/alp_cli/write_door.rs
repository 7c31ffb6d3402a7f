//! "Writes disclose nothing a read grant would not" (docs/CLI.md), through the real binary on every door: a role that
//! may write `project:alp:log:*` but not read it updates and restores an entry another role wrote, and gets back its
//! ID and version only, over the CLI (`--json` and text), stdio MCP (`alp mcp`) and HTTP (`alp serve`); a role that
//! may read gets the entry, as before.

use serde_json::{Value, json};

use crate::cli::{Env, Run};

const SECRET: &str = "SECRET main wrote this";
const ID: &str = "project:alp:log:one";

/// The example team, plus `logger`: may write the project's log, may read nothing there.
fn team() -> Env {
    let env = Env::new();
    std::fs::write(
        env.agents().join("logger.yaml"),
        "role: logger\nmemory:\n  read: []\n  write: [\"project:alp:log:*\"]\n",
    )
    .unwrap();
    env.ok("main", &["memory", "create", ID, "--content", SECRET]);
    env
}

fn as_logger(env: &Env, json: bool, args: &[&str]) -> Run {
    let mut all = if json { vec!["--json"] } else { vec![] };
    all.extend_from_slice(&["--as", "logger", "memory"]);
    all.extend_from_slice(args);
    let run = env.run(&all, None);
    assert_eq!(run.status, 0, "{run:?}");
    assert!(!run.stdout.contains("SECRET") && !run.stderr.contains("SECRET"), "{run:?}");
    run
}

fn receipt(version: u64) -> Value {
    json!({ "id": ID, "version": version })
}

mod cli {
    use super::*;

    #[test]
    fn a_prune_by_a_write_only_role_counts_what_it_may_not_read_and_names_nothing() {
        let env = team();
        env.ok("main", &["memory", "create", "project:alp:log:brief", "--content", SECRET, "--ttl", "1s"]);
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        let run = as_logger(&env, true, &["prune"]);
        assert_eq!(run.json(), json!({ "pruned": [], "withheld": 1 }));
        assert!(!run.stdout.contains("brief"), "{run:?}");
        // Deleted all the same, with its record.
        let gone = env.fails("main", &["memory", "get", "project:alp:log:brief"], 5);
        assert_eq!(gone["code"], "NOT_FOUND");
        let last = env.audit_lines().into_iter().rev().find(|r| r["operation"] == "delete").unwrap();
        assert_eq!(
            (last["actor"].as_str(), last["id"].as_str()),
            (Some("logger"), Some("project:alp:log:brief"))
        );
        // The same for people: a count, no ID.
        env.ok("main", &["memory", "create", "project:alp:log:brief2", "--content", SECRET, "--ttl", "1s"]);
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        let run = as_logger(&env, false, &["prune"]);
        assert!(run.stdout.contains("pruned 1 expired entries this role may not read"), "{run:?}");
        assert!(!run.stdout.contains("brief2"), "{run:?}");
        // A role that may read them gets the document as it always was.
        env.ok("main", &["memory", "create", "project:alp:log:brief3", "--content", "x", "--ttl", "1s"]);
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        assert_eq!(env.ok("main", &["memory", "prune"]), json!({ "pruned": ["project:alp:log:brief3"] }));
    }

    #[test]
    fn update_and_restore_by_a_write_only_role_answer_id_and_version_only() {
        let env = team();
        let run = as_logger(&env, true, &["update", ID, "--expected-version", "1", "--importance", "high"]);
        assert_eq!(run.json(), receipt(2));
        assert_eq!(run.stdout.trim_end(), r#"{"id":"project:alp:log:one","version":2}"#);
        let run = as_logger(&env, true, &["restore", ID, "--version", "1", "--expected-version", "2"]);
        assert_eq!(run.json(), receipt(3));

        // Without --json: a line naming the ID and the version, nothing of the entry.
        let run = as_logger(&env, false, &["update", ID, "--expected-version", "3", "--importance", "low"]);
        assert!(run.stdout.contains("`project:alp:log:one`") && run.stdout.contains("version 4"), "{run:?}");
        assert!(!run.stdout.contains("importance"), "{run:?}");
        let run = as_logger(&env, false, &["restore", ID, "--version", "1", "--expected-version", "4"]);
        assert!(run.stdout.contains("version 5"), "{run:?}");

        // A role that may read the ID gets the whole entry, as before.
        let entry = env.ok("main", &["memory", "update", ID, "--expected-version", "5", "--kind", "log"]);
        assert_eq!((entry["content"].as_str(), entry["version"].as_u64()), (Some(SECRET), Some(6)));
        assert_eq!(entry["importance"], "medium", "the restore brought version 1's fields back");
        let entry = env.ok("main", &["memory", "restore", ID, "--version", "1", "--expected-version", "6"]);
        assert_eq!((entry["content"].as_str(), entry["version"].as_u64()), (Some(SECRET), Some(7)));
    }

    #[test]
    fn errors_of_a_write_only_role_hold_nothing_it_may_not_read() {
        let env = team();
        env.ok(
            "main",
            &[
                "memory",
                "create",
                "project:alp:log:keyed",
                "--content",
                SECRET,
                "--type",
                "task",
                "--key",
                "k",
            ],
        );
        let mut all = vec!["--json", "--as", "logger", "memory"];
        // A duplicate key on update: the holder is not named.
        all.extend_from_slice(&["update", ID, "--expected-version", "1", "--type", "task", "--key", "k"]);
        let run = env.run(&all, None);
        assert_eq!(run.error()["code"], "ALREADY_EXISTS", "{run:?}");
        assert!(!run.stderr.contains("keyed") && !run.stderr.contains("SECRET"), "{run:?}");
        assert!(run.error().get("existing").is_none(), "{run:?}");
    }
}

mod mcp {
    use super::*;

    #[tokio::test]
    async fn memory_update_and_restore_over_stdio_answer_id_and_version_only() {
        let env = team();
        let server = crate::mcp::start(&env, "logger").await;
        for (tool, args, version) in [
            ("memory_update", json!({ "id": ID, "expectedVersion": 1, "importance": "high" }), 2),
            ("memory_restore", json!({ "id": ID, "version": 1, "expectedVersion": 2 }), 3),
        ] {
            let result = server.call(tool, args).await;
            assert_eq!(result.is_error, Some(false), "{result:?}");
            assert_eq!(result.structured_content, Some(receipt(version)), "{tool}");
            let text = &result.content[0].as_text().unwrap().text;
            assert_eq!(serde_json::from_str::<Value>(text).unwrap(), receipt(version));
            assert!(!format!("{result:?}").contains("SECRET"), "{result:?}");
        }
        // The memory tool: a create over the unreadable file says only that it exists, and the commands that show
        // content are refused.
        for args in [
            json!({ "command": "create", "path": "/memories/projects/alp/log/one.md", "file_text": "x" }),
            json!({ "command": "str_replace", "path": "/memories/projects/alp/log/one.md", "old_str": "SECRET", "new_str": "x" }),
            json!({ "command": "insert", "path": "/memories/projects/alp/log/one.md", "insert_line": 0, "insert_text": "x" }),
            json!({ "command": "rename", "old_path": "/memories/projects/alp/log/one.md", "new_path": "/memories/projects/alp/log/two.md" }),
            json!({ "command": "view", "path": "/memories/projects/alp/log/one.md" }),
        ] {
            let result = server.call("memory", args.clone()).await;
            assert_eq!(result.is_error, Some(true), "{args}: {result:?}");
            assert!(
                !format!("{result:?}").replace("old_str", "").contains("SECRET main"),
                "{args}: {result:?}"
            );
        }
        // main reads: the entry.
        server.stop().await;
        let server = crate::mcp::start(&env, "main").await;
        let entry =
            server.ok("memory_update", json!({ "id": ID, "expectedVersion": 3, "kind": "log" })).await;
        assert_eq!(entry["content"], SECRET);
        server.stop().await;
    }
}

mod http {
    use super::*;
    use crate::serve::{Serve, call, token};

    #[tokio::test]
    async fn memory_update_and_restore_over_http_answer_id_and_version_only() {
        let env = team();
        let (_, secret) = token(&env, "logger", &[]);
        let server = Serve::start(&env);
        let client = server.client(&secret, &[]).await;
        for (tool, args, version) in [
            ("memory_update", json!({ "id": ID, "expectedVersion": 1, "importance": "high" }), 2),
            ("memory_restore", json!({ "id": ID, "version": 1, "expectedVersion": 2 }), 3),
        ] {
            let result = call(&client, tool, args).await;
            assert_eq!(result.is_error, Some(false), "{result:?}");
            assert_eq!(result.structured_content, Some(receipt(version)), "{tool}");
            assert!(!format!("{result:?}").contains("SECRET"), "{result:?}");
        }
        let _ = client.cancel().await;
        let (_, secret) = token(&env, "main", &[]);
        let client = server.client(&secret, &[]).await;
        let result = call(&client, "memory_update", json!({ "id": ID, "expectedVersion": 3 })).await;
        assert_eq!(result.structured_content.unwrap()["content"], SECRET);
        let _ = client.cancel().await;
    }
}
