//! Store errors: every failure an adapter may report, with the structured fields callers need.

use memory_id::{MemoryId, MemoryPrefix};

/// Why a create found the place taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExistsReason {
    /// An entry with this ID exists.
    SameId,
    /// An entry with this ID exists but has expired; prune it first.
    Expired,
    /// The ID's file would be a directory of another entry, or the other way round (`shared:x` and `shared:x.md:y`).
    FileDirectoryClash,
    /// Another entry of the scope root holds the same (type, key, scope).
    DuplicateKey,
}

/// What kind of storage failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StorageErrorKind {
    /// The mapped path would leave the root ("memory path escapes root").
    PathEscape,
    /// A symlink at or below the root was met ("memory path symlink escape").
    SymlinkEscape,
    /// The root (or a directory below it) folds case, so two IDs could alias one file.
    CaseInsensitive,
    /// A file below the root is not what the store expects (a directory where an entry should be, …).
    Corrupt,
    /// The configuration file is invalid.
    Config,
    /// An entry file has more than one link, so it may alias another file; it is refused like a symlink.
    HardLink,
    /// A FIFO, socket or device sits at an entry's name; it is never opened for reading.
    NotRegular,
    /// An entry file is larger than `limits.maxFileBytes`; it is not read.
    TooLarge,
    /// An entry file claims a version above the largest an entry may hold.
    VersionOverCap,
    /// A lock was held by someone else for longer than `lockTimeout`.
    LockTimeout,
    /// The store's backend (a database) failed or could not be reached.
    Backend,
    /// The store does not offer this operation (yet).
    Unsupported,
    /// Any other I/O failure.
    Io,
    /// The caller gave up on the call (memory-store's `Cancel`): the store stopped reading at the next file or
    /// row.
    Cancelled,
}

/// A storage failure, with the ID involved when there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct StorageError {
    kind: StorageErrorKind,
    id: Option<String>,
    message: String,
}

impl StorageError {
    /// A new storage error. `message` is one lowercase line; for the path checks it names the check
    /// ("memory path escapes root", "memory path symlink escape").
    pub fn new(kind: StorageErrorKind, id: Option<&MemoryId>, message: impl Into<String>) -> StorageError {
        StorageError { kind, id: id.map(|id| id.as_str().to_owned()), message: message.into() }
    }

    /// A storage error about a prefix or anything else named by text.
    pub fn about(kind: StorageErrorKind, name: Option<&str>, message: impl Into<String>) -> StorageError {
        StorageError { kind, id: name.map(str::to_owned), message: message.into() }
    }

    /// What kind of failure.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
    }

    /// The ID involved, if any.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The message without the ID.
    pub fn message(&self) -> &str {
        &self.message
    }

    fn describe(&self) -> String {
        match &self.id {
            Some(id) => format!("{} for `{}`", self.message, memory_id::shown(id)),
            None => self.message.clone(),
        }
    }
}

/// Everything a store (memory-store's `MemoryStore`) may fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No entry with this ID, or it has expired.
    #[error("{}", if *expired {
        format!("memory entry `{id}` has expired; it is no longer visible (prune removes it)")
    } else {
        format!("memory entry `{id}` not found")
    })]
    NotFound {
        /// The ID asked for.
        id: MemoryId,
        /// Whether an entry exists but has expired.
        expired: bool,
    },
    /// A create found the place taken; a create never overwrites.
    #[error("{}", describe_exists(id, existing, *reason))]
    AlreadyExists {
        /// The ID that was to be created (or updated, for a duplicate key).
        id: MemoryId,
        /// The entry that holds the place. The store names it whoever asked: a caller that reports this error to an
        /// actor names it only when that actor may read it (the facade's service does so).
        existing: String,
        /// Why the place is taken.
        reason: ExistsReason,
    },
    /// `expectedVersion` did not match.
    #[error("version conflict on `{id}`: expected version {expected}, the entry is at version {actual}")]
    VersionConflict {
        /// The entry.
        id: MemoryId,
        /// The version the caller expected.
        expected: u64,
        /// The version stored.
        actual: u64,
    },
    /// The scope root already holds the maximum number of entries (expired ones count until pruned).
    #[error(
        "scope root `{scope_root}` holds {count} entries, the limit is {limit}; prune expired entries or remove some"
    )]
    LimitExceeded {
        /// The scope root (`shared`, `project:<id>`, `private:<role>`).
        scope_root: MemoryPrefix,
        /// The configured maximum.
        limit: u64,
        /// Entries already in the scope root.
        count: u64,
    },
    /// The entry is at [`MAX_VERSION`](crate::MAX_VERSION): another update would take it past the largest
    /// version JavaScript runtimes read exactly, so it is refused rather than wrapped.
    #[error(
        "memory entry `{id}` is at version {limit}, the largest version an entry may reach; create a new entry"
    )]
    VersionLimit {
        /// The entry.
        id: MemoryId,
        /// [`MAX_VERSION`](crate::MAX_VERSION).
        limit: u64,
    },
    /// A batch (an import) found the store changed since it was planned: nothing of it was written.
    #[error("memory entry `{id}` changed since the batch was planned; nothing was written, run it again")]
    BatchStale {
        /// The first entry found changed.
        id: MemoryId,
    },
    /// A delete of expired entries found this one live (it was renewed or re-created meanwhile).
    #[error("memory entry `{id}` has not expired")]
    NotExpired {
        /// The entry.
        id: MemoryId,
    },
    /// A version of an ID that cannot be read: never written, no longer kept, or a tombstone.
    #[error("{}", describe_missing(id, *version, *missing))]
    VersionNotFound {
        /// The ID.
        id: MemoryId,
        /// The version asked for.
        version: u64,
        /// Why it cannot be read.
        missing: crate::VersionMissing,
    },
    /// A restore of a version whose content was redacted: there is nothing to restore.
    #[error("version {version} of `{id}` was redacted; its content is gone and it cannot be restored")]
    VersionRedacted {
        /// The ID.
        id: MemoryId,
        /// The redacted version.
        version: u64,
    },
    /// A redaction of the version an entry is at now: update the entry first.
    #[error(
        "version {version} is the current version of `{id}` and cannot be redacted; update the entry first, then redact version {version}"
    )]
    RedactCurrent {
        /// The ID.
        id: MemoryId,
        /// Its current version.
        version: u64,
    },
    /// A write whose content or fields come from the store (a restore) breaks a limit or rule in force now.
    #[error("{error}")]
    Field {
        /// The ID.
        id: MemoryId,
        /// What is wrong.
        error: crate::EntryFieldError,
    },
    /// Any storage failure, including refused symlinks and paths outside the root.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

fn describe_missing(id: &MemoryId, version: u64, missing: crate::VersionMissing) -> String {
    match missing {
        crate::VersionMissing::NeverWritten => format!("memory entry `{id}` never had version {version}"),
        crate::VersionMissing::NoLongerKept => format!(
            "version {version} of `{id}` is no longer kept (history.keepVersions dropped it); `alp memory history` lists what is kept"
        ),
        crate::VersionMissing::Tombstone => {
            format!(
                "version {version} of `{id}` is a tombstone: the entry was deleted there and has no content"
            )
        }
    }
}

fn describe_exists(id: &MemoryId, existing: &str, reason: ExistsReason) -> String {
    match reason {
        ExistsReason::SameId => format!("memory entry `{id}` already exists; a create never overwrites"),
        ExistsReason::Expired => {
            format!("memory entry `{id}` already exists but has expired; prune it before creating it again")
        }
        ExistsReason::FileDirectoryClash => {
            format!("memory entry `{id}` clashes with `{existing}`: one would be the other's directory")
        }
        ExistsReason::DuplicateKey => {
            format!("memory entry `{existing}` already holds the same type, key and scope as `{id}`")
        }
    }
}
