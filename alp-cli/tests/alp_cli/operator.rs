//! The operator's side end to end (`docs/CLI.md`, "Roles and grants", "Tokens"): `alp agent add|grant|revoke|remove`
//! and `alp token create|revoke|rotate` through the real binary, each with its exact audit record read back from
//! the log, on a root and on a database; every bad input with its code and exit status and nothing changed (the
//! definition's bytes, no new record); a hand-written definition edited byte for byte; a model of definitions that
//! any sequence of changes must agree with; a running `alp serve` that applies a grant at its next call; and
//! `TOKEN=$(alp token create …)` in bash.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::cli::{Env, Run};
use crate::serve::Serve;

/// Runs `alp ARGS…` in one place (the options that name it are added).
type Alp<'a> = &'a dyn Fn(&[&str]) -> Run;

/// The records of the log, as `alp audit show` prints them.
fn records(alp: Alp<'_>) -> Vec<Value> {
    let run = alp(&["audit", "show"]);
    assert_eq!(run.status, 0, "{run:?}");
    run.stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// What a record of an operator's command says, without its sequence, time and hashes.
fn essence(record: &Value) -> Value {
    let object = record.as_object().unwrap();
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut expected_keys = vec!["seq", "timestamp", "actor", "operation", "door", "id", "outcome", "code"];
    if object.contains_key("grant") {
        expected_keys.push("grant");
    }
    expected_keys.extend(["prevHash", "hash"]);
    assert_eq!(keys, expected_keys, "the fields and their order: {record}");
    json!({
        "actor": record["actor"], "operation": record["operation"], "door": record["door"], "id": record["id"],
        "outcome": record["outcome"], "code": record["code"], "grant": record.get("grant"),
    })
}

/// The essence of an `agent-*` record.
fn agent_record(operation: &str, role: &str, grant: &[&str]) -> Value {
    json!({
        "actor": "", "operation": operation, "door": operation, "id": role, "outcome": "allowed", "code": null,
        "grant": grant,
    })
}

/// The essence of a `token-*` record.
fn token_record(operation: &str, id: &str) -> Value {
    json!({
        "actor": "", "operation": operation, "door": operation, "id": id, "outcome": "allowed", "code": null,
        "grant": null,
    })
}

/// `alp --json ARGS…`, expecting success: the document.
fn ok(alp: Alp<'_>, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = alp(&all);
    assert_eq!(run.status, 0, "{args:?}: {run:?}");
    run.json()
}

/// `alp --json ARGS…`, expecting exit `status`: the error object.
fn fails(alp: Alp<'_>, args: &[&str], status: i32) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = alp(&all);
    assert_eq!(run.status, status, "{args:?}: {run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    run.error()
}

/// The text of `alp init --role ROLE`'s definition, and of `alp agent add ROLE` without grant flags.
fn init_definition(role: &str) -> String {
    format!(
        "# The memory grants of role `{role}`: what it may read and write (see `alp agent show {role}`).\n\
         role: {role}\n\
         # reportsTo: main          # who the role reports to (grants no memory access)\n\
         memory:\n\
         \x20 read: [shared, \"project:*\", \"private:{role}\"]\n\
         \x20 write: [shared, \"project:*\", \"private:{role}\"]\n"
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every agent command and its record, in one place: `alp` runs there, `agents` is its agents directory.
fn agent_commands(alp: Alp<'_>, agents: &Path) {
    let before = records(alp).len();
    // No grant flags: init's definition, byte for byte, 0600.
    let added = ok(alp, &["agent", "add", "qa"]);
    assert_eq!(
        added,
        json!({
            "role": "qa", "reportsTo": null,
            "memory": { "read": ["shared", "project:*", "private:qa"], "write": ["shared", "project:*", "private:qa"] },
            "warnings": [],
        })
    );
    let file = agents.join("qa.yaml");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), init_definition("qa"));
    assert_eq!(mode(&file), 0o600);
    // With flags: exactly those grants, and the manager.
    let custom = ok(
        alp,
        &[
            "agent",
            "add",
            "auditor",
            "--read",
            "shared",
            "--read",
            "project:alp:*",
            "--write",
            "private:auditor",
        ]
        .into_iter()
        .chain(["--reports-to", "main"])
        .collect::<Vec<_>>(),
    );
    assert_eq!(
        custom,
        json!({
            "role": "auditor", "reportsTo": "main",
            "memory": { "read": ["shared", "project:alp:*"], "write": ["private:auditor"] }, "warnings": [],
        })
    );
    assert_eq!(ok(alp, &["agent", "show", "auditor"]), custom, "agent show agrees");
    let granted = ok(alp, &["agent", "grant", "qa", "--write", "shared:qa:*"]);
    assert_eq!(granted["memory"]["write"], json!(["shared", "project:*", "private:qa", "shared:qa:*"]));
    assert_eq!(ok(alp, &["agent", "show", "qa"]), granted);
    let revoked = ok(alp, &["agent", "revoke", "qa", "--read", "project:*"]);
    assert_eq!(revoked["memory"]["read"], json!(["shared", "private:qa"]));
    assert_eq!(mode(&file), 0o600);
    let removed = ok(alp, &["agent", "remove", "auditor"]);
    assert_eq!(removed, json!({ "role": "auditor", "removed": true }));
    assert!(!agents.join("auditor.yaml").exists());
    let listed = ok(alp, &["agent", "list"]);
    let roles: Vec<&str> =
        listed["roles"].as_array().unwrap().iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["main", "qa", "reviewer", "worker"]);

    let written: Vec<Value> = records(alp)[before..].iter().map(essence).collect();
    assert_eq!(
        written,
        [
            agent_record(
                "agent-add",
                "qa",
                &[
                    "read:shared",
                    "read:project:*",
                    "read:private:qa",
                    "write:shared",
                    "write:project:*",
                    "write:private:qa"
                ]
            ),
            agent_record(
                "agent-add",
                "auditor",
                &["read:shared", "read:project:alp:*", "write:private:auditor"]
            ),
            agent_record("agent-grant", "qa", &["write:shared:qa:*"]),
            agent_record("agent-revoke", "qa", &["read:project:*"]),
            agent_record(
                "agent-remove",
                "auditor",
                &["read:shared", "read:project:alp:*", "write:private:auditor"]
            ),
        ]
    );
    let verified = ok(alp, &["audit", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// Every refused or empty agent command: its code and exit status, the definitions' bytes unchanged, no record.
fn agent_refusals(alp: Alp<'_>, agents: &Path) {
    let snapshot = || {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(agents)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    std::fs::write(agents.join("broken.yaml"), "role: broken\nmemory:\n  read: [shared\n").unwrap();
    let (files, log) = (snapshot(), records(alp));
    let unchanged = |what: &str| {
        assert_eq!(snapshot(), files, "{what}: the definitions are as they were");
        assert_eq!(records(alp), log, "{what}: no record");
    };
    let agents_dir = agents.canonicalize().unwrap().display().to_string();

    let invalid = fails(alp, &["agent", "grant", "worker", "--read", "project:*:goals"], 2);
    assert_eq!(
        (&invalid["code"], &invalid["reason"], &invalid["grant"]),
        (&json!("INVALID_AGENT_DEFINITION"), &json!("invalid_grant"), &json!("project:*:goals"))
    );
    let invalid_add = fails(alp, &["agent", "add", "qa2", "--write", "shared:*:x"], 2);
    assert_eq!(
        (&invalid_add["reason"], &invalid_add["grant"]),
        (&json!("invalid_grant"), &json!("shared:*:x"))
    );
    for args in [
        &["agent", "grant", "worker", "--read", "private:main"][..],
        &["agent", "grant", "worker", "--write", "private:main:journal"],
        &["agent", "add", "qa2", "--read", "shared", "--read", "private:worker"],
    ] {
        let foreign = fails(alp, args, 2);
        assert_eq!(foreign["code"], "USAGE", "{args:?}");
        let message = foreign["message"].as_str().unwrap();
        assert!(
            message.contains("another role's private memory") && message.contains("can never take effect"),
            "{message}"
        );
    }
    let exists = fails(alp, &["agent", "add", "worker"], 7);
    assert_eq!(
        (&exists["kind"], &exists["code"], &exists["id"]),
        (&json!("MemoryEntryAlreadyExistsError"), &json!("ALREADY_EXISTS"), &json!("worker"))
    );
    for args in [
        &["agent", "grant", "ghost", "--read", "shared"][..],
        &["agent", "revoke", "ghost", "--write", "shared"],
        &["agent", "remove", "ghost"],
    ] {
        let missing = fails(alp, args, 2);
        assert_eq!(
            (&missing["code"], &missing["reason"]),
            (&json!("INVALID_AGENT_DEFINITION"), &json!("unknown_role"))
        );
        let message = missing["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{agents_dir}` (from --agents)")), "{message}");
    }
    for args in [
        &["agent", "grant", "broken", "--read", "shared"][..],
        &["agent", "revoke", "broken", "--read", "shared"],
        &["agent", "remove", "broken"],
    ] {
        let broken = fails(alp, args, 2);
        assert_eq!(
            (&broken["reason"], &broken["file"]),
            (&json!("malformed"), &json!(format!("{agents_dir}/broken.yaml")))
        );
        assert!(broken["message"].as_str().unwrap().contains("broken.yaml"), "{broken}");
    }
    let operator = fails(alp, &["--as", "main", "agent", "grant", "worker", "--read", "shared:x"], 2);
    assert_eq!(operator["code"], "USAGE");
    let both = alp(&["--json", "agent", "grant", "worker", "--read", "shared", "--write", "shared"]);
    assert_eq!((both.status, both.error()["code"].as_str()), (2, Some("USAGE")), "{both:?}");
    unchanged("refusals");

    // Nothing to change: exit 0, said so, the definition as it is, no record.
    let held = alp(&["--json", "agent", "grant", "worker", "--read", "project:alp"]);
    assert_eq!(held.status, 0, "{held:?}");
    assert!(held.stderr.contains("holds read grant `project:alp` already"), "{held:?}");
    assert_eq!(held.json()["memory"]["read"], json!(["shared", "project:alp", "private:worker"]));
    let absent = alp(&["--json", "agent", "revoke", "worker", "--write", "shared"]);
    assert_eq!(absent.status, 0, "{absent:?}");
    assert!(absent.stderr.contains("does not hold write grant `shared`"), "{absent:?}");
    let absent = alp(&["agent", "revoke", "worker", "--write", "shared"]);
    assert!(absent.status == 0 && absent.stderr.contains("nothing changed"), "{absent:?}");
    unchanged("no-ops");
    std::fs::remove_file(agents.join("broken.yaml")).unwrap();
}

fn root_alp(env: &Env) -> impl Fn(&[&str]) -> Run + '_ {
    move |args: &[&str]| env.run(args, None)
}

#[test]
fn agent_commands_on_a_root() {
    let env = Env::new();
    agent_commands(&root_alp(&env), &env.agents());
}

#[test]
fn agent_refusals_on_a_root() {
    let env = Env::new();
    agent_refusals(&root_alp(&env), &env.agents());
    // A missing root: AUDIT_UNAVAILABLE (exit 9), and no definition written.
    std::fs::remove_dir_all(env.root()).unwrap();
    let missing = fails(&root_alp(&env), &["agent", "add", "qa"], 9);
    assert_eq!(missing["code"], "AUDIT_UNAVAILABLE");
    assert!(!env.agents().join("qa.yaml").exists());
}

/// A database place: `alp --store URL` with the agents directory of `env` (definitions stay files on each host).
fn on_database<'a>(env: &'a Env, url: &'a str) -> impl Fn(&[&str]) -> Run + 'a {
    move |args: &[&str]| {
        let mut all = vec!["--store", url];
        all.extend_from_slice(args);
        crate::postgres::alp(env, &[], &all)
    }
}

#[test]
fn agent_and_token_commands_on_postgresql() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let alp = on_database(&env, db.url());
    ok(&alp, &["init"]);
    agent_commands(&alp, &env.agents());
    agent_refusals(&alp, &env.agents());
    token_commands(&alp);
    racing_creates_give_a_name_once(&alp);
}

/// Processes that create a token of one name at the same moment: exactly one gets it, every other is
/// `ALREADY_EXISTS` (exit 7), and only the one that got it wrote a record (the lock of token names is held from
/// the check of the name to the store of the token).
fn racing_creates_give_a_name_once(alp: &(impl Fn(&[&str]) -> Run + Sync)) {
    const RACERS: usize = 6;
    for round in 0..4 {
        let name = format!("racing-{round}");
        let before = records(alp).len();
        let start = std::sync::Barrier::new(RACERS);
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..RACERS)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        alp(&["--json", "token", "create", "--role", "worker", "--name", &name])
                    })
                })
                .collect();
            racers.into_iter().map(|racer| racer.join().unwrap()).collect()
        });
        let won: Vec<&Run> = runs.iter().filter(|run| run.status == 0).collect();
        assert_eq!(won.len(), 1, "round {round}: {runs:?}");
        for lost in runs.iter().filter(|run| run.status != 0) {
            assert_eq!(lost.status, 7, "{lost:?}");
            let error = lost.error();
            assert_eq!((&error["code"], &error["id"]), (&json!("ALREADY_EXISTS"), &json!(name)), "{error}");
        }
        let listed = ok(alp, &["token", "list"]);
        let holders: Vec<&Value> = listed["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|token| token["name"] == json!(name) && token["revokedAt"].is_null())
            .collect();
        assert_eq!(holders.len(), 1, "round {round}: {listed}");
        let created = won[0].json();
        assert_eq!(holders[0]["id"], created["id"]);
        let written: Vec<Value> = records(alp).into_iter().skip(before).map(|r| essence(&r)).collect();
        assert_eq!(
            written,
            vec![token_record("token-create", created["id"].as_str().unwrap())],
            "round {round}"
        );
    }
}

#[test]
fn racing_creates_give_a_name_once_on_a_root() {
    let env = Env::new();
    racing_creates_give_a_name_once(&root_alp(&env));
}

/// A hand-written definition with comments, odd spacing and keys the policy does not read: grant and revoke change
/// the one list and no other byte, and revoking what was granted gives the file back byte for byte.
#[test]
fn grant_and_revoke_keep_every_other_byte_of_a_hand_written_definition() {
    let env = Env::new();
    let alp = root_alp(&env);
    let original = "\
# Dev: written by hand. Keep these comments!
role: dev          # the file's name says so too
reportsTo: main
capabilities:      # read by the runtime, not by memory
  tools: [shell, browser]
memory:
  # what dev may read
  read:
    - shared            # the whole team
    - 'project:alp'
  write: [ \"private:dev\" ,  \"project:alp:log:*\" ]   # append-only log
notes: |
  memory:
    read: [not, this, one]
";
    let file = env.agents().join("dev.yaml");
    std::fs::write(&file, original).unwrap();
    ok(&alp, &["agent", "grant", "dev", "--read", "project:beta"]);
    ok(&alp, &["agent", "grant", "dev", "--write", "shared:dev:*"]);
    let granted = original
        .replace("    - 'project:alp'\n", "    - 'project:alp'\n    - \"project:beta\"\n")
        .replace("\"project:alp:log:*\" ]", "\"project:alp:log:*\", \"shared:dev:*\" ]");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), granted);
    let shown = ok(&alp, &["agent", "show", "dev"]);
    assert_eq!(shown["memory"]["read"], json!(["shared", "project:alp", "project:beta"]));
    assert_eq!(shown["memory"]["write"], json!(["private:dev", "project:alp:log:*", "shared:dev:*"]));
    assert_eq!(shown["reportsTo"], "main");
    ok(&alp, &["agent", "revoke", "dev", "--write", "shared:dev:*"]);
    ok(&alp, &["agent", "revoke", "dev", "--read", "project:beta"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "back to the original bytes");
    // Revoking an item in the middle of a block list removes its line only.
    ok(&alp, &["agent", "revoke", "dev", "--read", "shared"]);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        original.replace("    - shared            # the whole team\n", "")
    );

    // A layout the edit does not change in place: refused, naming the file, nothing changed.
    let flow_mapping = "role: odd\nmemory: {read: [shared], write: []}   # one line\n";
    std::fs::write(env.agents().join("odd.yaml"), flow_mapping).unwrap();
    let log = records(&alp);
    let refused = fails(&alp, &["agent", "grant", "odd", "--read", "project:alp"], 2);
    assert_eq!(refused["reason"], "not_editable", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("odd.yaml"), "{refused}");
    assert_eq!(std::fs::read_to_string(env.agents().join("odd.yaml")).unwrap(), flow_mapping);
    assert_eq!(records(&alp), log);
}

/// A running server reads definitions at every call: a grant, a revoke and a removal apply at the next call, with
/// no restart.
#[test]
fn a_running_server_applies_a_grant_at_its_next_call() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "project:beta:plan", "--content", "Beta's plan."]);
    let (_, secret) = crate::serve::token(&env, "worker", &["--name", "worker-agent"]);
    let server = Serve::start(&env);
    let get = || {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_get", "arguments": { "id": "project:beta:plan" } },
        })
        .to_string();
        let (status, _, answer) = server.post(Some(&secret), "", &body);
        (status, serde_json::from_str::<Value>(&answer).unwrap())
    };
    let denied = get().1;
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(denied["result"]["structuredContent"]["error"]["code"], "MEMORY_NOT_GRANTED", "{denied}");
    env.run(&["--json", "agent", "grant", "worker", "--read", "project:beta"], None);
    let allowed = get().1;
    assert_eq!(allowed["result"]["isError"], false, "{allowed}");
    assert_eq!(allowed["result"]["structuredContent"]["content"], "Beta's plan.", "{allowed}");
    env.run(&["--json", "agent", "revoke", "worker", "--read", "project:beta"], None);
    assert_eq!(get().1["result"]["structuredContent"]["error"]["code"], "MEMORY_NOT_GRANTED");
    let removed = env.run(&["--json", "agent", "remove", "worker"], None);
    assert_eq!(removed.status, 0, "{removed:?}");
    assert_eq!(get().0, 401, "a token whose role has no definition is refused");
}

/// Every token command and its record, in one place.
fn token_commands(alp: Alp<'_>) {
    let before = records(alp).len();
    let first = ok(alp, &["token", "create", "--role", "worker", "--name", "laptop", "--expires", "30d"]);
    let first_id = first["id"].as_str().unwrap();
    let log = records(alp);
    let taken = fails(alp, &["token", "create", "--role", "main", "--name", "laptop"], 7);
    assert_eq!((&taken["code"], &taken["id"]), (&json!("ALREADY_EXISTS"), &json!("laptop")));
    assert!(taken["message"].as_str().unwrap().contains(first_id), "{taken}");
    assert_eq!(records(alp), log, "a refused name writes no record");
    let unknown = fails(alp, &["token", "revoke", "no-such-name"], 5);
    assert_eq!(unknown["code"], "NOT_FOUND");
    let unknown = fails(alp, &["token", "rotate", "no-such-name"], 5);
    assert_eq!(unknown["code"], "NOT_FOUND");
    assert_eq!(records(alp), log, "an unknown token writes no record");

    let rotated = ok(alp, &["token", "rotate", "laptop"]);
    let keys: Vec<&str> = rotated.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["revoked", "id", "role", "name", "createdAt", "expiresAt", "token"]);
    assert_eq!(
        (&rotated["revoked"], &rotated["role"], &rotated["name"]),
        (&json!(first_id), &json!("worker"), &json!("laptop"))
    );
    let second_id = rotated["id"].as_str().unwrap();
    assert_ne!(second_id, first_id);
    let millis = |doc: &Value, key: &str| millis_of(doc[key].as_str().unwrap());
    assert_eq!(
        millis(&rotated, "expiresAt") - millis(&rotated, "createdAt"),
        millis(&first, "expiresAt") - millis(&first, "createdAt"),
        "the same lifetime"
    );
    let listed = ok(alp, &["token", "list"]);
    let states: Vec<(&str, bool)> = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "laptop")
        .map(|t| (t["id"].as_str().unwrap(), t["revokedAt"].is_null()))
        .collect();
    assert_eq!(
        states,
        [(first_id, false), (second_id, true)],
        "(id, live): the old one revoked, the new one live"
    );
    // The name now names the new token: a second create under it is refused, a revoke by name revokes it.
    fails(alp, &["token", "create", "--role", "worker", "--name", "laptop"], 7);
    let revoked = ok(alp, &["token", "revoke", "laptop"]);
    assert_eq!(revoked, json!({ "id": second_id, "revoked": true }));
    let refused = fails(alp, &["token", "rotate", second_id], 2);
    assert_eq!(refused["code"], "USAGE");
    // Free again once every holder is revoked.
    let third = ok(alp, &["token", "create", "--role", "main", "--name", "laptop", "--expires", "never"]);
    let third_id = third["id"].as_str().unwrap();
    let rotated_never = ok(alp, &["token", "rotate", third_id]);
    assert_eq!(rotated_never["expiresAt"], Value::Null, "never stays never");
    let fourth_id = rotated_never["id"].as_str().unwrap();

    let written: Vec<Value> = records(alp)[before..].iter().map(essence).collect();
    assert_eq!(
        written,
        [
            token_record("token-create", first_id),
            token_record("token-create", second_id),
            token_record("token-revoke", first_id),
            token_record("token-revoke", second_id),
            token_record("token-create", third_id),
            token_record("token-create", fourth_id),
            token_record("token-revoke", third_id),
        ]
    );
}

/// Milliseconds since the epoch of an RFC 3339 UTC time with milliseconds (`2026-12-05T02:36:30.461Z`).
fn millis_of(text: &str) -> i64 {
    alp_memory::memory_entry::Timestamp::parse(text).unwrap().unix_millis()
}

#[test]
fn token_commands_on_a_root() {
    let env = Env::new();
    token_commands(&root_alp(&env));
}

/// `TOKEN=$(alp token create …)` and `TOKEN=$(alp token rotate …)` capture exactly the token, which the server
/// accepts.
#[test]
fn token_create_and_rotate_capture_in_bash() {
    let env = Env::new();
    let script = format!(
        "set -e\nalp() {{ '{}' --root '{}' --agents '{}' \"$@\"; }}\n\
         TOKEN=$(alp token create --role worker --name ci)\nprintf '%s\\n' \"$TOKEN\"\n\
         NEW=$(alp token rotate ci)\nprintf '%s\\n' \"$NEW\"\n",
        env!("CARGO_BIN_EXE_alp"),
        env.root().display(),
        env.agents().display()
    );
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("HOME", env.home())
        .current_dir(env.dir.path())
        .output()
        .unwrap();
    let run = Run::of(output);
    assert_eq!(run.status, 0, "{run:?}");
    let tokens: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(tokens.len(), 2, "{run:?}");
    let shape = |t: &str| {
        t.len() == 60
            && t.starts_with("alp_")
            && t[4..16].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && t.as_bytes()[16] == b'_'
            && t[17..].bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    assert!(tokens.iter().all(|t| shape(t)), "{tokens:?}");
    assert!(run.stderr.contains("shown only this once"), "the note goes to stderr: {run:?}");
    let server = Serve::start(&env);
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }).to_string();
    assert_eq!(server.post(Some(tokens[0]), "", &list).0, 401, "the rotated token is revoked");
    assert_eq!(server.post(Some(tokens[1]), "", &list).0, 200, "its replacement works");
}

/// One change of the model run of [`definitions_follow_a_reference_model`].
#[derive(Debug, Clone)]
enum Op {
    Add { role: &'static str, grants: Option<(Vec<&'static str>, Vec<&'static str>)> },
    Grant { role: &'static str, write: bool, grant: &'static str },
    Revoke { role: &'static str, write: bool, grant: &'static str },
    Remove { role: &'static str },
}

const ROLES: [&str; 3] = ["qa", "dev", "ops"];
const GRANTS: [&str; 6] =
    ["shared", "project:alp", "project:*", "shared:team:*", "private:qa", "private:dev"];

fn op() -> impl Strategy<Value = Op> {
    let role = prop::sample::select(ROLES.to_vec());
    let grant = prop::sample::select(GRANTS.to_vec());
    let list = prop::collection::vec(prop::sample::select(GRANTS.to_vec()), 0..3);
    prop_oneof![
        (role.clone(), prop::option::of((list.clone(), list)))
            .prop_map(|(role, grants)| Op::Add { role, grants }),
        (role.clone(), any::<bool>(), grant.clone()).prop_map(|(role, write, grant)| Op::Grant {
            role,
            write,
            grant
        }),
        (role.clone(), any::<bool>(), grant).prop_map(|(role, write, grant)| Op::Revoke {
            role,
            write,
            grant
        }),
        role.prop_map(|role| Op::Remove { role }),
    ]
}

/// The reference: each role's read and write lists, in order, without repeats.
type Model = std::collections::BTreeMap<&'static str, [Vec<String>; 2]>;

fn foreign(role: &str, grant: &str) -> bool {
    grant.strip_prefix("private:").is_some_and(|owner| owner != role)
}

/// What the model says `op` does: the exit status and whether a record is written.
fn apply(model: &mut Model, op: &Op) -> (i32, bool) {
    match op {
        Op::Add { role, grants } => {
            // The command line's grants are checked before the directory is (USAGE before ALREADY_EXISTS).
            if let Some((read, write)) = grants
                && read.iter().chain(write).any(|g| foreign(role, g))
            {
                return (2, false);
            }
            if model.contains_key(role) {
                return (7, false);
            }
            let lists = match grants {
                None => {
                    let defaults =
                        vec!["shared".to_owned(), "project:*".to_owned(), format!("private:{role}")];
                    [defaults.clone(), defaults]
                }
                Some((read, write)) => {
                    let unique = |list: &[&str]| {
                        let mut out: Vec<String> = Vec::new();
                        for g in list {
                            if !out.iter().any(|o| o == g) {
                                out.push((*g).to_owned());
                            }
                        }
                        out
                    };
                    [unique(read), unique(write)]
                }
            };
            model.insert(role, lists);
            (0, true)
        }
        Op::Grant { role, write, grant } => {
            if foreign(role, grant) {
                return (2, false);
            }
            let Some(lists) = model.get_mut(role) else { return (2, false) };
            let list = &mut lists[usize::from(*write)];
            if list.iter().any(|g| g == grant) {
                return (0, false);
            }
            list.push((*grant).to_owned());
            (0, true)
        }
        Op::Revoke { role, write, grant } => {
            let Some(lists) = model.get_mut(role) else { return (2, false) };
            let list = &mut lists[usize::from(*write)];
            let had = list.len();
            list.retain(|g| g != grant);
            (0, list.len() != had)
        }
        Op::Remove { role } => match model.remove(role) {
            Some(_) => (0, true),
            None => (2, false),
        },
    }
}

fn args(op: &Op) -> Vec<String> {
    let flag = |write: bool| if write { "--write" } else { "--read" }.to_owned();
    match op {
        Op::Add { role, grants } => {
            let mut args = vec!["agent".to_owned(), "add".to_owned(), (*role).to_owned()];
            if let Some((read, write)) = grants {
                // An empty pair still says "exactly these": one grant of each kind at least, so the flags appear.
                for g in read {
                    args.extend(["--read".to_owned(), (*g).to_owned()]);
                }
                for g in write {
                    args.extend(["--write".to_owned(), (*g).to_owned()]);
                }
            }
            args
        }
        Op::Grant { role, write, grant } => {
            vec!["agent".into(), "grant".into(), (*role).into(), flag(*write), (*grant).into()]
        }
        Op::Revoke { role, write, grant } => {
            vec!["agent".into(), "revoke".into(), (*role).into(), flag(*write), (*grant).into()]
        }
        Op::Remove { role } => vec!["agent".into(), "remove".into(), (*role).into()],
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any sequence of add, grant, revoke and remove through the binary leaves the definitions equal to the model:
    /// each command's exit status and record as the model says, `alp agent show` agreeing for every role, and one
    /// file per role the model holds.
    #[test]
    fn definitions_follow_a_reference_model(ops in prop::collection::vec(op(), 1..10)) {
        let env = Env::new();
        for role in ["main", "reviewer", "worker"] {
            std::fs::remove_file(env.agents().join(format!("{role}.yaml"))).unwrap();
        }
        let alp = root_alp(&env);
        let mut model = Model::new();
        let mut records = 0;
        for op in &ops {
            // An Add with two empty lists is the same command as one with no flags: the defaults.
            let op = match op {
                Op::Add { role, grants: Some((read, write)) } if read.is_empty() && write.is_empty() => {
                    Op::Add { role, grants: None }
                }
                other => other.clone(),
            };
            let (status, recorded) = apply(&mut model, &op);
            let mut all = vec!["--json".to_owned()];
            all.extend(args(&op));
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            let run = alp(&all);
            prop_assert_eq!(run.status, status, "{:?}: {:?}", op, run);
            records += usize::from(recorded);
            prop_assert_eq!(env.audit_lines().len(), records, "{:?}", op);
        }
        let mut files: Vec<String> = std::fs::read_dir(env.agents())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        let expected: Vec<String> = model.keys().map(|role| format!("{role}.yaml")).collect();
        prop_assert_eq!(files, expected);
        for (role, [read, write]) in &model {
            let shown = ok(&alp, &["agent", "show", role]);
            prop_assert_eq!(&shown["memory"], &json!({ "read": read, "write": write }), "{}", role);
        }
    }
}

/// Changes to one role from several processes at once all land: the agents directory is locked while each reads and
/// writes the definition, so none is lost.
#[test]
fn concurrent_grants_to_one_role_all_land() {
    let env = Env::new();
    let grants: Vec<String> = (0..6).map(|n| format!("shared:team{n}")).collect();
    std::thread::scope(|scope| {
        for grant in &grants {
            let env = &env;
            scope.spawn(move || {
                let run = env.run(&["--json", "agent", "grant", "worker", "--read", grant], None);
                assert_eq!(run.status, 0, "{run:?}");
            });
        }
    });
    let shown = ok(&root_alp(&env), &["agent", "show", "worker"]);
    let read: Vec<&str> =
        shown["memory"]["read"].as_array().unwrap().iter().map(|g| g.as_str().unwrap()).collect();
    assert_eq!(read.len(), 3 + grants.len(), "{read:?}");
    for grant in &grants {
        assert!(read.contains(&grant.as_str()), "{grant} in {read:?}");
    }
    assert_eq!(env.audit_lines().len(), grants.len());
}

/// A definition that is a symbolic link is never followed: grant and remove refuse it (its target unchanged), and
/// add does not write over it.
#[test]
fn a_symlinked_definition_is_neither_followed_nor_replaced() {
    let env = Env::new();
    let outside = env.dir.path().join("elsewhere.yaml");
    let text = "role: linked\nmemory:\n  read: [shared]\n";
    std::fs::write(&outside, text).unwrap();
    std::os::unix::fs::symlink(&outside, env.agents().join("linked.yaml")).unwrap();
    let alp = root_alp(&env);
    for args in [&["agent", "grant", "linked", "--read", "project:alp"][..], &["agent", "remove", "linked"]] {
        let refused = fails(&alp, args, 2);
        assert_eq!(refused["reason"], "unreadable", "{refused}");
        assert!(refused["message"].as_str().unwrap().contains("symbolic link"), "{refused}");
    }
    assert_eq!(fails(&alp, &["agent", "add", "linked"], 7)["code"], "ALREADY_EXISTS");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), text);
    assert!(std::fs::symlink_metadata(env.agents().join("linked.yaml")).unwrap().file_type().is_symlink());
    assert!(env.audit_lines().is_empty());
}
