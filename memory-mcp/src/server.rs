//! [`MemoryServer`]: the MCP handler over a `MemoryService` with a bound role, and serving it on stdio.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use alp_memory::memory_audit::AuditSink;
use alp_memory::memory_policy::{GrantPolicy, PolicyEngine, Role};
use alp_memory::memory_store::MemoryStore;
use alp_memory::{ActorSource, AgentDirectory, MemoryError, MemoryService};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    DiscoverResult, ErrorCode, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    MetaObject, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use std::pin::Pin;
use std::task::Poll;

use alp_memory::memory_store::Cancel;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

use crate::runner;
use crate::tools as calls;
use crate::transport::{LineTransport, MAX_REQUEST_BYTES};

/// The newest protocol revision with an `initialize` handshake: what `initialize` answers at most.
pub(crate) const NEWEST: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Every protocol revision served, oldest first: those of the session era, reached through `initialize`, and
/// `2026-07-28`, whose requests name their version in `_meta` and are served without one. `server/discover` lists
/// them, and a request naming any other version is -32022 with this list.
pub(crate) const SUPPORTED: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// How long a client may keep `tools/list` and `server/discover` answers of the stateless era: the tools change
/// only with the binary.
pub(crate) const CATALOGUE_TTL_MS: u64 = 3_600_000;

/// Whether the request of `context` is of the stateless era: its `_meta` names a protocol version without an
/// `initialize` handshake (rmcp has already refused one it does not serve). Its results carry
/// `resultType: "complete"`, and its lists their caching hints.
pub(crate) fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context.meta.protocol_version().is_some_and(|version| !version.has_initialize())
}

/// Who this server is, as `initialize`, `server/discover` and every stateless result name it.
pub(crate) fn implementation() -> Implementation {
    Implementation::new("alp-memory", env!("CARGO_PKG_VERSION"))
}

/// The `_meta` key of a result naming the server that produced it (2026-07-28).
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// In the stateless era, names this server ([`implementation`]) in a result's `_meta`, as the revision asks of
/// every result; a result of the session era is left as that era has it, without.
pub(crate) fn identified(meta: &mut Option<MetaObject>, stateless: bool) {
    static INFO: LazyLock<Option<Value>> = LazyLock::new(|| serde_json::to_value(implementation()).ok());
    if let (true, Some(info)) = (stateless, INFO.as_ref()) {
        meta.get_or_insert_default().0.insert(SERVER_INFO_KEY.to_owned(), info.clone());
    }
}

/// The tools as `tools/list` answers them: in the catalogue's fixed order, and in the stateless era with how long
/// they may be cached by anyone (`public`: the list is the same for every role; a role's grants decide what a call
/// may do, not which tools exist) and the server's name ([`identified`]).
pub(crate) fn listed(tools: &[Tool], stateless: bool) -> ListToolsResult {
    let mut result = ListToolsResult::with_all_items(tools.to_vec());
    if stateless {
        result = result.with_ttl_ms(CATALOGUE_TTL_MS);
        result.cache_scope = Some(CacheScope::Public);
        identified(&mut result.meta, stateless);
    }
    result
}

/// The answer to `server/discover`: every version in [`SUPPORTED`], the server's capabilities, identity and
/// instructions, cacheable for [`CATALOGUE_TTL_MS`] in `scope`.
pub(crate) fn discovered(info: ServerConfig, scope: CacheScope) -> DiscoverResult {
    DiscoverResult::from_server_info(SUPPORTED.to_vec(), info)
        .with_ttl_ms(CATALOGUE_TTL_MS)
        .with_cache_scope(scope)
}

/// The MCP server of one role: the nine tools of `docs/CLI.md` over a [`MemoryService`], every call made as the
/// role given here and never as one named in a tool argument.
///
/// It is the [`ServerHandler`] rmcp drives ([`serve`], [`serve_stdio`]), and [`MemoryServer::call`] runs a tool
/// directly, without a connection. Each call goes through the service's doors, which read the agent definitions,
/// the store and the audit log again every time: a revoked grant or a change made by anyone else is seen by the
/// next call. One server serves one connection (a second `initialize` is refused); clones share the service.
///
/// ```
/// use alp_memory::{MemoryService, StaticActors};
/// use alp_memory::memory_audit::MemoryAuditSink;
/// use alp_memory::memory_store::InMemoryStore;
/// use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
/// use memory_mcp::MemoryServer;
/// use serde_json::json;
///
/// let worker = Role::parse("worker").unwrap();
/// let actor = Actor::new(worker.clone())
///     .with_read([Grant::parse("shared").unwrap()])
///     .with_write([Grant::parse("shared").unwrap()]);
/// let service = MemoryService::new(InMemoryStore::new(), MemoryAuditSink::new(), GrantPolicy, StaticActors::new([actor]));
/// let server = MemoryServer::new(service, worker);
///
/// let args = json!({ "id": "shared:team", "content": "Ship on Fridays." });
/// let created = server.call("memory_create", args.as_object().cloned());
/// assert_eq!(created.is_error, Some(false));
/// assert_eq!(created.structured_content.unwrap()["version"], 1);
///
/// let smuggled = json!({ "id": "private:main:plans", "role": "main" });
/// let refused = server.call("memory_get", smuggled.as_object().cloned());
/// assert_eq!(refused.is_error, Some(true));
/// assert_eq!(refused.structured_content.unwrap()["error"]["code"], "USAGE");
/// assert!(server.service().audit().records().iter().all(|r| r.actor() == "worker"));
/// ```
pub struct MemoryServer<S, A, P = GrantPolicy, R = AgentDirectory> {
    shared: Arc<Shared<S, A, P, R>>,
    initialized: Arc<AtomicBool>,
    /// Raised when the connection's input ends ([`serve`] watches its reader): every call in flight is abandoned.
    input_ended: Arc<watch::Sender<bool>>,
}

struct Shared<S, A, P, R> {
    service: MemoryService<S, A, P, R>,
    role: Role,
    tools: Vec<Tool>,
}

impl<S, A, P, R> Clone for MemoryServer<S, A, P, R> {
    fn clone(&self) -> Self {
        MemoryServer {
            shared: Arc::clone(&self.shared),
            initialized: Arc::clone(&self.initialized),
            input_ended: Arc::clone(&self.input_ended),
        }
    }
}

impl<S, A, P, R> std::fmt::Debug for MemoryServer<S, A, P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryServer").field("role", &self.shared.role).finish_non_exhaustive()
    }
}

impl<S, A, P, R> MemoryServer<S, A, P, R>
where
    S: MemoryStore + 'static,
    A: AuditSink + 'static,
    P: PolicyEngine + 'static,
    R: ActorSource + 'static,
{
    /// A server acting as `role` over `service`.
    pub fn new(service: MemoryService<S, A, P, R>, role: Role) -> MemoryServer<S, A, P, R> {
        MemoryServer {
            shared: Arc::new(Shared { service, role, tools: calls::catalogue::tools() }),
            initialized: Arc::new(AtomicBool::new(false)),
            input_ended: Arc::new(watch::Sender::new(false)),
        }
    }

    /// The role every call acts as.
    pub fn role(&self) -> &Role {
        &self.shared.role
    }

    /// The service the tools call.
    pub fn service(&self) -> &MemoryService<S, A, P, R> {
        &self.shared.service
    }

    /// Runs the tool `name` with `arguments` on this thread and returns its result: the document of `docs/CLI.md` as
    /// `structuredContent` and as a text block (the `memory` tool: text), or, with `isError: true`,
    /// `{"error":{…}}`. Never a protocol error: an unknown tool or a bad or unknown argument is a `USAGE` result.
    /// The call blocks on the store and the audit log; [`ServerHandler::call_tool`] runs it on tokio's blocking
    /// pool.
    pub fn call(&self, name: &str, arguments: Option<Map<String, Value>>) -> CallToolResult {
        self.call_with_cancel(name, arguments, &Cancel::never())
    }

    /// [`MemoryServer::call`] for a caller that may give up: once `cancel` is raised, a `memory_search` or
    /// `memory_context` stops at the store's next file or row, writes nothing more after its audit record, and
    /// returns a `STORAGE_ERROR` result saying it was cancelled. [`ServerHandler::call_tool`] raises it on a
    /// `notifications/cancelled` for the call and when the input ends.
    pub fn call_with_cancel(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        cancel: &Cancel,
    ) -> CallToolResult {
        calls::call(&self.shared.service, self.shared.role.as_str(), name, arguments, cancel)
    }
}

/// The nine tools, as `tools/list` publishes them.
pub fn tools() -> Vec<Tool> {
    calls::catalogue::tools()
}

/// The answer to a request rmcp could not type, on either transport: rmcp reads a known method whose params do not
/// fit its type as a custom request.
pub(crate) fn custom_request(request: &CustomRequest, stateless: bool) -> Result<CustomResult, ErrorData> {
    match request.method.as_str() {
        "tools/call" => malformed_call(stateless),
        "initialize" | "ping" | "tools/list" => {
            Err(ErrorData::invalid_params(format!("invalid params for {}", request.method), None))
        }
        other => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {other}"), None)),
    }
}

/// A `tools/call` whose params are not `{name, arguments?}` is still a tool result, not a protocol error.
fn malformed_call(stateless: bool) -> Result<CustomResult, ErrorData> {
    let usage =
        MemoryError::Usage("tools/call needs params {\"name\": string, \"arguments\"?: object}".into());
    let mut result = calls::error_result(&usage, None);
    // The typed path keeps `resultType` for the stateless era only; this untyped one must do the same itself.
    if !stateless {
        result.result_type = None;
    }
    identified(&mut result.meta, stateless);
    serde_json::to_value(result)
        .map(CustomResult::new)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl<S, A, P, R> ServerHandler for MemoryServer<S, A, P, R>
where
    S: MemoryStore + 'static,
    A: AuditSink + 'static,
    P: PolicyEngine + 'static,
    R: ActorSource + 'static,
{
    fn get_info(&self) -> ServerConfig {
        let instructions = format!(
            "Governed memory. Every call acts as role `{}` (fixed when the server started; no argument changes it), \
             is checked against that role's grants and is audited. Entries have logical IDs (shared:…, \
             project:<project>:…, private:<role>:…); the `memory` tool shows them as files under /memories. \
             Updates and deletes take the version you read (expectedVersion).",
            self.shared.role
        );
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation())
            .with_protocol_version(NEWEST)
            .with_instructions(instructions)
    }

    /// Both eras: the revisions a session reaches through `initialize`, and `2026-07-28` per request.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    /// The session era's handshake, once per connection. The session's revision is the one negotiated (never a
    /// stateless one a client may have asked for), so its later requests keep that revision's shapes.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.initialized.swap(true, Ordering::SeqCst) {
            return Err(ErrorData::invalid_request("the session is already initialized", None));
        }
        let result = self.negotiate_initialize(&request)?;
        let mut peer = request;
        peer.protocol_version = result.protocol_version.clone();
        context.peer.set_peer_info(peer);
        Ok(result)
    }

    /// Cacheable by this client only: the instructions name the role the server acts as.
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        Ok(discovered(self.get_info(), CacheScope::Private))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(listed(&self.shared.tools, stateless(&context)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.clone();
        let name = request.name.into_owned();
        let arguments = request.arguments;
        // The caller gives up with a `notifications/cancelled` for this call (rmcp cancels the request's token) or
        // by ending its input (rmcp would cancel the calls in flight only after waiting up to five seconds for their
        // answers): either raises the flag, and the store stops at its next file or row, so the server exits at once.
        let mut ended = self.input_ended.subscribe();
        let stateless = stateless(&context);
        let token = context.ct;
        let abandoned = async move {
            let input_ended = async move {
                if ended.wait_for(|ended| *ended).await.is_err() {
                    // The server is gone, and with it the input: nothing more to watch.
                    std::future::pending::<()>().await;
                }
            };
            let _ = token.run_until_cancelled(input_ended).await;
        };
        let mut result =
            runner::run(abandoned, move |cancel| server.call_with_cancel(&name, arguments, cancel)).await;
        identified(&mut result.meta, stateless);
        Ok(result.into())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        custom_request(&request, stateless(&context))
    }
}

/// Why serving ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The session's task failed.
    #[error("the MCP session failed: {0}")]
    Session(String),
    /// The runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// Serves `server` on `reader` and `writer` (newline-delimited JSON-RPC, requests of at most 4 MiB) until the input
/// ends. Must run inside a tokio runtime with I/O and time enabled.
///
/// Both eras, chosen per request: the transport holds back requests of the session era until `initialize`, and
/// rmcp serves every request it is handed by its own `_meta` (`2026-07-28` statelessly, the rest in the session
/// `initialize` opened). rmcp's own opening, which would fix one era for the whole connection on its first request,
/// is not used.
///
/// # Errors
///
/// [`ServeError::Session`] when the session's task fails.
pub async fn serve<S, A, P, R, I, O>(
    server: MemoryServer<S, A, P, R>,
    reader: I,
    writer: O,
) -> Result<(), ServeError>
where
    S: MemoryStore + 'static,
    A: AuditSink + 'static,
    P: PolicyEngine + 'static,
    R: ActorSource + 'static,
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let reader = Watched { inner: reader, ended: Arc::clone(&server.input_ended) };
    let transport = LineTransport::new(reader, writer, MAX_REQUEST_BYTES);
    let running = rmcp::service::serve_directly(server, transport, None);
    running.waiting().await.map(|_| ()).map_err(|e| ServeError::Session(e.to_string()))
}

/// How long calls still running when the input ends may take to answer before the server stops without them.
const END_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The server's input, raising `ended` once it ends or fails: the calls in flight are abandoned at once (rmcp
/// itself cancels them only after giving them seconds to answer).
struct Watched<I> {
    inner: I,
    ended: Arc<watch::Sender<bool>>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            // Nothing read into room for something: the end of the input.
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.ended.send_replace(true);
        }
        polled
    }
}

/// Serves `server` on this process's stdin and stdout until stdin ends, on a current-thread runtime of its own
/// (service calls run on its blocking pool). Nothing else may write to stdout meanwhile.
///
/// When stdin ends, calls still running get half a second to answer; then it returns without waiting for them, so
/// the process can exit within a second however slow a store is. The service (with its store and its connections)
/// is dropped here, after the runtime, never inside it.
///
/// # Errors
///
/// As [`serve`], and [`ServeError::Runtime`].
pub fn serve_stdio<S, A, P, R>(server: MemoryServer<S, A, P, R>) -> Result<(), ServeError>
where
    S: MemoryStore + 'static,
    A: AuditSink + 'static,
    P: PolicyEngine + 'static,
    R: ActorSource + 'static,
{
    let kept = server.clone();
    let mut ended = server.input_ended.subscribe();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ServeError::Runtime)?;
    let result = runtime.block_on(async {
        // Non-blocking pipes when stdin and stdout are FIFOs (as under an MCP client), else tokio's stdio.
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let mut serving = std::pin::pin!(serve(server, stdin, stdout));
        // `serve` raises `input_ended` when it reads the end of stdin; calls in flight are cancelled then and
        // stop at their next file or row, and any still running after the grace are left behind.
        let mut grace_over = std::pin::pin!(async move {
            match ended.wait_for(|ended| *ended).await {
                Ok(_) => tokio::time::sleep(END_GRACE).await,
                // The server was dropped without its input ending: the session is over, and `serving` returns.
                Err(_) => std::future::pending().await,
            }
        });
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(result) = serving.as_mut().poll(cx) {
                return std::task::Poll::Ready(result);
            }
            grace_over.as_mut().poll(cx).map(|()| Ok(()))
        })
        .await
    });
    // Calls still running on the blocking pool are not waited for: the process may exit under them.
    runtime.shutdown_background();
    drop(kept);
    result
}
