//! Runs every vector of `conformance/ids.json`; the format is described in `conformance/README.md`.

use std::path::PathBuf;

use memory_id::{InvalidIdReason, MemoryId, MemoryPrefix, parse_memory_id};
use serde::Deserialize;

#[path = "../../../conformance/text.rs"]
mod text;

use text::Text;

fn expand_all(texts: &[Text]) -> Vec<String> {
    texts.iter().map(Text::expand).collect()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IdVectors {
    version: u32,
    valid: Vec<ValidId>,
    invalid: Vec<Invalid>,
    prefixes: PrefixVectors,
    prefix_contains: Vec<Contains>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ValidId {
    input: Text,
    scope: String,
    owner: Option<String>,
    segments: Vec<Text>,
    path_segments: Vec<Text>,
    scope_root: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Invalid {
    input: Text,
    reason: String,
    #[serde(default)]
    segment: Option<usize>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrefixVectors {
    valid: Vec<ValidPrefix>,
    invalid: Vec<Invalid>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ValidPrefix {
    input: Text,
    scope: String,
    owner: Option<String>,
    segments: Vec<Text>,
    is_id: bool,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Contains {
    prefix: Text,
    id: Text,
    contains: bool,
    #[serde(default)]
    note: Option<String>,
}

fn load() -> IdVectors {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/ids.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let vectors: IdVectors =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(vectors.version, 1, "unknown vector format version");
    vectors
}

/// Collects every failing vector, so one run reports all of them.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    fn finish(self, section: &str, ran: usize) {
        assert!(ran > 0, "{section}: no vectors");
        assert!(
            self.0.is_empty(),
            "{} of {ran} {section} vectors failed:\n  {}",
            self.0.len(),
            self.0.join("\n  ")
        );
    }
}

/// The 1-based segment position an error reports, if it is about one segment.
fn reason_segment(reason: InvalidIdReason) -> Option<usize> {
    match reason {
        InvalidIdReason::Segment { index, .. } => Some(index),
        _ => None,
    }
}

fn is_one_line(message: &str) -> bool {
    !message.chars().any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
}

#[test]
fn valid_ids() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.valid {
        let input = v.input.expand();
        let _ = &v.note;
        let id = match parse_memory_id(&input) {
            Ok(id) => id,
            Err(e) => {
                failures.check(false, || format!("{input:?}: refused: {e}"));
                continue;
            }
        };
        let segments: Vec<&str> = id.segments().collect();
        let path: Vec<&str> = id.path_segments().collect();
        let checks = [
            ("as_str", id.as_str() == input),
            ("display", id.to_string() == input),
            ("scope", id.scope().keyword() == v.scope),
            ("owner", id.owner() == v.owner.as_deref()),
            ("segments", segments == expand_all(&v.segments)),
            ("segment_count", id.segment_count() == v.segments.len()),
            ("pathSegments", path == expand_all(&v.path_segments)),
            ("scopeRoot", id.scope_root().as_str() == v.scope_root),
            ("from_str", input.parse::<MemoryId>().as_ref() == Ok(&id)),
            (
                "prefix",
                MemoryPrefix::parse(&input).is_ok_and(|p| p.contains(&id) && p.to_id() == Some(id.clone())),
            ),
            ("scope root contains", id.scope_root().contains(&id)),
        ];
        for (what, ok) in checks {
            failures.check(ok, || format!("{input:?}: {what} differs (got {id:?})"));
        }
    }
    failures.finish("valid id", vectors.valid.len());
}

fn check_invalid(
    failures: &mut Failures,
    v: &Invalid,
    what: &str,
    result: Result<(), memory_id::InvalidMemoryIdError>,
) {
    let input = v.input.expand();
    let _ = &v.note;
    match result {
        Ok(()) => failures.check(false, || format!("{what} {input:?}: accepted, expected {}", v.reason)),
        Err(e) => {
            let reason = e.reason();
            failures.check(reason.code() == v.reason, || {
                format!("{what} {input:?}: reason {}, expected {}", reason.code(), v.reason)
            });
            failures.check(reason_segment(reason) == v.segment, || {
                format!("{what} {input:?}: segment {:?}, expected {:?}", reason_segment(reason), v.segment)
            });
            failures.check(e.input() == input, || format!("{what} {input:?}: error input {:?}", e.input()));
            let message = e.to_string();
            failures.check(is_one_line(&message), || {
                format!("{what} {input:?}: message not one line: {message:?}")
            });
        }
    }
}

#[test]
fn invalid_ids() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.invalid {
        let input = v.input.expand();
        check_invalid(&mut failures, v, "id", parse_memory_id(&input).map(drop));
        // Everything but the part count applies to prefixes too, with the same reason.
        if v.reason != "too_few_parts" {
            check_invalid(&mut failures, v, "prefix of id vector", MemoryPrefix::parse(&input).map(drop));
        }
    }
    failures.finish("invalid id", vectors.invalid.len());
}

#[test]
fn valid_prefixes() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.prefixes.valid {
        let input = v.input.expand();
        let _ = &v.note;
        let prefix = match MemoryPrefix::parse(&input) {
            Ok(prefix) => prefix,
            Err(e) => {
                failures.check(false, || format!("prefix {input:?}: refused: {e}"));
                continue;
            }
        };
        let segments: Vec<&str> = prefix.segments().collect();
        let checks = [
            ("as_str", prefix.as_str() == input),
            ("display", prefix.to_string() == input),
            ("scope", prefix.scope().keyword() == v.scope),
            ("owner", prefix.owner() == v.owner.as_deref()),
            ("segments", segments == expand_all(&v.segments)),
            ("isId", prefix.to_id().is_some() == v.is_id),
            ("isId agrees with parse_memory_id", parse_memory_id(&input).is_ok() == v.is_id),
            ("contains itself", prefix.contains_prefix(&prefix)),
        ];
        for (what, ok) in checks {
            failures.check(ok, || format!("prefix {input:?}: {what} differs (got {prefix:?})"));
        }
    }
    failures.finish("valid prefix", vectors.prefixes.valid.len());
}

#[test]
fn invalid_prefixes() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.prefixes.invalid {
        let input = v.input.expand();
        check_invalid(&mut failures, v, "prefix", MemoryPrefix::parse(&input).map(drop));
    }
    failures.finish("invalid prefix", vectors.prefixes.invalid.len());
}

#[test]
fn prefix_contains() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.prefix_contains {
        let (prefix, id) = (v.prefix.expand(), v.id.expand());
        let _ = &v.note;
        let (Ok(p), Ok(i)) = (MemoryPrefix::parse(&prefix), parse_memory_id(&id)) else {
            failures.check(false, || format!("{prefix:?} contains {id:?}: an input is invalid"));
            continue;
        };
        failures.check(p.contains(&i) == v.contains, || {
            format!("{prefix:?} contains {id:?}: got {}, expected {}", p.contains(&i), v.contains)
        });
        failures.check(p.contains_prefix(&i.to_prefix()) == v.contains, || {
            format!("{prefix:?} contains_prefix {id:?}: disagrees with contains")
        });
    }
    failures.finish("prefixContains", vectors.prefix_contains.len());
}
