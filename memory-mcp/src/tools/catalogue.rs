//! The nine tools as `tools/list` publishes them: names, descriptions and hand-written JSON Schemas
//! (`docs/CLI.md`, "The MCP server"). No schema has a role, actor, root, agents or store property: the server acts as
//! the role it was started with, and every schema says `additionalProperties: false`, which the server enforces itself.

use std::sync::Arc;

use alp_memory::memory_entry::{FieldName, Importance, Kind, MAX_SAFE_INTEGER, MemoryType};
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

/// `memory_search`.
pub(crate) const SEARCH: &str = "memory_search";
/// `memory_get`.
pub(crate) const GET: &str = "memory_get";
/// `memory_create`.
pub(crate) const CREATE: &str = "memory_create";
/// `memory_update`.
pub(crate) const UPDATE: &str = "memory_update";
/// `memory_delete`.
pub(crate) const DELETE: &str = "memory_delete";
/// `memory_context`.
pub(crate) const CONTEXT: &str = "memory_context";
/// `memory_history`.
pub(crate) const HISTORY: &str = "memory_history";
/// `memory_restore`.
pub(crate) const RESTORE: &str = "memory_restore";
/// `memory`.
pub(crate) const MEMORY: &str = "memory";

fn keywords<T: Copy>(all: &[T], text: fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|value| text(*value)).collect()
}

fn id_property() -> Value {
    json!({
        "type": "string",
        "description": "A logical memory ID: shared:<name>[:…], project:<project>:<name>[:…] or private:<role>:<name>[:…]."
    })
}

fn prefix_property() -> Value {
    json!({
        "type": "string",
        "description": "Only this subtree (whole segments: `project:alp` finds project:alp and project:alp:…)."
    })
}

fn version_property(description: &str) -> Value {
    json!({ "type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER, "description": description })
}

fn count_property(description: &str) -> Value {
    json!({ "type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER, "description": description })
}

/// The optional entry fields of create and update, as strings the service validates.
fn field_properties(properties: &mut Map<String, Value>) {
    let kinds = keywords(Kind::ALL, Kind::as_str);
    let types = keywords(MemoryType::ALL, MemoryType::as_str);
    let importances = keywords(Importance::ALL, Importance::as_str);
    let fields = [
        ("kind", json!({ "type": "string", "enum": kinds, "description": "Default: reference." })),
        ("type", json!({ "type": "string", "enum": types })),
        (
            "key",
            json!({ "type": "string", "description": "Lookup key, unique within (type, scope); kebab-case." }),
        ),
        ("importance", json!({ "type": "string", "enum": importances, "description": "Default: medium." })),
        ("source", json!({ "type": "string", "description": "What created the entry." })),
        ("scope", json!({ "type": "string", "description": "The feature or task the entry is scoped to." })),
        (
            "ttl",
            json!({ "type": "string", "description": "Time to live: a positive integer and s, m, h, d or w (90d)." }),
        ),
    ];
    for (name, schema) in fields {
        properties.insert(name.to_owned(), schema);
    }
}

fn object(properties: Map<String, Value>, required: &[&str]) -> Arc<Map<String, Value>> {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(required));
    schema.insert("additionalProperties".into(), false.into());
    Arc::new(schema)
}

fn properties(items: Vec<(&str, Value)>) -> Map<String, Value> {
    items.into_iter().map(|(name, schema)| (name.to_owned(), schema)).collect()
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).destructive(false).open_world(false)
}

fn writes(destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations::new().read_only(false).destructive(destructive).idempotent(idempotent).open_world(false)
}

/// Every tool, in the order of `docs/CLI.md`.
pub(crate) fn tools() -> Vec<Tool> {
    let kinds = keywords(Kind::ALL, Kind::as_str);
    let types = keywords(MemoryType::ALL, MemoryType::as_str);
    let importances = keywords(Importance::ALL, Importance::as_str);

    let mut search = properties(vec![
        (
            "query",
            json!({ "type": "string", "description": "Whitespace-separated terms; an entry's score is how many it contains. Empty or absent: everything." }),
        ),
        ("prefix", prefix_property()),
    ]);
    for name in FieldName::FILTERABLE {
        let schema = match name {
            FieldName::Kind => json!({ "type": "string", "enum": kinds }),
            FieldName::Type => json!({ "type": "string", "enum": types }),
            FieldName::Importance => json!({ "type": "string", "enum": importances }),
            _ => json!({ "type": "string" }),
        };
        search.insert(name.as_str().to_owned(), schema);
    }
    search.insert(
        "limit".to_owned(),
        count_property("At most this many results (at most 1000, and 1000 when absent); the answer adds \"more\": true when more matched."),
    );

    let mut create = properties(vec![
        ("id", id_property()),
        ("content", json!({ "type": "string", "description": "The text." })),
    ]);
    field_properties(&mut create);

    let clearable: Vec<&str> = FieldName::ALL.iter().map(|name| name.as_str()).collect();
    let mut update = properties(vec![
        ("id", id_property()),
        (
            "expectedVersion",
            count_property("The version you read; a different stored version is a conflict."),
        ),
        ("content", json!({ "type": "string", "description": "New text (kept when absent)." })),
    ]);
    field_properties(&mut update);
    update.insert(
        "clear".into(),
        json!({
            "type": "array",
            "items": { "type": "string", "enum": clearable },
            "description": "Fields to remove (kind and importance return to their defaults)."
        }),
    );

    let delete = properties(vec![
        ("id", id_property()),
        (
            "expectedVersion",
            count_property("The version you read; a different stored version is a conflict."),
        ),
    ]);

    let context = properties(vec![
        (
            "query",
            json!({ "type": "string", "description": "Terms that select and order entries (only order them with a task or feature)." }),
        ),
        ("budget", count_property("The most characters the context text may hold.")),
        ("prefix", prefix_property()),
        (
            "task",
            json!({ "type": "string", "description": "Plan for this task: entries scoped to it, to its feature, unscoped and critical ones." }),
        ),
        (
            "feature",
            json!({ "type": "string", "description": "The task's feature, or plan for this feature alone." }),
        ),
    ]);

    let get = properties(vec![
        ("id", id_property()),
        (
            "version",
            version_property(
                "A kept version instead of the current entry (expired and deleted entries too).",
            ),
        ),
    ]);

    let history = properties(vec![
        ("id", id_property()),
        ("limit", count_property("Only this many of the newest versions (all kept ones when absent).")),
    ]);

    let restore = properties(vec![
        ("id", id_property()),
        ("version", version_property("The kept version whose content and fields to write again.")),
        (
            "expectedVersion",
            count_property(
                "The version the entry is at (its tombstone's when deleted); a different one is a conflict.",
            ),
        ),
    ]);

    let memory = properties(vec![
        (
            "command",
            json!({ "type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"] }),
        ),
        (
            "path",
            json!({ "type": "string", "description": "view, create, str_replace, insert, delete: a path under /memories. Files end in .md." }),
        ),
        (
            "view_range",
            json!({ "type": "array", "items": { "type": "integer" }, "minItems": 2, "maxItems": 2, "description": "view of a file: [first line, last line], 1-based; -1 as the last line means the end." }),
        ),
        ("file_text", json!({ "type": "string", "description": "create: the file's text." })),
        (
            "old_str",
            json!({ "type": "string", "description": "str_replace: text that occurs exactly once in the file." }),
        ),
        ("new_str", json!({ "type": "string", "description": "str_replace: its replacement." })),
        (
            "insert_line",
            json!({ "type": "integer", "minimum": 0, "description": "insert: the line after which to insert (0: at the start)." }),
        ),
        ("insert_text", json!({ "type": "string", "description": "insert: the text to insert." })),
        ("old_path", json!({ "type": "string", "description": "rename: the file to move." })),
        ("new_path", json!({ "type": "string", "description": "rename: where it goes (must not exist)." })),
    ]);

    vec![
        Tool::new(
            SEARCH,
            "Search the memory this agent may read, ranked deterministically (score, then newer, then id). Returns \
             {\"entries\":[…]} with each entry and its score.",
            object(search, &[]),
        )
        .with_annotations(read_only()),
        Tool::new(
            GET,
            "Read one memory entry by its logical ID, or, with version, one kept version of it.",
            object(get, &["id"]),
        )
        .with_annotations(read_only()),
        Tool::new(
            CREATE,
            "Create a memory entry at version 1. A create never overwrites: an existing ID is an error.",
            object(create, &["id", "content"]),
        )
        .with_annotations(writes(false, false)),
        Tool::new(
            UPDATE,
            "Change the given fields of an entry that is at expectedVersion (read it first); the others are kept.",
            object(update, &["id", "expectedVersion"]),
        )
        .with_annotations(writes(true, false)),
        Tool::new(DELETE, "Delete an entry that is at expectedVersion.", object(delete, &["id", "expectedVersion"]))
            .with_annotations(writes(true, false)),
        Tool::new(
            CONTEXT,
            "Build context under a character budget from the memory this agent may read: whole entries, best first, \
             with diagnostics naming what was left out.",
            object(context, &["budget"]),
        )
        .with_annotations(read_only()),
        Tool::new(
            HISTORY,
            "List the kept versions of an entry, newest first: each version's entry, {\"redacted\":true} for a \
             redacted one, and {\"deleted\":true} tombstones. Returns {\"id\",\"versions\":[…]}.",
            object(history, &["id"]),
        )
        .with_annotations(read_only()),
        Tool::new(
            RESTORE,
            "Write a new version of an entry with the content and fields of a kept version (this also brings a \
             deleted entry back); expectedVersion is the version the entry is at now.",
            object(restore, &["id", "version", "expectedVersion"]),
        )
        .with_annotations(writes(true, false)),
        Tool::new(
            MEMORY,
            "A memory directory at /memories, with the commands of Anthropic's memory tool (view, create, \
             str_replace, insert, delete, rename). Every file is a governed entry: /memories/shared/<name>.md, \
             /memories/projects/<project>/<name>.md, /memories/private/<role>/<name>.md (only your own role's). \
             Access is checked against this agent's grants and audited.",
            object(memory, &["command"]),
        )
        .with_annotations(writes(true, false)),
    ]
}
