//! The JSON documents of DESIGN §9, built once for every door: `alp --json` prints them and the MCP server returns
//! them as `structuredContent`, so a runtime reads the same fields whichever door it uses. Field names are
//! camelCase and stand in the order the contract lists them; every integer is at most 2^53 − 1.

use memory_context::MemoryContext;
use memory_entry::{FieldName, MemoryEntry};
use serde_json::{Map, Value, json};

use crate::MemoryError;
use crate::error::exists_reason_code;
use memory_entry::Scored;

/// An entry: `{"id","kind","version","createdAt","updatedAt","content","importance"}` plus, when set, `"type",
/// "key","source","scope","ttl","expiresAt"`.
///
/// ```
/// use alp_memory::json::entry_object;
/// use alp_memory::memory_entry::{NewEntry, Timestamp};
/// use alp_memory::memory_id::parse_memory_id;
///
/// let at = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
/// let entry = NewEntry::new(parse_memory_id("shared:x").unwrap(), "hello").into_entry(at);
/// let object = entry_object(&entry);
/// let keys: Vec<&str> = object.as_object().unwrap().keys().map(String::as_str).collect();
/// assert_eq!(keys, ["id", "kind", "version", "createdAt", "updatedAt", "content", "importance"]);
/// ```
pub fn entry_object(entry: &MemoryEntry) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), entry.id.as_str().into());
    object.insert("kind".into(), entry.fields.kind.as_str().into());
    object.insert("version".into(), entry.version.into());
    object.insert("createdAt".into(), entry.created_at.to_string().into());
    object.insert("updatedAt".into(), entry.updated_at.to_string().into());
    object.insert("content".into(), entry.content.clone().into());
    object.insert("importance".into(), entry.fields.importance.as_str().into());
    for name in [FieldName::Type, FieldName::Key, FieldName::Source, FieldName::Scope, FieldName::Ttl] {
        if let Some(value) = entry.fields.get(name) {
            object.insert(name.as_str().into(), value.text().into());
        }
    }
    if let Some(at) = entry.expires_at() {
        object.insert("expiresAt".into(), at.to_string().into());
    }
    Value::Object(object)
}

/// A search result: the entry and its `"score"`.
pub fn scored_object(scored: &Scored) -> Value {
    let mut object = entry_object(&scored.entry);
    if let Value::Object(map) = &mut object {
        map.insert("score".into(), scored.score.into());
    }
    object
}

/// `{"entries":[…]}`: search results with their scores, in rank order.
pub fn search_document(results: &[Scored]) -> Value {
    json!({ "entries": results.iter().map(scored_object).collect::<Vec<_>>() })
}

/// `{"entries":[…]}`: a listing, without scores, in ID order.
pub fn list_document(entries: &[MemoryEntry]) -> Value {
    json!({ "entries": entries.iter().map(entry_object).collect::<Vec<_>>() })
}

/// `{"text","entryIds":[…],"diagnostics":{"characterBudget","charactersUsed","truncated","omittedEntryIds":[…]}}`.
pub fn context_document(context: &MemoryContext) -> Value {
    let diagnostics = context.diagnostics();
    json!({
        "text": context.text(),
        "entryIds": context.entry_ids(),
        "diagnostics": {
            "characterBudget": diagnostics.character_budget(),
            "charactersUsed": diagnostics.characters_used(),
            "truncated": diagnostics.truncated(),
            "omittedEntryIds": diagnostics.omitted_entry_ids(),
        },
    })
}

/// `{"id","deleted":true}`.
pub fn deleted_document(id: &str) -> Value {
    json!({ "id": id, "deleted": true })
}

/// The error object of §9: `kind`, `code`, `message`, then the details that apply (`id`, `expected`, `actual`,
/// `limit`, `count`, `line`, `column`, and `reason`, `existing`, `expired`, `role`, `file`, `grant`, `key`).
/// Printed as `{"error": …}` ([`error_document`]).
pub fn error_object(error: &MemoryError) -> Value {
    let mut object = Map::new();
    object.insert("kind".into(), error.kind().into());
    object.insert("code".into(), error.code().into());
    object.insert("message".into(), error.to_string().into());
    if let Some(id) = error.id() {
        object.insert("id".into(), id.into());
    }
    match error {
        MemoryError::InvalidMemoryId(e) => {
            object.insert("reason".into(), e.reason().code().into());
        }
        MemoryError::InvalidMemoryPath { reason, .. } => {
            object.insert("reason".into(), (*reason).into());
        }
        MemoryError::VersionConflict { expected, actual, .. } => {
            object.insert("expected".into(), (*expected).into());
            object.insert("actual".into(), (*actual).into());
        }
        MemoryError::LimitExceeded { limit, count, .. } => {
            object.insert("limit".into(), (*limit).into());
            object.insert("count".into(), (*count).into());
        }
        MemoryError::InvalidEntry { line, column, .. } => {
            if let Some(line) = line {
                object.insert("line".into(), (*line).into());
            }
            if let Some(column) = column {
                object.insert("column".into(), (*column).into());
            }
        }
        MemoryError::NotFound { expired, .. } => {
            object.insert("expired".into(), (*expired).into());
        }
        MemoryError::AlreadyExists { existing, reason, .. } => {
            object.insert("existing".into(), existing.clone().into());
            object.insert("reason".into(), exists_reason_code(*reason).into());
        }
        MemoryError::AgentDefinition(e) => {
            object.insert("role".into(), e.role().into());
            object.insert("file".into(), e.file().display().to_string().into());
            object.insert("reason".into(), e.problem().code().into());
            if let Some(grant) = e.grant() {
                object.insert("grant".into(), grant.into());
            }
        }
        MemoryError::Config { key: Some(key), .. } => {
            object.insert("key".into(), key.clone().into());
        }
        _ => {}
    }
    Value::Object(object)
}

/// `{"error":{…}}`: what a failed call prints (the CLI's last stderr line) or returns (an MCP tool's
/// `structuredContent` with `isError: true`).
pub fn error_document(error: &MemoryError) -> Value {
    json!({ "error": error_object(error) })
}
