//! Uses only the public API, the way an adopter would.

use memory_ranker::{
    DeterministicContextRanker, FoldBuffer, Query, RankItem, Ranked, Scorer, fold, sort_ranked,
};

struct Note {
    id: String,
    body: String,
    at: i128,
}

impl RankItem for Note {
    fn id(&self) -> &str {
        &self.id
    }
    fn content(&self) -> &str {
        &self.body
    }
    fn updated_at(&self) -> i128 {
        self.at
    }
}

fn note(id: &str, body: &str, at: i128) -> Note {
    Note { id: id.to_owned(), body: body.to_owned(), at }
}

#[test]
fn search_then_read_scores() {
    let notes =
        vec![note("shared:a", "Đà Nẵng", 1), note("shared:b", "đà lạt", 2), note("shared:c", "Hà Nội", 3)];
    let ranked = DeterministicContextRanker::new("ĐÀ").rank(&notes);
    let got: Vec<_> = ranked.iter().map(|r| (r.item().id.as_str(), r.score())).collect();
    assert_eq!(got, [("shared:b", 1), ("shared:a", 1)]);
}

#[test]
fn owned_items_can_be_ranked_and_taken_back() {
    let notes = vec![note("shared:a", "x", 1), note("shared:b", "x", 2)];
    let ranked: Vec<Ranked<Note>> = DeterministicContextRanker::new("x").rank(notes);
    let ids: Vec<String> = ranked.into_iter().map(|r| r.into_item().id).collect();
    assert_eq!(ids, ["shared:b", "shared:a"]);
}

#[test]
fn parallel_scoring_gives_the_sequential_order() {
    let notes: Vec<Note> = (0..200)
        .map(|i| note(&format!("shared:n{i}"), &format!("item {} of {}", i % 7, i % 3), i128::from(i % 5)))
        .collect();
    let ranker = DeterministicContextRanker::new("1 item");
    let sequential_ranked = ranker.rank(&notes);
    let sequential: Vec<&str> = sequential_ranked.iter().map(|r| r.id()).collect();

    let scorer: &Scorer = ranker.scorer();
    let mut gathered: Vec<Ranked<&Note>> = std::thread::scope(|scope| {
        let handles: Vec<_> = notes
            .chunks(37)
            .map(|chunk| {
                scope.spawn(move || {
                    let mut buffer = FoldBuffer::new();
                    chunk
                        .iter()
                        .map(|n| scorer.rank_item(n, &mut buffer))
                        .filter(|r| scorer.keeps(r.score()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    sort_ranked(&mut gathered);
    let parallel: Vec<&str> = gathered.iter().map(|r| r.id()).collect();
    assert_eq!(parallel, sequential);
}

#[test]
fn query_and_fold_are_usable_alone() {
    let query = Query::from_terms(["Việt", "VIỆT nam"]);
    assert_eq!(query.terms(), ["việt", "nam"]);
    assert_eq!(query.len(), 2);
    assert_eq!(fold("ẞ"), "ß");
    let ranker = DeterministicContextRanker::with_query(query.clone());
    assert_eq!(ranker.query(), &query);
}
