//! `alp` on PostgreSQL (DESIGN §9, §12): `--store` and `ALP_MEMORY_STORE`, `init --store`, the same commands and
//! documents as on a root, the audit commands on the database's log, `store copy` both ways, and the errors for a
//! database that is not there. Each test gets its own database on the cluster `cargo xtask test` starts; without one
//! the test is skipped with a notice (and fails with `ALP_REQUIRE_POSTGRES=1`).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::cli::{Env, Run};

/// Runs `alp ARGS…` with the example team's agents, no root or store variables, HOME inside `env`.
fn alp(env: &Env, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_alp"));
    command
        .env_remove("ALP_MEMORY_ROOT")
        .env_remove("ALP_MEMORY_STORE")
        .env_remove("ALP_AUDIT_KEY")
        .env("HOME", env.dir.path().join("home"))
        .current_dir(env.dir.path())
        .stdin(Stdio::null());
    for (name, value) in vars {
        command.env(name, value);
    }
    command.arg("--agents").arg(env.agents()).args(args);
    let output = command.output().unwrap();
    Run {
        status: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// `alp --store URL --json ARGS…`, expecting success.
fn ok(env: &Env, url: &str, args: &[&str]) -> Value {
    let mut all = vec!["--store", url, "--json"];
    all.extend_from_slice(args);
    let run = alp(env, &[], &all);
    assert_eq!(run.status, 0, "{args:?}: {run:?}");
    run.json()
}

fn init(env: &Env, url: &str) {
    let run = alp(env, &[], &["--store", url, "--json", "init"]);
    assert_eq!(run.status, 0, "{run:?}");
}

#[test]
fn init_then_every_door_and_the_audit_commands_on_the_database() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let run = alp(&env, &[], &["--store", db.url(), "--json", "init"]);
    assert_eq!(run.status, 0, "{run:?}");
    let document = run.json();
    assert_eq!(document["store"], db.url());
    let created: Vec<&str> =
        document["created"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for table in ["alp_schema", "alp_settings", "alp_memories", "alp_audit"] {
        assert!(created.iter().any(|c| c.contains(table)), "{table} in {created:?}");
    }
    // A second init is refused like a non-empty root.
    let again = alp(&env, &[], &["--store", db.url(), "--json", "init"]);
    assert_eq!((again.status, again.error()["code"].clone()), (2, json!("USAGE")));

    let created = ok(
        &env,
        db.url(),
        &[
            "--as",
            "main",
            "memory",
            "create",
            "shared:team:db",
            "--type",
            "decision",
            "--key",
            "db",
            "--content",
            "PostgreSQL 16, schema v3",
        ],
    );
    assert_eq!((created["id"].as_str(), created["version"].as_u64()), (Some("shared:team:db"), Some(1)));
    let got = ok(&env, db.url(), &["--as", "worker", "memory", "get", "shared:team:db"]);
    assert_eq!(got, created, "the same document as the create returned");
    let updated = ok(
        &env,
        db.url(),
        &[
            "--as",
            "main",
            "memory",
            "update",
            "shared:team:db",
            "--expected-version",
            "1",
            "--content",
            "PostgreSQL 17",
        ],
    );
    assert_eq!(updated["version"], 2);
    let stale = alp(
        &env,
        &[],
        &[
            "--store",
            db.url(),
            "--json",
            "--as",
            "main",
            "memory",
            "update",
            "shared:team:db",
            "--expected-version",
            "1",
            "--content",
            "lost",
        ],
    );
    assert_eq!(stale.status, 6, "{stale:?}");
    assert_eq!((stale.error()["expected"].as_u64(), stale.error()["actual"].as_u64()), (Some(1), Some(2)));
    let found = ok(&env, db.url(), &["--as", "worker", "memory", "search", "postgresql"]);
    assert_eq!(found["entries"][0]["id"], "shared:team:db");
    assert_eq!(found["entries"][0]["score"], 1);
    let listed = ok(&env, db.url(), &["--as", "worker", "memory", "list"]);
    assert_eq!(listed["entries"].as_array().unwrap().len(), 1);
    let denied =
        alp(&env, &[], &["--store", db.url(), "--json", "--as", "main", "memory", "get", "private:worker:x"]);
    assert_eq!((denied.status, denied.error()["code"].clone()), (4, json!("PRIVATE_MEMORY_DENIED")));
    ok(&env, db.url(), &["--as", "main", "memory", "delete", "shared:team:db", "--expected-version", "2"]);

    // The audit log is the database's: eight calls, eight records, a chain that verifies.
    let verified = ok(&env, db.url(), &["audit", "verify"]);
    assert_eq!((verified["ok"].as_bool(), verified["records"].as_u64()), (Some(true), Some(8)));
    let head = ok(&env, db.url(), &["audit", "head"]);
    assert_eq!(head["seq"], 8);
    let expect = format!("8:{}", head["hash"].as_str().unwrap());
    assert_eq!(ok(&env, db.url(), &["audit", "verify", "--expect", &expect])["ok"], true);
    let shown = alp(&env, &[], &["--store", db.url(), "audit", "show", "--since", "7"]);
    let records: Vec<Value> = shown.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 2, "{shown:?}");
    assert_eq!(
        (records[0]["actor"].as_str(), records[0]["outcome"].as_str(), records[0]["code"].as_str()),
        (Some("main"), Some("denied"), Some("PRIVATE_MEMORY_DENIED"))
    );
    assert_eq!(
        (records[1]["operation"].as_str(), records[1]["outcome"].as_str()),
        (Some("delete"), Some("allowed"))
    );
}

#[test]
fn the_store_comes_from_the_variable_and_a_flag_beats_it() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    init(&env, db.url());
    let vars = [("ALP_MEMORY_STORE", db.url())];
    let run =
        alp(&env, &vars, &["--json", "--as", "main", "memory", "create", "shared:via-var", "--content", "x"]);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(ok(&env, db.url(), &["--as", "main", "memory", "get", "shared:via-var"])["content"], "x");
    // --root beats ALP_MEMORY_STORE: the entry goes to the root.
    let root = env.root();
    let run = alp(
        &env,
        &vars,
        &[
            "--root",
            root.to_str().unwrap(),
            "--json",
            "--as",
            "main",
            "memory",
            "create",
            "shared:in-root",
            "--content",
            "y",
        ],
    );
    assert_eq!(run.status, 0, "{run:?}");
    assert!(root.join("shared/in-root.md").is_file());
    let missing =
        alp(&env, &[], &["--store", db.url(), "--json", "--as", "main", "memory", "get", "shared:in-root"]);
    assert_eq!(missing.status, 5, "{missing:?}");
}

#[test]
fn places_that_conflict_or_are_not_postgresql_are_usage_errors() {
    let env = Env::new();
    let root = env.root();
    let root = root.to_str().unwrap();
    for (vars, args) in [
        (
            vec![],
            vec![
                "--root",
                root,
                "--store",
                "postgresql://localhost/x",
                "--json",
                "--as",
                "main",
                "memory",
                "list",
            ],
        ),
        (
            vec![("ALP_MEMORY_ROOT", root), ("ALP_MEMORY_STORE", "postgresql://localhost/x")],
            vec!["--json", "--as", "main", "memory", "list"],
        ),
        (vec![], vec!["--store", "mysql://localhost/x", "--json", "--as", "main", "memory", "list"]),
        (vec![], vec!["--store", "/tmp/somewhere", "--json", "--as", "main", "memory", "list"]),
        (vec![], vec!["--json", "--as", "main", "memory", "list", "--store", "postgresql://localhost/x"]),
    ] {
        let run = alp(&env, &vars, &args);
        assert_eq!(run.status, 2, "{args:?}: {run:?}");
        assert_eq!(run.error()["code"], "USAGE", "{args:?}");
    }
}

#[test]
fn an_unreachable_database_is_audit_unavailable_and_never_shows_the_password() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let socket = testkit::pg::percent_encode(dir.path().as_os_str());
    let url = format!("postgresql://alp:s3cret-pw@{socket}/nothing?connect_timeout=2");
    for args in [&["--as", "main", "memory", "get", "shared:x"][..], &["audit", "verify"], &["init"]] {
        let mut all = vec!["--store", url.as_str(), "--json"];
        all.extend_from_slice(args);
        let run = alp(&env, &[], &all);
        assert_eq!(run.status, 9, "{args:?}: {run:?}");
        assert_eq!(run.error()["code"], "AUDIT_UNAVAILABLE");
        assert!(!run.stderr.contains("s3cret-pw") && !run.stdout.contains("s3cret-pw"), "{run:?}");
    }
    let human = alp(&env, &[], &["--store", url.as_str(), "--as", "main", "memory", "get", "shared:x"]);
    assert!(!human.stderr.contains("s3cret-pw"), "{human:?}");
}

#[test]
fn a_database_without_the_schema_names_alp_init() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let run = alp(&env, &[], &["--store", db.url(), "--json", "--as", "main", "memory", "get", "shared:x"]);
    assert_eq!(run.status, 9, "{run:?}");
    let error = run.error();
    assert_eq!(error["code"], "AUDIT_UNAVAILABLE");
    assert!(error["message"].as_str().unwrap().contains("alp init --store"), "{error}");
}

/// Markdown → PostgreSQL → Markdown keeps every §4 field, the content, versions and timestamps of every entry, and
/// the audit log, which verifies at each step.
#[test]
fn store_copy_round_trips_markdown_through_postgresql() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let root = env.root();
    let root_arg = root.to_str().unwrap();
    let on_root = |args: &[&str]| {
        let mut all = vec!["--root", root_arg, "--json"];
        all.extend_from_slice(args);
        let run = alp(&env, &[], &all);
        assert_eq!(run.status, 0, "{args:?}: {run:?}");
        run
    };
    on_root(&["--as", "main", "memory", "create", "shared:a", "--content", "plain"]);
    on_root(&[
        "--as",
        "main",
        "memory",
        "create",
        "project:alp:api",
        "--kind",
        "decision",
        "--type",
        "architecture",
        "--key",
        "api",
        "--importance",
        "critical",
        "--source",
        "agent-architect",
        "--scope",
        "feat-api",
        "--ttl",
        "90d",
        "--content",
        "REST, then gRPC.\nTwo lines; 'quotes' % _ \\ Cơ sở dữ liệu",
    ]);
    on_root(&[
        "--as",
        "main",
        "memory",
        "update",
        "project:alp:api",
        "--expected-version",
        "1",
        "--importance",
        "high",
    ]);
    on_root(&[
        "--as",
        "worker",
        "memory",
        "create",
        "private:worker:drafts:x",
        "--kind",
        "draft",
        "--content",
        "mine",
    ]);
    let before = on_root(&["--as", "main", "memory", "list"]).json();
    let worker_before = on_root(&["--as", "worker", "memory", "get", "private:worker:drafts:x"]).json();
    let records_before = std::fs::read_to_string(root.join("audit.jsonl")).unwrap();

    // Markdown → PostgreSQL (the schema is created on the way).
    let copied = on_root(&["store", "copy", "--to", db.url()]).json();
    assert_eq!(copied, json!({ "copied": 3 }));
    assert_eq!(ok(&env, db.url(), &["--as", "main", "memory", "list"]), before);
    assert_eq!(
        ok(&env, db.url(), &["--as", "worker", "memory", "get", "private:worker:drafts:x"]),
        worker_before
    );
    let shown = alp(&env, &[], &["--store", db.url(), "audit", "show"]);
    let records_in_db: String =
        shown.stdout.lines().take(records_before.lines().count()).map(|l| format!("{l}\n")).collect();
    assert_eq!(records_in_db, records_before, "the log is copied byte for byte");

    // Into a non-empty target: refused, nothing written.
    let again = alp(&env, &[], &["--root", root_arg, "--json", "store", "copy", "--to", db.url()]);
    assert_eq!((again.status, again.error()["code"].clone()), (2, json!("USAGE")));
    let into_root = alp(&env, &[], &["--store", db.url(), "--json", "store", "copy", "--to", root_arg]);
    assert_eq!((into_root.status, into_root.error()["code"].clone()), (2, json!("USAGE")));

    // PostgreSQL → a new Markdown root.
    let back = env.dir.path().join("back");
    let back_arg = back.to_str().unwrap();
    let run = alp(&env, &[], &["--store", db.url(), "--json", "store", "copy", "--to", back_arg]);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.json(), json!({ "copied": 3 }));
    let on_back = |role: &str, args: &[&str]| {
        let mut all = vec!["--root", back_arg, "--json", "--as", role];
        all.extend_from_slice(args);
        let run = alp(&env, &[], &all);
        assert_eq!(run.status, 0, "{args:?}: {run:?}");
        run.json()
    };
    assert_eq!(on_back("main", &["memory", "list"]), before);
    assert_eq!(on_back("worker", &["memory", "get", "private:worker:drafts:x"]), worker_before);
    let verified = alp(&env, &[], &["--root", back_arg, "--json", "audit", "verify"]);
    assert_eq!(verified.json()["ok"], true, "{verified:?}");
    assert!(Path::new(back_arg).join("config.yaml").is_file());
}

/// The MCP configuration for a database names it by its URL without the password; the fences for the agent's own
/// tools cover the agents directory and the runtime's configuration in the workspace only (no memory on this
/// machine's file system), and without --via-mcp there is no root to fence.
#[test]
fn adapters_over_a_database() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    init(&env, db.url());
    let at = db.url().find('@').expect("the test URL names a user");
    let with_password = format!("{}:pw-s3cret{}", &db.url()[..at], &db.url()[at..]);
    let server = alp(&env, &[], &["--store", &with_password, "--json", "adapter", "mcp", "worker"]);
    assert_eq!(server.status, 0, "{server:?}");
    assert!(!server.stdout.contains("pw-s3cret") && !server.stderr.contains("pw-s3cret"), "{server:?}");
    let args = server.json()["mcpServers"]["alp-memory"]["args"].clone();
    let agents = env.agents().canonicalize().unwrap();
    assert_eq!(
        args,
        json!(["--store", db.url(), "--agents", agents.to_str().unwrap(), "--as", "worker", "mcp"])
    );
    let claude = alp(&env, &[], &["--store", &with_password, "adapter", "claude", "worker", "--via-mcp"]);
    assert_eq!(claude.status, 0, "{claude:?}");
    assert!(!claude.stdout.contains("pw-s3cret") && !claude.stderr.contains("pw-s3cret"), "{claude:?}");
    assert!(claude.stderr.contains("claude mcp add --scope user alp-memory -- "), "{claude:?}");
    let cwd = env.dir.path().canonicalize().unwrap();
    assert_eq!(
        claude.json()["permissions"]["deny"],
        json!([
            format!("Edit(/{}/**)", agents.display()),
            format!("Edit(/{}/.mcp.json)", cwd.display()),
            format!("Edit(/{}/.claude/**)", cwd.display()),
        ])
    );
    let codex = ok(&env, db.url(), &["adapter", "codex", "worker", "--via-mcp"]);
    assert!(codex["prompt"].as_str().unwrap().contains("Never run the `alp` command"), "{codex}");
    assert!(codex["configToml"].as_str().unwrap().contains("--store"), "{codex}");
    for runtime in ["claude", "codex"] {
        let run = alp(&env, &[], &["--store", db.url(), "--json", "adapter", runtime, "worker"]);
        assert_eq!(run.status, 2, "{run:?}");
        assert!(run.error()["message"].as_str().unwrap().contains("--via-mcp"), "{run:?}");
    }
}
