//! The MCP handler of one HTTP request: the tools of the stdio server, each call made as the role of the request's
//! token (put into the request by the front, never read from the request itself) and audited with `via` = the
//! token's ID.

use std::borrow::Cow;
use std::sync::Arc;

use alp_memory::ActorSource;
use alp_memory::memory_audit::{AuditSink, ViaSink};
use alp_memory::memory_policy::PolicyEngine;
use alp_memory::memory_store::MemoryStore;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, DiscoverResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::State;
use super::front::{Caller, Held, Work};
use crate::runner;
use crate::server::{
    NEWEST, SUPPORTED, custom_request, discovered, identified, implementation, listed, stateless,
};
use crate::tools as calls;

/// Built afresh for every request (the server is stateless); clones share the state.
pub(super) struct Handler<S, A, P, R> {
    pub(super) state: Arc<State<S, A, P, R>>,
}

impl<S, A, P, R> Handler<S, A, P, R> {
    fn tools(&self) -> &[Tool] {
        &self.state.tools
    }
}

/// The identity the front put into the request, if any, and the guards of its work (taken out: a request makes
/// one call).
fn identity(context: &mut RequestContext<RoleServer>) -> Option<(Caller, Option<Work>)> {
    let parts = context.extensions.get_mut::<http::request::Parts>()?;
    let work = parts.extensions.remove::<Held>().and_then(|held| held.take());
    Some((parts.extensions.remove::<Caller>()?, work))
}

impl<S, A, P, R> ServerHandler for Handler<S, A, P, R>
where
    S: MemoryStore + 'static,
    A: AuditSink + 'static,
    P: PolicyEngine + Clone + 'static,
    R: ActorSource + Clone + 'static,
{
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation())
            .with_protocol_version(NEWEST)
            .with_instructions(
                "Governed memory. Every call acts as the role of the bearer token it carries (no argument, header \
                 or _meta changes it), is checked against that role's grants and is audited. Entries have logical \
                 IDs (shared:…, project:<project>:…, private:<role>:…); the `memory` tool shows them as files under \
                 /memories. Updates and deletes take the version you read (expectedVersion).",
            )
    }

    /// Both eras: the session era's revisions (each request stateless all the same, §13) and `2026-07-28`.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    /// Cacheable by anyone: the answer is the same whatever the token (the instructions name no role).
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        Ok(discovered(self.get_info(), CacheScope::Public))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(listed(self.tools(), stateless(&context)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The front authenticates every request before it gets here; without an identity nothing is done.
        let Some((identity, work)) = identity(&mut context) else {
            return Err(ErrorData::internal_error("the request carries no authenticated token", None));
        };
        let state = Arc::clone(&self.state);
        let name = request.name.into_owned();
        let started = std::time::Instant::now();
        let arguments = request.arguments;
        // A caller that gives up (a closed connection drops this future; rmcp cancels the request's token) stops
        // the call at its next file or row.
        let token = context.ct.clone();
        let stateless = stateless(&context);
        let tool = name.clone();
        let mut result = runner::run(async move { token.cancelled().await }, move |cancel| {
            // The token's count and the slot go with the work: a client that leaves frees neither before it
            // ends.
            let _work = work;
            let Caller { via, role, actor } = identity;
            let service = state.service(ViaSink::new(Arc::clone(&state.audit), via), actor);
            calls::call(&service, &role, &name, arguments, cancel)
        })
        .await;
        let outcome = match (result.is_error, &result.structured_content) {
            (Some(true), Some(content)) => content["error"]["code"].as_str().unwrap_or("error").to_owned(),
            (Some(true), None) => "error".to_owned(),
            _ => "ok".to_owned(),
        };
        self.state.metrics.tool_call(&tool, &outcome, started.elapsed());
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
