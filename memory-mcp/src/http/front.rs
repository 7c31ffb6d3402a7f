//! The refusal front: the checks every request passes before rmcp sees it, in the order of the module docs of
//! [`super`], each refusal answered at once with a JSON body. Nothing of a body is read before its token is
//! accepted, so an unauthenticated connection holds nothing beyond its headers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use alp_memory::ActorSource;
use alp_memory::memory_entry::Timestamp;
use alp_memory::memory_policy::Actor;
use alp_memory::token::{Identity, Refusal, TokenStore, authenticate};
use bytes::{Bytes, BytesMut};
use http::header::{
    ALLOW, AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, RETRY_AFTER,
    WWW_AUTHENTICATE,
};
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::body::Incoming;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::metrics::Metrics;
use super::oauth::{METADATA_PATH, OAuth};
use super::{BODY_TIMEOUT, Health, MAX_BODY_BYTES, SLOT_WAIT};
use crate::jsonrpc::{self, INVALID_REQUEST};

/// The body of every response.
pub(super) type Body = BoxBody<Bytes, Infallible>;

/// After a body passed the limit, at most this much more of it is read (and thrown away) before the answer.
const DISCARD_BYTES: usize = 8 * 1024 * 1024;
/// A body longer than this is read for its shape on the blocking pool, not on the runtime's thread; a request whose
/// body is declared longer (or not declared) takes its token's one slot for long bodies.
const INLINE_SHAPE_BYTES: usize = 64 * 1024;
/// The most bytes of an error body from rmcp carried into the JSON that replaces it.
const MAX_ERROR_TEXT: usize = 1024;

/// The checks before rmcp sees a request, and what they share.
pub(super) struct Front<H> {
    pub(super) idle: Duration,
    pub(super) metrics: Arc<Metrics>,
    pub(super) health: Health,
    pub(super) tokens: Arc<dyn TokenStore>,
    pub(super) actors: Arc<dyn ActorSource>,
    /// Lowercase host names and addresses accepted in `Host` and `Origin` (besides `localhost` and loopback).
    pub(super) hosts: Vec<String>,
    /// With `--oauth-issuer`: JWTs of the trusted issuers accepted beside alp's tokens, and the metadata served.
    pub(super) oauth: Option<Arc<OAuth>>,
    /// Per token, the requests it may have in flight.
    pub(super) in_flight: PerToken,
    /// Per token, the one request with a long body it may have being read, parsed and answered at a time: one
    /// token's long bodies hold one worker thread's worth of the server, never all of them.
    pub(super) long_bodies: PerToken,
    pub(super) slots: Arc<Semaphore>,
    pub(super) mcp: StreamableHttpService<H, NeverSessionManager>,
}

/// Who an authenticated request acts as: the role (and the definition read for it), and the `via` of every
/// record it writes — an alp token's ID, or `oauth:<issuer authority>:<sub>`. Put into the request by the front;
/// nothing in the request itself is read for it.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The `via` of the call's records; also what the per-token limits count by.
    pub(crate) via: String,
    /// The role: the actor of everything the request does.
    pub(crate) role: String,
    /// The role's definition as the check read it.
    pub(crate) actor: Actor,
}

impl From<Identity> for Caller {
    fn from(identity: Identity) -> Caller {
        Caller { via: identity.token_id.as_str().to_owned(), role: identity.role, actor: identity.actor }
    }
}

/// What an authenticated request holds until its work ends: its place in its token's count, its token's slot for
/// long bodies when its body is long, and, for a tool call, a slot. Put into the request for the handler, which
/// moves it into the blocking task of the call, so a client that leaves frees none of them before the work it
/// started is over.
#[derive(Debug)]
pub(crate) struct Work {
    _count: TokenPermit,
    _long: Option<TokenPermit>,
    _slot: Option<OwnedSemaphorePermit>,
}

/// [`Work`] as it travels in a request's extensions (which must be `Clone`): whoever takes it holds it.
#[derive(Debug, Clone)]
pub(crate) struct Held(Arc<Mutex<Option<Work>>>);

impl Held {
    /// The work's guards, once: a second take finds nothing.
    pub(crate) fn take(&self) -> Option<Work> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Per token, a fixed number of permits: the requests one token may have in flight
/// ([`super::PER_TOKEN_IN_FLIGHT`]), or its one slot for long bodies. A token's semaphore is made when it first
/// asks and forgotten once no permit or waiter holds it.
#[derive(Debug)]
pub(super) struct PerToken {
    permits: usize,
    semaphores: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
}

impl PerToken {
    /// `permits` for each token.
    pub(super) fn new(permits: usize) -> PerToken {
        PerToken { permits, semaphores: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// `token`'s semaphore (cloned under the map's lock, so it is never forgotten while this clone lives).
    fn semaphore(&self, token: &str) -> Arc<Semaphore> {
        let mut map = self.semaphores.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(map.entry(token.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.permits))))
    }

    fn permit(&self, token: &str, semaphore: Arc<Semaphore>, permit: OwnedSemaphorePermit) -> TokenPermit {
        TokenPermit {
            semaphores: Arc::clone(&self.semaphores),
            token: token.to_owned(),
            semaphore,
            permit: Some(permit),
        }
    }

    /// One of `token`'s permits at once, or `None` when every one is taken.
    fn try_take(&self, token: &str) -> Option<TokenPermit> {
        let semaphore = self.semaphore(token);
        let permit = Arc::clone(&semaphore).try_acquire_owned().ok()?;
        Some(self.permit(token, semaphore, permit))
    }

    /// Waits for one of `token`'s permits.
    async fn take(&self, token: &str) -> Option<TokenPermit> {
        let semaphore = self.semaphore(token);
        let permit = Arc::clone(&semaphore).acquire_owned().await.ok()?;
        Some(self.permit(token, semaphore, permit))
    }
}

/// One of a token's permits, released when dropped.
#[derive(Debug)]
struct TokenPermit {
    semaphores: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    token: String,
    semaphore: Arc<Semaphore>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for TokenPermit {
    fn drop(&mut self) {
        drop(self.permit.take());
        // The map forgets the token's semaphore once nothing else holds it (clones are made under this lock).
        let mut map = self.semaphores.lock().unwrap_or_else(PoisonError::into_inner);
        if Arc::strong_count(&self.semaphore) == 2 {
            map.remove(&self.token);
        }
    }
}

/// A response with `status` and a JSON body (or none).
fn respond(status: StatusCode, body: Option<&Value>) -> Response<Body> {
    let mut response = match body {
        Some(body) => {
            let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        None => Response::new(Empty::new().boxed()),
    };
    *response.status_mut() = status;
    response
}

fn retry_later(status: StatusCode, error: &str) -> Response<Body> {
    let mut response = respond(status, Some(&json!({ "error": error })));
    response.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// A refusal after which the connection is closed (the body was not read to its end).
fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

fn too_large() -> Response<Body> {
    closing(respond(
        StatusCode::PAYLOAD_TOO_LARGE,
        Some(&json!({ "error": "payload_too_large", "maxBytes": MAX_BODY_BYTES })),
    ))
}

/// The host part of a `Host` value or an authority: without the port, brackets removed, lowercase.
fn host_part(authority: &str) -> Option<String> {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        if !(after.is_empty()
            || after.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())))
        {
            return None;
        }
        host
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !host.contains(':') => host,
            Some(_) => return None,
            None => authority,
        }
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// How reading a body ended.
enum Read {
    /// The whole body, at most [`MAX_BODY_BYTES`].
    Body(Bytes),
    /// Longer than [`MAX_BODY_BYTES`]: what came was thrown away.
    TooLarge,
    /// The connection failed or the body was malformed (a bad chunk).
    Broken,
}

/// Reads a body of at most [`MAX_BODY_BYTES`]; past that, reads and discards up to [`DISCARD_BYTES`] more. Never
/// holds more than the limit.
async fn read_body(body: Incoming) -> Read {
    let mut body = std::pin::pin!(body);
    let mut kept = BytesMut::new();
    let mut over = false;
    let mut discarded = 0usize;
    while let Some(frame) = body.as_mut().frame().await {
        let Ok(frame) = frame else { return Read::Broken };
        let Ok(data) = frame.into_data() else { continue };
        if over {
            discarded = discarded.saturating_add(data.len());
            if discarded > DISCARD_BYTES {
                break;
            }
        } else if data.len() > MAX_BODY_BYTES - kept.len() {
            over = true;
            kept = BytesMut::new();
        } else {
            kept.extend_from_slice(&data);
        }
    }
    if over { Read::TooLarge } else { Read::Body(kept.freeze()) }
}

/// The headers a request may carry once at most.
const SINGLE_HEADERS: [HeaderName; 3] = [HOST, ORIGIN, AUTHORIZATION];

impl<H: ServerHandler + Send + 'static> Front<H> {
    fn host_allowed(&self, host: &str) -> bool {
        host == "localhost"
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || self.hosts.iter().any(|allowed| allowed == host)
    }

    /// `Host` and `Origin`.
    fn check_hosts(&self, request: &Request<Incoming>) -> bool {
        if let Some(host) = request.headers().get(HOST) {
            let Some(host) = host.to_str().ok().and_then(host_part) else { return false };
            if !self.host_allowed(&host) {
                return false;
            }
        }
        if let Some(origin) = request.headers().get(ORIGIN) {
            let Ok(origin) = origin.to_str() else { return false };
            let authority = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .filter(|rest| !rest.contains('/'));
            let Some(host) = authority.and_then(host_part) else { return false };
            if !self.host_allowed(&host) {
                return false;
            }
        }
        true
    }

    /// Answers `request`, counting the response by its status.
    pub(super) async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        let response = self.route(request).await;
        self.metrics.response(response.status().as_u16());
        response
    }

    async fn route(&self, request: Request<Incoming>) -> Response<Body> {
        if let Some(name) =
            SINGLE_HEADERS.iter().find(|name| request.headers().get_all(*name).iter().nth(1).is_some())
        {
            return closing(respond(
                StatusCode::BAD_REQUEST,
                Some(&json!({ "error": "duplicate_header", "header": name.as_str() })),
            ));
        }
        if !self.check_hosts(&request) {
            return respond(StatusCode::FORBIDDEN, Some(&json!({ "error": "forbidden_host" })));
        }
        let metadata = self.oauth.is_some()
            && request
                .uri()
                .path()
                .strip_prefix(METADATA_PATH)
                .is_some_and(|rest| rest.is_empty() || rest == "/mcp");
        let allowed = match request.uri().path() {
            "/mcp" => "POST",
            "/healthz" | "/metrics" => "GET",
            _ if metadata => "GET",
            _ => return respond(StatusCode::NOT_FOUND, Some(&json!({ "error": "not_found" }))),
        };
        if request.method().as_str() != allowed {
            let mut response =
                respond(StatusCode::METHOD_NOT_ALLOWED, Some(&json!({ "error": "method_not_allowed" })));
            response.headers_mut().insert(ALLOW, HeaderValue::from_static(allowed));
            return response;
        }
        if let Some(oauth) = self.oauth.as_ref().filter(|_| metadata) {
            let mut response = Response::new(Full::new(oauth.metadata()).boxed());
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return response;
        }
        if request.uri().path() == "/healthz" {
            let health = Arc::clone(&self.health);
            return match tokio::task::spawn_blocking(move || health()).await {
                Ok(true) => respond(StatusCode::OK, Some(&json!({ "status": "ok" }))),
                _ => respond(StatusCode::SERVICE_UNAVAILABLE, Some(&json!({ "status": "unavailable" }))),
            };
        }
        if request.method() == Method::GET {
            if let Err(response) = self.authenticate(request.headers().get(AUTHORIZATION)).await {
                return *response;
            }
            let mut response = Response::new(Full::new(Bytes::from(self.metrics.render())).boxed());
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            return response;
        }
        self.post(request).await
    }

    /// `POST /mcp`, from the declared size on. The body is read only once the token is accepted, the content type
    /// is JSON and the token has room for one more request (so `Expect: 100-continue` is answered only then).
    async fn post(&self, request: Request<Incoming>) -> Response<Body> {
        // The whole body is due within BODY_TIMEOUT of the headers, whatever waits come before it is read.
        let body_due = tokio::time::Instant::now() + BODY_TIMEOUT;
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok())
            .and_then(|length| length.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
            return too_large();
        }
        let identity = match self.authenticate(request.headers().get(AUTHORIZATION)).await {
            Ok(identity) => identity,
            Err(response) => return closing(*response),
        };
        if !is_json(request.headers().get(CONTENT_TYPE)) {
            return closing(respond(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Some(&json!({ "error": "unsupported_media_type", "expected": "application/json" })),
            ));
        }
        let Some(count) = self.in_flight.try_take(&identity.via) else {
            return closing(retry_later(StatusCode::TOO_MANY_REQUESTS, "too_many_requests"));
        };
        let long = match declared {
            Some(length) if length <= INLINE_SHAPE_BYTES as u64 => None,
            _ => match tokio::time::timeout(SLOT_WAIT, self.long_bodies.take(&identity.via)).await {
                Ok(Some(long)) => Some(long),
                _ => return closing(retry_later(StatusCode::SERVICE_UNAVAILABLE, "busy")),
            },
        };
        let (mut parts, body) = request.into_parts();
        let body = match tokio::time::timeout_at(body_due, read_body(body)).await {
            Ok(Read::Body(body)) => body,
            Ok(Read::TooLarge) => return too_large(),
            Ok(Read::Broken) => {
                return closing(respond(StatusCode::BAD_REQUEST, Some(&json!({ "error": "bad_body" }))));
            }
            Err(_) => {
                return closing(respond(
                    StatusCode::REQUEST_TIMEOUT,
                    Some(&json!({ "error": "body_timeout", "seconds": BODY_TIMEOUT.as_secs() })),
                ));
            }
        };
        let method = match self.shape(body.clone()).await {
            Ok(method) => method,
            Err((status, answer)) => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
                return respond(status, answer.as_ref());
            }
        };
        let slot = if method == "tools/call" {
            match tokio::time::timeout(SLOT_WAIT, Arc::clone(&self.slots).acquire_owned()).await {
                Ok(Ok(permit)) => Some(permit),
                _ => return retry_later(StatusCode::SERVICE_UNAVAILABLE, "busy"),
            }
        } else {
            None
        };
        // The answer is JSON whatever the client listed; rmcp asks for both types before it answers.
        parts
            .headers
            .insert(http::header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        // A request without `Host` (HTTP/1.0, most unix socket clients) passed the check above; rmcp wants one.
        if !parts.headers.contains_key(HOST) {
            parts.headers.insert(HOST, HeaderValue::from_static("localhost"));
        }
        parts.extensions.insert(identity);
        parts.extensions.insert(Held(Arc::new(Mutex::new(Some(Work {
            _count: count,
            _long: long,
            _slot: slot,
        })))));
        let request = Request::from_parts(parts, Full::new(body));
        json_errors(self.mcp.handle(request).await).await
    }

    /// The message's shape and what it is answered ([`jsonrpc::http_answer`]): on this thread for a short body,
    /// on the blocking pool for a long one, so a long body never holds the runtime's thread.
    async fn shape(&self, body: Bytes) -> Result<String, (u16, Option<Value>)> {
        if body.len() <= INLINE_SHAPE_BYTES {
            return jsonrpc::http_answer(&body);
        }
        tokio::task::spawn_blocking(move || jsonrpc::http_answer(&body))
            .await
            .unwrap_or_else(|_| Err((500, Some(json!({ "error": "internal" })))))
    }

    /// The token: an OAuth JWT when OAuth is on and the bearer value is not one of alp's tokens, else alp's token
    /// (its record is a file or a row, read on the blocking pool).
    async fn authenticate(&self, header: Option<&HeaderValue>) -> Result<Caller, Box<Response<Body>>> {
        let header = header.map(|value| value.as_bytes().to_vec());
        if let Some(oauth) = &self.oauth
            && let Some(jwt) = crate::oauth::jwt_bearer(header.as_deref())
        {
            let jwt = jwt.to_owned();
            return self.authenticate_jwt(oauth, &jwt).await;
        }
        let tokens = Arc::clone(&self.tokens);
        let actors = Arc::clone(&self.actors);
        let checked = tokio::task::spawn_blocking(move || {
            authenticate(tokens.as_ref(), actors.as_ref(), header.as_deref(), Timestamp::now())
        })
        .await;
        let (refusal, id) = match checked {
            Ok(Ok(identity)) => return Ok(identity.into()),
            Ok(Err(refused)) => refused,
            Err(_) => (Refusal::Unavailable, None),
        };
        // Logged by the token's ID when it parsed, and counted by its reason; the secret is never written anywhere.
        if refusal != Refusal::Unavailable {
            self.metrics.refusal(refusal.as_str());
        }
        match &id {
            Some(id) => eprintln!("alp serve: refused token {id}: {}", refusal.as_str()),
            None => eprintln!("alp serve: refused a request: {} token", refusal.as_str()),
        }
        Err(Box::new(match refusal {
            Refusal::Unavailable => retry_later(StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Refusal::Missing => self.unauthorized(false),
            _ => self.unauthorized(true),
        }))
    }

    /// An OAuth access token: its signature and claims ([`OAuth::check`]), then its role's definition (on the
    /// blocking pool). The token itself is never logged, kept or passed on.
    async fn authenticate_jwt(&self, oauth: &OAuth, jwt: &str) -> Result<Caller, Box<Response<Body>>> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let refusal = match oauth.check(jwt, now).await {
            Ok((issuer, accepted)) => {
                let actors = Arc::clone(&self.actors);
                let role = accepted.role.clone();
                match tokio::task::spawn_blocking(move || actors.actor(&role).ok()).await {
                    Ok(Some(actor)) => {
                        return Ok(Caller { via: issuer.via(&accepted.sub), role: accepted.role, actor });
                    }
                    Ok(None) => crate::oauth::JwtRefusal::Role,
                    Err(_) => {
                        return Err(Box::new(retry_later(StatusCode::SERVICE_UNAVAILABLE, "unavailable")));
                    }
                }
            }
            Err(refusal) => refusal,
        };
        self.metrics.refusal(refusal.as_str());
        eprintln!("alp serve: refused an OAuth token: {}", refusal.as_str());
        Err(Box::new(self.unauthorized(true)))
    }

    /// `401`: `{"error":"invalid_token"}` when a token was sent, else `{"error":"missing_token"}`, with the
    /// challenge of §13 (`realm="alp-memory"`) or, with OAuth, RFC 9728's (`resource_metadata="…"`).
    fn unauthorized(&self, token_sent: bool) -> Response<Body> {
        let error = if token_sent { "invalid_token" } else { "missing_token" };
        let mut response = respond(StatusCode::UNAUTHORIZED, Some(&json!({ "error": error })));
        let challenge = match (&self.oauth, token_sent) {
            (Some(oauth), _) => HeaderValue::from_str(&oauth.challenge(token_sent)).ok(),
            (None, true) => {
                Some(HeaderValue::from_static("Bearer realm=\"alp-memory\", error=\"invalid_token\""))
            }
            (None, false) => Some(HeaderValue::from_static("Bearer realm=\"alp-memory\"")),
        };
        if let Some(challenge) = challenge {
            response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// Whether a `Content-Type` names JSON (`application/json`, parameters allowed).
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type.and_then(|value| value.to_str().ok()).is_some_and(|value| {
        let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
        essence.trim().eq_ignore_ascii_case("application/json")
    })
}

/// rmcp's own refusals (a bad `MCP-Protocol-Version` header, an internal error) come as plain text: every error
/// leaves this server as JSON, a JSON-RPC error (-32600 for the client's fault, -32603 for the server's) whose
/// message is rmcp's text.
async fn json_errors(response: Response<Body>) -> Response<Body> {
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let text = match response.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let text = String::from_utf8_lossy(text.get(..MAX_ERROR_TEXT.min(text.len())).unwrap_or_default());
    let code = if status.is_client_error() { INVALID_REQUEST } else { -32603 };
    respond(
        status,
        Some(&json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": text } })),
    )
}
