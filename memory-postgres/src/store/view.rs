//! One scope root as the create rules ([`memory_store::plan`]) see it, asked of the database inside the caller's
//! transaction, and why an insert found its place taken.

use std::cell::RefCell;

use memory_entry::{
    ExistsReason, Key, MemoryEntry, MemoryType, ScopeRef, StorageError, StorageErrorKind, StoreError,
};
use memory_id::{MemoryId, MemoryPrefix};
use memory_store::{Existing, ScopeView};

use super::PostgresStore;
use crate::pool::{AsClient, Cached, Tx};
use crate::row::Stored;

impl PostgresStore {
    /// Why an insert of `entry` found its place taken.
    pub(super) fn taken(
        &self,
        tx: &mut Cached<'_, Tx>,
        entry: &MemoryEntry,
    ) -> Result<StoreError, StoreError> {
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
}

/// One scope root as the create rules see it, asked of the database inside the caller's transaction.
pub(super) struct View<'s, 'a, 'c, C> {
    store: &'s PostgresStore,
    tx: RefCell<&'a mut Cached<'c, C>>,
    root: MemoryPrefix,
    /// An entry being moved away (a rename): its name is about to be free, and its key is its own.
    leaving: Option<&'a MemoryId>,
}

impl<'s, 'a, 'c, C: AsClient> View<'s, 'a, 'c, C> {
    pub(super) fn new(
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
