//! YAML as this crate reads it: hand-written text from a shared root, so with its resource limits on (aliases
//! refused before expansion, nesting capped, one document, 64 KiB: the bounded parser of `memory_fs::yaml`).

use memory_fs::yaml::YamlError;

/// The longest YAML text this crate parses (frontmatter, `config.yaml`): 64 KiB.
pub(crate) const MAX_BYTES: usize = memory_fs::yaml::MAX_BYTES;

/// Parses `text` as one YAML document into a JSON value (mapping keys as strings, in file order), with the limits
/// of `memory_fs::yaml`. An empty document is `null`. The error is one line.
pub(crate) fn parse_value(text: &str) -> Result<serde_json::Value, String> {
    if text.len() > MAX_BYTES {
        return Err(YamlError::TooLong.to_string());
    }
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Null);
    }
    memory_fs::yaml::from_str(text).map_err(|e| match e {
        YamlError::Parse(message) => memory_id::shown_message(&message).to_string(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits themselves are tested in `memory_fs::yaml`; here, that this crate's errors stay as they were.
    #[test]
    fn errors_are_one_line_and_size_is_capped() {
        let long = format!("a: \"{}\"\n", "x".repeat(MAX_BYTES));
        assert_eq!(parse_value(&long).unwrap_err(), "it is longer than 64 KiB");
        let err = parse_value("a: &x 1\nb: *x\n").unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        assert_eq!(parse_value("").unwrap(), serde_json::Value::Null);
        assert_eq!(parse_value("# only a comment\n").unwrap(), serde_json::Value::Null);
    }
}
