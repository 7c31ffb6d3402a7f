//! The gate every door goes through: parse, resolve the role, authorize, audit, and only then the store. Every
//! composition (prune, import, export, rename, the MCP memory tool) uses these same steps; none assembles its own.

use memory_audit::{AuditEvent, AuditOperation, AuditSink, Door, Outcome, shown_entry};
use memory_entry::{
    EntryFieldError, FieldLimitError, FieldName, FieldValue, Fields, Filter, MemoryEntry, StoreError,
    Timestamp,
};
use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use memory_policy::{AccessRequest, Actor, Decision, DenyCode, Operation, PolicyEngine, SubtreeDecision};
use memory_ranker::Query;
use memory_store::{Cancel, Expiry, Listing, MemoryStore, Order, Scored};

use super::{ActorSource, FieldInput, MemoryService, Written};
use crate::MemoryError;

/// One call at the gate: who, what the caller called (the door) and the operation it is recorded as, the ID as
/// given, and the instant.
pub(crate) struct Call<'a> {
    pub(crate) role: &'a str,
    pub(crate) door: Door,
    pub(crate) operation: AuditOperation,
    pub(crate) id: &'a str,
    pub(crate) now: Timestamp,
}

impl<'a> Call<'a> {
    /// The same caller, door and instant on another ID, recorded as `operation` (a composition's further records).
    pub(crate) fn on(&self, operation: AuditOperation, id: &'a str) -> Call<'a> {
        Call { role: self.role, door: self.door, operation, id, now: self.now }
    }
}

/// The receipt of an answer: every entry whose ID or content it holds, as `"<id>@<version>"`, in answer order.
pub(crate) fn receipt<'e>(entries: impl IntoIterator<Item = &'e MemoryEntry>) -> Vec<String> {
    entries.into_iter().map(|entry| shown_entry(entry.id.as_str(), entry.version)).collect()
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    pub(crate) fn call<'a>(
        &self,
        role: &'a str,
        door: Door,
        operation: AuditOperation,
        id: &'a str,
    ) -> Call<'a> {
        Call { role, door, operation, id, now: self.clock.now() }
    }

    /// Writes one audit record for `call`, with the receipt `shown` (empty: none). Any failure of the sink becomes
    /// `AuditUnavailable`.
    pub(crate) fn record(
        &self,
        call: &Call<'_>,
        outcome: Outcome,
        code: Option<&str>,
        shown: Vec<String>,
    ) -> Result<(), MemoryError> {
        let event = AuditEvent {
            timestamp: call.now.as_offset_date_time(),
            actor: call.role.to_owned(),
            operation: call.operation,
            door: Some(call.door),
            id: call.id.to_owned(),
            outcome,
            code: code.map(str::to_owned),
            grant: None,
            shown,
            via: None,
        };
        self.audit.record(&event).map(|_| ()).map_err(|e| MemoryError::AuditUnavailable(e.to_string()))
    }

    /// The end of an allowed read (authorize → read → record → answer): writes the call's one `allowed` record,
    /// carrying the receipt of what `read` answers (`shown` of it; nothing when the read failed), durably, and only
    /// then lets the answer out. A record that cannot be written turns any answer into `AuditUnavailable`: no
    /// durable record, no answer.
    pub(crate) fn disclose<T>(
        &self,
        call: &Call<'_>,
        read: Result<T, MemoryError>,
        shown: impl FnOnce(&T) -> Vec<String>,
    ) -> Result<T, MemoryError> {
        let receipt = read.as_ref().map(shown).unwrap_or_default();
        self.record(call, Outcome::Allowed, None, receipt)?;
        read
    }

    /// Audits a refusal (denied or error) and returns the error to report: the refusal itself, or
    /// `AuditUnavailable` when the refusal could not be recorded.
    pub(crate) fn refuse(&self, call: &Call<'_>, error: MemoryError) -> MemoryError {
        let outcome = match error {
            MemoryError::Unauthorized { .. } => Outcome::Denied,
            _ => Outcome::Error,
        };
        match self.record(call, outcome, Some(error.code()), Vec::new()) {
            Ok(()) => error,
            Err(unavailable) => unavailable,
        }
    }

    /// Refuses a call whose target was named by a path that maps to no valid ID (a path of the MCP `memory` tool,
    /// `docs/CLI.md`), exactly as a door refuses an invalid ID: one `error` record with code `INVALID_MEMORY_ID`,
    /// the path as given as `id`, under `operation` (the door the call would have gone through), and nothing read
    /// or written. The path is never parsed as an ID here (`shared:a` as a path would be a valid ID).
    ///
    /// Returns the error to report: [`MemoryError::InvalidMemoryPath`], or
    /// [`MemoryError::AuditUnavailable`](crate::MemoryError::AuditUnavailable) when the record could not be written.
    ///
    /// ```
    /// use alp_memory::{MemoryService, StaticActors};
    /// use alp_memory::memory_audit::{AuditOperation, Door, MemoryAuditSink};
    /// use alp_memory::memory_store::InMemoryStore;
    /// use alp_memory::memory_policy::GrantPolicy;
    ///
    /// let service = MemoryService::new(InMemoryStore::new(), MemoryAuditSink::new(), GrantPolicy, StaticActors::default());
    /// let error = service.refuse_path("worker", Door::View, AuditOperation::Get, "/memories/../etc", "dot_segment", "…".into());
    /// assert_eq!(error.code(), "INVALID_MEMORY_ID");
    /// let records = service.audit().records();
    /// assert_eq!((records[0].id(), records[0].code()), ("/memories/../etc", Some("INVALID_MEMORY_ID")));
    /// ```
    pub fn refuse_path(
        &self,
        role: &str,
        door: Door,
        operation: AuditOperation,
        path: &str,
        reason: &'static str,
        message: String,
    ) -> MemoryError {
        let call = self.call(role, door, operation, path);
        self.refuse(&call, MemoryError::InvalidMemoryPath { path: path.to_owned(), reason, message })
    }

    /// Records `allowed` for a write: after this, and only after this, the store may be touched. A write carries
    /// no receipt (its answer holds only what the caller sent or may read).
    pub(crate) fn allow(&self, call: &Call<'_>) -> Result<(), MemoryError> {
        self.record(call, Outcome::Allowed, None, Vec::new())
    }

    /// Fails closed unless the audit sink could append a record now: for compositions that read the store before
    /// their first record.
    pub(crate) fn ready(&self) -> Result<(), MemoryError> {
        self.audit.check_ready().map_err(|e| MemoryError::AuditUnavailable(e.to_string()))
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
            Decision::Deny(code) => Err(self.refuse(call, denial(call, operation, code))),
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
            SubtreeDecision::Deny(code) => Err(self.refuse(call, denial(call, operation, code))),
        }
    }

    /// A store error of a call by `actor` on `id`, as [`store_error`] makes it, except that the entry holding the
    /// place of an [`MemoryError::AlreadyExists`] is named only when `actor` may read it (a read grant covers it
    /// and it is not another role's private memory). Otherwise the error names nothing, so a role that may write
    /// but not read a subtree never learns the IDs in it. Every door and composition that creates, updates or
    /// moves an entry reports the store's errors through this, whatever the store.
    pub(crate) fn store_failure(&self, actor: &Actor, id: &MemoryId, error: StoreError) -> MemoryError {
        match error {
            StoreError::AlreadyExists { id: taken, existing, reason } => {
                let readable = parse_memory_id(&existing)
                    .is_ok_and(|existing| self.permits(actor, Operation::Read, &existing));
                MemoryError::AlreadyExists {
                    id: taken.into_string(),
                    existing: readable.then_some(existing),
                    reason,
                }
            }
            other => store_error(id, other),
        }
    }

    /// What a write by `actor` answers with `entry`: the entry when `actor` may read its ID, else only its ID and
    /// version: writes disclose nothing a read grant would not. The one place that decides it, from the actor the call already resolved.
    pub(crate) fn written(&self, actor: &Actor, entry: MemoryEntry) -> Written {
        let readable = self.permits(actor, Operation::Read, &entry.id);
        Written::new(entry, readable)
    }

    /// Whether `actor` may `operation` `id` (no audit): used to filter listings.
    pub(crate) fn permits(&self, actor: &Actor, operation: Operation, id: &MemoryId) -> bool {
        self.policy.authorize(&AccessRequest { actor, operation, id }) == Decision::Allow
    }

    /// A read of a listing (one `search` record, under `reading.door`): the gate, then the listing, only inside
    /// the subtrees the policy names, each entry kept checked again against the prefix and the policy; then
    /// `answer` makes the answer of the entries, and the record with its receipt (`shown` of the answer) is written
    /// before it is returned ([`disclose`](Self::disclose)).
    pub(crate) fn read_listing<T>(
        &self,
        reading: Reading<'_>,
        answer: impl FnOnce(Vec<Scored>) -> Result<T, MemoryError>,
        shown: impl FnOnce(&T) -> Vec<String>,
    ) -> Result<T, MemoryError> {
        let call =
            self.call(reading.role, reading.door, AuditOperation::Search, reading.prefix.unwrap_or(""));
        let prefix = self.parse_prefix(&call, reading.prefix)?;
        let actor = self.resolve(&call)?;
        let roots = self.authorize_subtree(&call, &actor, Operation::Read, prefix.as_ref())?;
        let read = self.listed(&actor, prefix.as_ref(), roots, &reading, call.now).and_then(answer);
        self.disclose(&call, read, shown)
    }

    /// The listing of an authorized read: in `reading.order`, at most `reading.limit` entries, the first in rank
    /// order: the store leaves out entries that rank below `limit` others. If the policy's check drops any entry
    /// the store returned, the listing is done again without the limit, so that no entry the actor may read is left
    /// out for one it may not. The store stops at its next file or row once `reading.cancel` is raised.
    fn listed(
        &self,
        actor: &Actor,
        prefix: Option<&MemoryPrefix>,
        roots: Vec<MemoryPrefix>,
        reading: &Reading<'_>,
        now: Timestamp,
    ) -> Result<Vec<Scored>, MemoryError> {
        let listing = Listing::new(roots, now)
            .with_filter(reading.filter.clone())
            .with_terms(reading.query.clone())
            .with_expiry(Expiry::Live)
            .with_order(reading.order)
            .with_cancel(reading.cancel.clone());
        let readable = |scored: &Scored| {
            prefix.is_none_or(|p| p.contains(&scored.entry.id))
                && self.permits(actor, Operation::Read, &scored.entry.id)
        };
        let limit = reading.limit;
        let mut entries = self.store.list(&listing.clone().with_limit(limit)).map_err(MemoryError::from)?;
        let listed = entries.len();
        entries.retain(readable);
        if let Some(limit) = limit
            && entries.len() < listed
        {
            entries = self.store.list(&listing).map_err(MemoryError::from)?;
            entries.retain(readable);
            // The first `limit` of those the actor may read, as the store gives them with the limit.
            entries = listing.with_limit(Some(limit)).finish(entries);
        }
        Ok(entries)
    }
}

/// What a read of a listing asks: who, through which door, inside which prefix, with which filter and terms, in
/// which order, how many, and the caller's cancel flag.
pub(crate) struct Reading<'a> {
    pub(crate) role: &'a str,
    pub(crate) door: Door,
    pub(crate) prefix: Option<&'a str>,
    pub(crate) filter: Filter,
    pub(crate) query: &'a Query,
    pub(crate) order: Order,
    pub(crate) limit: Option<usize>,
    pub(crate) cancel: &'a Cancel,
}

fn denial(call: &Call<'_>, operation: Operation, code: DenyCode) -> MemoryError {
    MemoryError::Unauthorized { id: call.id.to_owned(), actor: call.role.to_owned(), operation, code }
}

/// The values of `input`, each parsed with its field's own parser (malformed ones are `InvalidEntry`).
pub(crate) fn field_values(id: &MemoryId, input: &FieldInput) -> Result<Vec<FieldValue>, MemoryError> {
    input
        .iter()
        .map(|(name, text)| FieldValue::parse(name, text).map_err(|e| invalid_entry(id, e.to_string())))
        .collect()
}

/// The fields of a create: the values given, each at most once, over the defaults.
pub(crate) fn create_fields(id: &MemoryId, input: &FieldInput) -> Result<Fields, MemoryError> {
    let values = field_values(id, input)?;
    let mut fields = Fields::default();
    let mut seen: Vec<FieldName> = Vec::new();
    for value in values {
        if seen.contains(&value.name()) {
            return Err(invalid_entry(id, format!("`{}` is given twice", value.name())));
        }
        seen.push(value.name());
        fields.set(value);
    }
    Ok(fields)
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
        StoreError::Field { id, error } => field_error(&id, error),
        other => other.into(),
    }
}
