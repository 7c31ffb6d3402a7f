//! [`Forwarding`]: a [`MemoryStore`] that forwards every method to the store it wraps, and lets a test run a hook
//! before and after each call — to journal the calls, or to change the inner store behind the caller's back.

use memory_entry::{Limits, MemoryEntry, NewEntry, Patch, StoreError, Timestamp, Version};
use memory_id::MemoryId;
use memory_store::{Batch, BatchPlan, Listing, MemoryStore, Scored};

/// One call of the [`MemoryStore`] trait, with the arguments a hook may want.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StoreCall<'a> {
    /// [`MemoryStore::get`].
    Get {
        /// The ID.
        id: &'a MemoryId,
        /// The time of the call.
        now: Timestamp,
    },
    /// [`MemoryStore::list`].
    List {
        /// The listing.
        listing: &'a Listing,
    },
    /// [`MemoryStore::plan_batch`].
    PlanBatch {
        /// The batch.
        batch: &'a Batch,
    },
    /// [`MemoryStore::write_batch`].
    WriteBatch {
        /// The batch.
        batch: &'a Batch,
    },
    /// [`MemoryStore::create`].
    Create {
        /// The new entry.
        entry: &'a NewEntry,
    },
    /// [`MemoryStore::update`].
    Update {
        /// The ID.
        id: &'a MemoryId,
        /// The expected version.
        expected: u64,
    },
    /// [`MemoryStore::delete`].
    Delete {
        /// The ID.
        id: &'a MemoryId,
        /// The expected version.
        expected: u64,
    },
    /// [`MemoryStore::delete_expired`].
    DeleteExpired {
        /// The ID.
        id: &'a MemoryId,
        /// The expected version.
        expected: u64,
    },
    /// [`MemoryStore::rename`].
    Rename {
        /// The old ID.
        from: &'a MemoryId,
        /// The new ID.
        to: &'a MemoryId,
        /// The expected version.
        expected: u64,
    },
    /// [`MemoryStore::history`].
    History {
        /// The ID.
        id: &'a MemoryId,
    },
    /// [`MemoryStore::get_version`].
    GetVersion {
        /// The ID.
        id: &'a MemoryId,
        /// The version asked for.
        version: u64,
    },
    /// [`MemoryStore::restore`].
    Restore {
        /// The ID.
        id: &'a MemoryId,
        /// The version restored.
        version: u64,
    },
    /// [`MemoryStore::redact`].
    Redact {
        /// The ID.
        id: &'a MemoryId,
        /// The version redacted.
        version: u64,
    },
}

impl StoreCall<'_> {
    /// The method's name: `get`, `list`, `plan_batch`, ….
    pub fn name(&self) -> &'static str {
        match self {
            StoreCall::Get { .. } => "get",
            StoreCall::List { .. } => "list",
            StoreCall::PlanBatch { .. } => "plan_batch",
            StoreCall::WriteBatch { .. } => "write_batch",
            StoreCall::Create { .. } => "create",
            StoreCall::Update { .. } => "update",
            StoreCall::Delete { .. } => "delete",
            StoreCall::DeleteExpired { .. } => "delete_expired",
            StoreCall::Rename { .. } => "rename",
            StoreCall::History { .. } => "history",
            StoreCall::GetVersion { .. } => "get_version",
            StoreCall::Restore { .. } => "restore",
            StoreCall::Redact { .. } => "redact",
        }
    }
}

type Hook<S> = Box<dyn Fn(&S, &StoreCall<'_>) + Send + Sync>;

/// A store that forwards every [`MemoryStore`] method (those with a default too) to `inner`, calling the
/// [`Forwarding::before`] hook before each call and the [`Forwarding::after`] hook after each call that succeeded.
/// `limits` is not a call and runs no hook.
pub struct Forwarding<S> {
    /// The wrapped store, which a test may read or change behind the caller's back.
    pub inner: S,
    before: Hook<S>,
    after: Hook<S>,
}

impl<S> std::fmt::Debug for Forwarding<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarding").finish_non_exhaustive()
    }
}

impl<S: MemoryStore> Forwarding<S> {
    /// Forwards to `inner`, with no hooks.
    pub fn new(inner: S) -> Forwarding<S> {
        Forwarding { inner, before: Box::new(|_, _| {}), after: Box::new(|_, _| {}) }
    }

    /// Runs `hook(inner, call)` before every call.
    pub fn before(mut self, hook: impl Fn(&S, &StoreCall<'_>) + Send + Sync + 'static) -> Forwarding<S> {
        self.before = Box::new(hook);
        self
    }

    /// Runs `hook(inner, call)` after every call that succeeded, before its result is returned.
    pub fn after(mut self, hook: impl Fn(&S, &StoreCall<'_>) + Send + Sync + 'static) -> Forwarding<S> {
        self.after = Box::new(hook);
        self
    }

    fn around<T>(
        &self,
        call: StoreCall<'_>,
        run: impl FnOnce(&S) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        (self.before)(&self.inner, &call);
        let result = run(&self.inner)?;
        (self.after)(&self.inner, &call);
        Ok(result)
    }
}

impl<S: MemoryStore> MemoryStore for Forwarding<S> {
    fn limits(&self) -> &Limits {
        self.inner.limits()
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        self.around(StoreCall::Get { id, now }, |inner| inner.get(id, now))
    }

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        self.around(StoreCall::List { listing }, |inner| inner.list(listing))
    }

    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        self.around(StoreCall::PlanBatch { batch }, |inner| inner.plan_batch(batch, now))
    }

    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        self.around(StoreCall::WriteBatch { batch }, |inner| inner.write_batch(batch, expected, now))
    }

    fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        (self.before)(&self.inner, &StoreCall::Create { entry: &entry });
        let after = entry.clone();
        let created = self.inner.create(entry, now)?;
        (self.after)(&self.inner, &StoreCall::Create { entry: &after });
        Ok(created)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.around(StoreCall::Update { id, expected }, |inner| inner.update(id, expected, patch, now))
    }

    fn delete(&self, id: &MemoryId, expected: u64, now: Timestamp) -> Result<(), StoreError> {
        self.around(StoreCall::Delete { id, expected }, |inner| inner.delete(id, expected, now))
    }

    fn delete_expired(&self, id: &MemoryId, expected: u64, now: Timestamp) -> Result<(), StoreError> {
        self.around(StoreCall::DeleteExpired { id, expected }, |inner| {
            inner.delete_expired(id, expected, now)
        })
    }

    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.around(StoreCall::Rename { from, to, expected }, |inner| inner.rename(from, to, expected, now))
    }

    fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        self.around(StoreCall::History { id }, |inner| inner.history(id, limit))
    }

    fn get_version(&self, id: &MemoryId, version: u64) -> Result<Version, StoreError> {
        self.around(StoreCall::GetVersion { id, version }, |inner| inner.get_version(id, version))
    }

    fn restore(
        &self,
        id: &MemoryId,
        version: u64,
        expected: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.around(StoreCall::Restore { id, version }, |inner| inner.restore(id, version, expected, now))
    }

    fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        self.around(StoreCall::Redact { id, version }, |inner| inner.redact(id, version))
    }
}
