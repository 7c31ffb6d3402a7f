//! The create rules, written once for every store: a batch of creates (an import's, with what to do with an
//! entry that exists), the store's view of one scope root that the rules read (`ScopeView`), and `plan`, which
//! decides each entry's step before anything is written.

use memory_entry::{
    ExistsReason, Key, Limits, MemoryEntry, MemoryType, NewEntry, Patch, ScopeRef, StoreError, Timestamp,
    UniqueKey,
};
use memory_id::{MemoryId, MemoryPrefix};

/// What a batch does with an entry that already exists (`alp memory import --on-existing` in `docs/CLI.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnExisting {
    /// Refuse the whole batch.
    #[default]
    Fail,
    /// Leave it as it is.
    Skip,
    /// Update it when its content or its ALP 80 fields (type, key, scope, importance, source, ttl) differ; leave it
    /// when they are the same.
    Update,
}

/// Creates, all in one scope root, written together: every check before any write, under the scope-root lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    entries: Vec<NewEntry>,
    on_existing: OnExisting,
    /// IDs of the batch its writer may not read.
    unreadable: Vec<MemoryId>,
}

impl Batch {
    /// A batch of `entries` (all in the scope root of the first; others are refused when planned).
    pub fn new(entries: Vec<NewEntry>, on_existing: OnExisting) -> Batch {
        Batch { entries, on_existing, unreadable: Vec::new() }
    }

    /// One create that never overwrites.
    pub fn create(entry: NewEntry) -> Batch {
        Batch { entries: vec![entry], on_existing: OnExisting::Fail, unreadable: Vec::new() }
    }

    /// Names the IDs of the batch its writer may not read. With [`OnExisting::Update`], an existing entry among
    /// them is updated even when what the batch holds equals it, so that whether it was skipped as unchanged never
    /// tells the writer anything about content it may not read.
    #[must_use]
    pub fn with_unreadable(mut self, ids: impl IntoIterator<Item = MemoryId>) -> Batch {
        self.unreadable = ids.into_iter().collect();
        self
    }

    /// Whether the writer of the batch may not read `id` ([`Batch::with_unreadable`]).
    pub(crate) fn is_unreadable(&self, id: &MemoryId) -> bool {
        self.unreadable.contains(id)
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[NewEntry] {
        &self.entries
    }

    /// The scope root of the batch (of its first entry); `None` for an empty batch.
    pub fn scope_root(&self) -> Option<MemoryPrefix> {
        self.entries.first().map(|entry| entry.id.scope_root())
    }
}

/// Why a batch leaves an entry alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// It exists ([`OnExisting::Skip`]).
    Exists,
    /// It exists with the same content and fields ([`OnExisting::Update`]).
    Unchanged,
}

impl SkipReason {
    /// `exists` or `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Exists => "exists",
            SkipReason::Unchanged => "unchanged",
        }
    }
}

/// What a batch will do with one of its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Create it.
    Create(MemoryId),
    /// Update the existing entry, which is at `expected_version`.
    Update {
        /// The entry.
        id: MemoryId,
        /// Its version when planned.
        expected_version: u64,
    },
    /// Leave it.
    Skip {
        /// The entry.
        id: MemoryId,
        /// Why.
        reason: SkipReason,
    },
}

/// The steps of a batch, in its order: what [`plan`] decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchPlan {
    steps: Vec<Step>,
}

impl BatchPlan {
    /// The steps, one per entry of the batch, in order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
}

/// What an existing name in a scope root is, as a store's view sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Existing {
    /// Nothing is there.
    None,
    /// An entry (live or expired).
    Entry(Box<MemoryEntry>),
    /// Something the store will not read as an entry (a file too large, with two links, …): the name is taken.
    Unreadable,
}

/// What a store knows about one scope root while it holds that root's lock: enough to apply the create rules
/// ([`plan`]). A store implements it over its own storage; the rules are written once.
pub trait ScopeView {
    /// How many entries the scope root holds, expired and unreadable ones included (the limit counts names).
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn count(&self) -> Result<u64, StoreError>;

    /// What is at `id`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] (a symlink at the name, …).
    fn existing(&self, id: &MemoryId) -> Result<Existing, StoreError>;

    /// An entry of the scope root that cannot coexist with `id` ([`paths_clash`]), if any (the smallest).
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn clash(&self, id: &MemoryId) -> Result<Option<MemoryId>, StoreError>;

    /// The smallest ID of an entry of the scope root other than `id` holding this (type, key, scope), if any.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn holder(
        &self,
        id: &MemoryId,
        unique: (Option<MemoryType>, &Key, Option<&ScopeRef>),
    ) -> Result<Option<MemoryId>, StoreError>;
}

/// Refuses a write that would give `id` the (type, key, scope) that `holder`, another entry of its scope root,
/// already has ([`ScopeView::holder`], or a store's own search); nothing when `holder` is `None`.
///
/// # Errors
///
/// [`StoreError::AlreadyExists`] ([`ExistsReason::DuplicateKey`]) naming `holder`.
pub fn check_key_free(id: &MemoryId, holder: Option<MemoryId>) -> Result<(), StoreError> {
    match holder {
        Some(holder) => Err(StoreError::AlreadyExists {
            id: id.clone(),
            existing: holder.into_string(),
            reason: ExistsReason::DuplicateKey,
        }),
        None => Ok(()),
    }
}

/// The create rules, once for every store (`docs/CLI.md`, `docs/STORAGE.md`): for each entry of `batch`, in order, an
/// entry (live or expired) at its ID is `AlreadyExists` (or, with [`OnExisting::Skip`]/[`OnExisting::Update`], a skip
/// or an update), an entry whose path clashes is `AlreadyExists` (`FileDirectoryClash`), another entry (in the store or
/// earlier in the batch) holding its (type, key, scope) is `AlreadyExists` (`DuplicateKey`), and creates beyond
/// `max_entries_per_scope_root` are `LimitExceeded`. Every entry must lie in one scope root. Nothing is written: a
/// store calls this under the scope-root lock, then writes the plan.
///
/// # Errors
///
/// The first rule an entry breaks, in batch order; [`StoreError::Storage`] from the view.
pub fn plan(
    view: &dyn ScopeView,
    limits: &Limits,
    batch: &Batch,
    now: Timestamp,
) -> Result<BatchPlan, StoreError> {
    let Some(scope_root) = batch.scope_root() else { return Ok(BatchPlan::default()) };
    let mut steps = Vec::with_capacity(batch.entries.len());
    let mut created: Vec<(&MemoryId, Option<UniqueKey<'_>>)> = Vec::new();
    let mut count = view.count()?;
    for new in &batch.entries {
        let id = &new.id;
        if id.scope_root() != scope_root {
            return Err(StoreError::Storage(memory_entry::StorageError::new(
                memory_entry::StorageErrorKind::Corrupt,
                Some(id),
                format!("a batch lies in one scope root; `{id}` is not in `{scope_root}`"),
            )));
        }
        let exists =
            |reason| StoreError::AlreadyExists { id: id.clone(), existing: id.as_str().to_owned(), reason };
        if created.iter().any(|(other, _)| *other == id) {
            return Err(exists(ExistsReason::SameId));
        }
        let step = match view.existing(id)? {
            Existing::None => None,
            Existing::Unreadable => match batch.on_existing {
                OnExisting::Skip => Some(Step::Skip { id: id.clone(), reason: SkipReason::Exists }),
                _ => return Err(exists(ExistsReason::SameId)),
            },
            Existing::Entry(entry) => {
                let expired = entry.is_expired(now);
                match batch.on_existing {
                    OnExisting::Skip => Some(Step::Skip { id: id.clone(), reason: SkipReason::Exists }),
                    _ if expired => return Err(exists(ExistsReason::Expired)),
                    OnExisting::Fail => return Err(exists(ExistsReason::SameId)),
                    OnExisting::Update if same_import_fields(&entry, new) && !batch.is_unreadable(id) => {
                        Some(Step::Skip { id: id.clone(), reason: SkipReason::Unchanged })
                    }
                    OnExisting::Update => {
                        if let Some(unique) = new.fields.unique_key() {
                            check_key_free(id, view.holder(id, unique)?)?;
                        }
                        Some(Step::Update { id: id.clone(), expected_version: entry.version })
                    }
                }
            }
        };
        if let Some(step) = step {
            steps.push(step);
            continue;
        }
        let batch_clash =
            created.iter().map(|(other, _)| *other).filter(|other| paths_clash(id, other)).min();
        if let Some(other) = view.clash(id)?.or_else(|| batch_clash.cloned()) {
            return Err(StoreError::AlreadyExists {
                id: id.clone(),
                existing: other.into_string(),
                reason: ExistsReason::FileDirectoryClash,
            });
        }
        if let Some(unique) = new.fields.unique_key() {
            let in_batch = created
                .iter()
                .filter(|(_, other)| *other == Some(unique))
                .map(|(other, _)| (*other).clone())
                .min();
            check_key_free(id, view.holder(id, unique)?.or(in_batch))?;
        }
        if count >= limits.max_entries_per_scope_root {
            return Err(StoreError::LimitExceeded {
                scope_root,
                limit: limits.max_entries_per_scope_root,
                count,
            });
        }
        count += 1;
        created.push((id, new.fields.unique_key()));
        steps.push(Step::Create(id.clone()));
    }
    Ok(BatchPlan { steps })
}

/// Whether an import would change nothing: the import's patch (`Patch::from(new)`: its content and every ALP 80
/// field it carries) leaves the entry's content and fields as they are.
fn same_import_fields(existing: &MemoryEntry, new: &NewEntry) -> bool {
    let mut patched = existing.clone();
    Patch::from(new).apply(&mut patched, existing.updated_at).is_ok()
        && patched.content == existing.content
        && patched.fields == existing.fields
}

/// Refuses a batch whose plan, made again under the scope-root lock, differs from the one the caller planned (and
/// audited) before: the store changed in between, so nothing is written.
///
/// # Errors
///
/// [`StoreError::BatchStale`] naming the first entry whose step changed.
pub fn check_plan_unchanged(planned: &BatchPlan, expected: &BatchPlan) -> Result<(), StoreError> {
    if planned == expected {
        return Ok(());
    }
    let changed = planned.steps().iter().zip(expected.steps()).find(|(a, b)| a != b).map(|(step, _)| step);
    match changed.or_else(|| planned.steps().first()).or_else(|| expected.steps().first()) {
        Some(Step::Create(id) | Step::Update { id, .. } | Step::Skip { id, .. }) => {
            Err(StoreError::BatchStale { id: id.clone() })
        }
        None => Ok(()),
    }
}

/// Whether two IDs cannot both exist, because in the Markdown layout the file of one would be a directory on the
/// path of the other: `shared:x` is the file `shared/x.md`, while `shared:x.md:y` lives in the directory
/// `shared/x.md/`. Every store refuses such a pair (a create names the other ID), so that any store can be copied
/// to a Markdown root and changing stores never changes which IDs may coexist.
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_store::paths_clash;
///
/// let id = |text| parse_memory_id(text).unwrap();
/// assert!(paths_clash(&id("shared:x"), &id("shared:x.md:y")));
/// assert!(paths_clash(&id("project:alp:notes:a.md:b"), &id("project:alp:notes:a")));
/// assert!(!paths_clash(&id("shared:x"), &id("shared:x.md")));
/// ```
pub fn paths_clash(a: &MemoryId, b: &MemoryId) -> bool {
    let in_directory_of = |file: &MemoryId, other: &MemoryId| {
        other.as_str().strip_prefix(file.as_str()).is_some_and(|rest| rest.starts_with(".md:"))
    };
    in_directory_of(a, b) || in_directory_of(b, a)
}
