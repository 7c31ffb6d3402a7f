//! What a new user meets in the first hour: an agents directory that follows them (`ALP_AGENTS_DIR`, named with its
//! origin in every role error), `alp init` printing the exports, global options after the subcommand, and the output
//! for people (plurals, denials of writes, `alp mcp` on a terminal, `alp audit show`).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::cli::{Env, Run, alp_command};

/// `alp ARGS…` in `cwd` with `env` added (no root or agents variable unless given), stdin empty.
fn alp_in(cwd: &Path, home: &Path, env: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut command = alp_command(home);
    command.args(args).current_dir(cwd).stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    Run::of(command.output().unwrap())
}

fn redact(env: &Env, text: &str) -> String {
    let dir = env.dir.path().canonicalize().unwrap();
    text.replace(dir.to_str().unwrap(), "<DIR>")
}

/// `--agents`, else `ALP_AGENTS_DIR`, else `.alp/agents` of the current directory; an unknown role names the
/// directory as an absolute path and which of the three chose it.
#[test]
fn the_agents_directory_follows_alp_agents_dir_and_role_errors_say_which_chose_it() {
    let env = Env::new();
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let home = env.dir.path().join("home");
    let (root, agents) = (env.root(), env.agents());
    let (root, agents) = (root.as_path(), agents.as_path());
    let only_root: &[(&str, &Path)] = &[("ALP_MEMORY_ROOT", root)];
    let variables: &[(&str, &Path)] = &[("ALP_MEMORY_ROOT", root), ("ALP_AGENTS_DIR", agents)];
    // From any directory, with both variables set, the role is found.
    let listed = alp_in(&elsewhere, &home, variables, &["--json", "--as", "main", "memory", "list"]);
    assert_eq!((listed.status, listed.json()), (0, json!({ "entries": [] })), "{listed:?}");

    let mut messages = String::new();
    for (label, vars, args) in [
        ("from --agents", only_root, &["--agents", "agents", "--json", "--as", "dev"][..]),
        ("from ALP_AGENTS_DIR", variables, &["--json", "--as", "dev"]),
        ("the default", only_root, &["--json", "--as", "main"]),
    ] {
        let mut all = args.to_vec();
        all.extend(["memory", "get", "shared:x"]);
        let cwd = if label == "from --agents" { env.dir.path() } else { elsewhere.as_path() };
        let run = alp_in(cwd, &home, vars, &all);
        assert_eq!(run.status, 2, "{label}: {run:?}");
        let error = run.error();
        assert_eq!(
            (error["code"].as_str(), error["reason"].as_str()),
            (Some("INVALID_AGENT_DEFINITION"), Some("unknown_role"))
        );
        let message = error["message"].as_str().unwrap();
        messages.push_str(&format!("{label}: {}\n", redact(&env, message)));
    }
    assert!(messages.contains("`<DIR>/agents` (from --agents)"), "{messages}");
    assert!(messages.contains("`<DIR>/agents` (from ALP_AGENTS_DIR)"), "{messages}");
    assert!(messages.contains("`<DIR>/elsewhere/.alp/agents` (the default .alp/agents)"), "{messages}");
    insta::assert_snapshot!("unknown_role_names_the_agents_directory", messages);

    // The same for `agent show`, the adapters and the MCP server, which load the role themselves.
    for args in [&["agent", "show", "dev"][..], &["adapter", "mcp", "dev"], &["--as", "dev", "mcp"]] {
        let mut all = vec!["--json"];
        all.extend(args);
        let run = alp_in(&elsewhere, &home, variables, &all);
        assert_eq!(run.status, 2, "{args:?}: {run:?}");
        let message = run.error()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("(from ALP_AGENTS_DIR)"), "{args:?}: {message}");
    }
    // `alp adapter mcp` passes the directory the variable chose, absolute.
    let server = alp_in(&elsewhere, &home, variables, &["--json", "adapter", "mcp", "main"]);
    let args = server.json()["mcpServers"]["alp-memory"]["args"].clone();
    let at = args.as_array().unwrap().iter().position(|a| a == "--agents").unwrap();
    let dir = env.dir.path().canonicalize().unwrap();
    assert_eq!(args[at + 1], dir.join("agents").display().to_string());
}

/// `alp init` tells people what to export (absolute paths); its JSON document is unchanged.
#[test]
fn init_prints_the_exports_to_set() {
    let env = tempfile::tempdir().unwrap();
    let home = env.path().join("home");
    let run = alp_in(
        env.path(),
        &home,
        &[],
        &["--root", "team/memory", "--agents", "team/agents", "init", "--role", "lead"],
    );
    assert_eq!(run.status, 0, "{run:?}");
    let dir = env.path().canonicalize().unwrap();
    insta::assert_snapshot!("init_for_people", run.stdout.replace(dir.to_str().unwrap(), "<DIR>"));
    assert!(
        run.stdout.contains(&format!("  export ALP_MEMORY_ROOT={}\n", dir.join("team/memory").display()))
    );
    assert!(run.stdout.contains(&format!("  export ALP_AGENTS_DIR={}\n", dir.join("team/agents").display())));
    let run = alp_in(env.path(), &home, &[], &["--json", "--root", "m", "--agents", "a", "init"]);
    let keys: Vec<String> = run.json().as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["root", "agents", "created"]);
}

/// A global option after the subcommand is a USAGE error saying to put it before, never clap's tip to pass it
/// after `--` (which would make it a value).
#[test]
fn a_global_option_after_the_subcommand_says_to_put_it_before() {
    let env = Env::new();
    let mut people = String::new();
    for (args, option) in [
        (&["memory", "--as", "dev", "get", "X"][..], "--as"),
        (&["memory", "get", "X", "--as", "lead"], "--as"),
        (&["memory", "get", "X", "--as=lead"], "--as"),
        (&["memory", "search", "--root", "/tmp/x"], "--root"),
        (&["memory", "list", "--store=postgresql://x/y"], "--store"),
        (&["agent", "list", "--agents", "/tmp/x"], "--agents"),
    ] {
        let mut json = vec!["--json", "--as", "main"];
        json.extend(args);
        let run = env.run(&json, None);
        assert_eq!(run.status, 2, "{args:?}: {run:?}");
        let value = if option == "--as" {
            "ROLE"
        } else if option == "--store" {
            "URL"
        } else {
            "DIR"
        };
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(run.stderr.lines().last().unwrap()).unwrap(),
            json!({ "error": { "kind": "UsageError", "code": "USAGE", "message": format!(
                "`{option}` is a global option: put it before the subcommand (`alp {option} {value} memory get ID`, \
                 not `alp memory get ID {option} {value}`)"
            ) } }),
            "{args:?}"
        );
        let mut plain = vec!["--as", "main"];
        plain.extend(args);
        let run = env.run(&plain, None);
        assert_eq!(run.status, 2, "{args:?}: {run:?}");
        assert!(!run.stderr.contains("-- "), "no hint to pass it after `--`: {run:?}");
        people.push_str(&run.stderr);
    }
    insta::assert_snapshot!("global_option_after_the_subcommand", people);
    // Given twice is still USAGE.
    let twice = env.run(&["--json", "--as", "a", "--as", "b", "memory", "list"], None);
    assert_eq!((twice.status, twice.error()["code"].clone()), (2, json!("USAGE")));
}

/// Counts read right for one and for many; the import summary is one line; a denied write says what is true of
/// writes; `audit show` says what a record is.
#[test]
fn output_for_people_counts_right_and_says_what_is_true() {
    let env = Env::new();
    let mut shown = String::new();
    let mut people = |args: &[&str]| {
        let run = env.run(args, None);
        shown.push_str(&format!(
            "$ alp {}\n{}{}\n",
            args.join(" "),
            redact(&env, &run.stdout),
            redact(&env, &run.stderr)
        ));
    };
    env.ok(
        "main",
        &[
            "memory",
            "create",
            "project:alp:goals",
            "--type",
            "project",
            "--key",
            "goals",
            "--content",
            "Ship.",
        ],
    );
    people(&["--as", "main", "memory", "context", "ship", "--budget", "100"]);
    people(&["--as", "main", "memory", "context", "--budget", "100", "--task", "t1"]);
    people(&["--as", "main", "memory", "export", "--project", "alp", "--output", "one.alp"]);
    std::fs::write(
        env.dir.path().join("one-more.alp"),
        "!alp-version: 80.0.0\n\n@memory\n  id: db\n  type: decision\n  key: db\n  value: \"PostgreSQL.\"\n",
    )
    .unwrap();
    people(&["--as", "main", "memory", "import", "one-more.alp", "--project", "alp"]);
    people(&[
        "--as",
        "main",
        "memory",
        "import",
        "one-more.alp",
        "--project",
        "alp",
        "--on-existing",
        "skip",
    ]);
    people(&["--as", "main", "memory", "create", "private:worker:notes", "--content", "not yours"]);
    people(&["--as", "main", "memory", "get", "private:worker:notes"]);
    people(&["audit", "show", "--limit", "0"]);
    people(&["store", "copy", "--to", "copy"]);
    insta::assert_snapshot!("counts_and_truths_for_people", shown);
    assert!(!shown.contains(" 1 entries") && !shown.contains(" 1 records"), "{shown}");
}

/// `alp mcp` started by hand on a terminal says on stderr what it waits for, and points at `alp adapter mcp`;
/// Ctrl-D ends it. `script` (util-linux) gives it a pseudo terminal.
#[test]
fn alp_mcp_on_a_terminal_says_what_it_waits_for() {
    let env = Env::new();
    let line = format!(
        "{} --root {} --agents {} --as worker mcp",
        env!("CARGO_BIN_EXE_alp"),
        env.root().display(),
        env.agents().display()
    );
    let mut child = Command::new("timeout")
        .args(["20", "script", "-qec", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    use std::io::Write as _;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\x04").unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        shown.contains(
            "alp mcp: the MCP server of role `worker` is waiting for an MCP client's JSON-RPC messages on stdin \
             (Ctrl-D ends it); agent runtimes start it themselves: `alp adapter mcp worker` prints their configuration"
        ),
        "{shown:?}"
    );
    // Not a terminal (a runtime): not a word on stderr.
    let run = env.run(&["--as", "worker", "mcp"], None);
    assert_eq!((run.status, run.stderr.as_str()), (0, ""), "{run:?}");
}

/// `TOKEN=$(alp token create --role dev)` holds the token alone: without `--json` the secret is the only line on
/// stdout and the note goes to stderr.
#[test]
fn token_create_prints_the_secret_alone_on_stdout() {
    let env = Env::new();
    let run = env.run(&["token", "create", "--role", "worker", "--name", "w"], None);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 1, "one line: {run:?}");
    let secret = run.stdout.trim_end_matches('\n');
    assert!(secret.starts_with("alp_") && secret.len() == 60, "{run:?}");
    assert!(run.stderr.starts_with("note: token ") && run.stderr.contains("ALP_MEMORY_TOKEN"), "{run:?}");
    assert!(!run.stderr.contains(secret), "the secret is printed once: {run:?}");
    // As a shell captures it.
    let line = format!(
        "TOKEN=$({} --root {} --agents {} token create --role worker); printf '%s' \"$TOKEN\"",
        env!("CARGO_BIN_EXE_alp"),
        env.root().display(),
        env.agents().display()
    );
    let mut shell = Command::new("bash");
    shell.args(["-c", &line]).env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    shell.env("HOME", env.home()).stdin(Stdio::null());
    let captured = Run::of(shell.output().unwrap());
    assert_eq!(captured.status, 0, "{captured:?}");
    assert!(!captured.stdout.contains('\n') && captured.stdout.len() == 60, "{captured:?}");
    // `--json` is unchanged: one document holding the token.
    let (_, token) = crate::serve::token(&env, "worker", &[]);
    assert_eq!(token.len(), 60);
}

/// `alp memory create ID` with neither `--content` nor `--file` and nothing on stdin (an empty pipe, `/dev/null`,
/// or a terminal that is never waited on) is `USAGE` "no content given" and creates nothing; `--content ""` still
/// makes an empty entry on purpose.
#[test]
fn a_create_with_no_content_given_is_a_usage_error_and_creates_nothing() {
    let env = Env::new();
    let create = ["--json", "--as", "main", "memory", "create", "shared:empty"];
    let file = env.root().join("shared/empty.md");
    let check = |run: &Run, how: &str| {
        assert_eq!(run.status, 2, "{how}: {run:?}");
        let error = run.error();
        assert_eq!(
            (error["kind"].as_str(), error["code"].as_str()),
            (Some("UsageError"), Some("USAGE")),
            "{how}"
        );
        assert!(error["message"].as_str().unwrap().contains("no content given"), "{how}: {error}");
        assert!(run.stdout.is_empty(), "{how}: {run:?}");
        assert!(!file.exists(), "{how}: nothing was created");
    };
    // An empty pipe.
    check(&env.run(&create, None), "an empty pipe");
    // A closed stdin: /dev/null.
    let mut command = env.command();
    command.arg("--root").arg(env.root()).arg("--agents").arg(env.agents()).args(create).stdin(Stdio::null());
    check(&Run::of(command.output().unwrap()), "/dev/null");
    assert!(env.audit_lines().is_empty(), "a usage error reaches no door");
    // A terminal: refused at once, never waited on. `script` (util-linux) gives it a pseudo terminal.
    let line = format!(
        "{} --root {} --agents {} --as main memory create shared:empty",
        env!("CARGO_BIN_EXE_alp"),
        env.root().display(),
        env.agents().display()
    );
    let output = Command::new("timeout")
        .args(["20", "script", "-qec", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains("no content given"), "{output:?}");
    assert!(!file.exists(), "on a terminal: nothing was created");
    // Content on stdin, and an explicit empty `--content`, are still created.
    let piped = env.run(&create, Some("from a pipe"));
    assert_eq!((piped.status, piped.json()["content"].clone()), (0, json!("from a pipe")), "{piped:?}");
    let empty = env.ok("main", &["memory", "create", "shared:blank", "--content", ""]);
    assert_eq!(empty["content"], "");
}

/// A missing root says so: it names the root and `alp init`, and never reads as an unavailable audit log; the code
/// (`AUDIT_UNAVAILABLE`), kind and exit status 9 stay.
#[test]
fn a_missing_root_is_named_as_missing_not_as_an_unavailable_log() {
    let env = Env::new();
    let missing = env.dir.path().join("memroy");
    let missing_text = missing.to_str().unwrap();
    let agents = env.agents();
    let args =
        ["--root", missing_text, "--agents", agents.to_str().unwrap(), "--as", "main", "memory", "list"];
    let human = alp_in(env.dir.path(), &env.home(), &[], &args);
    assert_eq!(human.status, 9, "{human:?}");
    assert!(
        human.stderr.contains(&format!("the memory root `{missing_text}` does not exist"))
            && human.stderr.contains(&format!("alp --root {missing_text} init")),
        "{human:?}"
    );
    assert!(!human.stderr.contains("audit log"), "{human:?}");
    let mut with_json = vec!["--json"];
    with_json.extend(args);
    let run = alp_in(env.dir.path(), &env.home(), &[], &with_json);
    assert_eq!(run.status, 9, "{run:?}");
    let error = run.error();
    assert_eq!(
        (error["kind"].as_str(), error["code"].as_str()),
        (Some("AuditUnavailableError"), Some("AUDIT_UNAVAILABLE"))
    );
    assert!(!error["message"].as_str().unwrap().contains("audit log"), "{error}");
    // A file where the root should be: said as such.
    std::fs::write(&missing, "not a directory").unwrap();
    let run = alp_in(env.dir.path(), &env.home(), &[], &with_json);
    assert_eq!(run.status, 9, "{run:?}");
    let message = run.error()["message"].as_str().unwrap().to_owned();
    assert!(message.contains(&format!("the memory root `{missing_text}` is not a directory")), "{message}");
}

/// An `AUDIT_UNAVAILABLE` that reaches a token holder of `alp serve` (or the client of `alp mcp`) names the log
/// relative to the root, never the server's absolute path; the operator's own commands still name the path.
#[tokio::test]
async fn an_unavailable_log_is_named_relative_to_the_root_for_the_servers_clients() {
    let env = Env::new();
    let (_, token) = crate::serve::token(&env, "worker", &[]);
    let serve = crate::serve::Serve::start(&env);
    let client = serve.client(&token, &[]).await;
    let mcp = crate::mcp::start(&env, "worker").await;
    // A directory where the log should be: no record can be appended.
    let log = env.root().join("audit.jsonl");
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let root = env.root().canonicalize().unwrap();
    let root = root.to_str().unwrap();
    let args = json!({ "id": "shared:x" });
    for error in
        [crate::serve::fails(&client, "memory_get", args.clone()).await, mcp.fails("memory_get", args).await]
    {
        assert_eq!(error["code"], "AUDIT_UNAVAILABLE", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("`audit.jsonl`") && !message.contains(root), "{message}");
    }
    let _ = client.cancel().await;
    assert!(mcp.stop().await.success());
    serve.terminate();
    // The operator's command line names the path.
    let run = env.run(&["--json", "--as", "main", "memory", "get", "shared:x"], None);
    assert_eq!(run.status, 9, "{run:?}");
    assert!(run.error()["message"].as_str().unwrap().contains(root), "{run:?}");
}
