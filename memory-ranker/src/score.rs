//! Queries and scoring: how many distinct query terms an entry contains.

use std::collections::HashSet;

use memchr::memmem;

use crate::fold::{FoldBuffer, fold};

/// A parsed query: distinct folded terms, in the order they first appear.
///
/// The text is split on Unicode whitespace ([`char::is_whitespace`]), each term is folded with [`fold`] (NFC, then
/// [`str::to_lowercase`]), and a term equal to an earlier one after folding is dropped. A query with no terms (empty
/// or only whitespace) is *empty*: it matches every entry with score 0.
///
/// ```
/// use memory_ranker::Query;
///
/// let query = Query::parse("  Việt   VIỆT\tstraße ");
/// assert_eq!(query.terms(), ["việt", "straße"]);
/// assert!(Query::parse(" \n ").is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    terms: Vec<String>,
}

impl Query {
    /// Parses query text.
    pub fn parse(text: &str) -> Query {
        Query::from_terms([text])
    }

    /// Builds a query from several pieces, as a command line gives them (`alp memory search auth token`). Each piece
    /// is split on whitespace too, so `from_terms(["a b", "c"])` equals `parse("a b c")`.
    pub fn from_terms<I>(pieces: I) -> Query
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut seen = HashSet::new();
        let mut terms = Vec::new();
        for piece in pieces {
            for raw in piece.as_ref().split(char::is_whitespace).filter(|t| !t.is_empty()) {
                let term = fold(raw);
                if seen.insert(term.clone()) {
                    terms.push(term);
                }
            }
        }
        Query { terms }
    }

    /// The distinct folded terms, in order of first appearance.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// How many distinct terms the query has; the highest score an entry can reach.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether the query has no terms (then every entry is kept, with score 0).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// Scores entries against one query. Build it once per query and share it: it is `Send + Sync` and cheap to clone,
/// so a parallel walk can score in every thread, each with its own [`FoldBuffer`].
///
/// The score of an entry is the number of distinct query terms that occur as substrings of
/// `fold(id + "\n" + content)`. Each term is searched with a [`memmem::Finder`] built once, here.
///
/// ```
/// use memory_ranker::{FoldBuffer, Query, Scorer};
///
/// let scorer = Scorer::new(Query::parse("auth TOKEN missing"));
/// let mut buffer = FoldBuffer::new();
/// assert_eq!(scorer.score("shared:auth", "Tokens expire after 1h", &mut buffer), 2);
/// assert_eq!(scorer.score("shared:db", "PostgreSQL", &mut buffer), 0);
/// assert!(!scorer.keeps(0));
/// ```
#[derive(Debug, Clone)]
pub struct Scorer {
    query: Query,
    finders: Vec<memmem::Finder<'static>>,
    /// Every term is ASCII.
    ascii_terms: bool,
    /// The runs of three bytes of each term, in the order of the finders.
    term_trigrams: Vec<Trigrams>,
}

/// The runs of three adjacent bytes a text holds, as a 1024-bit set (each run hashed to one bit): if a term holds a
/// run the text does not, the term does not occur in the text. A term shorter than three bytes holds no run, so it
/// passes for every text; a term that occurs always passes.
///
/// How often an absent term passes, measured on English and Vietnamese prose cut into pieces of 800 bytes, with 300
/// words of 4 to 12 letters: 9.8% of the time, where the same set of byte pairs let 31% through (a word made of
/// common pairs, such as "migration", passed for 87% of generated notes that did not hold it, and for none with runs
/// of three).
///
/// ```
/// use memory_ranker::Trigrams;
///
/// let text = Trigrams::of("postgresql 16");
/// assert!(text.holds(&Trigrams::of("gres")));
/// assert!(!text.holds(&Trigrams::of("tabs")));
/// assert!(text.holds(&Trigrams::of("xy")), "two bytes hold no run of three: they may occur anywhere");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigrams([u64; 16]);

impl Trigrams {
    /// The runs of three bytes in `text`.
    pub fn of(text: &str) -> Trigrams {
        let mut bits = [0u64; 16];
        for run in text.as_bytes().windows(3) {
            let value = u32::from(run[0]) << 16 | u32::from(run[1]) << 8 | u32::from(run[2]);
            let hash = value.wrapping_mul(0x9E37_79B1) >> 22;
            bits[(hash >> 6) as usize] |= 1 << (hash & 63);
        }
        Trigrams(bits)
    }

    /// Whether every run of `other` is one of these.
    pub fn holds(&self, other: &Trigrams) -> bool {
        self.0.iter().zip(&other.0).all(|(mine, theirs)| theirs & !mine == 0)
    }
}

impl Scorer {
    /// A scorer for `query`.
    pub fn new(query: Query) -> Scorer {
        let finders = query.terms.iter().map(|t| memmem::Finder::new(t.as_bytes()).into_owned()).collect();
        let ascii_terms = query.terms.iter().all(|t| t.is_ascii());
        let term_trigrams = query.terms.iter().map(|t| Trigrams::of(t)).collect();
        Scorer { query, finders, ascii_terms, term_trigrams }
    }

    /// The query this scorer counts terms of.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// The score of an entry: how many distinct terms occur in its folded `id + "\n" + content`.
    /// Always at most [`Query::len`]; an empty query scores 0 without folding anything.
    ///
    /// When every term is ASCII and the text holds no character that folding could turn into ASCII or join to an
    /// ASCII letter (no combining diacritical mark, no `İ`, Kelvin sign or Greek varia), the terms are searched in
    /// the text with only its ASCII letters lower-cased: the same answer (a property test checks it), without
    /// Unicode normalisation or case mapping.
    pub fn score(&self, id: &str, content: &str, buffer: &mut FoldBuffer) -> usize {
        if self.finders.is_empty() {
            return 0;
        }
        if self.ascii_terms
            && let Some(text) = buffer.ascii_lowered_entry(id, content)
        {
            return self.score_folded(text);
        }
        let text = buffer.fold_entry(id, content);
        self.score_folded(text)
    }

    /// The score of an entry whose folded `id + "\n" + content` is already at hand (for example kept by a cache
    /// from an earlier call, or folded once with [`FoldBuffer::fold_entry`] for several purposes): how many distinct
    /// terms occur in `folded`. Equal to [`Scorer::score`] whenever `folded` is `fold(id + "\n" + content)`; it does
    /// not fold `folded` again, so text that is not folded scores what its bytes contain.
    ///
    /// ```
    /// use memory_ranker::{FoldBuffer, Query, Scorer};
    ///
    /// let scorer = Scorer::new(Query::parse("auth TOKEN"));
    /// let mut buffer = FoldBuffer::new();
    /// let folded = buffer.fold_entry("shared:auth", "Tokens expire after 1h").to_owned();
    /// assert_eq!(scorer.score_folded(&folded), 2);
    /// assert_eq!(scorer.score_folded(&folded), scorer.score("shared:auth", "Tokens expire after 1h", &mut buffer));
    /// ```
    pub fn score_folded(&self, folded: &str) -> usize {
        let text = folded.as_bytes();
        self.finders.iter().filter(|finder| finder.find(text).is_some()).count()
    }

    /// [`Scorer::score_folded`] of a text whose [`Trigrams`] are at hand: a term holding a run of three bytes the
    /// text does not hold cannot occur in it, so it is not searched for. The same answer, for a store that keeps
    /// folded texts and their runs between queries.
    ///
    /// ```
    /// use memory_ranker::{Query, Scorer, Trigrams};
    ///
    /// let scorer = Scorer::new(Query::parse("postgres tabs"));
    /// let folded = "shared:db\npostgresql 16";
    /// assert_eq!(scorer.score_folded_with(folded, &Trigrams::of(folded)), scorer.score_folded(folded));
    /// ```
    pub fn score_folded_with(&self, folded: &str, trigrams: &Trigrams) -> usize {
        let text = folded.as_bytes();
        self.finders
            .iter()
            .zip(&self.term_trigrams)
            .filter(|(finder, term)| trigrams.holds(term) && finder.find(text).is_some())
            .count()
    }

    /// Whether an entry with this score is kept by a search: every entry when the query is empty, otherwise only
    /// entries with a score of at least 1.
    pub fn keeps(&self, score: usize) -> bool {
        self.query.is_empty() || score >= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_dropped_after_folding() {
        assert_eq!(Query::parse("Foo foo FOO bar").terms(), ["foo", "bar"]);
        // NFD and NFC spellings of one word are one term.
        assert_eq!(Query::parse("cafe\u{301} café").terms(), ["café"]);
    }

    #[test]
    fn unicode_whitespace_separates_terms() {
        assert_eq!(Query::parse("a\u{3000}b\u{a0}c\u{2028}d").terms(), ["a", "b", "c", "d"]);
    }

    #[test]
    fn pieces_are_split_too() {
        assert_eq!(Query::from_terms(["a b", "c", "A"]), Query::parse("a b c"));
    }

    #[test]
    fn scorer_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Scorer>();
        assert_send_sync::<FoldBuffer>();
    }

    #[test]
    fn empty_query_keeps_everything_with_zero() {
        let scorer = Scorer::new(Query::parse(""));
        let mut buffer = FoldBuffer::new();
        assert_eq!(scorer.score("shared:a", "anything", &mut buffer), 0);
        assert!(scorer.keeps(0));
    }

    #[test]
    fn score_folded_agrees_with_score() {
        let scorer = Scorer::new(Query::parse("ΟΔΟΣ team café"));
        let mut buffer = FoldBuffer::new();
        for (id, content) in [("shared:Team", "ΟΔΟΣ"), ("shared:x", "Cafe\u{301}"), ("shared:y", "none")]
        {
            let expected = scorer.score(id, content, &mut buffer);
            let folded = crate::fold(&format!("{id}\n{content}"));
            assert_eq!(scorer.score_folded(&folded), expected, "{id}");
        }
        assert_eq!(Scorer::new(Query::parse("")).score_folded("anything"), 0);
    }

    #[test]
    fn trigrams_never_hide_a_term_that_occurs() {
        let text = "shared:Đà lạt\nthe PostgreSQL migration, tabs \u{1F600} ΟΔΟΣ";
        let folded = crate::fold(text);
        let trigrams = Trigrams::of(&folded);
        for end in 1..=folded.len() {
            for start in 0..end {
                if let Some(term) = folded.get(start..end) {
                    assert!(trigrams.holds(&Trigrams::of(term)), "{term:?}");
                }
            }
        }
        let scorer = Scorer::new(Query::parse("postgresql tabs ladder οδος x"));
        assert_eq!(scorer.score_folded_with(&folded, &trigrams), scorer.score_folded(&folded));
    }

    #[test]
    fn term_matches_the_id_too() {
        let scorer = Scorer::new(Query::parse("TEAM"));
        let mut buffer = FoldBuffer::new();
        assert_eq!(scorer.score("shared:team", "nothing", &mut buffer), 1);
    }
}
