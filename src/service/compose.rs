//! Compositions on the doors: `list` and `context` (one `search` each), and `prune` (one `delete` record per entry
//! it deletes).

use memory_audit::{AuditOperation, AuditSink, Door};
use memory_context::{MemoryContext, PlanTarget, build_memory_context, build_planned_context, plan_read};
use memory_entry::{Filter, MemoryEntry, StoreError};
use memory_policy::{Operation, PolicyEngine};
use memory_ranker::{DeterministicContextRanker, Query};
use memory_store::{Expiry, Listing, MemoryStore, Order};

use super::gate::{Reading, receipt};
use super::{ActorSource, ContextRequest, ListRequest, MemoryService, Page, Pruned, Rankable};
use crate::MemoryError;

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// The live entries the actor may read inside the request's prefix (or everywhere), matching its filter, ordered
    /// by ID, after its `after` ID, at most its limit (at most [`MAX_ANSWER_ENTRIES`](crate::MAX_ANSWER_ENTRIES)):
    /// a search without terms (one `search` audit record, door `list`, whose receipt names every entry of the page),
    /// for browsing. `more` says that entries follow the page's last ID. The store stops at its next file or row once
    /// the request's `cancel` is raised (a storage error of kind `Cancelled`).
    ///
    /// # Errors
    ///
    /// As [`MemoryService::search`]: a prefix, filter value or `after` over
    /// [`MAX_FILTER_CHARS`](crate::MAX_FILTER_CHARS), or a limit over the answer's bound, is `USAGE`, before the gate.
    pub fn list(&self, role: &str, request: &ListRequest) -> Result<Page<MemoryEntry>, MemoryError> {
        self.list_through(role, Door::List, request)
    }

    /// [`list`](Self::list) for a caller that is another door of the same read: the memory tool's `view` of a
    /// directory is recorded as [`Door::View`], with the same receipt (every ID the page names).
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    pub fn list_through(
        &self,
        role: &str,
        door: Door,
        request: &ListRequest,
    ) -> Result<Page<MemoryEntry>, MemoryError> {
        request.check()?;
        let query = Query::default();
        let reading = Reading {
            role,
            door,
            prefix: request.prefix.as_deref(),
            filter: request.filter.clone(),
            query: &query,
            order: Order::Id,
            limit: None,
            cancel: &request.cancel,
        };
        let answer = |listed: Vec<memory_store::Scored>| {
            Ok(Page::after(listed, request.after.as_deref(), request.limit))
        };
        self.read_listing(reading, answer, |page: &Page<MemoryEntry>| receipt(&page.entries))
    }

    /// Builds context for an agent under a character budget: one search (one `search` audit record), then either
    /// the ranked entries (terms select and order) or, with a task or feature, the read plan of `conformance/README.md`
    /// (terms order but never drop), then whole entries while they fit. The diagnostics list every candidate left out.
    ///
    /// # Errors
    ///
    /// As [`MemoryService::search`], with [`ContextRequest::check`] first; a call whose [`ContextRequest::cancel`]
    /// was raised stops at the store's next file or row, or before the context is built.
    pub fn context(&self, role: &str, request: &ContextRequest) -> Result<MemoryContext, MemoryError> {
        request.check()?;
        let cancel = &request.cancel;
        let target = match (request.task.as_deref(), request.feature.as_deref()) {
            (Some(task), feature) => Some(PlanTarget::Task { task, feature }),
            (None, Some(feature)) => Some(PlanTarget::Feature { feature }),
            (None, None) => None,
        };
        let everything = Query::default();
        let reading = Reading {
            role,
            door: Door::Context,
            prefix: request.prefix.as_deref(),
            filter: Filter::default(),
            // Terms select and order: the store drops what matches no term, scores the rest with the ranker's own
            // scorer and returns them in rank order. A plan keeps entries that match no term: list them all.
            query: if target.is_some() { &everything } else { request.query.query() },
            order: if target.is_some() { Order::Id } else { Order::Rank },
            limit: None,
            cancel,
        };
        let build = |entries: Vec<memory_store::Scored>| {
            cancel.check()?;
            let items = entries.iter().map(|scored| Rankable(&scored.entry));
            let built = match target {
                None => build_memory_context(items, request.budget),
                Some(target) => {
                    let ranker = DeterministicContextRanker::with_query(request.query.query().clone());
                    build_planned_context(plan_read(items, target, &ranker).entries(), request.budget)
                }
            };
            Ok((built, entries))
        };
        // The receipt names the entries the context's text holds, never the ones it left out.
        let shown = |(built, entries): &(MemoryContext, Vec<memory_store::Scored>)| {
            let by_id: std::collections::HashMap<&str, &MemoryEntry> =
                entries.iter().map(|scored| (scored.entry.id.as_str(), &scored.entry)).collect();
            receipt(built.entry_ids().iter().filter_map(|id| by_id.get(id.as_str()).copied()))
        };
        self.read_listing(reading, build, shown).map(|(built, _)| built)
    }

    /// Deletes the expired entries inside `prefix` (or everywhere) that the actor may write, and returns the IDs of
    /// those it may also read, in ascending order, and how many others it deleted (their IDs are never answered: a
    /// write discloses nothing a read grant would not). Not a door: one `delete` audit record per entry it deletes, written before that delete;
    /// a refused prune writes one `denied` (or `error`) `delete` record with the prefix (or `""`) as its ID. The
    /// listing that finds expired entries is limited to the subtrees the policy names for writing, like a search's
    /// listing, and precedes the first record, so the audit sink must first show that it could append one
    /// ([`AuditSink::check_ready`]); a prune that finds nothing to delete writes no record.
    ///
    /// # Errors
    ///
    /// Invalid prefix, agent definition, denial, audit unavailable (the prune stops there), storage.
    pub fn prune(&self, role: &str, prefix: Option<&str>) -> Result<Pruned, MemoryError> {
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
    ) -> Result<Pruned, MemoryError> {
        let call = self.call(role, Door::Prune, AuditOperation::Delete, prefix.unwrap_or(""));
        let prefix = self.parse_prefix(&call, prefix)?;
        let actor = self.resolve(&call)?;
        let roots = self.authorize_subtree(&call, &actor, Operation::Write, prefix.as_ref())?;
        // The listing comes before the first record: without a log that can take one, nothing is read.
        self.ready()?;
        let listing = Listing::new(roots, call.now).with_expiry(Expiry::Expired);
        let expired: Vec<MemoryEntry> = self
            .store
            .list(&listing)
            .map_err(MemoryError::from)?
            .into_iter()
            .map(|scored| scored.entry)
            .filter(|e| prefix.as_ref().is_none_or(|p| p.contains(&e.id)))
            .filter(|e| self.permits(&actor, Operation::Write, &e.id))
            .collect();
        let total = expired.len();
        let mut pruned = Vec::new();
        for (done, entry) in expired.into_iter().enumerate() {
            progress(done + 1, total);
            let delete = call.on(AuditOperation::Delete, entry.id.as_str());
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
        let total = pruned.len();
        pruned.retain(|id| self.permits(&actor, Operation::Read, id));
        Ok(Pruned { withheld: total - pruned.len(), ids: pruned })
    }
}
