//! Tests that need several processes (hosts racing on one store, writers killed mid-write) start their own test
//! binary again as a helper: the helper runs one test, `child_process_entry`, which reads its role from an
//! environment variable and prints its findings as `RESULT …` lines.

use std::process::{Child, Command, Stdio};

/// Starts the running test binary again as a helper that runs only `child_process_entry`, with `var=role` and
/// `vars` in its environment; its stdout is piped for [`child_results`].
///
/// # Panics
///
/// When the test binary cannot be started (a failing test).
pub fn spawn_child(var: &str, role: &str, vars: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["child_process_entry", "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(var, role)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (key, value) in vars {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

/// Waits for a helper and returns the `RESULT …` lines it printed, without the prefix.
///
/// # Panics
///
/// When the helper failed (a failing test).
pub fn child_results(child: Child) -> Vec<String> {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "helper process failed: {:?}", output.status);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("RESULT ").map(str::to_owned))
        .collect()
}

/// A command for `program` (the `alp` binary, or a shell that starts it) that reaches nothing of the environment
/// of whoever runs the tests: every `ALP_*` variable removed (root, store, agents directory, audit key) and `HOME` set
/// to `home`, so that no default (`~/.alp/memory`) can name a real store. A test that needs one of the variables
/// sets it on the command afterwards.
///
/// The end-to-end tests pass `env!("CARGO_BIN_EXE_alp")`, which only their own crate can name.
pub fn isolated(program: impl AsRef<std::ffi::OsStr>, home: &std::path::Path) -> Command {
    let mut command = Command::new(program);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ALP_") {
            command.env_remove(name);
        }
    }
    command.env("HOME", home);
    command
}
