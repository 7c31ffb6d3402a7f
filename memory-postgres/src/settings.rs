//! The settings row: the keys of `config.yaml` plus the two timeouts only a database has.

use std::time::Duration;

use memory_entry::{LimitValue, Limits, Ttl, TtlUnit};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

/// Every setting, named as `config.yaml` names it ([`Limits::KEYS`] and the timeouts), with its column in the
/// settings table.
pub const SETTINGS_KEYS: &[(&str, &str)] = &[
    (Limits::KEYS[0], "max_entries_per_scope_root"),
    (Limits::KEYS[1], "max_value_chars"),
    (Limits::KEYS[2], "max_ttl"),
    (Limits::KEYS[3], "max_file_bytes"),
    ("lockTimeout", "lock_timeout"),
    ("connectTimeout", "connect_timeout"),
    ("statementTimeout", "statement_timeout"),
    (Limits::KEYS[4], "keep_versions"),
];

/// The largest timeout PostgreSQL takes (`statement_timeout` and `lock_timeout` are `int` milliseconds).
const MAX_TIMEOUT_MILLIS: u64 = i32::MAX as u64;

/// The store's settings, one row in the database (`alp init --store` writes the defaults): the limits and lock
/// timeout of `config.yaml`, and how long a connection and a statement may take. Durations are written as a §4
/// duration (`10s`, `30s`) and keep the unit they were written with.
///
/// ```
/// use memory_postgres::Settings;
/// let settings = Settings::default();
/// assert_eq!(settings.limits.max_entries_per_scope_root, 500);
/// assert_eq!(settings.lock_timeout.to_string(), "10s");
/// assert_eq!(settings.statement_timeout.as_secs(), 30);
/// assert!(settings.check().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `limits`: entries per scope root, value characters, longest TTL, largest stored entry.
    pub limits: Limits,
    /// `lockTimeout`: how long a call waits for a scope-root or audit lock (default `10s`).
    pub lock_timeout: Ttl,
    /// `connectTimeout`: how long a new connection may take, after the first (default `5s`).
    pub connect_timeout: Ttl,
    /// `statementTimeout`: how long one statement may run (default `30s`).
    pub statement_timeout: Ttl,
}

impl Default for Settings {
    fn default() -> Self {
        let secs = |n| Ttl::new(n, TtlUnit::Seconds).unwrap_or(Ttl::DEFAULT_MAX);
        Settings {
            limits: Limits::default(),
            lock_timeout: secs(10),
            connect_timeout: secs(5),
            statement_timeout: secs(30),
        }
    }
}

impl Settings {
    /// Checks what the database's own checks cannot: the limits as [`Limits::check`] does (`maxFileBytes` is at least
    /// `4 × maxValueChars + 65,536`, the integers are positive and at most 2^53 − 1), and the lock and statement
    /// timeouts fit PostgreSQL's (24 days).
    ///
    /// # Errors
    ///
    /// The setting (as `config.yaml` names it) and what is wrong with it.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        self.limits.check()?;
        for (key, value) in [("lockTimeout", self.lock_timeout), ("statementTimeout", self.statement_timeout)]
        {
            if value.as_secs().saturating_mul(1000) > MAX_TIMEOUT_MILLIS {
                return Err((key, format!("{value} is longer than PostgreSQL's longest timeout (24 days)")));
            }
        }
        Ok(())
    }

    /// `lockTimeout` as a duration.
    pub fn lock_wait(&self) -> Duration {
        Duration::from_secs(self.lock_timeout.as_secs())
    }

    /// `connectTimeout` as a duration.
    pub fn connect_wait(&self) -> Duration {
        Duration::from_secs(self.connect_timeout.as_secs())
    }

    /// `statementTimeout` as a duration.
    pub fn statement_wait(&self) -> Duration {
        Duration::from_secs(self.statement_timeout.as_secs())
    }
}

impl Settings {
    /// Reads the settings row, selected with the columns of [`SETTINGS_KEYS`] in that order: the limits through
    /// [`Limits::set`] (a `text` column as text, a `bigint` one as a number), the timeouts as durations, then
    /// [`Settings::check`].
    ///
    /// # Errors
    ///
    /// The setting and what is wrong with it; a column that cannot be read is named by the key's group (`limits`,
    /// `history`, `lockTimeout`).
    pub(crate) fn from_row(row: &Row) -> Result<Settings, (&'static str, String)> {
        let mut settings = Settings::default();
        for (index, &(key, _)) in SETTINGS_KEYS.iter().enumerate() {
            let group = key.split('.').next().unwrap_or(key);
            let unreadable = |e: tokio_postgres::Error| (group, e.to_string());
            let timeout = match key {
                "lockTimeout" => &mut settings.lock_timeout,
                "connectTimeout" => &mut settings.connect_timeout,
                "statementTimeout" => &mut settings.statement_timeout,
                _ => {
                    let limits = &mut settings.limits;
                    if row.columns().get(index).is_some_and(|column| *column.type_() == Type::TEXT) {
                        let text: String = row.try_get(index).map_err(unreadable)?;
                        limits.set(key, LimitValue::Text(&text)).map_err(|e| (key, e.message(&text)))?;
                    } else {
                        let n: i64 = row.try_get(index).map_err(unreadable)?;
                        let read = LimitValue::Integer(u64::try_from(n).ok());
                        limits.set(key, read).map_err(|e| (key, e.message(&n.to_string())))?;
                    }
                    continue;
                }
            };
            let text: String = row.try_get(index).map_err(unreadable)?;
            *timeout = Ttl::parse(&text).map_err(|e| (key, e.message().to_owned()))?;
        }
        settings.check()?;
        Ok(settings)
    }
}
