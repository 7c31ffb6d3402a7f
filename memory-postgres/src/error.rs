//! Errors: opening and initialising a database ([`DatabaseOpenError`]), and how a database failure after opening
//! becomes a store error or an audit error.

use std::io;
use std::path::PathBuf;

use memory_audit::AuditError;
use memory_entry::{StorageError, StorageErrorKind, StoreError};
use tokio_postgres::error::SqlState;

/// Why a database could not be opened ([`PostgresStore::open`](crate::PostgresStore::open)) or initialised
/// ([`init`](crate::init)). Every message names the URL without its password.
///
/// For the CLI (`docs/CLI.md`, "Errors", and `docs/POSTGRESQL.md`): [`InvalidUrl`](DatabaseOpenError::InvalidUrl) and
/// [`AlreadyInitialized`](DatabaseOpenError::AlreadyInitialized) are `USAGE`; [`Settings`](DatabaseOpenError::Settings)
/// is `INVALID_CONFIG`; every other variant is `AUDIT_UNAVAILABLE` (the database cannot be used at all, like a missing
/// root).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatabaseOpenError {
    /// The URL does not parse.
    #[error("invalid PostgreSQL URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL without its password.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No connection could be made (no server, refused, authentication failed, or no answer within the connect
    /// timeout).
    #[error("cannot reach the database `{url}`: {reason}")]
    Unreachable {
        /// The URL without its password.
        url: String,
        /// Why.
        reason: String,
    },
    /// The database has no alp-memory schema: `alp init --store URL` creates it.
    #[error("the database `{url}` has no alp-memory schema; create it with `alp init --store URL`")]
    NoSchema {
        /// The URL without its password.
        url: String,
    },
    /// The schema was created by a newer alp-memory than this one.
    #[error(
        "the database `{url}` has alp-memory schema version {found}, newer than version {supported} that this \
         version of alp reads; upgrade alp"
    )]
    NewerSchema {
        /// The URL without its password.
        url: String,
        /// The schema's version.
        found: i64,
        /// [`SCHEMA_VERSION`](crate::SCHEMA_VERSION).
        supported: i64,
    },
    /// The schema was created by an older alp-memory: `alp store migrate` upgrades it in place.
    #[error(
        "the database `{url}` has alp-memory schema version {found}, older than version {supported} that this \
         version of alp reads; upgrade it with `alp store migrate`"
    )]
    OlderSchema {
        /// The URL without its password.
        url: String,
        /// The schema's version.
        found: i64,
        /// [`SCHEMA_VERSION`](crate::SCHEMA_VERSION).
        supported: i64,
    },
    /// [`init`](crate::init) found an alp-memory schema already there; it creates one only once.
    #[error("the database `{url}` already holds an alp-memory schema; `alp init` creates it only once")]
    AlreadyInitialized {
        /// The URL without its password.
        url: String,
    },
    /// The settings row is missing or holds an invalid value.
    #[error("invalid store settings in `{url}` at `{key}`: {reason}")]
    Settings {
        /// The URL without its password.
        url: String,
        /// The setting, named as in `config.yaml` (`limits.maxValueChars`, `lockTimeout`, …).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The database answered with an error while it was opened or initialised (a missing privilege, …).
    #[error("the database `{url}` failed: {reason}")]
    Backend {
        /// The URL without its password.
        url: String,
        /// The database's error.
        reason: String,
    },
}

impl DatabaseOpenError {
    /// The URL, without its password.
    pub fn url(&self) -> &str {
        match self {
            DatabaseOpenError::InvalidUrl { url, .. }
            | DatabaseOpenError::Unreachable { url, .. }
            | DatabaseOpenError::NoSchema { url }
            | DatabaseOpenError::NewerSchema { url, .. }
            | DatabaseOpenError::OlderSchema { url, .. }
            | DatabaseOpenError::AlreadyInitialized { url }
            | DatabaseOpenError::Settings { url, .. }
            | DatabaseOpenError::Backend { url, .. } => url,
        }
    }
}

/// Why a round trip failed.
#[derive(Debug)]
pub(crate) enum DbError {
    /// The server answered with an error, or the client failed.
    Pg(tokio_postgres::Error),
    /// The server did not answer within the bound (`statementTimeout`): the connection was closed.
    NoAnswer(std::time::Duration),
    /// The connection was closed or had broken earlier.
    Closed,
    /// A statement would bind more parameters than the protocol allows; nothing was sent.
    TooManyParams(usize),
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Pg(e) => f.write_str(&describe(e)),
            DbError::NoAnswer(bound) => write!(f, "no answer within {} s", bound.as_secs_f64()),
            DbError::Closed => f.write_str("the connection is closed"),
            DbError::TooManyParams(n) => write!(f, "{n} bind parameters, more than the protocol allows"),
        }
    }
}

/// A database failure after opening, classified, with a one-line message already scrubbed of secrets.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) kind: FailureKind,
    pub(crate) message: String,
}

/// What kind of database failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// A lock was not free within `lockTimeout` (SQLSTATE 55P03).
    LockTimeout,
    /// Anything else: a lost connection, a statement timeout, no connection free, an error from the server.
    Backend,
}

impl Failure {
    pub(crate) fn backend(message: impl Into<String>) -> Failure {
        Failure { kind: FailureKind::Backend, message: message.into() }
    }

    /// The store error: a lock timeout names the lock; everything else is a backend failure.
    pub(crate) fn into_store(self, name: Option<&str>) -> StoreError {
        let kind = match self.kind {
            FailureKind::LockTimeout => StorageErrorKind::LockTimeout,
            FailureKind::Backend => StorageErrorKind::Backend,
        };
        StoreError::Storage(StorageError::about(kind, name, self.message))
    }

    /// The audit error: the log is unavailable, so the caller fails closed.
    pub(crate) fn into_audit(self, url: &str, op: &'static str) -> AuditError {
        audit_error(url, op, self.message)
    }
}

/// An [`AuditError`] naming the database (its URL without the password stands where a file sink names its path).
pub(crate) fn audit_error(url: &str, op: &'static str, message: impl Into<String>) -> AuditError {
    AuditError::Io { path: PathBuf::from(url), op, source: io::Error::other(message.into()) }
}

/// Whether the connection is gone (the server stopped or restarted, the socket broke).
pub(crate) fn is_connection_lost(e: &tokio_postgres::Error) -> bool {
    e.is_closed()
        || matches!(
            e.code(),
            Some(code) if *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
        )
        || (e.as_db_error().is_none()
            && std::error::Error::source(e).is_some_and(|source| source.is::<io::Error>()))
}

/// One line describing a client error: the server's severity, code and message, or the client's error and its
/// cause (the client's own `Display` is only `db error`).
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
