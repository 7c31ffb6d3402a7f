//! The runtime fence without MCP (`alp adapter claude|codex ROLE`, docs/RUNTIMES.md) covers every file the store
//! keeps for another role: its entries, its kept versions and tombstones (a delete and a rename leave them), the
//! audit log that names its private IDs, and the token records. The files are made by the real `alp`, then the root
//! is walked: every file that holds another role's private content or names it must fall under a deny rule.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::cli::Env;

/// A role's definition as `alp init --role ROLE` writes it: shared, every project, and its own private memory.
fn define(env: &Env, role: &str) {
    let text = format!(
        "role: {role}\nmemory:\n  read: [shared, \"project:*\", \"private:{role}\"]\n  write: [shared, \"project:*\", \
         \"private:{role}\"]\n"
    );
    std::fs::write(env.agents().join(format!("{role}.yaml")), text).unwrap();
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            files_under(&entry.path(), out);
        } else {
            out.push(entry.path());
        }
    }
}

/// Whether a Claude Code rule `Read(//X/**)` or `Read(//X)` covers `path`: under X for the first, X itself for the
/// second. The `//` form is an absolute path.
fn read_rule_covers(rule: &str, path: &Path) -> bool {
    let Some(target) = rule.strip_prefix("Read(/").and_then(|r| r.strip_suffix(')')) else { return false };
    match target.strip_suffix("/**") {
        Some(dir) => path.starts_with(dir),
        None => path == Path::new(target),
    }
}

/// Whether a `sandbox.filesystem.denyRead` path (`//X`) covers `path`: X or anything under it.
fn deny_read_covers(entry: &str, path: &Path) -> bool {
    entry.strip_prefix('/').is_some_and(|dir| path.starts_with(dir))
}

#[tokio::test]
async fn the_claude_fence_covers_every_file_the_store_keeps_for_another_role() {
    let env = Env::new();
    for role in ["lead", "dev"] {
        define(&env, role);
    }
    let lead = |args: &[&str], stdin: Option<&str>| {
        let mut all = vec!["--json", "--as", "lead"];
        all.extend_from_slice(args);
        let run = env.run(&all, stdin);
        assert_eq!(run.status, 0, "{args:?}: {run:?}");
        run.json()
    };
    // Entries, an old version, a deleted entry (its versions and tombstone), and a rename (the old ID's tombstone).
    lead(&["memory", "create", "private:lead:plan", "--content", "SECRET-1 the plan"], None);
    lead(
        &["memory", "update", "private:lead:plan", "--expected-version", "1", "--file", "-"],
        Some("SECRET-2"),
    );
    lead(&["memory", "create", "private:lead:drafts:gone", "--content", "SECRET-3 gone"], None);
    lead(&["memory", "delete", "private:lead:drafts:gone", "--expected-version", "1"], None);
    lead(&["memory", "create", "private:lead:old", "--content", "SECRET-4 moving"], None);
    let server = crate::mcp::start(&env, "lead").await;
    let renamed = server
        .call(
            "memory",
            json!({ "command": "rename", "old_path": "/memories/private/lead/old.md",
                    "new_path": "/memories/private/lead/notes/new.md" }),
        )
        .await;
    assert_eq!(renamed.is_error, Some(false), "{renamed:?}");
    assert!(server.stop().await.success());
    // A token record names its role; a denied read by dev names lead's private ID in the log.
    crate::serve::token(&env, "lead", &["--name", "lead-agent"]);
    let denied = env.run(&["--json", "--as", "dev", "memory", "get", "private:lead:plan"], None);
    assert_eq!(denied.status, 4, "{denied:?}");
    // dev's own memory, which its fence must leave readable.
    let dev =
        env.run(&["--json", "--as", "dev", "memory", "create", "private:dev:mine", "--content", "x"], None);
    assert_eq!(dev.status, 0, "{dev:?}");

    let root = env.root().canonicalize().unwrap();
    let mut files = Vec::new();
    files_under(&root, &mut files);
    let names_lead = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        path.to_string_lossy().contains("lead") || text.contains("lead") || text.contains("SECRET")
    };
    let of_lead: Vec<&PathBuf> = files.iter().filter(|path| names_lead(path)).collect();
    // The walk found what the store really keeps: versions, tombstones (delete and rename), the log, the token.
    let relative: Vec<String> =
        of_lead.iter().map(|p| p.strip_prefix(&root).unwrap().display().to_string()).collect();
    for kept in [
        "private/lead/plan.md",
        "private/lead/notes/new.md",
        "history/private/lead/plan.md/",
        "history/private/lead/drafts/gone.md/",
        "history/private/lead/old.md/",
        "audit.jsonl",
        "tokens/",
    ] {
        assert!(relative.iter().any(|r| r.starts_with(kept)), "{kept} among {relative:#?}");
    }

    let settings = env.run(&["--json", "adapter", "claude", "dev"], None);
    assert_eq!(settings.status, 0, "{settings:?}");
    let settings: Value = settings.json();
    let deny: Vec<&str> =
        settings["permissions"]["deny"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let deny_read: Vec<&str> = settings["sandbox"]["filesystem"]["denyRead"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for path in &of_lead {
        assert!(
            deny.iter().any(|rule| read_rule_covers(rule, path)),
            "no Read rule of dev's fence covers {}: {deny:#?}",
            path.display()
        );
        assert!(
            deny_read.iter().any(|entry| deny_read_covers(entry, path)),
            "no denyRead entry of dev's fence covers {}: {deny_read:#?}",
            path.display()
        );
    }
    // dev's own entry stays readable by its own tools: the fence is not the whole root.
    let mine = root.join("private/dev/mine.md");
    assert!(mine.is_file());
    assert!(!deny.iter().any(|rule| read_rule_covers(rule, &mine)), "{deny:#?}");
    assert!(!deny_read.iter().any(|entry| deny_read_covers(entry, &mine)), "{deny_read:#?}");

    // Codex cannot enforce reads; its prompt names the same places.
    let codex = env.run(&["--json", "adapter", "codex", "dev"], None);
    assert_eq!(codex.status, 0, "{codex:?}");
    let prompt = codex.json()["prompt"].as_str().unwrap().to_owned();
    let root = root.display();
    for place in [
        format!("`{root}/private/`"),
        format!("`{root}/history/private/`"),
        format!("`{root}/private/dev/`"),
        format!("`{root}/history/private/dev/`"),
        format!("`{root}/audit.jsonl`"),
        format!("`{root}/tokens/`"),
    ] {
        assert!(prompt.contains(&place), "the prompt names {place}: {prompt}");
    }
}
