//! Several `alp serve` processes on one store: two replicas on one PostgreSQL database (the cluster `cargo xtask test`
//! starts; without it these tests are skipped with a notice, and fail with `ALP_REQUIRE_POSTGRES=1`), and two servers
//! on one Markdown root. A compare-and-swap race between them has exactly one winner and never reuses a version; the
//! audit chain verifies afterwards; and `kill -9` of a replica under load leaves no torn record and loses no
//! acknowledged write, while the other replica keeps answering.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::Env;
use crate::postgres;
use crate::serve::{Serve, WAIT, token};

/// How long a wait for progress may last before the test fails (generous: a loaded machine).
const PATIENCE: Duration = Duration::from_secs(180);

/// A `tools/call` of `name` over raw HTTP, connected but not yet sent (so that racing calls start together).
struct Pending {
    stream: TcpStream,
    request: Vec<u8>,
}

impl Pending {
    fn new(addr: &str, secret: &str, name: &str, arguments: Value) -> std::io::Result<Pending> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } })
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nAuthorization: Bearer {secret}\r\nContent-Length: {}\r\nConnection: \
             close\r\n\r\n{body}",
            body.len()
        );
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(WAIT))?;
        Ok(Pending { stream, request: request.into_bytes() })
    }

    /// Sends the call and reads its whole answer: `Ok(structuredContent)` for a result, `Err(error object)` for a
    /// tool error; an I/O error (or a cut answer) when the server is gone, so the call was never acknowledged.
    fn send(mut self) -> std::io::Result<Result<Value, Value>> {
        self.stream.write_all(&self.request)?;
        let mut answer = Vec::new();
        self.stream.read_to_end(&mut answer)?;
        let cut = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "a cut answer");
        let text = String::from_utf8(answer).map_err(|_| cut())?;
        let (head, body) = text.split_once("\r\n\r\n").ok_or_else(cut)?;
        let document: Value = serde_json::from_str(body).map_err(|_| cut())?;
        assert!(head.starts_with("HTTP/1.1 200 "), "{text}");
        let result = &document["result"];
        let content = result["structuredContent"].clone();
        match result["isError"].as_bool() {
            Some(false) => Ok(Ok(content)),
            Some(true) => Ok(Err(content["error"].clone())),
            None => panic!("not a tool result: {text}"),
        }
    }
}

/// One call, expected to be answered.
fn call(addr: &str, secret: &str, name: &str, arguments: Value) -> Result<Value, Value> {
    Pending::new(addr, secret, name, arguments.clone())
        .and_then(Pending::send)
        .unwrap_or_else(|e| panic!("{name} {arguments} on {addr}: {e}"))
}

fn answered(addr: &str, secret: &str, name: &str, arguments: Value) -> Value {
    call(addr, secret, name, arguments.clone()).unwrap_or_else(|e| panic!("{name} {arguments}: {e}"))
}

/// The versions `history` lists for `id`, newest first, with their contents (a tombstone has none).
fn history(addr: &str, secret: &str, id: &str) -> Vec<(u64, Option<String>)> {
    let listed = answered(addr, secret, "memory_history", json!({ "id": id, "limit": 100 }));
    listed["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["version"].as_u64().unwrap(), v["content"].as_str().map(str::to_owned)))
        .collect()
}

/// `rounds` rounds of `clients` concurrent `memory_update` calls of one entry with the same expectedVersion, spread
/// over `addrs` in turn. Each round has exactly one winner, which wrote the next version; every loser gets
/// VERSION_CONFLICT naming the version it expected and the winner's as `actual`. History then lists every version
/// once, each with its winner's content. Returns how many update calls were made.
fn cas_race(addrs: &[&str], secret: &str, id: &str, rounds: u64, clients: usize) -> usize {
    let created = answered(addrs[0], secret, "memory_create", json!({ "id": id, "content": "round start" }));
    assert_eq!(created["version"], 1);
    let mut winners = vec!["round start".to_owned()];
    for round in 0..rounds {
        let expected = round + 1;
        let barrier = Barrier::new(clients);
        let results: Vec<(String, Result<Value, Value>)> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..clients)
                .map(|client| {
                    let (addr, barrier) = (addrs[client % addrs.len()], &barrier);
                    scope.spawn(move || {
                        let content = format!("round {round} client {client} via {addr}");
                        let arguments = json!({ "id": id, "expectedVersion": expected, "content": content });
                        let pending = Pending::new(addr, secret, "memory_update", arguments);
                        barrier.wait();
                        (content, pending.and_then(Pending::send).unwrap())
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut won = Vec::new();
        for (content, result) in results {
            match result {
                Ok(entry) => {
                    assert_eq!(
                        (entry["version"].as_u64(), entry["content"].as_str()),
                        (Some(expected + 1), Some(content.as_str()))
                    );
                    won.push(content);
                }
                Err(error) => assert_eq!(
                    (error["code"].as_str(), error["expected"].as_u64(), error["actual"].as_u64()),
                    (Some("VERSION_CONFLICT"), Some(expected), Some(expected + 1)),
                    "round {round}: {error}"
                ),
            }
        }
        assert_eq!(won.len(), 1, "round {round}: one winner, not {won:?}");
        winners.extend(won);
    }
    // Every version once, newest first, each holding what its winner wrote (seen through every server).
    for addr in addrs {
        let versions = history(addr, secret, id);
        let expected: Vec<(u64, Option<String>)> =
            winners.iter().enumerate().rev().map(|(i, c)| (i as u64 + 1, Some(c.clone()))).collect();
        assert_eq!(versions, expected);
    }
    usize::try_from(rounds).unwrap() * clients
}

/// The records of a log: each line parses, and every `update` of `id` is the worker's, via `token_id`, allowed.
fn count_updates(lines: &[Value], id: &str, token_id: &str) -> usize {
    let updates: Vec<&Value> = lines.iter().filter(|r| r["operation"] == "update" && r["id"] == id).collect();
    for record in &updates {
        assert_eq!(
            (record["actor"].as_str(), record["via"].as_str(), record["outcome"].as_str()),
            (Some("worker"), Some(token_id), Some("allowed")),
            "{record}"
        );
    }
    updates.len()
}

fn database_log(db: &testkit::pg::TestDb) -> Vec<Value> {
    let mut client = db.connect().unwrap();
    client
        .query("SELECT line FROM alp_audit ORDER BY seq", &[])
        .unwrap()
        .iter()
        .map(|row| {
            let line: String = row.get(0);
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("a torn record ({e}): {line:?}"))
        })
        .collect()
}

/// `alp audit verify` on the database: ok, and as many records as the table holds.
fn verify_database(env: &Env, db: &testkit::pg::TestDb, records: usize) {
    let verified = postgres::ok(env, db.url(), &["audit", "verify"]);
    assert_eq!(
        (&verified["ok"], verified["records"].as_u64()),
        (&json!(true), Some(records as u64)),
        "{verified}"
    );
}

/// A database with the schema and a worker token: (id, secret).
fn database_with_token(env: &Env, db: &testkit::pg::TestDb) -> (String, String) {
    postgres::ok(env, db.url(), &["init"]);
    let created = postgres::ok(env, db.url(), &["token", "create", "--role", "worker", "--name", "replicas"]);
    (created["id"].as_str().unwrap().to_owned(), created["token"].as_str().unwrap().to_owned())
}

#[test]
fn a_compare_and_swap_race_between_two_replicas_on_one_database_has_exactly_one_winner_per_round() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let (token_id, secret) = database_with_token(&env, &db);
    let (one, two) = (Serve::start_on(&env, db.url()), Serve::start_on(&env, db.url()));
    let id = "project:alp:log:race";
    let calls = cas_race(&[&one.addr, &two.addr], &secret, id, 30, 6);
    // Every update call wrote its one record, and the chain both replicas appended to verifies.
    let lines = database_log(&db);
    assert_eq!(count_updates(&lines, id, &token_id), calls);
    verify_database(&env, &db, lines.len());
    assert_eq!(one.terminate().code(), Some(0));
    assert_eq!(two.terminate().code(), Some(0));
}

#[test]
fn a_compare_and_swap_race_between_two_servers_on_one_markdown_root_has_exactly_one_winner_per_round() {
    let env = Env::new();
    let (token_id, secret) = token(&env, "worker", &[]);
    let (one, two) = (Serve::start(&env), Serve::start(&env));
    let id = "project:alp:log:race";
    let calls = cas_race(&[&one.addr, &two.addr], &secret, id, 30, 6);
    let lines = env.audit_lines();
    assert_eq!(count_updates(&lines, id, &token_id), calls);
    let verified = env.run(&["--json", "audit", "verify"], None);
    assert_eq!(verified.status, 0, "{verified:?}");
    assert_eq!(
        (&verified.json()["ok"], verified.json()["records"].as_u64()),
        (&json!(true), Some(lines.len() as u64))
    );
    assert_eq!(one.terminate().code(), Some(0));
    assert_eq!(two.terminate().code(), Some(0));
}

/// What one writer of the kill test saw: the versions it was answered for (and one it learnt had been written by a
/// call cut by the kill), with their contents.
#[derive(Default)]
struct Written {
    versions: BTreeMap<u64, String>,
    cut: usize,
    /// Calls the kill cut after they were sent (in flight), against those refused a connection.
    in_flight: usize,
    refused: usize,
}

/// The addresses writers use: replica one (replaced after each kill, `epoch` counting the replacements) and two.
struct Targets {
    one: Mutex<String>,
    two: String,
    epoch: AtomicUsize,
}

/// Writes `id` in a loop through replica one (`home_one`) or two until `stop`: each update at the version it was
/// last answered for. A call that replica one does not answer (killed) is never counted as written: the writer writes
/// through two until one is replaced, and a version that the cut call wrote after all (found by a get, or by the
/// conflict of the next update) must hold that call's content.
fn writer(
    targets: &Targets,
    secret: &str,
    id: &str,
    home_one: bool,
    acks: &AtomicUsize,
    stop: &AtomicBool,
) -> Written {
    let mut written = Written::default();
    written.versions.insert(1, format!("{id} 0"));
    let mut current = 1;
    let mut away_since: Option<usize> = None;
    // The content of a call the kill cut, while it is not known whether it was written.
    let mut unsure: Option<String> = None;
    let settle = |current: &mut u64, unsure: &mut Option<String>, written: &mut Written| {
        let now = answered(&targets.two, secret, "memory_get", json!({ "id": id }));
        let version = now["version"].as_u64().unwrap();
        if version == *current + 1 {
            let content =
                unsure.take().unwrap_or_else(|| panic!("{id}: v{version} written by no call: {now}"));
            assert_eq!(now["content"].as_str(), Some(content.as_str()), "only the cut call wrote {id}");
            *current = version;
            written.versions.insert(version, content);
            written.cut += 1;
        } else {
            assert_eq!(version, *current, "{now}");
        }
    };
    for n in 1.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let epoch = targets.epoch.load(Ordering::SeqCst);
        if away_since.is_some_and(|since| since != epoch) {
            away_since = None;
        }
        let on_one = home_one && away_since.is_none();
        let addr = if on_one { targets.one.lock().unwrap().clone() } else { targets.two.clone() };
        let content = format!("{id} {n}");
        let arguments = json!({ "id": id, "expectedVersion": current, "content": content });
        let pending = Pending::new(&addr, secret, "memory_update", arguments);
        let connected = pending.is_ok();
        match pending.and_then(Pending::send) {
            Ok(Ok(entry)) => {
                assert_eq!(
                    (entry["version"].as_u64(), entry["content"].as_str()),
                    (Some(current + 1), Some(content.as_str()))
                );
                // A cut call at the same expectedVersion can no longer be written.
                unsure = None;
                current += 1;
                written.versions.insert(current, content);
                acks.fetch_add(1, Ordering::SeqCst);
            }
            // The cut call's commit landed after the get that followed it.
            Ok(Err(error)) if unsure.is_some() && error["code"] == "VERSION_CONFLICT" => {
                settle(&mut current, &mut unsure, &mut written);
            }
            Ok(Err(error)) => panic!("{id} at {current} via {addr}: {error}"),
            Err(e) => {
                assert!(on_one, "replica two failed a call: {e}");
                away_since = Some(epoch);
                if connected {
                    written.in_flight += 1;
                } else {
                    written.refused += 1;
                }
                unsure = Some(content);
                settle(&mut current, &mut unsure, &mut written);
            }
        }
    }
    if unsure.is_some() {
        settle(&mut current, &mut unsure, &mut written);
    }
    written
}

/// Sets the flag when dropped, so that a failing test stops its writers instead of waiting for them forever.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Waits until every counter has passed its mark (failing at once when a writer has stopped: it panicked).
fn wait_for(acks: &[AtomicUsize], marks: &[usize], stopped: &dyn Fn() -> bool, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    while acks.iter().zip(marks).any(|(a, m)| a.load(Ordering::SeqCst) < *m) {
        assert!(!stopped(), "{what}: a writer stopped");
        assert!(Instant::now() < deadline, "{what}: {acks:?} against {marks:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_9_of_a_replica_under_load_tears_no_record_and_loses_no_acknowledged_write() {
    let Some(db) = testkit::pg::test_database() else { return };
    let env = Env::new();
    let (token_id, secret) = database_with_token(&env, &db);
    let mut one = Serve::start_on(&env, db.url());
    let two = Serve::start_on(&env, db.url());
    const WRITERS: usize = 4;
    const KILLS: usize = 3;
    // Writes each writer must be answered for between two steps.
    const STEP: usize = 5;
    let ids: Vec<String> = (0..WRITERS).map(|w| format!("project:alp:log:w{w}")).collect();
    for id in &ids {
        answered(&one.addr, &secret, "memory_create", json!({ "id": id, "content": format!("{id} 0") }));
    }
    let targets =
        Targets { one: Mutex::new(one.addr.clone()), two: two.addr.clone(), epoch: AtomicUsize::new(0) };
    let acks: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let stop = AtomicBool::new(false);
    let written: Vec<Written> = std::thread::scope(|scope| {
        let _stop = StopOnDrop(&stop);
        let threads: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (targets, secret, id, acks, stop) = (&targets, &secret, &ids[w], &acks[w], &stop);
                scope.spawn(move || writer(targets, secret, id, w % 2 == 0, acks, stop))
            })
            .collect();
        let marks =
            |step: usize| -> Vec<usize> { acks.iter().map(|a| a.load(Ordering::SeqCst) + step).collect() };
        let stopped = || threads.iter().any(std::thread::ScopedJoinHandle::is_finished);
        for kill in 0..KILLS {
            // Under load: every writer answered a few times since the last step, then replica one dies mid-flight.
            wait_for(&acks, &marks(STEP), &stopped, "writing before a kill");
            one.child.kill().unwrap();
            one.child.wait().unwrap();
            // The other replica keeps answering every writer, those of the dead one included.
            wait_for(&acks, &marks(STEP), &stopped, &format!("writing after kill {kill}"));
            one = Serve::start_on(&env, db.url());
            *targets.one.lock().unwrap() = one.addr.clone();
            targets.epoch.fetch_add(1, Ordering::SeqCst);
        }
        // The replacement serves too, then the writers stop.
        wait_for(&acks, &marks(STEP), &stopped, "writing after the last replacement");
        stop.store(true, Ordering::SeqCst);
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });

    // No torn record: every row parses and the chain verifies; every answered update has its record.
    let lines = database_log(&db);
    verify_database(&env, &db, lines.len());
    for (id, written) in ids.iter().zip(&written) {
        // Each written version (1 is the create) came from an update call that wrote its record first.
        assert!(count_updates(&lines, id, &token_id) >= written.versions.len() - 1, "{id}");
        // Every acknowledged version still there with its content, versions never reused, read through both.
        let (&last, _) = written.versions.last_key_value().unwrap();
        for addr in [&one.addr, &two.addr] {
            let now = answered(addr, &secret, "memory_get", json!({ "id": id }));
            assert_eq!(now["version"].as_u64(), Some(last), "{now}");
            let versions = history(addr, &secret, id);
            let numbers: Vec<u64> = versions.iter().map(|(v, _)| *v).collect();
            let expected: Vec<u64> = (last.saturating_sub(99).max(1)..=last).rev().collect();
            assert_eq!(numbers, expected, "{id}: each version once, none lost, the oldest dropped past 100");
            for (version, content) in versions {
                assert_eq!(content.as_ref(), written.versions.get(&version), "{id} v{version}");
            }
        }
    }
    let total: usize = written.iter().map(|w| w.versions.len()).sum();
    let cut: usize = written.iter().map(|w| w.cut).sum();
    let in_flight: usize = written.iter().map(|w| w.in_flight).sum();
    let refused: usize = written.iter().map(|w| w.refused).sum();
    eprintln!(
        "note: {KILLS} kills, {total} versions written by {WRITERS} writers, {cut} of them by a call the kill cut; \
         {in_flight} calls cut in flight, {refused} refused a connection"
    );
    assert_eq!(one.terminate().code(), Some(0));
    assert_eq!(two.terminate().code(), Some(0));
}
