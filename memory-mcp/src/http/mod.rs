//! The HTTP server (`alp serve`): the tools of the stdio server over MCP's Streamable HTTP transport (rmcp's
//! service, on hyper), stateless, each request's role taken from its bearer token.
//!
//! Every request goes through the same checks, in this order, each refusal answered at once:
//!
//! 1. `Host` (its host part, without the port) must be a listen address, `localhost`, a loopback address or an
//!    allowed host, and an `Origin`, when sent, must name one of those (`Origin: null` never does): else `403`.
//!    A request without `Host` passes.
//! 2. The path: `/mcp`, `/healthz` or `/metrics`, else `404`.
//! 3. The method: `POST /mcp`, `GET /healthz`, `GET /metrics`, else `405` (with `Allow`). `/healthz` answers here,
//!    without a token: `200 {"status":"ok"}`, or `503 {"status":"unavailable"}` while the store or the audit sink
//!    cannot be reached.
//! 4. The size: a body over [`MAX_BODY_BYTES`], declared or received, is `413`; the body is read as it arrives and
//!    never held beyond that limit (what follows is read and thrown away, up to a bound, then the connection
//!    closes).
//! 5. The token (`/metrics` answers after it, with Prometheus text): `Authorization: Bearer alp_<id>_<secret>` whose record exists, matches,
//!    is neither expired nor revoked and whose role has a definition — read again on every request. Else `401`
//!    with `WWW-Authenticate: Bearer realm="alp-memory"` (plus `error="invalid_token"` when a token was sent) and
//!    `{"error":"invalid_token"}` or `{"error":"missing_token"}`. No door is reached, no record written; the
//!    refusal is logged by the token's ID, never its secret.
//! 6. The message: one JSON-RPC message. Not JSON: `400` with -32700; a batch (an array), a request whose `id` is
//!    not a string or an integer within ±(2^53 − 1), or anything else that is not a message: `400` with -32600;
//!    a notification or a response: `202`, no body.
//! 7. For `tools/call`: at most [`PER_TOKEN_IN_FLIGHT`] calls in flight per token (`429`), then a slot among
//!    `--max-concurrency`, waited for at most [`SLOT_WAIT`] (`503`); both with `Retry-After: 1`. The counts run
//!    from a call's arrival to its answer, waiting included.
//!
//! Then rmcp's stateless service answers as `application/json`, with no `Mcp-Session-Id`; `tools/call` needs no
//! earlier `initialize`. The call runs as the token's role, and every audit record it writes carries `via` = the
//! token's ID: the store and the sink are shared, and each call gets a service whose sink is a
//! [`ViaSink`] of that token.

mod handler;
mod metrics;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use alp_memory::memory_audit::{AuditSink, ViaSink};
use alp_memory::memory_entry::{MemoryStore, Timestamp};
use alp_memory::memory_policy::{Actor, PolicyEngine};
use alp_memory::token::{Identity, Refusal, TokenStore, authenticate};
use alp_memory::{ActorSource, MemoryService, StaticActors};
use bytes::{Bytes, BytesMut};
use http::header::{
    ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, RETRY_AFTER, WWW_AUTHENTICATE,
};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::MAX_REQUEST_BYTES;
use handler::Handler;
use metrics::Metrics;

/// The largest request body accepted: 4 MiB.
pub const MAX_BODY_BYTES: usize = MAX_REQUEST_BYTES;
/// The most `tools/call` requests one token may have in flight.
pub const PER_TOKEN_IN_FLIGHT: usize = 8;
/// How long a call waits for a slot before `503`.
pub const SLOT_WAIT: Duration = Duration::from_secs(5);
/// How long a request's headers may take to arrive.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may wait for its next request (the default of [`HttpOptions::idle_timeout`]).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long calls in flight may take to finish once a shutdown is asked.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The default of `--max-concurrency`.
pub const DEFAULT_MAX_CONCURRENCY: usize = 32;
/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7707";
/// After a body passed the limit, at most this much more of it is read (and thrown away) before the answer.
const DISCARD_BYTES: usize = 8 * 1024 * 1024;

type Body = BoxBody<Bytes, Infallible>;

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
    /// A connection that waits this long for a request's first byte is closed ([`IDLE_TIMEOUT`] unless a test
    /// says otherwise).
    pub idle_timeout: Duration,
}

/// The PEM files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Why a `--listen` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenError {
    /// Not `HOST:PORT` or `[V6]:PORT`.
    #[error("--listen `{0}` is not HOST:PORT or [V6]:PORT (e.g. 127.0.0.1:7707)")]
    Invalid(String),
    /// `unix:` with no path, or a path that cannot be made absolute.
    #[error("--listen `{0}`: a unix socket needs a path (e.g. unix:/run/alp-memory/alp.sock)")]
    Unix(String),
    /// Not loopback, and so not without TLS.
    #[error(
        "--listen `{0}` is not a loopback address: a bearer token must never cross a network in plaintext; give \
         --tls-cert and --tls-key, or listen on loopback (behind a TLS-terminating proxy)"
    )]
    NotLoopback(String),
}

/// Where one listener listens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A unix socket's absolute path.
    Unix(PathBuf),
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Parses a `--listen` value: `HOST:PORT` with an IP or `localhost`, or `[V6]:PORT` (only loopback addresses), or
/// `unix:PATH` (made absolute against the current directory). A TCP address that is not loopback needs `tls`.
///
/// # Errors
///
/// [`ListenError`].
pub fn parse_listen(text: &str, tls: bool) -> Result<ListenAddr, ListenError> {
    if let Some(path) = text.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(ListenError::Unix(text.to_owned()));
        }
        let path = std::path::absolute(path).map_err(|_| ListenError::Unix(text.to_owned()))?;
        return Ok(ListenAddr::Unix(path));
    }
    let addr = match text.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
            .map_err(|_| ListenError::Invalid(text.to_owned()))?,
        None => text.parse::<SocketAddr>().map_err(|_| ListenError::Invalid(text.to_owned()))?,
    };
    if !addr.ip().is_loopback() && !tls {
        return Err(ListenError::NotLoopback(text.to_owned()));
    }
    Ok(ListenAddr::Tcp(addr))
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
type Health = Arc<dyn Fn() -> bool + Send + Sync>;

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
    /// definition the request's authentication read (its [`Identity::actor`]), so a call reads no definition again.
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
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(HttpError::Runtime)?;
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
            in_flight: Mutex::new(HashMap::new()),
            slots: Semaphore::new(options.max_concurrency.max(1)),
            mcp,
        });

        let (stop_tx, stop_rx) = watch::channel(false);
        let mut accepts = JoinSet::new();
        for listener in listeners {
            accepts.spawn(accept_loop(listener, Arc::clone(&front), stop_rx.clone()));
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

/// The unix socket files this server made, removed when it stops.
struct Sockets(Vec<PathBuf>);

impl Drop for Sockets {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Binds a unix socket at `path`, readable and writable by its owner and group (0660). A socket file left by a
/// server that is gone (nothing answers on it) is replaced; anything else at `path` is refused.
fn bind_unix(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match std::os::unix::net::UnixStream::connect(path) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => std::fs::remove_file(path)?,
            Err(e) => return Err(e),
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "a server is already listening on this socket",
                ));
            }
        },
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the path exists and is not a socket",
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(listener)
}

/// The TLS side of every TCP listener: rustls on ring, TLS 1.2 and 1.3, HTTP/1.1 by ALPN.
fn tls_acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, HttpError> {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let fail = |reason: String| HttpError::Tls {
        cert: files.cert.display().to_string(),
        key: files.key.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| fail(format!("the certificate: {e}")))?;
    if certs.is_empty() {
        return Err(fail("the certificate file holds no certificate".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| fail(format!("the key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| fail(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| fail(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// One bound listener.
enum Listener {
    Tcp(TcpListener),
    Tls(TcpListener, tokio_rustls::TlsAcceptor),
    Unix(UnixListener),
}

/// One accepted connection.
enum Accepted {
    Tcp(tokio::net::TcpStream),
    Tls(tokio::net::TcpStream, tokio_rustls::TlsAcceptor),
    Unix(tokio::net::UnixStream),
}

impl Listener {
    async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(listener) => listener.accept().await.map(|(stream, _)| Accepted::Tcp(stream)),
            Listener::Tls(listener, acceptor) => {
                listener.accept().await.map(|(stream, _)| Accepted::Tls(stream, acceptor.clone()))
            }
            Listener::Unix(listener) => listener.accept().await.map(|(stream, _)| Accepted::Unix(stream)),
        }
    }
}

/// Accepts connections until asked to stop, then waits for the connections it started.
async fn accept_loop<H: ServerHandler + Send + 'static>(
    listener: Listener,
    front: Arc<Front<H>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut running = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                // A failed accept (out of descriptors, a reset before accept) ends nothing but that connection.
                match accepted {
                    Ok(Accepted::Tcp(stream)) => {
                        running.spawn(serve_connection(stream, Arc::clone(&front), stop.clone()));
                    }
                    Ok(Accepted::Tls(stream, acceptor)) => {
                        let (front, stop) = (Arc::clone(&front), stop.clone());
                        running.spawn(async move {
                            // The handshake is held to the header deadline; a failed one ends the connection.
                            if let Ok(Ok(stream)) =
                                tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await
                            {
                                serve_connection(stream, front, stop).await;
                            }
                        });
                    }
                    Ok(Accepted::Unix(stream)) => {
                        running.spawn(serve_connection(stream, Arc::clone(&front), stop.clone()));
                    }
                    Err(_) => {}
                }
            }
            Some(_) = running.join_next(), if !running.is_empty() => {}
        }
    }
    drop(listener);
    while running.join_next().await.is_some() {}
}

async fn serve_connection<H, I>(stream: I, front: Arc<Front<H>>, mut stop: watch::Receiver<bool>)
where
    H: ServerHandler + Send + 'static,
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let idle = front.idle;
    let phase = Arc::new(Mutex::new(Phase::Idle(Instant::now())));
    let answering = Arc::clone(&phase);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let front = Arc::clone(&front);
        let busy = Busy::start(Arc::clone(&answering));
        async move {
            let response = front.answer(request).await;
            drop(busy);
            Ok::<_, Infallible>(response)
        }
    });
    // The two deadlines are this module's own (hyper's header timer would also run while a connection is idle).
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(None);
    let io = Watched { io: stream, phase: Arc::clone(&phase) };
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let deadlines = async {
        loop {
            let now = Instant::now();
            let due = match *lock(&phase) {
                Phase::Idle(since) => since + idle,
                Phase::Head(since) => since + HEADER_TIMEOUT,
                Phase::Busy => now + Duration::from_secs(1),
            };
            if due <= now {
                break;
            }
            // Looked at again at least every second: the phase may change while this sleeps.
            tokio::time::sleep_until(due.min(now + Duration::from_secs(1))).await;
        }
    };
    tokio::select! {
        _ = connection.as_mut() => {}
        // Idle too long, or headers too slow: the connection is dropped, which closes it.
        () = deadlines => {}
        _ = stop.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Where a connection is, for its deadlines.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request since then: the idle timeout runs.
    Idle(Instant),
    /// A request's first byte arrived then: the header deadline runs.
    Head(Instant),
    /// A request is being answered.
    Busy,
}

fn lock(phase: &Mutex<Phase>) -> std::sync::MutexGuard<'_, Phase> {
    phase.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A request being answered; once dropped, its connection is idle again.
struct Busy(Arc<Mutex<Phase>>);

impl Busy {
    fn start(phase: Arc<Mutex<Phase>>) -> Busy {
        *lock(&phase) = Phase::Busy;
        Busy(phase)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0) = Phase::Idle(Instant::now());
    }
}

/// A connection's stream that notes the first byte of a request arriving on an idle connection.
struct Watched<I> {
    io: I,
    phase: Arc<Mutex<Phase>>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            let mut phase = lock(&self.phase);
            if let Phase::Idle(_) = *phase {
                *phase = Phase::Head(Instant::now());
            }
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, data)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The checks before rmcp sees a request, and what they share.
struct Front<H> {
    idle: Duration,
    metrics: Arc<Metrics>,
    health: Health,
    tokens: Arc<dyn TokenStore>,
    actors: Arc<dyn ActorSource>,
    /// Lowercase host names and addresses accepted in `Host` and `Origin` (besides `localhost` and loopback).
    hosts: Vec<String>,
    in_flight: Mutex<HashMap<String, usize>>,
    slots: Semaphore,
    mcp: StreamableHttpService<H, NeverSessionManager>,
}

/// A call counted against its token until dropped.
struct InFlight<'a> {
    counts: &'a Mutex<HashMap<String, usize>>,
    token: String,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.token) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.token);
            }
        }
    }
}

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

fn jsonrpc_error(code: i64, message: &str) -> Response<Body> {
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    respond(StatusCode::BAD_REQUEST, Some(&body))
}

fn retry_later(status: StatusCode, error: &str) -> Response<Body> {
    let mut response = respond(status, Some(&json!({ "error": error })));
    response.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
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

/// The largest JSON-RPC id integer kept exact by JavaScript readers.
const MAX_ID: i64 = (1 << 53) - 1;

fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| (-MAX_ID..=MAX_ID).contains(&n)),
        _ => false,
    }
}

/// What one POSTed message is.
enum Message {
    /// A request, with its method.
    Request(String),
    /// A notification or a response: accepted, nothing to answer.
    Accepted,
}

/// The message's kind, or the JSON-RPC error code and message of a `400`.
fn classify(body: &[u8]) -> Result<Message, (i64, String)> {
    let value: Value = serde_json::from_slice(body).map_err(|_| (-32700, "Parse error".to_owned()))?;
    let invalid = |why: &str| (-32600, format!("Invalid Request: {why}"));
    let Value::Object(object) = value else {
        return Err(invalid(if value.is_array() {
            "a batch (a JSON array) is not accepted; send one message per request"
        } else {
            "a message is a JSON object"
        }));
    };
    match (object.get("method"), object.get("id")) {
        (Some(Value::String(method)), Some(id)) if is_request_id(id) => Ok(Message::Request(method.clone())),
        (Some(Value::String(_)), Some(_)) => {
            Err(invalid("`id` must be a string or an integer from -(2^53 - 1) to 2^53 - 1"))
        }
        (Some(Value::String(_)), None) => Ok(Message::Accepted),
        (None, Some(id))
            if is_request_id(id) && (object.contains_key("result") || object.contains_key("error")) =>
        {
            Ok(Message::Accepted)
        }
        _ => Err(invalid("not a JSON-RPC request, notification or response")),
    }
}

/// Reads a body of at most [`MAX_BODY_BYTES`]; past that, reads and discards up to [`DISCARD_BYTES`] more and
/// returns `None`.
async fn read_body(body: Incoming) -> Result<Option<Bytes>, ()> {
    let mut body = std::pin::pin!(body);
    let mut kept = BytesMut::new();
    let mut over = false;
    let mut discarded = 0usize;
    while let Some(frame) = body.as_mut().frame().await {
        let Ok(frame) = frame else { return Err(()) };
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
    Ok((!over).then(|| kept.freeze()))
}

impl<H: ServerHandler + Send + 'static> Front<H> {
    fn host_allowed(&self, host: &str) -> bool {
        host == "localhost"
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            || self.hosts.iter().any(|allowed| allowed == host)
    }

    /// Step 1: `Host` and `Origin`.
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
    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        let response = self.route(request).await;
        self.metrics.response(response.status().as_u16());
        response
    }

    async fn route(&self, request: Request<Incoming>) -> Response<Body> {
        if !self.check_hosts(&request) {
            return respond(StatusCode::FORBIDDEN, Some(&json!({ "error": "forbidden_host" })));
        }
        let allowed = match request.uri().path() {
            "/mcp" => "POST",
            "/healthz" | "/metrics" => "GET",
            _ => return respond(StatusCode::NOT_FOUND, Some(&json!({ "error": "not_found" }))),
        };
        if request.method().as_str() != allowed {
            let mut response =
                respond(StatusCode::METHOD_NOT_ALLOWED, Some(&json!({ "error": "method_not_allowed" })));
            response.headers_mut().insert(ALLOW, HeaderValue::from_static(allowed));
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
        let too_large = || {
            let mut response = respond(
                StatusCode::PAYLOAD_TOO_LARGE,
                Some(&json!({ "error": "payload_too_large", "maxBytes": MAX_BODY_BYTES })),
            );
            response.headers_mut().insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            response
        };
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok())
            .and_then(|length| length.trim().parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
            return too_large();
        }
        let (mut parts, body) = request.into_parts();
        let body = match read_body(body).await {
            Ok(Some(body)) => body,
            Ok(None) => return too_large(),
            Err(()) => return respond(StatusCode::BAD_REQUEST, Some(&json!({ "error": "bad_body" }))),
        };
        let identity = match self.authenticate(parts.headers.get(AUTHORIZATION)).await {
            Ok(identity) => identity,
            Err(response) => return *response,
        };
        let method = match classify(&body) {
            Ok(Message::Request(method)) => method,
            Ok(Message::Accepted) => return respond(StatusCode::ACCEPTED, None),
            Err((code, message)) => return jsonrpc_error(code, &message),
        };
        let _counted = if method == "tools/call" {
            let counted = {
                let mut counts = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
                let count = counts.entry(identity.token_id.as_str().to_owned()).or_insert(0);
                if *count >= PER_TOKEN_IN_FLIGHT {
                    None
                } else {
                    *count += 1;
                    Some(InFlight { counts: &self.in_flight, token: identity.token_id.as_str().to_owned() })
                }
            };
            let Some(counted) = counted else {
                return retry_later(StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
            };
            let Ok(Ok(permit)) = tokio::time::timeout(SLOT_WAIT, self.slots.acquire()).await else {
                return retry_later(StatusCode::SERVICE_UNAVAILABLE, "busy");
            };
            Some((counted, permit))
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
        let request = Request::from_parts(parts, Full::new(body));
        self.mcp.handle(request).await
    }

    /// Step 5, on the blocking pool (the records are files or rows).
    async fn authenticate(&self, header: Option<&HeaderValue>) -> Result<Identity, Box<Response<Body>>> {
        let header = header.map(|value| value.as_bytes().to_vec());
        let tokens = Arc::clone(&self.tokens);
        let actors = Arc::clone(&self.actors);
        let checked = tokio::task::spawn_blocking(move || {
            authenticate(tokens.as_ref(), actors.as_ref(), header.as_deref(), Timestamp::now())
        })
        .await;
        let (refusal, id) = match checked {
            Ok(Ok(identity)) => return Ok(identity),
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
            Refusal::Missing => {
                let mut response =
                    respond(StatusCode::UNAUTHORIZED, Some(&json!({ "error": "missing_token" })));
                response
                    .headers_mut()
                    .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"alp-memory\""));
                response
            }
            _ => {
                let mut response =
                    respond(StatusCode::UNAUTHORIZED, Some(&json!({ "error": "invalid_token" })));
                response.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"alp-memory\", error=\"invalid_token\""),
                );
                response
            }
        }))
    }
}
