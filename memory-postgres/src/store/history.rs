//! The kept versions of an entry (`alp_history`): the highest version, a version or tombstone kept with the oldest
//! beyond `history.keepVersions` dropped, and every kept version of an ID.

use memory_entry::{MemoryEntry, StoreError, Timestamp, Version};
use memory_id::MemoryId;
use memory_ranker::FoldBuffer;

use super::PostgresStore;
use crate::pool::{AsClient, Cached};
use crate::row::{HIGHEST, KEEP, TOMBSTONE, Values, decode_version, select_versions};

impl PostgresStore {
    /// `history.keepVersions` as bound.
    pub(super) fn keep(&self) -> i64 {
        i64::try_from(self.db.settings.limits.keep_versions).unwrap_or(i64::MAX)
    }

    /// The highest version `id` ever had (`None`: no version kept).
    pub(super) fn highest<C: AsClient>(
        &self,
        c: &mut Cached<'_, C>,
        id: &MemoryId,
    ) -> Result<Option<u64>, StoreError> {
        let highest: Option<i64> = c
            .query_one(HIGHEST, &[&id.as_str()])
            .map_err(|e| self.failure(&e, "reading the highest version", Some(id.as_str())))?
            .get(0);
        Ok(highest.and_then(|v| u64::try_from(v).ok()))
    }

    /// Keeps `entry` as a version of its ID (`state` `entry` or `redacted`) and drops the oldest beyond
    /// `history.keepVersions`.
    pub(super) fn keep_version<C: AsClient>(
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
    pub(super) fn keep_tombstone<C: AsClient>(
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
    pub(super) fn versions<C: AsClient>(
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
}
