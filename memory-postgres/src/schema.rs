//! The schema (created once, by [`init`]) and the checks every open makes.

use crate::pool::{Conn, Session};
use memory_entry::MAX_VERSION;

use crate::error::DbError;
use crate::settings::SETTINGS_KEYS;
use crate::url::Target;
use crate::{DatabaseOpenError, Settings};

/// The version of the schema this crate creates and reads. A database holding a newer one is refused, an older one
/// is upgraded by [`migrate`] (`alp store migrate`) and refused by every other command.
///
/// 1: entries, audit log, settings. 2: version history (`alp_history`, `history.keepVersions` in the settings row).
/// 3: bearer tokens (`alp_tokens`). 4: each audit record's `door` and `shown` as columns of `alp_audit`.
pub const SCHEMA_VERSION: i64 = 4;

/// The tables, in the order [`init`] creates them.
pub const TABLES: [&str; 6] =
    ["alp_schema", "alp_settings", "alp_memories", "alp_audit", "alp_history", "alp_tokens"];

/// Namespace of the advisory lock `init` takes, so that two inits never both create.
const INIT_LOCK: &str = "alp-memory/init";

/// The DDL of version 1 (after `pg_trgm`). Text columns compare bytewise (`COLLATE "C"`): IDs order and compare as
/// the Markdown store's do, keys and scopes are equal only when their bytes are.
const SCHEMA_V1: &str = r#"
CREATE TABLE alp_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version bigint NOT NULL
);
CREATE TABLE alp_settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    max_entries_per_scope_root bigint NOT NULL CHECK (max_entries_per_scope_root BETWEEN 1 AND 9007199254740991),
    max_value_chars bigint NOT NULL CHECK (max_value_chars BETWEEN 1 AND 9007199254740991),
    max_ttl text NOT NULL,
    max_file_bytes bigint NOT NULL CHECK (max_file_bytes BETWEEN 1 AND 9007199254740991),
    lock_timeout text NOT NULL,
    connect_timeout text NOT NULL,
    statement_timeout text NOT NULL
);
CREATE TABLE alp_memories (
    id text COLLATE "C" PRIMARY KEY,
    scope_root text COLLATE "C" NOT NULL,
    version bigint NOT NULL CHECK (version BETWEEN 1 AND 9007199254740991),
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    expires_at bigint,
    kind text COLLATE "C" NOT NULL,
    type text COLLATE "C",
    key text COLLATE "C",
    importance text COLLATE "C" NOT NULL,
    source text COLLATE "C",
    scope text COLLATE "C",
    ttl text COLLATE "C",
    content text COLLATE "C" NOT NULL,
    folded text COLLATE "C" NOT NULL
);
CREATE INDEX alp_memories_folded_trgm ON alp_memories USING gin (folded gin_trgm_ops);
CREATE UNIQUE INDEX alp_memories_type_key_scope
    ON alp_memories (scope_root, key, (coalesce(type, '')), (coalesce(scope, '')))
    WHERE key IS NOT NULL;
CREATE INDEX alp_memories_expires_at ON alp_memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE alp_audit (
    seq bigint PRIMARY KEY CHECK (seq >= 1),
    line text COLLATE "C" NOT NULL
);
"#;

/// What takes a schema from the version before to each version: `(version, DDL)`, applied in order, by [`init`]
/// after the DDL of version 1 and by [`migrate`] from the version found. So a migrated database and a new one hold
/// the same schema.
const MIGRATIONS: [(i64, &str); 3] = [(2, SCHEMA_V2), (3, SCHEMA_V3), (4, SCHEMA_V4)];

/// Version 2: every kept version of every ID, the current one included (`state` `entry`, `redacted` or
/// `tombstone`; a tombstone holds only its `updated_at`, when it was deleted), and how many are kept. The entries of
/// a version 1 database become their IDs' first kept versions.
const SCHEMA_V2: &str = r#"
ALTER TABLE alp_settings ADD COLUMN keep_versions bigint NOT NULL DEFAULT 100
    CHECK (keep_versions BETWEEN 1 AND 9007199254740991);
CREATE TABLE alp_history (
    id text COLLATE "C" NOT NULL,
    version bigint NOT NULL CHECK (version BETWEEN 1 AND 9007199254740991),
    state text COLLATE "C" NOT NULL CHECK (state IN ('entry', 'redacted', 'tombstone')),
    created_at bigint,
    updated_at bigint NOT NULL,
    kind text COLLATE "C",
    type text COLLATE "C",
    key text COLLATE "C",
    importance text COLLATE "C",
    source text COLLATE "C",
    scope text COLLATE "C",
    ttl text COLLATE "C",
    content text COLLATE "C",
    PRIMARY KEY (id, version),
    CHECK ((state = 'tombstone') = (content IS NULL))
);
INSERT INTO alp_history (id, version, state, created_at, updated_at, kind, type, key, importance, source, scope,
    ttl, content)
SELECT id, version, 'entry', created_at, updated_at, kind, type, key, importance, source, scope, ttl, content
FROM alp_memories;
"#;

/// Version 3: bearer tokens (times in milliseconds; only the SHA-256 of the secret, lowercase hex).
const SCHEMA_V3: &str = r#"
CREATE TABLE alp_tokens (
    id text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
    role text COLLATE "C" NOT NULL,
    name text COLLATE "C",
    created_at bigint NOT NULL,
    expires_at bigint,
    revoked_at bigint,
    secret_sha256 text COLLATE "C" NOT NULL CHECK (secret_sha256 ~ '^[0-9a-f]{64}$')
);
"#;

/// Version 4: each audit record's `door` and `shown` beside its line, for queries in SQL (`WHERE 'shared:x@3' =
/// ANY(shown)`). The line stays what the chain covers: the columns are copies, `NULL` in records without the field
/// (every record written before them).
const SCHEMA_V4: &str = r#"
ALTER TABLE alp_audit ADD COLUMN door text COLLATE "C", ADD COLUMN shown text[] COLLATE "C";
"#;

/// What [`init`] created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialized {
    /// The URL without its password.
    pub url: String,
    /// What was created: the `pg_trgm` extension when it was missing, then each table.
    pub created: Vec<String>,
}

/// Creates the schema (version [`SCHEMA_VERSION`]) and the settings row with the defaults: what
/// `alp init --store URL` does. Everything is created in one transaction under an advisory lock, so two inits at
/// once create it once. The user needs the right to create tables and, unless `pg_trgm` is installed, extensions
/// (a trusted extension since PostgreSQL 13: the database owner may). Later, only DML on the tables is needed.
///
/// # Errors
///
/// [`DatabaseOpenError::AlreadyInitialized`] when any of the tables exists; [`DatabaseOpenError::InvalidUrl`],
/// [`DatabaseOpenError::Unreachable`], [`DatabaseOpenError::Backend`] otherwise.
pub fn init(url: &str) -> Result<Initialized, DatabaseOpenError> {
    init_with(url, &Settings::default())
}

/// [`init`] with these settings in the settings row.
///
/// # Errors
///
/// As [`init`], and [`DatabaseOpenError::Settings`] when `settings` does not pass [`Settings::check`].
pub fn init_with(url: &str, settings: &Settings) -> Result<Initialized, DatabaseOpenError> {
    let target = Target::parse(url)?;
    let shown = target.shown.clone();
    settings.check().map_err(|(key, reason)| DatabaseOpenError::Settings {
        url: shown.clone(),
        key: key.into(),
        reason,
    })?;
    let mut conn = first_connection(&target)?;
    let backend =
        |e: DbError| DatabaseOpenError::Backend { url: shown.clone(), reason: target.scrub(&e.to_string()) };
    let mut tx = conn.transaction().map_err(backend)?;
    tx.execute(
        "SELECT set_config('lock_timeout', $1, true)",
        &[&format!("{}ms", settings.lock_wait().as_millis())],
    )
    .map_err(backend)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&advisory_key(INIT_LOCK, "")]).map_err(backend)?;
    let existing: i64 = tx
        .query_one(
            "SELECT count(*) FROM unnest($1::text[]) AS t(name) WHERE to_regclass(quote_ident(name)) IS NOT NULL",
            &[&TABLES.to_vec()],
        )
        .map_err(backend)?
        .get(0);
    if existing > 0 {
        return Err(DatabaseOpenError::AlreadyInitialized { url: shown });
    }
    let mut created = Vec::new();
    let has_trgm: bool = tx
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')", &[])
        .map_err(backend)?
        .get(0);
    if !has_trgm {
        tx.batch("CREATE EXTENSION pg_trgm").map_err(backend)?;
        created.push("extension pg_trgm".to_owned());
    }
    tx.batch(SCHEMA_V1).map_err(backend)?;
    for (_, ddl) in MIGRATIONS {
        tx.batch(ddl).map_err(backend)?;
    }
    let limits = &settings.limits;
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    insert_settings_v1(&mut tx, settings).map_err(backend)?;
    tx.execute("UPDATE alp_settings SET keep_versions = $1", &[&int(limits.keep_versions)])
        .map_err(backend)?;
    tx.execute("INSERT INTO alp_schema (version) VALUES ($1)", &[&SCHEMA_VERSION]).map_err(backend)?;
    tx.commit().map_err(backend)?;
    created.extend(TABLES.iter().map(|table| format!("table {table}")));
    Ok(Initialized { url: shown, created })
}

/// What [`migrate`] did: the schema version it found and the one it left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The version found.
    pub from: i64,
    /// The version left ([`SCHEMA_VERSION`]; equal to `from` when the schema was already current).
    pub to: i64,
}

/// Upgrades the schema of the database at `url` in place to [`SCHEMA_VERSION`] (`alp store migrate`): in one
/// transaction, under the advisory lock [`init`] takes, so two migrations (or a migration and an init) never both
/// run. A schema already current is left as it is. Every entry, audit record and setting stays; the entries become
/// their IDs' first kept versions. The user needs the right to create and alter the tables.
///
/// # Errors
///
/// [`DatabaseOpenError::NoSchema`] without a schema, [`DatabaseOpenError::NewerSchema`] for a newer one;
/// [`DatabaseOpenError::InvalidUrl`], [`DatabaseOpenError::Unreachable`], [`DatabaseOpenError::Backend`] otherwise.
pub fn migrate(url: &str) -> Result<Migrated, DatabaseOpenError> {
    let target = Target::parse(url)?;
    let shown = target.shown.clone();
    let mut conn = first_connection(&target)?;
    let backend =
        |e: DbError| DatabaseOpenError::Backend { url: shown.clone(), reason: target.scrub(&e.to_string()) };
    let mut tx = conn.transaction().map_err(backend)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&advisory_key(INIT_LOCK, "")]).map_err(backend)?;
    let present: bool =
        tx.query_one("SELECT to_regclass('alp_schema') IS NOT NULL", &[]).map_err(backend)?.get(0);
    if !present {
        return Err(DatabaseOpenError::NoSchema { url: shown });
    }
    let found: i64 = match tx.query_opt("SELECT version FROM alp_schema", &[]).map_err(backend)? {
        Some(row) => row.get(0),
        None => return Err(DatabaseOpenError::NoSchema { url: shown }),
    };
    if found > SCHEMA_VERSION {
        return Err(DatabaseOpenError::NewerSchema { url: shown, found, supported: SCHEMA_VERSION });
    }
    if found < 1 {
        return Err(DatabaseOpenError::Backend {
            url: shown,
            reason: format!("schema version {found} is not valid"),
        });
    }
    for (version, ddl) in MIGRATIONS {
        if version > found {
            tx.batch(ddl).map_err(backend)?;
        }
    }
    tx.execute("UPDATE alp_schema SET version = $1", &[&SCHEMA_VERSION]).map_err(backend)?;
    tx.commit().map_err(backend)?;
    Ok(Migrated { from: found, to: SCHEMA_VERSION })
}

/// Creates the schema of an older version, `version` (1 to [`SCHEMA_VERSION`]), exactly as `alp init --store` of that
/// version did, with the default settings: for tests of [`migrate`] (feature `testkit`).
///
/// # Errors
///
/// As [`init`]; [`DatabaseOpenError::Backend`] for a version this crate never created.
#[cfg(feature = "testkit")]
pub fn init_old_schema(url: &str, version: i64) -> Result<(), DatabaseOpenError> {
    let target = Target::parse(url)?;
    let shown = target.shown.clone();
    if !(1..=SCHEMA_VERSION).contains(&version) {
        return Err(DatabaseOpenError::Backend {
            url: shown,
            reason: format!("no schema version {version}"),
        });
    }
    let mut conn = first_connection(&target)?;
    let backend =
        |e: DbError| DatabaseOpenError::Backend { url: shown.clone(), reason: target.scrub(&e.to_string()) };
    let mut tx = conn.transaction().map_err(backend)?;
    tx.batch("CREATE EXTENSION IF NOT EXISTS pg_trgm").map_err(backend)?;
    tx.batch(SCHEMA_V1).map_err(backend)?;
    // What `alp init --store` of version 1 wrote into the settings row.
    let defaults = Settings::default();
    insert_settings_v1(&mut tx, &defaults).map_err(backend)?;
    for (at, ddl) in MIGRATIONS {
        if at <= version {
            tx.batch(ddl).map_err(backend)?;
        }
    }
    tx.execute("INSERT INTO alp_schema (version) VALUES ($1)", &[&version]).map_err(backend)?;
    tx.commit().map_err(backend)
}

/// The first connection to a database: bounded by the URL's connect timeout (else 5 s); its statements by the same
/// time on the server's side and by the default statementTimeout (30 s) on this side, until the settings are read.
pub(crate) fn first_connection(target: &Target) -> Result<Conn, DatabaseOpenError> {
    let timeout = target.connect_timeout();
    let mut config = target.config.clone();
    config.options(session_options(
        target.config.get_options(),
        &[("statement_timeout", timeout), ("lock_timeout", timeout)],
    ));
    crate::pool::connect(target, &config, timeout, Settings::default().statement_wait())
        .map_err(|reason| DatabaseOpenError::Unreachable { url: target.shown.clone(), reason })
}

/// The startup `options` with `-c name=valuems` appended for each setting (after the URL's own, so these win).
pub(crate) fn session_options(existing: Option<&str>, settings: &[(&str, std::time::Duration)]) -> String {
    let mut options = existing.unwrap_or_default().to_owned();
    for (name, value) in settings {
        if !options.is_empty() {
            options.push(' ');
        }
        options.push_str(&format!("-c {name}={}", value.as_millis().max(1)));
    }
    options
}

/// Checks the schema is there and not newer than this crate's, and reads the settings.
pub(crate) fn check(conn: &mut Conn, target: &Target) -> Result<Settings, DatabaseOpenError> {
    let shown = || target.shown.clone();
    let backend =
        |e: DbError| DatabaseOpenError::Backend { url: shown(), reason: target.scrub(&e.to_string()) };
    let mut client: crate::pool::Cached<'_, Session> = conn.session();
    let present: bool =
        client.query_one("SELECT to_regclass('alp_schema') IS NOT NULL", &[]).map_err(backend)?.get(0);
    if !present {
        return Err(DatabaseOpenError::NoSchema { url: shown() });
    }
    let version: Option<i64> =
        client.query_opt("SELECT version FROM alp_schema", &[]).map_err(backend)?.map(|row| row.get(0));
    match version {
        None => return Err(DatabaseOpenError::NoSchema { url: shown() }),
        Some(found) if found > SCHEMA_VERSION => {
            return Err(DatabaseOpenError::NewerSchema { url: shown(), found, supported: SCHEMA_VERSION });
        }
        Some(found) if (1..SCHEMA_VERSION).contains(&found) => {
            return Err(DatabaseOpenError::OlderSchema { url: shown(), found, supported: SCHEMA_VERSION });
        }
        Some(found) if found < 1 => {
            return Err(DatabaseOpenError::Backend {
                url: shown(),
                reason: format!("schema version {found} is not valid"),
            });
        }
        Some(_) => {}
    }
    let columns = SETTINGS_KEYS.iter().map(|(_, column)| *column).collect::<Vec<_>>().join(", ");
    let row = client
        .query_built(&format!("SELECT {columns} FROM alp_settings"), &[])
        .map_err(backend)?
        .into_iter()
        .next()
        .ok_or_else(|| DatabaseOpenError::Settings {
            url: shown(),
            key: "alp_settings".into(),
            reason: "the settings row is missing; it is written by `alp init --store URL`".into(),
        })?;
    Settings::from_row(&row).map_err(|(key, reason)| DatabaseOpenError::Settings {
        url: shown(),
        key: key.into(),
        reason,
    })
}

/// The 64-bit advisory-lock key of `name` in `namespace`: FNV-1a over the namespace, a NUL and the name. Written
/// here, not `hashtext()` (internal to PostgreSQL and 32 bits), so the key is stable and documented; a collision
/// would only serialise two scope roots, never break a rule.
pub(crate) fn advisory_key(namespace: &str, name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in namespace.as_bytes().iter().chain(&[0]).chain(name.as_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// The largest version a row may hold (the table's CHECK says the same).
pub(crate) const MAX_VERSION_I64: i64 = MAX_VERSION as i64;

/// Inserts the settings row with the columns of schema version 1 (`init` and the old-schema fixture alike; later
/// versions' columns keep their defaults or are set after).
fn insert_settings_v1(
    tx: &mut crate::pool::Cached<'_, crate::pool::Tx>,
    settings: &Settings,
) -> Result<u64, DbError> {
    let limits = &settings.limits;
    let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO alp_settings (max_entries_per_scope_root, max_value_chars, max_ttl, max_file_bytes, \
         lock_timeout, connect_timeout, statement_timeout) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &int(limits.max_entries_per_scope_root),
            &int(limits.max_value_chars),
            &limits.max_ttl.to_string(),
            &int(limits.max_file_bytes),
            &settings.lock_timeout.to_string(),
            &settings.connect_timeout.to_string(),
            &settings.statement_timeout.to_string(),
        ],
    )
}
