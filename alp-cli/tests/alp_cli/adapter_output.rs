//! Every adapter's stdout holds only its document — the settings JSON, the server entry, the TOML table or the
//! prompt — with `--json` and without, so `alp adapter … > file` always writes a valid file; notes and warnings go
//! to stderr. And no output suggests writing the server entry into the agent's workspace (docs/CLI.md, runtime
//! fences): the notes name user-scope registration, and Claude's `--via-mcp` fence denies edits of the workspace's
//! `.mcp.json` and `.claude/`.

use std::path::Path;

use serde_json::Value;

use crate::cli::{Env, Run};

/// Phrases that would tell someone to put the server entry into the agent's workspace.
const WORKSPACE_ADVICE: [&str; 4] = ["> .mcp.json", ">> .mcp.json", "> .claude/", "project scope"];

fn run(env: &Env, args: &[&str]) -> Run {
    let run = env.run(args, None);
    assert_eq!(run.status, 0, "{args:?}: {run:?}");
    for advice in WORKSPACE_ADVICE {
        assert!(
            !run.stdout.contains(advice) && !run.stderr.contains(advice),
            "`{advice}` in {args:?}: {run:?}"
        );
    }
    run
}

/// stdout is exactly one JSON document (serde_json refuses anything after it but whitespace).
fn one_json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {run:?}"))
}

/// `alp [--json] adapter ARGS…`: both runs, and that notes went to stderr.
fn both(env: &Env, args: &[&str]) -> (Run, Run) {
    let mut json = vec!["--json", "adapter"];
    json.extend_from_slice(args);
    let mut human = vec!["adapter"];
    human.extend_from_slice(args);
    let (json, human) = (run(env, &json), run(env, &human));
    for run in [&json, &human] {
        assert!(run.stderr.lines().any(|l| l.starts_with("note: ")), "a note on stderr: {run:?}");
        assert!(!run.stdout.contains("note: ") && !run.stdout.contains("warning: "), "{run:?}");
    }
    (json, human)
}

#[test]
fn claude_settings_are_one_json_document_with_and_without_json() {
    let env = Env::new();
    for via_mcp in [false, true] {
        let args: &[&str] = if via_mcp { &["claude", "worker", "--via-mcp"] } else { &["claude", "worker"] };
        let (json, human) = both(&env, args);
        assert_eq!(one_json(&human), one_json(&json), "{args:?}");
        // The test's agents directory lies in its cwd: the warning is on stderr, not in the file.
        assert!(human.stderr.contains("warning: the agents directory"), "{human:?}");
        assert!(human.stderr.contains("interactive sessions ignore deny lists"), "{human:?}");
    }
}

#[test]
fn codex_prints_the_prompt_alone_without_json() {
    let env = Env::new();
    for via_mcp in [false, true] {
        let args: &[&str] = if via_mcp { &["codex", "worker", "--via-mcp"] } else { &["codex", "worker"] };
        let (json, human) = both(&env, args);
        let setup = one_json(&json);
        assert_eq!(human.stdout, setup["prompt"].as_str().unwrap(), "exactly the prompt: {human:?}");
        assert!(human.stderr.contains("--sandbox workspace-write"), "{human:?}");
        for warning in setup["warnings"].as_array().unwrap() {
            assert!(human.stderr.contains(&format!("warning: {}\n", warning.as_str().unwrap())), "{human:?}");
        }
    }
}

#[test]
fn the_server_entry_is_one_document_in_either_format() {
    let env = Env::new();
    let (json, human) = both(&env, &["mcp", "worker"]);
    assert_eq!(one_json(&human), one_json(&json));
    let (json, human) = both(&env, &["mcp", "worker", "--format", "toml"]);
    let wrapped = one_json(&json);
    assert_eq!(wrapped.as_object().unwrap().keys().collect::<Vec<_>>(), ["configToml"]);
    // No TOML parser in the tree: the bytes are the table the JSON carries (its exact text is the
    // `adapter_mcp_toml` snapshot), and nothing else.
    assert_eq!(human.stdout, wrapped["configToml"].as_str().unwrap());
    assert!(human.stdout.starts_with("[mcp_servers.alp-memory]\ncommand = "), "{human:?}");
    assert_eq!(human.stdout.matches('[').count(), 2, "one table and its args array: {human:?}");
}

#[test]
fn notes_name_user_scope_registration_and_the_fence_covers_the_runtime_configuration() {
    let env = Env::new();
    let alp = Path::new(env!("CARGO_BIN_EXE_alp")).canonicalize().unwrap();
    let root = env.root().canonicalize().unwrap();
    let agents = env.agents().canonicalize().unwrap();
    let command =
        format!("{} --root {} --agents {} --as worker mcp", alp.display(), root.display(), agents.display());
    let claude = format!("claude mcp add --scope user alp-memory -- {command}");
    let codex = format!("codex mcp add alp-memory -- {command}");
    for (args, register) in [
        (&["claude", "worker", "--via-mcp"][..], &claude),
        (&["mcp", "worker"][..], &claude),
        (&["codex", "worker", "--via-mcp"][..], &codex),
        (&["mcp", "worker", "--format", "toml"][..], &codex),
    ] {
        let (json, human) = both(&env, args);
        for run in [json, human] {
            assert!(run.stderr.contains(register.as_str()), "{args:?} names `{register}`: {run:?}");
        }
    }

    let cwd = env.dir.path().canonicalize().unwrap();
    let settings = one_json(&run(&env, &["--json", "adapter", "claude", "worker", "--via-mcp"]));
    let deny: Vec<&str> =
        settings["permissions"]["deny"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let mcp_json = format!("Edit(/{}/.mcp.json)", cwd.display());
    let claude_dir = format!("Edit(/{}/.claude/**)", cwd.display());
    assert!(deny.contains(&mcp_json.as_str()) && deny.contains(&claude_dir.as_str()), "{deny:?}");

    // The help texts say the same.
    for command in ["claude", "codex", "mcp"] {
        let help = run(&env, &["adapter", command, "--help"]);
        assert!(!help.stdout.contains(".mcp.json"), "{command} --help: {help:?}");
    }
}
