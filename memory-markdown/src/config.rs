//! `<root>/config.yaml`: the limits of the ALP 80 memory model and the store's settings.

use std::time::Duration;

use memory_entry::{LimitValue, Limits, Ttl};
use serde_json::Value;

use crate::yaml;

/// The file name of the optional configuration, directly under the root.
pub const CONFIG_FILE: &str = "config.yaml";

/// Every key `config.yaml` may hold, as written there: the limits ([`Limits::KEYS`]) and `lockTimeout`.
pub const CONFIG_KEYS: &[&str] = &{
    let mut keys = [""; Limits::KEYS.len() + 1];
    let mut i = 0;
    while i < Limits::KEYS.len() {
        keys[i] = Limits::KEYS[i];
        i += 1;
    }
    keys[i] = "lockTimeout";
    keys
};

/// A `config.yaml` that cannot be used: it does not parse, names an unknown key, holds a malformed or non-positive
/// value, or is not a regular file of at most 64 KiB. The message names the file, the key and the valid keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid `{file}`{}: {reason}; valid keys: {}", self.at(), CONFIG_KEYS.join(", "))]
pub struct ConfigError {
    file: String,
    key: Option<String>,
    reason: String,
}

impl ConfigError {
    fn new(key: Option<&str>, reason: impl Into<String>) -> ConfigError {
        ConfigError { file: CONFIG_FILE.to_owned(), key: key.map(str::to_owned), reason: reason.into() }
    }

    /// The same error, naming the file by its path.
    #[must_use]
    pub fn in_file(mut self, path: &std::path::Path) -> ConfigError {
        self.file = path.display().to_string();
        self
    }

    /// The file, as named in the message.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The key in question (`limits.maxValueChars`), when there is one.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// What is wrong, without the file and the key.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    fn at(&self) -> String {
        self.key.as_deref().map(|key| format!(" at `{}`", memory_id::shown(key))).unwrap_or_default()
    }

    pub(crate) fn file_problem(reason: impl Into<String>) -> ConfigError {
        ConfigError::new(None, reason)
    }
}

/// Everything `config.yaml` sets: the limits, how many versions of an entry are kept (`history.keepVersions`,
/// held as [`Limits::keep_versions`]) and how long a call waits for a lock.
///
/// ```
/// use memory_markdown::StoreConfig;
/// let config = StoreConfig::from_yaml("limits:\n  maxValueChars: 4000\n").unwrap();
/// assert_eq!(config.limits.max_value_chars, 4000);
/// assert_eq!(config.limits.max_entries_per_scope_root, 500);
/// let history = StoreConfig::from_yaml("history:\n  keepVersions: 3\n").unwrap();
/// assert_eq!(history.limits.keep_versions, 3);
/// assert!(StoreConfig::from_yaml("history:\n  keepVersions: 0\n").is_err());
/// let error = StoreConfig::from_yaml("limits:\n  maxValueChar: 4000\n").unwrap_err();
/// assert_eq!(error.key(), Some("limits.maxValueChar"));
/// ```
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
    /// The text `alp init` writes to `config.yaml`: every setting at its default, each with a comment saying what
    /// it bounds. Reading it back gives [`StoreConfig::default`].
    ///
    /// ```
    /// use memory_markdown::StoreConfig;
    /// assert_eq!(StoreConfig::from_yaml(&StoreConfig::default_yaml()).unwrap(), StoreConfig::default());
    /// ```
    pub fn default_yaml() -> String {
        StoreConfig::default().to_yaml()
    }

    /// These settings as the text of `config.yaml`, every key written out with a comment; [`StoreConfig::from_yaml`]
    /// reads it back equal.
    ///
    /// ```
    /// use std::time::Duration;
    /// use memory_markdown::StoreConfig;
    /// let mut config = StoreConfig::default();
    /// config.limits.max_value_chars = 4000;
    /// config.lock_timeout = Duration::from_secs(3);
    /// assert_eq!(StoreConfig::from_yaml(&config.to_yaml()).unwrap(), config);
    /// ```
    pub fn to_yaml(&self) -> String {
        let limits = self.limits;
        format!(
            "# Settings of this memory root. The defaults are 500, 2000, 365d, 1048576, 100 and 10s; delete a line to keep\n\
             # the default.\n\
             limits:\n\
             \x20 # The most live entries under one scope root (shared, project:<id>, private:<role>).\n\
             \x20 maxEntriesPerScopeRoot: {}\n\
             \x20 # The longest content, in characters (Unicode scalar values).\n\
             \x20 maxValueChars: {}\n\
             \x20 # The longest time to live an entry may have (s, m, h, d or w).\n\
             \x20 maxTtl: {}\n\
             \x20 # The largest entry file the store reads, in bytes (at least 4 × maxValueChars + 65536).\n\
             \x20 maxFileBytes: {}\n\
             history:\n\
             \x20 # How many versions of each entry are kept (the current one, older ones and tombstones; at least 1).\n\
             \x20 keepVersions: {}\n\
             # How long a call waits for a lock held by another call before failing.\n\
             lockTimeout: {}s\n",
            limits.max_entries_per_scope_root,
            limits.max_value_chars,
            limits.max_ttl,
            limits.max_file_bytes,
            limits.keep_versions,
            self.lock_timeout.as_secs(),
        )
    }

    /// Reads the settings from the text of `config.yaml`: missing keys keep their defaults; an unknown key, a
    /// malformed or non-positive value, an integer above 2^53 − 1, or `maxFileBytes` below
    /// `4 × maxValueChars + 65,536` is refused. When `maxFileBytes` is not given it is at least that much.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the key.
    pub fn from_yaml(text: &str) -> Result<StoreConfig, ConfigError> {
        let value = yaml::parse_value(text).map_err(|why| ConfigError::new(None, why))?;
        let top = match value {
            Value::Null => return Ok(StoreConfig::default()),
            Value::Object(map) => map,
            _ => return Err(ConfigError::new(None, "it is not a mapping of settings")),
        };
        let mut config = StoreConfig::default();
        let mut file_bytes_given = false;
        for (key, value) in top {
            match key.as_str() {
                "limits" | "history" => {
                    let group = match value {
                        Value::Null => continue,
                        Value::Object(map) => map,
                        _ => return Err(ConfigError::new(Some(&key), "it is not a mapping")),
                    };
                    for (inner, value) in group {
                        let name = format!("{key}.{inner}");
                        set_limit(&mut config.limits, &name, &value)?;
                        file_bytes_given |= name == "limits.maxFileBytes";
                    }
                }
                "lockTimeout" => {
                    config.lock_timeout = Duration::from_secs(duration("lockTimeout", &value)?.as_secs());
                }
                _ => return Err(ConfigError::new(Some(&key), "unknown setting")),
            }
        }
        if !file_bytes_given {
            config.limits.max_file_bytes = config.limits.max_file_bytes.max(config.limits.min_file_bytes());
        }
        config.limits.check().map_err(|(key, reason)| ConfigError::new(Some(key), reason))?;
        Ok(config)
    }
}

/// Sets one limit through [`Limits::set`]; a refusal quotes the value as YAML reads it.
fn set_limit(limits: &mut Limits, name: &str, value: &Value) -> Result<(), ConfigError> {
    let read = match value {
        Value::String(text) => LimitValue::Text(text),
        other => LimitValue::Integer(other.as_u64()),
    };
    limits.set(name, read).map_err(|e| {
        ConfigError::new(
            Some(name),
            e.message(&format!("`{}`", memory_id::shown_message(&value.to_string()))),
        )
    })
}

fn duration(name: &str, value: &Value) -> Result<Ttl, ConfigError> {
    let text = value.as_str().ok_or_else(|| {
        ConfigError::new(
            Some(name),
            format!(
                "`{}` is not a duration such as `10s` or `365d`",
                memory_id::shown_message(&value.to_string())
            ),
        )
    })?;
    Ttl::parse(text).map_err(|e| ConfigError::new(Some(name), e.message()))
}
