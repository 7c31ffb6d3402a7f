//! The Text notation of the conformance vectors (`conformance/README.md`, "Text notation"): a string, or pieces to
//! concatenate where a piece may repeat a text. Shared by the Rust runners of `ids.json` and `grants.json`, which
//! include this file with `#[path]`.

use serde::Deserialize;

/// A string in a vector: plain, or pieces to concatenate, where a piece may repeat a text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Text {
    Plain(String),
    Pieces(Vec<Piece>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Piece {
    Plain(String),
    Repeat(Repeat),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Repeat {
    repeat: Text,
    times: usize,
}

impl Text {
    /// The string the notation stands for.
    pub(crate) fn expand(&self) -> String {
        match self {
            Text::Plain(s) => s.clone(),
            Text::Pieces(pieces) => pieces
                .iter()
                .map(|p| match p {
                    Piece::Plain(s) => s.clone(),
                    Piece::Repeat(r) => r.repeat.expand().repeat(r.times),
                })
                .collect(),
        }
    }
}
