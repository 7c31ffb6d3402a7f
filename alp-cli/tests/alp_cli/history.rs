//! History through the real `alp` binary: `memory history`, `memory get --version`, `memory restore` and the
//! operator's `memory redact`, their JSON, errors, exit statuses and audit records.

use serde_json::{Value, json};

use crate::cli::Env;

fn keys(value: &Value) -> Vec<&str> {
    value.as_object().unwrap().keys().map(String::as_str).collect()
}

/// `(actor, operation, outcome, code, id)` of the audit records after the first `skip`.
fn records_since(env: &Env, skip: usize) -> Vec<(String, String, String, Option<String>, String)> {
    env.audit_lines()
        .into_iter()
        .skip(skip)
        .map(|r| {
            (
                r["actor"].as_str().unwrap().to_owned(),
                r["operation"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
                r["code"].as_str().map(str::to_owned),
                r["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn rec(
    actor: &str,
    op: &str,
    outcome: &str,
    code: Option<&str>,
    id: &str,
) -> (String, String, String, Option<String>, String) {
    (actor.to_owned(), op.to_owned(), outcome.to_owned(), code.map(str::to_owned), id.to_owned())
}

#[test]
fn history_get_version_and_restore_json_errors_and_records() {
    let env = Env::new();
    let id = "shared:team:db";
    env.ok("main", &["memory", "create", id, "--content", "PostgreSQL 15", "--importance", "high"]);
    env.ok("main", &["memory", "update", id, "--expected-version", "1", "--content", "PostgreSQL 16"]);
    env.ok("main", &["memory", "delete", id, "--expected-version", "2"]);

    let skip = env.audit_lines().len();
    let history = env.ok("worker", &["memory", "history", id]);
    assert_eq!(keys(&history), ["id", "versions"]);
    assert_eq!(history["id"], id);
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.iter().map(|v| v["version"].as_u64().unwrap()).collect::<Vec<_>>(), [3, 2, 1]);
    assert_eq!(keys(&versions[0]), ["id", "version", "updatedAt", "deleted"]);
    assert_eq!((&versions[0]["id"], &versions[0]["deleted"]), (&json!(id), &json!(true)));
    assert_eq!(
        keys(&versions[1]),
        ["id", "kind", "version", "createdAt", "updatedAt", "content", "importance"]
    );
    assert_eq!(
        (&versions[1]["content"], &versions[2]["content"]),
        (&json!("PostgreSQL 16"), &json!("PostgreSQL 15"))
    );
    let newest = env.ok("worker", &["memory", "history", id, "--limit", "1"]);
    assert_eq!(newest["versions"].as_array().unwrap().len(), 1);
    // History is a get: one record per call, with the read grant.
    assert_eq!(
        records_since(&env, skip),
        [rec("worker", "get", "allowed", None, id), rec("worker", "get", "allowed", None, id)]
    );
    let denied = env.fails("reviewer", &["memory", "history", id], 4);
    assert_eq!(denied["code"], "MEMORY_NOT_GRANTED");

    // One version, as get prints an entry.
    let first = env.ok("worker", &["memory", "get", id, "--version", "1"]);
    assert_eq!(first, versions[2]);
    for (version, reason) in [("3", "tombstone"), ("9", "never_written")] {
        let error = env.fails("worker", &["memory", "get", id, "--version", version], 5);
        assert_eq!(
            (&error["kind"], &error["code"]),
            (&json!("MemoryEntryNotFoundError"), &json!("NOT_FOUND"))
        );
        assert_eq!(
            (&error["version"], &error["reason"]),
            (&json!(version.parse::<u64>().unwrap()), &json!(reason))
        );
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(id) && message.contains(version), "{message}");
    }
    let skip = env.audit_lines().len();
    for bad in ["0", "9007199254740992", "-1", "two"] {
        let error = env.fails("worker", &["memory", "get", id, "--version", bad], 2);
        assert_eq!(error["code"], "USAGE", "{bad}");
    }
    assert_eq!(env.audit_lines().len(), skip, "a malformed command line writes no record");
    // The entry is deleted: get without a version finds nothing, a stale update finds nothing.
    env.fails("main", &["memory", "get", id], 5);
    env.fails("main", &["memory", "update", id, "--expected-version", "2", "--content", "stale"], 5);

    // Restore: expectedVersion first (the tombstone's on a deleted ID), then the version.
    let conflict =
        env.fails("main", &["memory", "restore", id, "--version", "1", "--expected-version", "2"], 6);
    assert_eq!((&conflict["expected"], &conflict["actual"]), (&json!(2), &json!(3)));
    let skip = env.audit_lines().len();
    let restored = env.ok("main", &["memory", "restore", id, "--version", "1", "--expected-version", "3"]);
    assert_eq!((&restored["version"], &restored["content"]), (&json!(4), &json!("PostgreSQL 15")));
    assert_eq!(restored["importance"], "high");
    assert_eq!(
        restored["createdAt"], versions[2]["createdAt"],
        "undeleting keeps the restored version's createdAt"
    );
    assert_eq!(records_since(&env, skip), [rec("main", "update", "allowed", None, id)]);
    assert_eq!(env.ok("main", &["memory", "get", id]), restored);
    let tombstone =
        env.fails("main", &["memory", "restore", id, "--version", "3", "--expected-version", "4"], 5);
    assert_eq!(tombstone["reason"], "tombstone");
    // A stale writer of any earlier version conflicts with the new one.
    let stale = env.fails("main", &["memory", "update", id, "--expected-version", "1", "--content", "x"], 6);
    assert_eq!(stale["actual"], 4);
    // Restore is an update: the worker may not write shared memory.
    assert_eq!(
        env.fails("worker", &["memory", "restore", id, "--version", "2", "--expected-version", "4"], 4)["code"],
        "MEMORY_NOT_GRANTED"
    );
}

#[test]
fn redact_is_an_operator_command_that_erases_one_version_everywhere() {
    let env = Env::new();
    let id = "private:main:oops";
    env.ok("main", &["memory", "create", id, "--content", "the key is sk-live-4242", "--kind", "fact"]);
    env.ok(
        "main",
        &["memory", "update", id, "--expected-version", "1", "--content", "rotated; nothing here"],
    );

    // --as is refused before anything is opened or recorded.
    let skip = env.audit_lines().len();
    let run = env.run(&["--json", "--as", "main", "memory", "redact", id, "--version", "1"], None);
    assert_eq!((run.status, run.error()["code"].as_str()), (2, Some("USAGE")), "{run:?}");
    assert_eq!(env.audit_lines().len(), skip);

    let run = env.run(&["--json", "memory", "redact", id, "--version", "1"], None);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.stdout.trim_end(), r#"{"id":"private:main:oops","version":1,"redacted":true}"#);
    assert_eq!(records_since(&env, skip), [rec("", "redact", "allowed", None, id)]);
    // Gone from every file of the root.
    let mut stack = vec![env.root()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("sk-live"),
                    "{} holds the secret",
                    path.display()
                );
            }
        }
    }
    let redacted = env.ok("main", &["memory", "get", id, "--version", "1"]);
    assert_eq!(
        (&redacted["content"], &redacted["redacted"], &redacted["kind"]),
        (&json!(""), &json!(true), &json!("fact"))
    );
    let history = env.ok("main", &["memory", "history", id]);
    assert_eq!(history["versions"][1]["redacted"], true);
    assert!(history["versions"][0].get("redacted").is_none());
    // Again is fine; the current version is refused after its record; a redacted version cannot be restored.
    assert_eq!(env.run(&["--json", "memory", "redact", id, "--version", "1"], None).status, 0);
    let skip = env.audit_lines().len();
    let run = env.run(&["--json", "memory", "redact", id, "--version", "2"], None);
    assert_eq!((run.status, run.error()["code"].as_str()), (2, Some("USAGE")), "{run:?}");
    assert!(run.error()["message"].as_str().unwrap().contains("current version"), "{run:?}");
    assert_eq!(records_since(&env, skip), [rec("", "redact", "allowed", None, id)]);
    let invalid =
        env.fails("main", &["memory", "restore", id, "--version", "1", "--expected-version", "2"], 8);
    assert_eq!(invalid["code"], "INVALID_ENTRY");
    // An invalid ID is an error record, under the operator's empty actor.
    let skip = env.audit_lines().len();
    let run = env.run(&["--json", "memory", "redact", "shared:..", "--version", "1"], None);
    assert_eq!(run.status, 3, "{run:?}");
    assert_eq!(
        records_since(&env, skip),
        [rec("", "redact", "error", Some("INVALID_MEMORY_ID"), "shared:..")]
    );
    let verify = env.run(&["--json", "audit", "verify"], None);
    assert_eq!(verify.json()["ok"], true, "{verify:?}");
}
