//! The README's "A new team from scratch" runs as written: the block between the `readme-walkthrough` markers goes to
//! bash with the real `alp` first on PATH and HOME in a temporary directory, so the docs cannot drift from the
//! program. The agent definition shown there loads as written.

use std::path::Path;
use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap()
}

/// The shell block between `<!-- readme-walkthrough -->` and `<!-- /readme-walkthrough -->`.
fn walkthrough() -> String {
    let text = readme();
    let start = text.find("<!-- readme-walkthrough -->").expect("the walkthrough marker");
    let end = text.find("<!-- /readme-walkthrough -->").expect("the walkthrough end marker");
    let block = &text[start..end];
    let body = block.split("```sh\n").nth(1).expect("a sh block");
    body.split("```").next().unwrap().to_owned()
}

/// The first ```yaml block after "### Agent definitions".
fn definition_example() -> String {
    let text = readme();
    let section = &text[text.find("### Agent definitions").expect("the section")..];
    let body = section.split("```yaml\n").nth(1).expect("a yaml block");
    body.split("```").next().unwrap().to_owned()
}

#[test]
fn a_new_team_from_scratch_runs_as_written() {
    let home = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_alp")).parent().unwrap().to_owned();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &walkthrough()])
        .env("HOME", home.path())
        .env("PATH", path)
        .env_remove("ALP_MEMORY_ROOT")
        .env_remove("ALP_AUDIT_KEY")
        .env_remove("NO_COLOR")
        .current_dir(home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the walkthrough failed:\n--- stdout\n{stdout}\n--- stderr\n{stderr}");

    let team = home.path().join("team");
    for created in ["memory/config.yaml", ".alp/agents/lead.yaml", ".alp/agents/dev.yaml"] {
        assert!(team.join(created).is_file(), "{created} was not created:\n{stdout}");
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(team.join("memory")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the root is private to its owner");
    // The two roles, then the four entries, each where its ID says.
    assert!(stdout.contains("lead\ndev\n") || stdout.contains("dev\nlead\n"), "{stdout}");
    for file in [
        "projects/web/goals.md",
        "projects/web/log/db.md",
        "private/lead/drafts/plan.md",
        "private/dev/drafts/idea.md",
    ] {
        assert!(team.join("memory").join(file).is_file(), "{file} missing");
    }
    // Context for dev finds the database log; lead's attempt on dev's draft is refused with exit 4.
    assert!(stdout.contains("Postgres 16 runs in a container"), "{stdout}");
    assert!(stdout.contains("refused with exit 4"), "{stdout}");
    assert!(stderr.contains("private:dev:drafts:idea"), "the refusal names the ID: {stderr}");
    // One record per call: four creates, one context (a search), one refused get.
    let verified = stdout.lines().last().unwrap();
    assert!(verified.starts_with("audit log intact: 6 records"), "{stdout}");
}

#[test]
fn the_agent_definition_example_loads_as_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("dev.yaml"), definition_example()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_alp"))
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
