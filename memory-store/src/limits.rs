//! Limits of the ALP 80 memory model, configurable in `<root>/config.yaml`.

use serde::Deserialize;

use crate::{StorageError, StorageErrorKind, Ttl};

/// The file name of the optional configuration, directly under the root.
pub const CONFIG_FILE: &str = "config.yaml";

/// Limits on memory growth. Defaults from the ALP 80 memory model: 500 entries per scope root, 2000 characters per
/// value, a TTL of at most 365 days.
///
/// ```
/// use memory_store::Limits;
/// let limits = Limits::from_yaml("limits:\n  maxValueChars: 4000\n").unwrap();
/// assert_eq!(limits.max_value_chars, 4000);
/// assert_eq!(limits.max_entries_per_scope_root, 500);
/// assert!(Limits::from_yaml("limits:\n  maxValueChar: 4000\n").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries in one scope root (`shared`, each `project:<id>`, each `private:<role>`), expired ones included until
    /// pruned.
    pub max_entries_per_scope_root: u64,
    /// Characters (Unicode scalar values) in one value.
    pub max_value_chars: u64,
    /// The longest TTL.
    pub max_ttl: Ttl,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_entries_per_scope_root: 500, max_value_chars: 2000, max_ttl: Ttl::DEFAULT_MAX }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    limits: Option<RawLimits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLimits {
    max_entries_per_scope_root: Option<u64>,
    max_value_chars: Option<u64>,
    max_ttl: Option<String>,
}

impl Limits {
    /// Reads the limits from the text of `config.yaml`; missing keys keep their defaults, unknown keys are refused.
    ///
    /// # Errors
    ///
    /// [`StorageError`] of kind [`StorageErrorKind::Config`] naming the problem.
    pub fn from_yaml(text: &str) -> Result<Limits, StorageError> {
        let bad = |why: String| {
            StorageError::about(StorageErrorKind::Config, None, format!("invalid {CONFIG_FILE}: {why}"))
        };
        if text.trim().is_empty() {
            return Ok(Limits::default());
        }
        let raw: RawConfig = serde_yaml::from_str(text).map_err(|e| bad(e.to_string().replace('\n', " ")))?;
        let mut limits = Limits::default();
        if let Some(raw) = raw.limits {
            if let Some(n) = raw.max_entries_per_scope_root {
                limits.max_entries_per_scope_root = n;
            }
            if let Some(n) = raw.max_value_chars {
                limits.max_value_chars = n;
            }
            if let Some(ttl) = raw.max_ttl {
                limits.max_ttl = Ttl::parse(&ttl).map_err(|e| bad(format!("maxTtl: {e}")))?;
            }
        }
        Ok(limits)
    }
}
