//! From nothing to a working team (`docs/CLI.md`): `alp init`, roots that do not exist, broken `config.yaml`, `memory
//! list`, `agent list`, re-runnable imports, completions and help.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::cli::{Env, Run, alp_command};

/// Runs `alp ARGS…` in `dir` with HOME inside it and no root variable: the arguments are all there is.
fn alp(dir: &Path, args: &[&str]) -> Run {
    Run::of(alp_command(dir).args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap())
}

/// Every path below `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

mod init {
    use super::*;

    #[test]
    fn creates_the_root_config_and_definitions_and_says_what_it_made() {
        let dir = tempfile::tempdir().unwrap();
        let run = alp(
            dir.path(),
            &[
                "--json",
                "--root",
                "team/memory",
                "--agents",
                "team/agents",
                "init",
                "--role",
                "lead",
                "--role",
                "dev",
            ],
        );
        assert_eq!(run.status, 0, "{run:?}");
        let base = dir.path().canonicalize().unwrap();
        let at = |p: &str| base.join(p).display().to_string();
        assert_eq!(
            run.json(),
            json!({
                "root": at("team/memory"),
                "agents": at("team/agents"),
                "created": [
                    at("team/memory"),
                    at("team/memory/config.yaml"),
                    at("team/agents"),
                    at("team/agents/lead.yaml"),
                    at("team/agents/dev.yaml"),
                ],
            })
        );
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &str| std::fs::metadata(base.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode("team/memory"), mode("team/memory/config.yaml")), (0o700, 0o600));
        // The config holds every setting at its default, and reads back as the defaults.
        let config = std::fs::read_to_string(base.join("team/memory/config.yaml")).unwrap();
        for line in [
            "maxEntriesPerScopeRoot: 500",
            "maxValueChars: 2000",
            "maxTtl: 365d",
            "maxFileBytes: 1048576",
            "lockTimeout: 10s",
        ] {
            assert!(config.contains(line), "{line} missing from:\n{config}");
        }
        assert!(
            config.lines().filter(|l| l.trim_start().starts_with('#')).count() >= 5,
            "commented:\n{config}"
        );
        // Each role reads and writes shared memory, every project and its own private memory.
        let shown = alp(dir.path(), &["--json", "--agents", "team/agents", "agent", "show", "dev"]);
        assert_eq!(
            shown.json()["memory"],
            json!({ "read": ["shared", "project:*", "private:dev"], "write": ["shared", "project:*", "private:dev"] })
        );
        // The new root works at once, and the roles share a project but not their drafts.
        let base_args = ["--root", "team/memory", "--agents", "team/agents"];
        let with = |role: &str, rest: &[&str]| {
            let mut args = base_args.to_vec();
            args.extend(["--json", "--as", role]);
            args.extend(rest);
            alp(dir.path(), &args)
        };
        assert_eq!(with("lead", &["memory", "create", "project:web:goals", "--content", "Ship"]).status, 0);
        assert_eq!(with("dev", &["memory", "get", "project:web:goals"]).json()["content"], "Ship");
        assert_eq!(with("dev", &["memory", "create", "private:dev:d", "--content", "mine"]).status, 0);
        let denied = with("lead", &["memory", "get", "private:dev:d"]);
        assert_eq!((denied.status, denied.error()["code"].clone()), (4, json!("PRIVATE_MEMORY_DENIED")));
    }

    #[test]
    fn human_output_lists_what_was_created_and_the_next_command() {
        let dir = tempfile::tempdir().unwrap();
        let run = alp(dir.path(), &["--root", "m", "--agents", "a", "init", "--role", "lead"]);
        assert_eq!(run.status, 0, "{run:?}");
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines.len(), 8, "{run:?}");
        assert!(lines[..4].iter().all(|l| l.starts_with("created ")), "{run:?}");
        assert!(lines[5].starts_with("  export ALP_MEMORY_ROOT=/"), "{run:?}");
        assert!(lines[6].starts_with("  export ALP_AGENTS_DIR=/"), "{run:?}");
        assert!(lines[7].starts_with("next: alp --as lead memory create"), "{run:?}");
    }

    #[test]
    fn refuses_a_non_empty_root_a_bad_role_or_an_existing_definition_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("used")).unwrap();
        std::fs::write(dir.path().join("used/note.md"), "x").unwrap();
        std::fs::create_dir(dir.path().join("agents")).unwrap();
        std::fs::write(dir.path().join("agents/lead.yaml"), "role: lead\n").unwrap();
        let before = tree(dir.path());
        for (args, needle) in [
            (vec!["--root", "used", "--agents", "fresh", "init"], "is not empty"),
            (vec!["--root", "new", "--agents", "fresh", "init", "--role", "bad role"], "cannot define role"),
            (vec!["--root", "new", "--agents", "fresh", "init", "--role", "a*"], "cannot define role"),
            (vec!["--root", "new", "--agents", "fresh", "init", "--role", "x", "--role", "x"], "given twice"),
            (
                vec!["--root", "new", "--agents", "agents", "init", "--role", "dev", "--role", "lead"],
                "already exists",
            ),
        ] {
            let mut all = vec!["--json"];
            all.extend(args);
            let run = alp(dir.path(), &all);
            assert_eq!(run.status, 2, "{run:?}");
            let error = run.error();
            assert_eq!((error["kind"].as_str(), error["code"].as_str()), (Some("UsageError"), Some("USAGE")));
            assert!(error["message"].as_str().unwrap().contains(needle), "{error}");
            assert_eq!(tree(dir.path()), before, "nothing created by {all:?}");
        }
    }

    #[test]
    fn an_empty_existing_directory_becomes_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        let run = alp(dir.path(), &["--json", "--root", "root", "--agents", "agents", "init"]);
        assert_eq!(run.status, 0, "{run:?}");
        assert!(dir.path().join("root/config.yaml").is_file());
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("root")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}

mod roots {
    use super::*;

    /// A mistyped root is an error naming the path and `alp init`, for every command that needs a root, and leaves
    /// no trace on disk.
    #[test]
    fn a_missing_root_is_audit_unavailable_and_leaves_no_trace() {
        let env = Env::new();
        let before = tree(env.dir.path());
        let missing = env.dir.path().join("memroy");
        let missing_arg = missing.to_str().unwrap();
        let agents = env.agents();
        let commands: &[&[&str]] = &[
            &["--as", "main", "memory", "get", "shared:x"],
            &["--as", "main", "memory", "create", "shared:x", "--content", "x"],
            &["--as", "main", "memory", "search", "x"],
            &["--as", "main", "memory", "list"],
            &["--as", "main", "memory", "context", "--budget", "100"],
            &["--as", "main", "memory", "prune"],
            &["--as", "main", "memory", "export", "--project", "alp"],
            &["audit", "verify"],
            &["audit", "head"],
            &["audit", "show"],
            &["adapter", "claude", "main"],
            &["adapter", "codex", "main"],
        ];
        for command in commands {
            let mut args = vec!["--json", "--root", missing_arg, "--agents", agents.to_str().unwrap()];
            args.extend_from_slice(command);
            let run = alp(env.dir.path(), &args);
            assert_eq!(run.status, 9, "{command:?}: {run:?}");
            let error = run.error();
            assert_eq!(error["code"], "AUDIT_UNAVAILABLE", "{command:?}");
            let message = error["message"].as_str().unwrap();
            assert!(
                message.contains(missing_arg) && message.contains("alp") && message.contains("init"),
                "{message}"
            );
            assert!(run.stdout.is_empty(), "{command:?}: {run:?}");
            assert_eq!(tree(env.dir.path()), before, "{command:?} left a trace");
        }
        // A root that is a file is refused the same way.
        std::fs::write(&missing, "not a directory").unwrap();
        let run = alp(
            env.dir.path(),
            &["--json", "--root", missing_arg, "--as", "main", "memory", "get", "shared:x"],
        );
        assert_eq!((run.status, run.error()["code"].clone()), (9, json!("AUDIT_UNAVAILABLE")));
    }

    #[test]
    fn commands_that_need_no_root_run_without_one() {
        let env = Env::new();
        let missing = env.dir.path().join("nowhere");
        let agents = env.agents();
        let base = ["--root", missing.to_str().unwrap(), "--agents", agents.to_str().unwrap()];
        for command in [&["agent", "show", "worker"][..], &["agent", "list"], &["completions", "bash"]] {
            let mut args = base.to_vec();
            args.extend_from_slice(command);
            let run = alp(env.dir.path(), &args);
            assert_eq!(run.status, 0, "{command:?}: {run:?}");
        }
        // A saved log is verified without a root.
        let log = env.dir.path().join("saved.jsonl");
        std::fs::write(&log, "").unwrap();
        let mut args = base.to_vec();
        args.extend(["--json", "audit", "verify", "--file", log.to_str().unwrap()]);
        let run = alp(env.dir.path(), &args);
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(run.json()["ok"], true);
        assert!(!missing.exists());
    }

    #[test]
    fn a_read_creates_nothing_but_the_audit_log_and_locks() {
        let env = Env::new();
        for args in
            [&["memory", "get", "shared:nothing"][..], &["memory", "search", "x"], &["memory", "list"]]
        {
            let mut all = vec!["--as", "main"];
            all.extend_from_slice(args);
            env.run(&all, None);
        }
        let made = tree(&env.root());
        assert!(made.contains(&"audit.jsonl".to_owned()), "{made:?}");
        for path in &made {
            assert!(
                path == "audit.jsonl" || path == ".locks" || path.starts_with(".locks/"),
                "a read created {path}"
            );
        }
    }

    #[test]
    fn a_broken_config_is_invalid_config_naming_the_file_the_key_and_the_valid_keys() {
        let env = Env::new();
        let config = env.root().join("config.yaml");
        std::fs::write(&config, "limits:\n  maxValueChar: 4000\n").unwrap();
        for args in
            [&["--as", "main", "memory", "get", "shared:x"][..], &["audit", "verify"], &["audit", "head"]]
        {
            let mut all = vec!["--json"];
            all.extend_from_slice(args);
            let run = env.run(&all, None);
            assert_eq!(run.status, 2, "{args:?}: {run:?}");
            let error = run.error();
            assert_eq!(
                (error["kind"].as_str(), error["code"].as_str(), error["key"].as_str()),
                (Some("MemoryConfigError"), Some("INVALID_CONFIG"), Some("limits.maxValueChar"))
            );
            let message = error["message"].as_str().unwrap();
            assert!(message.contains(config.canonicalize().unwrap().to_str().unwrap()), "{message}");
            assert!(message.contains("limits.maxValueChars") && message.contains("lockTimeout"), "{message}");
            let keys: Vec<&str> = error.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(keys[..3], ["kind", "code", "message"], "key order");
        }
        assert!(!env.root().join("audit.jsonl").exists(), "refused before the ID: no record");
        // For people: one sentence.
        let run = env.run(&["--as", "main", "memory", "get", "shared:x"], None);
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(run.stderr.starts_with("error: invalid `"), "{run:?}");
    }
}

mod listing {
    use super::*;

    #[test]
    fn memory_list_is_a_search_without_terms_ordered_by_id() {
        let env = Env::new();
        for id in ["shared:b", "shared:a:deep", "project:alp:x", "private:main:p"] {
            env.ok("main", &["memory", "create", id, "--content", "text", "--kind", "fact"]);
        }
        env.ok("main", &["memory", "create", "shared:c", "--content", "text", "--kind", "log"]);
        let all = env.ok("main", &["memory", "list"]);
        let ids: Vec<&str> =
            all["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["private:main:p", "project:alp:x", "shared:a:deep", "shared:b", "shared:c"]);
        assert!(
            all["entries"].as_array().unwrap().iter().all(|e| e.get("score").is_none()),
            "no score in a list"
        );
        let shared = env.ok("main", &["memory", "list", "shared", "--kind", "fact", "--limit", "1"]);
        assert_eq!(shared["entries"].as_array().unwrap().len(), 1);
        assert_eq!(shared["entries"][0]["id"], "shared:a:deep");
        // The worker sees only what it may read; another role's private prefix is refused.
        let worker = env.ok("worker", &["memory", "list"]);
        let ids: Vec<&str> =
            worker["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["project:alp:x", "shared:a:deep", "shared:b", "shared:c"]);
        let error = env.fails("worker", &["memory", "list", "private:main"], 4);
        assert_eq!(error["code"], "PRIVATE_MEMORY_DENIED");
    }

    #[test]
    fn agent_list_lists_every_definition_and_a_broken_one_as_a_warning() {
        let env = Env::new();
        std::fs::write(env.agents().join("broken.yaml"), "role: [not, a, name]\n").unwrap();
        let run = env.run(&["--json", "agent", "list"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let roles = run.json()["roles"].as_array().unwrap().clone();
        let names: Vec<&str> = roles.iter().map(|r| r["role"].as_str().unwrap()).collect();
        assert_eq!(names, ["broken", "main", "reviewer", "worker"]);
        assert_eq!(roles[1], json!({ "role": "main", "reportsTo": null, "warnings": [] }));
        assert_eq!(roles[3]["reportsTo"], "main");
        assert_eq!(roles[2]["warnings"].as_array().unwrap().len(), 1, "reviewer's never-effective grant");
        let warning = roles[0]["warnings"][0].as_str().unwrap();
        assert!(warning.contains("broken.yaml") && warning.contains("malformed"), "{warning}");
    }

    #[test]
    fn an_unknown_subcommand_suggests_the_closest() {
        let env = Env::new();
        let run = env.run(&["--as", "main", "memory", "serch", "x"], None);
        assert_eq!(run.status, 2, "{run:?}");
        assert!(run.stderr.contains("'search'"), "{run:?}");
    }
}

mod import_modes {
    use super::*;

    const FILE: &str = "!alp-version: 80.0.0\n\n@memory\n  id: goals\n  type: project\n  key: goals\n  value: \"Ship it.\"\n  \
                        created: 2026-01-01T00:00:00Z\n  updated: 2026-01-02T00:00:00Z\n\n---\n\n@memory\n  id: db\n  \
                        type: decision\n  key: db\n  value: \"PostgreSQL 16.\"\n  created: 2026-01-01T00:00:00Z\n  \
                        updated: 2026-01-02T00:00:00Z\n";

    fn import(env: &Env, file: &Path, mode: &str) -> Run {
        env.run(
            &[
                "--json",
                "--as",
                "main",
                "memory",
                "import",
                file.to_str().unwrap(),
                "--project",
                "alp",
                "--on-existing",
                mode,
            ],
            None,
        )
    }

    fn versions(env: &Env) -> Vec<(String, u64)> {
        let listed = env.ok("main", &["memory", "list", "project:alp"]);
        listed["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["id"].as_str().unwrap().to_owned(), e["version"].as_u64().unwrap()))
            .collect()
    }

    #[test]
    fn importing_the_same_file_twice_changes_nothing_the_second_time() {
        let env = Env::new();
        let file = env.dir.path().join("memory.alp");
        std::fs::write(&file, FILE).unwrap();
        let first = import(&env, &file, "fail");
        assert_eq!(first.json(), json!({ "imported": 2, "updated": [], "skipped": [] }));
        let before = versions(&env);
        assert_eq!(before, [("project:alp:db".to_owned(), 1), ("project:alp:goals".to_owned(), 1)]);

        // fail: the whole import is refused, naming the first entry that exists; nothing is written.
        let records = env.audit_lines().len();
        let again = import(&env, &file, "fail");
        assert_eq!(again.status, 7, "{again:?}");
        let error = again.error();
        assert_eq!(
            (error["code"].as_str(), error["id"].as_str()),
            (Some("ALREADY_EXISTS"), Some("project:alp:goals"))
        );
        let audit = env.audit_lines();
        assert_eq!(audit.len(), records + 1, "one refused create record");
        assert_eq!(
            (audit[records]["outcome"].as_str(), audit[records]["operation"].as_str()),
            (Some("error"), Some("create"))
        );
        assert_eq!(versions(&env), before);

        // skip: both left alone, each with reason `exists`.
        let skipped = import(&env, &file, "skip");
        assert_eq!(
            skipped.json(),
            json!({ "imported": 0, "updated": [], "skipped": [
                { "id": "project:alp:goals", "reason": "exists" }, { "id": "project:alp:db", "reason": "exists" }
            ] })
        );
        assert_eq!(versions(&env), before);

        // update, same file: nothing differs, so nothing changes.
        let same = import(&env, &file, "update");
        assert_eq!(
            same.json(),
            json!({ "imported": 0, "updated": [], "skipped": [
                { "id": "project:alp:goals", "reason": "unchanged" }, { "id": "project:alp:db", "reason": "unchanged" }
            ] })
        );
        assert_eq!(versions(&env), before);

        // update, a changed value: one versioned update of exactly that entry.
        std::fs::write(&file, FILE.replace("PostgreSQL 16.", "PostgreSQL 17.")).unwrap();
        let changed = import(&env, &file, "update");
        assert_eq!(
            changed.json(),
            json!({ "imported": 0, "updated": ["project:alp:db"], "skipped": [
                { "id": "project:alp:goals", "reason": "unchanged" }
            ] })
        );
        assert_eq!(versions(&env), [("project:alp:db".to_owned(), 2), ("project:alp:goals".to_owned(), 1)]);
        assert_eq!(env.ok("main", &["memory", "get", "project:alp:db"])["content"], "PostgreSQL 17.");
    }

    #[test]
    fn a_large_import_prints_a_summary_for_people() {
        let env = Env::new();
        let blocks: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    "@memory\n  id: n{i}\n  type: knowledge\n  key: k{i}\n  value: \"note {i}\"\n  \
                     created: 2026-01-01T00:00:00Z\n  updated: 2026-01-01T00:00:00Z\n"
                )
            })
            .collect();
        let file = env.dir.path().join("big.alp");
        std::fs::write(&file, format!("!alp-version: 80.0.0\n\n{}", blocks.join("\n---\n\n"))).unwrap();
        let run =
            env.run(&["--as", "main", "memory", "import", file.to_str().unwrap(), "--project", "big"], None);
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(run.stdout.trim_end(), "imported 400 entries into `project:big`, updated 0, left 0 alone");
        let again = env.run(
            &[
                "--as",
                "main",
                "memory",
                "import",
                file.to_str().unwrap(),
                "--project",
                "big",
                "--on-existing",
                "skip",
            ],
            None,
        );
        assert_eq!(
            again.stdout.trim_end(),
            "imported 0 entries into `project:big`, updated 0, left 400 alone (already there or unchanged)"
        );
    }
}

mod completions_and_help {
    use super::*;

    #[test]
    fn completions_for_every_shell_and_bash_parses_its_script() {
        let dir = tempfile::tempdir().unwrap();
        for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
            let run = alp(dir.path(), &["completions", shell]);
            assert_eq!(run.status, 0, "{shell}: {run:?}");
            assert!(run.stdout.contains("alp"), "{shell}");
            for word in ["memory", "search", "expected-version"] {
                assert!(run.stdout.contains(word), "{shell} completes {word}");
            }
        }
        let script = dir.path().join("alp.bash");
        std::fs::write(&script, alp(dir.path(), &["completions", "bash"]).stdout).unwrap();
        let check = Command::new("bash").arg("-n").arg(&script).output().unwrap();
        assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
        let unknown = alp(dir.path(), &["completions", "tcsh"]);
        assert_eq!(unknown.status, 2, "{unknown:?}");
    }

    /// Every command's long help, as people read it.
    #[test]
    fn help_of_every_command() {
        let dir = tempfile::tempdir().unwrap();
        let commands: &[&[&str]] = &[
            &[],
            &["memory"],
            &["memory", "create"],
            &["memory", "get"],
            &["memory", "update"],
            &["memory", "delete"],
            &["memory", "search"],
            &["memory", "list"],
            &["memory", "context"],
            &["memory", "prune"],
            &["memory", "import"],
            &["memory", "export"],
            &["agent", "show"],
            &["agent", "list"],
            &["agent", "add"],
            &["agent", "grant"],
            &["agent", "revoke"],
            &["agent", "remove"],
            &["token", "create"],
            &["token", "revoke"],
            &["token", "rotate"],
            &["audit", "verify"],
            &["audit", "head"],
            &["audit", "show"],
            &["audit", "disclosed"],
            &["audit", "archive"],
            &["adapter", "claude"],
            &["adapter", "codex"],
            &["adapter", "mcp"],
            &["mcp"],
            &["init"],
            &["store"],
            &["store", "copy"],
            &["store", "migrate"],
            &["completions"],
        ];
        for command in commands {
            let mut args = command.to_vec();
            args.push("--help");
            let run = alp(dir.path(), &args);
            assert_eq!(run.status, 0, "{command:?}: {run:?}");
            let name =
                if command.is_empty() { "alp".to_owned() } else { format!("alp_{}", command.join("_")) };
            insta::assert_snapshot!(name, run.stdout);
        }
    }

    #[test]
    fn the_field_flags_list_their_values() {
        let dir = tempfile::tempdir().unwrap();
        let help = alp(dir.path(), &["memory", "create", "--help"]).stdout;
        for values in
            ["fact, decision, reference", "project, architecture, feature, task", "critical, high, medium"]
        {
            assert!(help.contains(values), "{values} in:\n{help}");
        }
        let top = alp(dir.path(), &["--help"]).stdout;
        assert!(top.contains("Global options (before the subcommand)"), "{top}");
    }
}

#[test]
fn durations_in_messages_use_the_unit_written() {
    let env = Env::new();
    let error = env.fails("main", &["memory", "create", "shared:x", "--ttl", "400d", "--content", "x"], 8);
    assert_eq!(error["code"], "LIMIT_EXCEEDED");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("400d") && message.contains("365d") && message.contains("shared:x"),
        "{message}"
    );
}

/// Colour on a terminal only, and never with `NO_COLOR` set or with `--json`. `script` (util-linux, essential on
/// Debian) gives the command a pseudo terminal.
#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let env = Env::new();
    let alp = env!("CARGO_BIN_EXE_alp");
    let line = |extra: &str| {
        format!(
            "{alp} --root {} --agents {} --as main {extra} memory get shared:missing",
            env.root().display(),
            env.agents().display()
        )
    };
    let in_terminal = |command: String, no_color: Option<&str>| {
        let mut script = Command::new("script");
        script.args(["-qec", &command, "/dev/null"]).env_remove("NO_COLOR");
        if let Some(value) = no_color {
            script.env("NO_COLOR", value);
        }
        String::from_utf8(script.output().unwrap().stdout).unwrap()
    };
    assert!(
        in_terminal(line(""), None).starts_with("\u{1b}[1m\u{1b}[31merror:\u{1b}[0m memory entry"),
        "coloured"
    );
    assert!(in_terminal(line(""), Some("1")).starts_with("error: memory entry"), "NO_COLOR");
    assert!(!in_terminal(line("--json"), None).contains('\u{1b}'), "JSON is never coloured");
    // Not a terminal: plain.
    let run = env.run(&["--as", "main", "memory", "get", "shared:missing"], None);
    assert!(run.stderr.starts_with("error: memory entry"), "{run:?}");
}

/// A long import draws a progress bar on a terminal, and never with `--json` or when stderr is not a terminal.
#[test]
fn progress_only_on_a_terminal_and_never_with_json() {
    let env = Env::new();
    let blocks: Vec<String> = (0..120)
        .map(|i| format!("@memory\n  id: n{i}\n  type: knowledge\n  key: k{i}\n  value: \"note {i}\"\n"))
        .collect();
    let file = env.dir.path().join("big.alp");
    std::fs::write(&file, format!("!alp-version: 80.0.0\n\n{}", blocks.join("\n---\n\n"))).unwrap();
    let command = |project: &str, extra: &str| {
        format!(
            "{} --root {} --agents {} --as main {extra} memory import {} --project {project}",
            env!("CARGO_BIN_EXE_alp"),
            env.root().display(),
            env.agents().display(),
            file.display()
        )
    };
    let in_terminal = |line: String| {
        let output = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env_remove("NO_COLOR")
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let drawn = in_terminal(command("a", ""));
    assert!(drawn.contains("entries imported"), "a bar on a terminal: {drawn:?}");
    assert!(drawn.contains("imported 120 entries into `project:a`"), "{drawn:?}");
    let json = in_terminal(command("b", "--json"));
    assert!(!json.contains("entries imported"), "no bar with --json: {json:?}");
    let piped =
        env.run(&["--as", "main", "memory", "import", file.to_str().unwrap(), "--project", "c"], None);
    assert_eq!(piped.status, 0, "{piped:?}");
    assert!(piped.stderr.is_empty(), "no bar off a terminal: {piped:?}");
}
