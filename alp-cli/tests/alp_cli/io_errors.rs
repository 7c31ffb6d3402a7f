//! A definition or `config.yaml` that cannot be read for a reason of the system's (here: too many open files, made
//! real by lowering the child's RLIMIT_NOFILE with `ulimit -n`, which binds root too) is STORAGE_ERROR (exit 1)
//! naming the file and the system's reason, never a broken definition or a broken configuration. A definition is
//! read after the ID is parsed, so its failure is audited as an `error` record with code STORAGE_ERROR (or, when
//! that record cannot be written either, the call is AUDIT_UNAVAILABLE); `config.yaml` is read before any ID and
//! writes no record.

use serde_json::Value;

use crate::cli::Env;

/// `alp --json ARGS…` under `ulimit -n limit`, for every limit from 3 to 40: (limit, exit status, error object).
fn sweep(env: &Env, args: &[&str]) -> Vec<(u32, i32, Value)> {
    (3..=40)
        .map(|limit| {
            let output = testkit::process::isolated("sh", &env.home())
                .arg("-c")
                .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
                .arg(env!("CARGO_BIN_EXE_alp"))
                .arg("--root")
                .arg(env.root())
                .arg("--agents")
                .arg(env.agents())
                .arg("--json")
                .args(args)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            let error = stderr
                .lines()
                .last()
                .and_then(|line| serde_json::from_str::<Value>(line).ok())
                .map(|document| document["error"].clone())
                .unwrap_or(Value::Null);
            (limit, output.status.code().unwrap_or(-1), error)
        })
        .collect()
}

/// Checks the sweep: nothing is ever reported as a broken definition or configuration, and every storage error is
/// exit 1 naming too many open files. Returns the storage errors' messages.
fn storage_errors(runs: &[(u32, i32, Value)]) -> Vec<String> {
    let mut messages = Vec::new();
    for (limit, status, error) in runs {
        let code = error["code"].as_str().unwrap_or_default();
        assert!(
            !matches!(code, "INVALID_AGENT_DEFINITION" | "INVALID_CONFIG"),
            "ulimit -n {limit}: an I/O failure reported as {code}: {error}"
        );
        if code == "STORAGE_ERROR" {
            assert_eq!(*status, 1, "ulimit -n {limit}: {error}");
            assert_eq!(error["kind"], "MemoryStorageError");
            let message = error["message"].as_str().unwrap().to_owned();
            assert!(message.contains("os error 24"), "the system's reason: {message}");
            messages.push(message);
        }
    }
    messages
}

#[test]
fn a_definition_that_cannot_be_opened_is_a_storage_error_and_audited_as_one() {
    let env = Env::new();
    let runs = sweep(&env, &["--as", "main", "memory", "get", "shared:x"]);
    let messages = storage_errors(&runs);
    let definition = env.agents().join("main.yaml");
    let named = format!("cannot read agent definition `{}`", definition.display());
    let failed = messages.iter().filter(|m| m.contains(&named)).count();
    assert!(failed > 0, "some limit fails the definition's open: {runs:?}");
    // Each such call wrote exactly one `error` record with code STORAGE_ERROR, and nothing else refused anything.
    let refusals: Vec<Value> =
        env.audit_lines().into_iter().filter(|record| record["outcome"] != "allowed").collect();
    assert_eq!(refusals.len(), failed, "{refusals:?}");
    for record in refusals {
        assert_eq!(
            (record["operation"].as_str(), record["outcome"].as_str(), record["code"].as_str()),
            (Some("get"), Some("error"), Some("STORAGE_ERROR")),
            "{record}"
        );
    }
}

#[test]
fn a_config_yaml_that_cannot_be_opened_is_a_storage_error_without_a_record() {
    let env = Env::new();
    let config = env.root().join("config.yaml");
    std::fs::write(&config, "lockTimeout: 10s\n").unwrap();
    let runs = sweep(&env, &["--as", "main", "memory", "get", "shared:x"]);
    let messages = storage_errors(&runs);
    let named = format!("cannot read `{}`", config.canonicalize().unwrap().display());
    assert!(messages.iter().any(|m| m.contains(&named)), "some limit fails config.yaml's open: {runs:?}");
    let refusals = env.audit_lines().into_iter().filter(|record| record["outcome"] != "allowed").count();
    let definition_failures = messages.iter().filter(|m| m.contains("agent definition")).count();
    assert_eq!(refusals, definition_failures, "config.yaml's failures write no record");
}
