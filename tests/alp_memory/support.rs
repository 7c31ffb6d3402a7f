//! Test doubles: a store and an audit sink that write to one shared journal, so a test can see what happened in
//! which order; a sink that fails; a fixed clock; the example team of actors.

use std::sync::{Arc, Mutex};

use alp_memory::memory_audit::{AuditError, AuditEvent, AuditRecord, AuditSink, MemoryAuditSink, Outcome};
use alp_memory::memory_entry::{Limits, Timestamp};
use alp_memory::memory_id::MemoryPrefix;
use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
use alp_memory::memory_store::{InMemoryStore, MemoryStore};
use alp_memory::{MemoryService, StaticActors};
use testkit::store::{Forwarding, StoreCall};

/// What happened, in order: `audit:<outcome>` and `store:<method>` lines.
pub type Journal = Arc<Mutex<Vec<String>>>;

/// A store that journals every call before delegating to another store (in memory, or PostgreSQL).
pub type RecordingStore = Forwarding<Box<dyn MemoryStore>>;

/// The journal line of a store call: `store:<method>`, with the roots of a listing (`store:list[shared,project]`).
fn store_line(call: &StoreCall<'_>) -> String {
    match call {
        StoreCall::List { listing } => {
            let names: Vec<&str> = listing.roots().iter().map(MemoryPrefix::as_str).collect();
            format!("store:list[{}]", names.join(","))
        }
        other => format!("store:{}", other.name()),
    }
}

/// A sink that journals the outcome, then records in memory; it fails (journaling `audit:FAILED`) once `fail_from`
/// records have been written.
#[derive(Debug)]
pub struct RecordingSink {
    pub inner: MemoryAuditSink,
    pub journal: Journal,
    pub fail_from: Option<usize>,
}

impl AuditSink for RecordingSink {
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        if self.fail_from.is_some_and(|n| self.inner.records().len() >= n) {
            self.journal.lock().unwrap().push("audit:FAILED".to_owned());
            return Err(AuditError::Io {
                path: "/nonexistent/audit.jsonl".into(),
                op: "write to",
                source: std::io::Error::other("disk full"),
            });
        }
        let outcome = match event.outcome {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::Error => "error",
        };
        self.journal.lock().unwrap().push(format!("audit:{outcome}"));
        self.inner.record(event)
    }

    fn check_ready(&self) -> Result<(), AuditError> {
        if self.fail_from.is_some_and(|n| self.inner.records().len() >= n) {
            self.journal.lock().unwrap().push("audit:NOT_READY".to_owned());
            return Err(AuditError::Io {
                path: "/nonexistent/audit.jsonl".into(),
                op: "write to",
                source: std::io::Error::other("disk full"),
            });
        }
        Ok(())
    }
}

pub type TestService = MemoryService<RecordingStore, RecordingSink, GrantPolicy, StaticActors>;

pub fn grants(list: &[&str]) -> Vec<Grant> {
    list.iter().map(|g| Grant::parse(g).unwrap()).collect()
}

pub fn actor(role: &str, reports_to: Option<&str>, read: &[&str], write: &[&str]) -> Actor {
    Actor::new(Role::parse(role).unwrap())
        .with_reports_to(reports_to.map(|r| Role::parse(r).unwrap()))
        .with_read(grants(read))
        .with_write(grants(write))
}

/// The team of the examples: main, worker (reports to main), reviewer (read-only), courier (writes an inbox it may
/// not read).
pub fn team() -> StaticActors {
    StaticActors::new([
        actor(
            "main",
            None,
            &["shared", "project:alp", "private:main", "private:worker"],
            &["shared", "project:alp", "private:main"],
        ),
        actor(
            "worker",
            Some("main"),
            &["shared", "project:alp", "private:worker"],
            &["project:alp:log:*", "private:worker", "shared:team:*"],
        ),
        actor("reviewer", Some("main"), &["project:alp"], &[]),
        actor(
            "courier",
            Some("main"),
            &["shared:team"],
            &["shared:inbox:*", "project:drop:*", "shared:team:*"],
        ),
    ])
}

pub fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

pub const T0: &str = "2026-11-29T12:00:00Z";

/// A service over the recording doubles, with a clock the test can move.
pub struct Harness {
    pub service: TestService,
    pub journal: Journal,
    pub clock: Arc<Mutex<Timestamp>>,
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with(Limits::default(), None)
    }

    pub fn with(limits: Limits, fail_from: Option<usize>) -> Harness {
        Harness::over(Box::new(InMemoryStore::with_limits(limits)), fail_from)
    }

    /// A harness over any store (the model-based test runs over PostgreSQL too).
    pub fn over(inner: Box<dyn MemoryStore>, fail_from: Option<usize>) -> Harness {
        let journal: Journal = Arc::default();
        let clock = Arc::new(Mutex::new(at(T0)));
        let store_journal = journal.clone();
        let store = Forwarding::new(inner)
            .before(move |_, call| store_journal.lock().unwrap().push(store_line(call)));
        let sink = RecordingSink { inner: MemoryAuditSink::new(), journal: journal.clone(), fail_from };
        let read_clock = clock.clone();
        let service = MemoryService::new(store, sink, GrantPolicy, team())
            .with_clock(move || *read_clock.lock().unwrap());
        Harness { service, journal, clock }
    }

    pub fn set_time(&self, text: &str) {
        *self.clock.lock().unwrap() = at(text);
    }

    /// Takes the journal so far.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.journal.lock().unwrap())
    }

    pub fn records(&self) -> Vec<AuditRecord> {
        self.service.audit().inner.records()
    }
}
