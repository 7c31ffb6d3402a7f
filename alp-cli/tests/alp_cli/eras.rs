//! Both protocol eras on both servers, chosen per request (`docs/CLI.md`, "The MCP server", "Protocol eras"):
//! MCP `2026-07-28`, whose requests name their version in `_meta` and need no `initialize`, beside the session era
//! (`2025-11-25` and older), on `alp mcp` (stdio) and `alp serve` (Streamable HTTP).
//!
//! Raw JSON-RPC for every rule (`server/discover`, stateless calls without `initialize`, `resultType`, `ttlMs` and
//! `cacheScope`, -32022, -32020, the session era unchanged, the role never taken from anything an era carries), and
//! the official Python SDK (`mcp` >= 2.3, from PyPI, in a virtual environment made once per run under the target
//! directory) against both servers in its three modes: its automatic probe, stateless only, and the `initialize`
//! handshake. When pip cannot reach PyPI the SDK tests print a notice and pass, unless `ALP_REQUIRE_PYTHON_SDK=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::cli::Env;
use crate::mcp::transport::Raw;
use crate::serve::{Serve, header, token};

/// The stateless revision.
const STATELESS: &str = "2026-07-28";
/// Every revision both servers serve, as `server/discover` and -32022 list them.
const SUPPORTED: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
/// How long a stateless `tools/list` or `server/discover` may be cached, in milliseconds.
const TTL_MS: u64 = 3_600_000;
/// The nine tools, in the order `tools/list` gives them: the same in both eras.
use crate::mcp::TOOLS;

/// The `_meta` of a stateless request: its version, capabilities, and a `clientInfo` that names another role (data,
/// never identity).
fn meta_of(version: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "main", "version": "0" },
    })
}

/// A request of the stateless era.
fn stateless(id: Value, method: &str, params: Value) -> Value {
    with_version(id, method, params, json!(STATELESS))
}

/// A request whose `_meta` names `version` as given.
fn with_version(id: Value, method: &str, params: Value, version: Value) -> Value {
    let mut params = if params.is_null() { json!({}) } else { params };
    params["_meta"] = meta_of(version);
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A request of the session era.
fn session(id: Value, method: &str, params: Value) -> Value {
    let mut request = json!({ "jsonrpc": "2.0", "id": id, "method": method });
    if !params.is_null() {
        request["params"] = params;
    }
    request
}

fn get(id: &str) -> Value {
    json!({ "name": "memory_get", "arguments": { "id": id } })
}

fn search(query: &str) -> Value {
    json!({ "name": "memory_search", "arguments": { "query": query } })
}

/// A root with a shared entry every role reads and a private one of main's.
fn seeded() -> Env {
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:team:db", "--content", "Postgres 16 for the team."]);
    env.ok("main", &["memory", "create", "private:main:plans", "--content", "Leave in May."]);
    env
}

/// A record without what differs between any two calls (its place in the chain and its time).
fn essence(record: &Value) -> Value {
    let mut record = record.clone();
    for key in ["seq", "timestamp", "prevHash", "hash"] {
        record.as_object_mut().unwrap().remove(key);
    }
    record
}

/// The records written after the first `skip`, without their place in the chain.
fn records_after(env: &Env, skip: usize) -> Vec<Value> {
    env.audit_lines().iter().skip(skip).map(essence).collect()
}

/// A result of the session era: the stateless one without `resultType` and without the `_meta` naming the server.
fn as_session_era(result: &Value) -> Value {
    let mut result = result.clone();
    let object = result.as_object_mut().unwrap();
    object.remove("resultType");
    assert_eq!(object.remove("_meta"), Some(json!({ SERVER_INFO: server_info() })), "{result}");
    result
}

/// The `_meta` key naming the server in every stateless result.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Who the server says it is.
fn server_info() -> Value {
    json!({ "name": "alp-memory", "version": env!("CARGO_PKG_VERSION") })
}

/// A stateless result names the server in its `_meta`.
fn assert_identified(result: &Value) {
    assert_eq!(result["_meta"][SERVER_INFO], server_info(), "{result}");
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

fn assert_unsupported(answer: &Value, id: Value, requested: &str) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert_eq!(answer["error"]["data"]["supported"], json!(SUPPORTED), "{answer}");
    assert_eq!(answer["error"]["data"]["requested"], requested, "{answer}");
}

/// The answer to `server/discover`, checked for the specification's shape; `scope` is its cache scope.
fn assert_discovered(result: &Value, scope: &str) {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["supportedVersions"], json!(SUPPORTED), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_identified(result);
    assert!(result["instructions"].as_str().unwrap().contains("Governed memory"), "{result}");
    assert_eq!((result["ttlMs"].as_u64(), result["cacheScope"].as_str()), (Some(TTL_MS), Some(scope)));
}

/// A stateless `tools/list` result: complete, cacheable by anyone, the nine tools in their fixed order.
fn assert_stateless_list(listed: &Value) {
    assert_eq!(listed["resultType"], "complete", "{listed}");
    assert_identified(listed);
    assert_eq!((listed["ttlMs"].as_u64(), listed["cacheScope"].as_str()), (Some(TTL_MS), Some("public")));
    assert_eq!(tool_names(listed), TOOLS);
}

/// A session-era `tools/list` result: exactly as before the stateless era (no `resultType`, no caching hints, no
/// `_meta`).
fn assert_session_list(listed: &Value) {
    for key in ["resultType", "ttlMs", "cacheScope", "_meta"] {
        assert!(listed.get(key).is_none(), "{key} in a session-era list: {listed}");
    }
    assert_eq!(tool_names(listed), TOOLS);
}

mod stdio {
    use super::*;

    fn not_initialized(id: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32002, "message": "server not initialized" } })
    }

    /// A stateless request needs no `initialize`; a request of the session era still waits for it (-32002); an
    /// unknown version is -32022 naming every served one, a malformed one -32602, `ping` is gone from the stateless
    /// era; after `initialize` both eras go on side by side, each with its own result shapes.
    #[test]
    fn stateless_requests_need_no_initialize_and_session_requests_still_wait_for_it() {
        let env = seeded();
        let before = env.audit_lines().len();
        let mut raw = Raw::spawn(&env, "worker");

        raw.send(&stateless(json!("d"), "server/discover", Value::Null));
        let discovered = raw.receive();
        assert_eq!(discovered["id"], "d");
        assert_discovered(&discovered["result"], "private");
        assert!(discovered["result"]["instructions"].as_str().unwrap().contains("`worker`"));

        raw.send(&stateless(json!(1), "tools/list", Value::Null));
        let listed = raw.receive()["result"].clone();
        assert_stateless_list(&listed);
        raw.send(&stateless(json!(2), "tools/list", Value::Null));
        assert_eq!(raw.receive()["result"], listed, "the same list every time");

        raw.send(&stateless(json!(3), "tools/call", get("shared:team:db")));
        let got = raw.receive();
        assert_eq!(got["id"], 3, "{got}");
        let got = got["result"].clone();
        assert_eq!((got["resultType"].as_str(), got["isError"].as_bool()), (Some("complete"), Some(false)));
        assert_identified(&got);
        assert_eq!(got["structuredContent"]["content"], "Postgres 16 for the team.");
        raw.send(&stateless(json!(4), "tools/call", search("Postgres")));
        let found = raw.receive()["result"].clone();
        assert_eq!(found["resultType"], "complete");
        assert_identified(&found);
        assert_eq!(found["structuredContent"]["entries"][0]["id"], "shared:team:db", "{found}");

        // A call whose params rmcp cannot type is still a tool result, complete.
        raw.send(&stateless(json!("bad"), "tools/call", json!({ "name": 5 })));
        let bad = raw.receive()["result"].clone();
        assert_eq!(
            (bad["resultType"].as_str(), bad["isError"].as_bool()),
            (Some("complete"), Some(true)),
            "{bad}"
        );
        assert_identified(&bad);
        assert_eq!(bad["structuredContent"]["error"]["code"], "USAGE");

        // The session era before `initialize`: -32002, whether or not `_meta` names one of its revisions.
        raw.send(&session(json!(5), "tools/list", Value::Null));
        assert_eq!(raw.receive(), not_initialized(json!(5)));
        raw.send(&with_version(json!(6), "tools/call", get("shared:team:db"), json!("2025-11-25")));
        assert_eq!(raw.receive(), not_initialized(json!(6)));

        // A version not served: -32022 with every served one (never -32002), before or after `initialize`.
        for (id, version) in [(7, "2099-01-01"), (8, "1900-01-01"), (9, "")] {
            raw.send(&with_version(json!(id), "tools/call", get("shared:team:db"), json!(version)));
            assert_unsupported(&raw.receive(), json!(id), version);
        }
        // A version that is not a string, or named twice: -32602.
        raw.send(&with_version(json!(10), "tools/call", get("shared:team:db"), json!(20260728)));
        let malformed = raw.receive();
        assert_eq!((malformed["id"].clone(), malformed["error"]["code"].clone()), (json!(10), json!(-32602)));
        let twice = r#"{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        raw.send_bytes(format!("{twice}\n").as_bytes());
        assert_eq!(raw.receive()["error"]["code"], -32602);
        // The stateless era requires the client's capabilities, and has no `ping`.
        raw.send(&json!({ "jsonrpc": "2.0", "id": 12, "method": "tools/list",
            "params": { "_meta": { "io.modelcontextprotocol/protocolVersion": STATELESS } } }));
        assert_eq!(raw.receive()["error"]["code"], -32602);
        raw.send(&stateless(json!(13), "ping", Value::Null));
        assert_eq!(raw.receive()["error"]["code"], -32601);
        // A cancellation naming no call in flight gets no answer and ends nothing.
        raw.send(
            &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 99 } }),
        );

        // Only the two served calls reached a door: as the command line's role, whatever clientInfo said.
        let records = records_after(&env, before);
        assert_eq!(records.len(), 2, "{records:#?}");
        assert_eq!(
            records[0],
            json!({ "actor": "worker", "operation": "get", "door": "get", "id": "shared:team:db",
                    "outcome": "allowed", "code": null, "shown": ["shared:team:db@1"] })
        );
        assert_eq!(
            (records[1]["actor"].as_str(), records[1]["door"].as_str()),
            (Some("worker"), Some("search"))
        );

        // `initialize` opens the session era; its requests keep their shapes, and stateless ones go on beside them.
        raw.initialize();
        raw.send(&session(json!(20), "tools/list", Value::Null));
        assert_session_list(&raw.receive()["result"]);
        raw.send(&session(json!(21), "tools/call", get("shared:team:db")));
        let session_got = raw.receive()["result"].clone();
        assert!(session_got.get("resultType").is_none(), "{session_got}");
        assert_eq!(session_got, as_session_era(&got), "the same result in both eras");
        raw.send(&stateless(json!(22), "tools/call", get("shared:team:db")));
        assert_eq!(raw.receive()["result"], got, "stateless after initialize too");
        raw.send(&session(json!(23), "ping", Value::Null));
        assert_eq!(raw.receive(), json!({ "jsonrpc": "2.0", "id": 23, "result": {} }));

        // The same record whichever era asked.
        let records = records_after(&env, before);
        assert_eq!(records.len(), 4);
        assert_eq!(records[2], records[0]);
        assert_eq!(records[3], records[0]);
        assert_eq!(raw.close().code(), Some(0));
    }

    /// Nothing a stateless request carries is identity: `clientInfo`, `_meta` keys naming another role, or an
    /// argument. The role is the command line's.
    #[test]
    fn the_role_never_comes_from_the_era() {
        let env = seeded();
        let before = env.audit_lines().len();
        let mut raw = Raw::spawn(&env, "worker");
        let mut request = stateless(json!(1), "tools/call", get("private:main:plans"));
        let meta = request["params"]["_meta"].as_object_mut().unwrap();
        meta.insert("role".into(), json!("main"));
        meta.insert("io.modelcontextprotocol/role".into(), json!("main"));
        meta.insert("io.modelcontextprotocol/actor".into(), json!({ "role": "main" }));
        raw.send(&request);
        let denied = raw.receive()["result"].clone();
        assert_eq!(denied["isError"], true);
        assert_eq!(denied["structuredContent"]["error"]["code"], "PRIVATE_MEMORY_DENIED", "{denied}");
        let mut smuggled = stateless(json!(2), "tools/call", get("private:main:plans"));
        smuggled["params"]["arguments"]["role"] = json!("main");
        raw.send(&smuggled);
        assert_eq!(raw.receive()["result"]["structuredContent"]["error"]["code"], "USAGE");
        // A search as worker never shows main's private entry, whatever the request says it is.
        raw.send(&stateless(json!(3), "tools/call", json!({ "name": "memory_search", "arguments": {} })));
        let found = raw.receive()["result"]["structuredContent"]["entries"].clone();
        let ids: Vec<&str> = found.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["shared:team:db"]);
        let records = records_after(&env, before);
        assert_eq!(records.len(), 2, "the smuggled argument reached no door: {records:#?}");
        assert!(records.iter().all(|r| r["actor"] == "worker"), "{records:#?}");
        assert_eq!(records[0]["outcome"], "denied");
        assert_eq!(raw.close().code(), Some(0));
    }
}

mod http {
    use super::*;

    /// The headers a stateless POST carries: its version, method and (for a call) tool name.
    fn headers(version: &str, method: &str, name: Option<&str>) -> String {
        let name = name.map(|name| format!("Mcp-Name: {name}\r\n")).unwrap_or_default();
        format!("MCP-Protocol-Version: {version}\r\nMcp-Method: {method}\r\n{name}")
    }

    /// POSTs `body` with the token and `extra` header lines: status and the JSON answer, checked to be JSON and to
    /// carry no session id.
    fn post(server: &Serve, secret: &str, extra: &str, body: &Value) -> (u16, Value) {
        let (status, answer_headers, text) = server.post(Some(secret), extra, &body.to_string());
        assert_eq!(header(&answer_headers, "content-type"), Some("application/json"), "{status} {text}");
        assert_eq!(header(&answer_headers, "mcp-session-id"), None, "no session in either era");
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
    }

    fn assert_refused(answer: (u16, Value), code: i64, id: Value) {
        let (status, answer) = answer;
        assert_eq!(
            (status, answer["error"]["code"].as_i64(), answer["id"].clone()),
            (400, Some(code), id),
            "{answer}"
        );
    }

    /// `server/discover`, stateless lists and calls with their headers, and the session era exactly as before.
    #[test]
    fn discover_stateless_calls_and_the_session_era_side_by_side() {
        let env = seeded();
        let (id, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let before = env.audit_lines().len();

        let (status, discovered) = post(
            &server,
            &secret,
            &headers(STATELESS, "server/discover", None),
            &stateless(json!("d"), "server/discover", Value::Null),
        );
        assert_eq!(status, 200, "{discovered}");
        assert_discovered(&discovered["result"], "public");

        let list = stateless(json!(1), "tools/list", Value::Null);
        let (status, listed) = post(&server, &secret, &headers(STATELESS, "tools/list", None), &list);
        assert_eq!(status, 200);
        assert_stateless_list(&listed["result"]);

        let call = stateless(json!(2), "tools/call", get("shared:team:db"));
        let (status, got) =
            post(&server, &secret, &headers(STATELESS, "tools/call", Some("memory_get")), &call);
        assert_eq!(status, 200, "{got}");
        let got = got["result"].clone();
        assert_eq!((got["resultType"].as_str(), got["isError"].as_bool()), (Some("complete"), Some(false)));
        assert_identified(&got);
        assert_eq!(got["structuredContent"]["content"], "Postgres 16 for the team.");

        // The session era, unchanged: no headers, no `_meta`, no `initialize` (HTTP was stateless already).
        let (status, listed) = post(&server, &secret, "", &session(json!(3), "tools/list", Value::Null));
        assert_eq!(status, 200);
        assert_session_list(&listed["result"]);
        let (status, session_got) =
            post(&server, &secret, "", &session(json!(4), "tools/call", get("shared:team:db")));
        assert_eq!(status, 200);
        assert_eq!(session_got["result"], as_session_era(&got), "the same result in both eras");
        let initialize = session(
            json!(5),
            "initialize",
            json!({ "protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": { "name": "legacy", "version": "0" } }),
        );
        let (status, initialized) = post(&server, &secret, "", &initialize);
        assert_eq!((status, initialized["result"]["protocolVersion"].as_str()), (200, Some("2025-11-25")));

        let records = records_after(&env, before);
        assert_eq!(records.len(), 2, "{records:#?}");
        assert_eq!(records[0], records[1], "the same record whichever era asked");
        assert_eq!(
            records[0],
            json!({ "actor": "worker", "operation": "get", "door": "get", "id": "shared:team:db",
                    "outcome": "allowed", "code": null, "shown": ["shared:team:db@1"], "via": id })
        );
        assert_eq!(server.terminate().code(), Some(0));
    }

    /// The refusals of the stateless era, each 400 with its JSON-RPC code and the request's id, before any door:
    /// `Mcp-Method` or `Mcp-Name` that disagree with the body or are missing, an `MCP-Protocol-Version` that is
    /// missing or disagrees with `_meta` (-32020); a version not served (-32022); a malformed one or no capabilities
    /// (-32602); an unknown method (404, -32601).
    #[test]
    fn headers_that_disagree_with_the_body_and_versions_not_served_are_refused() {
        let env = seeded();
        let (_, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let before = env.audit_lines().len();
        let call = stateless(json!(1), "tools/call", get("shared:team:db"));
        for extra in [
            headers(STATELESS, "tools/list", Some("memory_get")),
            headers(STATELESS, "tools/call", Some("memory_delete")),
            headers(STATELESS, "tools/call", Some("=?base64?bWVtb3J5X2RlbGV0ZQ==?=")),
            headers(STATELESS, "tools/call", None),
            format!("MCP-Protocol-Version: {STATELESS}\r\nMcp-Name: memory_get\r\n"),
            "Mcp-Method: tools/call\r\nMcp-Name: memory_get\r\n".to_owned(),
            headers("2025-11-25", "tools/call", Some("memory_get")),
            format!("{}Mcp-Method: tools/call\r\n", headers(STATELESS, "tools/call", Some("memory_get"))),
        ] {
            let answer = post(&server, &secret, &extra, &call);
            assert_refused(answer, -32020, json!(1));
        }
        // Mcp-Name in the specification's Base64 form, matching: served.
        let (status, served) = post(
            &server,
            &secret,
            &headers(STATELESS, "tools/call", Some("=?base64?bWVtb3J5X2dldA==?=")),
            &call,
        );
        assert_eq!((status, served["result"]["isError"].as_bool()), (200, Some(false)), "{served}");

        for version in ["2099-01-01", "1900-01-01"] {
            let request = with_version(json!(2), "tools/call", get("shared:team:db"), json!(version));
            let (status, answer) =
                post(&server, &secret, &headers(version, "tools/call", Some("memory_get")), &request);
            assert_eq!(status, 400);
            assert_unsupported(&answer, json!(2), version);
        }
        let malformed = with_version(json!(3), "tools/list", Value::Null, json!(7));
        assert_refused(post(&server, &secret, "", &malformed), -32602, json!(3));
        assert_refused(
            post(&server, &secret, &headers(STATELESS, "tools/list", None), &malformed),
            -32602,
            json!(3),
        );
        let no_capabilities = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list",
            "params": { "_meta": { "io.modelcontextprotocol/protocolVersion": STATELESS } } });
        assert_refused(
            post(&server, &secret, &headers(STATELESS, "tools/list", None), &no_capabilities),
            -32602,
            json!(4),
        );
        // The header names the stateless era but the body does not: malformed, not served as the session era.
        assert_refused(
            post(
                &server,
                &secret,
                &headers(STATELESS, "tools/list", None),
                &session(json!(5), "tools/list", Value::Null),
            ),
            -32602,
            json!(5),
        );
        let (status, unknown) = post(
            &server,
            &secret,
            &headers(STATELESS, "memory/admin", None),
            &stateless(json!(6), "memory/admin", Value::Null),
        );
        assert_eq!((status, unknown["error"]["code"].as_i64()), (404, Some(-32601)), "{unknown}");

        let records = records_after(&env, before);
        assert_eq!(records.len(), 1, "only the served call reached a door: {records:#?}");
        assert_eq!(server.terminate().code(), Some(0));
    }

    /// Nothing a stateless request carries is identity: `clientInfo`, `_meta` keys and headers naming another role.
    /// Every call acts as the token's role and names the token as `via`.
    #[test]
    fn the_role_never_comes_from_the_era() {
        let env = seeded();
        let (id, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let before = env.audit_lines().len();
        let mut call = stateless(json!(1), "tools/call", get("private:main:plans"));
        let meta = call["params"]["_meta"].as_object_mut().unwrap();
        meta.insert("role".into(), json!("main"));
        meta.insert("io.modelcontextprotocol/role".into(), json!("main"));
        let extra = format!(
            "{}X-Alp-Role: main\r\nMcp-Param-Role: main\r\nX-Forwarded-User: main\r\n",
            headers(STATELESS, "tools/call", Some("memory_get"))
        );
        let (status, denied) = post(&server, &secret, &extra, &call);
        assert_eq!(status, 200);
        assert_eq!(
            denied["result"]["structuredContent"]["error"]["code"], "PRIVATE_MEMORY_DENIED",
            "{denied}"
        );
        let records = records_after(&env, before);
        assert_eq!(records.len(), 1);
        assert_eq!(
            (records[0]["actor"].as_str(), records[0]["outcome"].as_str(), records[0]["via"].as_str()),
            (Some("worker"), Some("denied"), Some(id.as_str()))
        );
        assert_eq!(server.terminate().code(), Some(0));
    }
}

mod rmcp_client {
    use rmcp::RoleClient;
    use rmcp::model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
    };
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    use super::*;

    const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

    fn stateless_only() -> ClientLifecycleMode {
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
    }

    fn config() -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("main", "0.0.0"))
    }

    /// Lists the tools, gets the shared entry and is refused main's private one, as worker; checks the session's
    /// revision and the server's name.
    async fn use_it(client: &RunningService<RoleClient, ClientConfig>) {
        let info = client.peer_info().expect("the server's info");
        assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("alp-memory"));
        let tools = tokio::time::timeout(WAIT, client.list_all_tools()).await.unwrap().unwrap();
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names, TOOLS);
        for (id, expected) in
            [("shared:team:db", None), ("private:main:plans", Some("PRIVATE_MEMORY_DENIED"))]
        {
            let arguments = json!({ "id": id }).as_object().cloned().unwrap();
            let params = CallToolRequestParams::new("memory_get").with_arguments(arguments);
            let result = tokio::time::timeout(WAIT, client.call_tool(params)).await.unwrap().unwrap();
            let content = result.structured_content.unwrap();
            assert_eq!(content["error"]["code"].as_str(), expected, "{content}");
        }
    }

    /// rmcp's own client in the stateless era (`server/discover`, then `2026-07-28` on every request) against
    /// `alp mcp` and `alp serve`: the same tools, answers and records as worker.
    #[tokio::test]
    async fn rmcp_s_client_in_the_stateless_era_on_both_servers() {
        let env = seeded();
        let before = env.audit_lines().len();
        let mut child = tokio::process::Command::from(env.command())
            .arg("--root")
            .arg(env.root())
            .arg("--agents")
            .arg(env.agents())
            .args(["--as", "worker", "mcp"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = tokio::time::timeout(WAIT, config().serve_with_lifecycle(transport, stateless_only()))
            .await
            .unwrap()
            .unwrap();
        use_it(&client).await;
        let _ = client.cancel().await;
        assert!(tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap().success());
        let on_stdio = records_after(&env, before);

        let (id, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let before = env.audit_lines().len();
        let http = StreamableHttpClientTransportConfig::with_uri(server.url.clone()).auth_header(secret);
        let client = tokio::time::timeout(
            WAIT,
            config().serve_with_lifecycle(StreamableHttpClientTransport::from_config(http), stateless_only()),
        )
        .await
        .unwrap()
        .unwrap();
        use_it(&client).await;
        let _ = client.cancel().await;
        let over_http = records_after(&env, before);
        assert_eq!(on_stdio.len(), 2, "{on_stdio:#?}");
        for (stdio, http) in on_stdio.iter().zip(&over_http) {
            let mut http = http.clone();
            assert_eq!(http.as_object_mut().unwrap().remove("via"), Some(json!(id)));
            assert_eq!(&http, stdio, "the same record on both servers");
        }
        assert_eq!(server.terminate().code(), Some(0));
    }
}

mod properties {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;

    /// A header a hostile client may send: the era's own, one naming a role, a session id, or any other.
    fn header() -> impl Strategy<Value = (String, String)> {
        let name = prop_oneof![
            Just("Mcp-Method".to_owned()),
            Just("Mcp-Name".to_owned()),
            Just("MCP-Protocol-Version".to_owned()),
            Just("Mcp-Session-Id".to_owned()),
            Just("Mcp-Param-Role".to_owned()),
            Just("X-Alp-Role".to_owned()),
            "X-[A-Za-z-]{1,12}",
        ];
        let value = prop_oneof![
            Just("main".to_owned()),
            Just("tools/call".to_owned()),
            Just("memory_get".to_owned()),
            Just(STATELESS.to_owned()),
            Just("2025-11-25".to_owned()),
            Just("=?base64?bWFpbg==?=".to_owned()),
            "[!-~]{0,16}",
        ];
        (name, value)
    }

    /// A `_meta` member a hostile client may send, as key and JSON text (written by hand: repeats stay).
    fn meta_member() -> impl Strategy<Value = (String, String)> {
        let key = prop_oneof![
            Just("io.modelcontextprotocol/protocolVersion".to_owned()),
            Just("io.modelcontextprotocol/clientCapabilities".to_owned()),
            Just("io.modelcontextprotocol/clientInfo".to_owned()),
            Just("role".to_owned()),
            Just("io.modelcontextprotocol/role".to_owned()),
            "[a-z./]{1,12}",
        ];
        let value = prop_oneof![
            Just(json!(STATELESS)),
            Just(json!("2025-11-25")),
            Just(json!("main")),
            Just(json!({})),
            Just(json!({ "name": "main", "version": "0", "role": "main" })),
            any::<i64>().prop_map(Value::from),
        ];
        (key, value.prop_map(|v| v.to_string()))
    }

    /// Whatever headers and `_meta` a request of either era carries, it acts as its token's role: worker's calls
    /// never read main's private entry, and every record names worker and the token.
    #[test]
    fn hostile_headers_and_meta_never_change_who_acts() {
        let env = seeded();
        let (id, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let before = env.audit_lines().len();
        let strategy = (
            prop::collection::vec(header(), 0..4),
            prop::collection::vec(meta_member(), 0..4),
            prop::sample::select(vec!["memory_get", "memory_search"]),
        );
        let mut runner = TestRunner::new(Config { cases: 48, ..Config::default() });
        runner
            .run(&strategy, |(headers, meta, tool)| {
                let meta: Vec<String> =
                    meta.iter().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect();
                let arguments = if tool == "memory_get" { r#"{"id":"private:main:plans"}"# } else { "{}" };
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{{}}}}}}}"#,
                    meta.join(",")
                );
                let extra: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
                let (status, _, text) = server.post(Some(&secret), &extra, &body);
                prop_assert!(matches!(status, 200 | 400 | 404), "{status} {text}");
                prop_assert!(!text.contains("Leave in May."), "main's private content: {text}");
                Ok(())
            })
            .unwrap();
        for record in env.audit_lines().iter().skip(before) {
            assert_eq!(
                (record["actor"].as_str(), record["via"].as_str()),
                (Some("worker"), Some(id.as_str()))
            );
            assert!(!(record["id"] == "private:main:plans" && record["outcome"] == "allowed"), "{record}");
        }
        assert_eq!(server.terminate().code(), Some(0));
    }
}

pub(crate) mod python_sdk {
    use super::*;

    /// The virtual environment with the official Python SDK (at least 2.3), made once per run of this test binary
    /// (and kept under the target directory between runs); `None` when pip cannot reach PyPI. `operations.rs` runs
    /// docs/OPERATIONS.md's client in it too.
    pub(crate) fn venv() -> Option<&'static Path> {
        static VENV: OnceLock<Option<PathBuf>> = OnceLock::new();
        VENV.get_or_init(|| {
            crate::python::venv(
                "python-mcp-sdk",
                &["mcp>=2.3"],
                "import importlib.metadata as m, sys; v = m.version('mcp').split('.'); \
                 sys.exit(0 if (int(v[0]), int(v[1])) >= (2, 3) else 1)",
            )
        })
        .as_deref()
    }

    /// Runs the SDK client of `python_sdk_client.py` with `spec` and returns what it printed.
    fn run(venv: &Path, spec: &Value) -> Value {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alp_cli/python_sdk_client.py");
        let output = Command::new(venv.join("bin/python"))
            .arg(script)
            .arg(spec.to_string())
            .output()
            .expect("python runs");
        assert!(
            output.status.success(),
            "the SDK client failed ({spec}):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// The three modes, each against a server `connect` describes: the negotiated version, how the session
    /// opened, the tools and their caching hints, a search, a get and a refused get as worker, and the records
    /// each mode wrote (the same in every mode: `via` is the token's ID over HTTP, absent on stdio).
    fn three_modes(env: &Env, connect: &Value, via: Option<&str>) {
        let Some(venv) = venv() else { return };
        let mut first: Option<Vec<Value>> = None;
        for (mode, version) in [("auto", STATELESS), (STATELESS, STATELESS), ("legacy", "2025-11-25")] {
            let before = env.audit_lines().len();
            let mut spec = connect.clone();
            spec["mode"] = json!(mode);
            spec["query"] = json!("Postgres");
            spec["id"] = json!("shared:team:db");
            spec["denied"] = json!("private:main:plans");
            let answer = run(venv, &spec);
            eprintln!("Python SDK {} in mode {mode}: protocol {}", answer["sdk"], answer["protocolVersion"]);
            assert_eq!(answer["protocolVersion"], version, "{mode}: {answer}");
            let modern = version == STATELESS;
            assert_eq!(answer["initialized"], !modern, "{mode}: {answer}");
            if mode == "auto" {
                assert_eq!(answer["discovered"], true, "the probe found the stateless era: {answer}");
            }
            if mode != STATELESS {
                // A forced stateless session never asks who the server is (results carry no `serverInfo`).
                assert_eq!(answer["serverName"], "alp-memory", "{answer}");
            }
            assert_eq!(answer["tools"], json!(TOOLS), "{answer}");
            if modern {
                assert_eq!(
                    (answer["ttlMs"].as_u64(), answer["cacheScope"].as_str()),
                    (Some(TTL_MS), Some("public"))
                );
            }
            assert_eq!(answer["search"]["isError"], false, "{answer}");
            assert_eq!(answer["search"]["structured"]["entries"][0]["id"], "shared:team:db", "{answer}");
            assert_eq!(answer["get"]["structured"]["content"], "Postgres 16 for the team.", "{answer}");
            assert_eq!(answer["denied"]["isError"], true, "{answer}");
            assert_eq!(answer["denied"]["structured"]["error"]["code"], "PRIVATE_MEMORY_DENIED", "{answer}");

            let records = records_after(env, before);
            let doors: Vec<(&str, &str, &str)> = records
                .iter()
                .map(|r| {
                    (
                        r["actor"].as_str().unwrap(),
                        r["door"].as_str().unwrap(),
                        r["outcome"].as_str().unwrap(),
                    )
                })
                .collect();
            assert_eq!(
                doors,
                [("worker", "search", "allowed"), ("worker", "get", "allowed"), ("worker", "get", "denied")],
                "{mode}"
            );
            assert_eq!(records[1]["shown"], json!(["shared:team:db@1"]));
            assert!(records.iter().all(|r| r.get("via").and_then(Value::as_str) == via), "{records:#?}");
            match &first {
                None => first = Some(records),
                Some(first) => assert_eq!(&records, first, "{mode} wrote other records than auto"),
            }
        }
    }

    #[test]
    fn the_official_python_sdk_in_its_three_modes_against_alp_mcp() {
        let env = seeded();
        let root = env.root();
        let agents = env.agents();
        let connect = json!({ "stdio": {
            "command": crate::serve::ALP,
            "args": ["--root", root, "--agents", agents, "--as", "worker", "mcp"],
            "env": { "HOME": env.home() },
            "cwd": env.dir.path(),
        } });
        three_modes(&env, &connect, None);
    }

    #[test]
    fn the_official_python_sdk_in_its_three_modes_against_alp_serve() {
        let env = seeded();
        let (id, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let connect = json!({ "http": { "url": server.url, "token": secret } });
        three_modes(&env, &connect, Some(&id));
        assert_eq!(server.terminate().code(), Some(0));
    }
}
