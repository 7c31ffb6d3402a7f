//! The gate every door goes through: parse, resolve the role, authorize, audit, and only then the store. Every
//! composition (prune, import, export, rename, the MCP memory tool) uses these same steps; none assembles its own.

use memory_audit::{AuditEvent, AuditOperation, AuditSink, Outcome};
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

/// One call at the gate: who, which door, the ID as given, and the instant.
pub(crate) struct Call<'a> {
    pub(crate) role: &'a str,
    pub(crate) operation: AuditOperation,
    pub(crate) id: &'a str,
    pub(crate) now: Timestamp,
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
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
            door: None,
            id: call.id.to_owned(),
            outcome,
            code: code.map(str::to_owned),
            grant: None,
            shown: Vec::new(),
            via: None,
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
    /// use alp_memory::memory_audit::{AuditOperation, MemoryAuditSink};
    /// use alp_memory::memory_store::InMemoryStore;
    /// use alp_memory::memory_policy::GrantPolicy;
    ///
    /// let service = MemoryService::new(InMemoryStore::new(), MemoryAuditSink::new(), GrantPolicy, StaticActors::default());
    /// let error = service.refuse_path("worker", AuditOperation::Get, "/memories/../etc", "dot_segment", "…".into());
    /// assert_eq!(error.code(), "INVALID_MEMORY_ID");
    /// let records = service.audit().records();
    /// assert_eq!((records[0].id(), records[0].code()), ("/memories/../etc", Some("INVALID_MEMORY_ID")));
    /// ```
    pub fn refuse_path(
        &self,
        role: &str,
        operation: AuditOperation,
        path: &str,
        reason: &'static str,
        message: String,
    ) -> MemoryError {
        let call = self.call(role, operation, path);
        self.refuse(&call, MemoryError::InvalidMemoryPath { path: path.to_owned(), reason, message })
    }

    /// Records `allowed`: after this, and only after this, the store may be touched.
    pub(crate) fn allow(&self, call: &Call<'_>) -> Result<(), MemoryError> {
        self.record(call, Outcome::Allowed, None)
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

    /// The gate of a search (one `search` audit record), then the listing: only inside the subtrees the policy
    /// names, each entry kept checked again against the prefix and the policy. By ID.
    pub(crate) fn readable(
        &self,
        role: &str,
        prefix: Option<&str>,
        filter: Filter,
        query: &Query,
    ) -> Result<Vec<Scored>, MemoryError> {
        self.readable_best(role, prefix, filter, query, (Order::Id, None), &Cancel::never())
    }

    /// [`readable`](Self::readable) in `order`, at most `limit` of them, the first in rank order: the store leaves
    /// out entries that rank below `limit` others. If the policy's check drops any entry the store returned, the
    /// listing is done again without the limit, so that no entry the actor may read is left out for one it may not.
    /// The store stops at its next file or row once `cancel` is raised.
    pub(crate) fn readable_best(
        &self,
        role: &str,
        prefix: Option<&str>,
        filter: Filter,
        query: &Query,
        (order, limit): (Order, Option<usize>),
        cancel: &Cancel,
    ) -> Result<Vec<Scored>, MemoryError> {
        let call = self.call(role, AuditOperation::Search, prefix.unwrap_or(""));
        let prefix = self.parse_prefix(&call, prefix)?;
        let actor = self.resolve(&call)?;
        let roots = self.authorize_subtree(&call, &actor, Operation::Read, prefix.as_ref())?;
        self.allow(&call)?;
        let listing = Listing::new(roots, call.now)
            .with_filter(filter)
            .with_terms(query.clone())
            .with_expiry(Expiry::Live)
            .with_order(order)
            .with_cancel(cancel.clone());
        let readable = |scored: &Scored| {
            prefix.as_ref().is_none_or(|p| p.contains(&scored.entry.id))
                && self.permits(&actor, Operation::Read, &scored.entry.id)
        };
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
