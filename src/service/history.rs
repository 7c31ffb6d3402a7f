//! History on the doors: reading it is a `get` (one record, the read grant), restoring a version an `update` (the
//! write grant), and redacting one an operator's call (no role, no policy: one `redact` record with actor `""`).

use memory_audit::{AuditOperation, AuditSink, Door, shown_entry};
use memory_entry::{StoreError, Version, VersionMissing};
use memory_policy::{Operation, PolicyEngine};
use memory_store::MemoryStore;

use super::gate::store_error;
use super::{ActorSource, Call, MemoryService, Written};
use crate::MemoryError;

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// The kept versions of `id`, newest first (the `limit` newest with a limit): entries, redacted entries and
    /// tombstones, on deleted and expired entries too. Gated as a `get`: one `get` record, the read grant.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); the store's not found when `id` has no version at all.
    pub fn history(&self, role: &str, id: &str, limit: Option<usize>) -> Result<Vec<Version>, MemoryError> {
        let call = self.call(role, Door::History, AuditOperation::Get, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Read, &id)?;
        let read = self.store.history(&id, limit).map_err(|e| store_error(&id, e));
        self.disclose(&call, read, |versions| versions.iter().map(version_receipt).collect())
    }

    /// Version `version` of `id` (expired entries too); a redacted version has empty content. Gated as a `get`.
    ///
    /// # Errors
    ///
    /// As [`get`](Self::get); [`MemoryError::VersionNotFound`] for a tombstone, a version never written or one no
    /// longer kept (the message says which).
    pub fn get_version(&self, role: &str, id: &str, version: u64) -> Result<Version, MemoryError> {
        let call = self.call(role, Door::Get, AuditOperation::Get, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Read, &id)?;
        let read = match self.store.get_version(&id, version) {
            Ok(Version::Tombstone { id, version, .. }) => Err(store_error(
                &id.clone(),
                StoreError::VersionNotFound { id, version, missing: VersionMissing::Tombstone },
            )),
            Ok(found) => Ok(found),
            Err(e) => Err(store_error(&id, e)),
        };
        self.disclose(&call, read, |found| vec![version_receipt(found)])
    }

    /// Writes version `expected_version + 1` of `id` with the content and fields of `version` (bringing a deleted
    /// entry back, under the create rules). Gated as an `update`: one `update` record, the write grant. The answer
    /// holds the entry only when the actor may also read the ID ([`Written`]): restoring never shows a write-only
    /// role an old version's content.
    ///
    /// # Errors
    ///
    /// As [`update`](Self::update); then the store's version conflict (checked first), not found (also for a
    /// tombstone), invalid entry (a redacted version), already exists and limit.
    pub fn restore(
        &self,
        role: &str,
        id: &str,
        version: u64,
        expected_version: u64,
    ) -> Result<Written, MemoryError> {
        let call = self.call(role, Door::Restore, AuditOperation::Update, id);
        let id = self.parse_id(&call)?;
        let actor = self.resolve(&call)?;
        self.authorize(&call, &actor, Operation::Write, &id)?;
        self.allow(&call)?;
        let entry = self
            .store
            .restore(&id, version, expected_version, call.now)
            .map_err(|e| self.store_failure(&actor, &id, e))?;
        Ok(self.written(&actor, entry))
    }

    /// An operator's call: erases the content of `version` of `id` wherever the store keeps it (the other fields
    /// stay). No role and no policy: one audit record with actor `""` and operation `redact`, written like a door's
    /// (after the ID is parsed, before the store is touched; an invalid ID is an `error` record).
    ///
    /// # Errors
    ///
    /// Invalid ID, audit unavailable, then [`MemoryError::Usage`] for the current version (update the entry first),
    /// the store's not found and [`MemoryError::VersionNotFound`] (also for a tombstone).
    pub fn redact(&self, id: &str, version: u64) -> Result<(), MemoryError> {
        let call =
            Call { role: "", door: Door::Redact, operation: AuditOperation::Redact, id, now: self.now() };
        let id = self.parse_id(&call)?;
        self.allow(&call)?;
        self.store.redact(&id, version).map_err(|e| store_error(&id, e))
    }
}

/// A version's entry in a receipt: `"<id>@<version>"`, a tombstone's too (history answers it).
pub(super) fn version_receipt(version: &Version) -> String {
    shown_entry(version.id().as_str(), version.version())
}
