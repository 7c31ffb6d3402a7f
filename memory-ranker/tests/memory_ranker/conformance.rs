//! Runs `conformance/ranking.json` (format in `conformance/README.md`).

use memory_ranker::{DeterministicContextRanker, RankItem};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::model::Entry;

const VECTORS: &str = include_str!("../../../conformance/ranking.json");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    cases: Vec<Case>,
}

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
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VectorEntry {
    id: String,
    content: String,
    updated_at: String,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct Expected {
    id: String,
    score: usize,
}

fn instant(text: &str) -> i128 {
    OffsetDateTime::parse(text, &Rfc3339)
        .unwrap_or_else(|e| panic!("bad timestamp `{text}`: {e}"))
        .unix_timestamp_nanos()
}

fn cases() -> Vec<Case> {
    let file: File = serde_json::from_str(VECTORS).unwrap();
    assert_eq!(file.version, 1);
    file.cases
}

fn entries(case: &Case) -> Vec<Entry> {
    case.entries
        .iter()
        .map(|e| Entry { id: e.id.clone(), content: e.content.clone(), updated_at: instant(&e.updated_at) })
        .collect()
}

#[test]
fn ranking_vectors() {
    let cases = cases();
    assert!(cases.len() >= 20, "vector file lost cases");
    for case in &cases {
        let entries = entries(case);
        let ranker = DeterministicContextRanker::new(&case.query);
        let ranked = match case.mode {
            Mode::Search => ranker.rank(&entries),
            Mode::Plan => ranker.rank_all(&entries),
        };
        let actual: Vec<Expected> =
            ranked.iter().map(|r| Expected { id: r.id().to_owned(), score: r.score() }).collect();
        assert_eq!(actual, case.expected, "case `{}`", case.name);
    }
}

/// The vectors are also run against the reference model, so a wrong vector is told apart from a wrong ranker.
#[test]
fn ranking_vectors_agree_with_the_model() {
    for case in cases() {
        let entries = entries(&case);
        let expected: Vec<(String, usize)> = case.expected.iter().map(|e| (e.id.clone(), e.score)).collect();
        let model = crate::model::rank(&case.query, &entries, case.mode == Mode::Plan);
        assert_eq!(model, expected, "case `{}`", case.name);
    }
}
