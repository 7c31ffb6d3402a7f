//! The service's errors: stable names (`kind`), stable codes and the CLI's exit statuses.

use memory_id::InvalidMemoryIdError;
use memory_policy::{AgentDefinitionError, DenyCode, Operation};
use memory_store::{ExistsReason, StorageErrorKind, StoreError};

/// Every way a memory call can fail. [`MemoryError::kind`], [`MemoryError::code`] and [`MemoryError::exit_code`]
/// are a contract: runtimes parse them.
///
/// | kind | code | exit |
/// |---|---|---|
/// | `InvalidMemoryIdError` | `INVALID_MEMORY_ID` | 3 |
/// | `UnauthorizedMemoryAccessError` | `MEMORY_NOT_GRANTED` or `PRIVATE_MEMORY_DENIED` | 4 |
/// | `MemoryEntryNotFoundError` | `NOT_FOUND` | 5 |
/// | `MemoryVersionConflictError` | `VERSION_CONFLICT` | 6 |
/// | `MemoryEntryAlreadyExistsError` | `ALREADY_EXISTS` | 7 |
/// | `MemoryLimitExceededError` | `LIMIT_EXCEEDED` | 8 |
/// | `InvalidMemoryEntryError` | `INVALID_ENTRY` | 8 |
/// | `AuditUnavailableError` | `AUDIT_UNAVAILABLE` | 9 |
/// | `AgentDefinitionError` | `INVALID_AGENT_DEFINITION` | 2 |
/// | `MemoryStorageError` | `STORAGE_ERROR` | 1 |
/// | `UsageError` | `USAGE` | 2 |
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The ID or prefix is not a valid logical ID.
    #[error("{0}; an id looks like `shared:<name>`, `project:<project>:<name>` or `private:<role>:<name>`")]
    InvalidMemoryId(InvalidMemoryIdError),
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
    /// `expectedVersion` did not match.
    #[error(
        "version conflict on `{id}`: expected version {expected} but it is at version {actual}; get it again and retry with --expected-version {actual}"
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
    #[error("{}", already_exists_message(id, existing, *reason))]
    AlreadyExists {
        /// The ID to create or update.
        id: String,
        /// The entry that holds the place.
        existing: String,
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
    /// The audit log could not record the call; nothing was read or written.
    #[error("audit log unavailable, nothing was read or written: {0}")]
    AuditUnavailable(String),
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
    /// A malformed command line or request.
    #[error("{0}")]
    Usage(String),
}

fn denied_message(actor: &str, operation: Operation, id: &str, code: DenyCode) -> String {
    let target = if id.is_empty() { "any memory".to_owned() } else { format!("`{id}`") };
    format!("access denied: role `{actor}` may not {operation} {target} ({code}){}", hint(code))
}

fn hint(code: DenyCode) -> &'static str {
    match code {
        DenyCode::MemoryNotGranted => "; add a covering grant to the role's agent definition",
        DenyCode::PrivateMemoryDenied => {
            "; another role's private memory is never readable, share it through shared or project memory"
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

fn already_exists_message(id: &str, existing: &str, reason: ExistsReason) -> String {
    match reason {
        ExistsReason::Expired => format!(
            "memory entry `{id}` already exists but has expired; run `alp memory prune` before creating it again"
        ),
        ExistsReason::FileDirectoryClash => {
            format!(
                "memory entry `{id}` clashes with `{existing}` on disk (one would be the other's directory)"
            )
        }
        ExistsReason::DuplicateKey => {
            format!(
                "memory entry `{existing}` already holds the same type, key and scope as `{id}`; update it instead"
            )
        }
        _ => {
            format!("memory entry `{id}` already exists; a create never overwrites, use `alp memory update`")
        }
    }
}

impl MemoryError {
    /// The stable error name, used as `kind` in CLI JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            MemoryError::InvalidMemoryId(_) => "InvalidMemoryIdError",
            MemoryError::Unauthorized { .. } => "UnauthorizedMemoryAccessError",
            MemoryError::NotFound { .. } => "MemoryEntryNotFoundError",
            MemoryError::VersionConflict { .. } => "MemoryVersionConflictError",
            MemoryError::AlreadyExists { .. } => "MemoryEntryAlreadyExistsError",
            MemoryError::LimitExceeded { .. } => "MemoryLimitExceededError",
            MemoryError::InvalidEntry { .. } => "InvalidMemoryEntryError",
            MemoryError::AuditUnavailable(_) => "AuditUnavailableError",
            MemoryError::AgentDefinition(_) => "AgentDefinitionError",
            MemoryError::Storage { .. } => "MemoryStorageError",
            MemoryError::Usage(_) => "UsageError",
        }
    }

    /// The stable code, used as `code` in CLI JSON and in audit records.
    pub fn code(&self) -> &'static str {
        match self {
            MemoryError::InvalidMemoryId(_) => "INVALID_MEMORY_ID",
            MemoryError::Unauthorized { code, .. } => code.as_str(),
            MemoryError::NotFound { .. } => "NOT_FOUND",
            MemoryError::VersionConflict { .. } => "VERSION_CONFLICT",
            MemoryError::AlreadyExists { .. } => "ALREADY_EXISTS",
            MemoryError::LimitExceeded { .. } => "LIMIT_EXCEEDED",
            MemoryError::InvalidEntry { .. } => "INVALID_ENTRY",
            MemoryError::AuditUnavailable(_) => "AUDIT_UNAVAILABLE",
            MemoryError::AgentDefinition(_) => "INVALID_AGENT_DEFINITION",
            MemoryError::Storage { .. } => "STORAGE_ERROR",
            MemoryError::Usage(_) => "USAGE",
        }
    }

    /// The CLI's exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            MemoryError::Storage { .. } => 1,
            MemoryError::Usage(_) | MemoryError::AgentDefinition(_) => 2,
            MemoryError::InvalidMemoryId(_) => 3,
            MemoryError::Unauthorized { .. } => 4,
            MemoryError::NotFound { .. } => 5,
            MemoryError::VersionConflict { .. } => 6,
            MemoryError::AlreadyExists { .. } => 7,
            MemoryError::LimitExceeded { .. } | MemoryError::InvalidEntry { .. } => 8,
            MemoryError::AuditUnavailable(_) => 9,
        }
    }

    /// The ID (or prefix) the error concerns, when there is one.
    pub fn id(&self) -> Option<&str> {
        match self {
            MemoryError::InvalidMemoryId(e) => Some(e.input()),
            MemoryError::Unauthorized { id, .. }
            | MemoryError::NotFound { id, .. }
            | MemoryError::VersionConflict { id, .. }
            | MemoryError::AlreadyExists { id, .. }
            | MemoryError::LimitExceeded { id, .. } => Some(id),
            MemoryError::InvalidEntry { id, .. } | MemoryError::Storage { id, .. } => id.as_deref(),
            MemoryError::AuditUnavailable(_) | MemoryError::AgentDefinition(_) | MemoryError::Usage(_) => {
                None
            }
        }
    }

    /// The error as the CLI's JSON object: `{"kind","code","message", …}` with `id`, `expected`, `actual`,
    /// `limit`, `count`, `line`, `column` where they apply (and `reason`, `existing`, `expired`, `file`, `grant`
    /// as extra detail).
    pub fn to_json(&self) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        object.insert("kind".into(), self.kind().into());
        object.insert("code".into(), self.code().into());
        object.insert("message".into(), self.to_string().into());
        if let Some(id) = self.id() {
            object.insert("id".into(), id.into());
        }
        match self {
            MemoryError::InvalidMemoryId(e) => {
                object.insert("reason".into(), e.reason().code().into());
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
            _ => {}
        }
        serde_json::Value::Object(object)
    }
}

fn exists_reason_code(reason: ExistsReason) -> &'static str {
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
    fn from(e: AgentDefinitionError) -> Self {
        MemoryError::AgentDefinition(e)
    }
}

impl From<StoreError> for MemoryError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { id, expired } => MemoryError::NotFound { id: id.into_string(), expired },
            StoreError::AlreadyExists { id, existing, reason } => {
                MemoryError::AlreadyExists { id: id.into_string(), existing, reason }
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
            StoreError::NotExpired { ref id } => MemoryError::Storage {
                id: Some(id.as_str().to_owned()),
                storage_kind: None,
                message: e.to_string(),
            },
            StoreError::Storage(ref s) => MemoryError::Storage {
                id: s.id().map(str::to_owned),
                storage_kind: Some(s.kind()),
                message: e.to_string(),
            },
            other => MemoryError::Storage { id: None, storage_kind: None, message: other.to_string() },
        }
    }
}
