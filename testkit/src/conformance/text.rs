//! The Text notation of the conformance vectors (`conformance/README.md`, "Text notation"): a string, or pieces to
//! concatenate where a piece may repeat a text, so that a 1024-byte input is written in one line.

use serde::Deserialize;

/// A string in a vector: plain, or pieces to concatenate, where a piece may repeat a text.
///
/// ```
/// # use testkit::conformance::Text;
/// let text: Text = serde_json::from_str(r#"["shared:", {"repeat": "ab", "times": 2}]"#).unwrap();
/// assert_eq!(text.expand(), "shared:abab");
/// ```
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Text {
    /// A JSON string, as it is.
    Plain(String),
    /// Pieces to concatenate.
    Pieces(Vec<Piece>),
}

/// One piece of a [`Text`].
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Piece {
    /// A JSON string, as it is.
    Plain(String),
    /// `{"repeat": Text, "times": n}`.
    Repeat(Repeat),
}

/// `{"repeat": Text, "times": n}`: the text written `n` times. No other field is allowed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    repeat: Text,
    times: usize,
}

impl Text {
    /// The string the notation stands for.
    pub fn expand(&self) -> String {
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

/// Every text of a list, expanded.
pub fn expand_all(texts: &[Text]) -> Vec<String> {
    texts.iter().map(Text::expand).collect()
}
