//! `alp serve` end to end: the real binary, driven by rmcp's own Streamable HTTP client (reqwest), and by raw HTTP
//! on a plain `TcpStream` for what a client never sends. Also `alp token create|list|revoke` and `alp adapter mcp
//! ROLE --url URL`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::cli::Env;

pub(crate) const ALP: &str = env!("CARGO_BIN_EXE_alp");
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// `alp token create --role ROLE [ARGS…] --json`: (id, token).
pub(crate) fn token(env: &Env, role: &str, args: &[&str]) -> (String, String) {
    let mut all = vec!["--json", "token", "create", "--role", role];
    all.extend_from_slice(args);
    let run = env.run(&all, None);
    assert_eq!(run.status, 0, "{run:?}");
    let created = run.json();
    (created["id"].as_str().unwrap().to_owned(), created["token"].as_str().unwrap().to_owned())
}

/// A running `alp --json serve --listen 127.0.0.1:0`.
pub(crate) struct Serve {
    pub(crate) child: Child,
    pub(crate) url: String,
    pub(crate) addr: String,
    listening: Value,
}

impl Serve {
    pub(crate) fn start(env: &Env) -> Serve {
        Serve::start_with(env, &[])
    }

    pub(crate) fn start_with(env: &Env, extra: &[&str]) -> Serve {
        Serve::launch(env, &["--root".into(), env.root().into_os_string()], extra)
    }

    /// A server on the database at `url` (`--store URL`).
    pub(crate) fn start_on(env: &Env, url: &str) -> Serve {
        Serve::launch(env, &["--store".into(), url.into()], &[])
    }

    fn launch(env: &Env, place: &[std::ffi::OsString], extra: &[&str]) -> Serve {
        let mut command = env.command();
        command
            .args(place)
            .arg("--agents")
            .arg(env.agents())
            .args(["--json", "serve", "--listen", "127.0.0.1:0"])
            .args(extra);
        let (child, listening) = announced(&mut command);
        let keys: Vec<&str> = listening.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["listening"]);
        let url = listening["listening"][0].as_str().unwrap().to_owned();
        let addr = url.split_once("://").unwrap().1.strip_suffix("/mcp").unwrap().to_owned();
        assert!(!addr.ends_with(":0"), "the real port: {url}");
        Serve { child, url, addr, listening }
    }

    /// Sends `request` as is and reads the whole answer: (status, lowercase headers, body).
    pub(crate) fn raw(&self, request: &[u8]) -> (u16, Vec<(String, String)>, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let writer = stream.try_clone().unwrap();
        let request = request.to_vec();
        // Written from a thread: a server that answers early (413) may stop reading.
        let sending = std::thread::spawn(move || {
            let mut writer = writer;
            let _ = writer.write_all(&request);
        });
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let _ = sending.join();
        parse_response(&answer)
    }

    /// A GET of `path` with the token, if any.
    pub(crate) fn get(&self, path: &str, token: Option<&str>) -> (u16, Vec<(String, String)>, String) {
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {}\r\n{auth}Connection: close\r\n\r\n", self.addr);
        self.raw(request.as_bytes())
    }

    /// A POST /mcp with `body`, the token and extra header lines.
    pub(crate) fn post(
        &self,
        token: Option<&str>,
        headers: &str,
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\n{auth}{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.raw(request.as_bytes())
    }

    /// A `tools/call` over raw HTTP: the JSON-RPC result.
    fn call_raw(&self, token: &str, name: &str, arguments: Value, meta: Option<Value>) -> Value {
        let mut params = json!({ "name": name, "arguments": arguments });
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params }).to_string();
        let (status, headers, text) = self.post(Some(token), "", &body);
        assert_eq!(status, 200, "{text}");
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        assert_eq!(header(&headers, "mcp-session-id"), None, "stateless");
        let answer: Value = serde_json::from_str(&text).unwrap();
        answer["result"].clone()
    }

    pub(crate) async fn client(
        &self,
        token: &str,
        extra: &[(&'static str, &str)],
    ) -> RunningService<RoleClient, ClientConfig> {
        let mut headers = std::collections::HashMap::new();
        for (name, value) in extra {
            headers.insert(http::HeaderName::from_static(name), http::HeaderValue::from_str(value).unwrap());
        }
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(token.to_owned())
            .custom_headers(headers);
        let transport = StreamableHttpClientTransport::from_config(config);
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("alp-e2e", "0.0.0"));
        tokio::time::timeout(WAIT, info.serve(transport)).await.expect("in time").expect("initialize")
    }

    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        let status = self.child.wait().unwrap();
        std::mem::forget(self);
        status
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` (stdout piped, stderr discarded) and reads the JSON document of its first line, which a
/// server prints once it listens.
pub(crate) fn announced(command: &mut std::process::Command) -> (Child, Value) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let first = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    (child, first)
}

/// A response: status, lowercase headers, body.
type Answer = (u16, Vec<(String, String)>, String);

pub(crate) fn parse_response(answer: &[u8]) -> (u16, Vec<(String, String)>, String) {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no answer: {text:?}"));
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

pub(crate) async fn call(
    client: &RunningService<RoleClient, ClientConfig>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    tokio::time::timeout(WAIT, client.call_tool(params)).await.expect("in time").expect("a tool result")
}

pub(crate) async fn ok(client: &RunningService<RoleClient, ClientConfig>, tool: &str, args: Value) -> Value {
    let result = call(client, tool, args.clone()).await;
    assert_eq!(result.is_error, Some(false), "{tool} {args}: {result:?}");
    result.structured_content.unwrap_or_else(|| json!(result.content[0].as_text().unwrap().text))
}

pub(crate) async fn fails(
    client: &RunningService<RoleClient, ClientConfig>,
    tool: &str,
    args: Value,
) -> Value {
    let result = call(client, tool, args.clone()).await;
    assert_eq!(result.is_error, Some(true), "{tool} {args}: {result:?}");
    let error = result.structured_content.unwrap()["error"].clone();
    let keys: Vec<&str> = error.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys[..3], ["kind", "code", "message"], "{error}");
    error
}

/// The keys of a record in the log's order: `door` after `operation`; `shown` (only on a read that returned
/// entries) and `via` (only over HTTP) before `prevHash`.
pub(crate) const RECORD_KEYS: [&str; 12] = [
    "seq",
    "timestamp",
    "actor",
    "operation",
    "door",
    "id",
    "outcome",
    "code",
    "shown",
    "via",
    "prevHash",
    "hash",
];

/// Every record after the first `skip`: actor `role` and `via` the token, placed after `code`.
fn assert_records_via(env: &Env, skip: usize, role: &str, via: &str) -> usize {
    let text = std::fs::read_to_string(env.root().join("audit.jsonl")).unwrap();
    let mut count = 0;
    for line in text.lines().skip(skip) {
        let record: Value = serde_json::from_str(line).unwrap();
        assert_eq!((record["actor"].as_str(), record["via"].as_str()), (Some(role), Some(via)), "{line}");
        let keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
        let expected: Vec<&str> =
            RECORD_KEYS.into_iter().filter(|key| *key != "shown" || record.get("shown").is_some()).collect();
        assert_eq!(keys, expected, "{line}");
        count += 1;
    }
    count
}

fn verify(env: &Env) {
    let run = env.run(&["--json", "audit", "verify"], None);
    assert_eq!(run.status, 0, "{run:?}");
    assert_eq!(run.json()["ok"], true);
}

mod tools {
    use super::*;

    #[tokio::test]
    async fn every_tool_through_rmcp_s_http_client_as_the_token_s_role_with_via() {
        let env = Env::new();
        let (id, secret) = token(&env, "worker", &["--name", "e2e"]);
        let server = Serve::start(&env);
        let client = server.client(&secret, &[]).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "memory_search",
                "memory_get",
                "memory_create",
                "memory_update",
                "memory_delete",
                "memory_context",
                "memory_history",
                "memory_restore",
                "memory"
            ]
        );

        let created =
            ok(&client, "memory_create", json!({ "id": "project:alp:log:a", "content": "Ship it." })).await;
        assert_eq!(created["version"], 1);
        assert_eq!(
            ok(&client, "memory_get", json!({ "id": "project:alp:log:a" })).await["content"],
            "Ship it."
        );
        let updated = ok(
            &client,
            "memory_update",
            json!({ "id": "project:alp:log:a", "expectedVersion": 1, "content": "Ship it today." }),
        )
        .await;
        assert_eq!(updated["version"], 2);
        let found = ok(&client, "memory_search", json!({ "query": "ship" })).await;
        assert_eq!(found["entries"][0]["id"], "project:alp:log:a");
        let context = ok(&client, "memory_context", json!({ "query": "ship", "budget": 200 })).await;
        assert_eq!(context["entryIds"], json!(["project:alp:log:a"]));
        let view =
            ok(&client, "memory", json!({ "command": "view", "path": "/memories/projects/alp/log/a.md" }))
                .await;
        assert!(view.as_str().unwrap().contains("Ship it today."), "{view}");
        let deleted =
            ok(&client, "memory_delete", json!({ "id": "project:alp:log:a", "expectedVersion": 2 })).await;
        assert_eq!(deleted, json!({ "id": "project:alp:log:a", "deleted": true }));
        let history = ok(&client, "memory_history", json!({ "id": "project:alp:log:a" })).await;
        let versions: Vec<(u64, bool)> = history["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["version"].as_u64().unwrap(), v["deleted"] == true))
            .collect();
        assert_eq!(versions, [(3, true), (2, false), (1, false)], "{history}");
        let restored = ok(
            &client,
            "memory_restore",
            json!({ "id": "project:alp:log:a", "version": 2, "expectedVersion": 3 }),
        )
        .await;
        assert_eq!(
            (restored["version"].as_u64(), restored["content"].as_str()),
            (Some(4), Some("Ship it today."))
        );

        let denied = fails(&client, "memory_get", json!({ "id": "private:main:plans" })).await;
        assert_eq!(
            (denied["kind"].as_str(), denied["code"].as_str()),
            (Some("UnauthorizedMemoryAccessError"), Some("PRIVATE_MEMORY_DENIED"))
        );
        let unknown = fails(&client, "memory_nope", json!({})).await;
        assert_eq!(unknown["code"], "USAGE");
        let _ = client.cancel().await;

        // One token-create record, then each door call with the worker as actor and the token as via.
        let records = env.audit_lines();
        assert_eq!(
            (records[0]["operation"].as_str(), records[0]["actor"].as_str()),
            (Some("token-create"), Some(""))
        );
        assert_eq!(records[0].get("via"), None);
        // create, get, update, search, context, the view's get, delete, history (a get), restore (an update), the
        // denied get; the unknown tool none.
        assert_eq!(assert_records_via(&env, 1, "worker", &id), 10);
        verify(&env);
        assert_eq!(server.terminate().code(), Some(0));
    }

    #[tokio::test]
    async fn no_header_meta_or_argument_changes_who_acts() {
        let env = Env::new();
        let (id, secret) = token(&env, "worker", &[]);
        let (_, main) = token(&env, "main", &[]);
        let server = Serve::start(&env);
        let client = server
            .client(&secret, &[("x-alp-role", "main"), ("x-mcp-role", "main"), ("x-forwarded-user", "main")])
            .await;
        let smuggled =
            fails(&client, "memory_get", json!({ "id": "private:main:plans", "role": "main" })).await;
        assert_eq!(smuggled["code"], "USAGE");
        let denied = fails(&client, "memory_get", json!({ "id": "private:main:plans" })).await;
        assert_eq!(denied["code"], "PRIVATE_MEMORY_DENIED");
        let _ = client.cancel().await;
        // `_meta` naming another role, and a second Authorization header naming main's token.
        let meta = json!({ "role": "main", "actor": "main", "alp/role": "main", "progressToken": 1 });
        let result =
            server.call_raw(&secret, "memory_get", json!({ "id": "private:main:plans" }), Some(meta));
        assert_eq!(result["structuredContent"]["error"]["code"], "PRIVATE_MEMORY_DENIED", "{result}");
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_get", "arguments": { "id": "private:main:plans" } } })
        .to_string();
        let (status, _, text) =
            server.post(Some(&secret), &format!("Authorization: Bearer {main}\r\n"), &body);
        // Two Authorization headers are refused before any token is read.
        assert_eq!(
            (status, text.as_str()),
            (400, "{\"error\":\"duplicate_header\",\"header\":\"authorization\"}")
        );
        assert_eq!(assert_records_via(&env, 2, "worker", &id), 2);
        verify(&env);
    }
}

mod tokens {
    use super::*;

    fn get_status(server: &Serve, secret: &str) -> (u16, String) {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_search", "arguments": {} } })
        .to_string();
        let (status, headers, text) = server.post(Some(secret), "", &body);
        if status == 401 {
            assert_eq!(
                header(&headers, "www-authenticate"),
                Some("Bearer realm=\"alp-memory\", error=\"invalid_token\"")
            );
        }
        (status, text)
    }

    /// `alp --store URL --json ARGS…` with the example team's agents.
    fn on_database(env: &Env, url: &str, args: &[&str]) -> crate::cli::Run {
        let output = env
            .command()
            .args(["--store", url, "--agents"])
            .arg(env.agents())
            .arg("--json")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        crate::cli::Run::of(output)
    }

    #[test]
    fn two_replicas_on_one_database_share_tokens_and_a_revoke_through_one_is_refused_by_the_other() {
        let Some(db) = testkit::pg::test_database() else { return };
        let env = Env::new();
        let run = |args: &[&str]| {
            let run = on_database(&env, db.url(), args);
            assert_eq!(run.status, 0, "{args:?}: {run:?}");
            run.json()
        };
        run(&["init"]);
        let created = run(&["token", "create", "--role", "worker", "--name", "replicas"]);
        let (id, secret) = (created["id"].as_str().unwrap(), created["token"].as_str().unwrap());
        let listed = run(&["token", "list"]);
        assert_eq!(listed["tokens"].as_array().unwrap().len(), 1, "{listed}");
        assert_eq!(
            (&listed["tokens"][0]["id"], &listed["tokens"][0]["name"]),
            (&json!(id), &json!("replicas"))
        );
        // The secret's hash is in the table, never the secret.
        let mut client = db.connect().unwrap();
        let stored: String =
            client.query_one("SELECT secret_sha256 FROM alp_tokens WHERE id = $1", &[&id]).unwrap().get(0);
        assert_eq!(stored.len(), 64);
        let dump: String = client
            .query_one("SELECT coalesce(string_agg(t::text, ''), '') FROM alp_tokens AS t", &[])
            .unwrap()
            .get(0);
        assert!(!dump.contains(&secret[secret.len() - 43..]), "{dump}");

        let (one, two) = (Serve::start_on(&env, db.url()), Serve::start_on(&env, db.url()));
        // A token created once works on both.
        assert_eq!(get_status(&one, secret).0, 200);
        assert_eq!(get_status(&two, secret).0, 200);
        // A token created after the replicas started works on both at once.
        let later = run(&["token", "create", "--role", "worker"]);
        let later = later["token"].as_str().unwrap();
        assert_eq!(get_status(&two, later).0, 200);
        // Revoked through one replica's database, refused by the other at its next request.
        let revoked = run(&["token", "revoke", id]);
        assert_eq!(revoked, json!({ "id": id, "revoked": true }));
        assert_eq!(get_status(&two, secret), (401, "{\"error\":\"invalid_token\"}".to_owned()));
        assert_eq!(get_status(&one, secret).0, 401);
        assert_eq!(get_status(&one, later).0, 200);
        // Every call and both token operations are in the database's chain, which verifies.
        let verified = run(&["audit", "verify"]);
        assert_eq!(verified["ok"], true, "{verified}");
        let operations: Vec<String> = client
            .query("SELECT line FROM alp_audit ORDER BY seq", &[])
            .unwrap()
            .iter()
            .map(|row| {
                serde_json::from_str::<Value>(row.get(0)).unwrap()["operation"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(operations.iter().filter(|op| *op == "token-create").count(), 2, "{operations:?}");
        assert_eq!(operations.iter().filter(|op| *op == "token-revoke").count(), 1, "{operations:?}");
        assert_eq!(one.terminate().code(), Some(0));
        assert_eq!(two.terminate().code(), Some(0));
    }

    #[test]
    fn revoke_and_expiry_take_effect_at_the_next_request_and_reach_no_door() {
        let env = Env::new();
        let (id, secret) = token(&env, "worker", &[]);
        let (_, short) = token(&env, "worker", &["--expires", "2s"]);
        let (_, reviewer) = token(&env, "reviewer", &["--expires", "never"]);
        let server = Serve::start(&env);
        assert_eq!(get_status(&server, &secret).0, 200);
        assert_eq!(get_status(&server, &short).0, 200);
        assert_eq!(get_status(&server, &reviewer).0, 200);
        let before = env.audit_lines().len();

        let run = env.run(&["--json", "token", "revoke", &id], None);
        assert_eq!((run.status, run.json()), (0, json!({ "id": id, "revoked": true })));
        assert_eq!(get_status(&server, &secret), (401, "{\"error\":\"invalid_token\"}".to_owned()));
        // A role whose definition is gone.
        std::fs::remove_file(env.agents().join("reviewer.yaml")).unwrap();
        assert_eq!(get_status(&server, &reviewer).0, 401);
        std::thread::sleep(Duration::from_millis(2100));
        assert_eq!(get_status(&server, &short).0, 401);
        // A wrong secret for a real ID.
        let mut wrong = short.clone();
        let last = if wrong.ends_with('A') { 'B' } else { 'A' };
        wrong.pop();
        wrong.push(last);
        assert_eq!(get_status(&server, &wrong).0, 401);
        // Only the revoke's own record was written.
        let records = env.audit_lines();
        assert_eq!(records.len(), before + 1);
        assert_eq!(records[before]["operation"], "token-revoke");
        assert_eq!(records[before]["id"], id.as_str());
    }

    #[test]
    fn create_list_revoke_outputs_and_records() {
        let env = Env::new();
        let run = env.run(&["--json", "token", "create", "--role", "worker"], None);
        assert_eq!(run.status, 0, "{run:?}");
        let created = run.json();
        let keys: Vec<&str> = created.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "role", "name", "createdAt", "expiresAt", "token"]);
        assert_eq!((created["role"].as_str(), created["name"].clone()), (Some("worker"), Value::Null));
        let id = created["id"].as_str().unwrap();
        let secret = created["token"].as_str().unwrap();
        assert_eq!(secret.len(), 60);
        assert!(secret.starts_with(&format!("alp_{id}_")));
        assert!(id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));

        let file = env.root().join("tokens").join(format!("{id}.json"));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let record: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let keys: Vec<&str> = record.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "role", "name", "createdAt", "expiresAt", "revokedAt", "secretSha256"]);
        use sha2::Digest;
        let hash = format!("{:x}", sha2::Sha256::digest(&secret.as_bytes()[17..]));
        assert_eq!(record["secretSha256"], hash.as_str());
        // 90 days by default.
        let created_at = created["createdAt"].as_str().unwrap();
        let expires_at = created["expiresAt"].as_str().unwrap();
        let parse =
            |t: &str| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).unwrap();
        assert_eq!(parse(expires_at) - parse(created_at), time::Duration::days(90));

        let never = env.run(
            &["--json", "token", "create", "--role", "main", "--name", "ci", "--expires", "never"],
            None,
        );
        assert_eq!(never.json()["expiresAt"], Value::Null);
        assert_eq!(never.json()["name"], "ci");

        let list = env.run(&["--json", "token", "list"], None);
        assert_eq!(list.status, 0);
        let listed = list.json();
        let first = &listed["tokens"][0];
        let keys: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "role", "name", "createdAt", "expiresAt", "revokedAt"]);
        assert_eq!(first["id"], id);
        assert_eq!(listed["tokens"].as_array().unwrap().len(), 2);
        assert!(!list.stdout.contains(&secret[17..]) && !list.stdout.contains(&hash));

        // Revoke: unknown is NOT_FOUND with no record; twice is fine and writes a record each time.
        let before = env.audit_lines().len();
        let unknown = env.run(&["--json", "token", "revoke", "000000000000"], None);
        assert_eq!(unknown.status, 5, "{unknown:?}");
        assert_eq!(unknown.error()["code"], "NOT_FOUND");
        assert_eq!(env.audit_lines().len(), before);
        for _ in 0..2 {
            let run = env.run(&["--json", "token", "revoke", id], None);
            assert_eq!(run.status, 0, "{run:?}");
        }
        let records = env.audit_lines();
        let ops: Vec<&str> = records.iter().map(|r| r["operation"].as_str().unwrap()).collect();
        assert_eq!(ops, ["token-create", "token-create", "token-revoke", "token-revoke"]);
        assert!(records.iter().all(|r| r["actor"] == "" && r.get("via").is_none()));
        let listed = env.run(&["--json", "token", "list"], None).json();
        assert!(listed["tokens"][0]["revokedAt"].is_string());
        // Nothing but create's output ever held the secret.
        let log = std::fs::read_to_string(env.root().join("audit.jsonl")).unwrap();
        assert!(!log.contains(&secret[17..]));
        assert!(!std::fs::read_to_string(&file).unwrap().contains(&secret[17..]));
    }

    #[test]
    fn refusals_of_the_operator_commands() {
        let env = Env::new();
        let unknown = env.run(&["--json", "token", "create", "--role", "ghost"], None);
        assert_eq!(unknown.status, 2, "{unknown:?}");
        assert_eq!(unknown.error()["kind"], "AgentDefinitionError");
        assert!(!env.root().join("tokens").exists() && env.audit_lines().is_empty());
        for args in
            [&["--as", "worker", "--json", "token", "list"][..], &["--as", "worker", "--json", "serve"]]
        {
            let run = env.run(args, None);
            assert_eq!(run.status, 2, "{run:?}");
            assert_eq!(run.error()["code"], "USAGE");
        }
        for bad in ["0s", "soon", "-1d"] {
            let run = env.run(&["--json", "token", "create", "--role", "worker", "--expires", bad], None);
            assert_eq!(run.status, 2, "{bad}: {run:?}");
        }
        let open = env.run(&["--json", "serve", "--listen", "0.0.0.0:0"], None);
        assert_eq!(open.status, 2, "{open:?}");
        assert!(open.error()["message"].as_str().unwrap().contains("loopback"));
        assert!(env.audit_lines().is_empty());
    }

    #[test]
    fn adapter_mcp_with_a_url_prints_the_http_entries_without_the_token() {
        let env = Env::new();
        let url = "http://127.0.0.1:7707/mcp";
        let run = env.run(&["--json", "adapter", "mcp", "worker", "--url", url], None);
        assert_eq!(run.status, 0, "{run:?}");
        assert_eq!(
            run.json(),
            json!({ "mcpServers": { "alp-memory": { "type": "http", "url": url,
                "headers": { "Authorization": "Bearer ${ALP_MEMORY_TOKEN}" } } } })
        );
        let toml = env.run(&["--json", "adapter", "mcp", "worker", "--url", url, "--format", "toml"], None);
        assert_eq!(
            toml.json()["configToml"],
            "[mcp_servers.alp-memory]\nurl = \"http://127.0.0.1:7707/mcp\"\nbearer_token_env_var = \"ALP_MEMORY_TOKEN\"\n"
        );
        let bad = env.run(&["--json", "adapter", "mcp", "worker", "--url", "ftp://x"], None);
        assert_eq!(bad.status, 2, "{bad:?}");
        let ghost = env.run(&["--json", "adapter", "mcp", "ghost", "--url", url], None);
        assert_eq!(ghost.status, 2, "{ghost:?}");
    }
}

mod raw {
    use super::*;

    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

    #[test]
    fn refusals_in_order_with_their_exact_shapes() {
        let env = Env::new();
        let (_, secret) = token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let host = &server.addr;

        // 401: none, not Bearer (counts as none), malformed, unknown.
        let (status, headers, body) = server.post(None, "", LIST);
        assert_eq!((status, body.as_str()), (401, "{\"error\":\"missing_token\"}"));
        assert_eq!(header(&headers, "www-authenticate"), Some("Bearer realm=\"alp-memory\""));
        let (status, headers, body) = server.post(None, "Authorization: Basic dXNlcjpwdw==\r\n", LIST);
        assert_eq!(
            (status, body.as_str(), header(&headers, "www-authenticate")),
            (401, "{\"error\":\"missing_token\"}", Some("Bearer realm=\"alp-memory\""))
        );
        for sent in [
            "alp_nope",
            "",
            &format!("{secret}x"),
            "alp_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            let (status, headers, body) =
                server.post(None, &format!("Authorization: Bearer {sent}\r\n"), LIST);
            assert_eq!((status, body.as_str()), (401, "{\"error\":\"invalid_token\"}"), "{sent}");
            assert_eq!(
                header(&headers, "www-authenticate"),
                Some("Bearer realm=\"alp-memory\", error=\"invalid_token\"")
            );
        }

        // 403 before anything else: a foreign Host, a foreign or null Origin (even on /healthz, even without a token).
        let forbidden = |request: String| {
            let (status, _, body) = server.raw(request.as_bytes());
            assert_eq!(status, 403, "{request}: {body}");
        };
        forbidden("GET /healthz HTTP/1.1\r\nHost: evil.example:7707\r\nConnection: close\r\n\r\n".into());
        forbidden(format!(
            "GET /nope HTTP/1.1\r\nHost: {host}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n"
        ));
        forbidden(format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nOrigin: null\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ));
        let (status, _, _) = server.raw(
            b"GET /healthz HTTP/1.1\r\nHost: localhost:1\r\nOrigin: http://127.0.0.1:9\r\nConnection: close\r\n\r\n",
        );
        assert_eq!(status, 200);

        // /healthz needs no token; other paths 404; other methods 405.
        let (status, _, body) = server
            .raw(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!((status, body.as_str()), (200, "{\"status\":\"ok\"}"));
        let (status, _, _) = server
            .raw(format!("GET /mcp/x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!(status, 404);
        for method in ["GET", "DELETE"] {
            let (status, headers, _) = server.raw(
                format!("{method} /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
            );
            assert_eq!((status, header(&headers, "allow")), (405, Some("POST")), "{method}");
        }

        // 413 before the token for a declared length; a chunked body that grows past 4 MiB is read (and cut) only
        // once its token is accepted.
        let (status, _, _) = server.raw(
            format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 4194305\r\nConnection: close\r\n\r\n{{").as_bytes(),
        );
        assert_eq!(status, 413);
        let mut chunked = format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAuthorization: Bearer {secret}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n").into_bytes();
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..5 {
            chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            chunked.extend_from_slice(&chunk);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let (status, _, _) = server.raw(&chunked);
        assert_eq!(status, 413);
        // Exactly 4 MiB is not too large.
        let padded = format!("{LIST}{}", " ".repeat(4 * 1024 * 1024 - LIST.len()));
        let (status, _, body) = server.post(Some(&secret), "", &padded);
        assert_eq!(status, 200, "{}", &body[..body.len().min(200)]);

        // Messages: not JSON, a batch, a bad id; a notification and a response are accepted with no body.
        let rpc_error = |body: &str, code: i64| {
            let (status, _, text) = server.post(Some(&secret), "", body);
            assert_eq!(status, 400, "{body}: {text}");
            let answer: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                (answer["error"]["code"].as_i64(), answer["id"].clone()),
                (Some(code), Value::Null),
                "{body}"
            );
        };
        rpc_error("{\"jsonrpc\":", -32700);
        rpc_error(&format!("[{LIST}]"), -32600);
        rpc_error(r#"{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}"#, -32600);
        rpc_error(r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#, -32600);
        for accepted in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            let (status, _, body) = server.post(Some(&secret), "", accepted);
            assert_eq!((status, body.as_str()), (202, ""), "{accepted}");
        }
        // A call with no initialize first, on a fresh connection, answered as JSON with no session.
        let result = server.call_raw(&secret, "memory_search", json!({}), None);
        assert_eq!(result["structuredContent"], json!({ "entries": [] }));
        // None of the refusals wrote a record: only the token's creation and that search.
        let ops: Vec<String> =
            env.audit_lines().iter().map(|r| r["operation"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ops, ["token-create", "search"]);
    }

    #[test]
    fn sigterm_exits_0() {
        let env = Env::new();
        let server = Serve::start(&env);
        assert_eq!(server.terminate().code(), Some(0));
    }
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn tool_call() -> impl Strategy<Value = (String, Value)> {
        let id = prop::sample::select(vec![
            "shared:team",
            "project:alp:log:x",
            "private:main:plans",
            "private:worker:d",
            "bad::id",
            "",
        ]);
        let smuggle = prop::sample::select(vec!["role", "actor", "as", "_meta", "user"]);
        (0..7usize, id, prop::option::of(smuggle), "[a-z ]{0,12}").prop_map(|(tool, id, smuggle, text)| {
            let name = [
                "memory_search",
                "memory_get",
                "memory_create",
                "memory_update",
                "memory_delete",
                "memory_context",
                "memory",
            ][tool];
            let mut arguments = match name {
                "memory_search" => json!({ "query": text }),
                "memory_create" => json!({ "id": id, "content": text }),
                "memory_update" | "memory_delete" => json!({ "id": id, "expectedVersion": 1 }),
                "memory_context" => json!({ "query": text, "budget": 100 }),
                "memory" => {
                    json!({ "command": "view", "path": format!("/memories/{}", id.replace(':', "/")) })
                }
                _ => json!({ "id": id }),
            };
            if let Some(key) = smuggle {
                arguments[key] = json!("main");
            }
            (name.to_owned(), arguments)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// Whatever a request asks, every record it leads to names the token's role as actor and the token as via.
        #[test]
        fn every_record_of_a_served_call_is_the_token_s_role_via_its_id(calls in prop::collection::vec(tool_call(), 1..6)) {
            let env = Env::new();
            let (id, secret) = token(&env, "worker", &[]);
            let server = Serve::start(&env);
            for (name, arguments) in calls {
                let meta = json!({ "role": "main", "actor": "main" });
                let result = server.call_raw(&secret, &name, arguments, Some(meta));
                prop_assert!(result.is_object(), "{result}");
            }
            assert_records_via(&env, 1, "worker", &id);
            verify(&env);
        }
    }
}

/// `/metrics`, `/healthz`, the concurrency bounds, unix sockets and shutdown.
mod service {
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;

    use super::*;

    fn search_body() -> String {
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_search", "arguments": { "query": "x" } } })
        .to_string()
    }

    /// Holds the audit log's lock (as another appender would) until dropped: every audited call waits for it.
    fn hold_audit_lock(env: &Env) -> std::fs::File {
        let holder = std::fs::File::open(env.root().join("audit.jsonl")).unwrap();
        rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();
        holder
    }

    /// Sends a search with `secret` from a thread; its (status, headers, body) arrives on the channel.
    fn search_in_background(
        addr: &str,
        secret: &str,
        done: &mpsc::Sender<Answer>,
    ) -> std::thread::JoinHandle<()> {
        let (addr, secret, done, body) = (addr.to_owned(), secret.to_owned(), done.clone(), search_body());
        std::thread::spawn(move || {
            let request = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, \
                 text/event-stream\r\nAuthorization: Bearer {secret}\r\nContent-Length: {}\r\nConnection: \
                 close\r\n\r\n{body}",
                body.len()
            );
            let mut stream = TcpStream::connect(&addr).unwrap();
            stream.set_read_timeout(Some(WAIT)).unwrap();
            stream.write_all(request.as_bytes()).unwrap();
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            let _ = done.send(parse_response(&answer));
        })
    }

    #[test]
    fn metrics_count_calls_responses_and_refusals_and_never_hold_a_secret() {
        let env = Env::new();
        let (id, secret) = token(&env, "worker", &[]);
        let (other_id, other) = token(&env, "worker", &[]);
        let server = Serve::start(&env);

        let created = server.call_raw(
            &secret,
            "memory_create",
            json!({ "id": "project:alp:log:m", "content": "x" }),
            None,
        );
        assert_eq!(created["isError"], false, "{created}");
        let denied = server.call_raw(&secret, "memory_get", json!({ "id": "private:main:plans" }), None);
        assert_eq!(denied["structuredContent"]["error"]["code"], "PRIVATE_MEMORY_DENIED");
        server.call_raw(&other, "memory_search", json!({ "query": "x" }), None);
        let unknown = server.call_raw(&secret, "memory_nope", json!({}), None);
        assert_eq!(unknown["structuredContent"]["error"]["code"], "USAGE");
        // Refused: no token, a malformed one, a wrong secret for a real ID, and /metrics without a token.
        assert_eq!(server.post(None, "", &search_body()).0, 401);
        assert_eq!(server.post(Some("alp_nope"), "", &search_body()).0, 401);
        let mut wrong = other.clone();
        let last = if wrong.ends_with('A') { 'B' } else { 'A' };
        wrong.pop();
        wrong.push(last);
        assert_eq!(server.post(Some(&wrong), "", &search_body()).0, 401);
        let (status, headers, body) = server.get("/metrics", None);
        assert_eq!((status, body.as_str()), (401, "{\"error\":\"missing_token\"}"));
        assert_eq!(header(&headers, "www-authenticate"), Some("Bearer realm=\"alp-memory\""));

        let (status, headers, text) = server.get("/metrics", Some(&secret));
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            header(&headers, "content-type"),
            Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
        );
        let lines: Vec<&str> = text.lines().collect();
        for expected in [
            "alp_tool_calls_total{tool=\"memory_create\",outcome=\"ok\"} 1",
            "alp_tool_calls_total{tool=\"memory_get\",outcome=\"PRIVATE_MEMORY_DENIED\"} 1",
            "alp_tool_calls_total{tool=\"memory_search\",outcome=\"ok\"} 1",
            "alp_tool_calls_total{tool=\"unknown\",outcome=\"USAGE\"} 1",
            "alp_tool_call_duration_seconds_count{tool=\"memory_create\"} 1",
            "alp_tool_call_duration_seconds_count{tool=\"unknown\"} 1",
            "alp_http_responses_total{status=\"200\"} 4",
            "alp_http_responses_total{status=\"401\"} 4",
            "alp_token_refusals_total{reason=\"missing\"} 2",
            "alp_token_refusals_total{reason=\"malformed\"} 1",
            "alp_token_refusals_total{reason=\"unknown\"} 1",
            "# TYPE alp_tool_call_duration_seconds histogram",
        ] {
            assert!(lines.contains(&expected), "{expected} in:\n{text}");
        }
        assert_eq!(lines.last(), Some(&"# EOF"));
        // Neither secret, nor the wrong one, nor a token ID, nor the unknown tool's name.
        for secret in [&secret, &other, &wrong] {
            assert!(!text.contains(&secret[17..]), "{text}");
        }
        assert!(!text.contains(&id) && !text.contains(&other_id) && !text.contains("memory_nope"), "{text}");
        // The scrape itself is counted once it is answered.
        let (_, _, again) = server.get("/metrics", Some(&other));
        assert!(again.lines().any(|l| l == "alp_http_responses_total{status=\"200\"} 5"), "{again}");
    }

    #[test]
    fn healthz_is_503_while_the_audit_log_cannot_be_appended_to_or_the_root_opened() {
        let env = Env::new();
        token(&env, "worker", &[]);
        let server = Serve::start(&env);
        let ok = (200, "{\"status\":\"ok\"}".to_owned());
        let unavailable = (503, "{\"status\":\"unavailable\"}".to_owned());
        let health = || {
            let (status, _, body) = server.get("/healthz", None);
            (status, body)
        };
        assert_eq!(health(), ok);

        let log = env.root().join("audit.jsonl");
        let kept = std::fs::read(&log).unwrap();
        std::fs::remove_file(&log).unwrap();
        std::fs::create_dir(&log).unwrap();
        assert_eq!(health(), unavailable);
        std::fs::remove_dir(&log).unwrap();
        std::fs::write(&log, &kept).unwrap();
        assert_eq!(health(), ok);

        let away = env.dir.path().join("moved");
        std::fs::rename(env.root(), &away).unwrap();
        assert_eq!(health(), unavailable);
        std::fs::rename(&away, env.root()).unwrap();
        assert_eq!(health(), ok);
    }

    #[test]
    fn past_8_calls_of_one_token_429_and_past_max_concurrency_503_after_5_s() {
        let env = Env::new();
        let (_, noisy) = token(&env, "worker", &[]);
        let (_, quiet) = token(&env, "worker", &[]);
        // The call holding the only slot waits for the audit lock longer than the test lasts.
        std::fs::write(env.root().join("config.yaml"), "lockTimeout: 60s\n").unwrap();
        let server = Serve::start_with(&env, &["--max-concurrency", "1"]);
        let lock = hold_audit_lock(&env);
        let (done, answers) = mpsc::channel();
        let mut threads = vec![search_in_background(&server.addr, &noisy, &done)];
        std::thread::sleep(Duration::from_millis(300));
        // Seven more of the same token wait for the slot: eight in flight, waiting included.
        for _ in 0..7 {
            threads.push(search_in_background(&server.addr, &noisy, &done));
        }
        std::thread::sleep(Duration::from_millis(500));
        let started = std::time::Instant::now();
        let (status, headers, body) = server.post(Some(&noisy), "", &search_body());
        assert_eq!((status, body.as_str()), (429, "{\"error\":\"too_many_requests\"}"));
        assert_eq!(header(&headers, "retry-after"), Some("1"));
        assert!(started.elapsed() < Duration::from_secs(2), "refused at once");
        // Another token is not refused for the first one's count, but waits 5 s for the slot.
        let started = std::time::Instant::now();
        let (status, headers, body) = server.post(Some(&quiet), "", &search_body());
        assert_eq!((status, body.as_str()), (503, "{\"error\":\"busy\"}"));
        assert_eq!(header(&headers, "retry-after"), Some("1"));
        assert!(started.elapsed() >= Duration::from_secs(5), "{:?}", started.elapsed());
        // The seven that waited were refused the same way; the one holding the slot answers once the lock is free.
        let mut statuses: Vec<u16> = (0..7).map(|_| answers.recv_timeout(WAIT).unwrap().0).collect();
        drop(lock);
        let (status, _, body) = answers.recv_timeout(WAIT).unwrap();
        assert_eq!(status, 200, "{body}");
        statuses.sort_unstable();
        assert_eq!(statuses, [503; 7]);
        for thread in threads {
            thread.join().unwrap();
        }
        // Only the answered call was audited.
        let ops: Vec<String> =
            env.audit_lines().iter().map(|r| r["operation"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ops, ["token-create", "token-create", "search"]);
    }

    #[test]
    fn sigterm_lets_the_call_in_flight_finish_then_exits_0() {
        let env = Env::new();
        let (_, secret) = token(&env, "worker", &[]);
        let mut server = Serve::start(&env);
        let lock = hold_audit_lock(&env);
        let (done, answers) = mpsc::channel();
        let thread = search_in_background(&server.addr, &secret, &done);
        std::thread::sleep(Duration::from_millis(500));
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&server.child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        assert!(server.child.try_wait().unwrap().is_none(), "still finishing the call");
        drop(lock);
        let (status, _, body) = answers.recv_timeout(WAIT).unwrap();
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["result"]["structuredContent"], json!({ "entries": [] }));
        thread.join().unwrap();
        assert_eq!(server.child.wait().unwrap().code(), Some(0));
        assert_eq!(env.audit_lines().last().unwrap()["operation"], "search");
    }

    fn unix_request(path: &std::path::Path, request: &str) -> (u16, Vec<(String, String)>, String) {
        let mut stream = UnixStream::connect(path).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        parse_response(&answer)
    }

    #[test]
    fn a_unix_socket_listener_0660_listed_absolute_refused_when_taken_removed_on_sigterm() {
        use std::os::unix::fs::PermissionsExt;
        let env = Env::new();
        let (_, secret) = token(&env, "worker", &[]);
        let path = env.dir.path().join("alp.sock");
        // A relative path, made absolute.
        let server = Serve::start_with(&env, &["--listen", "unix:alp.sock"]);
        assert_eq!(
            server.listening["listening"][1].as_str(),
            Some(format!("unix:{}", path.display()).as_str())
        );
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o660);
        let body = search_body();
        // No Host header (as over most unix sockets).
        let (status, _, text) = unix_request(
            &path,
            &format!(
                "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: \
                 Bearer {secret}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["result"]["structuredContent"], json!({ "entries": [] }));
        let (status, _, _) =
            unix_request(&path, "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        assert_eq!(status, 401);

        // Taken by a live server, or not a socket: refused, naming the address.
        let taken = env.run(&["--json", "serve", "--listen", "unix:alp.sock"], None);
        assert_eq!(taken.status, 2, "{taken:?}");
        assert_eq!(taken.error()["code"], "USAGE");
        assert!(taken.error()["message"].as_str().unwrap().contains(&format!("unix:{}", path.display())));
        let file = env.dir.path().join("plain");
        std::fs::write(&file, "keep").unwrap();
        let plain = env.run(&["--json", "serve", "--listen", "unix:plain"], None);
        assert_eq!(plain.status, 2, "{plain:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");

        // SIGTERM removes the socket file.
        assert_eq!(server.terminate().code(), Some(0));
        assert!(!path.exists());
        // A socket left by a killed server is stale and is replaced.
        drop(Serve::start_with(&env, &["--listen", "unix:alp.sock"]));
        assert!(path.exists(), "a killed server leaves its socket");
        let again = Serve::start_with(&env, &["--listen", "unix:alp.sock"]);
        assert_eq!(again.terminate().code(), Some(0));
        assert!(!path.exists());
    }
}

/// TLS on TCP listeners, with a certificate the test makes.
mod tls {
    use std::sync::Arc;

    use super::*;

    /// A self-signed certificate for `localhost`, written as PEM files: (cert path, key path, DER).
    fn certificate(env: &Env) -> (std::path::PathBuf, std::path::PathBuf, Vec<u8>) {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert = env.dir.path().join("cert.pem");
        let key = env.dir.path().join("key.pem");
        std::fs::write(&cert, made.cert.pem()).unwrap();
        std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
        (cert, key, made.cert.der().to_vec())
    }

    /// One request over TLS to `port` on 127.0.0.1, trusting only `der`: (status, headers, body).
    fn tls_request(port: u16, der: &[u8], request: &str) -> (u16, Vec<(String, String)>, String) {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(rustls::pki_types::CertificateDer::from(der.to_vec())).unwrap();
        let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        let mut stream = rustls::StreamOwned::new(connection, socket);
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        parse_response(&answer)
    }

    #[test]
    fn tls_serves_with_the_given_certificate_and_opens_non_loopback_addresses() {
        let env = Env::new();
        let (_, secret) = token(&env, "worker", &[]);
        let (cert, key, der) = certificate(&env);
        let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
        // Not loopback: allowed with TLS, listed as https.
        let server =
            Serve::start_with(&env, &["--listen", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key]);
        let urls = server.listening["listening"].as_array().unwrap();
        assert!(urls.iter().all(|u| u.as_str().unwrap().starts_with("https://")), "{urls:?}");
        assert!(urls[1].as_str().unwrap().starts_with("https://0.0.0.0:"), "{urls:?}");
        let port: u16 = server.addr.rsplit_once(':').unwrap().1.parse().unwrap();
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_search", "arguments": {} } })
        .to_string();
        let (status, _, text) = tls_request(
            port,
            &der,
            &format!(
                "POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\nAccept: \
                 application/json\r\nAuthorization: Bearer {secret}\r\nContent-Length: {}\r\nConnection: \
                 close\r\n\r\n{body}",
                body.len()
            ),
        );
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["result"]["structuredContent"], json!({ "entries": [] }));
        // Plain HTTP on the TLS port gets no HTTP answer.
        let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
        plain.set_read_timeout(Some(WAIT)).unwrap();
        plain
            .write_all(format!("GET /healthz HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes())
            .unwrap();
        let mut answer = Vec::new();
        let _ = plain.read_to_end(&mut answer);
        assert!(!answer.starts_with(b"HTTP/"), "{:?}", String::from_utf8_lossy(&answer));
        assert_eq!(server.terminate().code(), Some(0));

        // Without TLS a non-loopback address is USAGE; a bad certificate is USAGE naming both files; one file alone
        // is refused by the parser.
        let open = env.run(&["--json", "serve", "--listen", "0.0.0.0:0"], None);
        assert_eq!((open.status, open.error()["code"].as_str()), (2, Some("USAGE")));
        assert!(open.error()["message"].as_str().unwrap().contains("--tls-cert"), "{open:?}");
        let bad = env
            .run(&["--json", "serve", "--listen", "127.0.0.1:0", "--tls-cert", key, "--tls-key", key], None);
        assert_eq!((bad.status, bad.error()["code"].as_str()), (2, Some("USAGE")), "{bad:?}");
        assert!(bad.error()["message"].as_str().unwrap().contains(&format!("--tls-cert `{key}`")), "{bad:?}");
        let alone = env.run(&["--json", "serve", "--listen", "127.0.0.1:0", "--tls-cert", cert], None);
        assert_eq!(alone.status, 2, "{alone:?}");
    }
}

/// The header deadline and the idle timeout, on raw connections.
mod deadlines {
    use std::time::Instant;

    use super::*;

    /// Reads one response (headers and a Content-Length body) from a kept-alive connection: its status.
    fn read_one(stream: &mut TcpStream) -> u16 {
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n\r\n") {
            assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed: {:?}", String::from_utf8_lossy(&answer));
            answer.push(byte[0]);
        }
        let head = String::from_utf8(answer.clone()).unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap())
            })
            .unwrap();
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).unwrap();
        head.split(' ').nth(1).unwrap().parse().unwrap()
    }

    /// Waits for the server to close `stream`: how long that took.
    fn closed_after(stream: &mut TcpStream) -> Duration {
        let started = Instant::now();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
        started.elapsed()
    }

    fn connect(server: &Serve) -> TcpStream {
        let stream = TcpStream::connect(&server.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(70))).unwrap();
        stream
    }

    #[test]
    fn slow_headers_are_cut_at_10_s_while_an_idle_connection_lives_on() {
        let env = Env::new();
        let server = Serve::start(&env);
        let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
        let mut idle = connect(&server);
        idle.write_all(healthz.as_bytes()).unwrap();
        assert_eq!(read_one(&mut idle), 200);
        let mut slow = connect(&server);
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: loc").unwrap();
        let took = closed_after(&mut slow);
        assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(20), "{took:?}");
        // Idle for longer than the header deadline, and still served.
        idle.write_all(healthz.as_bytes()).unwrap();
        assert_eq!(read_one(&mut idle), 200);
    }

    #[test]
    fn an_idle_connection_is_closed_after_the_idle_timeout() {
        let env = Env::new();
        let server = Serve::start_with(&env, &["--idle-timeout", "2"]);
        let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
        let mut stream = connect(&server);
        // Each request restarts the clock.
        for _ in 0..3 {
            stream.write_all(healthz.as_bytes()).unwrap();
            assert_eq!(read_one(&mut stream), 200);
            std::thread::sleep(Duration::from_millis(1200));
        }
        let took = closed_after(&mut stream);
        assert!(took < Duration::from_secs(5), "{took:?}");
        // A connection that never sends a byte is idle too.
        let mut silent = connect(&server);
        let took = closed_after(&mut silent);
        assert!(took >= Duration::from_millis(1500) && took < Duration::from_secs(5), "{took:?}");
    }
}
