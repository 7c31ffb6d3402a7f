//! Bounded YAML: how the small hand-written files read through this crate (frontmatter, `config.yaml`, agent
//! definitions) are parsed, since whoever can write them may be hostile.
//!
//! None of those files needs an alias, so aliases are refused before anything is expanded (a 25 KB document with
//! one anchor referenced 5,000 times would otherwise cost gigabytes); nesting deeper than [`MAX_DEPTH`] is refused
//! as it is met; only one document is read; and text longer than [`MAX_BYTES`] is never parsed. The parser is
//! `serde-saphyr`, whose budgets count raw parser events before any value is built. Portable.

use std::fmt;

use serde::de::DeserializeOwned;

/// The longest YAML text parsed: 64 KiB.
pub const MAX_BYTES: usize = 64 * 1024;

/// The deepest nesting of sequences and mappings accepted.
pub const MAX_DEPTH: usize = 32;

/// Why a YAML text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum YamlError {
    /// Longer than [`MAX_BYTES`]; never parsed.
    TooLong,
    /// The parser's message, as it gave it (it may span lines and quote the input: callers shorten it).
    Parse(String),
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YamlError::TooLong => write!(f, "it is longer than {} KiB", MAX_BYTES / 1024),
            YamlError::Parse(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for YamlError {}

/// Parses `text` as one YAML document into `T`, with the limits above.
///
/// # Errors
///
/// [`YamlError::TooLong`] for text over [`MAX_BYTES`]; [`YamlError::Parse`] for text that is not one YAML document
/// of `T` within the budget (an alias, too deep, a second document, a syntax or type error).
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    if text.len() > MAX_BYTES {
        return Err(YamlError::TooLong);
    }
    let mut budget = serde_saphyr::Budget::default();
    budget.max_aliases = 0;
    budget.max_depth = MAX_DEPTH;
    budget.max_documents = 1;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    serde_saphyr::from_str_with_options(text, options).map_err(|e| YamlError::Parse(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parse(text: &str) -> Result<Value, YamlError> {
        from_str(text)
    }

    #[test]
    fn aliases_are_refused_before_expansion() {
        let mut text = String::from("a: &x [1, 2, 3]\nb: [");
        for i in 0..5000 {
            if i > 0 {
                text.push_str(", ");
            }
            text.push_str("*x");
        }
        text.push_str("]\n");
        assert!(matches!(parse(&text), Err(YamlError::Parse(_))));
        assert!(matches!(parse("a: &x 1\nb: *x\n"), Err(YamlError::Parse(_))));
        // An anchor alone is harmless.
        assert_eq!(parse("a: &x 1\n").unwrap(), serde_json::json!({"a": 1}));
    }

    #[test]
    fn depth_is_capped() {
        let nested = |depth: usize| format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
        assert!(parse(&nested(MAX_DEPTH - 1)).is_ok());
        assert!(parse(&nested(MAX_DEPTH + 1)).is_err());
        assert!(parse(&nested(20_000)).is_err());
    }

    #[test]
    fn size_is_capped_and_one_document_is_read() {
        let long = format!("a: \"{}\"\n", "x".repeat(MAX_BYTES));
        assert_eq!(parse(&long).unwrap_err(), YamlError::TooLong);
        assert_eq!(YamlError::TooLong.to_string(), "it is longer than 64 KiB");
        assert!(matches!(parse("a: 1\n---\nb: 2\n"), Err(YamlError::Parse(_))));
    }

    #[test]
    fn plain_documents_parse_in_order() {
        let value = parse("z: 1\na: [x, {b: null}]\n").unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "a"]);
    }
}
