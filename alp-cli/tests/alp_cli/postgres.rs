//! `alp` on PostgreSQL (`docs/CLI.md`, `docs/POSTGRESQL.md`): `--store` and `ALP_MEMORY_STORE`, `init --store`, the
//! same commands and documents as on a root, the audit commands on the database's log, `store copy` both ways, and the
//! errors for a database that is not there. Each test gets its own database on the cluster `cargo xtask test` starts;
//! without one the test is skipped with a notice (and fails with `ALP_REQUIRE_POSTGRES=1`).

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::cli::{Env, Run};

/// Runs `alp ARGS…` with the example team's agents, no root or store variables, HOME inside `env`.
pub(crate) fn alp(env: &Env, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = env.command();
    command.stdin(Stdio::null());
    for (name, value) in vars {
        command.env(name, value);
    }
    command.arg("--agents").arg(env.agents()).args(args);
    Run::of(command.output().unwrap())
}

/// `alp --store URL --json ARGS…`, expecting success.
pub(crate) fn ok(env: &Env, url: &str, args: &[&str]) -> Value {
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
    // Three entries, their current versions kept in the history too and the one the update replaced, no token,
    // and the whole log.
    let records = records_before.lines().count();
    assert_eq!(copied, json!({ "copied": 3, "versions": 4, "tokens": 0, "records": records }));
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
    let in_db = alp(&env, &[], &["--store", db.url(), "audit", "show"]).stdout.lines().count();
    let run = alp(&env, &[], &["--store", db.url(), "--json", "store", "copy", "--to", back_arg]);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.json(), json!({ "copied": 3, "versions": 4, "tokens": 0, "records": in_db }));
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

/// Client-side bounds and a clean end, through the real `alp` on the real cluster: a peer that accepts and never
/// answers, a backend stopped under a running MCP server, and the server's end of input on a database (status 0,
/// no panic, within a second with a call in flight).
mod bounds {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use rmcp::ServiceExt;
    use rmcp::model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    };
    use testkit::pg::{Stopped, TestDb, backend_pids, with_param};

    use super::*;

    /// statementTimeout 2 s + connectTimeout 1 s, and the slack a loaded test machine needs.
    const BOUND: Duration = Duration::from_secs(3);
    const SLACK: Duration = Duration::from_millis(1500);

    /// A port on 127.0.0.1 that accepts every connection and never says anything.
    fn silent_peer() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                held.push(stream);
            }
        });
        port
    }

    #[test]
    fn a_peer_that_accepts_and_never_answers_is_audit_unavailable_within_the_connect_timeout() {
        let env = Env::new();
        let url = format!("postgresql://alp@127.0.0.1:{}/alp?connect_timeout=1", silent_peer());
        for args in [
            &["--as", "main", "memory", "get", "shared:x"][..],
            &["--as", "worker", "mcp"],
            &["audit", "verify"],
        ] {
            let mut all = vec!["--store", url.as_str(), "--json"];
            all.extend_from_slice(args);
            let started = Instant::now();
            let run = alp(&env, &[], &all);
            let took = started.elapsed();
            assert_eq!(
                (run.status, run.error()["code"].clone()),
                (9, json!("AUDIT_UNAVAILABLE")),
                "{args:?}: {run:?}"
            );
            assert!(took < Duration::from_secs(1) + SLACK, "{args:?} took {took:?}");
            assert!(run.error()["message"].as_str().unwrap().contains("no answer within 1 s"), "{run:?}");
        }
    }

    /// A database with the schema and statementTimeout 2 s, connectTimeout 1 s, lockTimeout 1 s.
    fn bounded_database(env: &Env) -> Option<TestDb> {
        let db = testkit::pg::test_database()?;
        init(env, db.url());
        db.connect()
            .unwrap()
            .batch_execute("UPDATE alp_settings SET statement_timeout = '2s', connect_timeout = '1s', lock_timeout = '1s'")
            .unwrap();
        Some(db)
    }

    /// `alp --store URL --agents A --as ROLE mcp` with piped stdio.
    fn mcp_command(env: &Env, url: &str, role: &str) -> tokio::process::Command {
        let mut command = tokio::process::Command::from(env.command());
        command
            .args(["--store", url, "--agents"])
            .arg(env.agents())
            .args(["--as", role, "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    async fn call(
        client: &rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
        tool: &str,
        args: Value,
    ) -> CallToolResult {
        let Value::Object(arguments) = args else { panic!("arguments are an object") };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
            .await
            .expect("an answer in time")
            .expect("a tool result")
    }

    fn error_code(result: &CallToolResult) -> Value {
        assert_eq!(result.is_error, Some(true), "{result:?}");
        result.structured_content.as_ref().unwrap()["error"]["code"].clone()
    }

    /// Runs `f` on a thread of its own: the synchronous PostgreSQL client may not run inside the test's runtime.
    fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| scope.spawn(f).join().unwrap())
    }

    #[test]
    fn a_backend_stopped_under_the_mcp_server_fails_the_call_in_time_and_the_next_call_works() {
        let env = Env::new();
        let Some(db) = bounded_database(&env) else { return };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(stopped_under_the_mcp_server(&env, &db));
        let verify = ok(&env, db.url(), &["audit", "verify"]);
        assert_eq!(verify["ok"], true, "{verify}");
    }

    async fn stopped_under_the_mcp_server(env: &Env, db: &TestDb) {
        let application = "alp-e2e-mcp-stopped";
        let url = with_param(db.url(), "application_name", application);
        let mut child = mcp_command(env, &url, "worker").spawn().unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let config =
            ClientConfig::new(ClientCapabilities::default(), Implementation::new("alp-e2e", "0.0.0"));
        let client = config.serve((stdout, stdin)).await.expect("initialize");
        let created =
            call(&client, "memory_create", json!({ "id": "private:worker:a", "content": "alpha" })).await;
        assert_eq!(created.is_error, Some(false), "{created:?}");

        let pids = off_runtime(|| backend_pids(db.url(), application).unwrap());
        assert_eq!(pids.len(), 1, "{pids:?}");
        let stopped = Stopped::new(pids[0]).unwrap();
        // A read reads first: the stopped connection fails it with STORAGE_ERROR within the bound, not a hang, and
        // its record (allowed, naming nothing: nothing was answered) is written on a fresh connection.
        let records = off_runtime(|| ok(env, db.url(), &["audit", "head"]))["seq"].as_u64().unwrap();
        let started = Instant::now();
        let failed = call(&client, "memory_get", json!({ "id": "private:worker:a" })).await;
        let took = started.elapsed();
        assert_eq!(error_code(&failed), json!("STORAGE_ERROR"));
        assert!(took >= Duration::from_secs(2) && took < BOUND + SLACK, "failed after {took:?}");
        // The stopped connection is never used again: the next call works at once on a fresh one.
        let started = Instant::now();
        let got = call(&client, "memory_get", json!({ "id": "private:worker:a" })).await;
        assert_eq!(got.is_error, Some(false), "{got:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        let since = (records + 1).to_string();
        let show = off_runtime(|| {
            alp(env, &[], &["--store", db.url(), "--json", "audit", "show", "--since", &since])
        });
        let failed_record: Value = serde_json::from_str(show.stdout.lines().next().unwrap()).unwrap();
        assert_eq!(
            (failed_record["door"].as_str(), failed_record["outcome"].as_str(), failed_record.get("shown")),
            (Some("get"), Some("allowed"), None),
            "the failed read is on the record, and it names nothing: {failed_record}"
        );
        // The server back: still working, and the log verifies.
        stopped.resume();
        let got = call(&client, "memory_get", json!({ "id": "private:worker:a" })).await;
        assert_eq!(got.structured_content.unwrap()["content"], "alpha");
        let _ = client.cancel().await;
        let output =
            tokio::time::timeout(Duration::from_secs(10), child.wait_with_output()).await.unwrap().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }

    /// `alp --store URL --as worker mcp` as a raw process: its stdin, its stdout's lines, its stderr.
    struct Raw {
        child: std::process::Child,
        stdin: Option<std::process::ChildStdin>,
        lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    }

    impl Raw {
        fn spawn(env: &Env, url: &str) -> Raw {
            let mut child = env
                .command()
                .args(["--store", url, "--agents"])
                .arg(env.agents())
                .args(["--as", "worker", "mcp"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let lines = BufReader::new(child.stdout.take().unwrap()).lines();
            Raw { stdin: child.stdin.take(), child, lines }
        }

        fn send(&mut self, message: &Value) {
            let stdin = self.stdin.as_mut().unwrap();
            stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
            stdin.flush().unwrap();
        }

        fn initialize(&mut self) {
            self.send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }));
            let line = self.lines.next().unwrap().unwrap();
            assert!(line.contains("2025-11-25"), "{line}");
            self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        }

        /// Closes stdin; the exit status, how long the server took to exit after it, and its stderr.
        fn close(mut self) -> (Option<i32>, Duration, String) {
            drop(self.stdin.take());
            let closed = Instant::now();
            let deadline = closed + Duration::from_secs(60);
            let status = loop {
                if let Some(status) = self.child.try_wait().unwrap() {
                    break status;
                }
                assert!(Instant::now() < deadline, "the server did not exit after end of input");
                std::thread::sleep(Duration::from_millis(10));
            };
            let took = closed.elapsed();
            let mut stderr = String::new();
            self.child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
            (status.code(), took, stderr)
        }
    }

    #[test]
    fn end_of_input_ends_the_server_on_a_database_with_status_zero_and_no_panic() {
        let env = Env::new();
        let Some(db) = testkit::pg::test_database() else { return };
        init(&env, db.url());
        // `echo -n | alp --store URL --as worker mcp`: nothing at all.
        let (status, _, stderr) = Raw::spawn(&env, db.url()).close();
        assert_eq!(status, Some(0), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        // A session with a call, then the end of input.
        let mut raw = Raw::spawn(&env, db.url());
        raw.initialize();
        raw.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_create", "arguments": { "id": "private:worker:a", "content": "alpha" } } }));
        let line = raw.lines.next().unwrap().unwrap();
        assert!(line.contains("\"isError\":false"), "{line}");
        let (status, _, stderr) = raw.close();
        assert_eq!(status, Some(0), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }

    #[test]
    fn a_call_in_flight_does_not_keep_the_server_alive_after_end_of_input() {
        let env = Env::new();
        let Some(db) = testkit::pg::test_database() else { return };
        init(&env, db.url());
        // statementTimeout stays 30 s: the call in flight would hold a waiting server that long.
        let application = "alp-e2e-mcp-in-flight";
        let url = with_param(db.url(), "application_name", application);
        let mut raw = Raw::spawn(&env, &url);
        raw.initialize();
        raw.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_create", "arguments": { "id": "private:worker:a", "content": "alpha" } } }));
        assert!(raw.lines.next().unwrap().unwrap().contains("\"isError\":false"));
        let pids = backend_pids(db.url(), application).unwrap();
        assert_eq!(pids.len(), 1, "{pids:?}");
        let stopped = Stopped::new(pids[0]).unwrap();
        raw.send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "memory_get", "arguments": { "id": "private:worker:a" } } }));
        std::thread::sleep(Duration::from_millis(300));
        let (status, took, stderr) = raw.close();
        stopped.resume();
        assert_eq!(status, Some(0), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(took < Duration::from_millis(1500), "the server exited {took:?} after its input ended");
    }
}

/// Copies the entries and audit records of `from` into `to` row for row (their tables did not change since schema
/// version 1): a database that the previous alp filled.
fn copy_rows(from: &testkit::pg::TestDb, to: &testkit::pg::TestDb) {
    let (mut source, mut target) = (from.connect().unwrap(), to.connect().unwrap());
    for table in ["alp_memories", "alp_audit"] {
        let rows: String = source
            .query_one(&format!("SELECT coalesce(json_agg(t), '[]')::text FROM {table} AS t"), &[])
            .unwrap()
            .get(0);
        target
            .execute(
                &format!(
                    "INSERT INTO {table} SELECT * FROM json_populate_recordset(NULL::{table}, $1::text::json)"
                ),
                &[&rows],
            )
            .unwrap();
    }
}

#[test]
fn store_migrate_upgrades_a_version_1_database_in_place_and_other_commands_name_it() {
    let Some(filled) = testkit::pg::test_database() else { return };
    let Some(old) = testkit::pg::test_database() else { return };
    let env = Env::new();
    // What the previous alp wrote: a version 1 schema exactly as its `alp init --store` made it, with entries and a
    // chained audit log in it.
    init(&env, filled.url());
    ok(
        &env,
        filled.url(),
        &["--as", "main", "memory", "create", "shared:team:db", "--content", "PostgreSQL 16"],
    );
    ok(
        &env,
        filled.url(),
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
    ok(&env, filled.url(), &["--as", "main", "memory", "create", "shared:team:style", "--content", "tabs"]);
    memory_postgres::init_old_schema(old.url(), 1).unwrap();
    copy_rows(&filled, &old);

    // Every other command refuses it, naming both versions and the command that upgrades it.
    for args in [
        &["--as", "main", "memory", "get", "shared:team:db"][..],
        &["audit", "verify"],
        &["store", "copy", "--to", "x"],
    ] {
        let mut all = vec!["--store", old.url(), "--json"];
        all.extend_from_slice(args);
        let run = alp(&env, &[], &all);
        assert_eq!(
            (run.status, run.error()["code"].clone()),
            (9, json!("AUDIT_UNAVAILABLE")),
            "{args:?}: {run:?}"
        );
        let message = run.error()["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains("version 1")
                && message.contains(&format!("version {}", memory_postgres::SCHEMA_VERSION))
                && message.contains("alp store migrate"),
            "{message}"
        );
    }
    // An operator command.
    let with_role = alp(&env, &[], &["--store", old.url(), "--json", "--as", "main", "store", "migrate"]);
    assert_eq!((with_role.status, with_role.error()["code"].clone()), (2, json!("USAGE")), "{with_role:?}");

    let current = memory_postgres::SCHEMA_VERSION;
    assert_eq!(ok(&env, old.url(), &["store", "migrate"]), json!({"from": 1, "to": current}));
    assert_eq!(ok(&env, old.url(), &["store", "migrate"]), json!({"from": current, "to": current}));

    // Everything is still there, the chain verifies, and history works from here on.
    let entry = ok(&env, old.url(), &["--as", "main", "memory", "get", "shared:team:db"]);
    assert_eq!((entry["content"].clone(), entry["version"].clone()), (json!("PostgreSQL 17"), json!(2)));
    assert_eq!(
        ok(&env, old.url(), &["--as", "main", "memory", "get", "shared:team:style"])["content"],
        "tabs"
    );
    let verified = ok(&env, old.url(), &["audit", "verify"]);
    // The three writes from before, and the two gets just made.
    assert_eq!((verified["ok"].as_bool(), verified["records"].as_u64()), (Some(true), Some(5)), "{verified}");
    let versions = |id: &str| -> Vec<u64> {
        ok(&env, old.url(), &["--as", "main", "memory", "history", id])["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(
        versions("shared:team:db"),
        [2],
        "an entry from before history lists its current version alone"
    );
    ok(
        &env,
        old.url(),
        &[
            "--as",
            "main",
            "memory",
            "update",
            "shared:team:db",
            "--expected-version",
            "2",
            "--content",
            "PostgreSQL 18",
        ],
    );
    ok(&env, old.url(), &["--as", "main", "memory", "delete", "shared:team:db", "--expected-version", "3"]);
    assert_eq!(versions("shared:team:db"), [4, 3, 2]);
    let kept = ok(&env, old.url(), &["--as", "main", "memory", "get", "shared:team:db", "--version", "2"]);
    assert_eq!(kept["content"], "PostgreSQL 17");
    let created =
        ok(&env, old.url(), &["--as", "main", "memory", "create", "shared:team:db", "--content", "again"]);
    assert_eq!(created["version"], 5, "a re-create continues past the tombstone");
    let verified = ok(&env, old.url(), &["audit", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");

    // A Markdown root has no schema to upgrade.
    let root = env.dir.path().join("root");
    let made = alp(&env, &[], &["--root", root.to_str().unwrap(), "--json", "init"]);
    assert_eq!(made.status, 0, "{made:?}");
    let run = alp(&env, &[], &["--root", root.to_str().unwrap(), "--json", "store", "migrate"]);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.json(), json!({"from": current, "to": current}));
}

#[test]
fn store_copy_keeps_history_tombstones_redactions_and_tokens_both_ways() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let first = env.dir.path().join("first");
    let back = env.dir.path().join("back");
    let at = |place: &Path| vec!["--root".to_owned(), place.to_str().unwrap().to_owned()];
    let on_db = vec!["--store".to_owned(), db.url().to_owned()];
    let run = |place: &[String], args: &[&str]| -> Value {
        let mut all: Vec<&str> = place.iter().map(String::as_str).collect();
        all.push("--json");
        all.extend_from_slice(args);
        let run = alp(&env, &[], &all);
        assert_eq!(run.status, 0, "{all:?}: {run:?}");
        run.json()
    };
    let root = at(&first);
    run(&root, &["init"]);
    let main = |args: &[&str]| {
        let mut all = vec!["--as", "main", "memory"];
        all.extend_from_slice(args);
        run(&root, &all)
    };
    main(&["create", "shared:team:a", "--content", "secret 1"]);
    main(&["update", "shared:team:a", "--expected-version", "1", "--content", "two"]);
    main(&["update", "shared:team:a", "--expected-version", "2", "--content", "three"]);
    run(&root, &["memory", "redact", "shared:team:a", "--version", "1"]);
    main(&["create", "shared:team:b", "--content", "gone soon"]);
    main(&["delete", "shared:team:b", "--expected-version", "1"]);
    main(&["create", "shared:team:c", "--content", "never rewritten"]);
    let made = run(&root, &["token", "create", "--role", "worker", "--name", "copied"]);

    // Markdown → PostgreSQL → Markdown.
    assert_eq!(run(&root, &["store", "copy", "--to", db.url()])["copied"], 2);
    assert_eq!(run(&on_db, &["store", "copy", "--to", back.to_str().unwrap()])["copied"], 2);

    let history = |place: &[String], id: &str| run(place, &["--as", "main", "memory", "history", id]);
    for id in ["shared:team:a", "shared:team:b", "shared:team:c"] {
        let original = history(&root, id);
        assert_eq!(history(&on_db, id), original, "{id} on the database");
        assert_eq!(history(&at(&back), id), original, "{id} copied back");
    }
    let a = history(&root, "shared:team:a");
    let versions = a["versions"].as_array().unwrap();
    assert_eq!(versions.iter().map(|v| v["version"].as_u64().unwrap()).collect::<Vec<_>>(), [3, 2, 1]);
    assert_eq!((&versions[2]["redacted"], &versions[2]["content"]), (&json!(true), &json!("")));
    let b = history(&root, "shared:team:b");
    assert_eq!(b["versions"][0]["deleted"], true, "{b}");
    // The secret is gone from the database too, and a re-create continues past the tombstone there.
    let mut client = db.connect().unwrap();
    let found: i64 = client
        .query_one("SELECT count(*) FROM alp_history WHERE content LIKE '%secret 1%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(found, 0);
    let again = run(&on_db, &["--as", "main", "memory", "create", "shared:team:b", "--content", "back"]);
    assert_eq!(again["version"], 3);

    // The tokens are the same records, and the copied one works where it was copied to.
    let tokens = |place: &[String]| run(place, &["token", "list"]);
    assert_eq!(tokens(&on_db), tokens(&root));
    assert_eq!(tokens(&at(&back)), tokens(&root));
    assert_eq!(tokens(&root)["tokens"][0]["id"], made["id"]);
}
