//! The README runs as written: every ```sh block, in order, goes to bash as a new user would type it, on a fresh
//! machine — HOME in a temporary directory, the real `alp` first on PATH, and a copy of the clone's `examples/` as
//! the current directory. `claude`, `codex` and `cargo` are stubs that record their arguments (and, for `cargo run`
//! and `cargo build`, hand over to the real `alp`), so the blocks that need them check what they were given. A block
//! whose command fails fails the test; the only blocks not run are the two that need a PostgreSQL server at
//! `db.internal`, named below. The agent definition shown there loads as written, and the README's links into
//! `docs/` point at sections that exist.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::doc_blocks::{anchors, repo, shell_blocks};

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The first ```yaml block after "### Agent definitions".
fn definition_example() -> String {
    let text = readme();
    let section = &text[text.find("### Agent definitions").expect("the section")..];
    let body = section.split("```yaml\n").nth(1).expect("a yaml block");
    body.split("```").next().unwrap().to_owned()
}

/// A stub of `name` that appends `name ARGS…` (each argument shell-quoted) to `$STUB_LOG`, then does `then`.
fn stub(dir: &Path, name: &str, then: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let script = format!(
        "#!/bin/bash\n{{ printf '%s' {name}; printf ' %q' \"$@\"; printf ' [CARGO_TARGET_DIR=%s]\\n' \
         \"${{CARGO_TARGET_DIR-}}\"; }} >> \"$STUB_LOG\"\n{then}\n"
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "audit.jsonl" || name == ".locks" {
            continue; // what earlier runs of the quick start left in the clone
        }
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// What one block printed.
struct Ran {
    stdout: String,
    stderr: String,
}

#[test]
fn every_shell_block_runs_as_written_in_order() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    let machine = tempfile::tempdir().unwrap();
    let clone = machine.path().canonicalize().unwrap().join("alp-memory");
    copy_tree(&repo().join("examples"), &clone.join("examples"));
    let stubs = machine.path().join("stubs");
    std::fs::create_dir(&stubs).unwrap();
    let alp = Path::new(env!("CARGO_BIN_EXE_alp")).canonicalize().unwrap();
    stub(
        &stubs,
        "cargo",
        r#"case "$1" in
  run) while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; exec "$ALP_BIN" "$@" ;;
  build) mkdir -p target/release && ln -sf "$ALP_BIN" target/release/alp ;;
esac"#,
    );
    stub(&stubs, "claude", "");
    stub(&stubs, "codex", "");
    let log = machine.path().join("stubs.log");
    let path = format!(
        "{}:{}:{}",
        stubs.display(),
        alp.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );

    // What the user's shell profile holds once `alp init` told them what to put there.
    let mut profile: BTreeMap<String, String> = BTreeMap::new();
    let mut ran: Vec<(String, Ran)> = Vec::new();
    let mut skipped = Vec::new();
    for block in shell_blocks("README.md") {
        let first = block.text.lines().next().unwrap_or_default().to_owned();
        if block.text.contains("db.internal") {
            skipped.push(first);
            continue;
        }
        let output = Command::new("bash")
            .args(["-eo", "pipefail", "-c", &block.text])
            .env_clear()
            .env("HOME", &home)
            .env("PATH", &path)
            .env("LANG", "C.UTF-8")
            .env("STUB_LOG", &log)
            .env("ALP_BIN", &alp)
            .envs(&profile)
            .current_dir(&clone)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "the block at README.md line {} failed ({}):\n{}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
            block.line,
            output.status,
            block.text
        );
        for line in stdout.lines() {
            if let Some((name, value)) = line.trim().strip_prefix("export ").and_then(|l| l.split_once('=')) {
                profile.insert(name.to_owned(), value.to_owned());
            }
        }
        ran.push((block.text, Ran { stdout, stderr }));
    }
    assert_eq!(
        skipped,
        [
            r#"export ALP_MEMORY_STORE="postgresql://alp@db.internal/alp"   # or postgresql://alp@%2Fvar%2Frun%2Fpostgresql/alp"#,
            "alp --root ~/team/memory store copy --to postgresql://alp@db.internal/alp",
        ],
        "only the blocks that need a PostgreSQL server at db.internal are not run"
    );
    let block = |needle: &str| -> &Ran {
        &ran.iter()
            .find(|(text, _)| text.contains(needle))
            .unwrap_or_else(|| panic!("no block with {needle}"))
            .1
    };
    let calls = std::fs::read_to_string(&log).unwrap();
    let team = home.join("team");

    // Quick start: the context command ran (through `cargo run`) on the example; the tests were asked for.
    let quick = block("cargo xtask test");
    assert!(quick.stdout.contains("## project:alp:"), "{}", quick.stdout);
    assert!(quick.stdout.contains("why each entry is here"), "{}", quick.stdout);
    assert!(calls.contains("cargo xtask test [CARGO_TARGET_DIR=]\n"), "{calls}");

    // Install: the build of the clone is reused, and the completion script lands where bash finds it.
    assert!(calls.contains("cargo install --path alp-cli [CARGO_TARGET_DIR=target]\n"), "{calls}");
    let completions = home.join(".local/share/bash-completion/completions/alp");
    assert!(std::fs::read_to_string(completions).unwrap().contains("_alp"));

    // A new team from scratch.
    let walk = block("alp init --role lead --role dev").stdout.as_str();
    for created in ["memory/config.yaml", "agents/lead.yaml", "agents/dev.yaml"] {
        assert!(team.join(created).is_file(), "{created} was not created:\n{walk}");
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(team.join("memory")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the root is private to its owner");
    // `alp init` printed the exports, with absolute paths: later blocks run with exactly those.
    assert_eq!(
        profile,
        BTreeMap::from([
            ("ALP_AGENTS_DIR".to_owned(), team.join("agents").display().to_string()),
            ("ALP_MEMORY_ROOT".to_owned(), team.join("memory").display().to_string()),
        ])
    );
    assert!(walk.contains("lead\ndev\n") || walk.contains("dev\nlead\n"), "{walk}");
    for file in [
        "projects/web/goals.md",
        "projects/web/log/db.md",
        "private/lead/drafts/plan.md",
        "private/dev/drafts/idea.md",
    ] {
        assert!(team.join("memory").join(file).is_file(), "{file} missing");
    }
    assert!(walk.contains("Postgres 16 runs in a container"), "{walk}");
    assert!(walk.contains("refused with exit 4"), "{walk}");
    let refused = &block("refused with exit").stderr;
    assert!(refused.contains("private:dev:drafts:idea"), "the refusal names the ID: {refused}");
    assert!(
        walk.contains("audit log intact: 6 records"),
        "four creates, one context, one refused get: {walk}"
    );

    // MCP: the server registered at user scope is this alp with absolute paths and the role; the Codex table went
    // to the user's config, outside the workspace; nothing was written into the workspace.
    let registered = calls.lines().find(|l| l.starts_with("claude ")).unwrap();
    assert_eq!(
        registered,
        format!(
            "claude mcp add --scope user alp-memory -- {} --root {} --agents {} --as dev mcp [CARGO_TARGET_DIR=]",
            alp.display(),
            team.join("memory").display(),
            team.join("agents").display()
        )
    );
    let codex = calls.lines().find(|l| l.starts_with("codex ")).unwrap();
    assert!(codex.starts_with("codex exec --sandbox workspace-write "), "{codex}");
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(config.contains("[mcp_servers.alp-memory]") && config.contains("\"dev\""), "{config}");
    assert!(config.contains(&team.join("agents").display().to_string()), "absolute --agents: {config}");
    let workspace = home.join("work/web-app");
    assert_eq!(std::fs::read_dir(&workspace).unwrap().count(), 0, "nothing in the agent's workspace");
    let fence = &block("adapter claude dev --via-mcp").stdout;
    assert!(fence.contains(&format!("Read(/{}/**)", team.join("memory").display())), "{fence}");

    // Memory as a service, tried as oneself: the server listened, a token was made for dev, both entries name the
    // server's real URL and only the token's variable, and the server stopped with exit 0 (the block ran under -e).
    let served = block("alp --json serve --listen 127.0.0.1:0");
    let url = std::fs::read_to_string(team.join("serve.json")).unwrap();
    let url: serde_json::Value = serde_json::from_str(&url).unwrap();
    let url = url["listening"][0].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    assert!(served.stdout.contains(&format!("\"url\": \"{url}\"")), "{}", served.stdout);
    assert!(served.stdout.contains("\"Authorization\": \"Bearer ${ALP_MEMORY_TOKEN}\""), "{}", served.stdout);
    assert!(served.stdout.contains("bearer_token_env_var = \"ALP_MEMORY_TOKEN\""), "{}", served.stdout);
    // `TOKEN=$(alp token create …)` captured the token alone: the note went to stderr.
    assert!(!served.stdout.contains("alp_"), "the token is not printed: {}", served.stdout);
    assert!(served.stderr.contains("note: token "), "{}", served.stderr);
    let tokens = std::fs::read_dir(team.join("memory/tokens")).unwrap().count();
    assert_eq!(tokens, 1);
    // The unit the README installs: its own user, a state directory, the sandboxing it names.
    let unit = std::fs::read_to_string(repo().join("examples/deploy/alp-memory.service")).unwrap();
    for line in [
        "User=alp-memory",
        "StateDirectory=alp-memory",
        "StateDirectoryMode=0700",
        "Environment=ALP_MEMORY_ROOT=/var/lib/alp-memory/memory",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "PrivateDevices=yes",
        "ExecStart=/usr/local/bin/alp serve --listen 127.0.0.1:7707",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line} in the unit");
    }

    // The walk through the example: the denial and the lost race, then an intact chain.
    let example = block("cargo build --release");
    let (out, err) = (&example.stdout, &example.stderr);
    assert!(err.contains("\"code\":\"PRIVATE_MEMORY_DENIED\"") && out.contains("exit 4"), "{out}\n{err}");
    assert!(err.contains("\"code\":\"VERSION_CONFLICT\"") && out.contains("exit 6"), "{out}\n{err}");
    // The copy left out the record the quick start appended to the example's log: the trail is this walk's four
    // calls, the worker's read first.
    assert!(out.contains("\"outcome\":\"allowed\"") && out.contains("audit log intact: 4 records"), "{out}");
    let first = out.lines().find(|l| l.starts_with('{')).expect("the first audit record");
    let first: serde_json::Value = serde_json::from_str(first).unwrap();
    assert_eq!(
        (first["seq"].as_u64(), first["actor"].as_str(), first["id"].as_str()),
        (Some(1), Some("worker"), Some("project:alp:goals")),
        "{out}"
    );
}

#[test]
fn the_agent_definition_example_loads_as_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dev.yaml"), definition_example()).unwrap();
    let output = crate::cli::alp_command(dir.path())
        .args(["--json", "--agents"])
        .arg(dir.path())
        .args(["agent", "show", "dev"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        shown,
        serde_json::json!({
            "role": "dev",
            "reportsTo": "lead",
            "memory": {
                "read": ["shared", "project:*", "private:dev"],
                "write": ["project:web:log:*", "private:dev"],
            },
            "warnings": [],
        })
    );
}

/// The README cites the docs of the repository, never a design document it does not hold, and every link into
/// `docs/` names a file and a section that exist.
#[test]
fn the_readme_points_at_docs_that_exist() {
    let text = readme();
    assert!(!text.contains("DESIGN"), "the README cites DESIGN.md, which is not in the repository");
    let mut links = 0;
    for (at, _) in text.match_indices("](docs/") {
        let target = &text[at + 2..];
        let target = &target[..target.find(')').unwrap()];
        let (file, section) = target.split_once('#').map_or((target, None), |(f, s)| (f, Some(s)));
        let doc = std::fs::read_to_string(repo().join(file))
            .unwrap_or_else(|e| panic!("the README links to {file}, which cannot be read: {e}"));
        if let Some(section) = section {
            let anchors = anchors(&doc);
            assert!(anchors.iter().any(|a| a == section), "no section #{section} in {file}: {anchors:?}");
        }
        links += 1;
    }
    assert!(links >= 4, "the README links to the docs: {links}");
    for doc in std::fs::read_dir(repo().join("docs")).unwrap() {
        let doc = doc.unwrap().path();
        let text = std::fs::read_to_string(&doc).unwrap();
        assert!(!text.contains("DESIGN"), "{} cites DESIGN.md", doc.display());
    }
}

/// No file of the project (code, comments, tests, docs, vectors, manifests) cites a design document it does not
/// hold: what a user or adopter needs of the contract is in `docs/` and `conformance/README.md`.
#[test]
fn no_file_cites_a_design_document_the_repository_does_not_hold() {
    let this = std::path::Path::new(file!()).file_name().unwrap().to_owned();
    let mut stack = vec![repo()];
    let mut read = 0;
    let mut citing = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "corpus" | "artifacts" | "coverage") {
                    stack.push(path);
                }
                continue;
            }
            let text_file = ["rs", "md", "toml", "json", "yaml", "yml", "sh", "service"]
                .iter()
                .any(|ext| path.extension().is_some_and(|e| e == *ext));
            if !text_file || path.file_name() == Some(this.as_os_str()) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            read += 1;
            if text.contains("DESIGN") {
                citing.push(path);
            }
        }
    }
    assert!(read > 200, "the walk read the project's files: {read}");
    assert!(citing.is_empty(), "these files cite DESIGN.md, which is not in the repository: {citing:?}");
}
