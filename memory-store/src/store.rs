//! The adapter boundary: what every store does, the listing and batch requests it takes as data, and the create
//! rules every store applies the same way.

use std::cmp::Ordering;

use memory_id::{MemoryId, MemoryPrefix};
use memory_ranker::{FoldBuffer, Query, Ranked, Scorer, Trigrams};

use crate::Cancel;
use memory_entry::{
    ExistsReason, Filter, Key, Limits, MemoryEntry, MemoryType, NewEntry, Patch, ScopeRef, StoreError,
    Timestamp, UniqueKey, Version,
};

/// Which entries a listing returns with respect to expiry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Expiry {
    /// Only entries not expired at the listing's instant (search, context, export).
    #[default]
    Live,
    /// Only entries expired at the listing's instant (prune).
    Expired,
    /// Both.
    Any,
}

/// The order a listing's entries come in ([`Listing::with_order`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// By ID, in byte order (browsing, export, prune, the read plan). With a limit, the entries kept are still the
    /// first `limit` in rank order.
    #[default]
    Id,
    /// In rank order ([`Scored::cmp_rank`]: score, then newer, then ID), at most `limit` (search, and context by
    /// terms): what the caller shows, as it comes.
    Rank,
}

/// What a listing asks a store for, as data: the subtrees to look in, exact-match filters, query terms, expiry,
/// the instant, how many results the caller keeps and in which order. A store opens nothing outside the subtrees, scores each entry
/// it keeps exactly once with the ranker's own [`Scorer`] (so every store ranks alike), and may use the terms to
/// preselect (a database index) and the limit to leave out entries that cannot be among the first in rank order.
///
/// ```
/// use memory_entry::Timestamp;
/// use memory_store::{Expiry, Listing};
/// use memory_id::MemoryPrefix;
///
/// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
/// let listing = Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], now).with_query("postgres migration");
/// assert_eq!(listing.terms(), ["postgres", "migration"]);
/// assert_eq!(listing.expiry(), Expiry::Live);
/// ```
#[derive(Debug, Clone)]
pub struct Listing {
    roots: Vec<MemoryPrefix>,
    filter: Filter,
    scorer: Scorer,
    expiry: Expiry,
    now: Timestamp,
    limit: Option<usize>,
    order: Order,
    cancel: Cancel,
}

impl Listing {
    /// Every live entry inside `roots`, unfiltered, at `now`.
    pub fn new(roots: Vec<MemoryPrefix>, now: Timestamp) -> Listing {
        Listing {
            roots,
            filter: Filter::default(),
            scorer: Scorer::new(Query::parse("")),
            expiry: Expiry::Live,
            now,
            limit: None,
            order: Order::Id,
            cancel: Cancel::never(),
        }
    }

    /// Only entries whose fields hold every value of `filter`.
    #[must_use]
    pub fn with_filter(mut self, filter: Filter) -> Listing {
        self.filter = filter;
        self
    }

    /// Only entries that contain at least one term of `query` (folded as the ranker folds), each with its score. An
    /// empty query keeps every entry, with score 0.
    #[must_use]
    pub fn with_query(self, query: &str) -> Listing {
        self.with_terms(Query::parse(query))
    }

    /// [`Listing::with_query`] for a query already parsed (its terms split and folded once, where the caller read
    /// them).
    ///
    /// ```
    /// use memory_entry::Timestamp;
    /// use memory_store::Listing;
    /// use memory_ranker::Query;
    ///
    /// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// let listing = Listing::new(Vec::new(), now).with_terms(Query::from_terms(["Postgres", "migration"]));
    /// assert_eq!(listing.terms(), ["postgres", "migration"]);
    /// ```
    #[must_use]
    pub fn with_terms(mut self, query: Query) -> Listing {
        self.scorer = Scorer::new(query);
        self
    }

    /// Live, expired or both.
    #[must_use]
    pub fn with_expiry(mut self, expiry: Expiry) -> Listing {
        self.expiry = expiry;
        self
    }

    /// The caller keeps only the first `limit` entries in rank order ([`Scored::cmp_rank`]: score, then newer, then
    /// ID), so a store leaves out every entry that `limit` entries it returns rank before: it returns at most
    /// `limit` entries, in the listing's [`Order`].
    ///
    /// ```
    /// use memory_entry::Timestamp;
    /// use memory_store::Listing;
    /// use memory_id::MemoryPrefix;
    ///
    /// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// let listing = Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], now).with_limit(Some(20));
    /// assert_eq!(listing.limit(), Some(20));
    /// ```
    #[must_use]
    pub fn with_limit(mut self, limit: Option<usize>) -> Listing {
        self.limit = limit;
        self
    }

    /// Entries by ID (the default) or in rank order.
    ///
    /// ```
    /// use memory_entry::Timestamp;
    /// use memory_store::{Listing, Order};
    ///
    /// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// assert_eq!(Listing::new(Vec::new(), now).order(), Order::Id);
    /// assert_eq!(Listing::new(Vec::new(), now).with_order(Order::Rank).order(), Order::Rank);
    /// ```
    #[must_use]
    pub fn with_order(mut self, order: Order) -> Listing {
        self.order = order;
        self
    }

    /// Stops when `cancel` is raised: the store checks it before each file or row it reads
    /// ([`Listing::check_cancelled`]).
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Listing {
        self.cancel = cancel;
        self
    }

    /// The caller's cancellation flag ([`Cancel::never`] unless one was given).
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// What a store calls before each file or row it reads: `Ok` while the caller still wants the answer.
    ///
    /// ```
    /// use memory_entry::Timestamp;
    /// use memory_store::{Cancel, Listing};
    ///
    /// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// let cancel = Cancel::new();
    /// let listing = Listing::new(Vec::new(), now).with_cancel(cancel.clone());
    /// assert!(listing.check_cancelled().is_ok());
    /// cancel.cancel();
    /// assert!(listing.check_cancelled().is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Cancel::error`] once the caller has given up.
    pub fn check_cancelled(&self) -> Result<(), StoreError> {
        self.cancel.check()
    }

    /// How many entries, in rank order, the caller keeps; `None` for all.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The order of the entries a store returns.
    pub fn order(&self) -> Order {
        self.order
    }

    /// What a store returns for this listing, from the entries it kept (unordered, an ID perhaps twice): each ID
    /// once (the first kept), at most [`Listing::limit`] of them, the first in rank order, in the listing's
    /// [`Order`]. Every store ends its listing here, so that all of them answer alike.
    ///
    /// ```
    /// use memory_entry::{NewEntry, Timestamp};
    /// use memory_store::{Listing, Order, Scored};
    /// use memory_id::parse_memory_id;
    ///
    /// let at = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// let scored = |id: &str, score| {
    ///     Scored { entry: NewEntry::new(parse_memory_id(id).unwrap(), "x").into_entry(at), score }
    /// };
    /// let kept = || vec![scored("shared:c", 1), scored("shared:a", 1), scored("shared:b", 2)];
    /// let ids = |entries: Vec<Scored>| entries.into_iter().map(|s| s.entry.id.into_string()).collect::<Vec<_>>();
    /// let listing = Listing::new(Vec::new(), at).with_limit(Some(2));
    /// assert_eq!(ids(listing.finish(kept())), ["shared:a", "shared:b"]);
    /// assert_eq!(ids(listing.with_order(Order::Rank).finish(kept())), ["shared:b", "shared:a"]);
    /// ```
    pub fn finish(&self, mut entries: Vec<Scored>) -> Vec<Scored> {
        entries.sort_by(|a, b| a.entry.id.cmp(&b.entry.id));
        entries.dedup_by(|a, b| a.entry.id == b.entry.id);
        match self.order {
            Order::Id => {
                if let Some(limit) = self.limit
                    && entries.len() > limit
                {
                    entries.sort_by(Scored::cmp_rank);
                    entries.truncate(limit);
                    entries.sort_by(|a, b| a.entry.id.cmp(&b.entry.id));
                }
            }
            Order::Rank => {
                entries.sort_by(Scored::cmp_rank);
                entries.truncate(self.limit.unwrap_or(usize::MAX));
            }
        }
        entries
    }

    /// The subtrees to look in.
    pub fn roots(&self) -> &[MemoryPrefix] {
        &self.roots
    }

    /// The exact-match filters.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// The folded, distinct query terms.
    pub fn terms(&self) -> &[String] {
        self.scorer.query().terms()
    }

    /// The scorer every store scores with.
    pub fn scorer(&self) -> &Scorer {
        &self.scorer
    }

    /// Live, expired or both.
    pub fn expiry(&self) -> Expiry {
        self.expiry
    }

    /// The instant expiry is judged at.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Whether `entry` lies in a root and passes the expiry and the filters (the terms are [`Listing::score`]'s).
    pub fn admits(&self, entry: &MemoryEntry) -> bool {
        let expiry_ok = match self.expiry {
            Expiry::Live => !entry.is_expired(self.now),
            Expiry::Expired => entry.is_expired(self.now),
            Expiry::Any => true,
        };
        expiry_ok
            && self.filter.matches(&entry.fields)
            && self.roots.iter().any(|root| root.contains(&entry.id))
    }

    /// The entry's score (distinct terms found in its folded `id + "\n" + content`), or `None` when the query has
    /// terms and the entry holds none of them. `buffer` is reused across entries (one per thread).
    pub fn score(&self, entry: &MemoryEntry, buffer: &mut FoldBuffer) -> Option<usize> {
        self.score_text(entry.id.as_str(), &entry.content, buffer)
    }

    /// [`Listing::score`] of an entry with this ID and content, for a store that scores before it builds the
    /// entry (and builds only the entries it keeps).
    pub fn score_text(&self, id: &str, content: &str, buffer: &mut FoldBuffer) -> Option<usize> {
        if self.scorer.query().is_empty() {
            return Some(0);
        }
        let score = self.scorer.score(id, content, buffer);
        self.scorer.keeps(score).then_some(score)
    }

    /// [`Listing::score`] for an entry whose folded `id + "\n" + content` is at hand ([`FoldBuffer::fold_entry`]'s
    /// result, or a copy of it kept from an earlier listing): the same answer, without folding again.
    ///
    /// ```
    /// use memory_entry::Timestamp;
    /// use memory_store::Listing;
    /// use memory_id::MemoryPrefix;
    /// use memory_ranker::FoldBuffer;
    ///
    /// let now = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// let listing = Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], now).with_query("Postgres");
    /// let folded = FoldBuffer::new().fold_entry("shared:db", "PostgreSQL 16").to_owned();
    /// assert_eq!(listing.score_folded(&folded), Some(1));
    /// assert_eq!(listing.score_folded("shared:style\ntabs"), None);
    /// ```
    pub fn score_folded(&self, folded: &str) -> Option<usize> {
        if self.scorer.query().is_empty() {
            return Some(0);
        }
        let score = self.scorer.score_folded(folded);
        self.scorer.keeps(score).then_some(score)
    }

    /// [`Listing::score_folded`] with the text's [`Trigrams`] at hand (kept with it), so that terms the text cannot
    /// hold are not searched for ([`Scorer::score_folded_with`]): the same answer.
    pub fn score_folded_with(&self, folded: &str, trigrams: &Trigrams) -> Option<usize> {
        if self.scorer.query().is_empty() {
            return Some(0);
        }
        let score = self.scorer.score_folded_with(folded, trigrams);
        self.scorer.keeps(score).then_some(score)
    }
}

/// An entry a listing kept, with its score.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The entry.
    pub entry: MemoryEntry,
    /// Distinct query terms it contains (0 for an empty query).
    pub score: usize,
}

impl Scored {
    /// The rank order of `memory-ranker` ([`Ranked::cmp_rank`]): score descending, then `updated_at` newer first,
    /// then ID ascending in byte order. `Less` means `self` ranks first.
    ///
    /// ```
    /// use memory_entry::{MemoryEntry, NewEntry, Timestamp};
    /// use memory_store::Scored;
    /// use memory_id::parse_memory_id;
    ///
    /// let at = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
    /// let entry = |id: &str| NewEntry::new(parse_memory_id(id).unwrap(), "x").into_entry(at);
    /// let a = Scored { entry: entry("shared:a"), score: 1 };
    /// let b = Scored { entry: entry("shared:b"), score: 2 };
    /// assert!(b.cmp_rank(&a).is_lt());
    /// ```
    pub fn cmp_rank(&self, other: &Scored) -> Ordering {
        Ranked::new(&self.entry, self.score).cmp_rank(&Ranked::new(&other.entry, other.score))
    }
}

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

/// A storage adapter. It holds no policy: the service authorizes every call before it reaches the store, so changing
/// the adapter never changes permissions.
///
/// Every adapter must behave alike; the adapter suite (feature `testkit`, `memory_store::testkit`) checks it. In
/// short:
/// - `get`, `update`, `delete` and `rename` see only live entries: an expired entry is [`StoreError::NotFound`] with
///   `expired: true`;
/// - creates never overwrite and follow [`plan`], the create rules written once for every store;
/// - `update`, `delete` and `rename` compare `expected_version` with the stored version and write in one critical
///   section: of two racing writers exactly one wins, the other gets [`StoreError::VersionConflict`];
/// - the checks run in the order not found, version conflict, already exists, limit;
/// - timestamps are stored in whole milliseconds, so an entry reads back equal to what a write returned;
/// - `list` returns each entry once, sorted by ID, scored once with the listing's [`Scorer`].
pub trait MemoryStore: Send + Sync {
    /// The limits this store enforces (and the service validates against).
    fn limits(&self) -> &Limits;

    /// Reads one live entry.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (with `expired`) or [`StoreError::Storage`].
    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError>;

    /// The entries inside the listing's roots that it admits and whose score it keeps, each once, at most its limit,
    /// in its order ([`Listing::finish`]). Nothing outside the roots is opened.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`].
    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError>;

    /// Plans `batch` against the store as it is ([`plan`]); writes nothing.
    ///
    /// # Errors
    ///
    /// As [`plan`].
    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError>;

    /// Writes `batch` all-or-nothing: under the scope-root lock, plans it ([`plan`]) and, when `expected` is given,
    /// refuses with [`StoreError::BatchStale`] unless that plan equals it (the store changed since it was planned),
    /// then writes every create and update. Returns the entries written, in batch order (skips are left out).
    /// Every check precedes every write; a crash during the writes can leave a prefix of them.
    ///
    /// # Errors
    ///
    /// As [`plan`], [`StoreError::BatchStale`], or [`StoreError::Storage`].
    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError>;

    /// Creates an entry; never overwrites. A batch of one. It takes version 1, or, for an ID that existed before,
    /// one past the highest version that ID ever had (a store with history; [`next_version`](memory_entry::next_version)).
    ///
    /// # Errors
    ///
    /// [`StoreError::AlreadyExists`], [`StoreError::LimitExceeded`] or [`StoreError::Storage`].
    fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let id = entry.id.clone();
        self.write_batch(&Batch::create(entry), None, now)?.into_iter().next().ok_or_else(|| {
            StoreError::Storage(memory_entry::StorageError::new(
                memory_entry::StorageErrorKind::Corrupt,
                Some(&id),
                "the store wrote nothing for a create",
            ))
        })
    }

    /// Applies `patch` if the live entry is at `expected_version`; the new version is one more.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::VersionConflict`], [`StoreError::AlreadyExists`] (the patch would
    /// duplicate another entry's type, key and scope), [`StoreError::VersionLimit`] or [`StoreError::Storage`].
    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError>;

    /// Deletes the live entry if it is at `expected_version`. A store with history leaves a tombstone at the next
    /// version.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`], [`StoreError::VersionConflict`] or [`StoreError::Storage`].
    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError>;

    /// Deletes the entry if it has expired at `now` and is at `expected_version` (prune).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (no entry at all), [`StoreError::NotExpired`], [`StoreError::VersionConflict`] or
    /// [`StoreError::Storage`].
    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError>;

    /// Moves the live entry at `from`, if it is at `expected_version`, to `to` in one step: it keeps its fields,
    /// content and timestamps, and no moment shows both IDs or neither. A store with history gives it the next
    /// version of `to` ([`next_version`](memory_entry::next_version)) and leaves a tombstone at `from`; one without keeps
    /// its version. `to` follows the create rules
    /// ([`plan`]) in its scope root, where the moved entry's own (type, key, scope) never clashes with itself.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (`from`), [`StoreError::VersionConflict`], [`StoreError::AlreadyExists`] (`to`),
    /// [`StoreError::LimitExceeded`] (`to`'s scope root) or [`StoreError::Storage`].
    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError>;

    /// The kept versions of `id`, newest first (the `limit` newest with a limit): entries, redacted entries and
    /// tombstones, expired and deleted IDs included. A store that keeps no history reports
    /// [`StorageErrorKind::Unsupported`](memory_entry::StorageErrorKind::Unsupported).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] when `id` has no version at all, or [`StoreError::Storage`].
    fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        let _ = limit;
        Err(unsupported(id, "history"))
    }

    /// One kept version of `id` (a tombstone too; the caller decides what it means).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (no version at all), [`StoreError::VersionNotFound`] (never written or no longer
    /// kept) or [`StoreError::Storage`].
    fn get_version(&self, id: &MemoryId, version: u64) -> Result<Version, StoreError> {
        let kept = self.history(id, None)?;
        crate::rules::find_version(&kept, id, version).cloned()
    }

    /// Writes version `expected_version + 1` of `id` with the content and fields of `version`: `createdAt` of the
    /// current entry (of `version` when the ID is deleted, which brings it back under the create rules), `updatedAt`
    /// now. `expected_version` is checked first (the live entry's version, or the tombstone's on a deleted ID), then
    /// `version`; the limits in force now apply.
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] (no such ID, or the live entry has expired), [`StoreError::VersionConflict`],
    /// [`StoreError::VersionNotFound`] (also for a tombstone), [`StoreError::VersionRedacted`],
    /// [`StoreError::Field`], [`StoreError::AlreadyExists`], [`StoreError::LimitExceeded`],
    /// [`StoreError::VersionLimit`] or [`StoreError::Storage`].
    fn restore(
        &self,
        id: &MemoryId,
        version: u64,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let _ = (version, expected_version, now);
        Err(unsupported(id, "restore"))
    }

    /// Erases the content of `version` of `id` wherever the store keeps it; the other fields stay. Redacting a
    /// redacted version again is allowed.
    ///
    /// # Errors
    ///
    /// [`StoreError::RedactCurrent`] for the version the live entry is at, [`StoreError::NotFound`],
    /// [`StoreError::VersionNotFound`] (also for a tombstone) or [`StoreError::Storage`].
    fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        let _ = version;
        Err(unsupported(id, "redaction"))
    }
}

/// The error of a store that keeps no history.
fn unsupported(id: &MemoryId, what: &str) -> StoreError {
    StoreError::Storage(memory_entry::StorageError::new(
        memory_entry::StorageErrorKind::Unsupported,
        Some(id),
        format!("this store keeps no version history, so {what} is not available on it yet"),
    ))
}

macro_rules! forward_store {
    ($($outer:tt)*) => {
        impl<S: MemoryStore + ?Sized> MemoryStore for $($outer)*<S> {
            fn limits(&self) -> &Limits {
                (**self).limits()
            }
            fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
                (**self).get(id, now)
            }
            fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
                (**self).list(listing)
            }
            fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
                (**self).plan_batch(batch, now)
            }
            fn write_batch(
                &self,
                batch: &Batch,
                expected: Option<&BatchPlan>,
                now: Timestamp,
            ) -> Result<Vec<MemoryEntry>, StoreError> {
                (**self).write_batch(batch, expected, now)
            }
            fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
                (**self).create(entry, now)
            }
            fn update(
                &self,
                id: &MemoryId,
                expected_version: u64,
                patch: &Patch,
                now: Timestamp,
            ) -> Result<MemoryEntry, StoreError> {
                (**self).update(id, expected_version, patch, now)
            }
            fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
                (**self).delete(id, expected_version, now)
            }
            fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
                (**self).delete_expired(id, expected_version, now)
            }
            fn rename(
                &self,
                from: &MemoryId,
                to: &MemoryId,
                expected_version: u64,
                now: Timestamp,
            ) -> Result<MemoryEntry, StoreError> {
                (**self).rename(from, to, expected_version, now)
            }
            fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
                (**self).history(id, limit)
            }
            fn get_version(&self, id: &MemoryId, version: u64) -> Result<Version, StoreError> {
                (**self).get_version(id, version)
            }
            fn restore(
                &self,
                id: &MemoryId,
                version: u64,
                expected_version: u64,
                now: Timestamp,
            ) -> Result<MemoryEntry, StoreError> {
                (**self).restore(id, version, expected_version, now)
            }
            fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
                (**self).redact(id, version)
            }
        }
    };
}

// A store chosen at run time (Markdown or PostgreSQL) is a `Box<dyn MemoryStore>`; a shared one an `Arc`.
forward_store!(Box);
forward_store!(std::sync::Arc);

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
