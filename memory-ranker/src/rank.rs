//! The rank order and the ranker.

use std::cmp::Ordering;

use crate::fold::FoldBuffer;
use crate::score::{Query, Scorer};

/// Ranking an item is the scorer's work on something this module defines: the method lives beside [`Ranked`], so
/// `score.rs` depends on nothing here and this module depends on `score.rs` alone.
impl Scorer {
    /// Scores `item` and pairs it with its score.
    pub fn rank_item<T: RankItem>(&self, item: T, buffer: &mut FoldBuffer) -> Ranked<T> {
        let score = self.score(item.id(), item.content(), buffer);
        Ranked::new(item, score)
    }
}

/// What the ranker needs to know about an entry. Implement it for your entry type; it is implemented for references
/// and for [`Ranked`], so ranked lists can be ranked again or handed to a context builder.
pub trait RankItem {
    /// The logical ID, as text. Ties are broken by it in byte order.
    fn id(&self) -> &str;

    /// The entry's content.
    fn content(&self) -> &str;

    /// When the entry was last updated, as an instant on any fixed scale (for example nanoseconds since the Unix
    /// epoch, UTC). Only the order matters: newer (larger) ranks first. The caller converts timestamps; the ranker
    /// reads no clock.
    fn updated_at(&self) -> i128;
}

impl<T: RankItem + ?Sized> RankItem for &T {
    fn id(&self) -> &str {
        (**self).id()
    }

    fn content(&self) -> &str {
        (**self).content()
    }

    fn updated_at(&self) -> i128 {
        (**self).updated_at()
    }
}

/// An entry with its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ranked<T> {
    item: T,
    score: usize,
}

impl<T> Ranked<T> {
    /// An item with the score it was given: for items scored elsewhere with this crate's [`Scorer`](crate::Scorer)
    /// (a store scores while it lists), to be ordered with [`sort_ranked`].
    pub fn new(item: T, score: usize) -> Ranked<T> {
        Ranked { item, score }
    }

    /// The entry.
    pub fn item(&self) -> &T {
        &self.item
    }

    /// How many distinct query terms the entry contains.
    pub fn score(&self) -> usize {
        self.score
    }

    /// The entry, dropping its score.
    pub fn into_item(self) -> T {
        self.item
    }
}

impl<T: RankItem> Ranked<T> {
    /// The rank order: score descending, then `updated_at` newer first, then ID ascending in byte order.
    ///
    /// Two entries with the same ID (which a store never holds) are finally ordered by content in byte order, so
    /// the order is total on everything the ranker looks at and never depends on the input order.
    pub fn cmp_rank(&self, other: &Ranked<T>) -> Ordering {
        other
            .score
            .cmp(&self.score)
            .then_with(|| other.item.updated_at().cmp(&self.item.updated_at()))
            .then_with(|| self.item.id().as_bytes().cmp(other.item.id().as_bytes()))
            .then_with(|| self.item.content().as_bytes().cmp(other.item.content().as_bytes()))
    }
}

impl<T: RankItem> RankItem for Ranked<T> {
    fn id(&self) -> &str {
        self.item.id()
    }

    fn content(&self) -> &str {
        self.item.content()
    }

    fn updated_at(&self) -> i128 {
        self.item.updated_at()
    }
}

/// Sorts scored entries into rank order (see [`Ranked::cmp_rank`]). For callers that score in parallel with
/// [`Scorer::rank_item`] and gather the results.
pub fn sort_ranked<T: RankItem>(ranked: &mut [Ranked<T>]) {
    ranked.sort_by(Ranked::cmp_rank);
}

/// Ranks memory entries by a query, deterministically: no embeddings, nothing learned, no clock. The same query on
/// the same entries gives the same order, always.
///
/// * Terms: the query split on Unicode whitespace, each folded (NFC, then full lower-case mapping), distinct.
/// * Score: the number of terms found as substrings of the folded `id + "\n" + content`.
/// * Order: score descending, then `updated_at` newer first, then ID ascending (byte order).
/// * [`rank`](Self::rank) (search) keeps only entries with score ≥ 1, or every entry when the query is empty;
///   [`rank_all`](Self::rank_all) (the task read plan) orders every entry and drops none.
///
/// ```
/// use memory_ranker::{DeterministicContextRanker, RankItem};
///
/// struct Note(&'static str, &'static str, i128);
/// impl RankItem for Note {
///     fn id(&self) -> &str { self.0 }
///     fn content(&self) -> &str { self.1 }
///     fn updated_at(&self) -> i128 { self.2 }
/// }
///
/// let notes = [
///     Note("shared:db", "PostgreSQL 16", 2),
///     Note("shared:auth", "Tokens via OAuth; DB sessions", 1),
///     Note("shared:style", "Tabs, not spaces", 3),
/// ];
/// let ranker = DeterministicContextRanker::new("db oauth");
/// let ranked = ranker.rank(&notes);
/// let ids: Vec<_> = ranked.iter().map(|r| (r.id(), r.score())).collect();
/// assert_eq!(ids, [("shared:auth", 2), ("shared:db", 1)]); // shared:style does not match and is dropped
/// assert_eq!(ranker.rank_all(&notes).len(), 3);
/// ```
#[derive(Debug, Clone)]
pub struct DeterministicContextRanker {
    scorer: Scorer,
}

impl DeterministicContextRanker {
    /// A ranker for query text (see [`Query::parse`]).
    pub fn new(query: &str) -> DeterministicContextRanker {
        DeterministicContextRanker::with_query(Query::parse(query))
    }

    /// A ranker for a parsed query.
    pub fn with_query(query: Query) -> DeterministicContextRanker {
        DeterministicContextRanker { scorer: Scorer::new(query) }
    }

    /// The query.
    pub fn query(&self) -> &Query {
        self.scorer.query()
    }

    /// The scorer, to share with threads that score entries themselves.
    pub fn scorer(&self) -> &Scorer {
        &self.scorer
    }

    /// Search: scores every item, keeps those with score ≥ 1 (all of them when the query is empty) and returns them
    /// in rank order.
    pub fn rank<I>(&self, items: I) -> Vec<Ranked<I::Item>>
    where
        I: IntoIterator,
        I::Item: RankItem,
    {
        self.ranked(items, |score| self.scorer.keeps(score))
    }

    /// Ordering without filtering: every item, in rank order, whatever its score. The task read plan uses this:
    /// the query orders the plan's entries but never removes one.
    pub fn rank_all<I>(&self, items: I) -> Vec<Ranked<I::Item>>
    where
        I: IntoIterator,
        I::Item: RankItem,
    {
        self.ranked(items, |_| true)
    }

    /// The items whose score `keeps` accepts, each with its score, in rank order (left out before the sort).
    fn ranked<I>(&self, items: I, keeps: impl Fn(usize) -> bool) -> Vec<Ranked<I::Item>>
    where
        I: IntoIterator,
        I::Item: RankItem,
    {
        let mut buffer = FoldBuffer::new();
        let mut ranked: Vec<_> = items
            .into_iter()
            .map(|item| self.scorer.rank_item(item, &mut buffer))
            .filter(|r| keeps(r.score))
            .collect();
        sort_ranked(&mut ranked);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Item(&'static str, &'static str, i128);

    impl RankItem for Item {
        fn id(&self) -> &str {
            self.0
        }
        fn content(&self) -> &str {
            self.1
        }
        fn updated_at(&self) -> i128 {
            self.2
        }
    }

    fn ids<T: RankItem>(ranked: &[Ranked<T>]) -> Vec<&str> {
        ranked.iter().map(|r| r.id()).collect()
    }

    #[test]
    fn ties_break_by_time_then_id() {
        let items = [Item("shared:b", "x", 1), Item("shared:a", "x", 1), Item("shared:c", "x", 2)];
        let ranked = DeterministicContextRanker::new("x").rank(&items);
        assert_eq!(ids(&ranked), ["shared:c", "shared:a", "shared:b"]);
    }

    #[test]
    fn id_order_is_bytewise() {
        let items = [Item("shared:a", "", 0), Item("shared:B", "", 0), Item("shared:é", "", 0)];
        let ranked = DeterministicContextRanker::new("").rank(&items);
        assert_eq!(ids(&ranked), ["shared:B", "shared:a", "shared:é"]);
    }

    #[test]
    fn rank_all_keeps_non_matching() {
        let items = [Item("shared:a", "no", 5), Item("shared:b", "yes", 0)];
        let ranker = DeterministicContextRanker::new("yes");
        assert_eq!(ids(&ranker.rank(&items)), ["shared:b"]);
        assert_eq!(ids(&ranker.rank_all(&items)), ["shared:b", "shared:a"]);
    }

    #[test]
    fn ranked_lists_can_be_ranked_again() {
        let items = [Item("shared:a", "x", 0)];
        let ranker = DeterministicContextRanker::new("x");
        let once = ranker.rank(&items);
        let twice = ranker.rank(&once);
        assert_eq!(twice.len(), 1);
        assert_eq!(twice[0].score(), 1);
    }
}
