//! `conformance/versions.json`: version numbering and history over sequences of calls (format in
//! `conformance/README.md`, "Versions"), and a runner that plays a case against any [`MemoryStore`].

use memory_entry::{NewEntry, Patch, StoreError, Timestamp, Version};
use memory_id::parse_memory_id;
use memory_store::MemoryStore;
use serde::Deserialize;

/// One case: a sequence of calls on a fresh store that keeps `keepVersions` versions per ID (default 100).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VersionCase {
    /// What the case shows.
    pub name: String,
    /// `history.keepVersions` of the store; 100 when absent.
    #[serde(default)]
    pub keep_versions: Option<u64>,
    /// The calls, in order.
    pub steps: Vec<VersionStep>,
    /// Free text.
    #[serde(default)]
    pub note: Option<String>,
}

/// One call and what it must give.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VersionStep {
    /// `create`, `update`, `delete`, `rename`, `restore`, `redact`, `get`, `getVersion` or `history`.
    pub op: String,
    /// The ID (every op but `rename`).
    #[serde(default)]
    pub id: Option<String>,
    /// `rename`: the ID moved.
    #[serde(default)]
    pub from: Option<String>,
    /// `rename`: where it goes.
    #[serde(default)]
    pub to: Option<String>,
    /// `create`, `update`: the content.
    #[serde(default)]
    pub content: Option<String>,
    /// `update`, `delete`, `rename`, `restore`.
    #[serde(default)]
    pub expected_version: Option<u64>,
    /// `restore`, `redact`, `getVersion`: the version concerned.
    #[serde(default)]
    pub version: Option<u64>,
    /// The outcome.
    pub expect: Expect,
    /// Free text.
    #[serde(default)]
    pub note: Option<String>,
}

/// What a step gives: a version (with content for `get`), `deleted`, `redacted`, a history, or an error code
/// (with `actual` for a conflict and `reason` for a missing version).
#[derive(Debug, Default, Deserialize, PartialEq, Eq, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// The version written or read.
    #[serde(default)]
    pub version: Option<u64>,
    /// `get`: the content read.
    #[serde(default)]
    pub content: Option<String>,
    /// `delete`: true.
    #[serde(default)]
    pub deleted: Option<bool>,
    /// `redact`: true.
    #[serde(default)]
    pub redacted: Option<bool>,
    /// `history`: the kept versions, newest first.
    #[serde(default)]
    pub history: Option<Vec<Kept>>,
    /// The error code (`NOT_FOUND`, `VERSION_CONFLICT`, `ALREADY_EXISTS`, `INVALID_ENTRY`, `USAGE`).
    #[serde(default)]
    pub error: Option<String>,
    /// `VERSION_CONFLICT`: the version stored.
    #[serde(default)]
    pub actual: Option<u64>,
    /// `NOT_FOUND` for a version: `never_written`, `no_longer_kept` or `tombstone`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// One kept version as a history lists it.
#[derive(Debug, Default, Deserialize, PartialEq, Eq, Clone)]
#[serde(deny_unknown_fields)]
pub struct Kept {
    /// The version.
    pub version: u64,
    /// The content of an entry version.
    #[serde(default)]
    pub content: Option<String>,
    /// A tombstone.
    #[serde(default)]
    pub deleted: Option<bool>,
    /// A redacted version.
    #[serde(default)]
    pub redacted: Option<bool>,
}

fn error(error: &StoreError) -> Expect {
    let (code, actual, reason) = match error {
        StoreError::NotFound { .. } => ("NOT_FOUND", None, None),
        StoreError::VersionNotFound { missing, .. } => ("NOT_FOUND", None, Some(missing.as_str().to_owned())),
        StoreError::VersionConflict { actual, .. } => ("VERSION_CONFLICT", Some(*actual), None),
        StoreError::AlreadyExists { .. } => ("ALREADY_EXISTS", None, None),
        StoreError::VersionRedacted { .. } => ("INVALID_ENTRY", None, None),
        StoreError::RedactCurrent { .. } => ("USAGE", None, None),
        other => return Expect { error: Some(format!("unexpected: {other}")), ..Expect::default() },
    };
    Expect { error: Some(code.to_owned()), actual, reason, ..Expect::default() }
}

fn kept(version: &Version) -> Kept {
    match version {
        Version::Entry(entry) => {
            Kept { version: entry.version, content: Some(entry.content.clone()), ..Kept::default() }
        }
        Version::Redacted(entry) => Kept { version: entry.version, redacted: Some(true), ..Kept::default() },
        Version::Tombstone { version, .. } => {
            Kept { version: *version, deleted: Some(true), ..Kept::default() }
        }
    }
}

/// What `store` gives for `step` at `now`, in the vector's terms.
///
/// # Panics
///
/// When the step lacks a field its op needs, or names an invalid ID or an unknown op.
pub fn play(store: &dyn MemoryStore, step: &VersionStep, now: Timestamp) -> Expect {
    let id = |text: &Option<String>| parse_memory_id(text.as_deref().expect("an ID")).expect("a valid ID");
    let expected = || step.expected_version.expect("expectedVersion");
    let version = |v: u64| Expect { version: Some(v), ..Expect::default() };
    let result: Result<Expect, StoreError> = match step.op.as_str() {
        "create" => store
            .create(NewEntry::new(id(&step.id), step.content.clone().expect("content")), now)
            .map(|e| version(e.version)),
        "update" => store
            .update(
                &id(&step.id),
                expected(),
                &Patch::content_only(step.content.clone().expect("content")),
                now,
            )
            .map(|e| version(e.version)),
        "delete" => store
            .delete(&id(&step.id), expected(), now)
            .map(|()| Expect { deleted: Some(true), ..Expect::default() }),
        "rename" => store.rename(&id(&step.from), &id(&step.to), expected(), now).map(|e| version(e.version)),
        "restore" => store
            .restore(&id(&step.id), step.version.expect("version"), expected(), now)
            .map(|e| version(e.version)),
        "redact" => store
            .redact(&id(&step.id), step.version.expect("version"))
            .map(|()| Expect { redacted: Some(true), ..Expect::default() }),
        "get" => store.get(&id(&step.id), now).map(|e| Expect {
            version: Some(e.version),
            content: Some(e.content),
            ..Expect::default()
        }),
        "getVersion" => store.get_version(&id(&step.id), step.version.expect("version")).map(|v| {
            let k = kept(&v);
            Expect {
                version: Some(k.version),
                content: k.content,
                deleted: k.deleted,
                redacted: k.redacted,
                ..Expect::default()
            }
        }),
        "history" => store.history(&id(&step.id), None).map(|versions| Expect {
            history: Some(versions.iter().map(kept).collect()),
            ..Expect::default()
        }),
        other => panic!("unknown op `{other}`"),
    };
    result.unwrap_or_else(|e| error(&e))
}
