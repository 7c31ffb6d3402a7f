//! The protocol edges of a stdio session (`docs/CLI.md`, "The MCP server"), as a property over arbitrary message
//! sequences fed to the real server over an in-process pipe: valid and invalid ids, notifications, calls before
//! `initialize`, duplicate ids and cancellations.
//!
//! What must hold, checked against a model that reads the same sequence:
//! - a request with a valid id gets exactly one answer under that id (before `initialize`, anything of the session
//!   era but `initialize` and `ping` is -32002; a request of the stateless era, whose `_meta` names `2026-07-28`,
//!   is served with or without `initialize`), except that a call cancelled while in flight gets at most one (before
//!   `initialize`, a cancellation reaches stateless calls only);
//! - a request with an invalid id gets exactly one -32600 with a null id, a line that is not JSON one -32700;
//! - a notification gets none;
//! - every line written is a well-formed JSON-RPC 2.0 response;
//! - a message never runs twice: each `memory_get` reads its own entry, and the audit log holds exactly one `get`
//!   record for each one that must run (at most one when it was cancelled), none for the others.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use testkit::fuzz::mcp_stdio::{MAX_SAFE_ID, assert_response, server};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A client id: a small pool, so that ids repeat.
#[derive(Debug, Clone)]
enum Id {
    Int(i64),
    Str(&'static str),
}

impl Id {
    fn json(&self) -> Value {
        match self {
            Id::Int(n) => json!(n),
            Id::Str(s) => json!(s),
        }
    }
}

/// An id the server must refuse, as written on the line.
const BAD_IDS: [&str; 9] = [
    "null",
    "1.5",
    "2.0",
    "true",
    "{}",
    "[3]",
    "9007199254740992",
    "-9007199254740992",
    "9223372036854775807",
];

#[derive(Debug, Clone)]
enum Step {
    Initialize(Id),
    /// `notifications/initialized`.
    Initialized,
    Ping(Id),
    /// `memory_get` of an entry of its own.
    Get(Id),
    /// The same, with a protocol revision and client capabilities in `_meta`.
    GetWithMeta(Id),
    /// The same, of the stateless era (`2026-07-28` in `_meta`).
    GetStateless(Id),
    /// `tools/call` without an id: a notification, never run.
    GetNotification,
    /// `memory_get` under one of [`BAD_IDS`].
    BadId(usize),
    /// `notifications/cancelled` naming an id.
    Cancel(Id),
    /// A line that is not JSON.
    Garbage,
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        (0i64..4).prop_map(Id::Int),
        Just(Id::Int(MAX_SAFE_ID)),
        Just(Id::Int(-MAX_SAFE_ID)),
        prop_oneof![Just("a"), Just("b"), Just("0")].prop_map(Id::Str),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => id().prop_map(Step::Initialize),
        1 => Just(Step::Initialized),
        1 => id().prop_map(Step::Ping),
        6 => id().prop_map(Step::Get),
        2 => id().prop_map(Step::GetWithMeta),
        3 => id().prop_map(Step::GetStateless),
        1 => Just(Step::GetNotification),
        2 => (0..BAD_IDS.len()).prop_map(Step::BadId),
        3 => id().prop_map(Step::Cancel),
        1 => Just(Step::Garbage),
    ]
}

/// The entry step `n` reads.
fn entry(n: usize) -> String {
    format!("shared:s{n}")
}

/// The params of step `n`'s `memory_get`, with `_meta` naming `version` when given.
fn get_params(n: usize, version: Option<&str>) -> Value {
    let mut params = json!({ "name": "memory_get", "arguments": { "id": entry(n) } });
    if let Some(version) = version {
        params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": version,
                                  "io.modelcontextprotocol/clientCapabilities": {} });
    }
    params
}

fn line(n: usize, step: &Step) -> String {
    let request = |id: &Id, method: &str, params: Value| {
        json!({ "jsonrpc": "2.0", "id": id.json(), "method": method, "params": params }).to_string()
    };
    match step {
        Step::Initialize(id) => request(
            id,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "proptest", "version": "0" } }),
        ),
        Step::Initialized => json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(),
        Step::Ping(id) => json!({ "jsonrpc": "2.0", "id": id.json(), "method": "ping" }).to_string(),
        Step::Get(id) => request(id, "tools/call", get_params(n, None)),
        Step::GetWithMeta(id) => request(id, "tools/call", get_params(n, Some("2025-11-25"))),
        Step::GetStateless(id) => request(id, "tools/call", get_params(n, Some("2026-07-28"))),
        Step::GetNotification => {
            json!({ "jsonrpc": "2.0", "method": "tools/call", "params": get_params(n, None) }).to_string()
        }
        Step::BadId(bad) => format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{}}}"#,
            BAD_IDS[*bad],
            get_params(n, None)
        ),
        Step::Cancel(id) => json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": { "requestId": id.json(), "reason": "proptest" } })
        .to_string(),
        Step::Garbage => "{\"jsonrpc\":\"2.0\",\"id\":".to_owned(),
    }
}

/// How often a step's entry is read.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Runs {
    Never,
    Once,
    AtMostOnce,
}

/// What the server must answer to a sequence, and which entries it must read.
#[derive(Debug, Default)]
struct Expected {
    /// By id (JSON text): answers that must come.
    must: HashMap<String, usize>,
    /// By id: answers that may come (`must` plus the calls cancelled while they may have been in flight).
    may: HashMap<String, usize>,
    /// By id: -32002 answers, exactly.
    not_initialized: HashMap<String, usize>,
    /// -32600 answers with a null id, exactly.
    invalid: usize,
    /// -32700 answers, exactly.
    parse_errors: usize,
    /// By step: how often its entry is read.
    runs: Vec<(String, Runs)>,
}

fn model(steps: &[Step]) -> Expected {
    let mut expected = Expected::default();
    let mut initialized = false;
    // The requests handed on under each id and not cancelled yet: (step, whether it is of the stateless era).
    let mut open: HashMap<String, Vec<(usize, bool)>> = HashMap::new();
    for (n, step) in steps.iter().enumerate() {
        let mut runs = Runs::Never;
        let stateless = matches!(step, Step::GetStateless(_));
        let mut handed_on = |id: &Id, expected: &mut Expected| {
            let key = id.json().to_string();
            *expected.must.entry(key.clone()).or_default() += 1;
            *expected.may.entry(key.clone()).or_default() += 1;
            open.entry(key).or_default().push((n, stateless));
        };
        match step {
            Step::Initialize(id) => {
                initialized = true;
                handed_on(id, &mut expected);
            }
            Step::Ping(id) => handed_on(id, &mut expected),
            Step::Get(id) | Step::GetWithMeta(id) => {
                let key = id.json().to_string();
                if initialized {
                    handed_on(id, &mut expected);
                    runs = Runs::Once;
                } else {
                    *expected.must.entry(key.clone()).or_default() += 1;
                    *expected.may.entry(key.clone()).or_default() += 1;
                    *expected.not_initialized.entry(key).or_default() += 1;
                }
            }
            Step::GetStateless(id) => {
                handed_on(id, &mut expected);
                runs = Runs::Once;
            }
            Step::BadId(_) => expected.invalid += 1,
            Step::Garbage => expected.parse_errors += 1,
            Step::Cancel(id) => {
                let key = id.json().to_string();
                let (cancelled, kept): (Vec<_>, Vec<_>) = open
                    .remove(&key)
                    .unwrap_or_default()
                    .into_iter()
                    .partition(|(_, stateless)| initialized || *stateless);
                if !kept.is_empty() {
                    open.insert(key.clone(), kept);
                }
                for (cancelled, _) in cancelled {
                    *expected.must.get_mut(&key).unwrap() -= 1;
                    if let Some((_, runs)) = expected.runs.get_mut(cancelled)
                        && *runs == Runs::Once
                    {
                        *runs = Runs::AtMostOnce;
                    }
                }
            }
            Step::Initialized | Step::GetNotification => {}
        }
        expected.runs.push((entry(n), runs));
    }
    expected
}

/// How many answers each id got, and how many null-id answers of each code.
#[derive(Debug, Default)]
struct Answers {
    by_id: HashMap<String, usize>,
    not_initialized: HashMap<String, usize>,
    invalid: usize,
    parse_errors: usize,
}

impl Answers {
    fn add(&mut self, answer: &Value) {
        let code = answer["error"]["code"].as_i64();
        if answer["id"].is_null() {
            match code {
                Some(-32600) => self.invalid += 1,
                Some(-32700) => self.parse_errors += 1,
                _ => panic!("a null id on {answer}"),
            }
            return;
        }
        let key = answer["id"].to_string();
        *self.by_id.entry(key.clone()).or_default() += 1;
        if code == Some(-32002) {
            assert_eq!(answer["error"]["message"], "server not initialized", "{answer}");
            *self.not_initialized.entry(key).or_default() += 1;
        }
    }

    /// Every answer that must come has come.
    fn complete(&self, expected: &Expected) -> bool {
        self.invalid >= expected.invalid
            && self.parse_errors >= expected.parse_errors
            && expected.must.iter().all(|(id, must)| self.by_id.get(id).copied().unwrap_or_default() >= *must)
    }
}

const WAIT: Duration = Duration::from_secs(20);

/// Feeds `steps` to a fresh server, waits for every answer that must come, ends the input and returns every line
/// written and the IDs of the `get` records.
fn run(steps: &[Step], expected: &Expected) -> (Vec<Value>, Vec<String>) {
    let server = server();
    let audit = server.clone();
    let mut input = String::new();
    for (n, step) in steps.iter().enumerate() {
        input.push_str(&line(n, step));
        input.push('\n');
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let lines = runtime.block_on(async {
        let (client, server_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        let (client_read, mut client_write) = tokio::io::split(client);
        let serving = memory_mcp::serve(server, server_read, server_write);
        let driving = async move {
            client_write.write_all(input.as_bytes()).await.unwrap();
            let mut reader = BufReader::new(client_read);
            let mut lines = Vec::new();
            let mut answers = Answers::default();
            while !answers.complete(expected) {
                let mut line = String::new();
                let read = tokio::time::timeout(WAIT, reader.read_line(&mut line)).await;
                let read = read.unwrap_or_else(|_| panic!("answers missing after {WAIT:?}: {answers:?}"));
                assert!(read.unwrap() > 0, "the output ended early: {answers:?}");
                let answer = assert_response(line.trim_end_matches('\n').as_bytes());
                answers.add(&answer);
                lines.push(answer);
            }
            // End of input: whatever else comes is read to the end.
            client_write.shutdown().await.unwrap();
            drop(client_write);
            let mut line = String::new();
            while tokio::time::timeout(WAIT, reader.read_line(&mut line)).await.unwrap().unwrap() > 0 {
                lines.push(assert_response(line.trim_end_matches('\n').as_bytes()));
                line.clear();
            }
            lines
        };
        let (served, lines) = tokio::join!(serving, driving);
        served.unwrap();
        lines
    });
    let gets = audit
        .service()
        .audit()
        .records()
        .iter()
        .inspect(|record| assert_eq!(record.operation().as_str(), "get", "{record:?}"))
        .map(|record| record.id().to_owned())
        .collect();
    (lines, gets)
}

fn check(steps: &[Step]) {
    let expected = model(steps);
    let (lines, gets) = run(steps, &expected);
    let mut answers = Answers::default();
    for answer in &lines {
        answers.add(answer);
    }
    assert_eq!(answers.invalid, expected.invalid, "-32600 with a null id: {lines:#?}");
    assert_eq!(answers.parse_errors, expected.parse_errors, "-32700: {lines:#?}");
    assert_eq!(answers.not_initialized, expected.not_initialized, "-32002: {lines:#?}");
    for (id, got) in &answers.by_id {
        let (must, may) = (expected.must.get(id).copied().unwrap_or_default(), expected.may[id]);
        assert!((must..=may).contains(got), "id {id}: {got} answers, {must}..={may} expected: {lines:#?}");
    }
    for (id, must) in &expected.must {
        assert!(
            answers.by_id.get(id).copied().unwrap_or_default() >= *must,
            "id {id} unanswered: {lines:#?}"
        );
    }
    for (entry, runs) in &expected.runs {
        let count = gets.iter().filter(|id| *id == entry).count();
        let ok = match runs {
            Runs::Never => count == 0,
            Runs::Once => count == 1,
            Runs::AtMostOnce => count <= 1,
        };
        assert!(ok, "{entry}: read {count} times, expected {runs:?}; records {gets:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_request_is_answered_once_and_nothing_runs_twice(steps in prop::collection::vec(step(), 1..28)) {
        check(&steps);
    }
}

/// The cases the property is about, written out: a call before `initialize` with `_meta`, the same id twice in
/// flight, a cancellation naming both, and every kind of bad id.
#[test]
fn the_edges_written_out() {
    use Step::*;
    check(&[GetWithMeta(Id::Int(1)), Get(Id::Str("a")), Ping(Id::Int(2)), Cancel(Id::Int(1)), Initialized]);
    check(&[Initialize(Id::Int(0)), Get(Id::Int(1)), Get(Id::Int(1)), Get(Id::Int(1))]);
    check(&[Initialize(Id::Int(0)), Get(Id::Int(1)), Get(Id::Int(1)), Cancel(Id::Int(1)), Get(Id::Int(1))]);
    check(&[Initialize(Id::Int(0)), Initialize(Id::Int(0)), GetWithMeta(Id::Int(0)), Cancel(Id::Str("zz"))]);
    // Stateless calls need no `initialize`, and a cancellation before it reaches them, not a `ping` under their id.
    check(&[
        GetStateless(Id::Int(1)),
        Ping(Id::Int(1)),
        Cancel(Id::Int(1)),
        GetStateless(Id::Int(2)),
        Get(Id::Int(3)),
    ]);
    check(&[GetStateless(Id::Int(1)), Initialize(Id::Int(0)), GetStateless(Id::Int(1)), Cancel(Id::Int(1))]);
    let mut bad: Vec<Step> = (0..BAD_IDS.len()).map(BadId).collect();
    bad.insert(4, Initialize(Id::Int(MAX_SAFE_ID)));
    bad.push(GetNotification);
    bad.push(Garbage);
    check(&bad);
}
