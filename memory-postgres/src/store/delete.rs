//! The live and expired deletes: one statement template that deletes the entry, keeps its tombstone and drops the
//! versions beyond `history.keepVersions`, and the rule that says why nothing was deleted.

use memory_entry::{StorageError, StorageErrorKind, StoreError, Timestamp, next_version};
use memory_id::MemoryId;
use memory_store::Held;

use super::PostgresStore;
use crate::row::Stored;

impl PostgresStore {
    /// Deletes the entry at `expected_version` that `deletion` allows, keeping its tombstone; when nothing was
    /// deleted, the row as it stood says why, by the rule `deletion` applies.
    pub(super) fn delete_entry(
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
pub(super) enum Deletion {
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

    /// The rule the row must pass: [`memory_store::live_at`] or [`memory_store::expired_at`].
    fn check(
        self,
        id: &MemoryId,
        row: Option<RowState>,
        expected_version: u64,
        now: Timestamp,
    ) -> Result<RowState, StoreError> {
        match self {
            Deletion::Live => memory_store::live_at(id, row, expected_version, now),
            Deletion::Expired => memory_store::expired_at(id, row, expected_version, now),
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
