//! `PostgresStore`: the `MemoryStore` over one database.

use std::cell::RefCell;
use std::sync::Arc;

use memory_entry::{
    Batch, BatchPlan, Existing, ExistsReason, Expiry, FieldValue, Held, Key, Limits, Listing, MemoryEntry,
    MemoryStore, MemoryType, NewEntry, Patch, ScopeRef, ScopeView, Scored, Step, StorageError,
    StorageErrorKind, StoreError, Timestamp, Version, as_create, check_plan_unchanged, check_redactable,
    check_tombstone, find_version, import_patch, newest_first, next_version, plan, restorable,
    restored_entry,
};
use memory_id::{MemoryId, MemoryPrefix};
use memory_ranker::FoldBuffer;

use crate::db::{Built, Db};
use crate::pool::{AsClient, Cached, Tx};
use crate::row::{
    HIGHEST, INSERT, KEEP, Stored, TOMBSTONE, UPDATE, Values, check_content, decode, decode_version,
    select_entries, select_versions,
};
use crate::{DatabaseOpenError, PostgresAuditSink, Settings};

/// The most roots, and the most `LIKE` patterns, one listing statement binds: with the nine other parameters, a
/// statement stays far below the protocol's limit of 65,535 (`crate::pool::MAX_BIND_PARAMS`); a listing with more
/// is split into several statements.
const LIST_CHUNK: usize = 4096;
const _: () = assert!(2 * LIST_CHUNK + 10 <= crate::pool::MAX_BIND_PARAMS);

/// A memory store in a PostgreSQL database (`docs/POSTGRESQL.md`): the same rules, order and results as every other
/// store (it passes the adapter suite of `memory-entry`), for agents on several hosts.
///
/// Architecture invariants:
/// - Every statement is parameterised; user text never becomes SQL. The only `LIKE` is the trigram preselection of
///   a search, on the folded column, with `\`, `%` and `_` escaped; prefixes are index ranges (`id = p OR (id >=
///   p || ':' AND id < p || ';')` under `COLLATE "C"`), so `project:a_b` never matches `project:aXb`.
/// - The create rules are [`memory_entry::plan`], run under a transaction advisory lock of the scope root (two roots,
///   in a fixed order, for a rename), over a [`ScopeView`] that asks the database; updates are a compare-and-swap
///   (`… WHERE id = $1 AND version = $2`), and those that change type, key or scope also take the lock. A unique
///   index on (scope root, key, type, scope) backs the key rule, should anything bypass the lock.
/// - A batch (an import) is one transaction: all of it or nothing, even across a crash.
/// - Listings ask the database only for candidates (in the roots, by expiry and filters, and containing at least one
///   query term in the folded column the `pg_trgm` index serves), then admit and score each in Rust with the
///   listing's own [`Listing::admits`] and [`Listing::score`]: results equal the reference store's.
/// - Times are integer milliseconds; versions stay within 1 to 2^53 − 1 (a CHECK); content never holds U+0000.
/// - An entry stored larger than `limits.maxFileBytes` (only possible by writing the table directly) is refused on
///   get and update, skipped by listings, counted by limits, and may be deleted, as an oversized file is.
/// - Every lock wait is bounded by `lockTimeout`, every statement by `statementTimeout` (on the server's side and,
///   for each round trip, on the client's), every connect by `connectTimeout`; a connection that timed out or that
///   the server dropped is discarded, so the next call opens a fresh one.
/// - No statement binds more than the protocol's 65,535 parameters: a listing with many roots or terms is split.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(crate) db: Arc<Db>,
}

impl PostgresStore {
    /// Opens the database at `url` (`postgresql://…`; a Unix-socket host is written percent-encoded, `%2Frun%2Fpg`,
    /// or as `?host=/run/pg`): connects within the URL's `connect_timeout` (else 5 s), checks the schema and its
    /// version, and reads the settings row.
    ///
    /// # Errors
    ///
    /// [`DatabaseOpenError`]: the URL is invalid, the database unreachable, without the schema (`alp init --store URL`
    /// creates it), with a newer schema, or with invalid settings.
    pub fn open(url: &str) -> Result<PostgresStore, DatabaseOpenError> {
        Ok(PostgresStore { db: Arc::new(Db::open(url)?) })
    }

    /// The audit sink of the same database, sharing this store's connections; with `key`, an HMAC-SHA256 chain.
    pub fn audit_sink(&self, key: Option<memory_audit::AuditKey>) -> PostgresAuditSink {
        PostgresAuditSink::from_db(Arc::clone(&self.db), key)
    }

    /// The settings read when the store was opened.
    pub fn settings(&self) -> &Settings {
        &self.db.settings
    }

    /// The URL, without its password.
    pub fn url(&self) -> &str {
        self.db.url()
    }

    /// Whether the store holds no entry and no audit record: what `alp store copy` requires of its target.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when the database fails.
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let row = conn
            .session()
            .query_one(
                "SELECT NOT EXISTS (SELECT 1 FROM alp_memories) AND NOT EXISTS (SELECT 1 FROM alp_audit) \
                 AND NOT EXISTS (SELECT 1 FROM alp_history) AND NOT EXISTS (SELECT 1 FROM alp_tokens)",
                &[],
            )
            .map_err(|e| self.db.pool.failure(&e, "checking whether the store is empty").into_store(None))?;
        Ok(row.get(0))
    }

    /// Every entry, live or expired, sorted by ID, exactly as stored (version and times included): what
    /// `alp store copy` reads from this store.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when the database fails or a row is not a valid entry (nothing is skipped).
    pub fn all_entries(&self) -> Result<Vec<MemoryEntry>, StoreError> {
        const PAGE: &str = select_entries!("WHERE id > $2 ORDER BY id LIMIT 1000");
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let mut tx = conn.snapshot().map_err(|e| self.failure(&e, "reading every entry", None))?;
        let mut entries: Vec<MemoryEntry> = Vec::new();
        loop {
            let after = entries.last().map_or(String::new(), |e| e.id.as_str().to_owned());
            let rows = tx
                .query(PAGE, &[&i64::MAX, &after])
                .map_err(|e| self.failure(&e, "reading every entry", None))?;
            if rows.is_empty() {
                return Ok(entries);
            }
            for row in &rows {
                match decode(row)? {
                    Stored::Entry(entry) => entries.push(*entry),
                    Stored::TooLarge { .. } => {
                        return Err(StoreError::Storage(StorageError::about(
                            StorageErrorKind::TooLarge,
                            None,
                            "an entry larger than the largest text is stored",
                        )));
                    }
                }
            }
        }
    }

    /// Inserts `entries` exactly as given (versions and times kept, nothing planned) in one transaction: what
    /// `alp store copy` writes into an empty store. Either every entry is inserted or none.
    ///
    /// # Errors
    ///
    /// [`StoreError::AlreadyExists`] when an ID (or a type, key and scope) is taken; [`StoreError::Storage`] for
    /// content holding U+0000, a version outside 1 to 2^53 − 1, or a database failure.
    pub fn insert_exact(&self, entries: &[MemoryEntry]) -> Result<(), StoreError> {
        let mut buffer = FoldBuffer::new();
        let rows =
            entries.iter().map(|entry| Values::of(entry, &mut buffer)).collect::<Result<Vec<_>, _>>()?;
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        for (entry, values) in entries.iter().zip(&rows) {
            let id = Some(entry.id.as_str());
            let inserted = tx
                .execute(INSERT, &values.insert_params())
                .map_err(|e| self.failure(&e, "inserting an entry", id))?;
            if inserted == 0 {
                return Err(self.taken(&mut tx, entry)?);
            }
        }
        tx.commit().map_err(|e| self.failure(&e, "committing the entries", None))
    }

    /// Every kept version of every ID (the current versions, older ones, redacted ones and tombstones), by ID and
    /// version: what `alp store copy` reads with the entries.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when the database fails or a row is not a valid version (nothing is skipped).
    pub fn all_versions(&self) -> Result<Vec<Version>, StoreError> {
        const ALL: &str = select_versions!("ORDER BY id, version");
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let rows =
            conn.session().query(ALL, &[]).map_err(|e| self.failure(&e, "reading every version", None))?;
        rows.iter().map(|row| decode_version(row).map_err(StoreError::from)).collect()
    }

    /// Inserts `versions` exactly as given (numbers, tombstones, redactions; nothing dropped) in one transaction: what
    /// `alp store copy` writes after [`PostgresStore::insert_exact`]. The current version of each entry belongs among
    /// them (this store keeps it in its history too).
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when a version is taken or the database fails; then nothing is inserted.
    pub fn insert_versions_exact(&self, versions: &[Version]) -> Result<(), StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        let keep = i64::MAX;
        for version in versions {
            let id = Some(version.id().as_str());
            match version {
                Version::Tombstone { id, version, deleted_at } => {
                    let at = i64::try_from(*version).unwrap_or(i64::MAX);
                    tx.execute(TOMBSTONE, &[&id.as_str(), &at, &deleted_at.unix_millis(), &keep])
                        .map_err(|e| self.failure(&e, "inserting a tombstone", Some(id.as_str())))?;
                }
                Version::Entry(entry) | Version::Redacted(entry) => {
                    let state = if version.is_redacted() { "redacted" } else { "entry" };
                    let values = Values::of(entry, &mut FoldBuffer::new())?;
                    tx.execute(KEEP, &values.keep_params(&state, &keep))
                        .map_err(|e| self.failure(&e, "inserting a version", id))?;
                }
            }
        }
        tx.commit().map_err(|e| self.failure(&e, "committing the versions", None))
    }

    /// The candidate statement of `listing` for these roots and `LIKE` patterns (none: no query terms): at most
    /// 2 + 7 + `roots.len()` + `patterns.len()` parameters. Only the first value of each filter column is sent (the
    /// listing admits every row again), so the filters add at most seven.
    fn listing_statement(&self, listing: &Listing, roots: &[&str], patterns: &[String]) -> Built {
        let mut built = Built::default();
        let max = built.param(self.max_bytes());
        debug_assert_eq!(max, "$1", "select_entries! takes maxFileBytes as $1");
        let roots: Vec<String> = roots
            .iter()
            .map(|root| {
                let p = built.param((*root).to_owned());
                format!("(id = {p} OR (id >= {p} || ':' AND id < {p} || ';'))")
            })
            .collect();
        let mut sql =
            format!("{}WHERE ({}) AND octet_length(content) <= $1", select_entries!(), roots.join(" OR "));
        match listing.expiry() {
            Expiry::Live => {
                let now = built.param(listing.now().unix_millis());
                sql.push_str(&format!(" AND (expires_at IS NULL OR expires_at > {now})"));
            }
            Expiry::Expired => {
                let now = built.param(listing.now().unix_millis());
                sql.push_str(&format!(" AND expires_at <= {now}"));
            }
            Expiry::Any => {}
        }
        let mut filtered = Vec::new();
        for value in listing.filter().values() {
            let column = match value {
                FieldValue::Kind(_) => "kind",
                FieldValue::Type(_) => "type",
                FieldValue::Key(_) => "key",
                FieldValue::Importance(_) => "importance",
                FieldValue::Source(_) => "source",
                FieldValue::Scope(_) => "scope",
                FieldValue::Ttl(_) => "ttl",
            };
            if filtered.contains(&column) {
                continue;
            }
            filtered.push(column);
            let p = built.param(value.text());
            sql.push_str(&format!(" AND {column} = {p}"));
        }
        if !patterns.is_empty() {
            let likes: Vec<String> = patterns
                .iter()
                .map(|pattern| format!("folded LIKE {}", built.param(pattern.clone())))
                .collect();
            sql.push_str(&format!(" AND ({})", likes.join(" OR ")));
        }
        sql.push_str(" ORDER BY id");
        built.sql = sql;
        built
    }

    /// Why an insert of `entry` found its place taken.
    fn taken(&self, tx: &mut Cached<'_, Tx>, entry: &MemoryEntry) -> Result<StoreError, StoreError> {
        let view = View::new(self, tx, entry.id.scope_root(), None);
        let existing = match view.existing(&entry.id)? {
            Existing::None => None,
            _ => Some((entry.id.as_str().to_owned(), ExistsReason::SameId)),
        };
        let holder = match (existing, entry.fields.unique_key()) {
            (Some(found), _) => Some(found),
            (None, Some(unique)) => view
                .holder(&entry.id, unique)?
                .map(|holder| (holder.into_string(), ExistsReason::DuplicateKey)),
            (None, None) => None,
        };
        Ok(match holder {
            Some((existing, reason)) => StoreError::AlreadyExists { id: entry.id.clone(), existing, reason },
            None => StoreError::Storage(StorageError::new(
                StorageErrorKind::Backend,
                Some(&entry.id),
                "the entry was not inserted, and nothing holds its place",
            )),
        })
    }

    pub(crate) fn failure(&self, e: &crate::error::DbError, what: &str, name: Option<&str>) -> StoreError {
        self.db.pool.failure(e, what).into_store(name)
    }

    fn max_bytes(&self) -> i64 {
        i64::try_from(self.db.settings.limits.max_file_bytes).unwrap_or(i64::MAX)
    }

    /// Reads `id`'s row in a transaction, locking it (`FOR UPDATE`).
    fn read_locked(&self, tx: &mut Cached<'_, Tx>, id: &MemoryId) -> Result<Option<Stored>, StoreError> {
        const GET_LOCKED: &str = select_entries!("WHERE id = $2 FOR UPDATE");
        let row = tx
            .query_opt(GET_LOCKED, &[&self.max_bytes(), &id.as_str()])
            .map_err(|e| self.failure(&e, "reading an entry", Some(id.as_str())))?;
        row.as_ref().map(decode).transpose().map_err(StoreError::from)
    }

    /// Reads `id`'s row.
    fn read<C: AsClient>(&self, c: &mut Cached<'_, C>, id: &MemoryId) -> Result<Option<Stored>, StoreError> {
        const GET: &str = select_entries!("WHERE id = $2");
        let row = c
            .query_opt(GET, &[&self.max_bytes(), &id.as_str()])
            .map_err(|e| self.failure(&e, "reading an entry", Some(id.as_str())))?;
        row.as_ref().map(decode).transpose().map_err(StoreError::from)
    }

    /// The entry in `stored`, refusing one too large to read.
    fn readable(
        &self,
        id: &MemoryId,
        stored: Option<Stored>,
    ) -> Result<Option<Box<MemoryEntry>>, StoreError> {
        match stored {
            None => Ok(None),
            Some(Stored::TooLarge { size }) => {
                Err(too_large(id, size, self.db.settings.limits.max_file_bytes))
            }
            Some(Stored::Entry(entry)) => Ok(Some(entry)),
        }
    }

    /// The live entry in `stored` ([`memory_entry::live`]), or the error the doors report.
    fn live(&self, id: &MemoryId, stored: Option<Stored>, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        memory_entry::live(id, self.readable(id, stored)?, now).map(|entry| *entry)
    }

    /// The live entry in `stored` at `expected_version` ([`memory_entry::live_at`]).
    fn live_at(
        &self,
        id: &MemoryId,
        stored: Option<Stored>,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        memory_entry::live_at(id, self.readable(id, stored)?, expected_version, now).map(|entry| *entry)
    }

    /// Writes `updated` over the row at `expected`; whether a row changed.
    fn write_update<C: AsClient>(
        &self,
        c: &mut Cached<'_, C>,
        updated: &MemoryEntry,
        expected: u64,
    ) -> Result<bool, StoreError> {
        let values = Values::of(updated, &mut FoldBuffer::new())?;
        let expected = i64::try_from(expected).unwrap_or(i64::MAX);
        let keep = self.keep();
        let changed: i64 = c
            .query_one(UPDATE, &values.update_params(&expected, &keep))
            .map_err(|e| self.failure(&e, "updating an entry", Some(updated.id.as_str())))?
            .get(0);
        Ok(changed == 1)
    }

    /// Writes `entry` over its row, locked at `expected` under the scope root's lock: refused as `AlreadyExists`
    /// when another entry of the scope root holds its (type, key, scope); a row that changed all the same (which
    /// the locks rule out) is a backend error naming the `operation`.
    fn replace_locked(
        &self,
        tx: &mut Cached<'_, Tx>,
        entry: &MemoryEntry,
        expected: u64,
        operation: &str,
    ) -> Result<(), StoreError> {
        if let Some(unique) = entry.fields.unique_key() {
            let holder = View::new(self, tx, entry.id.scope_root(), None).holder(&entry.id, unique)?;
            memory_entry::check_key_free(&entry.id, holder)?;
        }
        if !self.write_update(tx, entry, expected)? {
            return Err(StoreError::Storage(StorageError::new(
                StorageErrorKind::Backend,
                Some(&entry.id),
                format!("the locked entry changed during the {operation}"),
            )));
        }
        Ok(())
    }

    /// `history.keepVersions` as bound.
    fn keep(&self) -> i64 {
        i64::try_from(self.db.settings.limits.keep_versions).unwrap_or(i64::MAX)
    }

    /// The highest version `id` ever had (`None`: no version kept).
    fn highest<C: AsClient>(&self, c: &mut Cached<'_, C>, id: &MemoryId) -> Result<Option<u64>, StoreError> {
        let highest: Option<i64> = c
            .query_one(HIGHEST, &[&id.as_str()])
            .map_err(|e| self.failure(&e, "reading the highest version", Some(id.as_str())))?
            .get(0);
        Ok(highest.and_then(|v| u64::try_from(v).ok()))
    }

    /// Keeps `entry` as a version of its ID (`state` `entry` or `redacted`) and drops the oldest beyond
    /// `history.keepVersions`.
    fn keep_version<C: AsClient>(
        &self,
        c: &mut Cached<'_, C>,
        entry: &MemoryEntry,
        state: &'static str,
    ) -> Result<(), StoreError> {
        let values = Values::of(entry, &mut FoldBuffer::new())?;
        let keep = self.keep();
        c.execute(KEEP, &values.keep_params(&state, &keep))
            .map_err(|e| self.failure(&e, "keeping a version", Some(entry.id.as_str())))?;
        Ok(())
    }

    /// Keeps a tombstone of `id` at `version`, deleted `now`.
    fn keep_tombstone<C: AsClient>(
        &self,
        c: &mut Cached<'_, C>,
        id: &MemoryId,
        version: u64,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let version = i64::try_from(version).unwrap_or(i64::MAX);
        c.execute(TOMBSTONE, &[&id.as_str(), &version, &now.unix_millis(), &self.keep()])
            .map_err(|e| self.failure(&e, "keeping a tombstone", Some(id.as_str())))?;
        Ok(())
    }

    /// Every kept version of `id`, oldest first.
    fn versions<C: AsClient>(
        &self,
        c: &mut Cached<'_, C>,
        id: &MemoryId,
    ) -> Result<Vec<Version>, StoreError> {
        const VERSIONS: &str = select_versions!("WHERE id = $1 ORDER BY version");
        let rows = c
            .query(VERSIONS, &[&id.as_str()])
            .map_err(|e| self.failure(&e, "reading the history", Some(id.as_str())))?;
        rows.iter().map(|row| decode_version(row).map_err(StoreError::from)).collect()
    }

    /// An update that may change (type, key, scope): under the scope-root lock, checked against the other holders.
    fn update_keyed(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        let root = id.scope_root();
        self.db.lock_scope_roots(&mut tx, &[root.as_str()]).map_err(|f| f.into_store(Some(root.as_str())))?;
        let stored = self.read_locked(&mut tx, id)?;
        let mut updated = self.live_at(id, stored, expected_version, now)?;
        patch.apply(&mut updated, now)?;
        self.replace_locked(&mut tx, &updated, expected_version, "update")?;
        tx.commit().map_err(|e| self.failure(&e, "committing an update", Some(id.as_str())))?;
        Ok(updated)
    }

    /// Deletes the entry at `expected_version` that `deletion` allows, keeping its tombstone; when nothing was
    /// deleted, the row as it stood says why, by the rule `deletion` applies.
    fn delete_entry(
        &self,
        id: &MemoryId,
        expected_version: u64,
        now: Timestamp,
        deletion: Deletion,
    ) -> Result<(), StoreError> {
        let sql = deletion.statement();
        let expected = i64::try_from(expected_version).unwrap_or(i64::MAX);
        let now_ms = now.unix_millis();
        let keep = self.keep();
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let mut session = conn.session();
        if expected_version >= memory_entry::MAX_VERSION
            && let Some(Stored::Entry(entry)) = self.read(&mut session, id)?
            && entry.version == expected_version
        {
            // Its tombstone would pass the cap.
            next_version(id, Some(expected_version))?;
        }
        // A concurrent writer can change the row between the snapshot and the delete; then look again.
        for _ in 0..3 {
            let row = session
                .query_one(sql, &[&id.as_str(), &expected, &now_ms, &keep])
                .map_err(|e| self.failure(&e, "deleting an entry", Some(id.as_str())))?;
            let (deleted, version, expires_at): (bool, Option<i64>, Option<i64>) =
                (row.get(0), row.get(1), row.get(2));
            if deleted {
                return Ok(());
            }
            let row = version.map(|version| RowState { version, expires_at });
            // Nothing was deleted, yet the row passes the rule: it changed after the snapshot; look again.
            deletion.check(id, row, expected_version, now)?;
        }
        Err(StoreError::Storage(StorageError::new(
            StorageErrorKind::Backend,
            Some(id),
            "the entry kept changing while it was deleted; try again",
        )))
    }
}

/// A delete of the entry `$1` at version `$2` whose expiry, at `$3` (Unix milliseconds), passes `$expiry`. The
/// tombstone is kept at the next version and the versions beyond `$4` (`history.keepVersions`) are dropped in the
/// same statement. The outer SELECT sees the statement's snapshot: the row as it was before the DELETE, which says
/// why nothing was deleted.
macro_rules! delete_entry {
    ($expiry:literal) => {
        concat!(
            "WITH gone AS (DELETE FROM alp_memories WHERE id = $1 AND version = $2 AND ",
            $expiry,
            " RETURNING 1), \
             kept AS (INSERT INTO alp_history (id, version, state, updated_at) \
             SELECT $1, $2 + 1, 'tombstone', $3 FROM gone), \
             dropped AS (DELETE FROM alp_history WHERE id = $1 AND version <= $2 + 1 - $4::bigint \
             AND EXISTS (SELECT 1 FROM gone)) \
             SELECT EXISTS (SELECT 1 FROM gone), m.version, m.expires_at \
             FROM (SELECT 1) AS one LEFT JOIN alp_memories AS m ON m.id = $1"
        )
    };
}

/// Which entry a delete removes: a live one (`delete`) or an expired one (`delete_expired`, a prune).
#[derive(Debug, Clone, Copy)]
enum Deletion {
    Live,
    Expired,
}

impl Deletion {
    /// The statement: the two differ only in the expiry they require.
    fn statement(self) -> &'static str {
        match self {
            Deletion::Live => delete_entry!("(expires_at IS NULL OR expires_at > $3)"),
            Deletion::Expired => delete_entry!("expires_at <= $3"),
        }
    }

    /// The rule the row must pass: [`memory_entry::live_at`] or [`memory_entry::expired_at`].
    fn check(
        self,
        id: &MemoryId,
        row: Option<RowState>,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<RowState, StoreError> {
        match self {
            Deletion::Live => memory_entry::live_at(id, row, expected_version, now),
            Deletion::Expired => memory_entry::expired_at(id, row, expected_version, now),
        }
    }
}

/// An entry's row as a delete reads it back: its version and expiry (Unix milliseconds).
#[derive(Debug, Clone, Copy)]
struct RowState {
    version: i64,
    expires_at: Option<i64>,
}

impl Held for RowState {
    fn version(&self) -> u64 {
        u64::try_from(self.version).unwrap_or(0)
    }

    fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| now.unix_millis() >= at)
    }
}

fn too_large(id: &MemoryId, size: i64, limit: u64) -> StoreError {
    StoreError::Storage(StorageError::new(
        StorageErrorKind::TooLarge,
        Some(id),
        format!("the stored entry is {size} bytes, more than limits.maxFileBytes ({limit}); it is not read"),
    ))
}

/// One scope root as the create rules see it, asked of the database inside the caller's transaction.
struct View<'s, 'a, 'c, C> {
    store: &'s PostgresStore,
    tx: RefCell<&'a mut Cached<'c, C>>,
    root: MemoryPrefix,
    /// An entry being moved away (a rename): its name is about to be free, and its key is its own.
    leaving: Option<&'a MemoryId>,
}

impl<'s, 'a, 'c, C: AsClient> View<'s, 'a, 'c, C> {
    fn new(
        store: &'s PostgresStore,
        tx: &'a mut Cached<'c, C>,
        root: MemoryPrefix,
        leaving: Option<&'a MemoryId>,
    ) -> View<'s, 'a, 'c, C> {
        View { store, tx: RefCell::new(tx), root, leaving }
    }

    fn leaving(&self) -> &str {
        // No ID is empty, so "" excludes nothing.
        self.leaving.map_or("", MemoryId::as_str)
    }
}

impl<C: AsClient> ScopeView for View<'_, '_, '_, C> {
    fn count(&self) -> Result<u64, StoreError> {
        const COUNT: &str = "SELECT count(*) FROM alp_memories \
             WHERE (id = $1 OR (id >= $1 || ':' AND id < $1 || ';')) AND id <> $2";
        let row = self
            .tx
            .borrow_mut()
            .query_one(COUNT, &[&self.root.as_str(), &self.leaving()])
            .map_err(|e| self.store.failure(&e, "counting entries", Some(self.root.as_str())))?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }

    fn existing(&self, id: &MemoryId) -> Result<Existing, StoreError> {
        if Some(id) == self.leaving {
            return Ok(Existing::None);
        }
        let stored = self.store.read(&mut **self.tx.borrow_mut(), id)?;
        Ok(match stored {
            None => Existing::None,
            Some(Stored::TooLarge { .. }) => Existing::Unreadable,
            Some(Stored::Entry(entry)) => Existing::Entry(entry),
        })
    }

    fn clash(&self, id: &MemoryId) -> Result<Option<MemoryId>, StoreError> {
        // Entries in the directory of `id` (`id.md:…`), and entries whose directory holds `id` (`X` where `id`
        // starts with `X.md:`). Two index lookups, one per side: with an `OR`, the planner walks the whole primary
        // key in order looking for the smallest match (a create at 100k entries took 30 ms).
        const CLASH: &str = "SELECT min(id) FROM (\
             (SELECT id FROM alp_memories WHERE id >= $1 || '.md:' AND id < $1 || '.md;' AND id <> $3 \
              ORDER BY id LIMIT 1) \
             UNION ALL \
             (SELECT id FROM alp_memories WHERE id = ANY($2) AND id <> $3 ORDER BY id LIMIT 1)) AS clashing";
        let text = id.as_str();
        let files: Vec<&str> = text.match_indices(".md:").map(|(at, _)| &text[..at]).collect();
        let row = self
            .tx
            .borrow_mut()
            .query_one(CLASH, &[&text, &files, &self.leaving()])
            .map_err(|e| self.store.failure(&e, "checking the file/directory rule", Some(text)))?;
        stored_id(row.get(0))
    }

    fn holder(
        &self,
        id: &MemoryId,
        unique: (Option<MemoryType>, &Key, Option<&ScopeRef>),
    ) -> Result<Option<MemoryId>, StoreError> {
        // The expressions of the unique index, so it serves this lookup.
        const HOLDER: &str = "SELECT min(id) FROM alp_memories WHERE scope_root = $1 AND key = $2 \
             AND coalesce(type, '') = $3 AND coalesce(scope, '') = $4 AND id <> $5 AND id <> $6";
        let (memory_type, key, scope) = unique;
        let row = self
            .tx
            .borrow_mut()
            .query_one(
                HOLDER,
                &[
                    &self.root.as_str(),
                    &key.as_str(),
                    &memory_type.map_or("", MemoryType::as_str),
                    &scope.map_or("", ScopeRef::as_str),
                    &id.as_str(),
                    &self.leaving(),
                ],
            )
            .map_err(|e| self.store.failure(&e, "checking type, key and scope", Some(id.as_str())))?;
        stored_id(row.get(0))
    }
}

fn stored_id(text: Option<String>) -> Result<Option<MemoryId>, StoreError> {
    text.map(|text| crate::row::stored_id(&text).map_err(StoreError::Storage)).transpose()
}

/// `%term%` for `LIKE`, with the pattern characters of the term escaped (`\` is `LIKE`'s escape character).
fn like_pattern(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for c in term.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl MemoryStore for PostgresStore {
    fn limits(&self) -> &Limits {
        &self.db.settings.limits
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let stored = self.read(&mut conn.session(), id)?;
        self.live(id, stored, now)
    }

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        if listing.roots().is_empty() {
            return Ok(Vec::new());
        }
        let terms = listing.terms();
        // U+0000 is never stored, so a term holding it matches nothing (and cannot be bound).
        let patterns: Vec<String> =
            terms.iter().filter(|t| !t.contains('\0')).map(|t| like_pattern(t)).collect();
        if !terms.is_empty() && patterns.is_empty() {
            return Ok(Vec::new());
        }
        // The statement only preselects (every row is admitted and scored again below), so the roots and the
        // patterns are sent in chunks that keep each statement far below the protocol's bind-parameter limit: one
        // statement per pair of chunks, the rows merged by ID. Almost every listing is one statement.
        let roots: Vec<&str> = listing.roots().iter().map(MemoryPrefix::as_str).collect();
        let pattern_chunks: Vec<&[String]> =
            if patterns.is_empty() { vec![&[]] } else { patterns.chunks(LIST_CHUNK).collect() };
        let statements: Vec<Built> = roots
            .chunks(LIST_CHUNK)
            .flat_map(|roots| pattern_chunks.iter().map(move |patterns| (roots, *patterns)))
            .map(|(roots, patterns)| self.listing_statement(listing, roots, patterns))
            .collect();
        listing.check_cancelled()?;
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let failed = |e: crate::error::DbError| self.failure(&e, "listing entries", None);
        let mut buffer = FoldBuffer::new();
        let mut keep = |rows: Vec<tokio_postgres::Row>, kept: &mut Vec<Scored>| -> Result<(), StoreError> {
            for row in &rows {
                // A caller that gave up is not served any further: the rows left are not decoded or scored.
                listing.check_cancelled()?;
                let entry = match decode(row) {
                    Ok(Stored::Entry(entry)) => *entry,
                    Ok(Stored::TooLarge { .. }) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "skipping a row that is not a valid entry");
                        continue;
                    }
                };
                if listing.admits(&entry)
                    && let Some(score) = listing.score(&entry, &mut buffer)
                {
                    kept.push(Scored { entry, score });
                }
            }
            Ok(())
        };
        let mut kept = Vec::new();
        if let [built] = statements.as_slice() {
            let rows = conn.session().query_built(&built.sql, &built.params()).map_err(failed)?;
            keep(rows, &mut kept)?;
            return Ok(listing.finish(kept));
        }
        // Several statements read one snapshot; an entry two of them found is kept once, in ID order.
        let mut tx = conn.snapshot().map_err(failed)?;
        for built in &statements {
            let rows = tx.query_built(&built.sql, &built.params()).map_err(failed)?;
            keep(rows, &mut kept)?;
        }
        tx.commit().map_err(failed)?;
        Ok(listing.finish(kept))
    }

    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        let Some(root) = batch.scope_root() else { return Ok(BatchPlan::default()) };
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let mut tx = conn.snapshot().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        let planned = plan(&View::new(self, &mut tx, root, None), self.limits(), batch, now)?;
        tx.commit().map_err(|e| self.failure(&e, "ending a transaction", None))?;
        Ok(planned)
    }

    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        let Some(root) = batch.scope_root() else { return Ok(Vec::new()) };
        for new in batch.entries() {
            check_content(&new.content, Some(&new.id))?;
        }
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(root.as_str())))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        self.db.lock_scope_roots(&mut tx, &[root.as_str()]).map_err(|f| f.into_store(Some(root.as_str())))?;
        let planned = plan(&View::new(self, &mut tx, root, None), self.limits(), batch, now)?;
        if let Some(expected) = expected {
            check_plan_unchanged(&planned, expected)?;
        }
        let mut buffer = FoldBuffer::new();
        let mut written = Vec::new();
        for (new, step) in batch.entries().iter().zip(planned.steps()) {
            match step {
                Step::Create(id) => {
                    let mut entry = new.clone().into_entry(now);
                    entry.version = next_version(id, self.highest(&mut tx, id)?)?;
                    let values = Values::of(&entry, &mut buffer)?;
                    let inserted = tx
                        .execute(INSERT, &values.insert_params())
                        .map_err(|e| self.failure(&e, "creating an entry", Some(id.as_str())))?;
                    if inserted == 0 {
                        return Err(self.taken(&mut tx, &entry)?);
                    }
                    self.keep_version(&mut tx, &entry, "entry")?;
                    written.push(entry);
                }
                Step::Update { id, expected_version } => {
                    let stored = self.read_locked(&mut tx, id)?;
                    let mut entry = self.live_at(id, stored, *expected_version, now)?;
                    import_patch(new).apply(&mut entry, now)?;
                    if !self.write_update(&mut tx, &entry, *expected_version)? {
                        return Err(StoreError::BatchStale { id: id.clone() });
                    }
                    written.push(entry);
                }
                Step::Skip { .. } => {}
            }
        }
        tx.commit().map_err(|e| self.failure(&e, "committing a batch", Some(root_text(batch))))?;
        Ok(written)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected_version: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        if let Some(content) = patch.content() {
            check_content(content, Some(id))?;
        }
        if patch.touches_unique_key() {
            return self.update_keyed(id, expected_version, patch, now);
        }
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let mut session = conn.session();
        // Read, apply the patch in Rust, then compare-and-swap; a writer in between makes the swap miss, and the
        // entry is read again to say why (it moved on, was deleted, expired).
        for _ in 0..3 {
            let stored = self.read(&mut session, id)?;
            let mut updated = self.live_at(id, stored, expected_version, now)?;
            patch.apply(&mut updated, now)?;
            if self.write_update(&mut session, &updated, expected_version)? {
                return Ok(updated);
            }
        }
        Err(StoreError::Storage(StorageError::new(
            StorageErrorKind::Backend,
            Some(id),
            "the entry kept changing while it was updated; try again",
        )))
    }

    fn delete(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.delete_entry(id, expected_version, now, Deletion::Live)
    }

    fn delete_expired(&self, id: &MemoryId, expected_version: u64, now: Timestamp) -> Result<(), StoreError> {
        self.delete_entry(id, expected_version, now, Deletion::Expired)
    }

    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        const DELETE: &str = "DELETE FROM alp_memories WHERE id = $1 AND version = $2";
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(from.as_str())))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        let (from_root, to_root) = (from.scope_root(), to.scope_root());
        self.db
            .lock_scope_roots(&mut tx, &[from_root.as_str(), to_root.as_str()])
            .map_err(|f| f.into_store(Some(from.as_str())))?;
        let stored = self.read_locked(&mut tx, from)?;
        let current = self.live_at(from, stored, expected_version, now)?;
        let mut moved = MemoryEntry { id: to.clone(), ..current.clone() };
        let as_new = NewEntry {
            id: to.clone(),
            content: moved.content.clone(),
            fields: moved.fields.clone(),
            created_at: Some(moved.created_at),
            updated_at: Some(moved.updated_at),
        };
        plan(&View::new(self, &mut tx, to_root, Some(from)), self.limits(), &Batch::create(as_new), now)?;
        moved.version = next_version(to, self.highest(&mut tx, to)?)?;
        let tombstone = next_version(from, Some(current.version))?;
        let version = i64::try_from(expected_version).unwrap_or(i64::MAX);
        tx.execute(DELETE, &[&from.as_str(), &version])
            .map_err(|e| self.failure(&e, "moving an entry", Some(from.as_str())))?;
        let values = Values::of(&moved, &mut FoldBuffer::new())?;
        let inserted = tx
            .execute(INSERT, &values.insert_params())
            .map_err(|e| self.failure(&e, "moving an entry", Some(to.as_str())))?;
        if inserted == 0 {
            return Err(self.taken(&mut tx, &moved)?);
        }
        self.keep_tombstone(&mut tx, from, tombstone, now)?;
        self.keep_version(&mut tx, &moved, "entry")?;
        tx.commit().map_err(|e| self.failure(&e, "committing a move", Some(to.as_str())))?;
        Ok(moved)
    }

    fn history(&self, id: &MemoryId, limit: Option<usize>) -> Result<Vec<Version>, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let kept = self.versions(&mut conn.session(), id)?;
        if kept.is_empty() {
            return Err(StoreError::NotFound { id: id.clone(), expired: false });
        }
        Ok(newest_first(kept, limit))
    }

    fn restore(
        &self,
        id: &MemoryId,
        version: u64,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        let root = id.scope_root();
        self.db.lock_scope_roots(&mut tx, &[root.as_str()]).map_err(|f| f.into_store(Some(root.as_str())))?;
        let current = match self.read_locked(&mut tx, id)? {
            None => {
                check_tombstone(id, self.highest(&mut tx, id)?, expected_version)?;
                None
            }
            stored => Some(self.live_at(id, stored, expected_version, now)?),
        };
        let kept = self.versions(&mut tx, id)?;
        let source = restorable(find_version(&kept, id, version)?)?;
        let restored = restored_entry(source, current.as_ref(), expected_version, now, self.limits())?;
        match &current {
            Some(_) => {
                self.replace_locked(&mut tx, &restored, expected_version, "restore")?;
            }
            None => {
                plan(
                    &View::new(self, &mut tx, root, None),
                    self.limits(),
                    &Batch::create(as_create(&restored)),
                    now,
                )?;
                let values = Values::of(&restored, &mut FoldBuffer::new())?;
                let inserted = tx
                    .execute(INSERT, &values.insert_params())
                    .map_err(|e| self.failure(&e, "restoring an entry", Some(id.as_str())))?;
                if inserted == 0 {
                    return Err(self.taken(&mut tx, &restored)?);
                }
                self.keep_version(&mut tx, &restored, "entry")?;
            }
        }
        tx.commit().map_err(|e| self.failure(&e, "committing a restore", Some(id.as_str())))?;
        Ok(restored)
    }

    fn redact(&self, id: &MemoryId, version: u64) -> Result<(), StoreError> {
        const SCRUB: &str = "VACUUM (FULL) alp_history, alp_memories";
        const REDACT: &str = "UPDATE alp_history SET state = 'redacted', content = '' WHERE id = $1 AND version = $2 AND state <> 'tombstone'";
        const CURRENT: &str = "SELECT version FROM alp_memories WHERE id = $1 FOR UPDATE";
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id.as_str())))?;
        let mut tx = conn.transaction().map_err(|e| self.failure(&e, "starting a transaction", None))?;
        let current: Option<i64> = tx
            .query_opt(CURRENT, &[&id.as_str()])
            .map_err(|e| self.failure(&e, "reading an entry", Some(id.as_str())))?
            .map(|row| row.get(0));
        let kept = self.versions(&mut tx, id)?;
        check_redactable(find_version(&kept, id, version)?, current.and_then(|v| u64::try_from(v).ok()))?;
        let at = i64::try_from(version).unwrap_or(i64::MAX);
        tx.execute(REDACT, &[&id.as_str(), &at])
            .map_err(|e| self.failure(&e, "redacting a version", Some(id.as_str())))?;
        tx.commit().map_err(|e| self.failure(&e, "committing a redaction", Some(id.as_str())))?;
        // An UPDATE leaves the old row in the table's files as a dead tuple (here the version itself, and the entry
        // row it once was, with its folded copy), readable on disk until its space is reused. Rewriting both tables
        // removes those bytes from every file of the database's tables and indexes; the write-ahead log and backups
        // keep them until they are recycled.
        conn.batch(SCRUB).map_err(|e| {
            let what = format!(
                "rewriting the tables after redacting version {version} (its old bytes stay in the database's files \
                 until `{SCRUB}` succeeds)"
            );
            self.failure(&e, &what, Some(id.as_str()))
        })
    }
}

fn root_text(batch: &Batch) -> &str {
    batch.entries().first().map_or("", |entry| entry.id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_every_pattern_character() {
        for (term, pattern) in [
            ("plain", "%plain%"),
            ("100%", "%100\\%%"),
            ("snake_case", "%snake\\_case%"),
            ("c:\\temp", "%c:\\\\temp%"),
            ("việt", "%việt%"),
        ] {
            assert_eq!(like_pattern(term), pattern, "{term}");
        }
    }
}
