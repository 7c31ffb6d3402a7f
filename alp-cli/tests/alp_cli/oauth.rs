//! `alp serve` as an OAuth 2.1 protected resource (`docs/CLI.md`, "OAuth 2.1"): end to end against a real
//! authorization server the tests start (`oauth_server.py`, on Authlib from PyPI, in a virtual environment made
//! once per run), serving its RFC 8414 metadata and JWKS over HTTPS with a CA the test makes (so discovery and
//! `--oauth-ca` are exercised), issuing client-credentials JWTs (RS256 and ES256) whose `aud` is the RFC 8707
//! resource and whose role claim names the client's role; then real MCP calls with those tokens through the real
//! `alp serve`, and the audit records' `via`. Every refusal is a token minted with that server's keys (or keys
//! of none): 401, the exact challenge, no record, counted by reason in `/metrics`. When pip cannot reach PyPI the
//! tests that need Authlib print a notice and pass, unless `ALP_REQUIRE_PYTHON_SDK=1`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::cli::Env;
use crate::mcp::TOOLS;
use crate::serve::{Serve, announced, call, header, token};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/alp_cli/oauth_server.py");

/// The environment with Authlib and Flask; `None` when pip cannot reach PyPI.
fn authlib() -> Option<&'static Path> {
    static VENV: OnceLock<Option<PathBuf>> = OnceLock::new();
    VENV.get_or_init(|| {
        crate::python::venv(
            "python-authlib",
            &["authlib>=1.6", "flask>=3"],
            "import authlib.oauth2.rfc9068, flask, joserfc, werkzeug",
        )
    })
    .as_deref()
}

/// A CA and a certificate for 127.0.0.1 it signed, as PEM files in `dir`: (CA, certificate, key).
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "alp test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let paths = (dir.join("ca.pem"), dir.join("as-cert.pem"), dir.join("as-key.pem"));
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A running `oauth_server.py serve`: its issuer URL, its private keys (for `mint`) and the CA that signed its
/// certificate.
struct AuthServer {
    child: Child,
    venv: PathBuf,
    issuer: String,
    keys: PathBuf,
    ca: PathBuf,
}

impl AuthServer {
    /// Starts one in its own directory under `env` named `name`; `spec` adds to the defaults (two clients of
    /// role worker: `rsa` signed RS256, `ec` signed ES256).
    fn start(venv: &Path, env: &Env, name: &str, extra: Value) -> AuthServer {
        let dir = env.dir.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let (ca, cert, key) = certificates(&dir);
        let mut spec = json!({
            "dir": dir, "cert": cert, "key": key, "resource": "http://unused/mcp",
            "clients": [
                { "id": "rsa", "secret": "rsa-secret", "alg": "RS256", "role": "worker" },
                { "id": "ec", "secret": "ec-secret", "alg": "ES256", "role": "worker" },
            ],
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        let (child, started) = announced(
            Command::new(venv.join("bin/python"))
                .arg(SCRIPT)
                .arg("serve")
                .arg(spec.to_string())
                .stdin(Stdio::piped()),
        );
        AuthServer {
            child,
            venv: venv.to_owned(),
            issuer: started["issuer"].as_str().unwrap().to_owned(),
            keys: dir.join("keys.json"),
            ca,
        }
    }

    fn python(&self, command: &str, spec: &Value) -> String {
        let output = Command::new(self.venv.join("bin/python"))
            .arg(SCRIPT)
            .arg(command)
            .arg(spec.to_string())
            .output()
            .unwrap();
        assert!(output.status.success(), "{command} {spec}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// An access token from the token endpoint (client credentials, RFC 8707 `resource`).
    fn token(&self, client: &str, resource: &str) -> String {
        self.python(
            "token",
            &json!({ "issuer": self.issuer, "ca": self.ca, "client": client,
                     "secret": format!("{client}-secret"), "resource": resource }),
        )
    }

    /// A token minted with this server's keys as `spec` says (`mint` of `oauth_server.py`).
    fn mint(&self, mut spec: Value) -> String {
        spec["keys"] = json!(self.keys);
        self.python("mint", &spec)
    }

    /// Claims this server would issue for `resource`: sub `agent-1`, role worker, valid for ten minutes.
    fn claims(&self, resource: &str) -> Value {
        json!({ "iss": self.issuer, "aud": resource, "sub": "agent-1", "iat": now(), "exp": now() + 600,
                "alp_role": "worker" })
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `host:port` of an https URL.
fn authority(url: &str) -> &str {
    url.strip_prefix("https://").unwrap()
}

fn challenge(serve: &Serve, error: bool) -> String {
    let metadata = format!("http://{}/.well-known/oauth-protected-resource/mcp", serve.addr);
    if error {
        format!("Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\"")
    } else {
        format!("Bearer resource_metadata=\"{metadata}\"")
    }
}

/// The request every refusal test sends: a call that would write a record if it were let through.
fn search_body() -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "memory_search", "arguments": { "query": "Postgres" } } })
    .to_string()
}

/// The value of `alp_token_refusals_total{reason}` (0 when absent), read with an alp token.
fn refusals(serve: &Serve, alp_token: &str, reason: &str) -> u64 {
    let (status, _, text) = serve.get("/metrics", Some(alp_token));
    assert_eq!(status, 200, "{text}");
    let prefix = format!("alp_token_refusals_total{{reason=\"{reason}\"}} ");
    text.lines().find_map(|line| line.strip_prefix(&prefix)).map_or(0, |n| n.parse().unwrap())
}

/// Sends `jwt` and checks the refusal: 401, the exact challenge, `{"error":"invalid_token"}`, no record, and one
/// more refusal counted for `reason`.
fn refused(env: &Env, serve: &Serve, alp_token: &str, jwt: &str, reason: &str) {
    let before = (env.audit_lines().len(), refusals(serve, alp_token, reason));
    let (status, headers, body) = serve.post(Some(jwt), "", &search_body());
    assert_eq!(status, 401, "{reason}: {body}");
    assert_eq!(header(&headers, "www-authenticate"), Some(challenge(serve, true).as_str()), "{reason}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({ "error": "invalid_token" }),
        "{reason}"
    );
    // The metrics request itself (an alp token) writes no record either.
    assert_eq!(env.audit_lines().len(), before.0, "{reason}: no record");
    assert_eq!(refusals(serve, alp_token, reason), before.1 + 1, "{reason}: counted");
}

/// A JWKS file without keys (for `--oauth-jwks`, so that nothing is fetched): its path.
fn empty_jwks(env: &Env) -> String {
    let path = env.dir.path().join("jwks.json");
    std::fs::write(&path, r#"{"keys":[]}"#).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The RFC 9728 document at both paths, exactly; a 401 without a token names it and no error; alp's own tokens
/// still work beside OAuth, and the keys come from `--oauth-jwks` (no network). Needs no Python.
#[test]
fn metadata_documents_and_the_challenge_without_a_token() {
    let env = Env::new();
    let jwks = empty_jwks(&env);
    let jwks = jwks.as_str();
    let serve =
        Serve::start_with(&env, &["--oauth-issuer", "https://idp.example/tenant", "--oauth-jwks", jwks]);
    let expected = json!({
        "resource": serve.url,
        "authorization_servers": ["https://idp.example/tenant"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": [],
    });
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let (status, headers, body) = serve.get(path, None);
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), expected, "{path}");
        assert_eq!(body, expected.to_string(), "{path}: the keys in this order");
    }
    let (status, _, _) = serve.get("/.well-known/oauth-protected-resource/other", None);
    assert_eq!(status, 404);

    let (status, headers, body) = serve.post(None, "", &search_body());
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "www-authenticate"), Some(challenge(&serve, false).as_str()));
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({ "error": "missing_token" }));
    let (status, headers, _) = serve.get("/metrics", None);
    assert_eq!(
        (status, header(&headers, "www-authenticate")),
        (401, Some(challenge(&serve, false).as_str()))
    );
    // A bad alp token gets the same OAuth challenge, with the error.
    let (status, headers, _) = serve.post(Some("alp_000000000000_nope"), "", &search_body());
    assert_eq!((status, header(&headers, "www-authenticate")), (401, Some(challenge(&serve, true).as_str())));

    let (_, secret) = token(&env, "worker", &[]);
    let (status, _, body) = serve.post(Some(&secret), "", &search_body());
    assert_eq!(status, 200, "alp's tokens beside OAuth: {body}");
    assert_eq!(serve.terminate().code(), Some(0));

    // `--resource` is the audience and the document's resource; the challenge names its origin.
    let serve = Serve::start_with(
        &env,
        &[
            "--oauth-issuer",
            "https://idp.example",
            "--oauth-jwks",
            jwks,
            "--resource",
            "https://memory.example/mcp",
        ],
    );
    let (_, _, body) = serve.get("/.well-known/oauth-protected-resource/mcp", None);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["resource"], "https://memory.example/mcp");
    let (_, headers, _) = serve.post(None, "", "{}");
    assert_eq!(
        header(&headers, "www-authenticate"),
        Some("Bearer resource_metadata=\"https://memory.example/.well-known/oauth-protected-resource/mcp\"")
    );
    assert_eq!(serve.terminate().code(), Some(0));
}

/// Without `--oauth-issuer` nothing of OAuth is served: the metadata paths are 404 and the challenge is alp's.
#[test]
fn without_an_issuer_nothing_of_oauth_is_served() {
    let env = Env::new();
    let serve = Serve::start(&env);
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        assert_eq!(serve.get(path, None).0, 404, "{path}");
    }
    let (status, headers, _) = serve.post(None, "", &search_body());
    assert_eq!((status, header(&headers, "www-authenticate")), (401, Some("Bearer realm=\"alp-memory\"")));
    // A JWT-shaped bearer value is just a malformed alp token.
    let (status, headers, _) = serve.post(Some("eyJhbGciOiJSUzI1NiJ9.e30.c2ln"), "", &search_body());
    assert_eq!(
        (status, header(&headers, "www-authenticate")),
        (401, Some("Bearer realm=\"alp-memory\", error=\"invalid_token\""))
    );
    assert_eq!(serve.terminate().code(), Some(0));
}

/// The flags' rules: `--oauth-jwks` with exactly one issuer, issuers are https URLs, and the other OAuth flags
/// need an issuer. Each is USAGE (exit 2) and nothing is served.
#[test]
fn oauth_flags_that_cannot_work_are_usage_errors() {
    let env = Env::new();
    let jwks = empty_jwks(&env);
    let jwks = jwks.as_str();
    let cases: [&[&str]; 6] = [
        &["--oauth-issuer", "https://a.example", "--oauth-issuer", "https://b.example", "--oauth-jwks", jwks],
        &["--oauth-jwks", jwks],
        &["--resource", "https://memory.example/mcp"],
        &["--oauth-issuer", "http://idp.example"],
        &["--oauth-issuer", "https://idp.example?tenant=1", "--oauth-jwks", jwks],
        &["--oauth-issuer", "https://idp.example", "--oauth-jwks", "/nonexistent/jwks.json"],
    ];
    for extra in cases {
        let mut args = vec!["--json", "serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let run = env.run(&args, None);
        assert_eq!(run.status, 2, "{extra:?}: {run:?}");
        assert_eq!(run.error()["code"], "USAGE", "{extra:?}");
        assert!(run.stdout.is_empty(), "nothing served: {run:?}");
    }
}

/// End to end: tokens from the Authlib server's token endpoint (RS256 and ES256), keys discovered from its
/// metadata over HTTPS verified with `--oauth-ca`; the MCP calls run as the role the token names, every record
/// carries `via` = `oauth:<issuer host:port>:<sub>`, and `/metrics` takes such a token too.
#[test]
fn authlib_tokens_reach_memory_as_their_role_and_are_audited_by_subject() {
    let Some(venv) = authlib() else { return };
    let env = Env::new();
    env.ok("main", &["memory", "create", "shared:team:db", "--content", "Postgres 16 for the team."]);
    let idp = AuthServer::start(venv, &env, "idp", json!({}));
    let ca = idp.ca.to_str().unwrap().to_owned();
    let serve = Serve::start_with(&env, &["--oauth-issuer", &idp.issuer, "--oauth-ca", &ca]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for client in ["rsa", "ec"] {
        let jwt = idp.token(client, &serve.url);
        let before = env.audit_lines().len();
        runtime.block_on(async {
            let mcp = serve.client(&jwt, &[]).await;
            let tools = mcp.list_all_tools().await.unwrap();
            let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
            assert_eq!(names, TOOLS);
            let id = format!("project:alp:log:{client}");
            let created =
                call(&mcp, "memory_create", json!({ "id": id, "content": "Signed in with OAuth." })).await;
            assert_eq!(created.is_error, Some(false), "{created:?}");
            let found = call(&mcp, "memory_search", json!({ "query": "Postgres" })).await;
            let entries = &found.structured_content.as_ref().unwrap()["entries"];
            assert_eq!(entries[0]["id"], "shared:team:db", "{found:?}");
            let denied = call(&mcp, "memory_create", json!({ "id": "shared:team:x", "content": "no" })).await;
            assert_eq!(denied.is_error, Some(true), "worker may not write shared: {denied:?}");
            let _ = mcp.cancel().await;
        });
        let records = env.audit_lines()[before..].to_vec();
        let via = format!("oauth:{}:{client}", authority(&idp.issuer));
        let seen: Vec<(&str, &str, &str, &str)> = records
            .iter()
            .map(|r| {
                (
                    r["actor"].as_str().unwrap(),
                    r["door"].as_str().unwrap(),
                    r["outcome"].as_str().unwrap(),
                    r["via"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("worker", "create", "allowed", via.as_str()),
                ("worker", "search", "allowed", via.as_str()),
                ("worker", "create", "denied", via.as_str()),
            ],
            "{records:#?}"
        );
        let (status, _, text) = serve.get("/metrics", Some(&jwt));
        assert_eq!(status, 200, "{text}");
        assert!(!text.contains(&jwt) && !text.contains(&via), "no token or subject in metrics");
    }
    // A token for another resource is refused (RFC 8707).
    let other = idp.token("rsa", "http://elsewhere.example/mcp");
    let (status, headers, _) = serve.post(Some(&other), "", &search_body());
    assert_eq!((status, header(&headers, "www-authenticate")), (401, Some(challenge(&serve, true).as_str())));
    assert_eq!(serve.terminate().code(), Some(0));
}

/// Every refusal with tokens minted for the test: 401 with the exact challenge, no record, counted by reason.
#[test]
fn every_bad_token_is_refused_without_a_record_and_counted() {
    let Some(venv) = authlib() else { return };
    let env = Env::new();
    let idp = AuthServer::start(venv, &env, "idp", json!({}));
    // A second issuer whose keys carry the same kids: its key must never verify the first one's tokens.
    let other = AuthServer::start(venv, &env, "other", json!({}));
    let both = env.dir.path().join("both.pem");
    let pem = format!(
        "{}{}",
        std::fs::read_to_string(&idp.ca).unwrap(),
        std::fs::read_to_string(&other.ca).unwrap()
    );
    std::fs::write(&both, pem).unwrap();
    let serve = Serve::start_with(
        &env,
        &[
            "--oauth-issuer",
            &idp.issuer,
            "--oauth-issuer",
            &other.issuer,
            "--oauth-ca",
            both.to_str().unwrap(),
        ],
    );
    let (_, alp_token) = token(&env, "main", &[]);
    let claims = idp.claims(&serve.url);
    let with = |changes: Value| {
        let mut claims = claims.clone();
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                claims.as_object_mut().unwrap().remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        claims
    };

    // The baseline passes, RS256 and ES256, and so does the other issuer's own token: the refusals below are for
    // exactly what each changes.
    for (alg, kid) in [("RS256", "rsa-1"), ("ES256", "ec-1")] {
        let jwt = idp.mint(json!({ "alg": alg, "kid": kid, "claims": claims }));
        let (status, _, body) = serve.post(Some(&jwt), "", &search_body());
        assert_eq!(status, 200, "{alg}: {body}");
    }
    let theirs = other.mint(json!({ "claims": with(json!({ "iss": other.issuer })) }));
    assert_eq!(serve.post(Some(&theirs), "", &search_body()).0, 200);
    // Inside the 60 s leeway: expired 30 s ago, valid from 30 s ahead.
    let lenient = idp
        .mint(json!({ "claims": with(json!({ "exp": now() - 30, "nbf": now() + 30, "iat": now() + 30 })) }));
    assert_eq!(serve.post(Some(&lenient), "", &search_body()).0, 200);

    let cases: Vec<(&str, Value, &str)> = vec![
        ("wrong aud", json!({ "claims": with(json!({ "aud": "http://127.0.0.1:1/mcp" })) }), "jwt_audience"),
        ("aud list without us", json!({ "claims": with(json!({ "aud": ["a", "b"] })) }), "jwt_audience"),
        ("no aud", json!({ "claims": with(json!({ "aud": null })) }), "jwt_audience"),
        ("untrusted iss", json!({ "claims": with(json!({ "iss": "https://evil.example" })) }), "jwt_issuer"),
        ("iss not a string", json!({ "claims": with(json!({ "iss": [idp.issuer] })) }), "jwt_issuer"),
        ("expired", json!({ "claims": with(json!({ "exp": now() - 120 })) }), "jwt_expired"),
        ("no exp", json!({ "claims": with(json!({ "exp": null })) }), "jwt_expired"),
        ("nbf ahead", json!({ "claims": with(json!({ "nbf": now() + 300 })) }), "jwt_not_yet_valid"),
        ("iat ahead", json!({ "claims": with(json!({ "iat": now() + 300 })) }), "jwt_issued_in_future"),
        ("alg none", json!({ "sign": "none", "claims": claims }), "jwt_algorithm"),
        ("HS256 with the public key", json!({ "sign": "hs256-public", "claims": claims }), "jwt_algorithm"),
        ("unknown kid", json!({ "sign": "other", "kid": "rsa-9", "claims": claims }), "jwt_unknown_key"),
        ("another key, same kid", json!({ "sign": "other", "claims": claims }), "jwt_signature"),
        (
            "ES256 header on the RSA kid",
            json!({ "alg": "ES256", "kid": "rsa-1", "sign": "other", "claims": claims }),
            "jwt_algorithm",
        ),
        ("role with no definition", json!({ "claims": with(json!({ "alp_role": "ghost" })) }), "jwt_role"),
        (
            "role that is a path",
            json!({ "claims": with(json!({ "alp_role": "../agents/worker" })) }),
            "jwt_role",
        ),
        ("empty role", json!({ "claims": with(json!({ "alp_role": "" })) }), "jwt_role"),
        ("role not a string", json!({ "claims": with(json!({ "alp_role": ["worker"] })) }), "jwt_role_claim"),
        ("no role", json!({ "claims": with(json!({ "alp_role": null })) }), "jwt_role_claim"),
        ("no sub", json!({ "claims": with(json!({ "sub": null })) }), "jwt_subject"),
        ("sub not a string", json!({ "claims": with(json!({ "sub": 42 })) }), "jwt_subject"),
    ];
    for (what, spec, reason) in cases {
        eprintln!("refusal: {what}");
        let jwt = idp.mint(spec);
        refused(&env, &serve, &alp_token, &jwt, reason);
    }
    // The other issuer's key (same kid) on a token naming the first issuer; and the first's on the other's.
    let forged = other.mint(json!({ "claims": claims }));
    refused(&env, &serve, &alp_token, &forged, "jwt_signature");
    let forged = idp.mint(json!({ "claims": with(json!({ "iss": other.issuer })) }));
    refused(&env, &serve, &alp_token, &forged, "jwt_signature");
    // Not a JWT at all.
    refused(&env, &serve, &alp_token, "not.a.jwt", "jwt_malformed");
    assert_eq!(serve.terminate().code(), Some(0));
}

/// An issuer whose JWKS is over 1 MiB, or never answers: the server starts within the fetch bound, its tokens
/// are refused (`jwt_keys_unavailable`) without another fetch on the request's path (once a minute at most).
#[test]
fn a_huge_or_silent_jwks_is_bounded_and_its_tokens_refused() {
    let Some(venv) = authlib() else { return };
    for mode in ["huge", "hang"] {
        let env = Env::new();
        let idp = AuthServer::start(venv, &env, "idp", json!({ "jwks": mode }));
        let ca = idp.ca.to_str().unwrap().to_owned();
        let started = Instant::now();
        let serve = Serve::start_with(&env, &["--oauth-issuer", &idp.issuer, "--oauth-ca", &ca]);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(8), "{mode}: started in {took:?} (fetch bound 5 s)");
        let (_, alp_token) = token(&env, "main", &[]);
        let jwt = idp.mint(json!({ "claims": idp.claims(&serve.url) }));
        let asked = Instant::now();
        refused(&env, &serve, &alp_token, &jwt, "jwt_keys_unavailable");
        assert!(asked.elapsed() < Duration::from_secs(2), "{mode}: no fetch on the request's path");
        eprintln!("{mode} JWKS: alp serve started in {took:?}");
        assert_eq!(serve.terminate().code(), Some(0));
    }
}
