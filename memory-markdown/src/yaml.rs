//! YAML as this crate reads it: hand-written text from a shared root, so with its resource limits on.
//!
//! Nothing this crate reads (frontmatter, `config.yaml`) needs an alias, so aliases are refused before anything is
//! expanded (a 25 KB frontmatter with one anchor referenced 5,000 times would otherwise cost gigabytes), nesting
//! deeper than [`MAX_DEPTH`] is refused as it is met, and text longer than [`MAX_BYTES`] is never parsed. The
//! parser is `serde-saphyr`, whose budgets count raw parser events before any value is built.

/// The longest YAML text this crate parses (frontmatter, `config.yaml`): 64 KiB.
pub(crate) const MAX_BYTES: usize = 64 * 1024;

/// The deepest nesting of sequences and mappings accepted.
pub(crate) const MAX_DEPTH: usize = 32;

/// Parses `text` as one YAML document into a JSON value (mapping keys as strings, in file order), with the limits
/// above. An empty document is `null`.
pub(crate) fn parse_value(text: &str) -> Result<serde_json::Value, String> {
    if text.len() > MAX_BYTES {
        return Err(format!("it is longer than {} KiB", MAX_BYTES / 1024));
    }
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Null);
    }
    let mut budget = serde_saphyr::Budget::default();
    budget.max_aliases = 0;
    budget.max_depth = MAX_DEPTH;
    budget.max_documents = 1;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    serde_saphyr::from_str_with_options(text, options).map_err(|e| one_line(&e.to_string()))
}

/// A message on one line, at most 300 characters (parser messages can quote the input at length).
pub(crate) fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(parse_value(&text).is_err());
        assert!(parse_value("a: &x 1\nb: *x\n").is_err());
        // An anchor alone is harmless.
        assert_eq!(parse_value("a: &x 1\n").unwrap(), serde_json::json!({"a": 1}));
    }

    #[test]
    fn depth_is_capped() {
        let nested = |depth: usize| format!("a: {}{}\n", "[".repeat(depth), "]".repeat(depth));
        assert!(parse_value(&nested(MAX_DEPTH - 1)).is_ok());
        assert!(parse_value(&nested(MAX_DEPTH + 1)).is_err());
        assert!(parse_value(&nested(20_000)).is_err());
    }

    #[test]
    fn size_is_capped() {
        let long = format!("a: \"{}\"\n", "x".repeat(MAX_BYTES));
        assert_eq!(parse_value(&long).unwrap_err(), "it is longer than 64 KiB");
    }

    #[test]
    fn plain_documents_parse_in_order() {
        let value = parse_value("z: 1\na: [x, {b: null}]\n").unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "a"]);
        assert_eq!(parse_value("").unwrap(), serde_json::Value::Null);
        assert_eq!(parse_value("# only a comment\n").unwrap(), serde_json::Value::Null);
    }
}
