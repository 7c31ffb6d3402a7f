//! The operator's audit trail end to end (`docs/CLI.md`, "Reading the audit log", "Archiving"): `alp audit show` and
//! its filters against records written by real `alp` calls (reads carry `door` and `shown`, calls through `alp serve`
//! carry `via`), the table on a terminal, `alp audit disclosed`, `alp audit archive` and `alp audit verify --from`
//! and `--file` on its segments, on a root and on a database; and every bad input refused with `USAGE` (or a storage
//! error for a missing `--file`) and nothing changed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::cli::{Env, Run};
use crate::serve::{Serve, token};

const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Runs `alp ARGS…` in one place (the options that name it are added).
type Alp<'a> = &'a dyn Fn(&[&str]) -> Run;

/// Calls that write every kind of record: creates, reads of each door (with receipts), denials, an invalid ID, an
/// update and a read of the new version, and an operator's token.
fn seed(alp: Alp<'_>) {
    let ok = |role: &str, args: &[&str]| {
        let mut all = vec!["--json", "--as", role];
        all.extend_from_slice(args);
        let run = alp(&all);
        assert_eq!(run.status, 0, "{args:?}: {run:?}");
    };
    let fails = |role: &str, args: &[&str], status: i32| {
        let mut all = vec!["--json", "--as", role];
        all.extend_from_slice(args);
        let run = alp(&all);
        assert_eq!(run.status, status, "{args:?}: {run:?}");
    };
    ok("main", &["memory", "create", "shared:team", "--content", "Team notes."]);
    ok("main", &["memory", "create", "project:alp:goals", "--content", "Ship the audit trail."]);
    ok("main", &["memory", "create", "project:alpha:x", "--content", "Another project."]);
    ok("worker", &["memory", "get", "shared:team"]);
    ok("worker", &["memory", "search", "ship"]);
    ok("worker", &["memory", "list", "project:alp"]);
    ok("worker", &["memory", "context", "team", "--budget", "500"]);
    fails("worker", &["memory", "get", "private:main:plans"], 4);
    fails("worker", &["memory", "get", "project:alpha:x"], 4);
    fails("main", &["memory", "get", "shared:.."], 3);
    ok(
        "main",
        &["memory", "update", "shared:team", "--expected-version", "1", "--content", "Team notes, v2."],
    );
    ok("main", &["memory", "get", "shared:team"]);
    let run = alp(&["--json", "token", "create", "--role", "worker", "--name", "seed"]);
    assert_eq!(run.status, 0, "{run:?}");
}

/// The records `alp audit show` prints (piped: as stored), and its output.
fn show(alp: Alp<'_>, args: &[&str]) -> String {
    let mut all = vec!["audit", "show"];
    all.extend_from_slice(args);
    let run = alp(&all);
    assert_eq!(run.status, 0, "{args:?}: {run:?}");
    run.stdout
}

/// Each stored line (with its `\n`) and its record.
fn records(log: &str) -> Vec<(String, Value)> {
    log.lines().map(|line| (format!("{line}\n"), serde_json::from_str(line).unwrap())).collect()
}

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

/// How many of the matching records a case keeps.
#[derive(Clone, Copy)]
enum Keep {
    All,
    First(usize),
    Last(usize),
}

/// Every filter of `alp audit show`, alone and combined, against a reference model over the records: the output is
/// the matching stored lines, byte for byte, in order.
fn check_filters(alp: Alp<'_>, log: &str) {
    let all = records(log);
    assert!(all.len() >= 13, "{log}");
    let at = |seq: usize| text(&all[seq - 1].1, "timestamp");
    let (from, to) = (at(4), at(8));
    let shows = |record: &Value, id: &str| {
        record["shown"].as_array().is_some_and(|shown| {
            shown.iter().any(|entry| entry.as_str().unwrap().rsplit_once('@').unwrap().0 == id)
        })
    };
    let under = |record: &Value, prefix: &str| {
        let id = text(record, "id");
        id == prefix || id.starts_with(&format!("{prefix}:"))
    };
    type Case<'c> = (Vec<String>, Box<dyn Fn(&Value) -> bool + 'c>, Keep);
    let case = |args: &[&str], keep: Box<dyn Fn(&Value) -> bool>, window: Keep| -> Case<'static> {
        (args.iter().map(|a| (*a).to_owned()).collect(), keep, window)
    };
    let every = || -> Box<dyn Fn(&Value) -> bool> { Box::new(|_| true) };
    let cases: Vec<Case<'_>> = vec![
        case(&[], every(), Keep::All),
        case(&["--actor", "worker"], Box::new(|r| r["actor"] == "worker"), Keep::All),
        case(&["--actor", ""], Box::new(|r| r["actor"] == ""), Keep::All),
        case(&["--door", "get"], Box::new(|r| r["door"] == "get"), Keep::All),
        case(&["--door", "search"], Box::new(|r| r["door"] == "search"), Keep::All),
        case(&["--door", "context"], Box::new(|r| r["door"] == "context"), Keep::All),
        case(&["--door", "list"], Box::new(|r| r["door"] == "list"), Keep::All),
        case(&["--door", "token-create"], Box::new(|r| r["door"] == "token-create"), Keep::All),
        case(&["--outcome", "denied"], Box::new(|r| r["outcome"] == "denied"), Keep::All),
        case(&["--outcome", "error"], Box::new(|r| r["outcome"] == "error"), Keep::All),
        case(&["--outcome", "allowed"], Box::new(|r| r["outcome"] == "allowed"), Keep::All),
        case(&["--code", "MEMORY_NOT_GRANTED"], Box::new(|r| r["code"] == "MEMORY_NOT_GRANTED"), Keep::All),
        case(&["--code", "INVALID_MEMORY_ID"], Box::new(|r| r["code"] == "INVALID_MEMORY_ID"), Keep::All),
        case(&["--id", "project:alp"], Box::new(move |r| under(r, "project:alp")), Keep::All),
        case(&["--id", "shared"], Box::new(move |r| under(r, "shared")), Keep::All),
        case(&["--disclosed", "shared:team"], Box::new(move |r| shows(r, "shared:team")), Keep::All),
        case(
            &["--disclosed", "project:alp:goals"],
            Box::new(move |r| shows(r, "project:alp:goals")),
            Keep::All,
        ),
        case(&["--since", "5"], Box::new(|r| r["seq"].as_u64().unwrap() >= 5), Keep::All),
        case(&["--limit", "3"], every(), Keep::First(3)),
        case(
            &["--since", "5", "--limit", "2"],
            Box::new(|r| r["seq"].as_u64().unwrap() >= 5),
            Keep::First(2),
        ),
        case(&["--tail", "2"], every(), Keep::Last(2)),
        case(&["--tail", "3", "--actor", "worker"], Box::new(|r| r["actor"] == "worker"), Keep::Last(3)),
        case(&["--tail", "1000"], every(), Keep::All),
        case(
            &["--actor", "worker", "--door", "get", "--outcome", "denied"],
            Box::new(|r| r["actor"] == "worker" && r["door"] == "get" && r["outcome"] == "denied"),
            Keep::All,
        ),
        case(
            &["--actor", "main", "--disclosed", "shared:team"],
            Box::new(move |r| r["actor"] == "main" && shows(r, "shared:team")),
            Keep::All,
        ),
        case(&["--from", "1h"], every(), Keep::All),
        case(&["--to", "2000-01-01T00:00:00+02:00"], Box::new(|_| false), Keep::All),
        case(&["--to", "1h"], Box::new(|_| false), Keep::All),
        case(&["--from", "2000-01-01T00:00:00Z", "--to", "9999-12-31T23:59:59Z"], every(), Keep::All),
        case(&["--via", "tok_none"], Box::new(|_| false), Keep::All),
        case(&["--code", "STORAGE_ERROR"], Box::new(|_| false), Keep::All),
    ];
    let mut cases = cases;
    // Inclusive bounds, as stored (RFC 3339 UTC with milliseconds, which orders as text).
    let (f, t) = (from.clone(), to.clone());
    cases.push((
        vec!["--from".into(), from.clone(), "--to".into(), to.clone()],
        Box::new(move |r| text(r, "timestamp") >= f && text(r, "timestamp") <= t),
        Keep::All,
    ));
    let f = from.clone();
    cases.push((
        vec!["--from".into(), from.clone()],
        Box::new(move |r| text(r, "timestamp") >= f),
        Keep::All,
    ));
    for (args, keep, window) in &cases {
        let matching: Vec<&String> = all.iter().filter(|(_, r)| keep(r)).map(|(line, _)| line).collect();
        let kept: Vec<&String> = match *window {
            Keep::All => matching,
            Keep::First(n) => matching.into_iter().take(n).collect(),
            Keep::Last(n) => {
                let skip = matching.len().saturating_sub(n);
                matching.into_iter().skip(skip).collect()
            }
        };
        let expected: String = kept.into_iter().map(String::as_str).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(show(alp, &args), expected, "alp audit show {args:?}");
        // --json prints the same lines.
        let mut json = args.clone();
        json.push("--json");
        assert_eq!(show(alp, &json), expected, "alp audit show {json:?}");
    }
}

/// Each refused command line: `USAGE` (exit 2) naming what is wrong, nothing on stdout, and the log unchanged.
fn check_refused(alp: Alp<'_>, log: &dyn Fn() -> String, commands: &[(&[&str], &str)]) {
    let before = log();
    for (args, says) in commands {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = alp(&all);
        assert_eq!(run.status, 2, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
        let error = run.error();
        assert_eq!(error["code"], "USAGE", "{args:?}: {run:?}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(says), "{args:?}: `{says}` in {message}");
        assert_eq!(log(), before, "{args:?} changed the log");
    }
}

/// The bad inputs of `show` and `verify`, in any place.
fn check_bad_show_and_verify(alp: Alp<'_>, log: &dyn Fn() -> String) {
    check_refused(
        alp,
        log,
        &[
            (&["audit", "show", "--tail", "0"], "--tail takes a number of records of at least 1"),
            (
                &["audit", "show", "--door", "mcp:memory"],
                "`mcp:memory` is not a door; one of search, get, create, update, delete, context, list, history, \
                 restore, export, import, prune, view, redact, token-create, token-revoke, archive, agent-add",
            ),
            (&["audit", "show", "--outcome", "maybe"], "one of allowed, denied, error"),
            (&["audit", "show", "--code", "memory_not_granted"], "codes are written in capitals"),
            (&["audit", "show", "--from", "yesterday"], "neither an RFC 3339 time"),
            (
                &["audit", "show", "--from", "2026-03-02T00:00:00Z", "--to", "2026-03-01T00:00:00Z"],
                "is after --to",
            ),
            (&["audit", "show", "--from", "1h", "--to", "2h"], "is after --to"),
            (&["audit", "show", "--tail", "2", "--limit", "2"], "cannot be used with"),
            (&["audit", "show", "--archive", "/nonexistent/archive"], "--archive `/nonexistent/archive`"),
            (&["audit", "disclosed", "shared:team", "--archive", "/nonexistent/archive"], "--archive"),
            (&["audit", "verify", "--from", "3:xyz"], "is not SEQ:HASH"),
            (&["audit", "verify", "--from", "three"], "is not SEQ:HASH"),
            (&["audit", "verify", "--from", &format!("03:{GENESIS}")], "is not SEQ:HASH"),
        ],
    );
}

/// The log file of a root, as bytes.
fn log_of(env: &Env) -> String {
    std::fs::read_to_string(env.root().join("audit.jsonl")).unwrap_or_default()
}

/// A `tools/call` through `alp serve` with a bearer token: its JSON-RPC result.
fn call(server: &Serve, secret: &str, tool: &str, arguments: Value) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": tool, "arguments": arguments }
    })
    .to_string();
    let (status, _, answer) = server.post(Some(secret), "", &body);
    assert_eq!(status, 200, "{answer}");
    let result = serde_json::from_str::<Value>(&answer).unwrap()["result"].clone();
    assert_eq!(result["isError"], false, "{result}");
    result
}

#[test]
fn show_filters_records_of_real_calls_and_prints_them_as_stored() {
    let env = Env::new();
    let alp = |args: &[&str]| env.run(args, None);
    seed(&alp);
    let log = log_of(&env);
    // The reads carry their receipts.
    let by_seq = records(&log);
    assert_eq!(by_seq[3].1["shown"], json!(["shared:team@1"]), "{log}");
    assert_eq!(by_seq[11].1["shown"], json!(["shared:team@2"]), "{log}");
    assert_eq!(by_seq[6].1["door"], "context");
    check_filters(&alp, &log);
    // A filter that matches nothing prints nothing, and exits 0.
    assert_eq!(show(&alp, &["--actor", "nobody"]), "");
    // Piped without --json, the note on what a record means goes to stderr; with --json nothing does.
    let run = env.run(&["audit", "show", "--tail", "1"], None);
    assert!(run.stderr.starts_with("note: each record is the authorization outcome"), "{run:?}");
    assert_eq!(env.run(&["--json", "audit", "show", "--tail", "1"], None).stderr, "");
    assert_eq!(log_of(&env), log, "reading the log changes nothing");
}

/// `show --tail N` reads the live log back from its end: a line that is not a record, older than the answer, is not
/// read (`verify` finds it); one among the lines read is `AUDIT_UNAVAILABLE` naming its line, as a forward read's is.
#[test]
fn show_tail_reads_the_live_log_back_from_its_end() {
    let env = Env::new();
    let alp = |args: &[&str]| env.run(args, None);
    seed(&alp);
    let path = env.root().join("audit.jsonl");
    let log = log_of(&env);
    let lines: Vec<String> = records(&log).into_iter().map(|(line, _)| line).collect();
    assert!(lines.len() > 6, "{log}");
    let mut broken = lines[0].clone();
    broken.push_str("not a record\n");
    broken.extend(lines[1..].iter().cloned());
    std::fs::write(&path, &broken).unwrap();
    // The last records, exactly as stored, whatever lies before them.
    let last_three = lines[lines.len() - 3..].concat();
    assert_eq!(show(&alp, &["--tail", "3"]), last_three);
    let worker_last = records(&log).into_iter().rfind(|(_, r)| r["actor"] == "worker").unwrap().0;
    assert_eq!(show(&alp, &["--tail", "1", "--actor", "worker"]), worker_last);
    // A read that reaches the line names it: from the start, or back far enough.
    for args in [&["--limit", "3"][..], &["--tail", "1000"], &[]] {
        let mut all = vec!["--json", "audit", "show"];
        all.extend_from_slice(args);
        let run = alp(&all);
        assert_eq!(run.status, 9, "{args:?}: {run:?}");
        assert_eq!(run.error()["code"], "AUDIT_UNAVAILABLE", "{run:?}");
        let message = run.error()["message"].as_str().unwrap().to_owned();
        assert!(message.contains(": line 2 of audit log `"), "{message}");
    }
    // `verify` reads every line.
    let run = alp(&["--json", "audit", "verify"]);
    assert_eq!(run.status, 1, "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((&report["ok"], &report["firstBadSeq"]), (&json!(false), &json!(2)), "{run:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken, "reading the log changes nothing");
}

#[test]
fn bad_filters_and_anchors_are_usage_errors_and_change_nothing() {
    let env = Env::new();
    let alp = |args: &[&str]| env.run(args, None);
    seed(&alp);
    check_bad_show_and_verify(&alp, &|| log_of(&env));
    // `--file` naming nothing is an error naming it (exit 1), never an empty log that verifies.
    let missing = env.dir.path().join("no-such-audit.jsonl");
    let run = env.run(&["--json", "audit", "verify", "--file", missing.to_str().unwrap()], None);
    assert_eq!(run.status, 1, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    let error = run.error();
    assert_eq!(error["code"], "STORAGE_ERROR", "{run:?}");
    assert!(error["message"].as_str().unwrap().contains(missing.to_str().unwrap()), "{run:?}");
    // Without a root at all, too.
    let mut bare = env.command();
    bare.args(["--json", "audit", "verify", "--file"]).arg(&missing).stdin(Stdio::null());
    let run = Run::of(bare.output().unwrap());
    assert_eq!((run.status, run.error()["code"].as_str()), (1, Some("STORAGE_ERROR")), "{run:?}");
}

/// The table of `alp audit show` on a terminal (a pseudo terminal from `script`): newest last, local time, the
/// outcome or code, `via`, the number of entries shown (listed with --wide), the last 50 by default.
#[test]
fn show_on_a_terminal_is_a_table_of_the_last_fifty() {
    let env = Env::new();
    let alp = |args: &[&str]| env.run(args, None);
    seed(&alp);
    let on_terminal = |args: &str, tz: &str| {
        let line = format!(
            "{} --root {} --agents {} audit show {args}",
            env!("CARGO_BIN_EXE_alp"),
            env.root().display(),
            env.agents().display()
        );
        let output = testkit::process::isolated("timeout", &env.home())
            .args(["20", "script", "-qec", &line, "/dev/null"])
            .env("TZ", tz)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap().replace("\r\n", "\n")
    };
    let log = records(&log_of(&env));
    let table = on_terminal("", "UTC");
    let header = table.lines().find(|l| l.contains("seq")).unwrap_or_else(|| panic!("{table}"));
    for column in ["seq", "time (local)", "actor", "door", "id", "outcome", "via", "shown"] {
        assert!(header.contains(column), "{header}");
    }
    let row = |seq: u64| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{seq} ")))
            .unwrap_or_else(|| panic!("no row {seq}: {table}"))
            .to_owned()
    };
    let stamp = text(&log[3].1, "timestamp");
    let local = format!("{} {}", &stamp[..10], &stamp[11..19]);
    let get = row(4);
    for cell in [local.as_str(), "worker", "get", "shared:team", "allowed"] {
        assert!(get.contains(cell), "`{cell}` in {get}");
    }
    assert!(row(8).contains("PRIVATE_MEMORY_DENIED") && row(10).contains("INVALID_MEMORY_ID"), "{table}");
    assert!(row(13).contains("(operator)") && row(13).contains("token-create"), "{table}");
    assert!(table.contains("13 records shown\n"), "{table}");
    // In another time zone the same instant reads 9 hours later (a POSIX TZ string needs no zone files).
    let tokyo = on_terminal("--tail 1", "JST-9");
    let stamp = text(&log[12].1, "timestamp");
    let hour = (stamp[11..13].parse::<u32>().unwrap() + 9) % 24;
    assert!(tokyo.contains(&format!(" {hour:02}:{}", &stamp[14..19])), "{stamp} in {tokyo}");
    // --wide lists the entries each read returned; without it, a count.
    let wide = on_terminal("--wide --door context", "UTC");
    let context = log[6].1["shown"].as_array().unwrap();
    let listed: Vec<&str> = context.iter().map(|e| e.as_str().unwrap()).collect();
    assert!(wide.contains(&listed.join(" ")), "{listed:?} in {wide}");
    let narrow = on_terminal("--door context", "UTC");
    assert!(narrow.lines().any(|l| l.ends_with(&format!("  {}", listed.len()))), "{narrow}");
    // Filters apply on a terminal too; none matching says so.
    assert!(on_terminal("--actor nobody", "UTC").contains("no record matches"));
    // The last 50 by default, newest last, and the closing line says how to see others.
    for _ in 0..40 {
        env.ok("worker", &["memory", "get", "shared:team"]);
    }
    let table = on_terminal("", "UTC");
    let rows: Vec<&str> =
        table.lines().filter(|l| l.contains("  worker  ") || l.contains("  main  ")).collect();
    assert_eq!(rows.len(), 50 - 1, "all but the token's record: {table}");
    assert!(table.contains("\n50 records shown (the last 50 that match; --tail N or --limit N"), "{table}");
    let seqs: Vec<u64> = table
        .lines()
        .filter(|l| !l.contains("records shown"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(seqs, (4..=53).collect::<Vec<u64>>(), "{table}");
    // --tail and --limit choose others.
    assert!(on_terminal("--limit 2", "UTC").contains("\n2 records shown\n"));
    assert!(on_terminal("--tail 60", "UTC").contains("\n53 records shown\n"));
}

/// `alp audit disclosed ID`: every role that received the entry, how often, when, which versions, through which
/// tokens; `"roles":[]` when nobody did. A call through `alp serve` carries `via`.
#[test]
fn disclosed_names_each_role_its_versions_and_tokens() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:team", "--content", "Team notes."]);
    env.ok("worker", &["memory", "get", "shared:team"]);
    env.ok("main", &["memory", "update", "shared:team", "--expected-version", "1", "--content", "Team v2."]);
    env.ok("main", &["memory", "get", "shared:team"]);
    let (token_id, secret) = token(&env, "worker", &["--name", "agent"]);
    let server = Serve::start(&env);
    call(&server, &secret, "memory_get", json!({ "id": "shared:team" }));
    call(&server, &secret, "memory_search", json!({ "query": "team" }));
    drop(server);
    env.ok("worker", &["memory", "context", "team", "--budget", "500"]);
    env.ok("reviewer", &["memory", "list"]);

    let log = records(&log_of(&env));
    let stamps = |role: &str| -> Vec<String> {
        log.iter()
            .filter(|(_, r)| {
                r["actor"] == role
                    && r["shown"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|e| e.as_str().unwrap().starts_with("shared:team@")))
            })
            .map(|(_, r)| text(r, "timestamp"))
            .collect()
    };
    let (main, worker) = (stamps("main"), stamps("worker"));
    assert_eq!((main.len(), worker.len()), (1, 4), "{log:?}");
    let run = env.run(&["--json", "audit", "disclosed", "shared:team"], None);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "{}\n",
            json!({
                "id": "shared:team",
                "roles": [
                    { "role": "main", "records": 1, "first": main[0], "last": main[0], "versions": [2], "via": [] },
                    {
                        "role": "worker", "records": 4, "first": worker[0], "last": worker[3], "versions": [1, 2],
                        "via": [token_id],
                    },
                ],
            })
        )
    );
    // The same records `show --disclosed` prints; the token's calls are those `--via` prints.
    let disclosed = show(&|args| env.run(args, None), &["--disclosed", "shared:team"]);
    assert_eq!(disclosed.lines().count(), 5);
    let via = records(&show(&|args| env.run(args, None), &["--via", &token_id]));
    assert_eq!(via.len(), 2, "{via:?}");
    for (_, record) in &via {
        assert_eq!(
            (record["actor"].as_str(), record["via"].as_str()),
            (Some("worker"), Some(token_id.as_str()))
        );
    }
    assert_eq!(via[0].1["door"], "get");
    // Nobody received it: an empty list, exit 0.
    let nobody = env.run(&["--json", "audit", "disclosed", "private:main:plans"], None);
    assert_eq!((nobody.status, nobody.json()), (0, json!({ "id": "private:main:plans", "roles": [] })));
    // For people: one line per role.
    let people = env.run(&["audit", "disclosed", "shared:team"], None);
    assert_eq!(people.status, 0, "{people:?}");
    assert!(
        people.stdout.starts_with("`shared:team` was disclosed to 2 roles in the live log"),
        "{people:?}"
    );
    assert!(people.stdout.contains("\n  main: 1 record, "), "{people:?}");
    assert!(people.stdout.contains(", version 2\n"), "{people:?}");
    assert!(people.stdout.contains("\n  worker: 4 records, "), "{people:?}");
    assert!(people.stdout.contains(&format!(", versions 1, 2, via {token_id}\n")), "{people:?}");
    let people = env.run(&["audit", "disclosed", "shared:nothing"], None);
    assert_eq!(people.stdout, "`shared:nothing` was disclosed to no role in the live log\n");
}

/// Archive, verify from the archive's last record, verify the segment alone, read both with --archive.
fn check_archive(alp: Alp<'_>, live: &dyn Fn() -> String, dir: &Path) {
    let original = live();
    let lines = records(&original);
    let count = lines.len() as u64;
    let hash = |seq: usize| text(&lines[seq - 1].1, "hash");
    let dir_arg = dir.to_str().unwrap();
    let ok = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = alp(&all);
        assert_eq!(run.status, 0, "{args:?}: {run:?}");
        run.json()
    };
    // The directory is created, 0700; the segment is 0400 and holds the first three records byte for byte.
    let archived = ok(&["audit", "archive", "--to", dir_arg, "--before", "4"]);
    let canonical = dir.canonicalize().unwrap();
    let segment = canonical.join("audit-1-3.jsonl");
    assert_eq!(
        archived,
        json!({ "archived": 3, "file": segment.to_str().unwrap(), "from": { "seq": 3, "hash": hash(3) } })
    );
    assert_eq!(std::fs::metadata(dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&segment).unwrap().permissions().mode() & 0o777, 0o400);
    let first_three: String = lines[..3].iter().map(|(line, _)| line.as_str()).collect();
    assert_eq!(std::fs::read_to_string(&segment).unwrap(), first_three);
    // The live log starts at seq 4, linked to the segment's last record, and ends with the archive's record.
    let now = live();
    let kept = records(&now);
    assert_eq!(kept[0].0, lines[3].0);
    assert_eq!(kept[0].1["prevHash"], hash(3));
    let record = &kept.last().unwrap().1;
    assert_eq!(
        (
            record["actor"].as_str(),
            record["operation"].as_str(),
            record["door"].as_str(),
            record["id"].as_str()
        ),
        (Some(""), Some("archive"), Some("archive"), Some("audit-1-3.jsonl"))
    );
    assert_eq!(kept.len() as u64, count - 3 + 1);

    // Verify: from the last archived record; --from that record passes, any other anchor fails.
    let verified = ok(&["audit", "verify"]);
    assert_eq!(
        verified,
        json!({ "ok": true, "records": count - 2, "lastHash": text(record, "hash"), "from": { "seq": 3, "hash": hash(3) } })
    );
    let anchor = format!("3:{}", hash(3));
    assert_eq!(ok(&["audit", "verify", "--from", &anchor])["ok"], true);
    for wrong in [format!("2:{}", hash(2)), format!("3:{}", hash(2)), format!("0:{GENESIS}")] {
        let run = alp(&["--json", "audit", "verify", "--from", &wrong]);
        assert_eq!(run.status, 1, "{wrong}: {run:?}");
        assert_eq!(
            run.json(),
            json!({ "ok": false, "firstBadSeq": 4, "reason": "not_continued" }),
            "{wrong}"
        );
    }
    // The segment verifies alone, from the start of the chain; the live log continues from its last line.
    let segment_arg = segment.to_str().unwrap();
    assert_eq!(
        ok(&["audit", "verify", "--file", segment_arg]),
        json!({ "ok": true, "records": 3, "lastHash": hash(3), "from": { "seq": 0, "hash": GENESIS } })
    );
    assert_eq!(
        ok(&["audit", "verify", "--file", segment_arg, "--from", &format!("0:{GENESIS}")])["ok"],
        true
    );
    assert_eq!(ok(&["audit", "verify", "--file", segment_arg, "--expect", &anchor])["ok"], true);

    // show and disclosed read the live log; with --archive, the segments first.
    assert_eq!(show(alp, &[]), now);
    assert_eq!(show(alp, &["--archive", dir_arg]), format!("{first_three}{now}"));
    assert_eq!(show(alp, &["--archive", dir_arg, "--door", "archive"]), kept.last().unwrap().0);
    assert_eq!(
        show(alp, &["--archive", dir_arg, "--tail", "2"]),
        kept[kept.len() - 2..].iter().map(|(l, _)| l.as_str()).collect::<String>()
    );
    // shared:team was read once in the archived records (seq 4 is kept): it shows in both; a reader of the
    // archived part only (nothing here) would be missing without --archive.
    let without = ok(&["audit", "disclosed", "shared:team"]);
    let with = ok(&["audit", "disclosed", "shared:team", "--archive", dir_arg]);
    assert_eq!(without, with, "no archived record showed shared:team");

    // A second archive, by default all but the last record, writes the next segment; reading both segments and
    // the live log gives every record once, in order.
    let before_second = records(&now);
    let second = ok(&["audit", "archive", "--to", dir_arg]);
    let last_archived = before_second.len() - 1;
    let last_seq = before_second[last_archived - 1].1["seq"].as_u64().unwrap();
    let name = format!("audit-4-{last_seq}.jsonl");
    assert_eq!(
        second,
        json!({
            "archived": last_archived,
            "file": canonical.join(&name).to_str().unwrap(),
            "from": { "seq": last_seq, "hash": before_second[last_archived - 1].1["hash"] },
        })
    );
    let everything = show(alp, &["--archive", dir_arg]);
    assert_eq!(
        everything,
        format!("{first_three}{now}{}", live().lines().skip(1).map(|l| format!("{l}\n")).collect::<String>())
    );
    assert_eq!(
        ok(&[
            "audit",
            "verify",
            "--from",
            &format!("{last_seq}:{}", before_second[last_archived - 1].1["hash"].as_str().unwrap())
        ])["ok"],
        true
    );
    // Reading a seq at the second segment's start: the archived reads of shared:team now need --archive.
    let without = ok(&["audit", "disclosed", "shared:team"]);
    assert_eq!(without["roles"], json!([]));
    let with = ok(&["audit", "disclosed", "shared:team", "--archive", dir_arg]);
    let roles: Vec<&str> =
        with["roles"].as_array().unwrap().iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["main", "worker"]);
}

#[test]
fn archive_then_verify_from_its_last_record_and_read_it_back() {
    let env = Env::new();
    let alp = |args: &[&str]| env.run(args, None);
    seed(&alp);
    let dir = env.dir.path().join("archive");
    check_archive(&alp, &|| log_of(&env), &dir);
    // Everything up to the head: the live log then holds the archive's record alone, and still verifies.
    let first = records(&log_of(&env))[0].1.clone();
    let head = env.run(&["--json", "audit", "head"], None).json();
    let next = (head["seq"].as_u64().unwrap() + 1).to_string();
    let run =
        env.run(&["--json", "audit", "archive", "--to", dir.to_str().unwrap(), "--before", &next], None);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.json()["from"], head);
    assert_eq!(log_of(&env).lines().count(), 1);
    let anchor = |record: &Value| format!("{}:{}", record["seq"], record["hash"].as_str().unwrap());
    let verify = |args: &[&str]| {
        let mut all = vec!["--json", "audit", "verify"];
        all.extend_from_slice(args);
        env.run(&all, None)
    };
    // The kept head is the record the log continues from: both checks pass.
    assert_eq!(verify(&["--expect", &anchor(&head)]).json()["ok"], true);
    assert_eq!(verify(&["--from", &anchor(&head)]).json()["ok"], true);
    // A record before it lies in the archive: this log alone cannot show it unchanged.
    let run = verify(&["--expect", &anchor(&first)]);
    assert_eq!((run.status, run.json()["reason"].as_str()), (1, Some("archived")), "{run:?}");
    let run = verify(&["--from", &anchor(&first)]);
    assert_eq!((run.status, run.json()["reason"].as_str()), (1, Some("not_continued")), "{run:?}");
}

#[test]
fn archive_refuses_bad_input_and_changes_nothing() {
    let env = Env::new();
    let alp = |args: &[&str]| env.run(args, None);
    seed(&alp);
    let head = env.run(&["--json", "audit", "head"], None).json()["seq"].as_u64().unwrap();
    let outside = env.dir.path().join("archive");
    let to = outside.to_str().unwrap();
    let beyond = (head + 2).to_string();
    let inside = env.root().join("archive");
    let link = env.dir.path().join("link");
    std::os::unix::fs::symlink(env.root(), &link).unwrap();
    let through_link = link.join("archive");
    let file = env.dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let orphan = env.dir.path().join("missing/archive");
    let root = env.root();
    check_refused(
        &alp,
        &|| log_of(&env),
        &[
            (&["audit", "archive", "--to", to, "--before", &beyond], "lies past the end of the log"),
            (
                &["audit", "archive", "--to", to, "--before", "1"],
                "no record lies before seq 1: nothing to archive",
            ),
            (&["audit", "archive", "--to", to, "--before", "0"], "no record lies before seq 0"),
            (&["audit", "archive", "--to", inside.to_str().unwrap()], "lies inside the memory root"),
            (&["audit", "archive", "--to", root.to_str().unwrap()], "lies inside the memory root"),
            (&["audit", "archive", "--to", through_link.to_str().unwrap()], "lies inside the memory root"),
            (&["audit", "archive", "--to", file.to_str().unwrap()], "it is not a directory"),
            (&["audit", "archive", "--to", orphan.to_str().unwrap()], "create it first"),
            (&["--as", "main", "audit", "archive", "--to", to], "takes no --as"),
            (&["audit", "archive"], "required"),
        ],
    );
    for dir in [&outside, &inside, &orphan] {
        assert!(!dir.exists(), "{} was created", dir.display());
    }
    // A directory that cannot be written: a read-only file system (root writes anywhere else), or 0500.
    let mount = testkit::tmpfs::Tmpfs::mount("ro");
    let locked = match &mount {
        Some(tmpfs) => tmpfs.path().join("archive"),
        None => {
            let dir = env.dir.path().join("locked");
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
            dir.join("archive")
        }
    };
    check_refused(
        &alp,
        &|| log_of(&env),
        &[(&["audit", "archive", "--to", locked.to_str().unwrap()], "is not writable")],
    );
    // Nothing to archive by default (a log of one record): exit 0, nothing written, no directory made.
    let single = Env::new();
    single.ok("main", &["memory", "create", "shared:x", "--content", "x"]);
    let one = log_of(&single);
    let run = single.run(&["--json", "audit", "archive", "--to", to], None);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.json(), json!({ "archived": 0, "file": null, "from": { "seq": 0, "hash": GENESIS } }));
    assert_eq!(log_of(&single), one);
    assert!(!outside.exists());
    let run = single.run(&["audit", "archive", "--to", to], None);
    assert!(run.stdout.starts_with("nothing to archive"), "{run:?}");
    // An empty log: any --before is past its end.
    let empty = Env::new();
    let run = empty.run(&["--json", "audit", "archive", "--to", to, "--before", "2"], None);
    assert_eq!((run.status, run.error()["code"].as_str()), (2, Some("USAGE")), "{run:?}");
}

/// The same commands on PostgreSQL: the filters, disclosed (with a token's `via`), archive and verify, the bad
/// inputs.
#[test]
fn the_audit_trail_on_postgresql() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let url = db.url().to_owned();
    let alp = |args: &[&str]| {
        let mut all = vec!["--store", url.as_str()];
        all.extend_from_slice(args);
        crate::postgres::alp(&env, &[], &all)
    };
    let init = alp(&["--json", "init"]);
    assert_eq!(init.status, 0, "{init:?}");
    seed(&alp);
    // A call through a server on the database carries the token's ID.
    let created = alp(&["--json", "token", "create", "--role", "worker"]).json();
    let (token_id, secret) = (text(&created, "id"), text(&created, "token"));
    let server = Serve::start_on(&env, &url);
    call(&server, &secret, "memory_get", json!({ "id": "project:alp:goals" }));
    drop(server);
    let log = show(&alp, &[]);
    check_filters(&alp, &log);
    let via = records(&show(&alp, &["--via", &token_id]));
    assert_eq!(via.len(), 1);
    assert_eq!(
        (via[0].1["door"].as_str(), via[0].1["shown"].clone()),
        (Some("get"), json!(["project:alp:goals@1"]))
    );
    let disclosed = alp(&["--json", "audit", "disclosed", "project:alp:goals"]).json();
    let roles: Vec<(&str, &Value)> = disclosed["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["role"].as_str().unwrap(), &r["via"]))
        .collect();
    assert_eq!(roles, [("worker", &json!([token_id]))], "{disclosed}");
    check_bad_show_and_verify(&alp, &|| show(&alp, &[]));
    let head = alp(&["--json", "audit", "head"]).json()["seq"].as_u64().unwrap();
    let dir = env.dir.path().join("pg-archive");
    check_refused(
        &alp,
        &|| show(&alp, &[]),
        &[
            (
                &["audit", "archive", "--to", dir.to_str().unwrap(), "--before", &(head + 2).to_string()],
                "past the end",
            ),
            (&["audit", "archive", "--to", dir.to_str().unwrap(), "--before", "1"], "nothing to archive"),
        ],
    );
    assert!(!dir.exists());
    check_archive(&alp, &|| show(&alp, &[]), &dir);
}

/// A live log whose first records were cut without an archive fails `audit verify` with `unannounced_start`; after a
/// real archive it verifies, and the segment verifies alone with `--file`.
#[test]
fn a_live_log_cut_at_its_start_is_not_an_archived_one() {
    let env = Env::new();
    for id in ["shared:a", "shared:b", "shared:c", "shared:d"] {
        env.ok("main", &["memory", "create", id, "--content", "x"]);
    }
    let log = env.root().join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let cut: String = text.lines().skip(2).map(|line| format!("{line}\n")).collect();
    std::fs::write(&log, cut).unwrap();
    let run = env.run(&["--json", "audit", "verify"], None);
    assert_eq!(run.status, 1, "{run:?}");
    assert_eq!(run.json()["reason"], "unannounced_start");
    assert_eq!(run.json()["firstBadSeq"], 3);
    // The same records archived for real: the archive record announces where the live log starts.
    std::fs::write(&log, text).unwrap();
    let archives = tempfile::tempdir().unwrap();
    let to = archives.path().join("audit");
    let archived =
        env.run(&["--json", "audit", "archive", "--to", to.to_str().unwrap(), "--before", "3"], None);
    assert_eq!(archived.status, 0, "{archived:?}");
    let run = env.run(&["--json", "audit", "verify"], None);
    assert_eq!((run.status, run.json()["ok"].clone()), (0, serde_json::json!(true)), "{run:?}");
    let segment = to.join("audit-1-2.jsonl");
    let run = env.run(&["--json", "audit", "verify", "--file", segment.to_str().unwrap()], None);
    assert_eq!(run.status, 0, "{run:?}");
}

/// `kill -9` of the real `alp audit archive` at random moments, over and over, on a 5,000-record log: after every
/// kill the live log verifies, every segment verifies alone, and `audit show --archive` reads every record exactly
/// once, in order, with no gap; so does the first archive that is let finish.
#[test]
fn kill_9_during_archive_loses_no_record_and_reads_each_once() {
    use alp_memory::memory_audit::{AuditEvent, AuditOperation, AuditSink, Door, MemoryAuditSink, Outcome};
    let env = Env::new();
    // A 5,000-record log with receipts, written as the service writes it.
    let sink = MemoryAuditSink::new();
    for n in 0..5_000u64 {
        let id = format!("shared:n:{n}");
        let event = AuditEvent {
            timestamp: time::OffsetDateTime::UNIX_EPOCH
                + time::Duration::days(20_000)
                + time::Duration::seconds(n as i64),
            actor: "worker".to_owned(),
            operation: AuditOperation::Get,
            door: Some(Door::Get),
            id: id.clone(),
            outcome: Outcome::Allowed,
            code: None,
            grant: None,
            shown: vec![format!("{id}@1")],
            via: None,
        };
        sink.record(&event).unwrap();
    }
    std::fs::write(env.root().join("audit.jsonl"), sink.to_jsonl()).unwrap();
    let archives = tempfile::tempdir().unwrap();
    let to = archives.path().join("audit");
    let to_arg = to.to_str().unwrap().to_owned();

    let check = |what: &str| {
        let run = env.run(&["--json", "audit", "verify"], None);
        assert_eq!(run.status, 0, "{what}: {run:?}");
        if to.exists() {
            for entry in std::fs::read_dir(&to).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_str().unwrap();
                // A segment is named for its records; the one other file an archive killed midway may leave is its
                // unfinished segment, which no reader takes and the next archive replaces.
                if alp_memory::memory_audit::parse_segment_name(name).is_none() {
                    assert_eq!(name, ".audit-segment.tmp", "{what}: a stray file in the archive directory");
                    continue;
                }
                let run = env.run(&["--json", "audit", "verify", "--file", path.to_str().unwrap()], None);
                assert_eq!(run.status, 0, "{what}: {}: {run:?}", path.display());
            }
        }
        let show = env.run(&["--json", "audit", "show", "--archive", &to_arg], None);
        assert_eq!(show.status, 0, "{what}: {show:?}");
        let seqs: Vec<u64> = show
            .stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["seq"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "{what}: every record once, in order, no gap");
        assert!(seqs.len() >= 5_000, "{what}: {} records", seqs.len());
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut killed = 0;
    for round in 0..24u64 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = std::time::Duration::from_micros(seed % 60_000);
        // Each round archives a little more (the live log starts at 1 + 100 × round at most).
        let before = (2 + 100 * (round + 1)).to_string();
        let mut child = env
            .command()
            .args(["--root"])
            .arg(env.root())
            .arg("--agents")
            .arg(env.agents())
            .args(["--json", "audit", "archive", "--to", &to_arg, "--before", &before])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        check(&format!("round {round} (killed after {delay:?})"));
    }
    assert!(killed >= 4, "only {killed} of 24 kills caught the archive running");
    // An archive left to finish reads the same.
    let run = env.run(&["--json", "audit", "archive", "--to", &to_arg], None);
    assert_eq!(run.status, 0, "{run:?}");
    check("after a finished archive");
}
