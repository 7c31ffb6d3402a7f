//! The tools: one synchronous function per call, from the raw `arguments` to the `CallToolResult`.
//!
//! `memory_search`, `memory_get`, `memory_create`, `memory_update`, `memory_delete`, `memory_context`,
//! `memory_history` and `memory_restore` read
//! their arguments, call one door (or `context`, one `search`), and return the document `alp --json` prints, as
//! `structuredContent` and as a text block (`memory_update` and `memory_restore`: the entry only when the role may
//! also read it, else `{"id","version"}`, as the service's [`Written`](alp_memory::Written) says). The arguments
//! are read completely before the service is called, so
//! a bad or unknown argument is a `USAGE` result that reached no door and wrote no audit record.
//! Every failure, the tool's own or the service's, is an `isError` result carrying `{"error":{…}}` (§9).

pub(crate) mod args;
pub(crate) mod catalogue;
mod memory;

use alp_memory::memory_audit::AuditSink;
use alp_memory::memory_entry::{FieldName, FieldValue, Filter};
use alp_memory::memory_id::shown;
use alp_memory::memory_policy::PolicyEngine;
use alp_memory::memory_store::{Cancel, MemoryStore};
use alp_memory::{
    ActorSource, ContextRequest, CreateRequest, FieldInput, MemoryError, MemoryService, SearchRequest,
    UpdateRequest, json,
};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use args::Args;
use catalogue::{CONTEXT, CREATE, DELETE, GET, HISTORY, MEMORY, RESTORE, SEARCH, UPDATE};

/// The result of a failed call: `{"error":{…}}` as `structuredContent` and as text, `isError: true`. `message`
/// replaces the service's wording where the `memory` tool answers with the reference handlers' text.
pub(crate) fn error_result(error: &MemoryError, message: Option<String>) -> CallToolResult {
    let mut object = json::error_object(error);
    if let (Some(message), Value::Object(map)) = (message, &mut object) {
        map.insert("message".into(), message.into());
    }
    let mut document = Map::new();
    document.insert("error".into(), object);
    CallToolResult::structured_error(Value::Object(document))
}

/// Runs the tool `name` for `role` with `arguments`; a search, a context or a listing of the `memory` tool stops
/// at the store's next file or row once `cancel` is raised.
pub(crate) fn call<S, A, P, R>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    name: &str,
    arguments: Option<Map<String, Value>>,
    cancel: &Cancel,
) -> CallToolResult
where
    S: MemoryStore,
    A: AuditSink,
    P: PolicyEngine,
    R: ActorSource,
{
    let result = match name {
        SEARCH => search(service, role, arguments, cancel),
        GET => get(service, role, arguments),
        CREATE => create(service, role, arguments),
        UPDATE => update(service, role, arguments),
        DELETE => delete(service, role, arguments),
        CONTEXT => context(service, role, arguments, cancel),
        HISTORY => history(service, role, arguments),
        RESTORE => restore(service, role, arguments),
        MEMORY => return memory::call(service, role, arguments, cancel),
        other => Err(MemoryError::Usage(format!(
            "unknown tool `{}`; the tools are {SEARCH}, {GET}, {CREATE}, {UPDATE}, {DELETE}, {CONTEXT}, {HISTORY}, \
             {RESTORE} and {MEMORY}",
            shown(other)
        ))),
    };
    match result {
        Ok(document) => CallToolResult::structured(document),
        Err(error) => error_result(&error, None),
    }
}

/// A filter argument within its bound, refused (`USAGE`, before any door) otherwise.
fn bounded(tool: &str, name: &str, value: &str) -> Result<(), MemoryError> {
    alp_memory::check_filter(name, value).map_err(|e| MemoryError::Usage(format!("{tool}: {e}")))
}

/// A `query` argument within the bounds of a query, refused (`USAGE`, before any door) otherwise.
fn bounded_query(tool: &str, query: &str) -> Result<(), MemoryError> {
    alp_memory::check_query(query).map_err(|e| MemoryError::Usage(format!("{tool}: {e}")))
}

/// A count argument as a `usize`.
fn size(tool: &str, name: &str, value: u64) -> Result<usize, MemoryError> {
    usize::try_from(value)
        .map_err(|_| MemoryError::Usage(format!("{tool}: `{name}` is too large for this machine")))
}

fn search<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
    cancel: &Cancel,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(SEARCH, arguments);
    let query = args.optional_string("query")?.unwrap_or_default();
    bounded_query(SEARCH, &query)?;
    let prefix = args.optional_string("prefix")?;
    if let Some(prefix) = &prefix {
        bounded(SEARCH, "prefix", prefix)?;
    }
    let mut values = Vec::new();
    for name in FieldName::FILTERABLE {
        if let Some(text) = args.optional_string(name.as_str())? {
            // A malformed filter is the caller's mistake, refused before the door (as on the command line); so is
            // one over its bound, checked first.
            bounded(SEARCH, name.as_str(), &text)?;
            values.push(
                FieldValue::parse(name, &text).map_err(|e| MemoryError::Usage(format!("{SEARCH}: {e}")))?,
            );
        }
    }
    let limit = args.optional_count("limit")?.map(|limit| size(SEARCH, "limit", limit)).transpose()?;
    args.finish()?;
    let request = SearchRequest {
        query: query.into(),
        prefix,
        filter: Filter::new(values),
        limit,
        cancel: cancel.clone(),
    };
    Ok(json::search_document(&service.search(role, &request)?))
}

fn get<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(GET, arguments);
    let id = args.string("id")?;
    let version = args.optional_version("version")?;
    args.finish()?;
    match version {
        Some(version) => Ok(json::version_object(&service.get_version(role, &id, version)?)),
        None => Ok(json::entry_object(&service.get(role, &id)?)),
    }
}

fn history<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(HISTORY, arguments);
    let id = args.string("id")?;
    let limit = args.optional_count("limit")?.map(|limit| size(HISTORY, "limit", limit)).transpose()?;
    args.finish()?;
    Ok(json::history_document(&id, &service.history(role, &id, limit)?))
}

fn restore<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(RESTORE, arguments);
    let id = args.string("id")?;
    let version = args.version("version")?;
    let expected_version = args.count("expectedVersion")?;
    args.finish()?;
    Ok(json::written_object(&service.restore(role, &id, version, expected_version)?))
}

/// The optional entry fields of create and update, as given: the service parses them after the policy allowed
/// the call, so a malformed value is an audited `INVALID_ENTRY`.
fn fields(args: &mut Args) -> Result<FieldInput, MemoryError> {
    let mut input = FieldInput::new();
    for name in FieldName::ALL {
        if let Some(text) = args.optional_string(name.as_str())? {
            input.push(name, text);
        }
    }
    Ok(input)
}

fn create<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(CREATE, arguments);
    let id = args.string("id")?;
    let content = args.string("content")?;
    let fields = fields(&mut args)?;
    args.finish()?;
    Ok(json::entry_object(&service.create(role, CreateRequest { id, content, fields })?))
}

fn update<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(UPDATE, arguments);
    let id = args.string("id")?;
    let expected_version = args.count("expectedVersion")?;
    let content = args.optional_string("content")?;
    let fields = fields(&mut args)?;
    let clear = args
        .optional_strings("clear")?
        .iter()
        .map(|name| {
            FieldName::parse(name).ok_or_else(|| {
                let names: Vec<&str> = FieldName::ALL.iter().map(|f| f.as_str()).collect();
                MemoryError::Usage(format!(
                    "{UPDATE}: `{}` cannot be cleared; one of {}",
                    shown(name),
                    names.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    args.finish()?;
    let request = UpdateRequest { id, expected_version, content, fields, clear };
    Ok(json::written_object(&service.update(role, request)?))
}

fn delete<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(DELETE, arguments);
    let id = args.string("id")?;
    let expected_version = args.count("expectedVersion")?;
    args.finish()?;
    service.delete(role, &id, expected_version)?;
    Ok(json::deleted_document(&id))
}

fn context<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
    cancel: &Cancel,
) -> Result<Value, MemoryError> {
    let mut args = Args::new(CONTEXT, arguments);
    let query = args.optional_string("query")?.unwrap_or_default();
    bounded_query(CONTEXT, &query)?;
    let budget = size(CONTEXT, "budget", args.count("budget")?)?;
    let prefix = args.optional_string("prefix")?;
    let task = args.optional_string("task")?;
    let feature = args.optional_string("feature")?;
    for (name, value) in [("prefix", &prefix), ("task", &task), ("feature", &feature)] {
        if let Some(value) = value {
            bounded(CONTEXT, name, value)?;
        }
    }
    args.finish()?;
    let request =
        ContextRequest { query: query.into(), budget, prefix, task, feature, cancel: cancel.clone() };
    Ok(json::context_document(&service.context(role, &request)?))
}
