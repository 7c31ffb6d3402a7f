//! The reference model: the ranking definition written as plainly as possible, with no fast paths.

use memory_ranker::fold;

/// An entry of the model and of the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) id: String,
    pub(crate) content: String,
    pub(crate) updated_at: i128,
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

/// Distinct folded terms.
pub(crate) fn terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in query.split(char::is_whitespace).filter(|t| !t.is_empty()).map(fold) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// The number of distinct terms in the folded `id + "\n" + content`.
pub(crate) fn score(query: &str, id: &str, content: &str) -> usize {
    let text = fold(&format!("{id}\n{content}"));
    terms(query).iter().filter(|term| text.contains(term.as_str())).count()
}

/// Ranks by the definition: score, then newer, then id bytes (then content bytes for duplicate ids).
pub(crate) fn rank(query: &str, entries: &[Entry], keep_all: bool) -> Vec<(String, usize)> {
    let empty = terms(query).is_empty();
    let mut scored: Vec<(usize, &Entry)> = entries
        .iter()
        .map(|e| (score(query, &e.id, &e.content), e))
        .filter(|(s, _)| keep_all || empty || *s >= 1)
        .collect();
    scored.sort_by(|(sa, a), (sb, b)| {
        (std::cmp::Reverse(*sa), std::cmp::Reverse(a.updated_at), a.id.as_bytes(), a.content.as_bytes()).cmp(
            &(std::cmp::Reverse(*sb), std::cmp::Reverse(b.updated_at), b.id.as_bytes(), b.content.as_bytes()),
        )
    });
    scored.into_iter().map(|(s, e)| (e.id.clone(), s)).collect()
}
