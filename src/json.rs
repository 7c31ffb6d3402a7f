//! The JSON documents of `docs/CLI.md` ("Output with `--json`"), built once for every door: `alp --json` prints them
//! and the MCP server returns them as `structuredContent`, so a runtime reads the same fields whichever door it uses.
//! Field names are camelCase and stand in the order the contract lists them; every integer is at most 2^53 − 1.

use memory_context::MemoryContext;
use memory_entry::{FieldName, MemoryEntry};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use crate::error::exists_reason_code;
use crate::{MemoryError, Page, Written};
use memory_store::Scored;

/// An entry: `{"id","kind","version","createdAt","updatedAt","content","importance"}` plus, when set, `"type",
/// "key","source","scope","ttl","expiresAt"`. The document [`EntryJson`] serialises.
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
    value_of(&EntryJson::new(entry))
}

/// A search result: the entry and its `"score"`.
pub fn scored_object(scored: &Scored) -> Value {
    value_of(&EntryJson::scored(scored))
}

/// `{"entries":[…]}`: search results with their scores, in rank order, and `"more":true` when more matched than
/// the page holds. The document [`SearchJson`] serialises.
pub fn search_document(results: &Page<Scored>) -> Value {
    value_of(&SearchJson(results))
}

/// `{"entries":[…]}`: a listing, without scores, in ID order, and `"more":true` when entries follow the page. The
/// document [`ListJson`] serialises.
pub fn list_document(entries: &Page<MemoryEntry>) -> Value {
    value_of(&ListJson(entries))
}

/// A document as a JSON value. Every document of this module has string keys and plain values, the only things
/// serde_json's value serialiser cannot fail on, so the `Null` is never returned (`tests/alp_memory/json.rs` holds
/// each document to an object).
fn value_of(document: &impl Serialize) -> Value {
    serde_json::to_value(document).unwrap_or(Value::Null)
}

/// The entry document of [`entry_object`] (with `"score"` for a search result) as a [`Serialize`] that borrows
/// the entry, so that a caller writing JSON text (the CLI) copies no content on the way.
///
/// ```
/// use alp_memory::json::{EntryJson, entry_object};
/// use alp_memory::memory_entry::{NewEntry, Timestamp};
/// use alp_memory::memory_id::parse_memory_id;
///
/// let at = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
/// let entry = NewEntry::new(parse_memory_id("shared:x").unwrap(), "hello").into_entry(at);
/// let text = serde_json::to_string(&EntryJson::new(&entry)).unwrap();
/// assert_eq!(text, entry_object(&entry).to_string());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct EntryJson<'a> {
    entry: &'a MemoryEntry,
    score: Option<usize>,
}

impl<'a> EntryJson<'a> {
    /// The document of an entry.
    pub fn new(entry: &'a MemoryEntry) -> EntryJson<'a> {
        EntryJson { entry, score: None }
    }

    /// The document of a search result: the entry, then its `"score"`.
    pub fn scored(scored: &'a Scored) -> EntryJson<'a> {
        EntryJson { entry: &scored.entry, score: Some(scored.score) }
    }
}

impl Serialize for EntryJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entry = self.entry;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", entry.id.as_str())?;
        map.serialize_entry("kind", entry.fields.kind.as_str())?;
        map.serialize_entry("version", &entry.version)?;
        map.serialize_entry("createdAt", &Displayed(&entry.created_at))?;
        map.serialize_entry("updatedAt", &Displayed(&entry.updated_at))?;
        map.serialize_entry("content", &entry.content)?;
        map.serialize_entry("importance", entry.fields.importance.as_str())?;
        for name in [FieldName::Type, FieldName::Key, FieldName::Source, FieldName::Scope, FieldName::Ttl] {
            if let Some(value) = entry.fields.get(name) {
                map.serialize_entry(name.as_str(), &value.text())?;
            }
        }
        if let Some(at) = entry.expires_at() {
            map.serialize_entry("expiresAt", &Displayed(&at))?;
        }
        if let Some(score) = self.score {
            map.serialize_entry("score", &score)?;
        }
        map.end()
    }
}

/// What a write answers ([`Written`]): the entry document of [`entry_object`] when the actor may read the ID, else
/// exactly `{"id","version"}`. The document [`WrittenJson`] serialises.
///
/// ```
/// use alp_memory::Written;
/// use alp_memory::json::written_object;
/// use alp_memory::memory_id::parse_memory_id;
///
/// let withheld = Written::Withheld { id: parse_memory_id("shared:log:one").unwrap(), version: 2 };
/// assert_eq!(written_object(&withheld).to_string(), r#"{"id":"shared:log:one","version":2}"#);
/// ```
pub fn written_object(written: &Written) -> Value {
    value_of(&WrittenJson(written))
}

/// The document of [`written_object`] as a borrowing [`Serialize`].
#[derive(Debug, Clone, Copy)]
pub struct WrittenJson<'a>(pub &'a Written);

impl Serialize for WrittenJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Written::Entry(entry) => EntryJson::new(entry).serialize(serializer),
            Written::Withheld { id, version } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("id", id.as_str())?;
                map.serialize_entry("version", version)?;
                map.end()
            }
        }
    }
}

/// `{"entries":[…]}` of search results ([`search_document`]) as a borrowing [`Serialize`].
#[derive(Debug, Clone, Copy)]
pub struct SearchJson<'a>(pub &'a Page<Scored>);

impl Serialize for SearchJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        entries_document(serializer, self.0.entries.iter().map(EntryJson::scored), self.0.more)
    }
}

/// `{"entries":[…]}` of a listing ([`list_document`]) as a borrowing [`Serialize`].
#[derive(Debug, Clone, Copy)]
pub struct ListJson<'a>(pub &'a Page<MemoryEntry>);

impl Serialize for ListJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        entries_document(serializer, self.0.entries.iter().map(EntryJson::new), self.0.more)
    }
}

/// `{"entries":[…]}`, each entry document written as it is made, then `"more":true` when the page was cut.
fn entries_document<'a, S: Serializer>(
    serializer: S,
    entries: impl Iterator<Item = EntryJson<'a>> + Clone,
    more: bool,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(if more { 2 } else { 1 }))?;
    map.serialize_entry("entries", &Entries(entries))?;
    if more {
        map.serialize_entry("more", &true)?;
    }
    map.end()
}

/// A sequence of entry documents, written as they are made.
struct Entries<I>(I);

impl<'a, I: Iterator<Item = EntryJson<'a>> + Clone> Serialize for Entries<I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.clone())
    }
}

/// A value written as its `Display` text (a timestamp), without an intermediate `String`.
struct Displayed<'a, T>(&'a T);

impl<T: std::fmt::Display> Serialize for Displayed<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self.0)
    }
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
        MemoryError::VersionNotFound { version, reason, .. } => {
            object.insert("version".into(), (*version).into());
            object.insert("reason".into(), (*reason).into());
        }
        MemoryError::AlreadyExists { existing, reason, .. } => {
            if let Some(existing) = existing {
                object.insert("existing".into(), existing.clone().into());
            }
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

/// One kept version (`alp memory history`, `alp memory get --version`): the entry document of that version, plus
/// `"redacted":true` (content `""`) for a redacted one; a tombstone is `{"id","version","updatedAt","deleted":true}`
/// (`updatedAt`: when it was deleted).
///
/// ```
/// use alp_memory::json::version_object;
/// use alp_memory::memory_entry::{Timestamp, Version};
/// use alp_memory::memory_id::parse_memory_id;
///
/// let at = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
/// let tombstone = Version::Tombstone { id: parse_memory_id("shared:x").unwrap(), version: 3, deleted_at: at };
/// assert_eq!(
///     version_object(&tombstone).to_string(),
///     r#"{"id":"shared:x","version":3,"updatedAt":"2026-11-29T12:00:00.000Z","deleted":true}"#
/// );
/// ```
pub fn version_object(version: &memory_entry::Version) -> Value {
    match version {
        memory_entry::Version::Entry(entry) => entry_object(entry),
        memory_entry::Version::Redacted(entry) => {
            let mut object = entry_object(entry);
            if let Value::Object(map) = &mut object {
                map.insert("redacted".into(), Value::Bool(true));
            }
            object
        }
        memory_entry::Version::Tombstone { id, version, deleted_at } => json!({
            "id": id.as_str(),
            "version": version,
            "updatedAt": deleted_at.to_string(),
            "deleted": true,
        }),
    }
}

/// `{"id","versions":[…]}`: an ID's kept versions, newest first, each as [`version_object`] writes it.
pub fn history_document(id: &str, versions: &[memory_entry::Version]) -> Value {
    json!({ "id": id, "versions": versions.iter().map(version_object).collect::<Vec<_>>() })
}

/// `{"id","version","redacted":true}`: what `alp memory redact` prints.
pub fn redact_document(id: &str, version: u64) -> Value {
    json!({ "id": id, "version": version, "redacted": true })
}
