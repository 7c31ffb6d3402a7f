//! `MemoryService`: five doors, one gate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memory_audit::{AuditEvent, AuditOperation, AuditSink, Outcome};
use memory_context::{MemoryContext, PlanItem, PlanTarget, build_memory_context, plan_read};
use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, AgentDefinitionError, Decision, GrantPolicy, Operation, PolicyEngine,
    SubtreeDecision, load_agent,
};
use memory_ranker::{DeterministicContextRanker, RankItem};
use memory_store::{
    EntryFieldError, EntryPatch, ExpiryFilter, FieldLimitError, Importance, Kind, ListQuery, MemoryEntry,
    MemoryStore, MemoryType, NewEntry, StoreError, Timestamp, Ttl,
};

use crate::MemoryError;

thread_local! {
    /// One folding buffer per listing thread, reused for every entry it scores.
    static FOLD_BUFFER: std::cell::RefCell<memory_ranker::FoldBuffer> =
        std::cell::RefCell::new(memory_ranker::FoldBuffer::new());
}

/// Where the service reads the time, once per call. Tests inject a fixed clock to check expiry.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

impl<F: Fn() -> Timestamp + Send + Sync> Clock for F {
    fn now(&self) -> Timestamp {
        self()
    }
}

/// Where the service finds a role's grants. The caller names the acting role; the source says what it may do.
pub trait ActorSource: Send + Sync {
    /// The actor for `role`.
    ///
    /// # Errors
    ///
    /// [`AgentDefinitionError`] for an unknown role or a broken definition.
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError>;
}

/// Agent definitions in a directory, `<dir>/<role>.yaml`, read on every call (so an edited definition takes effect
/// at once).
#[derive(Debug, Clone)]
pub struct AgentDirectory {
    dir: PathBuf,
}

impl AgentDirectory {
    /// Definitions in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> AgentDirectory {
        AgentDirectory { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl ActorSource for AgentDirectory {
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError> {
        load_agent(&self.dir, role)
    }
}

/// A fixed set of actors, for tests and embedders that keep definitions elsewhere.
#[derive(Debug, Clone, Default)]
pub struct StaticActors {
    actors: BTreeMap<String, Actor>,
}

impl StaticActors {
    /// The given actors, by role.
    pub fn new(actors: impl IntoIterator<Item = Actor>) -> StaticActors {
        StaticActors { actors: actors.into_iter().map(|a| (a.role().as_str().to_owned(), a)).collect() }
    }
}

impl ActorSource for StaticActors {
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError> {
        self.actors
            .get(role)
            .cloned()
            .ok_or_else(|| AgentDefinitionError::unknown_role(role, Path::new("<static actors>")))
    }
}

/// Entry fields exactly as a caller gave them; the service validates them after authorization (a malformed value is
/// [`MemoryError::InvalidEntry`], a value over a limit [`MemoryError::LimitExceeded`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryFields {
    /// `fact`, `decision`, `reference`, `log` or `draft`.
    pub kind: Option<String>,
    /// One of the ten ALP 80 types.
    pub memory_type: Option<String>,
    /// The lookup key.
    pub key: Option<String>,
    /// `critical`, `high`, `medium` or `low`.
    pub importance: Option<String>,
    /// What created the entry.
    pub source: Option<String>,
    /// The feature or task the entry is scoped to.
    pub scope: Option<String>,
    /// A duration such as `90d`.
    pub ttl: Option<String>,
}

/// A create: the ID, the content and optional fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    /// The ID as given.
    pub id: String,
    /// The text.
    pub content: String,
    /// Optional fields.
    pub fields: EntryFields,
}

/// An optional field an update may remove (`kind` and `importance` return to their defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClearField {
    /// Back to `reference`.
    Kind,
    /// Remove the type.
    Type,
    /// Remove the key.
    Key,
    /// Back to `medium`.
    Importance,
    /// Remove the source.
    Source,
    /// Remove the scope reference.
    Scope,
    /// Remove the TTL.
    Ttl,
}

impl ClearField {
    /// Every clearable field.
    pub const ALL: [ClearField; 7] = [
        ClearField::Kind,
        ClearField::Type,
        ClearField::Key,
        ClearField::Importance,
        ClearField::Source,
        ClearField::Scope,
        ClearField::Ttl,
    ];

    /// The field's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ClearField::Kind => "kind",
            ClearField::Type => "type",
            ClearField::Key => "key",
            ClearField::Importance => "importance",
            ClearField::Source => "source",
            ClearField::Scope => "scope",
            ClearField::Ttl => "ttl",
        }
    }

    /// The field named `name`.
    pub fn parse(name: &str) -> Option<ClearField> {
        ClearField::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// An update: changes only the fields given, clears the ones listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRequest {
    /// The ID as given.
    pub id: String,
    /// The version the caller read; a mismatch is a version conflict.
    pub expected_version: u64,
    /// New content, if any.
    pub content: Option<String>,
    /// Fields to set.
    pub fields: EntryFields,
    /// Fields to remove.
    pub clear: Vec<ClearField>,
}

/// Filters of a search; every set field must match exactly. (Typed: a malformed filter value is a usage error of
/// the caller, not of the service.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchFilter {
    /// Only this kind.
    pub kind: Option<Kind>,
    /// Only this type.
    pub memory_type: Option<MemoryType>,
    /// Only this importance.
    pub importance: Option<Importance>,
    /// Only this key.
    pub key: Option<String>,
    /// Only this source.
    pub source: Option<String>,
    /// Only this scope reference.
    pub scope: Option<String>,
}

/// A search: query terms, an optional prefix, filters and an optional limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchRequest {
    /// Whitespace-separated terms; empty matches everything.
    pub query: String,
    /// The subtree to search, as given; `None` searches everything the actor may read.
    pub prefix: Option<String>,
    /// Exact-match filters.
    pub filter: SearchFilter,
    /// At most this many results; `None` returns all.
    pub limit: Option<usize>,
}

/// An entry with its search score.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredEntry {
    /// The entry.
    pub entry: MemoryEntry,
    /// How many distinct query terms it contains.
    pub score: usize,
}

/// A context build: query terms, a character budget, an optional prefix, and an optional task/feature plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextRequest {
    /// Whitespace-separated terms. Without a plan they select and order entries; with one they only order.
    pub query: String,
    /// The most characters (Unicode scalar values) the context text may hold.
    pub budget: usize,
    /// The subtree to draw from, as given; `None` draws from everything the actor may read.
    pub prefix: Option<String>,
    /// Plan for this task: entries scoped to it, to its feature, unscoped ones and critical ones.
    pub task: Option<String>,
    /// The task's feature; without a task, plan for this feature alone.
    pub feature: Option<String>,
}

/// Lets the ranker order stored entries.
pub(crate) struct Rankable<'a>(pub(crate) &'a MemoryEntry);

impl RankItem for Rankable<'_> {
    fn id(&self) -> &str {
        self.0.id.as_str()
    }

    fn content(&self) -> &str {
        &self.0.content
    }

    fn updated_at(&self) -> i128 {
        self.0.updated_at.unix_nanos()
    }
}

impl PlanItem for Rankable<'_> {
    fn scope_ref(&self) -> Option<&str> {
        self.0.scope.as_deref()
    }

    fn memory_type(&self) -> Option<&str> {
        self.0.memory_type.map(MemoryType::as_str)
    }

    fn key(&self) -> Option<&str> {
        self.0.key.as_deref()
    }

    fn is_critical(&self) -> bool {
        self.0.importance == Importance::Critical
    }
}

/// One call at the gate: who, which door, the ID as given, and the instant.
pub(crate) struct Call<'a> {
    pub(crate) role: &'a str,
    pub(crate) operation: AuditOperation,
    pub(crate) id: &'a str,
    pub(crate) now: Timestamp,
}

/// The memory service: exactly five doors (`search`, `get`, `create`, `update`, `delete`) and the compositions built
/// on them (`prune`, `context`, `import`, `export`).
///
/// Every door does, in this order: parse the ID (or prefix); resolve the acting role and authorize through the
/// policy engine (get/search read, create/update/delete write); validate the entry fields it was given; audit the
/// outcome (`allowed`, `denied` with the deny code, or `error` with the error code); and only after an `allowed`
/// record is durable, touch the store. If the audit sink cannot record, the call fails with
/// [`MemoryError::AuditUnavailable`] and nothing is read or written. Each door call writes exactly one audit record.
///
/// ```
/// use alp_memory::{CreateRequest, EntryFields, MemoryService, StaticActors};
/// use alp_memory::memory_audit::MemoryAuditSink;
/// use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
/// use alp_memory::memory_store::InMemoryStore;
///
/// let worker = Actor::new(Role::parse("worker").unwrap())
///     .with_read([Grant::parse("shared").unwrap()])
///     .with_write([Grant::parse("shared:team:*").unwrap()]);
/// let service = MemoryService::new(InMemoryStore::new(), MemoryAuditSink::new(), GrantPolicy, StaticActors::new([worker]));
///
/// let created = service.create("worker", CreateRequest {
///     id: "shared:team:onboarding".into(),
///     content: "Read the README first.".into(),
///     fields: EntryFields::default(),
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

    pub(crate) fn call<'a>(&self, role: &'a str, operation: AuditOperation, id: &'a str) -> Call<'a> {
        Call { role, operation, id, now: self.clock.now() }
    }

    /// Writes one audit record for `call`. Any failure of the sink becomes `AuditUnavailable`.
    pub(crate) fn record(
        &self,
        call: &Call<'_>,
        outcome: Outcome,
        code: Option<&str>,
    ) -> Result<(), MemoryError> {
        let event = AuditEvent {
            timestamp: call.now.as_offset_date_time(),
            actor: call.role.to_owned(),
            operation: call.operation,
            id: call.id.to_owned(),
            outcome,
            code: code.map(str::to_owned),
        };
        self.audit.record(&event).map(|_| ()).map_err(|e| MemoryError::AuditUnavailable(e.to_string()))
    }

    /// Audits a refusal (denied or error) and returns the error to report: the refusal itself, or
    /// `AuditUnavailable` when the refusal could not be recorded.
    pub(crate) fn refuse(&self, call: &Call<'_>, error: MemoryError) -> MemoryError {
        let outcome = match error {
            MemoryError::Unauthorized { .. } => Outcome::Denied,
            _ => Outcome::Error,
        };
        match self.record(call, outcome, Some(error.code())) {
            Ok(()) => error,
            Err(unavailable) => unavailable,
        }
    }

    pub(crate) fn parse_id(&self, call: &Call<'_>) -> Result<MemoryId, MemoryError> {
        parse_memory_id(call.id).map_err(|e| self.refuse(call, e.into()))
    }

    pub(crate) fn parse_prefix(
        &self,
        call: &Call<'_>,
        prefix: Option<&str>,
    ) -> Result<Option<MemoryPrefix>, MemoryError> {
        prefix.map(MemoryPrefix::parse).transpose().map_err(|e| self.refuse(call, e.into()))
    }

    pub(crate) fn resolve(&self, call: &Call<'_>) -> Result<Actor, MemoryError> {
        self.actors.actor(call.role).map_err(|e| self.refuse(call, e.into()))
    }

    pub(crate) fn authorize(
        &self,
        call: &Call<'_>,
        actor: &Actor,
        operation: Operation,
        id: &MemoryId,
    ) -> Result<(), MemoryError> {
        match self.policy.authorize(&AccessRequest { actor, operation, id }) {
            Decision::Allow => Ok(()),
            Decision::Deny(code) => Err(self.refuse(call, self.denial(call, operation, code))),
        }
    }

    pub(crate) fn authorize_subtree(
        &self,
        call: &Call<'_>,
        actor: &Actor,
        operation: Operation,
        prefix: Option<&MemoryPrefix>,
    ) -> Result<Vec<MemoryPrefix>, MemoryError> {
        match self.policy.authorize_subtree(actor, operation, prefix) {
            SubtreeDecision::Allow { roots } => Ok(roots),
            SubtreeDecision::Deny(code) => Err(self.refuse(call, self.denial(call, operation, code))),
        }
    }

    fn denial(&self, call: &Call<'_>, operation: Operation, code: memory_policy::DenyCode) -> MemoryError {
        MemoryError::Unauthorized { id: call.id.to_owned(), actor: call.role.to_owned(), operation, code }
    }

    /// Fails closed unless the audit sink could append a record now: for compositions that read the store before
    /// their first record.
    pub(crate) fn ready(&self) -> Result<(), MemoryError> {
        self.audit.check_ready().map_err(|e| MemoryError::AuditUnavailable(e.to_string()))
    }

    /// Records `allowed`: after this, and only after this, the store may be touched.
    pub(crate) fn allow(&self, call: &Call<'_>) -> Result<(), MemoryError> {
        self.record(call, Outcome::Allowed, None)
    }

    /// Whether `actor` may `operation` `id` (no audit): used to filter listings.
    pub(crate) fn permits(&self, actor: &Actor, operation: Operation, id: &MemoryId) -> bool {
        self.policy.authorize(&AccessRequest { actor, operation, id }) == Decision::Allow
    }

    /// Door: reads one live entry.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, audit unavailable, then the store's not found.
    pub fn get(&self, role: &str, id: &str) -> Result<MemoryEntry, MemoryError> {
        let call = self.call(role, AuditOperation::Get, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Read, &id)?;
        self.allow(&call)?;
        self.store.get(&id, call.now).map_err(MemoryError::from)
    }

    /// Door: creates an entry at version 1. A create never overwrites.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, invalid entry fields or a value/TTL over its limit,
    /// audit unavailable, then the store's already exists and entry-count limit.
    pub fn create(&self, role: &str, request: CreateRequest) -> Result<MemoryEntry, MemoryError> {
        let call = self.call(role, AuditOperation::Create, &request.id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        let new = new_entry(id.clone(), request.content.clone(), &request.fields)
            .and_then(|new| {
                new.validate(self.store.limits(), call.now).map(|()| new).map_err(|e| field_error(&id, e))
            })
            .map_err(|e| self.refuse(&call, e))?;
        self.allow(&call)?;
        self.store.create(new, call.now).map_err(|e| store_error(&id, e))
    }

    /// Door: applies an update if the entry is at `expected_version`.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, invalid fields or a value/TTL over its limit,
    /// audit unavailable, then the store's not found, version conflict and already exists (a duplicate key).
    pub fn update(&self, role: &str, request: UpdateRequest) -> Result<MemoryEntry, MemoryError> {
        let call = self.call(role, AuditOperation::Update, &request.id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        let patch = entry_patch(&id, &request)
            .and_then(|patch| {
                patch.validate(self.store.limits(), call.now).map(|()| patch).map_err(|e| field_error(&id, e))
            })
            .map_err(|e| self.refuse(&call, e))?;
        self.allow(&call)?;
        self.store.update(&id, request.expected_version, &patch, call.now).map_err(|e| store_error(&id, e))
    }

    /// Door: deletes the entry if it is at `expected_version`.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, audit unavailable, then the store's not found and
    /// version conflict.
    pub fn delete(&self, role: &str, id: &str, expected_version: u64) -> Result<(), MemoryError> {
        let call = self.call(role, AuditOperation::Delete, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        self.allow(&call)?;
        self.store.delete(&id, expected_version, call.now).map_err(|e| store_error(&id, e))
    }

    /// Door: the live entries the actor may read, inside the prefix, matching the filters, in rank order.
    ///
    /// The store is asked to list only inside the subtrees the policy names, so an ungranted subtree is never
    /// opened, and every result is checked again against the policy.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid prefix, agent definition, denial (`PRIVATE_MEMORY_DENIED` for a prefix in
    /// another role's private memory, `MEMORY_NOT_GRANTED` when no read grant overlaps), audit unavailable, storage.
    pub fn search(&self, role: &str, request: &SearchRequest) -> Result<Vec<ScoredEntry>, MemoryError> {
        let ranker = DeterministicContextRanker::new(&request.query);
        let scorer = ranker.scorer();
        // Scored in the store's listing threads, so entries that match no term are dropped at once.
        let matches = |entry: &MemoryEntry| {
            ranker.query().is_empty()
                || FOLD_BUFFER.with(|buffer| {
                    let score = scorer.score(entry.id.as_str(), &entry.content, &mut buffer.borrow_mut());
                    scorer.keeps(score)
                })
        };
        let (entries, _actor) =
            self.readable(role, request.prefix.as_deref(), &list_query(&request.filter), &matches)?;
        let ranked = ranker.rank(entries.iter().map(Rankable));
        let limit = request.limit.unwrap_or(usize::MAX);
        Ok(ranked
            .into_iter()
            .take(limit)
            .map(|r| ScoredEntry { score: r.score(), entry: r.into_item().0.clone() })
            .collect())
    }

    /// Builds context for an agent under a character budget: one search (one `search` audit record), then either
    /// the ranked entries (terms select and order) or, with a task or feature, the read plan of DESIGN.md §6 (terms
    /// order but never drop), then whole entries while they fit. The diagnostics list every candidate left out.
    ///
    /// # Errors
    ///
    /// As [`MemoryService::search`].
    pub fn context(&self, role: &str, request: &ContextRequest) -> Result<MemoryContext, MemoryError> {
        let (entries, _actor) =
            self.readable(role, request.prefix.as_deref(), &ListQuery::default(), &|_| true)?;
        let ranker = DeterministicContextRanker::new(&request.query);
        let items = entries.iter().map(Rankable);
        let target = match (request.task.as_deref(), request.feature.as_deref()) {
            (Some(task), feature) => Some(PlanTarget::Task { task, feature }),
            (None, Some(feature)) => Some(PlanTarget::Feature { feature }),
            (None, None) => None,
        };
        Ok(match target {
            Some(target) => {
                let plan = plan_read(items, target, &ranker);
                build_memory_context(plan.entries().iter().map(|planned| planned.item()), request.budget)
            }
            None => build_memory_context(ranker.rank(items), request.budget),
        })
    }

    /// The gate of a search (one `search` audit record), then the live entries the actor may read under `prefix`.
    pub(crate) fn readable(
        &self,
        role: &str,
        prefix: Option<&str>,
        query: &ListQuery,
        keep: &(dyn Fn(&MemoryEntry) -> bool + Sync),
    ) -> Result<(Vec<MemoryEntry>, Actor), MemoryError> {
        let call = self.call(role, AuditOperation::Search, prefix.unwrap_or(""));
        let prefix = self.parse_prefix(&call, prefix)?;
        let actor = self.resolve(&call)?;
        let roots = self.authorize_subtree(&call, &actor, Operation::Read, prefix.as_ref())?;
        self.allow(&call)?;
        let policy = &self.policy;
        let visible = |e: &MemoryEntry| {
            prefix.as_ref().is_none_or(|p| p.contains(&e.id))
                && policy.authorize(&AccessRequest { actor: &actor, operation: Operation::Read, id: &e.id })
                    == Decision::Allow
                && keep(e)
        };
        let entries = self.store.list_where(&roots, query, call.now, &visible).map_err(MemoryError::from)?;
        Ok((entries, actor))
    }

    /// Deletes the expired entries inside `prefix` (or everywhere) that the actor may write, and returns their IDs
    /// in ascending order. Not a door: one `delete` audit record per entry it deletes, written before that delete;
    /// a refused prune writes one `denied` (or `error`) `delete` record with the prefix (or `""`) as its ID. The
    /// listing that finds expired entries is limited to the subtrees the policy names for writing, like a search's
    /// listing, and precedes the first record, so the audit sink must first show that it could append one
    /// ([`AuditSink::check_ready`]); a prune that finds nothing to delete writes no record.
    ///
    /// # Errors
    ///
    /// Invalid prefix, agent definition, denial, audit unavailable (the prune stops there), storage.
    pub fn prune(&self, role: &str, prefix: Option<&str>) -> Result<Vec<MemoryId>, MemoryError> {
        self.prune_with_progress(role, prefix, &mut |_, _| {})
    }

    /// [`MemoryService::prune`], calling `progress(done, total)` after each expired entry it handles.
    ///
    /// # Errors
    ///
    /// As [`MemoryService::prune`].
    pub fn prune_with_progress(
        &self,
        role: &str,
        prefix: Option<&str>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<MemoryId>, MemoryError> {
        let call = self.call(role, AuditOperation::Delete, prefix.unwrap_or(""));
        let prefix = self.parse_prefix(&call, prefix)?;
        let actor = self.resolve(&call)?;
        let roots = self.authorize_subtree(&call, &actor, Operation::Write, prefix.as_ref())?;
        // The listing comes before the first record: without a log that can take one, nothing is read.
        self.ready()?;
        let query = ListQuery { expiry: ExpiryFilter::Expired, ..ListQuery::default() };
        let expired = self.store.list(&roots, &query, call.now).map_err(MemoryError::from)?;
        let expired: Vec<MemoryEntry> = expired
            .into_iter()
            .filter(|e| prefix.as_ref().is_none_or(|p| p.contains(&e.id)))
            .filter(|e| self.permits(&actor, Operation::Write, &e.id))
            .collect();
        let total = expired.len();
        let mut pruned = Vec::new();
        for (done, entry) in expired.into_iter().enumerate() {
            progress(done + 1, total);
            let delete =
                Call { role, operation: AuditOperation::Delete, id: entry.id.as_str(), now: call.now };
            self.allow(&delete)?;
            match self.store.delete_expired(&entry.id, entry.version, call.now) {
                Ok(()) => pruned.push(entry.id),
                // Renewed, re-created or deleted meanwhile: not ours to prune any more.
                Err(
                    StoreError::NotExpired { .. }
                    | StoreError::VersionConflict { .. }
                    | StoreError::NotFound { .. },
                ) => {}
                Err(e) => return Err(e.into()),
            }
        }
        pruned.sort();
        Ok(pruned)
    }
}

/// Parses the raw fields of a create into a new entry (malformed values are `InvalidEntry`).
fn new_entry(id: MemoryId, content: String, fields: &EntryFields) -> Result<NewEntry, MemoryError> {
    let invalid = |e: memory_store::InvalidFieldError| invalid_entry(&id, e.to_string());
    let mut new = NewEntry::new(id.clone(), content);
    if let Some(kind) = &fields.kind {
        new.kind = kind.parse().map_err(invalid)?;
    }
    if let Some(t) = &fields.memory_type {
        new.memory_type = Some(t.parse().map_err(invalid)?);
    }
    if let Some(importance) = &fields.importance {
        new.importance = importance.parse().map_err(invalid)?;
    }
    if let Some(ttl) = &fields.ttl {
        new.ttl = Some(Ttl::parse(ttl).map_err(invalid)?);
    }
    new.key.clone_from(&fields.key);
    new.source.clone_from(&fields.source);
    new.scope.clone_from(&fields.scope);
    Ok(new)
}

/// Parses the raw fields of an update into a patch (malformed values, or a field both set and cleared, are
/// `InvalidEntry`).
fn entry_patch(id: &MemoryId, request: &UpdateRequest) -> Result<EntryPatch, MemoryError> {
    let invalid = |e: memory_store::InvalidFieldError| invalid_entry(id, e.to_string());
    let fields = &request.fields;
    let set = |field: ClearField| match field {
        ClearField::Kind => fields.kind.is_some(),
        ClearField::Type => fields.memory_type.is_some(),
        ClearField::Key => fields.key.is_some(),
        ClearField::Importance => fields.importance.is_some(),
        ClearField::Source => fields.source.is_some(),
        ClearField::Scope => fields.scope.is_some(),
        ClearField::Ttl => fields.ttl.is_some(),
    };
    if let Some(both) = request.clear.iter().find(|f| set(**f)) {
        return Err(invalid_entry(id, format!("`{}` is both set and cleared", both.as_str())));
    }
    let mut patch = EntryPatch { content: request.content.clone(), ..EntryPatch::default() };
    if let Some(kind) = &fields.kind {
        patch.kind = Some(kind.parse().map_err(invalid)?);
    }
    if let Some(t) = &fields.memory_type {
        patch.memory_type = Some(Some(t.parse().map_err(invalid)?));
    }
    if let Some(importance) = &fields.importance {
        patch.importance = Some(importance.parse().map_err(invalid)?);
    }
    if let Some(ttl) = &fields.ttl {
        patch.ttl = Some(Some(Ttl::parse(ttl).map_err(invalid)?));
    }
    if let Some(key) = &fields.key {
        patch.key = Some(Some(key.clone()));
    }
    if let Some(source) = &fields.source {
        patch.source = Some(Some(source.clone()));
    }
    if let Some(scope) = &fields.scope {
        patch.scope = Some(Some(scope.clone()));
    }
    for field in &request.clear {
        match field {
            ClearField::Kind => patch.kind = Some(Kind::default()),
            ClearField::Type => patch.memory_type = Some(None),
            ClearField::Key => patch.key = Some(None),
            ClearField::Importance => patch.importance = Some(Importance::default()),
            ClearField::Source => patch.source = Some(None),
            ClearField::Scope => patch.scope = Some(None),
            ClearField::Ttl => patch.ttl = Some(None),
        }
    }
    Ok(patch)
}

pub(crate) fn list_query(filter: &SearchFilter) -> ListQuery {
    ListQuery {
        kind: filter.kind,
        memory_type: filter.memory_type,
        importance: filter.importance,
        key: filter.key.clone(),
        source: filter.source.clone(),
        scope: filter.scope.clone(),
        expiry: ExpiryFilter::Live,
    }
}

pub(crate) fn invalid_entry(id: &MemoryId, message: String) -> MemoryError {
    MemoryError::InvalidEntry {
        id: Some(id.as_str().to_owned()),
        message: format!("invalid memory entry `{id}`: {message}"),
        line: None,
        column: None,
    }
}

pub(crate) fn field_error(id: &MemoryId, error: EntryFieldError) -> MemoryError {
    match error {
        EntryFieldError::Limit(limit) => MemoryError::LimitExceeded {
            id: id.as_str().to_owned(),
            limit: limit.limit(),
            count: limit.count(),
            message: match limit {
                FieldLimitError::Ttl { ttl, max } => {
                    format!("ttl {ttl} of `{id}` is over the limit of {max}; choose a shorter ttl")
                }
                _ => format!(
                    "content of `{id}` is more than {} characters, the limit; shorten it or split it",
                    limit.limit()
                ),
            },
        },
        other => invalid_entry(id, other.to_string()),
    }
}

/// A store error, with the ID of the call in limit errors (the store names the scope root).
pub(crate) fn store_error(id: &MemoryId, error: StoreError) -> MemoryError {
    match error {
        StoreError::VersionLimit { limit, .. } => MemoryError::LimitExceeded {
            id: id.as_str().to_owned(),
            limit,
            count: limit,
            message: format!(
                "`{id}` is at version {limit}, the largest version an entry may reach; create a new entry instead"
            ),
        },
        StoreError::LimitExceeded { scope_root, limit, count } => MemoryError::LimitExceeded {
            id: id.as_str().to_owned(),
            limit,
            count,
            message: format!(
                "cannot create `{id}`: scope root `{scope_root}` already holds {count} entries, the limit is {limit}; prune expired entries or remove some"
            ),
        },
        other => other.into(),
    }
}
