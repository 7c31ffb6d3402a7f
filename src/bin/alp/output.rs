//! What `alp` prints: one JSON document with `--json`, Markdown and plain sentences for people otherwise.

use std::fmt::Write as _;

use alp_memory::memory_store::MemoryEntry;
use alp_memory::{MemoryError, ScoredEntry};
use serde::Serialize;

/// An entry as the CLI's JSON contract names it (DESIGN.md §9): the seven fields always, the typed fields and
/// `expiresAt` when set.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EntryJson<'a> {
    id: &'a str,
    kind: &'static str,
    version: u64,
    created_at: String,
    updated_at: String,
    content: &'a str,
    importance: &'static str,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    memory_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<usize>,
}

impl<'a> EntryJson<'a> {
    pub(crate) fn new(entry: &'a MemoryEntry) -> EntryJson<'a> {
        EntryJson {
            id: entry.id.as_str(),
            kind: entry.kind.as_str(),
            version: entry.version,
            created_at: entry.created_at.to_string(),
            updated_at: entry.updated_at.to_string(),
            content: &entry.content,
            importance: entry.importance.as_str(),
            memory_type: entry.memory_type.map(|t| t.as_str()),
            key: entry.key.as_deref(),
            source: entry.source.as_deref(),
            scope: entry.scope.as_deref(),
            ttl: entry.ttl.map(|t| t.to_string()),
            expires_at: entry.expires_at().map(|t| t.to_string()),
            score: None,
        }
    }

    pub(crate) fn scored(scored: &'a ScoredEntry) -> EntryJson<'a> {
        EntryJson { score: Some(scored.score), ..EntryJson::new(&scored.entry) }
    }
}

/// An entry for people: a heading, its fields as a list, then the content.
pub(crate) fn entry_markdown(entry: &MemoryEntry, score: Option<usize>) -> String {
    let mut out = format!("## {}\n\n", entry.id);
    let mut field = |name: &str, value: &dyn std::fmt::Display| {
        let _ = writeln!(out, "- {name}: {value}");
    };
    if let Some(score) = score {
        field("score", &score);
    }
    field("kind", &entry.kind);
    field("version", &entry.version);
    if let Some(t) = entry.memory_type {
        field("type", &t);
    }
    if let Some(key) = &entry.key {
        field("key", key);
    }
    field("importance", &entry.importance);
    if let Some(source) = &entry.source {
        field("source", source);
    }
    if let Some(scope) = &entry.scope {
        field("scope", scope);
    }
    if let Some(ttl) = entry.ttl {
        field("ttl", &ttl);
    }
    if let Some(at) = entry.expires_at() {
        field("expires", &at);
    }
    field("created", &entry.created_at);
    field("updated", &entry.updated_at);
    out.push('\n');
    out.push_str(entry.content.trim_end_matches(['\n', '\r']));
    out.push('\n');
    out
}

/// The error object printed as the last line of stderr with `--json`.
pub(crate) fn error_json(error: &MemoryError) -> String {
    serde_json::json!({ "error": error.to_json() }).to_string()
}

/// Serialises a JSON document for stdout.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String, MemoryError> {
    serde_json::to_string(value).map_err(|e| MemoryError::Storage {
        id: None,
        storage_kind: None,
        message: format!("cannot write JSON output: {e}"),
    })
}
