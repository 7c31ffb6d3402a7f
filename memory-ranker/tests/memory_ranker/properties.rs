//! Properties of the ranker, checked against the reference model `testkit::model::ranking`.

use memory_ranker::{DeterministicContextRanker, FoldBuffer, Query, RankItem, Scorer, Trigrams, fold};
use proptest::prelude::*;

use testkit::model::ranking::{self as model, Entry};

/// Characters where folding is subtle: case pairs with expanding or contextual lower case (ß/ẞ, İ/ı, Σ/σ/ς),
/// combining marks in both orders, precomposed Vietnamese, Hangul that NFC composes, singletons (Ω, K), Unicode
/// whitespace, and `\n`/`\r`, mixed with plain ASCII.
const TRICKY: &str = "[a-cA-CsSiIß\u{1E9E}\u{130}\u{131}\u{3A3}\u{3C3}\u{3C2}\u{39F}\u{3BF}e\u{E9}\u{C9}\u{301}\u{302}\
                      \u{323}\u{307}\u{1EC7}\u{1EC6}\u{1100}\u{1161}\u{11A8}\u{AC00}\u{2126}\u{212A}\u{1FEF}\u{37E}\u{341}`; \t\n\r\u{3000}.:'-]";

fn tricky_text(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::string::string_regex(&format!("{TRICKY}{{0,{max}}}")).unwrap(),
        1 => any::<String>(),
        1 => proptest::string::string_regex(&format!("[ -~]{{0,{max}}}")).unwrap(),
    ]
}

/// Queries built from the same small alphabet, so that they often match.
fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::string::string_regex(&format!("{TRICKY}{{0,12}}")).unwrap(),
        1 => Just(String::new()),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    (tricky_text(6), tricky_text(40), 0i128..4)
        .prop_map(|(id, content, updated_at)| Entry::new(&format!("shared:{id}"), &content, updated_at))
}

fn entries() -> impl Strategy<Value = Vec<Entry>> {
    proptest::collection::vec(entry(), 0..12)
}

fn ids_scores<T: RankItem>(ranked: &[memory_ranker::Ranked<T>]) -> Vec<(String, usize)> {
    ranked.iter().map(|r| (r.id().to_owned(), r.score())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The fast fold (ASCII in place, NFC quick check, per-character lower case) equals NFC + to_lowercase of the
    /// joined text.
    #[test]
    fn fold_buffer_equals_reference(id in tricky_text(12), content in tricky_text(40)) {
        let mut buffer = FoldBuffer::new();
        buffer.fold_entry("shared:warm-up", "ΣΑΣ é"); // a used buffer must not leak into the next entry
        prop_assert_eq!(buffer.fold_entry(&id, &content), fold(&format!("{id}\n{content}")));
    }

    /// `fold` is the definition: NFC, then the full lower-case mapping.
    #[test]
    fn fold_equals_model(text in tricky_text(40)) {
        prop_assert_eq!(fold(&text), model::fold(&text));
    }

    /// The joined text folds piecewise (the proof in `FoldBuffer`'s docs).
    #[test]
    fn fold_splits_at_newline(a in tricky_text(20), b in tricky_text(20)) {
        prop_assert_eq!(fold(&format!("{a}\n{b}")), format!("{}\n{}", fold(&a), fold(&b)));
    }

    /// The scorer counts exactly the model's terms, and never more than the query has.
    #[test]
    fn scorer_equals_reference(query in query(), id in tricky_text(8), content in tricky_text(40)) {
        let scorer = Scorer::new(Query::parse(&query));
        let mut buffer = FoldBuffer::new();
        let score = scorer.score(&id, &content, &mut buffer);
        prop_assert_eq!(score, model::score(&query, &id, &content));
        prop_assert!(score <= scorer.query().len());
        let terms = model::terms(&query);
        prop_assert_eq!(scorer.query().terms(), terms.as_slice());
    }

    /// The runs-of-three prefilter never changes a score: a cached text's `Trigrams` give the same answer as
    /// searching the text, for any query (terms taken from the text itself too, so that most of them occur).
    #[test]
    fn the_trigram_prefilter_never_changes_a_score(
        query in query(),
        id in tricky_text(8),
        content in tricky_text(40),
        cut in (0usize..48, 1usize..12),
    ) {
        let folded = fold(&format!("{id}\n{content}"));
        let trigrams = Trigrams::of(&folded);
        let (start, len) = cut;
        let cut: String = folded.chars().skip(start).take(len).collect();
        let inside = cut.split_whitespace().next().unwrap_or_default().to_owned();
        for query in [query, inside.clone(), format!("{inside} {inside}x")] {
            let scorer = Scorer::new(Query::parse(&query));
            prop_assert_eq!(scorer.score_folded_with(&folded, &trigrams), scorer.score_folded(&folded), "{:?}", query);
        }
        if !inside.is_empty() {
            prop_assert!(trigrams.holds(&Trigrams::of(&inside)));
        }
    }

    /// Terms are folded, distinct and free of whitespace.
    #[test]
    fn terms_are_distinct_folded_words(query in query()) {
        let parsed = Query::parse(&query);
        for (i, term) in parsed.terms().iter().enumerate() {
            prop_assert!(!term.is_empty());
            prop_assert!(!term.chars().any(char::is_whitespace));
            prop_assert_eq!(&fold(term), term);
            prop_assert!(!parsed.terms()[..i].contains(term));
        }
    }

    /// Search and plan order equal the model's, including the filter.
    #[test]
    fn rank_equals_model(query in query(), entries in entries()) {
        let ranker = DeterministicContextRanker::new(&query);
        prop_assert_eq!(ids_scores(&ranker.rank(&entries)), model::rank(&query, &entries, false));
        prop_assert_eq!(ids_scores(&ranker.rank_all(&entries)), model::rank(&query, &entries, true));
    }

    /// The order does not depend on the input order, and two runs agree.
    #[test]
    fn order_is_independent_of_input_order(
        query in query(),
        (entries, shuffled) in entries().prop_flat_map(|e| (Just(e.clone()), Just(e).prop_shuffle())),
    ) {
        let ranker = DeterministicContextRanker::new(&query);
        let first = ranker.rank_all(&entries);
        let again = DeterministicContextRanker::new(&query).rank_all(&entries);
        let other = ranker.rank_all(&shuffled);
        let key = |r: &memory_ranker::Ranked<&Entry>| (r.id().to_owned(), r.content().to_owned(), r.score());
        prop_assert_eq!(first.iter().map(key).collect::<Vec<_>>(), again.iter().map(key).collect::<Vec<_>>());
        prop_assert_eq!(first.iter().map(key).collect::<Vec<_>>(), other.iter().map(key).collect::<Vec<_>>());
    }

    /// Adjacent ranked entries are in rank order, the comparison is antisymmetric, and a search keeps exactly the
    /// entries with a positive score (or all of them for an empty query).
    #[test]
    fn order_is_total_and_filter_is_exact(query in query(), entries in entries()) {
        let ranker = DeterministicContextRanker::new(&query);
        let all = ranker.rank_all(&entries);
        for pair in all.windows(2) {
            prop_assert_ne!(pair[0].cmp_rank(&pair[1]), std::cmp::Ordering::Greater);
            prop_assert_eq!(pair[0].cmp_rank(&pair[1]), pair[1].cmp_rank(&pair[0]).reverse());
        }
        let kept = ranker.rank(&entries);
        let expected = all.iter().filter(|r| ranker.query().is_empty() || r.score() >= 1).count();
        prop_assert_eq!(kept.len(), expected);
        if ranker.query().is_empty() {
            prop_assert!(all.iter().all(|r| r.score() == 0));
        }
    }
}
