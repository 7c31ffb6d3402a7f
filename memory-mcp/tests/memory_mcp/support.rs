//! A server over an in-memory store, for a small team: `main` reads and writes everything it may, `worker` reads
//! shared memory and project alp and writes its log and its own private memory.

use alp_memory::memory_audit::MemoryAuditSink;
use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
use alp_memory::memory_store::{InMemoryStore, MemoryStore};
use alp_memory::{MemoryService, StaticActors};
use memory_mcp::MemoryServer;
use rmcp::model::CallToolResult;
use serde_json::Value;

pub fn team() -> StaticActors {
    let grants = |list: &[&str]| -> Vec<Grant> { list.iter().map(|g| Grant::parse(g).unwrap()).collect() };
    let main = Actor::new(Role::parse("main").unwrap())
        .with_read(grants(&["shared", "project:*", "private:main"]))
        .with_write(grants(&["shared", "project:*", "private:main"]));
    let worker = Actor::new(Role::parse("worker").unwrap())
        .with_read(grants(&["shared", "project:alp", "private:worker"]))
        .with_write(grants(&["project:alp:log:*", "private:worker"]));
    StaticActors::new([main, worker])
}

pub type Server<S> = MemoryServer<S, MemoryAuditSink, GrantPolicy, StaticActors>;

pub fn server_over<S: MemoryStore + 'static>(store: S, role: &str) -> Server<S> {
    let service = MemoryService::new(store, MemoryAuditSink::new(), GrantPolicy, team());
    MemoryServer::new(service, Role::parse(role).unwrap())
}

pub fn server(role: &str) -> Server<InMemoryStore> {
    server_over(InMemoryStore::new(), role)
}

/// Calls `tool` with `args` (a JSON object, or anything else for no arguments).
pub fn call<S: MemoryStore + 'static>(server: &Server<S>, tool: &str, args: Value) -> CallToolResult {
    server.call(tool, args.as_object().cloned())
}

/// The error object of a failed call.
pub fn error<S: MemoryStore + 'static>(server: &Server<S>, tool: &str, args: Value) -> Value {
    let result = call(server, tool, args);
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result.structured_content.unwrap()["error"].clone()
}
