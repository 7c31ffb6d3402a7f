//! The MCP server of alp-memory (`docs/CLI.md`, "The MCP server"): a Model Context Protocol server, on the
//! official Rust SDK (`rmcp`), over a [`MemoryService`](alp_memory::MemoryService) whose role the runtime fixes
//! when it starts the server (`alp --as ROLE mcp`). Agents use its tools; no tool takes a role, an actor, a root, an
//! agents directory or a store, and an unknown argument is refused, so nothing an agent sends changes who is acting.
//!
//! | tool | arguments | result (`structuredContent`) |
//! |---|---|---|
//! | `memory_search` | `query?`, `prefix?`, `kind?`, `type?`, `importance?`, `key?`, `source?`, `scope?`, `limit?` | `{"entries":[…]}`, as `alp memory search --json` |
//! | `memory_get` | `id`, `version?` | the entry (with `version`, that kept version's; `"redacted":true` when redacted) |
//! | `memory_create` | `id`, `content`, `kind?`, `type?`, `key?`, `importance?`, `source?`, `scope?`, `ttl?` | the entry |
//! | `memory_update` | `id`, `expectedVersion`, the create fields as optional, `clear?` | the entry |
//! | `memory_delete` | `id`, `expectedVersion` | `{"id","deleted":true}` |
//! | `memory_context` | `query?`, `budget`, `prefix?`, `task?`, `feature?` | as `alp memory context --json` |
//! | `memory_history` | `id`, `limit?` | `{"id","versions":[…]}`, as `alp memory history --json` |
//! | `memory_restore` | `id`, `version`, `expectedVersion` | the entry (the new version) |
//! | `memory` | Anthropic's memory tool (`memory_20250818`): `command` and its arguments | text, as that tool's handlers answer |
//!
//! Every result also carries its JSON as a text block (older protocol revisions have no `structuredContent`). A
//! failure is a result with `isError: true` whose `structuredContent` is `{"error":{"kind","code","message",…}}`,
//! the object `alp` prints — never a JSON-RPC error: an unknown tool, a bad or unknown argument and the `memory`
//! tool's own errors are `USAGE`. Each call goes through the service's doors and writes the records they write,
//! one per door call, all with the server's role as `actor`.
//!
//! The tools, their JSON Schemas and their argument checks are written by hand rather than with rmcp's macros:
//! the macros turn a bad argument into a JSON-RPC error (-32602), which the contract above forbids.
//!
//! Serving: [`serve_stdio`] runs a session on stdin and stdout (newline-delimited JSON-RPC with this crate's own
//! transport: a line that is not JSON gets a JSON-RPC parse error and the session goes on, a request over
//! [`MAX_REQUEST_BYTES`] is refused without being held in memory, end of input ends the session cleanly; a request
//! whose id is not a string or an integer from -(2^53 - 1) to 2^53 - 1 is -32600 with a null id and does nothing;
//! a notification is never answered). The service's blocking calls run on tokio's blocking pool, never on the
//! executor.
//!
//! Both protocol eras are served, on stdio and over HTTP, chosen per request by its `_meta` alone:
//! - the session era (2024-11-05 to 2025-11-25): `initialize` opens a session (answered once per connection with
//!   the newest of those revisions the client accepts); on stdio every other request of this era that comes before
//!   `initialize` is -32002 and does nothing;
//! - the stateless era (2026-07-28): a request whose `_meta` names `io.modelcontextprotocol/protocolVersion` is
//!   served on its own, with no `initialize` before it; its results carry `resultType: "complete"` and the
//!   server's name and version in `_meta["io.modelcontextprotocol/serverInfo"]`, and `tools/list` and
//!   `server/discover` their caching hints (`ttlMs`, `cacheScope`). A version not served is -32022
//!   listing the ones that are; a version that is not one string is -32602.
//!
//! `server/discover` lists every supported version, the capabilities, the server's identity and instructions.
//! Nothing an era carries (`clientInfo`, any `_meta` key, an HTTP header) is identity: the role is the command
//! line's on stdio and the token's over HTTP, and the tools, their results, errors and audit records are the same
//! in both eras.
//!
//! The path ↔ ID mapping of the `memory` tool is [`path`], a pure function that is also available without the
//! `server` feature (and so without rmcp and tokio).
//!
//! Most users run the server through `alp --as ROLE mcp`; embedders build a [`MemoryServer`] over their own
//! service.

pub mod path;

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "server")]
mod jsonrpc;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(feature = "server")]
mod runner;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod tools;
#[cfg(feature = "server")]
mod transport;

#[cfg(feature = "server")]
pub use jsonrpc::MAX_VALUES;
#[cfg(feature = "server")]
pub use server::{MemoryServer, ServeError, serve, serve_stdio, tools};

/// Entry points for the workspace's property checks and fuzz targets (feature `testkit`): not part of the API.
#[cfg(feature = "testkit")]
pub mod testkit {
    /// What `alp serve` answers to a POSTed body once its token is accepted and before rmcp reads it: `Ok` with
    /// the method of a request it hands on, or the status and the exact body bytes of its answer (empty for `202`;
    /// for `400` a JSON-RPC error: -32700, -32600, or -32602 for a request whose `_meta` names its protocol version
    /// malformed).
    pub fn http_answer(body: &[u8]) -> Result<String, (u16, Vec<u8>)> {
        crate::jsonrpc::http_answer(body).map_err(|(status, answer)| {
            (status, answer.map(|v| v.to_string().into_bytes()).unwrap_or_default())
        })
    }
}
#[cfg(feature = "server")]
pub use transport::MAX_REQUEST_BYTES;
