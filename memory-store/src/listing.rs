//! A listing: what a store's `list` is asked, as data (subtrees, filter, folded terms, expiry, instant, order,
//! limit, the caller's cancel flag), and how every store scores, admits, cuts and orders what it finds.

use std::cmp::Ordering;

use memory_entry::{Filter, MemoryEntry, StoreError, Timestamp};
use memory_id::MemoryPrefix;
use memory_ranker::{FoldBuffer, Query, Ranked, Scorer, Trigrams};

use crate::Cancel;

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
