//! The Rust side of the language-neutral conformance vectors in `conformance/` (format in `conformance/README.md`):
//! loading a vector file, the Text notation, and the bookkeeping every runner shares.
//!
//! The runners themselves stay with the crates they check (`memory-id`, `memory-policy`, `memory-ranker`,
//! `memory-context`, each in `tests/<crate>/conformance.rs`) and describe their file's sections with
//! `deny_unknown_fields`, so a vector never silently tests less than it says. What they share lives here:
//!
//! - [`load`] and [`load_cases`] read `conformance/<file>` from the repository root and check its `version`;
//! - [`Text`] is the notation for long inputs;
//! - [`Invalid`] is the refused-input vector that `ids.json` and `grants.json` have in common;
//! - [`run`] checks every vector of a section and [`Failures`] collects what fails, so one run reports all of them;
//! - [`VectorEntry`] is an entry of `ranking.json` and `context.json`, and [`instant`] reads their `updatedAt`;
//! - [`versions`] and [`audit`] describe `versions.json` and `audit.json` and play or read their vectors.

pub mod audit;
mod text;
pub mod versions;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub use text::{Piece, Repeat, Text, expand_all};

use crate::model::id::Refusal;
use crate::model::ranking::Entry;

/// The vector format version this runner understands.
const VERSION: u64 = 1;

/// Reads `conformance/<file>` and returns its sections as `T`: the top-level object without its `version`, which
/// must be 1. `T` says which sections there are (use `deny_unknown_fields`).
///
/// # Panics
///
/// When the file cannot be read, is not the format `T` describes, or has another version.
pub fn load<T: DeserializeOwned>(file: &str) -> T {
    let path = crate::replay::repository().join("conformance").join(file);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut top: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let version = top.remove("version").and_then(|v| v.as_u64());
    assert_eq!(version, Some(VERSION), "{}: unknown vector format version", path.display());
    serde_json::from_value(serde_json::Value::Object(top))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `cases` of a file shaped `{"version": 1, "cases": [...]}` (`ranking.json`, `context.json`).
///
/// # Panics
///
/// As [`load`], and when the file has no case.
pub fn load_cases<C: DeserializeOwned>(file: &str) -> Vec<C> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Cases<C> {
        cases: Vec<C>,
    }
    let cases = load::<Cases<C>>(file).cases;
    assert!(!cases.is_empty(), "{file}: no cases");
    cases
}

/// An input that must be refused: `invalid` and `prefixes.invalid` of `ids.json`, `grants.invalid` and
/// `roles.invalid` of `grants.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invalid {
    /// The input.
    pub input: Text,
    /// The reason code it is refused with (`too_long`, `empty`, …).
    pub reason: String,
    /// For the reasons about one segment: its 1-based position, the scope keyword being segment 1.
    #[serde(default)]
    pub segment: Option<usize>,
    /// Free text; never changes what is checked.
    #[serde(default)]
    pub note: Option<String>,
}

/// What a parser said when it refused an [`Invalid`] vector's input.
#[derive(Debug)]
pub struct Refused<'a> {
    /// The reason code and, for the reasons about one segment, its 1-based position.
    pub reason: Refusal,
    /// The input the error carries.
    pub input: &'a str,
    /// The error message.
    pub message: &'a str,
}

impl Invalid {
    /// Records a failure unless the input was refused as the vector says (`refused` is `None` when the parser
    /// accepted it): a refusal must have the vector's reason and segment, carry the input as given, and have a
    /// one-line message. `what` names the parser in failure messages.
    pub fn check(&self, failures: &mut Failures, what: &str, refused: Option<Refused<'_>>) {
        let input = self.input.expand();
        let expected = (self.reason.as_str(), self.segment);
        let Some(Refused { reason, input: carried, message }) = refused else {
            return failures.check(false, || format!("{what} {input:?}: accepted, expected {expected:?}"));
        };
        failures.check(reason == expected, || {
            format!("{what} {input:?}: refused {reason:?}, expected {expected:?}")
        });
        failures.check(carried == input, || format!("{what} {input:?}: the error carries {carried:?}"));
        failures
            .check(is_one_line(message), || format!("{what} {input:?}: message not one line: {message:?}"));
    }
}

/// Collects every failing vector of a section, so one run reports all of them rather than the first.
///
/// ```should_panic
/// # use testkit::conformance::Failures;
/// let mut failures = Failures::default();
/// for (input, ok) in [("shared:a", true), ("shared:", false)] {
///     failures.check(ok, || format!("{input:?}: refused"));
/// }
/// failures.finish("valid id", 2); // panics, naming `"shared:"`
/// ```
#[derive(Debug, Default)]
pub struct Failures(Vec<String>);

impl Failures {
    /// Records `what` as a failure unless `ok`.
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    /// Ends the section: `ran` vectors ran.
    ///
    /// # Panics
    ///
    /// When any check failed (listing every failure), or when the section ran no vector at all.
    pub fn finish(self, section: &str, ran: usize) {
        assert!(ran > 0, "{section}: no vectors");
        assert!(
            self.0.is_empty(),
            "{} of {ran} {section} vectors failed:\n  {}",
            self.0.len(),
            self.0.join("\n  ")
        );
    }
}

/// Runs `check` on every vector of a section, collecting the failures, then [finishes](Failures::finish) the section:
/// one call per section of a vector file.
///
/// # Panics
///
/// When any vector failed (listing every failure), or when `vectors` is empty.
pub fn run<V>(section: &str, vectors: &[V], mut check: impl FnMut(&V, &mut Failures)) {
    let mut failures = Failures::default();
    for vector in vectors {
        check(vector, &mut failures);
    }
    failures.finish(section, vectors.len());
}

/// Whether an error message is one line: no control character, no line or paragraph separator.
pub fn is_one_line(message: &str) -> bool {
    !message.chars().any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
}

/// An RFC 3339 timestamp (`updatedAt`) as nanoseconds since the Unix epoch, so that the same instant written with
/// two offsets compares equal.
///
/// # Panics
///
/// When `text` is not RFC 3339.
pub fn instant(text: &str) -> i128 {
    OffsetDateTime::parse(text, &Rfc3339)
        .unwrap_or_else(|e| panic!("bad timestamp `{text}`: {e}"))
        .unix_timestamp_nanos()
}

/// An entry of `ranking.json` (`id`, `content`, `updatedAt`) or of `context.json` (the same, and optionally `type`,
/// `key`, `scope`, `importance`). A ranking runner refuses the context-only fields with [`VectorEntry::is_plain`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VectorEntry {
    /// The logical ID.
    pub id: String,
    /// The content.
    pub content: String,
    /// An RFC 3339 timestamp.
    pub updated_at: String,
    /// The ALP 80 type (`context.json` only).
    #[serde(rename = "type", default)]
    pub memory_type: Option<String>,
    /// The lookup key (`context.json` only).
    #[serde(default)]
    pub key: Option<String>,
    /// The scope reference (`context.json` only).
    #[serde(default)]
    pub scope: Option<String>,
    /// The importance (`context.json` only).
    #[serde(default)]
    pub importance: Option<Importance>,
}

/// The importance of a [`VectorEntry`]; only `critical` changes the read plan.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Importance {
    /// `critical`.
    Critical,
    /// `high`.
    High,
    /// `medium`.
    Medium,
    /// `low`.
    Low,
}

impl VectorEntry {
    /// The entry as the ranker, the planner and the models take it, `updatedAt` read as an [`instant`].
    ///
    /// # Panics
    ///
    /// When `updatedAt` is not RFC 3339.
    pub fn entry(&self) -> Entry {
        Entry {
            id: self.id.clone(),
            content: self.content.clone(),
            updated_at: instant(&self.updated_at),
            memory_type: self.memory_type.clone(),
            key: self.key.clone(),
            scope: self.scope.clone(),
            critical: self.importance == Some(Importance::Critical),
        }
    }

    /// Whether the entry has only the fields of `ranking.json`.
    pub fn is_plain(&self) -> bool {
        self.memory_type.is_none() && self.key.is_none() && self.scope.is_none() && self.importance.is_none()
    }
}
