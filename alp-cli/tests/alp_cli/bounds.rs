//! Bounded work end to end (docs/CLI.md, docs/MCP.md): a query over 4,096 characters or 64 distinct terms, or a
//! filter value over 1,024 characters, is `USAGE` before anything is read, with no audit record, on the command
//! line (exit 2, ahead of `config.yaml` and the root) and in the MCP tools (an `isError` result); and a call its
//! caller abandons (`notifications/cancelled`, the end of the server's input) stops, the server exiting at once.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::Env;
use crate::mcp::transport::Raw;

/// `n` distinct terms (`t0 t1 …`), one argument each.
fn terms(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i}")).collect()
}

/// A valid prefix of exactly `chars` characters (ASCII, segments of at most 200 bytes).
fn prefix(chars: usize) -> String {
    let mut prefix = "shared".to_owned();
    while prefix.len() < chars {
        let room = (chars - prefix.len() - 1).min(200);
        prefix.push(':');
        prefix.push_str(&"a".repeat(room.max(1)));
    }
    assert_eq!(prefix.len(), chars);
    prefix
}

mod cli {
    use super::*;

    /// `alp --json --as worker memory ARGS…`: its exit status, and the error code when it failed.
    fn memory(env: &Env, args: &[String]) -> (i32, Option<String>) {
        let mut all = vec!["--json".to_owned(), "--as".into(), "worker".into(), "memory".into()];
        all.extend_from_slice(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let run = env.run(&all, None);
        if run.status == 0 {
            return (0, None);
        }
        let error = run.error();
        assert!(run.stdout.is_empty(), "{run:?}");
        if error["code"] == "USAGE" {
            assert_eq!(error["kind"], "UsageError", "{error}");
            assert!(
                error["message"].as_str().unwrap().len() < 300,
                "the message does not echo the query: {error}"
            );
        }
        (run.status, error["code"].as_str().map(str::to_owned))
    }

    fn args(command: &str, terms: &[String], rest: &[&str]) -> Vec<String> {
        let mut all = vec![command.to_owned()];
        all.extend(rest.iter().map(|s| (*s).to_owned()));
        all.push("--".into());
        all.extend_from_slice(terms);
        all
    }

    fn usage() -> (i32, Option<String>) {
        (2, Some("USAGE".into()))
    }

    /// Each case: the command line, and whether it is served (one record) or refused as USAGE (no record).
    fn check(env: &Env, cases: &[(&str, Vec<String>, bool)]) {
        for (what, args, served) in cases {
            let before = env.audit_lines().len();
            let got = memory(env, args);
            if *served {
                assert_eq!(got, (0, None), "{what}");
                assert_eq!(env.audit_lines().len(), before + 1, "{what}: one record");
            } else {
                assert_eq!(got, usage(), "{what}");
                assert_eq!(env.audit_lines().len(), before, "{what}: no record");
            }
        }
    }

    #[test]
    fn query_edges_of_search_and_context() {
        let env = Env::new();
        let mut folded = terms(63);
        folded.extend(["T0".into(), "t0".into(), "A".into(), "a".into()]);
        let mut one_more = folded.clone();
        one_more.push("b".into());
        let budget = ["--budget", "100"];
        check(
            &env,
            &[
                ("64 terms", args("search", &terms(64), &[]), true),
                ("65 terms", args("search", &terms(65), &[]), false),
                ("64 once folded (`T0 t0`, `A a`)", args("search", &folded, &[]), true),
                ("65 once folded", args("search", &one_more, &[]), false),
                ("context, 64 terms", args("context", &terms(64), &budget), true),
                ("context, 65 terms", args("context", &terms(65), &budget), false),
                ("4096 characters", args("search", &["é".repeat(4096)], &[]), true),
                ("4097 characters", args("search", &["é".repeat(4097)], &[]), false),
                // The terms are joined with single spaces: 2,048 + 1 + 2,047 is the limit.
                ("4096 joined", args("search", &["é".repeat(2048), "é".repeat(2047)], &[]), true),
                ("4097 joined", args("search", &["é".repeat(2048), "é".repeat(2048)], &[]), false),
                ("context, 4097 characters", args("context", &["é".repeat(4097)], &budget), false),
            ],
        );
    }

    #[test]
    fn filter_edges_of_search_list_and_context() {
        let env = Env::new();
        let (at, over) = (prefix(1024), prefix(1025));
        let budget = "100";
        let with = |command: &str, flag: &str, value: &str| -> Vec<String> {
            let mut all = vec![command.to_owned(), flag.to_owned(), value.to_owned()];
            if command == "context" {
                all.extend(["--budget".to_owned(), budget.to_owned()]);
            }
            all
        };
        let cases = vec![
            ("--prefix 1024", with("search", "--prefix", &at), true),
            // Before the bound, this was an INVALID_MEMORY_ID (exit 3) with its record.
            ("--prefix 1025", with("search", "--prefix", &over), false),
            ("list PREFIX 1024", vec!["list".into(), at.clone()], true),
            ("list PREFIX 1025", vec!["list".into(), over.clone()], false),
            ("context --prefix 1025", with("context", "--prefix", &over), false),
            ("context --task 1024", with("context", "--task", &"é".repeat(1024)), true),
            ("context --task 1025", with("context", "--task", &"é".repeat(1025)), false),
            ("context --feature 1024", with("context", "--feature", &"f".repeat(1024)), true),
            ("context --feature 1025", with("context", "--feature", &"f".repeat(1025)), false),
        ];
        check(&env, &cases);
        for flag in ["--kind", "--type", "--importance", "--key", "--source", "--scope"] {
            let before = env.audit_lines().len();
            let mut all = vec!["--json", "--as", "worker", "memory", "search", flag];
            let value = "k".repeat(1025);
            all.push(&value);
            let run = env.run(&all, None);
            assert_eq!(run.status, 2, "{flag}: {run:?}");
            let error = run.error();
            assert_eq!(error["code"], "USAGE");
            assert!(
                error["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("`{flag}` is longer than 1024 characters")),
                "{flag}: the bound is the reason given: {error}"
            );
            assert_eq!(env.audit_lines().len(), before, "{flag}: no record");
        }
    }

    /// A bad command line comes before everything: a broken `config.yaml`, a missing root.
    #[test]
    fn the_bounds_come_before_the_configuration_and_the_root() {
        let env = Env::new();
        std::fs::write(env.root().join("config.yaml"), "limits: [not, a, mapping\n").unwrap();
        assert_eq!(memory(&env, &args("search", &[], &[])).1.as_deref(), Some("INVALID_CONFIG"));
        assert_eq!(memory(&env, &args("search", &terms(65), &[])), usage());
        assert_eq!(memory(&env, &["search".into(), "--prefix".into(), prefix(1025)]), usage());
        std::fs::remove_dir_all(env.root()).unwrap();
        assert_eq!(memory(&env, &args("search", &[], &[])).1.as_deref(), Some("AUDIT_UNAVAILABLE"));
        assert_eq!(memory(&env, &args("context", &terms(65), &["--budget", "1"])), usage());
        assert!(!env.root().exists(), "nothing created");
    }
}

mod mcp {
    use super::*;
    use crate::mcp::start;

    #[tokio::test]
    async fn tool_arguments_over_their_bounds_are_usage_results_without_a_record() {
        let env = Env::new();
        let server = start(&env, "worker").await;
        let query = |n: usize| terms(n).join(" ");
        let mut folded = query(63);
        folded.push_str(" T0 t0 A a");
        let served = [
            ("memory_search", json!({ "query": query(64) })),
            ("memory_search", json!({ "query": folded })),
            ("memory_search", json!({ "query": "é".repeat(4096) })),
            ("memory_search", json!({ "prefix": prefix(1024) })),
            ("memory_context", json!({ "query": query(64), "budget": 10 })),
            (
                "memory_context",
                json!({ "task": "é".repeat(1024), "feature": "f".repeat(1024), "budget": 10 }),
            ),
        ];
        let refused = [
            ("memory_search", json!({ "query": query(65) })),
            ("memory_search", json!({ "query": format!("{folded} b") })),
            ("memory_search", json!({ "query": "é".repeat(4097) })),
            ("memory_search", json!({ "query": query(100_000) })),
            ("memory_search", json!({ "prefix": prefix(1025) })),
            ("memory_search", json!({ "key": "k".repeat(1025) })),
            ("memory_search", json!({ "kind": "k".repeat(1025) })),
            ("memory_context", json!({ "query": query(65), "budget": 10 })),
            ("memory_context", json!({ "task": "é".repeat(1025), "budget": 10 })),
            ("memory_context", json!({ "feature": "f".repeat(1025), "budget": 10 })),
            ("memory_context", json!({ "prefix": prefix(1025), "budget": 10 })),
        ];
        for (tool, args) in served {
            let before = env.audit_lines().len();
            server.ok(tool, args.clone()).await;
            assert_eq!(env.audit_lines().len(), before + 1, "{tool} {args:.80}: one record");
        }
        for (tool, args) in refused {
            let before = env.audit_lines().len();
            let error = server.fails(tool, args.clone()).await;
            assert_eq!((&error["kind"], &error["code"]), (&json!("UsageError"), &json!("USAGE")), "{error}");
            let message = error["message"].as_str().unwrap();
            assert!(message.starts_with(&format!("{tool}: ")) && message.len() < 300, "{message}");
            assert_eq!(env.audit_lines().len(), before, "{tool}: no record");
        }
        assert!(server.stop().await.success());
    }
}

/// A store whose every search is slow: `FILES` entries of `BYTES` bytes of `a` and `b`, searched for 64 distinct
/// terms of 63 characters of `a` and `b` (the worst legal query: every term passes the runs-of-three prefilter and
/// each is looked for through every entry).
mod abandoned {
    use super::*;

    const FILES: usize = 48;
    const BYTES: usize = 512 * 1024;
    /// The generous bound for "exits within a second".
    const BOUND: Duration = Duration::from_secs(5);

    /// Letters `a` and `b` from a fixed linear congruential sequence.
    fn letters(seed: u64, n: usize) -> String {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                if (x >> 33) & 1 == 0 { 'a' } else { 'b' }
            })
            .collect()
    }

    fn slow_store(env: &Env) -> String {
        let dir = env.root().join("shared").join("slow");
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..FILES {
            let text = format!(
                "---\nkind: reference\nversion: 1\ncreatedAt: 2026-01-01T00:00:00.000Z\nupdatedAt: 2026-01-01T00:00:00.000Z\nimportance: medium\n---\n{}",
                letters(i as u64 + 1, BYTES)
            );
            std::fs::write(dir.join(format!("e{i:02}.md")), text).unwrap();
        }
        let query: Vec<String> = (0..64).map(|i| letters(1000 + i, 63)).collect();
        let query = query.join(" ");
        assert_eq!(query.chars().count(), 4095);
        query
    }

    /// How long the search takes over one entry, by the command line: the whole search takes about `FILES` times
    /// as long.
    fn one_entry(env: &Env, query: &str) -> Duration {
        let started = Instant::now();
        let run = env.run(
            &["--json", "--as", "worker", "memory", "search", "--prefix", "shared:slow:e00", "--", query],
            None,
        );
        assert_eq!(run.status, 0, "{run:?}");
        started.elapsed()
    }

    /// CPU time the process has used (user and system), from `/proc/PID/stat`.
    fn cpu(pid: u32) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        Duration::from_millis(ticks * 10)
    }

    fn search(id: u64, query: &str) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "memory_search", "arguments": { "query": query } } })
    }

    #[test]
    fn the_end_of_input_stops_a_slow_search_and_the_server_exits_at_once() {
        let env = Env::new();
        let query = slow_store(&env);
        let whole = one_entry(&env, &query) * FILES as u32;
        assert!(whole > 2 * BOUND, "the search must take much longer than the bound: about {whole:?}");
        let before = env.audit_lines().len();
        let mut raw = Raw::spawn(&env, "worker");
        raw.initialize();
        raw.send(&search(7, &query));
        std::thread::sleep(Duration::from_millis(500));
        let ended = Instant::now();
        let status = raw.close();
        let took = ended.elapsed();
        assert!(status.success(), "{status:?}");
        assert!(
            took < BOUND,
            "the server exited {took:?} after its input ended, a search of {whole:?} in flight"
        );
        // The caller is gone, so no answer is owed: the server exits once the file each worker reads is done, or
        // after its half-second grace, whichever comes first (a loaded machine may take longer over one file). An
        // answer written before the exit says that the call was cancelled.
        if let Some(answer) = raw.receive_left() {
            assert_eq!(answer["id"], 7, "{answer}");
            let error = &answer["result"]["structuredContent"]["error"];
            assert_eq!(error["code"], "STORAGE_ERROR", "{answer}");
            assert!(error["message"].as_str().unwrap().contains("cancelled by its caller"), "{answer}");
        }
        // An allowed read records after it reads: the search's one record, if its read stopped before the exit,
        // names nothing it disclosed (no answer went out); if the grace ran out first, no record. Nothing else.
        let records = env.audit_lines();
        assert!(records.len() <= before + 1, "at most the search's record: {:?}", &records[before..]);
        if let Some(record) = records.get(before) {
            assert_eq!((&record["operation"], &record["outcome"]), (&json!("search"), &json!("allowed")));
            assert_eq!(record.get("shown"), None, "the abandoned search disclosed nothing: {record}");
        }
    }

    #[test]
    fn a_cancelled_search_stops_working() {
        let env = Env::new();
        let query = slow_store(&env);
        let mut raw = Raw::spawn(&env, "worker");
        raw.initialize();
        raw.send(&search(7, &query));
        std::thread::sleep(Duration::from_millis(500));
        raw.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": { "requestId": 7, "reason": "the user gave up" } }));
        // Once the workers have finished the file each was reading, the process does nothing more: a second of
        // (almost) no CPU comes soon, where the whole search would keep it busy for much longer than the deadline.
        let deadline = Instant::now() + 2 * BOUND;
        let mut last = cpu(raw.pid());
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = cpu(raw.pid());
            if now - last < Duration::from_millis(100) {
                break;
            }
            assert!(Instant::now() < deadline, "the search went on after its cancellation: {now:?} of CPU");
            last = now;
        }
        // The server goes on: the next call is answered (the cancelled one never is).
        raw.send(&json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call",
                          "params": { "name": "memory_search", "arguments": { "prefix": "shared:none" } } }));
        assert_eq!(raw.receive()["id"], 8);
        let records = env.audit_lines();
        assert_eq!(records.len(), 2, "the cancelled search's record and the next call's");
        assert!(raw.close().success());
    }
}
