//! The operator's reads (`alp inspect`): no role and no policy, one audit record each with actor `""`, written
//! after the read and before the answer, with the receipt of what the answer shows (as every read's, §3's
//! "authorize → read → record → answer" without the authorization an operator does not need).

use std::collections::BTreeMap;

use memory_audit::{AuditOperation, AuditSink, Door};
use memory_entry::{MemoryEntry, Version};
use memory_id::{MemoryPrefix, Scope};
use memory_policy::PolicyEngine;
use memory_store::{Expiry, Listing, MemoryStore};

use super::gate::{receipt, store_error};
use super::history::version_receipt;
use super::{ActorSource, Call, MemoryService, Page};
use crate::MemoryError;

/// How many live entries each scope root holds: what an operator's overview of a store shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Survey {
    /// Each scope root that holds a live entry (`shared`, `project:<id>`, `private:<role>`), by name, with its count.
    pub roots: BTreeMap<String, u64>,
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    fn operator_call<'a>(&self, door: Door, operation: AuditOperation, id: &'a str) -> Call<'a> {
        Call { role: "", door, operation, id, now: self.now() }
    }

    /// An operator's survey: every live entry counted under its scope root. One `search` record, door `list`, actor
    /// `""`, id `""`, with no receipt (the answer names scope roots and counts, never an entry).
    ///
    /// ```
    /// use alp_memory::{CreateRequest, FieldInput, MemoryService, StaticActors};
    /// use alp_memory::memory_audit::MemoryAuditSink;
    /// use alp_memory::memory_store::InMemoryStore;
    /// use alp_memory::memory_policy::GrantPolicy;
    ///
    /// let service = MemoryService::new(InMemoryStore::new(), MemoryAuditSink::new(), GrantPolicy, StaticActors::default());
    /// let survey = service.survey().unwrap();
    /// assert!(survey.roots.is_empty());
    /// let record = &service.audit().records()[0];
    /// assert_eq!((record.actor(), record.door().map(|d| d.as_str())), ("", Some("list")));
    /// ```
    ///
    /// # Errors
    ///
    /// The store's errors; [`MemoryError::AuditUnavailable`] when the record cannot be written (nothing is answered).
    pub fn survey(&self) -> Result<Survey, MemoryError> {
        let call = self.operator_call(Door::List, AuditOperation::Search, "");
        self.ready()?;
        let read = self.everything(&call).map(|entries| {
            let mut roots = BTreeMap::new();
            for entry in &entries {
                *roots.entry(entry.id.scope_root().as_str().to_owned()).or_insert(0) += 1;
            }
            Survey { roots }
        });
        self.disclose(&call, read, |_| Vec::new())
    }

    /// An operator's page of the live entries under `prefix`, by ID, after `after`, at most `limit` (at most
    /// [`MAX_ANSWER_ENTRIES`](crate::MAX_ANSWER_ENTRIES)). One `search` record, door `list`, actor `""`, id the
    /// prefix, whose receipt names every entry of the page.
    ///
    /// # Errors
    ///
    /// An invalid prefix (an `error` record, nothing read); the store's errors; audit unavailable.
    pub fn operator_list(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<MemoryEntry>, MemoryError> {
        let call = self.operator_call(Door::List, AuditOperation::Search, prefix);
        let parsed = MemoryPrefix::parse(prefix).map_err(|e| self.refuse(&call, e.into()))?;
        let listing = Listing::new(vec![parsed], call.now);
        let read = self
            .store
            .list(&listing)
            .map_err(MemoryError::from)
            .map(|listed| Page::after(listed, after, Some(limit)));
        self.disclose(&call, read, |page| receipt(&page.entries))
    }

    /// An operator's history of `id`: every kept version, newest first (tombstones included). One `get` record,
    /// door `history`, actor `""`, whose receipt names every version answered.
    ///
    /// # Errors
    ///
    /// An invalid ID (an `error` record, nothing read); the store's not found; audit unavailable.
    pub fn operator_history(&self, id: &str) -> Result<Vec<Version>, MemoryError> {
        let call = self.operator_call(Door::History, AuditOperation::Get, id);
        let parsed = self.parse_id(&call)?;
        let read = self.store.history(&parsed, None).map_err(|e| store_error(&parsed, e));
        self.disclose(&call, read, |versions| versions.iter().map(version_receipt).collect())
    }

    /// Every live entry of the store, in every scope.
    fn everything(&self, call: &Call<'_>) -> Result<Vec<MemoryEntry>, MemoryError> {
        let roots = Scope::ALL.into_iter().map(MemoryPrefix::of_scope).collect();
        let listing = Listing::new(roots, call.now).with_expiry(Expiry::Live);
        Ok(self.store.list(&listing)?.into_iter().map(|scored| scored.entry).collect())
    }
}
