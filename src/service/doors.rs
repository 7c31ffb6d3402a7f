//! The five doors, each a straight line: parse, resolve, authorize, validate, audit, store. And `rename`, a move
//! made of two door calls' gates (a create of the new ID and a delete of the old).

use memory_audit::{AuditOperation, AuditSink, Door};
use memory_entry::{MemoryEntry, NewEntry, Patch};
use memory_policy::{Operation, PolicyEngine};
use memory_store::{MemoryStore, Order, Scored};

use super::gate::{Reading, create_fields, field_error, field_values, invalid_entry, receipt, store_error};
use super::{
    ActorSource, CreateRequest, MAX_ANSWER_ENTRIES, MemoryService, Page, SearchRequest, UpdateRequest,
    Written,
};
use crate::MemoryError;

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// Door: reads one live entry. Its record's receipt names the entry and its version.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, then the store's not found; audit unavailable
    /// overrides the store's answer (the record is written after the read, before the answer).
    pub fn get(&self, role: &str, id: &str) -> Result<MemoryEntry, MemoryError> {
        self.get_through(role, Door::Get, id)
    }

    /// [`get`](Self::get) for a caller that is another door of the same read: the memory tool's `view` of a file
    /// is recorded as [`Door::View`], with the same receipt.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get).
    pub fn get_through(&self, role: &str, door: Door, id: &str) -> Result<MemoryEntry, MemoryError> {
        let call = self.call(role, door, AuditOperation::Get, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Read, &id)?;
        let read = self.store.get(&id, call.now).map_err(MemoryError::from);
        self.disclose(&call, read, |entry| receipt([entry]))
    }

    /// Door: creates an entry at version 1. A create never overwrites.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, invalid entry fields or a value/TTL over its limit,
    /// audit unavailable, then the store's already exists and entry-count limit.
    pub fn create(&self, role: &str, request: CreateRequest) -> Result<MemoryEntry, MemoryError> {
        let call = self.call(role, Door::Create, AuditOperation::Create, &request.id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        let new = create_fields(&id, &request.fields)
            .map(|fields| NewEntry::new(id.clone(), request.content).with_fields(fields))
            .and_then(|new| {
                new.validate(self.store.limits(), call.now).map(|()| new).map_err(|e| field_error(&id, e))
            })
            .map_err(|e| self.refuse(&call, e))?;
        self.allow(&call)?;
        self.store.create(new, call.now).map_err(|e| self.store_failure(&actor, &id, e))
    }

    /// Door: applies an update if the entry is at `expected_version`. The answer holds the entry only when the actor
    /// may also read the ID ([`Written`]): a write grant alone never shows the content or fields another role wrote.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, invalid fields (a field set and cleared, or given
    /// twice) or a value/TTL over its limit, audit unavailable, then the store's not found, version conflict,
    /// already exists (a duplicate key) and the version limit.
    pub fn update(&self, role: &str, request: UpdateRequest) -> Result<Written, MemoryError> {
        let call = self.call(role, Door::Update, AuditOperation::Update, &request.id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        let patch = field_values(&id, &request.fields)
            .and_then(|values| {
                Patch::new(request.content, values, request.clear)
                    .map_err(|e| invalid_entry(&id, e.to_string()))
            })
            .and_then(|patch| {
                patch.validate(self.store.limits(), call.now).map(|()| patch).map_err(|e| field_error(&id, e))
            })
            .map_err(|e| self.refuse(&call, e))?;
        self.allow(&call)?;
        let entry = self
            .store
            .update(&id, request.expected_version, &patch, call.now)
            .map_err(|e| self.store_failure(&actor, &id, e))?;
        Ok(self.written(&actor, entry))
    }

    /// Door: deletes the entry if it is at `expected_version`.
    ///
    /// # Errors
    ///
    /// In precedence order: invalid ID, agent definition, denial, audit unavailable, then the store's not found and
    /// version conflict.
    pub fn delete(&self, role: &str, id: &str, expected_version: u64) -> Result<(), MemoryError> {
        let call = self.call(role, Door::Delete, AuditOperation::Delete, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        self.allow(&call)?;
        self.store.delete(&id, expected_version, call.now).map_err(|e| store_error(&id, e))
    }

    /// Door: the live entries the actor may read, inside the prefix, matching the filters, in rank order (score,
    /// then newer, then ID), each with its score.
    ///
    /// The store is asked to list only inside the subtrees the policy names, so an ungranted subtree is never
    /// opened; it scores each entry once with the ranker's own scorer, and every result is checked again against
    /// the policy.
    ///
    /// # Errors
    ///
    /// In precedence order: a query or filter value over its bound ([`SearchRequest::check`]: `USAGE`, before the
    /// gate, so nothing is read and no record is written), invalid prefix, agent definition, denial
    /// (`PRIVATE_MEMORY_DENIED` for a prefix in another role's private memory, `MEMORY_NOT_GRANTED` when no read
    /// grant overlaps), storage (a call whose [`SearchRequest::cancel`] was raised stops at the store's next file or
    /// row with a storage error of kind `Cancelled`), and audit unavailable over any of the store's answers: the
    /// record, with its receipt of every entry answered, is written after the listing and before the answer.
    pub fn search(&self, role: &str, request: &SearchRequest) -> Result<Page<Scored>, MemoryError> {
        request.check()?;
        let limit = request.limit.unwrap_or(MAX_ANSWER_ENTRIES);
        let reading = Reading {
            role,
            door: Door::Search,
            prefix: request.prefix.as_deref(),
            filter: request.filter.clone(),
            query: request.query.query(),
            order: Order::Rank,
            // One more than the page, to know whether more matched.
            limit: Some(limit.saturating_add(1)),
            cancel: &request.cancel,
        };
        let answer = |entries| Ok(Page::cut(entries, Some(limit)));
        self.read_listing(reading, answer, |page: &Page<Scored>| {
            receipt(page.entries.iter().map(|scored| &scored.entry))
        })
    }

    /// Moves the live entry `from`, at `expected_version`, to `to`, keeping its fields, content, version and
    /// timestamps: authorized as a write on both IDs, audited as a `create` of `to` and a `delete` of `from` (two
    /// records, both before the store is touched), done by the store in one step. The answer holds the moved entry
    /// only when the actor may also read `to` ([`Written`]).
    ///
    /// # Errors
    ///
    /// For `to` then `from`: invalid ID, agent definition, denial; audit unavailable; then the store's not found
    /// (`from`), version conflict, already exists and limit (`to`).
    pub fn rename(
        &self,
        role: &str,
        from: &str,
        to: &str,
        expected_version: u64,
    ) -> Result<Written, MemoryError> {
        let create = self.call(role, Door::Create, AuditOperation::Create, to);
        let to_id = self.parse_id(&create)?;
        let actor = self.resolve(&create)?;
        self.authorize(&create, &actor, Operation::Write, &to_id)?;
        let delete = super::Call { door: Door::Delete, ..create.on(AuditOperation::Delete, from) };
        let from_id = self.parse_id(&delete)?;
        self.authorize(&delete, &actor, Operation::Write, &from_id)?;
        self.allow(&create)?;
        self.allow(&delete)?;
        let entry =
            self.store.rename(&from_id, &to_id, expected_version, create.now).map_err(|e| match e {
                memory_entry::StoreError::NotFound { .. }
                | memory_entry::StoreError::VersionConflict { .. } => store_error(&from_id, e),
                other => self.store_failure(&actor, &to_id, other),
            })?;
        Ok(self.written(&actor, entry))
    }
}
