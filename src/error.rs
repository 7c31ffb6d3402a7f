//! The service's errors: stable names (`kind`) and stable codes, the same for every door (the CLI, the MCP server,
//! an embedding program). How a door shows them (an exit status, a JSON object) is the door's business; the JSON
//! object both doors print is [`crate::json::error_object`].

use memory_entry::{ExistsReason, StorageErrorKind, StoreError};
use memory_id::InvalidMemoryIdError;
use memory_policy::{AgentDefinitionError, DenyCode, Operation};

/// Every way a memory call can fail. [`MemoryError::kind`] and [`MemoryError::code`] are a contract: runtimes parse
/// them, and audit records carry the code.
///
/// | kind | code |
/// |---|---|
/// | `InvalidMemoryIdError` | `INVALID_MEMORY_ID` |
/// | `UnauthorizedMemoryAccessError` | `MEMORY_NOT_GRANTED` or `PRIVATE_MEMORY_DENIED` |
/// | `MemoryEntryNotFoundError` | `NOT_FOUND` |
/// | `MemoryVersionConflictError` | `VERSION_CONFLICT` |
/// | `MemoryEntryAlreadyExistsError` | `ALREADY_EXISTS` |
/// | `MemoryLimitExceededError` | `LIMIT_EXCEEDED` |
/// | `InvalidMemoryEntryError` | `INVALID_ENTRY` |
/// | `AuditUnavailableError` | `AUDIT_UNAVAILABLE` |
/// | `AgentDefinitionError` | `INVALID_AGENT_DEFINITION` |
/// | `MemoryStorageError` | `STORAGE_ERROR` |
/// | `MemoryConfigError` | `INVALID_CONFIG` |
/// | `UsageError` | `USAGE` |
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The ID or prefix is not a valid logical ID.
    #[error("{0}; an id looks like `shared:<name>`, `project:<project>:<name>` or `private:<role>:<name>`")]
    InvalidMemoryId(InvalidMemoryIdError),
    /// A name in another notation than a logical ID — a path of the MCP `memory` tool — that names no valid ID.
    /// Reported and audited like an invalid ID: kind `InvalidMemoryIdError`, code `INVALID_MEMORY_ID`, the path as
    /// given as `id`.
    #[error("{message}")]
    InvalidMemoryPath {
        /// The path exactly as given.
        path: String,
        /// The stable machine-readable reason (`outside_memories`, `dot_segment`, `percent_sign`, …).
        reason: &'static str,
        /// For people.
        message: String,
    },
    /// The policy denied the request.
    #[error("{}", denied_message(actor, *operation, id, *code))]
    Unauthorized {
        /// The ID or prefix as given (`""` for a search or prune without prefix).
        id: String,
        /// The acting role.
        actor: String,
        /// Read or write.
        operation: Operation,
        /// Why.
        code: DenyCode,
    },
    /// No live entry with this ID.
    #[error("{}", not_found_message(id, *expired))]
    NotFound {
        /// The ID.
        id: String,
        /// Whether the entry exists but has expired.
        expired: bool,
    },
    /// No bearer token with this ID (`alp token revoke`).
    #[error("token `{id}` not found; `alp token list` shows the tokens")]
    TokenNotFound {
        /// The token ID as given.
        id: String,
    },
    /// An operator's name that is taken: `alp agent add` of a role that has a definition, or a token name held by
    /// an unrevoked token (kind `MemoryEntryAlreadyExistsError`, code `ALREADY_EXISTS`, like a create that finds
    /// its place taken). Nothing was written, not even an audit record.
    #[error("{message}")]
    NameTaken {
        /// The role or the token name.
        id: String,
        /// For people: what holds the name and what to do instead.
        message: String,
    },
    /// A version of an ID that cannot be read: never written, no longer kept, or a tombstone (kind
    /// `MemoryEntryNotFoundError`, code `NOT_FOUND`).
    #[error("{message}")]
    VersionNotFound {
        /// The ID.
        id: String,
        /// The version asked for.
        version: u64,
        /// Why: `never_written`, `no_longer_kept` or `tombstone`.
        reason: &'static str,
        /// For people: says which.
        message: String,
    },
    /// `expectedVersion` did not match.
    #[error(
        "version conflict on `{id}`: expected version {expected} but it is at version {actual}; read it again and retry with version {actual}"
    )]
    VersionConflict {
        /// The ID.
        id: String,
        /// The version the caller expected.
        expected: u64,
        /// The version stored.
        actual: u64,
    },
    /// The place is taken: a create never overwrites.
    #[error("{}", already_exists_message(id, existing.as_deref(), *reason))]
    AlreadyExists {
        /// The ID to create or update.
        id: String,
        /// The entry that holds the place, only when the actor may read it. `None` when it may not: the error then
        /// says that an entry the actor cannot read holds the place, and names nothing (an ID the actor cannot read
        /// is never revealed, not even by a create that collides with it).
        existing: Option<String>,
        /// Why the place is taken.
        reason: ExistsReason,
    },
    /// A well-formed value over a configured limit.
    #[error("{message}")]
    LimitExceeded {
        /// The ID concerned.
        id: String,
        /// The limit.
        limit: u64,
        /// Entries already in the scope root, the value's length in characters, or the TTL in seconds.
        count: u64,
        /// For people.
        message: String,
    },
    /// A malformed field (kind, type, importance, ttl, key, …) or `.alp` file.
    #[error("{message}")]
    InvalidEntry {
        /// The ID concerned, when there is one.
        id: Option<String>,
        /// For people.
        message: String,
        /// The 1-based line in an `.alp` file.
        line: Option<u64>,
        /// The 1-based column in an `.alp` file.
        column: Option<u64>,
    },
    /// The audit log could not record the call (or the root or database holding it cannot be opened); nothing was
    /// read or written.
    #[error("audit log unavailable, nothing was read or written: {0}")]
    AuditUnavailable(String),
    /// The memory root does not exist or is not a directory, so no call can be audited and nothing was read or
    /// written: kind `AuditUnavailableError` and code `AUDIT_UNAVAILABLE` like [`MemoryError::AuditUnavailable`],
    /// with a message that says the root is missing, names it and how to create it (`alp init`).
    #[error("{0}")]
    MissingRoot(String),
    /// The acting role has no usable definition.
    #[error("{0}")]
    AgentDefinition(AgentDefinitionError),
    /// The store failed (including refused symlinks and paths outside the root).
    #[error("{message}")]
    Storage {
        /// The ID concerned, when there is one.
        id: Option<String>,
        /// What kind of failure.
        storage_kind: Option<StorageErrorKind>,
        /// For people.
        message: String,
    },
    /// The store's settings (`config.yaml`, a database's settings row) cannot be used.
    #[error("{message}")]
    Config {
        /// The setting in question, when there is one (`limits.maxValueChars`).
        key: Option<String>,
        /// For people: names the file, the key and the valid keys.
        message: String,
    },
    /// A malformed request or command line.
    #[error("{0}")]
    Usage(String),
}

fn denied_message(actor: &str, operation: Operation, id: &str, code: DenyCode) -> String {
    let target = if id.is_empty() { "any memory".to_owned() } else { format!("`{id}`") };
    format!("access denied: role `{actor}` may not {operation} {target} ({code}){}", hint(code, operation))
}

fn hint(code: DenyCode, operation: Operation) -> &'static str {
    match (code, operation) {
        (DenyCode::MemoryNotGranted, _) => "; add a covering grant to the role's agent definition",
        (DenyCode::PrivateMemoryDenied, Operation::Read) => {
            "; another role's private memory is never readable, share it through shared or project memory"
        }
        (DenyCode::PrivateMemoryDenied, Operation::Write) => {
            "; only its own role may write a private memory, whatever the grants; write to shared or project memory \
             instead"
        }
    }
}

fn not_found_message(id: &str, expired: bool) -> String {
    if expired {
        format!("memory entry `{id}` has expired and is no longer visible; `alp memory prune` removes it")
    } else {
        format!("memory entry `{id}` not found; check the id with `alp memory search`")
    }
}

fn already_exists_message(id: &str, existing: Option<&str>, reason: ExistsReason) -> String {
    match (reason, existing) {
        (ExistsReason::Expired, _) => format!(
            "memory entry `{id}` already exists but has expired; run `alp memory prune` before creating it again"
        ),
        (ExistsReason::FileDirectoryClash, Some(existing)) => format!(
            "memory entry `{id}` clashes with `{existing}` on disk (one would be the other's directory); choose another id"
        ),
        (ExistsReason::FileDirectoryClash, None) => format!(
            "memory entry `{id}` clashes on disk with an entry this role may not read (one would be the other's directory); choose another id"
        ),
        (ExistsReason::DuplicateKey, Some(existing)) => format!(
            "memory entry `{existing}` already holds the same type, key and scope as `{id}`; update it instead"
        ),
        (ExistsReason::DuplicateKey, None) => format!(
            "an entry this role may not read already holds the same type, key and scope as `{id}`; choose another key or scope"
        ),
        _ => format!("memory entry `{id}` already exists; a create never overwrites, update it instead"),
    }
}

impl MemoryError {
    /// The stable error name, used as `kind` in JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryError::InvalidMemoryId(_) | MemoryError::InvalidMemoryPath { .. } => "InvalidMemoryIdError",
            MemoryError::Unauthorized { .. } => "UnauthorizedMemoryAccessError",
            MemoryError::NotFound { .. }
            | MemoryError::TokenNotFound { .. }
            | MemoryError::VersionNotFound { .. } => "MemoryEntryNotFoundError",
            MemoryError::VersionConflict { .. } => "MemoryVersionConflictError",
            MemoryError::AlreadyExists { .. } | MemoryError::NameTaken { .. } => {
                "MemoryEntryAlreadyExistsError"
            }
            MemoryError::LimitExceeded { .. } => "MemoryLimitExceededError",
            MemoryError::InvalidEntry { .. } => "InvalidMemoryEntryError",
            MemoryError::AuditUnavailable(_) | MemoryError::MissingRoot(_) => "AuditUnavailableError",
            MemoryError::AgentDefinition(_) => "AgentDefinitionError",
            MemoryError::Storage { .. } => "MemoryStorageError",
            MemoryError::Config { .. } => "MemoryConfigError",
            MemoryError::Usage(_) => "UsageError",
        }
    }

    /// The stable code, used as `code` in JSON and in audit records.
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::InvalidMemoryId(_) | MemoryError::InvalidMemoryPath { .. } => "INVALID_MEMORY_ID",
            MemoryError::Unauthorized { code, .. } => code.as_str(),
            MemoryError::NotFound { .. }
            | MemoryError::TokenNotFound { .. }
            | MemoryError::VersionNotFound { .. } => "NOT_FOUND",
            MemoryError::VersionConflict { .. } => "VERSION_CONFLICT",
            MemoryError::AlreadyExists { .. } | MemoryError::NameTaken { .. } => "ALREADY_EXISTS",
            MemoryError::LimitExceeded { .. } => "LIMIT_EXCEEDED",
            MemoryError::InvalidEntry { .. } => "INVALID_ENTRY",
            MemoryError::AuditUnavailable(_) | MemoryError::MissingRoot(_) => "AUDIT_UNAVAILABLE",
            MemoryError::AgentDefinition(_) => "INVALID_AGENT_DEFINITION",
            MemoryError::Storage { .. } => "STORAGE_ERROR",
            MemoryError::Config { .. } => "INVALID_CONFIG",
            MemoryError::Usage(_) => "USAGE",
        }
    }

    /// The ID (or prefix) the error concerns, when there is one.
    pub fn id(&self) -> Option<&str> {
        match self {
            MemoryError::InvalidMemoryId(e) => Some(e.input()),
            MemoryError::InvalidMemoryPath { path, .. } => Some(path),
            MemoryError::Unauthorized { id, .. }
            | MemoryError::NotFound { id, .. }
            | MemoryError::TokenNotFound { id }
            | MemoryError::VersionNotFound { id, .. }
            | MemoryError::VersionConflict { id, .. }
            | MemoryError::AlreadyExists { id, .. }
            | MemoryError::NameTaken { id, .. } => Some(id),
            MemoryError::LimitExceeded { id, .. } => (!id.is_empty()).then_some(id.as_str()),
            MemoryError::InvalidEntry { id, .. } | MemoryError::Storage { id, .. } => id.as_deref(),
            MemoryError::AuditUnavailable(_)
            | MemoryError::MissingRoot(_)
            | MemoryError::AgentDefinition(_)
            | MemoryError::Config { .. }
            | MemoryError::Usage(_) => None,
        }
    }
}

/// The stable code of why a place is taken, used as `reason` in JSON.
pub(crate) fn exists_reason_code(reason: ExistsReason) -> &'static str {
    match reason {
        ExistsReason::SameId => "same_id",
        ExistsReason::Expired => "expired",
        ExistsReason::FileDirectoryClash => "file_directory_clash",
        ExistsReason::DuplicateKey => "duplicate_key",
        _ => "other",
    }
}

impl From<InvalidMemoryIdError> for MemoryError {
    fn from(e: InvalidMemoryIdError) -> Self {
        MemoryError::InvalidMemoryId(e)
    }
}

impl From<AgentDefinitionError> for MemoryError {
    /// A definition that could not be read for a reason of the system's (too many open files, a permission error,
    /// an I/O error) is a storage failure naming the file and the reason, never a broken definition; everything
    /// else is [`MemoryError::AgentDefinition`].
    fn from(e: AgentDefinitionError) -> Self {
        if e.is_io() {
            return MemoryError::Storage {
                id: None,
                storage_kind: Some(StorageErrorKind::Io),
                message: e.to_string(),
            };
        }
        MemoryError::AgentDefinition(e)
    }
}

impl From<StoreError> for MemoryError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { id, expired } => MemoryError::NotFound { id: id.into_string(), expired },
            // Without the actor, nothing says that it may read the entry holding the place: it is not named. The
            // service names it where it knows the actor may read it (`MemoryService::store_failure`).
            StoreError::AlreadyExists { id, existing: _, reason } => {
                MemoryError::AlreadyExists { id: id.into_string(), existing: None, reason }
            }
            StoreError::VersionConflict { id, expected, actual } => {
                MemoryError::VersionConflict { id: id.into_string(), expected, actual }
            }
            StoreError::LimitExceeded { ref scope_root, limit, count } => MemoryError::LimitExceeded {
                id: scope_root.as_str().to_owned(),
                limit,
                count,
                message: e.to_string(),
            },
            StoreError::VersionLimit { ref id, limit } => MemoryError::LimitExceeded {
                id: id.as_str().to_owned(),
                limit,
                count: limit,
                message: e.to_string(),
            },
            StoreError::VersionNotFound { ref id, version, missing } => MemoryError::VersionNotFound {
                id: id.as_str().to_owned(),
                version,
                reason: missing.as_str(),
                message: e.to_string(),
            },
            StoreError::VersionRedacted { ref id, .. } => MemoryError::InvalidEntry {
                id: Some(id.as_str().to_owned()),
                message: e.to_string(),
                line: None,
                column: None,
            },
            StoreError::RedactCurrent { .. } => MemoryError::Usage(e.to_string()),
            StoreError::Storage(ref s) => MemoryError::Storage {
                id: s.id().map(str::to_owned),
                storage_kind: Some(s.kind()),
                message: e.to_string(),
            },
            ref other => {
                MemoryError::Storage { id: other_id(other), storage_kind: None, message: other.to_string() }
            }
        }
    }
}

fn other_id(error: &StoreError) -> Option<String> {
    match error {
        StoreError::NotExpired { id } | StoreError::BatchStale { id } => Some(id.as_str().to_owned()),
        _ => None,
    }
}
