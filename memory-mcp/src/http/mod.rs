//! The HTTP server (`alp serve`): the tools of the stdio server over MCP's Streamable HTTP transport (rmcp's
//! service, on hyper), stateless, each request's role taken from its bearer token.
//!
//! - `listen.rs`: the addresses, unix sockets, TLS, and the accept loop that holds at most `--max-connections`
//!   connections open;
//! - `connection.rs`: one connection and its deadlines (headers, idle);
//! - `front.rs`: the checks below, before rmcp sees a request;
//! - `handler.rs`: the MCP handler of one request; `metrics.rs`: `/metrics`.
//!
//! Every request goes through the same checks, in this order, each refusal answered at once with a JSON body:
//!
//! 1. `Host`, `Origin` and `Authorization` at most once each, else `400`.
//! 2. `Host` (its host part, without the port) must be a listen address, `localhost`, a loopback address or an
//!    allowed host, and an `Origin`, when sent, must name one of those (`Origin: null` never does): else `403`.
//!    A request without `Host` passes.
//! 3. The path: `/mcp`, `/healthz` or `/metrics`, else `404`.
//! 4. The method: `POST /mcp`, `GET /healthz`, `GET /metrics`, else `405` (with `Allow`). `/healthz` answers here,
//!    without a token: `200 {"status":"ok"}`, or `503 {"status":"unavailable"}` while the store or the audit sink
//!    cannot be reached.
//! 5. The declared size: a `Content-Length` over [`MAX_BODY_BYTES`] is `413`, and the connection closes.
//! 6. The token (`/metrics` answers after it, with Prometheus text): `Authorization: Bearer alp_<id>_<secret>`
//!    whose record exists, matches, is neither expired nor revoked and whose role has a definition — read again on
//!    every request. Else `401` with `WWW-Authenticate: Bearer realm="alp-memory"` (plus `error="invalid_token"`
//!    when a token was sent) and `{"error":"invalid_token"}` or `{"error":"missing_token"}`. No door is reached,
//!    no record written; the refusal is logged by the token's ID, never its secret. Up to here no byte of the body
//!    has been read (and `Expect: 100-continue` has not been answered): a refused request's connection closes
//!    holding nothing beyond its headers.
//! 7. `Content-Type` must be `application/json`, else `415`.
//! 8. At most [`PER_TOKEN_IN_FLIGHT`] requests of one token in flight, else `429` with `Retry-After: 1`. A request
//!    whose body is declared longer than 64 KiB, or not declared, then waits up to [`SLOT_WAIT`] for its token's
//!    one slot for long bodies (else `503` with `Retry-After: 1`): one token's long bodies are read, parsed and
//!    answered one at a time, so a token that floods them holds one worker thread, never all of them.
//! 9. The body, read as it arrives and never held beyond [`MAX_BODY_BYTES`] (past it: `413`, what follows is read
//!    and thrown away, up to a bound, then the connection closes), and whole within [`BODY_TIMEOUT`] of the
//!    headers (else `408` and the connection closes).
//! 10. The message: one JSON-RPC message, its shape read in one pass that holds nothing of it (the crate's
//!     `jsonrpc` module; a long body on the blocking pool). Not JSON: `400` with -32700; a batch, a value that
//!     is not an object, more than [`MAX_VALUES`](crate::MAX_VALUES) values, a `jsonrpc` other than `"2.0"`,
//!     `params` that are not an object, a request whose `id` is not a string or an integer within ±(2^53 − 1), or
//!     anything else that is not a message: `400` with -32600; a notification or a response: `202`, no body.
//! 11. For `tools/call`: a slot among `--max-concurrency`, waited for at most [`SLOT_WAIT`] (`503` with
//!     `Retry-After: 1`).
//!
//! A request's place in its token's count, and a call's slot, are held until the work they started ends, not
//! until the client leaves: the handler moves them into the call's blocking task. A client that leaves raises the
//! call's cancel flag, so a search, a context or a listing stops at its next file or row.
//!
//! Then rmcp's stateless service answers as `application/json`, with no `Mcp-Session-Id`; `tools/call` needs no
//! earlier `initialize`. The call runs as the token's role, and every audit record it writes carries `via` = the
//! token's ID: the store and the sink are shared, and each call gets a service whose sink is a
//! [`ViaSink`] of that token.

mod connection;
mod front;
mod handler;
mod listen;
mod metrics;
mod oauth;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use alp_memory::memory_audit::{AuditSink, ViaSink};
use alp_memory::memory_policy::{Actor, PolicyEngine};
use alp_memory::memory_store::MemoryStore;
use alp_memory::token::TokenStore;
use alp_memory::{ActorSource, MemoryService, StaticActors};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::MAX_REQUEST_BYTES;
use front::{Front, PerToken};
use handler::Handler;
pub use listen::{ListenAddr, ListenError, TlsFiles, parse_listen};
use listen::{Listener, Sockets, accept_loop, bind_unix, tls_acceptor};
use metrics::Metrics;
pub use oauth::{FETCH_TIMEOUT, MAX_DOCUMENT_BYTES, METADATA_PATH, OAuthOptions, REFRESH_INTERVAL};

/// The largest request body accepted: 4 MiB.
pub const MAX_BODY_BYTES: usize = MAX_REQUEST_BYTES;
/// The most requests one token may have in flight (waiting for a slot, running, or started by a client that has
/// left and still working).
pub const PER_TOKEN_IN_FLIGHT: usize = 8;
/// How long a call waits for a slot before `503`.
pub const SLOT_WAIT: Duration = Duration::from_secs(5);
/// How long a request's body may take to arrive whole, from the end of its headers.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a request's headers may take to arrive.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may wait for its next request (the default of [`HttpOptions::idle_timeout`]).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long calls in flight may take to finish once a shutdown is asked.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The default of `--max-concurrency`.
pub const DEFAULT_MAX_CONCURRENCY: usize = 32;
/// The default of `--max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7707";

/// Where and how the server listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The addresses: TCP (loopback unless `tls` is given: a token never crosses a network in plaintext) or unix
    /// sockets.
    pub listen: Vec<ListenAddr>,
    /// The certificate chain and key every TCP listener serves TLS with; unix sockets stay plain.
    pub tls: Option<TlsFiles>,
    /// Host names accepted in `Host` and `Origin` besides the listen addresses, `localhost` and loopback.
    pub allowed_hosts: Vec<String>,
    /// At most this many tool calls run at once.
    pub max_concurrency: usize,
    /// At most this many connections are open at once, over every listener; past it, new connections wait in the
    /// listen backlog.
    pub max_connections: usize,
    /// A connection that waits this long for a request's first byte is closed ([`IDLE_TIMEOUT`] unless a test
    /// says otherwise).
    pub idle_timeout: Duration,
    /// OAuth 2.1 access tokens accepted beside alp's own tokens, and the RFC 9728 metadata served; `None`: neither.
    pub oauth: Option<OAuthOptions>,
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A listener could not be bound; nothing was served.
    #[error("cannot listen on `{addr}`: {source}")]
    Bind {
        /// The address (`unix:PATH` for a socket).
        addr: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The TLS certificate or key could not be read or used; nothing was served.
    #[error("cannot serve TLS with --tls-cert `{cert}` and --tls-key `{key}`: {reason}")]
    Tls {
        /// The certificate file.
        cert: String,
        /// The key file.
        key: String,
        /// What was wrong.
        reason: String,
    },
    /// The OAuth options could not be used (an issuer that is not an https URL, an unreadable `--oauth-jwks` or
    /// `--oauth-ca`, a resource that is not a URL); nothing was served.
    #[error("{0}")]
    OAuth(String),
    /// The runtime or the signal handlers could not be set up.
    #[error("cannot start the server: {0}")]
    Runtime(std::io::Error),
}

/// What the HTTP server serves: a store and an audit sink shared by every request, the policy, the agent
/// definitions and the token records (read on every request).
pub struct HttpServer<S, A, P, R> {
    state: Arc<State<S, A, P, R>>,
    health: Option<Health>,
}

/// Whether the server can serve: the store can be opened and the audit sink appended to.
pub(super) type Health = Arc<dyn Fn() -> bool + Send + Sync>;

impl<S, A, P, R> std::fmt::Debug for HttpServer<S, A, P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer").finish_non_exhaustive()
    }
}

pub(crate) struct State<S, A, P, R> {
    store: Arc<S>,
    audit: Arc<A>,
    policy: P,
    actors: R,
    tokens: Arc<dyn TokenStore>,
    tools: Vec<rmcp::model::Tool>,
    metrics: Arc<Metrics>,
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine + Clone, R: ActorSource + Clone> State<S, A, P, R> {
    /// The service one call goes through: the shared store, the shared sink seen through `sink`, and the one
    /// definition the request's authentication read (its caller's `actor`), so a call reads no definition again.
    fn service(
        &self,
        sink: ViaSink<Arc<A>>,
        actor: Actor,
    ) -> MemoryService<Arc<S>, ViaSink<Arc<A>>, P, StaticActors> {
        MemoryService::new(Arc::clone(&self.store), sink, self.policy.clone(), StaticActors::new([actor]))
    }
}

impl<S, A, P, R> HttpServer<S, A, P, R>
where
    S: MemoryStore + 'static,
    A: AuditSink + 'static,
    P: PolicyEngine + Clone + 'static,
    R: ActorSource + Clone + 'static,
{
    /// A server over `store` and `audit`, judging with `policy`, finding roles in `actors` and tokens in `tokens`.
    pub fn new(store: Arc<S>, audit: Arc<A>, policy: P, actors: R, tokens: Arc<dyn TokenStore>) -> Self {
        let tools = crate::tools::catalogue::tools();
        let metrics = Arc::new(Metrics::new(tools.iter().map(|tool| tool.name.to_string()).collect()));
        HttpServer {
            state: Arc::new(State { store, audit, policy, actors, tokens, tools, metrics }),
            health: None,
        }
    }

    /// What `GET /healthz` asks (on the blocking pool) before it answers `200`; without it, whether the audit sink
    /// is ready to append.
    #[must_use]
    pub fn with_health(mut self, check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.health = Some(Arc::new(check));
        self
    }

    /// Binds every listener, calls `on_bound` with their URLs (the real port where 0 was asked), then serves on a
    /// runtime of its own until SIGTERM or SIGINT, after which it stops accepting, lets calls in flight finish (at
    /// most [`SHUTDOWN_GRACE`]) and returns `Ok`.
    ///
    /// # Errors
    ///
    /// [`HttpError::Bind`] before anything is served, [`HttpError::Runtime`].
    pub fn serve(self, options: HttpOptions, on_bound: impl FnOnce(&[String])) -> Result<(), HttpError> {
        // The blocking pool runs the tool calls (at most `max_concurrency`, each holding its slot until its work
        // ends) and the short work around them (token checks, health, reading long messages' shape): its threads
        // are bounded by that, not by how many requests arrive at once.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads())
            .max_blocking_threads(options.max_concurrency.max(1).saturating_add(BLOCKING_SPARE))
            .enable_all()
            .build()
            .map_err(HttpError::Runtime)?;
        runtime.block_on(async move {
            let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(HttpError::Runtime)?;
            let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .map_err(HttpError::Runtime)?;
            let shutdown = async move {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = interrupt.recv() => {}
                }
            };
            self.serve_until(options, on_bound, shutdown).await
        })
    }

    /// As [`HttpServer::serve`], on the current runtime, until `shutdown` completes.
    ///
    /// # Errors
    ///
    /// [`HttpError::Bind`].
    pub async fn serve_until(
        self,
        options: HttpOptions,
        on_bound: impl FnOnce(&[String]),
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), HttpError> {
        let acceptor = options.tls.as_ref().map(tls_acceptor).transpose()?;
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        let mut listeners = Vec::new();
        let mut sockets = Sockets(Vec::new());
        let mut urls = Vec::new();
        let mut hosts: Vec<String> = options.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        for addr in &options.listen {
            let bind_error = |source| HttpError::Bind { addr: addr.to_string(), source };
            match addr {
                ListenAddr::Tcp(tcp) => {
                    let listener = TcpListener::bind(tcp).await.map_err(bind_error)?;
                    let bound = listener.local_addr().map_err(HttpError::Runtime)?;
                    urls.push(format!("{scheme}://{bound}/mcp"));
                    hosts.push(bound.ip().to_string());
                    listeners.push(match &acceptor {
                        Some(acceptor) => Listener::Tls(listener, acceptor.clone()),
                        None => Listener::Tcp(listener),
                    });
                }
                ListenAddr::Unix(path) => {
                    let listener = bind_unix(path).map_err(bind_error)?;
                    sockets.0.push(path.clone());
                    urls.push(format!("unix:{}", path.display()));
                    listeners.push(Listener::Unix(listener));
                }
            }
        }
        let oauth = match &options.oauth {
            Some(oauth) => Some(oauth::OAuth::start(oauth, urls.first().map_or("", String::as_str)).await?),
            None => None,
        };
        on_bound(&urls);

        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_max_request_body_bytes(MAX_BODY_BYTES);
        let cancel = config.cancellation_token.clone();
        let state = Arc::clone(&self.state);
        let mcp = StreamableHttpService::new(
            move || Ok(Handler { state: Arc::clone(&state) }),
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let health = self.health.clone().unwrap_or_else(|| {
            let audit = Arc::clone(&self.state.audit);
            Arc::new(move || audit.check_ready().is_ok())
        });
        let front = Arc::new(Front {
            idle: options.idle_timeout,
            metrics: Arc::clone(&self.state.metrics),
            health,
            tokens: Arc::clone(&self.state.tokens),
            actors: Arc::new(self.state.actors.clone()),
            hosts,
            oauth,
            in_flight: PerToken::new(PER_TOKEN_IN_FLIGHT),
            long_bodies: PerToken::new(1),
            slots: Arc::new(Semaphore::new(options.max_concurrency.max(1))),
            mcp,
        });

        let (stop_tx, stop_rx) = watch::channel(false);
        let mut accepts = JoinSet::new();
        let open = Arc::new(Semaphore::new(options.max_connections.max(1)));
        for listener in listeners {
            accepts.spawn(accept_loop(listener, Arc::clone(&front), Arc::clone(&open), stop_rx.clone()));
        }
        shutdown.await;
        let _ = stop_tx.send(true);
        // Each accept loop stops accepting, asks its connections to finish their request in flight, and waits.
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while accepts.join_next().await.is_some() {} })
            .await;
        cancel.cancel();
        drop(sockets);
        Ok(())
    }
}

/// Threads of the blocking pool beyond `--max-concurrency`, for the work around the calls (token checks, health,
/// the shape of long messages); past them, such work waits for a thread.
const BLOCKING_SPARE: usize = 16;

/// The runtime's worker threads: one per core, at least two (so a long request being read or parsed on one never
/// holds every other request) and at most eight. Service calls run on the blocking pool, not on these.
fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}
