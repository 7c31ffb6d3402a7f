//! `alp serve` before and around a call, attacked over raw sockets: nothing of a body is read before its token is
//! accepted, a body has a deadline, connections are capped, a call's slot and its token's count last as long as
//! its work (not as long as its client), a message's cost is bounded before rmcp reads it, and every refusal is
//! JSON.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsFd as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::Env;
use crate::serve::{Serve, header, parse_response, token};

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// A connection that has sent `head` and maybe part of a body, and reads what comes back.
struct Open {
    stream: TcpStream,
}

impl Open {
    fn send(server: &Serve, bytes: &[u8]) -> Open {
        let mut stream = TcpStream::connect(&server.addr).unwrap();
        stream.write_all(bytes).unwrap();
        Open { stream }
    }

    /// Everything the server sends until it closes the connection or `wait` passes: the bytes, and whether the
    /// connection was closed.
    fn read_until_closed(&mut self, wait: Duration) -> (Vec<u8>, bool) {
        let deadline = Instant::now() + wait;
        let mut answer = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (answer, false);
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut buffer) {
                Ok(0) => return (answer, true),
                Ok(n) => answer.extend_from_slice(&buffer[..n]),
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    return (answer, false);
                }
                // A reset after the answer (the server closed with unread bytes in flight) is a close.
                Err(_) => return (answer, true),
            }
        }
    }
}

fn head(server: &Serve, auth: Option<&str>, extra: &str) -> String {
    let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n{auth}{extra}", server.addr)
}

fn status_of(answer: &[u8]) -> u16 {
    parse_response(answer).0
}

/// No byte of a body is read before the token is accepted; `Expect: 100-continue` is answered
/// only after; the refused connection closes at once, holding nothing beyond its headers.
#[test]
fn an_unauthenticated_body_is_never_read_and_its_connection_closes() {
    let env = Env::new();
    let (_, secret) = token(&env, "worker", &[]);
    let server = Serve::start(&env);

    // 4,000,000 bytes declared, 1 MB sent, then a stall: the 401 comes at once and the connection closes.
    let mut request = head(&server, None, "Content-Length: 4000000\r\n\r\n").into_bytes();
    request.extend(std::iter::repeat_n(b' ', 1_000_000));
    let started = Instant::now();
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    let writer = stream.try_clone().unwrap();
    let sending = std::thread::spawn(move || {
        let mut writer = writer;
        let _ = writer.write_all(&request);
    });
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let _ = sending.join();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered and closed at once: {:?}",
        started.elapsed()
    );
    let (status, headers, body) = parse_response(&answer);
    assert_eq!((status, body.as_str()), (401, "{\"error\":\"missing_token\"}"));
    assert_eq!(header(&headers, "connection"), Some("close"));

    // Expect: 100-continue without a token: the first line is the 401, never `100 Continue`.
    let mut open = Open::send(
        &server,
        head(&server, None, "Content-Length: 20\r\nExpect: 100-continue\r\n\r\n").as_bytes(),
    );
    let (answer, closed) = open.read_until_closed(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 401 "), "{text}");
    assert!(!text.contains("100 Continue"), "{text}");
    assert!(closed, "the connection closes");
    // An invalid token: the same.
    let mut open = Open::send(
        &server,
        head(
            &server,
            Some("alp_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            "Content-Length: 20\r\nExpect: 100-continue\r\n\r\n",
        )
        .as_bytes(),
    );
    let (answer, closed) = open.read_until_closed(Duration::from_secs(10));
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 401 "));
    assert!(closed);

    // With the token, `100 Continue` comes first, then the answer once the body is sent.
    let body = LIST;
    let mut open = Open::send(
        &server,
        head(
            &server,
            Some(&secret),
            &format!("Content-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n", body.len()),
        )
        .as_bytes(),
    );
    let (answer, closed) = open.read_until_closed(Duration::from_secs(2));
    assert!(!closed);
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 100 Continue\r\n\r\n"));
    open.stream.write_all(body.as_bytes()).unwrap();
    let (answer, closed) = open.read_until_closed(Duration::from_secs(10));
    assert!(closed);
    assert_eq!(status_of(&answer), 200, "{}", String::from_utf8_lossy(&answer));

    // A chunked body without a token: 401, not read (it would grow past 4 MiB).
    let mut chunked = head(&server, None, "Transfer-Encoding: chunked\r\n\r\n").into_bytes();
    chunked.extend_from_slice(b"100000\r\n");
    chunked.extend(std::iter::repeat_n(b' ', 1 << 20));
    let (status, _, body) = server.raw(&chunked);
    assert_eq!((status, body.as_str()), (401, "{\"error\":\"missing_token\"}"));
    // None of this wrote a record but the token's creation.
    let ops: Vec<String> =
        env.audit_lines().iter().map(|r| r["operation"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ops, ["token-create"]);
}

/// A body must arrive whole within 30 s of its headers: a stalled body, a body trickled a byte a
/// second, and a chunked body that never ends are each answered `408` and closed (the three run together).
#[test]
fn a_body_has_thirty_seconds() {
    let env = Env::new();
    let (_, secret) = token(&env, "worker", &[]);
    let server = Serve::start(&env);
    let started = Instant::now();

    let stalled = Open::send(
        &server,
        format!("{}Content-Length: 100\r\n\r\n{{\"jsonrpc\"", head(&server, Some(&secret), "")).as_bytes(),
    );
    let trickled =
        Open::send(&server, head(&server, Some(&secret), "Content-Length: 1000\r\n\r\n").as_bytes());
    let endless = Open::send(
        &server,
        format!("{}Transfer-Encoding: chunked\r\n\r\n2\r\n{{\"\r\n", head(&server, Some(&secret), ""))
            .as_bytes(),
    );
    let mut writer = trickled.stream.try_clone().unwrap();
    let trickling = std::thread::spawn(move || {
        for _ in 0..60 {
            if writer.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let waits: Vec<_> = [stalled, trickled, endless]
        .into_iter()
        .map(|mut open| {
            std::thread::spawn(move || (open.read_until_closed(Duration::from_secs(50)), Instant::now()))
        })
        .collect();
    for wait in waits {
        let ((answer, closed), at) = wait.join().unwrap();
        let elapsed = at - started;
        let (status, headers, body) = parse_response(&answer);
        assert_eq!(status, 408, "{body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({ "error": "body_timeout", "seconds": 30 })
        );
        assert_eq!(header(&headers, "connection"), Some("close"));
        assert!(closed);
        assert!(elapsed >= Duration::from_secs(29) && elapsed < Duration::from_secs(45), "{elapsed:?}");
    }
    let _ = trickling.join();
}

/// A request head over 32 KiB is refused with 431 and its connection closed: what a connection holds before its
/// token is read is bounded.
#[test]
fn a_head_over_32_kib_is_refused() {
    let env = Env::new();
    let server = Serve::start(&env);
    let padding = format!("X-Pad: {}\r\n", "p".repeat(1000)).repeat(40);
    let mut open = Open::send(
        &server,
        format!("{}{padding}Content-Length: 2\r\n\r\n{{}}", head(&server, None, "")).as_bytes(),
    );
    let (answer, closed) = open.read_until_closed(Duration::from_secs(10));
    assert_eq!(status_of(&answer), 431, "{}", String::from_utf8_lossy(&answer));
    assert!(closed);
    // Just under the bound: read, and refused for what it is (no token).
    let padding = format!("X-Pad: {}\r\n", "p".repeat(1000)).repeat(28);
    let mut open = Open::send(
        &server,
        format!("{}{padding}Content-Length: 2\r\n\r\n{{}}", head(&server, None, "")).as_bytes(),
    );
    let (answer, _) = open.read_until_closed(Duration::from_secs(10));
    assert_eq!(status_of(&answer), 401, "{}", String::from_utf8_lossy(&answer));
}

/// `--max-connections N`: the N+1-th connection is not served (nothing of it is read) until one of the N closes.
#[test]
fn connections_past_the_cap_wait_in_the_backlog() {
    let env = Env::new();
    let server = Serve::start_with(&env, &["--max-connections", "2"]);
    let idle: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(&server.addr).unwrap()).collect();
    // Give the server time to accept both.
    std::thread::sleep(Duration::from_millis(300));
    let healthz = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.addr);
    let mut third = Open::send(&server, healthz.as_bytes());
    let (answer, closed) = third.read_until_closed(Duration::from_secs(2));
    assert!(
        answer.is_empty() && !closed,
        "not served while two are open: {}",
        String::from_utf8_lossy(&answer)
    );
    drop(idle);
    let (answer, _) = third.read_until_closed(Duration::from_secs(10));
    assert_eq!(status_of(&answer), 200, "served once one closed");
    // The flag's bounds.
    let zero = env.run(&["serve", "--max-connections", "0"], None);
    assert_eq!(zero.status, 2, "{zero:?}");
}

/// Holds every entry and scope-root lock of the root (`.locks/entry-*`, `.locks/scope-*`) until dropped, so a
/// write made meanwhile waits inside its call (up to `lockTimeout`).
struct HeldLocks {
    _files: Vec<std::fs::File>,
}

impl HeldLocks {
    fn take(root: &std::path::Path) -> HeldLocks {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(root.join(".locks")).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            if name.starts_with("entry-") || name.starts_with("scope-") {
                let file = std::fs::OpenOptions::new().read(true).write(true).open(entry.path()).unwrap();
                rustix::fs::flock(file.as_fd(), rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .unwrap();
                files.push(file);
            }
        }
        assert!(!files.is_empty());
        HeldLocks { _files: files }
    }
}

/// A `tools/call` whose client leaves at once (the connection is closed right after the request is sent).
fn abandon(server: &Serve, secret: &str, arguments: Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "memory_create", "arguments": arguments } })
    .to_string();
    let request = format!("{}Content-Length: {}\r\n\r\n{body}", head(server, Some(secret), ""), body.len());
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    // Long enough for the call to reach its blocking task.
    std::thread::sleep(Duration::from_millis(300));
    drop(stream);
}

/// A slot and the per-token count are held until the call's work ends, not until its client
/// leaves; the per-token limit counts every authenticated request.
#[test]
fn a_call_keeps_its_slot_and_count_until_its_work_ends() {
    let env = Env::new();
    std::fs::write(env.root().join("config.yaml"), "lockTimeout: 20s\n").unwrap();
    // Make the lock files exist.
    env.ok("worker", &["memory", "create", "project:alp:log:seed", "--content", "x"]);
    let (_, secret) = token(&env, "worker", &[]);
    let (_, other) = token(&env, "main", &[]);

    // --max-concurrency 1: a create whose client left still holds the one slot while it waits on the lock.
    let server = Serve::start_with(&env, &["--max-concurrency", "1"]);
    let locks = HeldLocks::take(&env.root());
    abandon(&server, &secret, json!({ "id": "project:alp:log:left", "content": "x" }));
    let get = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "memory_get", "arguments": { "id": "project:alp:log:seed" } } })
    .to_string();
    let (status, headers, body) = server.post(Some(&other), "", &get);
    assert_eq!((status, header(&headers, "retry-after")), (503, Some("1")), "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({ "error": "busy" }));
    drop(locks);
    // Once its work ends, the slot is free again, and the abandoned create was done.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _, body) = server.post(Some(&other), "", &get);
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(Instant::now() < deadline, "the slot never came back");
    }
    let created = env.ok("main", &["memory", "get", "project:alp:log:left"]);
    assert_eq!(created["version"], 1);
    drop(server);

    // --max-concurrency 8: eight creates whose clients left hold the token's eight places, so any ninth request of
    // that token — a tools/list too — is 429, while another token is served.
    let server = Serve::start_with(&env, &["--max-concurrency", "8"]);
    let locks = HeldLocks::take(&env.root());
    for n in 0..8 {
        abandon(&server, &secret, json!({ "id": format!("project:alp:log:gone{n}"), "content": "x" }));
    }
    let (status, headers, body) = server.post(Some(&secret), "", LIST);
    assert_eq!((status, header(&headers, "retry-after")), (429, Some("1")), "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({ "error": "too_many_requests" }));
    let (status, _, _) = server.post(Some(&other), "", LIST);
    assert_eq!(status, 200);
    drop(locks);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.post(Some(&secret), "", LIST).0 != 200 {
        assert!(Instant::now() < deadline, "the token's places never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the JSON-RPC layer refuses before rmcp reads a message, and every refusal's body is JSON.
#[test]
fn bad_shapes_and_headers_are_json_refusals() {
    let env = Env::new();
    let (_, secret) = token(&env, "worker", &[]);
    let server = Serve::start(&env);

    let refused = |body: &str, id: Value| {
        let (status, headers, text) = server.post(Some(&secret), "", body);
        assert_eq!(
            (status, header(&headers, "content-type")),
            (400, Some("application/json")),
            "{body}: {text}"
        );
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (answer["jsonrpc"].as_str(), answer["error"]["code"].as_i64(), &answer["id"]),
            (Some("2.0"), Some(-32600), &id),
            "{body}"
        );
    };
    refused(r#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#, json!(1));
    refused(r#"{"id":"a","method":"tools/list"}"#, json!("a"));
    refused(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[]}"#, json!(2));
    refused(r#"{"jsonrpc":"2.0","id":3,"method":4}"#, json!(3));
    // More values than a message may hold: two million small numbers in 4 MB are refused, not buffered.
    let many =
        format!(r#"{{"jsonrpc":"2.0","id":4,"method":"ping","params":{{"x":[{}0]}}}}"#, "0,".repeat(70_000));
    refused(&many, json!(4));
    // Exactly at the cap is served.
    let fits = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"x":[{}0]}}}}"#,
        "0,".repeat(memory_mcp::MAX_VALUES - 12)
    );
    let (status, _, text) = server.post(Some(&secret), "", &fits);
    assert_eq!(status, 200, "{text}");

    // A wrong content type: 415 with a JSON body.
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {secret}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{LIST}",
        server.addr,
        LIST.len()
    );
    let (status, headers, body) = server.raw(request.as_bytes());
    assert_eq!((status, header(&headers, "content-type")), (415, Some("application/json")));
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({ "error": "unsupported_media_type", "expected": "application/json" })
    );
    // rmcp's own refusal of an unknown MCP-Protocol-Version header is JSON too.
    let (status, headers, body) = server.post(Some(&secret), "MCP-Protocol-Version: 1999-01-01\r\n", LIST);
    assert_eq!((status, header(&headers, "content-type")), (400, Some("application/json")), "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], -32600);
    assert!(answer["error"]["message"].as_str().unwrap().contains("1999-01-01"), "{answer}");

    // Two Host, Origin or Authorization headers: 400 before anything else.
    let host = &server.addr;
    for (twice, name) in [
        (format!("Host: {host}\r\nHost: {host}\r\n"), "host"),
        (format!("Host: {host}\r\nOrigin: http://{host}\r\nOrigin: http://{host}\r\n"), "origin"),
        (
            format!("Host: {host}\r\nAuthorization: Bearer {secret}\r\nAuthorization: Bearer {secret}\r\n"),
            "authorization",
        ),
    ] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\n{twice}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{LIST}",
            LIST.len()
        );
        let (status, _, body) = server.raw(request.as_bytes());
        assert_eq!(status, 400, "{name}: {body}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({ "error": "duplicate_header", "header": name })
        );
    }
    // Nothing above reached a door.
    let ops: Vec<String> =
        env.audit_lines().iter().map(|r| r["operation"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ops, ["token-create"]);
}

/// One token's requests with long bodies (over 64 KiB) are answered one at a time: while one is being worked on,
/// another waits for its token's slot (503 after 5 s), a short one of the same token and any of another token are
/// served.
#[test]
fn one_long_body_at_a_time_per_token() {
    let env = Env::new();
    std::fs::write(env.root().join("config.yaml"), "lockTimeout: 20s\n").unwrap();
    env.ok("worker", &["memory", "create", "project:alp:log:seed", "--content", "x"]);
    let (_, secret) = token(&env, "worker", &[]);
    let (_, other) = token(&env, "main", &[]);
    let server = Serve::start(&env);
    let locks = HeldLocks::take(&env.root());
    // A create whose message is over 64 KiB (padded in `_meta`) waits on the lock, holding worker's slot for long
    // bodies.
    let long_create = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "memory_create", "_meta": { "pad": "m".repeat(70 * 1024) },
                    "arguments": { "id": "project:alp:log:long", "content": "x" } } })
    .to_string();
    let first = {
        let request = format!(
            "{}Content-Length: {}\r\nConnection: close\r\n\r\n{long_create}",
            head(&server, Some(&secret), ""),
            long_create.len()
        );
        let mut open = Open::send(&server, request.as_bytes());
        std::thread::spawn(move || open.read_until_closed(Duration::from_secs(40)))
    };
    std::thread::sleep(Duration::from_millis(500));
    let long_ping = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "p".repeat(70 * 1024)
    );
    let started = Instant::now();
    let (status, headers, body) = server.post(Some(&secret), "", &long_ping);
    assert_eq!((status, header(&headers, "retry-after")), (503, Some("1")), "{body}");
    assert!(started.elapsed() >= Duration::from_secs(4), "{:?}", started.elapsed());
    // Short requests of the same token, and long ones of another, are served meanwhile.
    assert_eq!(server.post(Some(&secret), "", LIST).0, 200);
    assert_eq!(server.post(Some(&other), "", &long_ping).0, 200);
    drop(locks);
    let (answer, _) = first.join().unwrap();
    assert_eq!(status_of(&answer), 200);
    // Once it is answered, the slot is free.
    assert_eq!(server.post(Some(&secret), "", &long_ping).0, 200);
}
