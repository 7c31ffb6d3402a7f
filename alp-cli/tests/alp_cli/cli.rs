//! The `alp` command line end to end: every command, JSON shape, error object and exit status of `docs/CLI.md`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// A temporary root and agents directory (the example team's definitions), and nothing else: HOME points into the
/// temporary directory and ALP_MEMORY_ROOT is unset, so no test can reach a real `~/.alp`.
pub struct Env {
    pub dir: tempfile::TempDir,
}

pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The `alp` binary under test, with no `ALP_*` variable of the caller's environment and HOME at `home`
/// ([`testkit::process::isolated`]).
pub fn alp_command(home: &Path) -> Command {
    testkit::process::isolated(env!("CARGO_BIN_EXE_alp"), home)
}

impl Run {
    /// A finished process: its exit status (-1 for a signal) and its output, which must be UTF-8.
    pub fn of(output: std::process::Output) -> Run {
        Run {
            status: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:?}"))
    }

    /// The error object: the last line of stderr.
    pub fn error(&self) -> Value {
        let last = self.stderr.lines().last().unwrap_or_else(|| panic!("no stderr: {self:?}"));
        let value: Value = serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("last stderr line not JSON ({e}): {self:?}"));
        value["error"].clone()
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit {}\n--- stdout\n{}\n--- stderr\n{}", self.status, self.stdout, self.stderr)
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("agents");
        std::fs::create_dir(&agents).unwrap();
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/team/.alp/agents");
        for entry in std::fs::read_dir(example).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), agents.join(entry.file_name())).unwrap();
        }
        std::fs::create_dir(dir.path().join("home")).unwrap();
        // Commands never create a root (`docs/CLI.md`): every test starts from an existing, empty one.
        std::fs::create_dir(dir.path().join("memory")).unwrap();
        Env { dir }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("memory")
    }

    pub fn agents(&self) -> PathBuf {
        self.dir.path().join("agents")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `alp` ([`alp_command`]) with HOME inside the temporary directory, run in it.
    pub fn command(&self) -> Command {
        let mut command = alp_command(&self.home());
        command.current_dir(self.dir.path());
        command
    }

    /// Runs `alp --root R --agents A ARGS…` with `stdin` (empty when `None`).
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut command = self.command();
        command.arg("--root").arg(self.root()).arg("--agents").arg(self.agents()).args(args);
        self.spawn(command, stdin)
    }

    fn spawn(&self, mut command: Command, stdin: Option<&str>) -> Run {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(pipe);
        Run::of(child.wait_with_output().unwrap())
    }

    /// `alp --json --as ROLE ARGS…`, expecting success.
    pub fn ok(&self, role: &str, args: &[&str]) -> Value {
        let mut all = vec!["--json", "--as", role];
        all.extend_from_slice(args);
        let run = self.run(&all, None);
        assert_eq!(run.status, 0, "{run:?}");
        run.json()
    }

    /// `alp --json --as ROLE ARGS…`, expecting failure with `exit`; returns the error object.
    pub fn fails(&self, role: &str, args: &[&str], exit: i32) -> Value {
        let mut all = vec!["--json", "--as", role];
        all.extend_from_slice(args);
        let run = self.run(&all, None);
        assert_eq!(run.status, exit, "{run:?}");
        assert!(run.stdout.is_empty(), "nothing on stdout on error: {run:?}");
        run.error()
    }

    pub fn audit_lines(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.root().join("audit.jsonl")).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

mod entries {
    use super::*;

    #[test]
    fn create_get_update_delete_json_shapes() {
        let env = Env::new();
        let created = env.ok("main", &["memory", "create", "shared:team:db", "--content", "PostgreSQL 16"]);
        assert_eq!(
            keys(&created),
            ["content", "createdAt", "id", "importance", "kind", "updatedAt", "version"]
        );
        assert_eq!(created["id"], "shared:team:db");
        assert_eq!(
            (created["kind"].as_str(), created["importance"].as_str()),
            (Some("reference"), Some("medium"))
        );
        assert_eq!(created["version"], 1);
        assert_eq!(created["content"], "PostgreSQL 16");
        let stamp = created["createdAt"].as_str().unwrap();
        assert!(
            stamp.len() == 24 && stamp.ends_with('Z') && stamp.as_bytes()[19] == b'.',
            "UTC milliseconds: {stamp}"
        );

        let got = env.ok("worker", &["memory", "get", "shared:team:db"]);
        assert_eq!(got, created);

        let typed = env.ok(
            "main",
            &[
                "memory",
                "update",
                "shared:team:db",
                "--expected-version",
                "1",
                "--kind",
                "decision",
                "--type",
                "architecture",
                "--key",
                "database",
                "--importance",
                "critical",
                "--source",
                "agent-architect",
                "--scope",
                "feat-db",
                "--ttl",
                "90d",
            ],
        );
        assert_eq!(
            keys(&typed),
            [
                "content",
                "createdAt",
                "expiresAt",
                "id",
                "importance",
                "key",
                "kind",
                "scope",
                "source",
                "ttl",
                "type",
                "updatedAt",
                "version"
            ]
        );
        assert_eq!(typed["version"], 2);
        assert_eq!(typed["content"], "PostgreSQL 16", "an update keeps what it is not given");
        assert_eq!((typed["type"].as_str(), typed["ttl"].as_str()), (Some("architecture"), Some("90d")));

        let cleared = env.ok(
            "main",
            &[
                "memory",
                "update",
                "shared:team:db",
                "--expected-version",
                "2",
                "--clear",
                "ttl",
                "--clear",
                "scope",
            ],
        );
        assert!(
            cleared.get("ttl").is_none()
                && cleared.get("expiresAt").is_none()
                && cleared.get("scope").is_none()
        );
        assert_eq!(cleared["version"], 3);

        let deleted = env.ok("main", &["memory", "delete", "shared:team:db", "--expected-version", "3"]);
        assert_eq!(deleted, json!({ "id": "shared:team:db", "deleted": true }));
        let error = env.fails("main", &["memory", "get", "shared:team:db"], 5);
        assert_eq!(
            (error["kind"].as_str(), error["code"].as_str()),
            (Some("MemoryEntryNotFoundError"), Some("NOT_FOUND"))
        );
    }

    #[test]
    fn content_from_stdin_file_and_file_dash_round_trips_bytes() {
        let env = Env::new();
        let text = "line one\r\n---\n\ttabbed — Tiếng Việt\n\n";
        let run = env.run(&["--json", "--as", "main", "memory", "create", "shared:raw"], Some(text));
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(run.json()["content"], text);
        let file = env.dir.path().join("content.txt");
        std::fs::write(&file, "from a file").unwrap();
        let created =
            env.ok("main", &["memory", "create", "shared:from-file", "--file", file.to_str().unwrap()]);
        assert_eq!(created["content"], "from a file");
        let run = env.run(
            &[
                "--json",
                "--as",
                "main",
                "memory",
                "update",
                "shared:raw",
                "--expected-version",
                "1",
                "--file",
                "-",
            ],
            Some("replaced"),
        );
        assert_eq!(run.json()["content"], "replaced");
        // Without --file -, an update does not read stdin.
        let run = env.run(
            &["--json", "--as", "main", "memory", "update", "shared:raw", "--expected-version", "2"],
            Some("ignored"),
        );
        assert_eq!(run.json()["content"], "replaced");
        let on_disk = std::fs::read_to_string(env.root().join("shared/raw.md")).unwrap();
        assert!(on_disk.ends_with("---\nreplaced"), "{on_disk}");
    }

    /// `--root`, `--agents` and `--as` choose who acts and where: after the subcommand, in any spelling, they are a
    /// usage error that reaches no door (no audit record), so an agent-supplied argument cannot pick the role.
    #[test]
    fn identity_options_after_the_subcommand_are_refused() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "private:main:journal", "--content", "main's secret"]);
        let log = env.root().join("audit.jsonl");
        let before = std::fs::read(&log).unwrap();
        let elsewhere_path = env.dir.path().join("elsewhere");
        let elsewhere = elsewhere_path.to_str().unwrap();
        let root_flag = format!("--root={elsewhere}");
        let agents_flag = format!("--agents={elsewhere}");
        let cases: Vec<Vec<&str>> = vec![
            vec!["--as", "worker", "--json", "memory", "search", "--as=main", "--prefix", "private:main"],
            vec!["--as", "worker", "--json", "memory", "search", "--as", "main", "--prefix", "private:main"],
            vec!["--as", "worker", "--json", "memory", "search", "journal", "--as=main"],
            vec!["--as", "worker", "--json", "memory", "context", "secret", "--budget", "100", "--as=main"],
            vec!["--as", "worker", "--json", "memory", "create", "shared:x", "--content", "--as=main"],
            vec!["--as", "worker", "--json", "memory", "get", "private:main:journal", "--as=main"],
            vec!["--as", "worker", "--json", "memory", "get", "shared:x", &root_flag],
            vec!["--as", "worker", "--json", "memory", "get", "shared:x", "--root", elsewhere],
            vec!["--as", "worker", "--json", "memory", "get", "shared:x", &agents_flag],
            vec!["--as", "worker", "--json", "memory", "search", "--agents", elsewhere],
            vec!["--as", "worker", "--as", "main", "--json", "memory", "get", "private:main:journal"],
            vec!["--as=worker", "--as=main", "--json", "memory", "get", "private:main:journal"],
            vec!["--as", "main", "--json", &root_flag, "memory", "get", "private:main:journal"],
            vec!["--as", "main", "--json", "--agents", elsewhere, "memory", "get", "private:main:journal"],
        ];
        for args in cases {
            let run = env.run(&args, None);
            assert_eq!(run.status, 2, "{args:?}: {run:?}");
            assert_eq!(run.error()["code"], "USAGE", "{args:?}: {run:?}");
            assert!(!run.stdout.contains("secret"), "{args:?}: {run:?}");
        }
        assert_eq!(std::fs::read(&log).unwrap(), before, "a refused command line reaches no door");
        assert!(!Path::new(elsewhere).exists(), "nothing was created at the smuggled root");
    }

    /// Runtimes pass agent-supplied values after `--`: they are then terms, never options.
    #[test]
    fn agent_supplied_values_after_double_dash_are_terms() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "private:main:journal", "--content=--as=main says hello"]);
        env.ok("main", &["memory", "create", "shared:note", "--content=--as=main is a string here"]);
        let run = env.run(&["--as", "worker", "--json", "memory", "search", "--", "--as=main"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let found = run.json();
        let ids: Vec<&str> =
            found["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["shared:note"]);
        let log = std::fs::read_to_string(env.root().join("audit.jsonl")).unwrap();
        let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        assert_eq!((last["actor"].as_str(), last["operation"].as_str()), (Some("worker"), Some("search")));
    }

    /// `--json` only shapes the output, so it may stand anywhere, even twice.
    #[test]
    fn json_may_stand_anywhere() {
        let env = Env::new();
        let run =
            env.run(&["--as", "main", "memory", "create", "shared:x", "--content", "x", "--json"], None);
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(run.json()["id"], "shared:x");
        let run = env.run(&["--json", "--as", "main", "memory", "get", "shared:x", "--json"], None);
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(run.json()["version"], 1);
    }

    #[test]
    fn root_comes_from_alp_memory_root_when_no_flag() {
        let env = Env::new();
        let mut command = alp_command(&env.home());
        command
            .env("ALP_MEMORY_ROOT", env.root())
            .args(["--agents", env.agents().to_str().unwrap(), "--json", "--as", "main"])
            .args(["memory", "create", "shared:via-env", "--content", "x"]);
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        assert!(env.root().join("shared/via-env.md").is_file());
        assert!(!env.dir.path().join("home/.alp").exists(), "the default root was not touched");
    }
}

mod errors {
    use super::*;

    #[test]
    fn every_error_class_has_its_kind_code_and_exit_status() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "shared:team:db", "--content", "x"]);

        let e = env.fails("main", &["memory", "get", "../../.ssh/id_rsa"], 3);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("InvalidMemoryIdError"), Some("INVALID_MEMORY_ID"))
        );
        assert_eq!(
            (e["id"].as_str(), e["reason"].as_str()),
            (Some("../../.ssh/id_rsa"), Some("unknown_scope"))
        );

        let e = env.fails("ghost", &["memory", "get", "shared:team:db"], 2);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("AgentDefinitionError"), Some("INVALID_AGENT_DEFINITION"))
        );

        let e = env.fails("main", &["memory", "get", "private:worker:drafts:plan"], 4);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("UnauthorizedMemoryAccessError"), Some("PRIVATE_MEMORY_DENIED"))
        );
        let e = env.fails("worker", &["memory", "create", "shared:team:x", "--content", "x"], 4);
        assert_eq!(e["code"], "MEMORY_NOT_GRANTED");

        let e = env.fails("main", &["memory", "get", "shared:nothing"], 5);
        assert_eq!(e["code"], "NOT_FOUND");

        let e = env.fails(
            "main",
            &["memory", "update", "shared:team:db", "--expected-version", "4", "--content", "y"],
            6,
        );
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("MemoryVersionConflictError"), Some("VERSION_CONFLICT"))
        );
        assert_eq!((e["expected"].as_u64(), e["actual"].as_u64()), (Some(4), Some(1)));

        let e = env.fails("main", &["memory", "create", "shared:team:db", "--content", "again"], 7);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("MemoryEntryAlreadyExistsError"), Some("ALREADY_EXISTS"))
        );

        let long = "x".repeat(2001);
        let e = env.fails("main", &["memory", "create", "shared:long", "--content", &long], 8);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("MemoryLimitExceededError"), Some("LIMIT_EXCEEDED"))
        );
        assert_eq!((e["limit"].as_u64(), e["count"].as_u64()), (Some(2000), Some(2001)));

        let e = env.fails("main", &["memory", "create", "shared:k", "--content", "x", "--kind", "banana"], 8);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("InvalidMemoryEntryError"), Some("INVALID_ENTRY"))
        );

        let e = env.fails("main", &["memory", "search", "--kind", "banana"], 2);
        assert_eq!((e["kind"].as_str(), e["code"].as_str()), (Some("UsageError"), Some("USAGE")));
    }

    #[test]
    fn usage_errors_exit_2_with_a_json_error() {
        let env = Env::new();
        for args in [
            vec!["--json", "memory", "get", "shared:x"], // no --as
            vec!["--json", "--as", "main", "memory", "frobnicate"],
            vec!["--json", "--as", "main", "memory", "update", "shared:x", "--expected-version", "one"],
            vec!["--json", "--as", "main", "memory", "delete", "shared:x"],
            vec![
                "--json",
                "--as",
                "main",
                "memory",
                "update",
                "shared:x",
                "--expected-version",
                "1",
                "--clear",
                "id",
            ],
            vec!["--json", "--as", "main", "memory", "create", "shared:x", "--content", "a", "--file", "b"],
            vec!["--json", "--as", "main", "memory", "context", "x"], // no --budget
        ] {
            let run = env.run(&args, None);
            assert_eq!(run.status, 2, "{args:?}: {run:?}");
            assert_eq!(run.error()["code"], "USAGE", "{args:?}");
        }
    }

    #[test]
    fn precedence_command_line_then_id_then_definition_then_policy_then_fields() {
        let env = Env::new();
        // An invalid filter value beats an invalid prefix.
        assert_eq!(
            env.fails("ghost", &["memory", "search", "--prefix", "x:y", "--kind", "nope"], 2)["code"],
            "USAGE"
        );
        assert_eq!(
            env.fails("ghost", &["memory", "create", "shared:..", "--content", "x", "--kind", "nope"], 3)["code"],
            "INVALID_MEMORY_ID"
        );
        assert_eq!(
            env.fails("ghost", &["memory", "create", "shared:x", "--content", "x", "--kind", "nope"], 2)["code"],
            "INVALID_AGENT_DEFINITION"
        );
        assert_eq!(
            env.fails("worker", &["memory", "create", "shared:x", "--content", "x", "--kind", "nope"], 4)["code"],
            "MEMORY_NOT_GRANTED"
        );
        assert_eq!(
            env.fails("main", &["memory", "create", "shared:x", "--content", "x", "--kind", "nope"], 8)["code"],
            "INVALID_ENTRY"
        );
    }

    #[test]
    fn audit_unavailable_fails_closed_with_exit_9() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "shared:a", "--content", "before"]);
        let log = env.root().join("audit.jsonl");
        std::fs::remove_file(&log).unwrap();
        std::fs::create_dir(&log).unwrap(); // the log cannot be opened as a file
        let e = env.fails(
            "main",
            &["memory", "update", "shared:a", "--expected-version", "1", "--content", "after"],
            9,
        );
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("AuditUnavailableError"), Some("AUDIT_UNAVAILABLE"))
        );
        assert_eq!(
            env.fails("main", &["memory", "get", "shared:.."], 9)["code"],
            "AUDIT_UNAVAILABLE",
            "overrides the rest"
        );
        let on_disk = std::fs::read_to_string(env.root().join("shared/a.md")).unwrap();
        assert!(on_disk.ends_with("before"), "nothing written: {on_disk}");
    }

    #[test]
    fn a_symlink_below_the_root_is_a_storage_error_naming_the_check() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "private:main:secret", "--content", "main only"]);
        env.ok("main", &["memory", "create", "shared:placeholder", "--content", "x"]);
        std::os::unix::fs::symlink("../private/main", env.root().join("shared/team")).unwrap();
        let e = env.fails("worker", &["memory", "get", "shared:team:secret"], 1);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("MemoryStorageError"), Some("STORAGE_ERROR"))
        );
        assert!(e["message"].as_str().unwrap().contains("memory path symlink escape"), "{e}");
        let found = env.ok("worker", &["memory", "search", "main"]);
        assert_eq!(found, json!({ "entries": [] }), "search never follows the symlink");
    }

    #[test]
    fn human_errors_are_one_sentence_naming_the_id() {
        let env = Env::new();
        let run = env.run(&["--as", "main", "memory", "get", "private:worker:drafts:plan"], None);
        assert_eq!(run.status, 4);
        insta::assert_snapshot!("human_denied", run.stderr);
        let run = env.run(&["--as", "main", "memory", "get", "shared:.."], None);
        assert_eq!(run.status, 3);
        insta::assert_snapshot!("human_invalid_id", run.stderr);
    }
}

mod search_and_context {
    use super::*;

    fn seed(env: &Env) {
        env.ok(
            "main",
            &[
                "memory",
                "create",
                "project:alp:db",
                "--content",
                "PostgreSQL for alp",
                "--type",
                "architecture",
                "--key",
                "database",
            ],
        );
        env.ok(
            "main",
            &["memory", "create", "project:alp:cache", "--content", "Redis cache in front of PostgreSQL"],
        );
        env.ok("main", &["memory", "create", "shared:team:style", "--content", "Tabs, not spaces"]);
        env.ok("main", &["memory", "create", "private:main:plan", "--content", "PostgreSQL upgrade plan"]);
    }

    #[test]
    fn search_json_ranks_with_scores_and_filters() {
        let env = Env::new();
        seed(&env);
        let found = env.ok("worker", &["memory", "search", "postgresql", "redis"]);
        let got: Vec<(&str, u64)> = found["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["id"].as_str().unwrap(), e["score"].as_u64().unwrap()))
            .collect();
        assert_eq!(got, [("project:alp:cache", 2), ("project:alp:db", 1)]);
        let typed = env.ok("worker", &["memory", "search", "--type", "architecture"]);
        assert_eq!(typed["entries"].as_array().unwrap().len(), 1);
        let limited = env.ok("main", &["memory", "search", "postgresql", "--limit", "1"]);
        assert_eq!(limited["entries"].as_array().unwrap().len(), 1);
        let e = env.fails("worker", &["memory", "search", "--prefix", "private:main"], 4);
        assert_eq!(
            (e["code"].as_str(), e["id"].as_str()),
            (Some("PRIVATE_MEMORY_DENIED"), Some("private:main"))
        );
    }

    #[test]
    fn context_json_reports_budget_and_omissions() {
        let env = Env::new();
        seed(&env);
        let context = env.ok("worker", &["memory", "context", "postgresql", "--budget", "40"]);
        assert_eq!(keys(&context), ["diagnostics", "entryIds", "text"]);
        assert_eq!(context["text"], "## project:alp:db\nPostgreSQL for alp\n\n");
        assert_eq!(context["entryIds"], json!(["project:alp:db"]));
        assert_eq!(
            context["diagnostics"],
            json!({
                "characterBudget": 40,
                "charactersUsed": 38,
                "truncated": true,
                "omittedEntryIds": ["project:alp:cache"],
            })
        );
        let records = env.audit_lines();
        let last = records.last().unwrap();
        assert_eq!(
            (last["operation"].as_str(), last["id"].as_str()),
            (Some("search"), Some("")),
            "a context build is one search"
        );
    }

    #[test]
    fn prune_json_lists_pruned_ids_ascending() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "shared:b", "--content", "x", "--ttl", "1s"]);
        env.ok("main", &["memory", "create", "shared:a", "--content", "x", "--ttl", "1s"]);
        env.ok("main", &["memory", "create", "shared:keep", "--content", "x"]);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let e = env.fails("main", &["memory", "get", "shared:a"], 5);
        assert_eq!(e["expired"], true);
        assert_eq!(env.ok("main", &["memory", "prune"]), json!({ "pruned": ["shared:a", "shared:b"] }));
        assert_eq!(env.ok("main", &["memory", "prune"]), json!({ "pruned": [] }));
    }
}

mod agents_audit_adapters {
    use super::*;

    #[test]
    fn agent_show_json_and_warnings() {
        let env = Env::new();
        let run = env.run(&["--json", "agent", "show", "reviewer"], None);
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(
            run.json(),
            json!({
                "role": "reviewer",
                "reportsTo": "main",
                "memory": { "read": ["project:alp", "private:worker"], "write": [] },
                "warnings": ["read grant `private:worker` names another role's private memory and is never effective"],
            })
        );
        let run = env.run(&["agent", "show", "worker"], None);
        insta::assert_snapshot!("human_agent_show", run.stdout);
        let run = env.run(&["--json", "agent", "show", "nobody"], None);
        assert_eq!(run.status, 2);
        assert_eq!(run.error()["code"], "INVALID_AGENT_DEFINITION");
    }

    #[test]
    fn audit_verify_reports_ok_then_the_first_bad_record() {
        let env = Env::new();
        let run = env.run(&["--json", "audit", "verify"], None);
        let genesis = "0".repeat(64);
        assert_eq!(
            run.json(),
            json!({ "ok": true, "records": 0, "lastHash": genesis, "from": { "seq": 0, "hash": genesis } })
        );
        for id in ["shared:a", "shared:b", "shared:c"] {
            env.ok("main", &["memory", "create", id, "--content", "x"]);
        }
        let _ = env.run(&["--json", "--as", "worker", "memory", "get", "private:main:x"], None);
        let records = env.audit_lines();
        assert_eq!(records.len(), 4);
        assert_eq!(
            (records[3]["outcome"].as_str(), records[3]["code"].as_str()),
            (Some("denied"), Some("PRIVATE_MEMORY_DENIED"))
        );
        let run = env.run(&["--json", "audit", "verify"], None);
        assert_eq!(
            run.json(),
            json!({ "ok": true, "records": 4, "lastHash": records[3]["hash"], "from": { "seq": 0, "hash": genesis } })
        );

        let log = env.root().join("audit.jsonl");
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, text.replacen("shared:b", "shared:z", 1)).unwrap();
        let run = env.run(&["--json", "audit", "verify"], None);
        assert_eq!(run.status, 1, "{run:?}");
        assert_eq!(run.json(), json!({ "ok": false, "firstBadSeq": 2, "reason": "altered" }));
    }

    #[test]
    fn claude_adapter_denies_other_private_dirs_and_edits() {
        let env = Env::new();
        env.ok("main", &["memory", "create", "private:main:x", "--content", "x"]);
        std::fs::create_dir_all(env.root().join("private/contractor")).unwrap();
        let run = env.run(&["--json", "adapter", "claude", "worker"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let root = env.root().canonicalize().unwrap();
        let root = root.to_str().unwrap();
        let agents = env.agents().canonicalize().unwrap();
        let agents = agents.to_str().unwrap();
        assert_eq!(
            run.json(),
            json!({
                "permissions": { "deny": [
                    format!("Read(/{root}/private/contractor/**)"),
                    format!("Read(/{root}/history/private/contractor/**)"),
                    format!("Read(/{root}/private/main/**)"),
                    format!("Read(/{root}/history/private/main/**)"),
                    format!("Read(/{root}/private/reviewer/**)"),
                    format!("Read(/{root}/history/private/reviewer/**)"),
                    format!("Read(/{root}/audit.jsonl)"),
                    format!("Read(/{root}/tokens/**)"),
                    format!("Read(/{root}/.locks/**)"),
                    format!("Edit(/{root}/**)"),
                    format!("Edit(/{agents}/**)"),
                ]},
                "sandbox": { "filesystem": { "denyRead": [
                    format!("/{root}/private/contractor"),
                    format!("/{root}/history/private/contractor"),
                    format!("/{root}/private/main"),
                    format!("/{root}/history/private/main"),
                    format!("/{root}/private/reviewer"),
                    format!("/{root}/history/private/reviewer"),
                    format!("/{root}/audit.jsonl"),
                    format!("/{root}/tokens"),
                    format!("/{root}/.locks"),
                ]}},
            })
        );
        assert!(run.stderr.contains("interactive sessions ignore deny lists"), "{run:?}");
        assert!(
            run.stderr.contains("the agents directory")
                && run.stderr.contains("lies inside the current directory"),
            "the test runs with the agents directory below its cwd: {run:?}"
        );
    }

    #[test]
    fn codex_adapter_warns_when_the_root_is_inside_the_workspace() {
        let env = Env::new();
        let run = env.run(&["--json", "adapter", "codex", "worker"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let setup = run.json();
        assert_eq!(keys(&setup), ["prompt", "sandboxMode", "warnings"]);
        assert_eq!(setup["sandboxMode"], "workspace-write");
        assert!(setup["prompt"].as_str().unwrap().contains("Never read another role's private memory"));
        let warnings = setup["warnings"].to_string();
        assert!(
            warnings.contains("the memory root") && warnings.contains("lies inside the current directory"),
            "the test runs with the root below its cwd: {warnings}"
        );
        assert!(warnings.contains("the agents directory"), "and the agents directory: {warnings}");
        assert!(warnings.contains("interactive sessions ignore deny lists"));
    }
}

mod snapshots {
    //! What people read: entries, search results, context, and the runtime settings for the example team (the
    //! temporary root replaced by `<ROOT>` so the snapshots are stable).
    use super::*;

    /// The example team's memory, minus the one TTL (`mem-003` expires in 2027; a snapshot must not).
    fn example() -> Env {
        let env = Env::new();
        let memory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/team/memory");
        copy_tree(&memory, &env.root());
        let mem_003 = env.root().join("projects/alp/mem-003.md");
        let text = std::fs::read_to_string(&mem_003).unwrap();
        assert!(text.contains("ttl: 90d\n"));
        std::fs::write(&mem_003, text.replace("ttl: 90d\n", "")).unwrap();
        env
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_tree(&entry.path(), &target);
            } else if entry.path().extension().is_some_and(|e| e == "md") {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    fn redact(env: &Env, text: &str) -> String {
        let root = env.root().canonicalize().unwrap();
        let dir = env.dir.path().canonicalize().unwrap();
        text.replace(root.to_str().unwrap(), "<ROOT>").replace(dir.to_str().unwrap(), "<CWD>")
    }

    #[test]
    fn human_entry_search_and_context() {
        let env = example();
        let run = env.run(&["--as", "worker", "memory", "get", "project:alp:mem-003"], None);
        assert_eq!(run.status, 0, "{run:?}");
        insta::assert_snapshot!("human_entry", run.stdout);
        let run = env.run(&["--as", "worker", "memory", "search", "database", "--limit", "2"], None);
        insta::assert_snapshot!("human_search", run.stdout);
        let run = env.run(
            &[
                "--as",
                "worker",
                "memory",
                "context",
                "database",
                "--budget",
                "600",
                "--task",
                "task-db-setup",
            ],
            None,
        );
        insta::assert_snapshot!("human_context_task_plan", run.stdout);
    }

    #[test]
    fn adapter_output_for_the_example_team() {
        let env = example();
        for role in ["main", "worker", "reviewer"] {
            let run = env.run(&["--json", "adapter", "claude", role], None);
            assert_eq!(run.status, 0, "{run:?}");
            let pretty = serde_json::to_string_pretty(&run.json()).unwrap();
            insta::assert_snapshot!(format!("adapter_claude_{role}"), redact(&env, &pretty));
        }
        let run = env.run(&["adapter", "codex", "worker"], None);
        assert_eq!(run.status, 0, "{run:?}");
        insta::assert_snapshot!("adapter_codex_worker", redact(&env, &run.stdout));
        insta::assert_snapshot!("adapter_codex_worker_notes", redact(&env, &run.stderr));
    }
}

mod transfer {
    use super::*;

    const SEED: &str = include_str!("../../../examples/team/.alp/memory.alp");

    #[test]
    fn import_then_export_gives_back_the_same_fields() {
        let env = Env::new();
        let file = env.dir.path().join("memory.alp");
        std::fs::write(&file, SEED).unwrap();
        let imported = env.ok("main", &["memory", "import", file.to_str().unwrap(), "--project", "alp"]);
        assert_eq!(imported, json!({ "imported": 4, "updated": [], "skipped": [] }));
        let got = env.ok("main", &["memory", "get", "project:alp:mem-003"]);
        assert_eq!(
            (got["type"].as_str(), got["scope"].as_str(), got["ttl"].as_str()),
            (Some("error"), Some("task-db-setup"), Some("90d"))
        );
        let exported = env.ok("main", &["memory", "export", "--project", "alp"]);
        assert_eq!(
            (exported["exported"].as_u64(), exported["skipped"].as_array().map(Vec::len)),
            (Some(4), Some(0))
        );
        let again = Env::new();
        let round = again.dir.path().join("round.alp");
        std::fs::write(&round, exported["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            again.ok("main", &["memory", "import", round.to_str().unwrap(), "--project", "alp"])["imported"],
            4
        );
        for id in ["mem-001", "mem-002", "mem-003", "mem-004"] {
            let full = format!("project:alp:{id}");
            let (a, b) =
                (env.ok("main", &["memory", "get", &full]), again.ok("main", &["memory", "get", &full]));
            for field in
                ["type", "key", "content", "scope", "importance", "source", "ttl", "createdAt", "updatedAt"]
            {
                assert_eq!(a.get(field), b.get(field), "{id} {field}");
            }
        }
    }

    #[test]
    fn a_project_that_is_not_one_segment_is_a_usage_error() {
        let env = Env::new();
        let file = env.dir.path().join("memory.alp");
        std::fs::write(&file, SEED).unwrap();
        for project in ["alp:log", "..", "", "a/b"] {
            let e = env.fails("main", &["memory", "import", file.to_str().unwrap(), "--project", project], 2);
            assert_eq!(e["code"], "USAGE", "{project:?}");
            let e = env.fails("main", &["memory", "export", "--project", project], 2);
            assert_eq!(e["code"], "USAGE", "{project:?}");
        }
        assert!(env.audit_lines().is_empty(), "refused before the gate");
    }

    #[test]
    fn a_bad_file_or_a_denied_id_imports_nothing() {
        let env = Env::new();
        let file = env.dir.path().join("bad.alp");
        std::fs::write(&file, SEED.replace("  source: \"agent-backend\"", "  sauce: \"agent-backend\""))
            .unwrap();
        let e = env.fails("main", &["memory", "import", file.to_str().unwrap(), "--project", "alp"], 8);
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_str()),
            (Some("InvalidMemoryEntryError"), Some("INVALID_ENTRY"))
        );
        assert_eq!((e["line"].as_u64(), e["column"].as_u64()), (Some(35), Some(3)));
        assert!(env.audit_lines().is_empty(), "a file that does not parse writes no record");

        std::fs::write(&file, SEED).unwrap();
        let e = env.fails("worker", &["memory", "import", file.to_str().unwrap(), "--project", "alp"], 4);
        assert_eq!(
            (e["code"].as_str(), e["id"].as_str()),
            (Some("MEMORY_NOT_GRANTED"), Some("project:alp:mem-001"))
        );
        let records = env.audit_lines();
        assert_eq!(records.len(), 1, "one denied create record and nothing else");
        assert_eq!(
            (records[0]["operation"].as_str(), records[0]["outcome"].as_str()),
            (Some("create"), Some("denied"))
        );
        assert!(
            env.ok("main", &["memory", "search", "--prefix", "project:alp"])["entries"]
                .as_array()
                .unwrap()
                .is_empty()
        );
    }
}
