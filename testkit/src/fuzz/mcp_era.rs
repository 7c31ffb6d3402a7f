//! `mcp_era`: how the stdio server chooses a request's protocol era (`memory_mcp::serve`, `docs/CLI.md`, "Protocol
//! eras"), with a hostile `_meta`.
//!
//! Input: any bytes, spliced in as the `_meta` of four requests (a `memory_get` of another role's private entry, a
//! `memory_search`, `tools/list`, `server/discover`), served to a server bound to role `worker` (which reads shared
//! memory only) over a store that holds `private:main:plans`: once before any `initialize`, once after one.
//!
//! Properties:
//! - the session ends cleanly and every line written is a well-formed JSON-RPC response, each id answered at most
//!   once (the properties of `mcp_stdio`);
//! - the role never comes from the request: every record written while serving names `worker`, none allows
//!   `private:main:plans`, and its content never appears in the output;
//! - the era is the model's ([`super::http_body::era`], written from the documented rule): a request whose `_meta`
//!   names its version malformed is -32602 and reaches no door; one of the session era before `initialize` is
//!   -32002; -32002 answers nothing else; -32022 answers only a version other than `2026-07-28`; a result answers
//!   only a request of the session era after `initialize` or one naming `2026-07-28`;
//! - the work is bounded: the era is read in the one pass that counts a message's values, so a message of more
//!   than `MAX_VALUES` values is -32600 whatever its `_meta`.

use alp_memory::memory_audit::{MemoryAuditSink, Outcome};
use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
use alp_memory::memory_store::InMemoryStore;
use alp_memory::{CreateRequest, FieldInput, MemoryService, StaticActors};
use memory_mcp::MemoryServer;
use serde_json::Value;

use super::http_body::{Era, era};
use super::mcp_stdio::{INITIALIZE, Server, responses, serve};

/// The content of main's private entry, which must never reach worker.
const SECRET: &str = "the private plans of main";

/// Checks the properties on `data` as `_meta`, before and after `initialize`.
pub fn check(data: &[u8]) {
    check_session(data, false);
    check_session(data, true);
}

/// A server bound to `worker` over a store that holds `shared:note` and `private:main:plans`.
pub fn server() -> Server {
    let shared = Grant::parse("shared").unwrap();
    let private = Grant::parse("private:main").unwrap();
    let main = Actor::new(Role::parse("main").unwrap())
        .with_read([shared.clone(), private.clone()])
        .with_write([shared.clone(), private]);
    let worker = Role::parse("worker").unwrap();
    let reader = Actor::new(worker.clone()).with_read([shared]);
    let service = MemoryService::new(
        InMemoryStore::new(),
        MemoryAuditSink::new(),
        GrantPolicy,
        StaticActors::new([main, reader]),
    );
    for (id, content) in [("shared:note", "a shared note"), ("private:main:plans", SECRET)] {
        let request =
            CreateRequest { id: id.to_owned(), content: content.to_owned(), fields: FieldInput::new() };
        service.create("main", request).unwrap();
    }
    MemoryServer::new(service, worker)
}

/// The four request lines, with `meta` spliced in as their `_meta`.
fn requests(meta: &[u8]) -> Vec<Vec<u8>> {
    let params = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_get","arguments":{"id":"private:main:plans"},"_meta":"#,
            "}}",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{},"_meta":"#,
            "}}",
        ),
        (r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":"#, "}}"),
        (r#"{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":"#, "}}"),
    ];
    params
        .iter()
        .map(|(head, tail)| {
            // A line never holds a newline: the input's are spaces (JSON whitespace, or part of what is refused).
            let meta: Vec<u8> =
                meta.iter().map(|b| if matches!(b, b'\n' | b'\r') { b' ' } else { *b }).collect();
            [head.as_bytes(), &meta, tail.as_bytes()].concat()
        })
        .collect()
}

fn check_session(meta: &[u8], initialized: bool) {
    let server = server();
    let audit = server.clone();
    let before = audit.service().audit().records().len();
    let lines = requests(meta);
    let mut input = if initialized { INITIALIZE.to_vec() } else { Vec::new() };
    for line in &lines {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    let output = serve(server, &input);
    assert!(
        !String::from_utf8_lossy(&output).contains(SECRET),
        "another role's private content in the output: {}",
        String::from_utf8_lossy(&output)
    );
    let answers = responses(&output);
    let records = audit.service().audit().records();
    for record in records.iter().skip(before) {
        assert_eq!(record.actor(), "worker", "{record:?}");
        assert!(!(record.id() == "private:main:plans" && record.outcome() == Outcome::Allowed), "{record:?}");
    }
    for (n, line) in lines.iter().enumerate() {
        let id = Value::from(n + 1);
        let mine: Vec<&Value> = answers.iter().filter(|answer| answer["id"] == id).collect();
        assert!(mine.len() <= 1, "{mine:?}");
        let Some(answer) = mine.first() else {
            // Not a request this server could read an id from: not JSON (-32700), or refused as a whole.
            continue;
        };
        let code = answer["error"]["code"].as_i64();
        let model = era(line);
        let text = String::from_utf8_lossy(line);
        if code == Some(-32600) {
            // Refused before the era matters: too many values, or not a JSON-RPC message.
            continue;
        }
        match &model {
            Era::Malformed => assert_eq!(code, Some(-32602), "{text}: {answer}"),
            Era::Session if !initialized => assert_eq!(code, Some(-32002), "{text}: {answer}"),
            _ => assert_ne!(code, Some(-32002), "{text}: {answer}"),
        }
        if code == Some(-32022) {
            assert!(matches!(&model, Era::Stateless(version) if version != "2026-07-28"), "{text}: {answer}");
        }
        if answer.get("result").is_some() {
            let served = match &model {
                Era::Session => initialized,
                Era::Stateless(version) => version == "2026-07-28",
                Era::Malformed => false,
            };
            assert!(served, "{text}: {answer}");
        }
    }
}
