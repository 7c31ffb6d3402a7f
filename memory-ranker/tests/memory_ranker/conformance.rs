//! Runs `conformance/ranking.json` (format in `conformance/README.md`), against the ranker and against the reference
//! model `testkit::model::ranking`.

use memory_ranker::{DeterministicContextRanker, RankItem};
use serde::Deserialize;
use testkit::conformance::{VectorEntry, load_cases, run};
use testkit::model::ranking::{self, Entry};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    name: String,
    #[serde(default)]
    mode: Mode,
    query: String,
    entries: Vec<VectorEntry>,
    expected: Vec<Expected>,
}

#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
enum Mode {
    #[default]
    Search,
    Plan,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    id: String,
    score: usize,
}

fn cases() -> Vec<Case> {
    let cases: Vec<Case> = load_cases("ranking.json");
    assert!(cases.len() >= 20, "vector file lost cases");
    for case in &cases {
        let plain = case.entries.iter().all(VectorEntry::is_plain);
        assert!(plain, "case `{}`: a ranking entry has only id, content and updatedAt", case.name);
    }
    cases
}

fn entries(case: &Case) -> Vec<Entry> {
    case.entries.iter().map(VectorEntry::entry).collect()
}

fn expected(case: &Case) -> Vec<(String, usize)> {
    case.expected.iter().map(|e| (e.id.clone(), e.score)).collect()
}

#[test]
fn ranking_vectors() {
    run("ranking", &cases(), |case, failures| {
        let entries = entries(case);
        let ranker = DeterministicContextRanker::new(&case.query);
        let ranked = match case.mode {
            Mode::Search => ranker.rank(&entries),
            Mode::Plan => ranker.rank_all(&entries),
        };
        let actual: Vec<(String, usize)> = ranked.iter().map(|r| (r.id().to_owned(), r.score())).collect();
        let expected = expected(case);
        failures.check(actual == expected, || {
            format!("case `{}`: got {actual:?}, expected {expected:?}", case.name)
        });
    });
}

/// The vectors are also run against the reference model, so a wrong vector is told apart from a wrong ranker.
#[test]
fn ranking_vectors_agree_with_the_model() {
    run("ranking (model)", &cases(), |case, failures| {
        let model = ranking::rank(&case.query, &entries(case), case.mode == Mode::Plan);
        let expected = expected(case);
        failures.check(model == expected, || {
            format!("case `{}`: model {model:?}, expected {expected:?}", case.name)
        });
    });
}
