//! `PostgresStore`: the `MemoryStore` over one database. This file holds the store, its reads and compare-and-swap
//! writes of one entry, and the `MemoryStore` impl; the other jobs have their own files: `copy` (what
//! `alp store copy` reads and writes), `listing` (the candidate SQL of a listing), `view` (the scope root as the
//! create rules see it), `history` (kept versions and tombstones) and `delete` (the live and expired deletes).

mod copy;
mod delete;
mod history;
mod listing;
mod view;

use std::sync::Arc;

use memory_entry::{
    Limits, MemoryEntry, NewEntry, Patch, StorageError, StorageErrorKind, StoreError, Timestamp, Version,
    next_version,
};
use memory_id::MemoryId;
use memory_ranker::FoldBuffer;
use memory_store::{
    Batch, BatchPlan, Listing, MemoryStore, ScopeView, Scored, Step, check_plan_unchanged,
    history_newest_first, plan, redactable, restored,
};

use self::delete::Deletion;
use self::view::View;
use crate::db::Db;
use crate::pool::{AsClient, Cached, Tx};
use crate::row::{INSERT, Stored, UPDATE, Values, check_content, decode, select_entries};
use crate::{DatabaseOpenError, PostgresAuditSink, Settings};

/// A memory store in a PostgreSQL database (`docs/POSTGRESQL.md`): the same rules, order and results as every other
/// store (it passes the adapter suite of `memory-entry`), for agents on several hosts.
///
/// Architecture invariants:
/// - Every statement is parameterised; user text never becomes SQL. The only `LIKE` is the trigram preselection of
///   a search, on the folded column, with `\`, `%` and `_` escaped; prefixes are index ranges (`id = p OR (id >=
///   p || ':' AND id < p || ';')` under `COLLATE "C"`), so `project:a_b` never matches `project:aXb`.
/// - The create rules are [`memory_store::plan`], run under a transaction advisory lock of the scope root (two roots,
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

    /// The live entry in `stored` ([`memory_store::live`]), or the error the doors report.
    fn live(&self, id: &MemoryId, stored: Option<Stored>, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        memory_store::live(id, self.readable(id, stored)?, now).map(|entry| *entry)
    }

    /// The live entry in `stored` at `expected_version` ([`memory_store::live_at`]).
    fn live_at(
        &self,
        id: &MemoryId,
        stored: Option<Stored>,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        memory_store::live_at(id, self.readable(id, stored)?, expected_version, now).map(|entry| *entry)
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
            memory_store::check_key_free(&entry.id, holder)?;
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
}

fn too_large(id: &MemoryId, size: i64, limit: u64) -> StoreError {
    StoreError::Storage(StorageError::new(
        StorageErrorKind::TooLarge,
        Some(id),
        format!("the stored entry is {size} bytes, more than limits.maxFileBytes ({limit}); it is not read"),
    ))
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
        self.list_entries(listing)
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
                    Patch::from(new).apply(&mut entry, now)?;
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
        history_newest_first(id, self.versions(&mut conn.session(), id)?, limit)
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
        let stored = self.read_locked(&mut tx, id)?;
        let current = self.readable(id, stored)?;
        let kept = self.versions(&mut tx, id)?;
        let restored =
            restored(id, version, expected_version, current.as_deref(), &kept, now, self.limits())?;
        match &current {
            Some(_) => {
                self.replace_locked(&mut tx, &restored, expected_version, "restore")?;
            }
            None => {
                plan(
                    &View::new(self, &mut tx, root, None),
                    self.limits(),
                    &Batch::create(NewEntry::from(&restored)),
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
        redactable(id, version, current.and_then(|v| u64::try_from(v).ok()), &kept)?;
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
