//! The sink trait and the in-memory sink.

use std::sync::{Mutex, PoisonError};

use crate::record::ChainHead;
use crate::{AuditError, AuditEvent, AuditKey, AuditRecord};

/// Somewhere audit records go. A service calls [`record`](AuditSink::record) once per call of a door, before it
/// touches the store, and fails closed when it returns an error.
pub trait AuditSink: Send + Sync {
    /// Appends `event` to the chain and returns the record written.
    ///
    /// Returns only once the record is durable (for a file: written and synced).
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the record could not be made durable, or the event cannot be recorded at all. The
    /// caller must then not perform the operation.
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError>;

    /// Checks, without recording anything, that a record could be appended now: a composition that reads the store
    /// before its first record (a prune listing expired entries, an import checking what exists) calls this first,
    /// so that with an unavailable log it fails closed before it reads anything.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when a record could not be appended.
    fn check_ready(&self) -> Result<(), AuditError>;
}

/// A sink that keeps the chain in memory, for tests and embedders that persist records themselves. It builds
/// exactly the records [`JsonlAuditSink`](crate::JsonlAuditSink) would write for the same events.
///
/// ```
/// use memory_audit::{AuditEvent, AuditOperation, AuditSink, MemoryAuditSink, Outcome};
///
/// let sink = MemoryAuditSink::new();
/// let event = AuditEvent {
///     timestamp: time::macros::datetime!(2026-11-29 22:33:13.123 UTC),
///     actor: "worker".into(),
///     operation: AuditOperation::Search,
///     door: None,
///     id: String::new(),
///     outcome: Outcome::Denied,
///     code: Some("MEMORY_NOT_GRANTED".into()),
///     grant: None,
///     shown: Vec::new(),
///     via: None,
/// };
/// sink.record(&event).unwrap();
/// assert_eq!(sink.records()[0].seq(), 1);
/// ```
#[derive(Debug, Default)]
pub struct MemoryAuditSink {
    key: Option<AuditKey>,
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditSink {
    /// An empty SHA-256 chain.
    pub fn new() -> MemoryAuditSink {
        MemoryAuditSink::default()
    }

    /// An empty HMAC-SHA256 chain under `key`.
    pub fn with_key(key: AuditKey) -> MemoryAuditSink {
        MemoryAuditSink { key: Some(key), records: Mutex::default() }
    }

    /// A copy of every record so far, in order.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.lock().clone()
    }

    /// The whole log as the JSONL file would hold it.
    pub fn to_jsonl(&self) -> String {
        self.lock().iter().map(AuditRecord::to_line).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<AuditRecord>> {
        // A panic while the lock is held cannot leave the vector half-updated: the only mutation is one push.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AuditSink for MemoryAuditSink {
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        let mut records = self.lock();
        let head = records.last().map_or_else(ChainHead::genesis, ChainHead::of);
        let record = head.seal(event, self.key.as_ref())?;
        records.push(record.clone());
        Ok(record)
    }

    /// Always ready: memory can always take another record.
    fn check_ready(&self) -> Result<(), AuditError> {
        Ok(())
    }
}

/// A sink that writes every record with `via` set to one bearer token's ID, through another sink: the HTTP server
/// wraps its sink in one per request, so each record of that request names the token it came with while the actor
/// stays the role the caller gave. Records written any other way keep no `via`.
///
/// ```
/// use memory_audit::{AuditEvent, AuditOperation, AuditSink, MemoryAuditSink, Outcome, ViaSink};
///
/// let sink = MemoryAuditSink::new();
/// let event = AuditEvent {
///     timestamp: time::macros::datetime!(2026-11-29 22:33:13.123 UTC),
///     actor: "worker".into(),
///     operation: AuditOperation::Get,
///     door: None,
///     id: "shared:team".into(),
///     outcome: Outcome::Allowed,
///     code: None,
///     grant: None,
///     shown: Vec::new(),
///     via: None,
/// };
/// ViaSink::new(&sink, "0123456789ab").record(&event).unwrap();
/// sink.record(&event).unwrap();
/// let records = sink.records();
/// assert_eq!((records[0].actor(), records[0].via()), ("worker", Some("0123456789ab")));
/// assert_eq!(records[1].via(), None);
/// ```
#[derive(Debug, Clone)]
pub struct ViaSink<S> {
    inner: S,
    via: String,
}

impl<S: AuditSink> ViaSink<S> {
    /// Writes through `inner`, every record with `via`.
    pub fn new(inner: S, via: impl Into<String>) -> ViaSink<S> {
        ViaSink { inner, via: via.into() }
    }

    /// The token ID every record carries.
    pub fn via(&self) -> &str {
        &self.via
    }
}

impl<S: AuditSink> AuditSink for ViaSink<S> {
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        let mut event = event.clone();
        event.via = Some(self.via.clone());
        self.inner.record(&event)
    }

    fn check_ready(&self) -> Result<(), AuditError> {
        self.inner.check_ready()
    }
}

impl<S: AuditSink + ?Sized> AuditSink for &S {
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        (**self).record(event)
    }

    fn check_ready(&self) -> Result<(), AuditError> {
        (**self).check_ready()
    }
}

macro_rules! forward_sink {
    ($($outer:tt)*) => {
        impl<S: AuditSink + ?Sized> AuditSink for $($outer)*<S> {
            fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
                (**self).record(event)
            }

            fn check_ready(&self) -> Result<(), AuditError> {
                (**self).check_ready()
            }
        }
    };
}

// A sink chosen at run time (a JSONL file or a database) is a `Box<dyn AuditSink>`; a shared one an `Arc`.
forward_sink!(Box);
forward_sink!(std::sync::Arc);
