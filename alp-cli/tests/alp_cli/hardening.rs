//! The attack findings, end to end through the real `alp`: each case is what a hostile agent or co-tenant did,
//! and what `alp` now answers (`docs/STORAGE.md`, `docs/CLI.md`, `docs/RUNTIMES.md`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::Env;

const MAX: u64 = (1 << 53) - 1;

/// `ln private/main/journal.md shared/team/leak.md`: a `shared` reader gets a storage error, never the journal;
/// search skips the alias; `alp memory delete` removes it.
#[test]
fn a_hard_link_into_shared_memory_is_not_a_door_to_private_memory() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "private:main:journal", "--content", "the launch slips a week"]);
    env.ok("main", &["memory", "create", "shared:team:welcome", "--content", "hello team"]);
    std::fs::hard_link(env.root().join("private/main/journal.md"), env.root().join("shared/team/leak.md"))
        .unwrap();
    let error = env.fails("worker", &["memory", "get", "shared:team:leak"], 1);
    assert_eq!(error["code"], "STORAGE_ERROR");
    assert!(error["message"].as_str().unwrap().contains("hard links"), "{error}");
    let found = env.ok("worker", &["memory", "search", "launch"]);
    assert_eq!(found["entries"], serde_json::json!([]));
    let found = env.ok("worker", &["memory", "search"]);
    let ids: Vec<&str> =
        found["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["shared:team:welcome"]);
    env.ok("main", &["memory", "delete", "shared:team:leak", "--expected-version", "1"]);
    assert_eq!(
        env.ok("main", &["memory", "get", "private:main:journal"])["content"],
        "the launch slips a week"
    );
}

/// `create --file /dev/zero` reads the value limit plus one character, never 2 GB; the same for a large file and
/// for stdin.
#[test]
fn content_is_read_up_to_the_limit_plus_one_character() {
    let env = Env::new();
    let started = Instant::now();
    // /dev/zero gives U+0000, which is malformed (checked before the limit): refused at once either way.
    let error = env.fails("main", &["memory", "create", "shared:zero", "--file", "/dev/zero"], 8);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(error["code"], "INVALID_ENTRY");
    let large = env.dir.path().join("large.txt");
    std::fs::write(&large, "x".repeat(64 << 20)).unwrap();
    let started = Instant::now();
    let error =
        env.fails("main", &["memory", "create", "shared:large", "--file", large.to_str().unwrap()], 8);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(
        (error["code"].as_str(), error["limit"].as_u64(), error["count"].as_u64()),
        (Some("LIMIT_EXCEEDED"), Some(2000), Some(2001))
    );
    assert!(error["message"].as_str().unwrap().contains("more than 2000 characters"), "{error}");
    let long = "é".repeat(5000);
    let run = env.run(&["--json", "--as", "main", "memory", "create", "shared:stdin"], Some(&long));
    assert_eq!(run.status, 8, "{run:?}");
    assert_eq!(run.error()["count"], 2001);
    // Exactly at the limit, in 2-byte characters, is fine.
    let run =
        env.run(&["--json", "--as", "main", "memory", "create", "shared:stdin"], Some(&"é".repeat(2000)));
    assert_eq!(run.status, 0, "{run:?}");
    // The refusal was audited like any refused create: one `error` record.
    let last = env.audit_lines().into_iter().rev().nth(1).unwrap();
    assert_eq!((last["outcome"].as_str(), last["code"].as_str()), (Some("error"), Some("LIMIT_EXCEEDED")));
}

/// A 2 GB sparse entry file: refused at once on get, skipped by search, deletable.
#[test]
fn an_oversized_entry_file_costs_nothing() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:small", "--content", "small"]);
    std::fs::File::create(env.root().join("shared/big.md")).unwrap().set_len(2 << 30).unwrap();
    let started = Instant::now();
    let error = env.fails("main", &["memory", "get", "shared:big"], 1);
    assert!(error["message"].as_str().unwrap().contains("over the limit of 1048576"), "{error}");
    assert_eq!(env.ok("main", &["memory", "search"])["entries"].as_array().unwrap().len(), 1);
    env.ok("main", &["memory", "delete", "shared:big", "--expected-version", "1"]);
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A FIFO as an agent definition, or as an entry: an error at once, never a hang.
#[test]
fn fifos_never_block() {
    let env = Env::new();
    let fifo = |path: &Path| {
        rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR, 0)
            .unwrap()
    };
    fifo(&env.agents().join("ghost.yaml"));
    std::fs::create_dir_all(env.root().join("shared")).unwrap();
    fifo(&env.root().join("shared/pipe.md"));
    std::os::unix::net::UnixListener::bind(env.root().join("shared/socket.md")).unwrap();
    let started = Instant::now();
    let error = env.fails("ghost", &["memory", "get", "shared:pipe"], 2);
    assert_eq!(error["code"], "INVALID_AGENT_DEFINITION");
    let fifo_error = env.fails("main", &["memory", "get", "shared:pipe"], 1);
    let socket_error = env.fails("main", &["memory", "get", "shared:socket"], 1);
    assert_eq!(fifo_error["code"], "STORAGE_ERROR");
    let message = |e: &Value| e["message"].as_str().unwrap().replace("pipe", "X").replace("socket", "X");
    assert_eq!(message(&fifo_error), message(&socket_error), "one error for every special file");
    std::fs::create_dir_all(env.root().join("shared/dir.md")).unwrap();
    assert_eq!(env.fails("main", &["memory", "get", "shared:dir"], 5)["code"], "NOT_FOUND");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// `version: 18446744073709551615` then an update once wrote `version: 0`. Now such a file is refused, an entry
/// at 2^53 − 1 cannot be updated, and `--expected-version` above it is a usage error.
#[test]
fn versions_never_wrap() {
    let env = Env::new();
    std::fs::create_dir_all(env.root().join("shared")).unwrap();
    std::fs::write(env.root().join("shared/wrap.md"), "---\nversion: 18446744073709551615\n---\nx\n")
        .unwrap();
    let error = env.fails("main", &["memory", "get", "shared:wrap"], 1);
    assert!(error["message"].as_str().unwrap().contains("claims version 18446744073709551615"), "{error}");
    let error = env.fails(
        "main",
        &["memory", "update", "shared:wrap", "--expected-version", "1", "--content", "y"],
        1,
    );
    assert_eq!(error["code"], "STORAGE_ERROR");
    std::fs::write(env.root().join("shared/last.md"), format!("---\nversion: {MAX}\n---\nx\n")).unwrap();
    assert_eq!(env.ok("main", &["memory", "get", "shared:last"])["version"], MAX);
    let max = MAX.to_string();
    let error = env.fails(
        "main",
        &["memory", "update", "shared:last", "--expected-version", &max, "--content", "y"],
        8,
    );
    assert_eq!((error["code"].as_str(), error["limit"].as_u64()), (Some("LIMIT_EXCEEDED"), Some(MAX)));
    let over = (MAX + 1).to_string();
    let error = env.fails(
        "main",
        &["memory", "update", "shared:last", "--expected-version", &over, "--content", "y"],
        2,
    );
    assert_eq!(error["code"], "USAGE");
    for args in [["memory", "search", "--limit", &over], ["memory", "context", "--budget", &over]] {
        assert_eq!(env.fails("main", &args, 2)["code"], "USAGE", "{args:?}");
    }
}

/// Content with U+0000 is refused on create, update and import.
#[test]
fn content_with_nul_is_an_invalid_entry() {
    let env = Env::new();
    let run = env.run(&["--json", "--as", "main", "memory", "create", "shared:nul"], Some("before\0after"));
    assert_eq!(run.status, 8, "{run:?}");
    assert_eq!(run.error()["code"], "INVALID_ENTRY");
    assert!(run.error()["message"].as_str().unwrap().contains("U+0000"));
    env.ok("main", &["memory", "create", "shared:ok", "--content", "fine"]);
    let run = env.run(
        &[
            "--json",
            "--as",
            "main",
            "memory",
            "update",
            "shared:ok",
            "--expected-version",
            "1",
            "--file",
            "-",
        ],
        Some("x\0"),
    );
    assert_eq!(run.status, 8, "{run:?}");
    let alp = env.dir.path().join("nul.alp");
    std::fs::write(
        &alp,
        "!alp-version: 80.0.0\n@memory\n  id: n\n  type: project\n  key: k\n  value: \"a\\x00b\"\n",
    )
    .unwrap();
    let error = env.fails("main", &["memory", "import", alp.to_str().unwrap(), "--project", "alp"], 8);
    assert_eq!(error["code"], "INVALID_ENTRY");
}

/// Import refuses times in the future and `created` after `updated`, with the line.
#[test]
fn import_refuses_impossible_times() {
    let env = Env::new();
    let file = |created: &str, updated: &str| {
        let path = env.dir.path().join("times.alp");
        std::fs::write(
            &path,
            format!(
                "!alp-version: 80.0.0\n@memory\n  id: a\n  type: project\n  key: k\n  value: v\n  created: {created}\n  updated: {updated}\n"
            ),
        )
        .unwrap();
        path
    };
    let future = file("2026-01-01T00:00:00Z", "2999-01-01T00:00:00Z");
    let error = env.fails("main", &["memory", "import", future.to_str().unwrap(), "--project", "alp"], 8);
    assert_eq!((error["code"].as_str(), error["line"].as_u64()), (Some("INVALID_ENTRY"), Some(8)));
    assert!(error["message"].as_str().unwrap().contains("lies in the future"), "{error}");
    let reversed = file("2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z");
    let error = env.fails("main", &["memory", "import", reversed.to_str().unwrap(), "--project", "alp"], 8);
    assert_eq!((error["code"].as_str(), error["line"].as_u64()), (Some("INVALID_ENTRY"), Some(7)));
    assert!(
        env.ok("main", &["memory", "search", "--prefix", "project:alp"])["entries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

/// With a log that cannot take a record, prune and import fail closed before they read the store.
#[test]
fn prune_and_import_fail_closed_before_listing() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:short", "--content", "x", "--ttl", "1s"]);
    std::thread::sleep(Duration::from_millis(1100));
    let log = env.root().join("audit.jsonl");
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap(); // a directory where the log should be: no record can be appended
    let error = env.fails("main", &["memory", "prune"], 9);
    assert_eq!(error["code"], "AUDIT_UNAVAILABLE");
    let message = error["message"].as_str().unwrap();
    assert_eq!(message.matches("audit log unavailable").count(), 1, "said once: {message}");
    assert!(env.root().join("shared/short.md").exists(), "nothing was pruned");
    let alp = env.dir.path().join("one.alp");
    std::fs::write(&alp, "!alp-version: 80.0.0\n@memory\n  id: a\n  type: project\n  key: k\n  value: v\n")
        .unwrap();
    assert_eq!(
        env.fails("main", &["memory", "import", alp.to_str().unwrap(), "--project", "alp"], 9)["code"],
        "AUDIT_UNAVAILABLE"
    );
    assert!(!env.root().join("projects").exists(), "nothing was imported");
}

/// A process holding the audit log's lock forever: the call fails closed after `lockTimeout`, it does not hang.
#[test]
fn a_stuck_audit_lock_fails_closed_after_the_lock_timeout() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:x", "--content", "x"]);
    std::fs::write(env.root().join("config.yaml"), "lockTimeout: 1s\n").unwrap();
    let holder = std::fs::File::open(env.root().join("audit.jsonl")).unwrap();
    rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let started = Instant::now();
    let error = env.fails("main", &["memory", "get", "shared:x"], 9);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(1) && waited < Duration::from_secs(5), "{waited:?}");
    assert!(error["message"].as_str().unwrap().contains("held its lock"), "{error}");
    drop(holder);
    env.ok("main", &["memory", "get", "shared:x"]);
}

/// `alp audit verify` cannot see records cut from the end; with the head kept, `--expect` can.
#[test]
fn audit_head_and_verify_expect_catch_records_cut_from_the_end() {
    let env = Env::new();
    for n in 0..4 {
        env.ok("main", &["memory", "create", &format!("shared:n{n}"), "--content", "x"]);
    }
    let head = env.run(&["--json", "audit", "head"], None).json();
    assert_eq!(head["seq"], 4);
    let expect = format!("{}:{}", head["seq"], head["hash"].as_str().unwrap());
    let verify = |env: &Env| env.run(&["--json", "audit", "verify", "--expect", &expect], None);
    assert_eq!(verify(&env).json()["ok"], true);
    let log = env.root().join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let half: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, half).unwrap();
    assert_eq!(
        env.run(&["--json", "audit", "verify"], None).json()["ok"],
        true,
        "the cut chain alone is valid"
    );
    let run = verify(&env);
    assert_eq!(run.status, 1, "{run:?}");
    assert_eq!(run.json(), serde_json::json!({"ok": false, "firstBadSeq": 4, "reason": "truncated"}));
    std::fs::remove_file(&log).unwrap();
    assert_eq!(verify(&env).json()["reason"], "truncated");
    // `audit show` prints records as stored; saved, they verify with --file.
    std::fs::write(&log, &text).unwrap();
    let shown = env.run(&["audit", "show", "--since", "2", "--limit", "2"], None);
    assert_eq!(shown.stdout, text.lines().skip(1).take(2).map(|l| format!("{l}\n")).collect::<String>());
    let all = env.run(&["audit", "show"], None).stdout;
    let saved = env.dir.path().join("saved.jsonl");
    std::fs::write(&saved, &all).unwrap();
    let run =
        env.run(&["--json", "audit", "verify", "--file", saved.to_str().unwrap(), "--expect", &expect], None);
    assert_eq!(run.json()["ok"], true, "{run:?}");
    let run = env.run(&["--json", "audit", "verify", "--expect", "4:xyz"], None);
    assert_eq!((run.status, run.error()["code"].as_str()), (2, Some("USAGE")));
}

/// A `private/` directory or a definition file whose name a deny rule cannot state exactly is an error naming it,
/// never skipped (a role `a[b]` would have become a character class, `x)` would have broken the rule).
#[test]
fn adapters_refuse_names_they_cannot_fence() {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:x", "--content", "x"]);
    for bad in ["a[b]", "x)", "with space"] {
        let dir = env.root().join("private").join(bad);
        std::fs::create_dir_all(&dir).unwrap();
        let error = env.fails("worker", &["adapter", "claude", "worker"], 1);
        assert_eq!(error["code"], "STORAGE_ERROR");
        assert!(error["message"].as_str().unwrap().contains(bad), "{error}");
        std::fs::remove_dir(&dir).unwrap();
    }
    std::fs::write(env.agents().join("a[b].yaml"), "role: a[b]\n").unwrap();
    let error = env.fails("worker", &["adapter", "claude", "worker"], 1);
    assert!(error["message"].as_str().unwrap().contains("a[b].yaml"), "{error}");
}

/// Export writes only what import reads back: a hand-written key no writer would accept (a control character) is
/// not a key at all when read, so the entry has no key and is skipped, with that reason.
#[test]
fn export_skips_what_import_would_refuse() {
    let env = Env::new();
    std::fs::create_dir_all(env.root().join("projects/alp")).unwrap();
    let note = |key: &str| format!("---\nkind: fact\ntype: project\nkey: \"{key}\"\n---\nvalue\n");
    std::fs::write(env.root().join("projects/alp/good.md"), note("good-key")).unwrap();
    std::fs::write(env.root().join("projects/alp/bad.md"), note("bad\\u0001key")).unwrap();
    let report = env.ok("main", &["memory", "export", "--project", "alp"]);
    assert_eq!(report["exported"], 1);
    assert_eq!(report["skipped"][0]["id"], "project:alp:bad");
    assert!(report["skipped"][0]["reason"].as_str().unwrap().contains("it has no key"), "{report}");
    let text = report["text"].as_str().unwrap();
    let file = env.dir.path().join("out.alp");
    std::fs::write(&file, text).unwrap();
    let imported = env.ok("main", &["memory", "import", file.to_str().unwrap(), "--project", "copy"]);
    assert_eq!(imported["imported"], 1);
}

/// A file modified long before 1970 (once printed as `-0001-…` for a negative year) reads with a timestamp in
/// years 1–9999. (File systems clamp mtimes differently; `Timestamp::from_unix_nanos_clamped` is tested with a
/// year before 1 in memory-store.)
#[test]
fn an_mtime_long_ago_prints_as_a_four_digit_year() {
    let env = Env::new();
    std::fs::create_dir_all(env.root().join("shared")).unwrap();
    let path = env.root().join("shared/old.md");
    std::fs::write(&path, "no frontmatter").unwrap();
    let long_ago = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec { tv_sec: -62_200_000_000, tv_nsec: 0 },
        last_modification: rustix::fs::Timespec { tv_sec: -62_200_000_000, tv_nsec: 0 },
    };
    rustix::fs::utimensat(rustix::fs::CWD, &path, &long_ago, rustix::fs::AtFlags::empty()).unwrap();
    let entry = env.ok("main", &["memory", "get", "shared:old"]);
    let created = entry["createdAt"].as_str().unwrap();
    assert!(created.len() == 24 && created.as_bytes()[4] == b'-' && !created.starts_with('-'), "{created}");
    assert!(created < "1970", "{created}");
}

/// A TTL that would end after the year 9999 is refused instead of never expiring.
#[test]
fn a_ttl_past_the_year_9999_is_refused() {
    let env = Env::new();
    std::fs::create_dir_all(env.root()).unwrap();
    std::fs::write(env.root().join("config.yaml"), "limits:\n  maxTtl: 99999999w\n").unwrap();
    let error =
        env.fails("main", &["memory", "create", "shared:forever", "--content", "x", "--ttl", "9999999w"], 8);
    assert_eq!(error["code"], "INVALID_ENTRY");
    assert!(error["message"].as_str().unwrap().contains("after the year 9999"), "{error}");
}

/// Content an agent wrote reaches a person's terminal with its control characters made visible, so an escape
/// sequence in it cannot drive the terminal (clear the screen, set the clipboard, hide text behind a carriage
/// return); piped, and with `--json`, it stays byte for byte as stored.
#[test]
fn escape_sequences_in_memory_never_reach_a_terminal() {
    let env = Env::new();
    let hostile = "before\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\rhidden\u{9b}31m after\r\nnext line\n";
    env.ok("main", &["memory", "create", "shared:team:trap", "--content", hostile]);
    let in_terminal = |args: &str| {
        let line = format!(
            "{} --root {} --agents {} --as worker {args}",
            env!("CARGO_BIN_EXE_alp"),
            env.root().display(),
            env.agents().display()
        );
        // `script` gives the command a pseudo terminal; NO_COLOR, so that alp itself writes no escape sequence.
        let output = std::process::Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    let shown = "before\\u{1b}]52;c;ZXZpbA==\\u{7}\\u{1b}[2J\\u{d}hidden\\u{9b}31m after";
    for args in [
        "memory get shared:team:trap",
        "memory search hidden",
        "memory context --budget 4000 hidden",
        "memory list shared",
    ] {
        let out = in_terminal(args);
        let expected = if args.contains("list") { &shown[..40] } else { shown };
        assert!(out.contains(expected), "{args}: {out:?}");
        assert!(!out.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{args}: {out:?}");
        assert!(!out.contains("\rhidden"), "{args}: {out:?}");
    }
    // An ID may hold a C1 control character (an ID refuses C0 and DEL only): CSI, U+009B, in a name.
    let c1 = "shared:team:c1\u{9b}2Jx";
    env.ok("main", &["memory", "create", c1, "--content", "named with a CSI"]);
    for args in [
        format!("memory get {c1}"),
        "memory list shared".to_owned(),
        "memory search CSI".to_owned(),
        format!("memory delete {c1} --expected-version 1"),
        "audit show".to_owned(),
    ] {
        let out = in_terminal(&args);
        assert!(out.contains("c1\\u{9b}2Jx"), "{args}: {out:?}");
        assert!(!out.contains(['\u{1b}', '\u{7}', '\u{9b}']), "{args}: {out:?}");
    }
    let log = std::fs::read_to_string(env.root().join("audit.jsonl")).unwrap();
    assert!(log.contains(c1), "the log keeps the ID as given");

    let piped = env.run(&["--as", "worker", "memory", "get", "shared:team:trap"], None);
    assert_eq!(piped.status, 0, "{piped:?}");
    assert!(piped.stdout.contains(hostile.trim_end()), "{piped:?}");
    assert_eq!(env.ok("worker", &["memory", "get", "shared:team:trap"])["content"], hostile);
}
