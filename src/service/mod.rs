//! `MemoryService`: five doors, one gate.
//!
//! - `gate.rs`: the gate every door goes through (parse, resolve the role, authorize, audit, fail closed);
//! - `requests.rs`: what callers ask, and where the service finds roles and time;
//! - `doors.rs`: the five doors (`get`, `create`, `update`, `delete`, `search`) and `rename`;
//! - `compose.rs`: compositions on the doors (`list`, `context`, `prune`);
//! - `written.rs`: what a write answers, by the actor's read grant;
//! - `inspect.rs`: the operator's reads of `alp inspect` (actor `""`, no policy).

use std::borrow::Borrow;

use memory_audit::AuditSink;
use memory_entry::{MemoryEntry, Timestamp};
use memory_id::MemoryId;
use memory_policy::{GrantPolicy, PolicyEngine};
use memory_ranker::RankItem;
use memory_store::MemoryStore;

mod compose;
mod doors;
mod gate;
mod history;
mod inspect;
mod requests;
mod written;

pub(crate) use gate::{Call, Reading, field_error, receipt};
pub use inspect::Survey;
pub use requests::{
    ActorSource, AgentDirectory, Clock, ContextRequest, CreateRequest, FieldInput, ListRequest,
    MAX_ANSWER_ENTRIES, MAX_FILTER_CHARS, MAX_QUERY_CHARS, MAX_QUERY_TERMS, Page, QueryTerms, SearchRequest,
    StaticActors, SystemClock, UpdateRequest, check_filter, check_limit, check_query,
};
pub use written::Written;

/// The memory service: exactly five doors (`search`, `get`, `create`, `update`, `delete`) and the compositions built
/// on them (`list`, `context`, `prune`, `rename`, `import`, `export`).
///
/// Every door does, in this order: parse the ID (or prefix); resolve the acting role and authorize through the
/// policy engine (get/search read, create/update/delete write); validate the entry fields it was given. A refusal
/// (`denied` with the deny code, `error` with the error code) is audited before anything is read. A write is audited
/// `allowed` and only then touches the store. A read touches the store, then writes its one `allowed` record with
/// the receipt of what the answer discloses (`shown`: every `<id>@<version>` it holds), and only then answers. If the
/// audit sink cannot record, the call fails with [`MemoryError::AuditUnavailable`](crate::MemoryError::AuditUnavailable):
/// a write writes nothing, a read answers nothing. Each door call writes exactly one audit record.
///
/// The store and the sink may be chosen at run time: `MemoryService<Box<dyn MemoryStore>, Box<dyn AuditSink>>`.
///
/// ```
/// use alp_memory::{CreateRequest, FieldInput, MemoryService, StaticActors};
/// use alp_memory::memory_audit::MemoryAuditSink;
/// use alp_memory::memory_entry::FieldName;
/// use alp_memory::memory_store::InMemoryStore;
/// use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
///
/// let worker = Actor::new(Role::parse("worker").unwrap())
///     .with_read([Grant::parse("shared").unwrap()])
///     .with_write([Grant::parse("shared:team:*").unwrap()]);
/// let service = MemoryService::new(InMemoryStore::new(), MemoryAuditSink::new(), GrantPolicy, StaticActors::new([worker]));
///
/// let created = service.create("worker", CreateRequest {
///     id: "shared:team:onboarding".into(),
///     content: "Read the README first.".into(),
///     fields: FieldInput::new().with(FieldName::Kind, "fact"),
/// }).unwrap();
/// assert_eq!(created.version, 1);
///
/// let denied = service.get("worker", "private:main:drafts").unwrap_err();
/// assert_eq!(denied.code(), "PRIVATE_MEMORY_DENIED");
/// assert_eq!(service.audit().records().len(), 2); // one record per call, the denial included
/// ```
pub struct MemoryService<S, A, P = GrantPolicy, R = AgentDirectory> {
    store: S,
    audit: A,
    policy: P,
    actors: R,
    clock: Box<dyn Clock>,
}

impl<S, A, P, R> std::fmt::Debug for MemoryService<S, A, P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryService").finish_non_exhaustive()
    }
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// A service over `store`, recording to `audit`, judging with `policy`, finding roles in `actors`.
    pub fn new(store: S, audit: A, policy: P, actors: R) -> Self {
        MemoryService { store, audit, policy, actors, clock: Box::new(SystemClock) }
    }

    /// Replaces the clock (tests use a fixed one).
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The audit sink.
    pub fn audit(&self) -> &A {
        &self.audit
    }

    /// The policy engine.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The actor source.
    pub fn actors(&self) -> &R {
        &self.actors
    }

    /// The current instant, from the service's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

/// What a prune deleted, as its actor may be told.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pruned {
    /// The deleted entries the actor may read, in ascending order.
    pub ids: Vec<MemoryId>,
    /// How many deleted entries the actor may not read (their IDs are not answered).
    pub withheld: usize,
}

/// Lets the ranker and the read plan order stored entries, owned or borrowed.
pub(crate) struct Rankable<E>(pub(crate) E);

impl<E: Borrow<MemoryEntry>> Rankable<E> {
    fn entry(&self) -> &MemoryEntry {
        self.0.borrow()
    }
}

impl<E: Borrow<MemoryEntry>> RankItem for Rankable<E> {
    fn id(&self) -> &str {
        self.entry().id.as_str()
    }

    fn content(&self) -> &str {
        &self.entry().content
    }

    fn updated_at(&self) -> i128 {
        self.entry().updated_at.unix_nanos()
    }
}

impl<E: Borrow<MemoryEntry>> memory_context::PlanItem for Rankable<E> {
    fn scope_ref(&self) -> Option<&str> {
        self.entry().fields.scope.as_ref().map(memory_entry::ScopeRef::as_str)
    }

    fn memory_type(&self) -> Option<&str> {
        self.entry().fields.memory_type.map(memory_entry::MemoryType::as_str)
    }

    fn key(&self) -> Option<&str> {
        self.entry().fields.key.as_ref().map(memory_entry::Key::as_str)
    }

    fn is_critical(&self) -> bool {
        self.entry().fields.importance == memory_entry::Importance::Critical
    }
}
