//! What `alp store copy` reads from and writes into a PostgreSQL store: every entry and every version, exactly as
//! stored, with no rule planned over them.

use memory_entry::{MemoryEntry, StorageError, StorageErrorKind, StoreError, Version};
use memory_ranker::FoldBuffer;

use super::PostgresStore;
use crate::row::{
    INSERT, KEEP, Stored, TOMBSTONE, Values, decode, decode_version, select_entries, select_versions,
};

impl PostgresStore {
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
}
