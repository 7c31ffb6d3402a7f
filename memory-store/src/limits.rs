//! Limits of the ALP 80 memory model and the store's settings, configurable in `<root>/config.yaml`.

use std::time::Duration;

use serde_json::Value;

use crate::{MAX_SAFE_INTEGER, StorageError, StorageErrorKind, Ttl, yaml};

/// The file name of the optional configuration, directly under the root.
pub const CONFIG_FILE: &str = "config.yaml";

/// Every key `config.yaml` may hold, as written there.
pub const CONFIG_KEYS: &[&str] = &[
    "limits.maxEntriesPerScopeRoot",
    "limits.maxValueChars",
    "limits.maxTtl",
    "limits.maxFileBytes",
    "lockTimeout",
];

/// The largest frontmatter a file may carry; an entry file must have room for it next to a value at the limit.
const FRONTMATTER_ROOM: u64 = 64 * 1024;

/// Limits on memory growth and on what the store reads. Defaults from the ALP 80 memory model (500 entries per scope
/// root, 2000 characters per value, a TTL of at most 365 days) and from the store's hardening (an entry file of at
/// most 1 MiB).
///
/// ```
/// use memory_store::{Limits, StoreConfig};
/// let config = StoreConfig::from_yaml("limits:\n  maxValueChars: 4000\n").unwrap();
/// assert_eq!(config.limits.max_value_chars, 4000);
/// assert_eq!(config.limits.max_entries_per_scope_root, 500);
/// assert!(StoreConfig::from_yaml("limits:\n  maxValueChar: 4000\n").is_err());
/// assert_eq!(Limits::default().max_file_bytes, 1024 * 1024);
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
    /// The largest entry file read, in bytes. A larger file is refused on get and update, skipped by listings (it
    /// still counts against the entry limit), and may be deleted.
    pub max_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries_per_scope_root: 500,
            max_value_chars: 2000,
            max_ttl: Ttl::DEFAULT_MAX,
            max_file_bytes: 1024 * 1024,
        }
    }
}

impl Limits {
    /// The smallest `max_file_bytes` that holds a value at `max_value_chars` in 4-byte characters plus the largest
    /// frontmatter.
    pub fn min_file_bytes(&self) -> u64 {
        self.max_value_chars.saturating_mul(4).saturating_add(FRONTMATTER_ROOM)
    }
}

/// Everything `config.yaml` sets: the limits and how long a call waits for a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// The limits.
    pub limits: Limits,
    /// How long a call waits for an entry, scope-root or audit lock before failing (`lockTimeout`, default `10s`).
    pub lock_timeout: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig { limits: Limits::default(), lock_timeout: Duration::from_secs(10) }
    }
}

impl StoreConfig {
    /// Reads the settings from the text of `config.yaml`: missing keys keep their defaults; an unknown key, a
    /// malformed or non-positive value, an integer above 2^53 − 1, or `maxFileBytes` below
    /// `4 × maxValueChars + 65,536` is refused. When `maxFileBytes` is not given it is at least that much.
    ///
    /// # Errors
    ///
    /// [`StorageError`] of kind [`StorageErrorKind::Config`] naming the key and the valid keys.
    pub fn from_yaml(text: &str) -> Result<StoreConfig, StorageError> {
        let value = yaml::parse_value(text).map_err(|why| config_error(None, &why))?;
        let top = match value {
            Value::Null => return Ok(StoreConfig::default()),
            Value::Object(map) => map,
            _ => return Err(config_error(None, "it is not a mapping of settings")),
        };
        let mut config = StoreConfig::default();
        let mut file_bytes_given = false;
        for (key, value) in top {
            match key.as_str() {
                "limits" => {
                    let limits = match value {
                        Value::Null => continue,
                        Value::Object(map) => map,
                        _ => return Err(config_error(Some("limits"), "it is not a mapping")),
                    };
                    for (key, value) in limits {
                        let name = format!("limits.{key}");
                        match key.as_str() {
                            "maxEntriesPerScopeRoot" => {
                                config.limits.max_entries_per_scope_root = positive(&name, &value)?;
                            }
                            "maxValueChars" => config.limits.max_value_chars = positive(&name, &value)?,
                            "maxTtl" => config.limits.max_ttl = duration(&name, &value)?,
                            "maxFileBytes" => {
                                config.limits.max_file_bytes = positive(&name, &value)?;
                                file_bytes_given = true;
                            }
                            _ => return Err(unknown_key(&name)),
                        }
                    }
                }
                "lockTimeout" => {
                    config.lock_timeout = Duration::from_secs(duration("lockTimeout", &value)?.as_secs());
                }
                _ => return Err(unknown_key(&key)),
            }
        }
        let min = config.limits.min_file_bytes();
        if config.limits.max_file_bytes < min {
            if file_bytes_given {
                return Err(config_error(
                    Some("limits.maxFileBytes"),
                    &format!(
                        "{} is below 4 × maxValueChars + 65536 = {min}: a value at the limit would not fit",
                        config.limits.max_file_bytes
                    ),
                ));
            }
            config.limits.max_file_bytes = min;
        }
        Ok(config)
    }
}

fn positive(name: &str, value: &Value) -> Result<u64, StorageError> {
    match value.as_u64() {
        Some(n) if (1..=MAX_SAFE_INTEGER).contains(&n) => Ok(n),
        _ => Err(config_error(
            Some(name),
            &format!(
                "`{}` is not a positive integer of at most {MAX_SAFE_INTEGER}",
                yaml::one_line(&value.to_string())
            ),
        )),
    }
}

fn duration(name: &str, value: &Value) -> Result<Ttl, StorageError> {
    let text = value.as_str().ok_or_else(|| {
        config_error(
            Some(name),
            &format!("`{}` is not a duration such as `10s` or `365d`", yaml::one_line(&value.to_string())),
        )
    })?;
    Ttl::parse(text).map_err(|e| config_error(Some(name), e.message()))
}

fn unknown_key(name: &str) -> StorageError {
    config_error(Some(name), "unknown setting")
}

/// A configuration error naming the file, the key (when there is one) and every valid key.
fn config_error(key: Option<&str>, why: &str) -> StorageError {
    let at = key.map(|key| format!(" at `{}`", memory_id::shown(key))).unwrap_or_default();
    StorageError::about(
        StorageErrorKind::Config,
        None,
        format!("invalid `{CONFIG_FILE}`{at}: {why}; valid keys: {}", CONFIG_KEYS.join(", ")),
    )
}
