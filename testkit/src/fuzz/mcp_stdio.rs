//! `mcp_stdio`: the MCP server's stdio line handler (`memory_mcp::serve`: newline-delimited JSON-RPC, `docs/CLI.md`),
//! with the real server over an in-memory store, role `main` reading and writing shared memory.
//!
//! Input: any bytes, served twice: as they are, and after a valid `initialize` line (so the fuzzer reaches the tools
//! without having to find the handshake first).
//!
//! Properties:
//! - the session ends cleanly at the end of the input (`serve` returns `Ok`) and nothing panics;
//! - every line written is a JSON-RPC 2.0 response, ending with a newline: an object with exactly the members
//!   `jsonrpc` (`"2.0"`), `id` (null, a string, or an integer from -(2^53 - 1) to 2^53 - 1) and one of `result` (an
//!   object) or `error` (`code`, an integer; `message`, a string; optionally `data`);
//! - a null `id` is only ever on a parse error (-32700) or an invalid request (-32600);
//! - every other answer carries an id that a line of the input carried at its top level, and no id is answered more
//!   often than the input carried it (so a request is never answered twice, and no id of the server's own leaks).

use std::collections::HashMap;

use alp_memory::memory_audit::MemoryAuditSink;
use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
use alp_memory::memory_store::InMemoryStore;
use alp_memory::{MemoryService, StaticActors};
use memory_mcp::MemoryServer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use tokio::io::AsyncReadExt;

/// The server the properties run: role `main`, reading and writing shared memory, over an in-memory store.
pub type Server = MemoryServer<InMemoryStore, MemoryAuditSink, GrantPolicy, StaticActors>;

/// An `initialize` request and the `notifications/initialized` after it, as a client sends them first.
pub const INITIALIZE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"0\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// The largest integer id magnitude a response may carry: 2^53 - 1.
pub const MAX_SAFE_ID: i64 = (1 << 53) - 1;

/// Checks the properties on `data`, served as it is and after [`INITIALIZE`].
pub fn check(data: &[u8]) {
    check_session(data);
    let mut initialized = INITIALIZE.to_vec();
    initialized.extend_from_slice(data);
    check_session(&initialized);
}

/// A fresh server: role `main` over an empty in-memory store, with an in-memory audit sink.
pub fn server() -> Server {
    let shared = Grant::parse("shared").unwrap();
    let main = Role::parse("main").unwrap();
    let actor = Actor::new(main.clone()).with_read([shared.clone()]).with_write([shared]);
    let service = MemoryService::new(
        InMemoryStore::new(),
        MemoryAuditSink::new(),
        GrantPolicy,
        StaticActors::new([actor]),
    );
    MemoryServer::new(service, main)
}

/// Serves `input` to a fresh [`server`] until it ends and checks every property on what was written.
pub fn check_session(input: &[u8]) {
    let output = serve(server(), input);
    let carried = input_ids(input);
    let mut answered: HashMap<String, usize> = HashMap::new();
    for answer in responses(&output) {
        let id = &answer["id"];
        if id.is_null() {
            let code = answer["error"]["code"].as_i64();
            assert!(
                matches!(code, Some(-32700 | -32600)),
                "a null id on an answer that is not -32700 or -32600: {answer}"
            );
            continue;
        }
        let key = id.to_string();
        let count = answered.entry(key.clone()).or_default();
        *count += 1;
        let allowed = carried.get(&key).copied().unwrap_or_default();
        assert!(
            *count <= allowed,
            "id {key} answered {count} times, carried by {allowed} input lines: {answer}"
        );
    }
}

/// Runs `server` on `input` (then end of input) on a runtime of its own and returns every byte it wrote.
///
/// # Panics
///
/// When the session does not end cleanly.
pub fn serve(server: Server, input: &[u8]) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (writer, mut reader) = tokio::io::duplex(64 * 1024);
        let serving = memory_mcp::serve(server, std::io::Cursor::new(input.to_vec()), writer);
        let mut output = Vec::new();
        let (served, read) = tokio::join!(serving, reader.read_to_end(&mut output));
        if let Err(e) = served {
            panic!("the session did not end cleanly: {e}");
        }
        read.unwrap();
        output
    })
}

/// The lines of `output`, each checked to be a well-formed JSON-RPC 2.0 response ([`assert_response`]).
///
/// # Panics
///
/// When `output` does not end with a newline, or a line is not a well-formed response.
pub fn responses(output: &[u8]) -> Vec<Value> {
    if output.is_empty() {
        return Vec::new();
    }
    let Some(body) = output.strip_suffix(b"\n") else {
        panic!("the output does not end with a newline: {:?}", String::from_utf8_lossy(output))
    };
    body.split(|b| *b == b'\n').map(assert_response).collect()
}

/// One line the server wrote, read as a JSON-RPC 2.0 response and checked member by member.
///
/// # Panics
///
/// When it is not a well-formed response.
pub fn assert_response(line: &[u8]) -> Value {
    let text = String::from_utf8_lossy(line);
    let value: Value = serde_json::from_slice(line).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    let object = value.as_object().unwrap_or_else(|| panic!("not an object: {text}"));
    assert_eq!(object.get("jsonrpc"), Some(&Value::from("2.0")), "{text}");
    let id = object.get("id").unwrap_or_else(|| panic!("no id: {text}"));
    assert!(
        id.is_null()
            || id.is_string()
            || id.as_i64().is_some_and(|n| (-MAX_SAFE_ID..=MAX_SAFE_ID).contains(&n)),
        "the id is not null, a string or a safe integer: {text}"
    );
    match (object.get("result"), object.get("error")) {
        (Some(result), None) => assert!(result.is_object(), "the result is not an object: {text}"),
        (None, Some(error)) => {
            let error = error.as_object().unwrap_or_else(|| panic!("the error is not an object: {text}"));
            assert!(error.get("code").is_some_and(Value::is_i64), "the error code is not an integer: {text}");
            assert!(
                error.get("message").is_some_and(Value::is_string),
                "the error message is not a string: {text}"
            );
            assert!(error.keys().all(|k| matches!(k.as_str(), "code" | "message" | "data")), "{text}");
        }
        _ => panic!("not exactly one of result and error: {text}"),
    }
    assert_eq!(object.len(), 3, "members other than jsonrpc, id and result or error: {text}");
    value
}

/// How many input lines carry each id (as JSON text) at their top level, counting every `id` member of a line.
fn input_ids(input: &[u8]) -> HashMap<String, usize> {
    let mut carried = HashMap::new();
    for line in input.split(|b| *b == b'\n') {
        // The server trims a line as ASCII does (a form feed too), which JSON alone would not.
        let mut de = serde_json::Deserializer::from_slice(line.trim_ascii());
        if let Ok(TopLevelIds(ids)) = de.deserialize_any(TopLevelIds(Vec::new())) {
            for id in ids {
                *carried.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    carried
}

/// Every top-level `id` member of a JSON object (repeated keys included), nothing else kept.
struct TopLevelIds(Vec<Value>);

impl<'de> Visitor<'de> for TopLevelIds {
    type Value = TopLevelIds;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<TopLevelIds, A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                self.0.push(map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TopLevelIds, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| self)
    }

    fn visit_bool<E>(self, _: bool) -> Result<TopLevelIds, E> {
        Ok(self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<TopLevelIds, E> {
        Ok(self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<TopLevelIds, E> {
        Ok(self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<TopLevelIds, E> {
        Ok(self)
    }

    fn visit_str<E>(self, _: &str) -> Result<TopLevelIds, E> {
        Ok(self)
    }

    fn visit_unit<E>(self) -> Result<TopLevelIds, E> {
        Ok(self)
    }
}
