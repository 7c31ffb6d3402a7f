//! The ranking definition of `conformance/README.md`, written as plainly as possible, with no fast
//! paths; and [`Entry`], the entry the ranker's and the context's tests rank and plan.
//!
//! ```
//! use testkit::model::ranking::{self, Entry};
//! let entries = [Entry::new("shared:a", "Đà Nẵng", 1), Entry::new("shared:b", "Hà Nội", 2)];
//! assert_eq!(ranking::rank("đà", &entries, false), [("shared:a".to_owned(), 1)]);
//! assert_eq!(ranking::rank("", &entries, false).len(), 2);
//! ```

use std::cmp::Reverse;

use unicode_normalization::UnicodeNormalization;

/// An entry as the ranker and the read plan see it. [`Entry::new`] makes an unscoped entry without type or key;
/// the builder methods add the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The logical ID.
    pub id: String,
    /// The content.
    pub content: String,
    /// When it was last updated, in any unit that orders (the tests use small integers or Unix nanoseconds).
    pub updated_at: i128,
    /// The ALP 80 type (`project`, `architecture`, …).
    pub memory_type: Option<String>,
    /// The lookup key.
    pub key: Option<String>,
    /// The scope reference (a task or feature); `None` or `project` is unscoped.
    pub scope: Option<String>,
    /// Whether the importance is `critical`.
    pub critical: bool,
}

impl Entry {
    /// An unscoped entry without type or key.
    pub fn new(id: &str, content: &str, updated_at: i128) -> Entry {
        Entry { id: id.to_owned(), content: content.to_owned(), updated_at, ..Entry::default() }
    }

    /// The entry with the ALP 80 type `memory_type`.
    pub fn typed(mut self, memory_type: &str) -> Entry {
        self.memory_type = Some(memory_type.to_owned());
        self
    }

    /// The entry with the lookup key `key`.
    pub fn key(mut self, key: &str) -> Entry {
        self.key = Some(key.to_owned());
        self
    }

    /// The entry scoped to `scope`.
    pub fn scope(mut self, scope: &str) -> Entry {
        self.scope = Some(scope.to_owned());
        self
    }

    /// The entry with importance `critical`.
    pub fn critical(mut self) -> Entry {
        self.critical = true;
        self
    }
}

impl memory_ranker::RankItem for Entry {
    fn id(&self) -> &str {
        &self.id
    }

    fn content(&self) -> &str {
        &self.content
    }

    fn updated_at(&self) -> i128 {
        self.updated_at
    }
}

impl memory_context::PlanItem for Entry {
    fn scope_ref(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    fn memory_type(&self) -> Option<&str> {
        self.memory_type.as_deref()
    }

    fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    fn is_critical(&self) -> bool {
        self.critical
    }
}

/// Fold: NFC, then the full Unicode lower-case mapping (not case folding: `ß` stays `ß`).
pub fn fold(text: &str) -> String {
    text.nfc().collect::<String>().to_lowercase()
}

/// The query's terms: split on Unicode white space, empty pieces dropped, each folded, later repeats dropped.
pub fn terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in query.split(char::is_whitespace).filter(|t| !t.is_empty()).map(fold) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// The score: how many terms are substrings of the folded `id + "\n" + content`.
pub fn score(query: &str, id: &str, content: &str) -> usize {
    let text = fold(&format!("{id}\n{content}"));
    terms(query).iter().filter(|term| text.contains(term.as_str())).count()
}

/// The ranked `(id, score)` list: score descending, then newer first, then ID in byte order (then content, for
/// duplicate IDs). A search (`keep_all` false) keeps only entries with a score of at least 1, unless the query has
/// no terms; a plan (`keep_all`) keeps everything.
pub fn rank(query: &str, entries: &[Entry], keep_all: bool) -> Vec<(String, usize)> {
    let empty = terms(query).is_empty();
    let mut scored: Vec<(usize, &Entry)> = entries
        .iter()
        .map(|e| (score(query, &e.id, &e.content), e))
        .filter(|(s, _)| keep_all || empty || *s >= 1)
        .collect();
    scored.sort_by_key(|(s, e)| order_key(*s, e));
    scored.into_iter().map(|(s, e)| (e.id.clone(), s)).collect()
}

/// The rank order of a scored entry as a key that sorts ascending.
pub(crate) fn order_key(score: usize, entry: &Entry) -> (Reverse<usize>, Reverse<i128>, &[u8], &[u8]) {
    (Reverse(score), Reverse(entry.updated_at), entry.id.as_bytes(), entry.content.as_bytes())
}
