//! Where token records live: a Markdown root's `tokens/` directory, or the database's tokens table.

use super::record::storage;
use super::*;
use crate::MemoryError;

/// Where token records live.
pub trait TokenStore: Send + Sync {
    /// The record of `id`, or `None`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] when it cannot be read.
    fn token(&self, id: &TokenId) -> Result<Option<TokenRecord>, MemoryError>;

    /// Stores `record`, replacing the record of the same ID atomically.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] when it cannot be written; the old record is then intact.
    fn put_token(&self, record: &TokenRecord) -> Result<(), MemoryError>;

    /// Every record, in any order.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] when they cannot be read.
    fn tokens(&self) -> Result<Vec<TokenRecord>, MemoryError>;

    /// Takes the lock of token names, held until the guard is dropped, against every other holder in any process
    /// using the same store: [`create_token`](crate::token::create_token) and
    /// [`rotate_token`](crate::token::rotate_token) hold it from checking that a name is free to storing the token
    /// that takes it, so that one name is never given to two tokens.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] (of kind `LockTimeout` when another holder kept it for the store's lock timeout).
    fn lock_names(&self) -> Result<NamesLock<'_>, MemoryError>;
}

/// The lock of token names ([`TokenStore::lock_names`]), released when dropped.
pub struct NamesLock<'a> {
    _held: Box<dyn Held + 'a>,
}

impl NamesLock<'_> {
    /// A guard holding `held` (whatever releases the lock when dropped).
    pub fn new<'a>(held: impl std::fmt::Debug + 'a) -> NamesLock<'a> {
        NamesLock { _held: Box::new(held) }
    }
}

impl std::fmt::Debug for NamesLock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamesLock").finish_non_exhaustive()
    }
}

/// Anything a [`NamesLock`] keeps until it is dropped.
trait Held {}

impl<T> Held for T {}

/// The tokens table of the database: every replica on it reads the same rows at each request.
#[cfg(all(target_os = "linux", feature = "postgres"))]
impl TokenStore for memory_postgres::PostgresStore {
    fn token(&self, id: &TokenId) -> Result<Option<TokenRecord>, MemoryError> {
        let row = self.token_row(id.as_str()).map_err(|e| storage(id.as_str(), &e.to_string()))?;
        row.map(TokenRecord::from_row).transpose()
    }

    fn put_token(&self, record: &TokenRecord) -> Result<(), MemoryError> {
        self.put_token_row(&record.to_row()).map_err(|e| storage(&record.id, &e.to_string()))
    }

    fn tokens(&self) -> Result<Vec<TokenRecord>, MemoryError> {
        let rows = self.token_rows().map_err(|e| MemoryError::Storage {
            id: None,
            storage_kind: None,
            message: e.to_string(),
        })?;
        rows.into_iter().map(TokenRecord::from_row).collect()
    }

    fn lock_names(&self) -> Result<NamesLock<'_>, MemoryError> {
        let held = self.lock_token_names().map_err(MemoryError::from)?;
        Ok(NamesLock::new(held))
    }
}

#[cfg(target_os = "linux")]
impl TokenStore for memory_markdown::MarkdownStore {
    fn token(&self, id: &TokenId) -> Result<Option<TokenRecord>, MemoryError> {
        let bytes = self
            .read_record(TOKEN_DIR, &format!("{id}.json"))
            .map_err(|e| storage(id.as_str(), &e.to_string()))?;
        bytes.map(|bytes| TokenRecord::from_json(id, &bytes)).transpose()
    }

    fn put_token(&self, record: &TokenRecord) -> Result<(), MemoryError> {
        self.write_record(TOKEN_DIR, &format!("{}.json", record.id), &record.to_json()?)
            .map_err(|e| storage(&record.id, &e.to_string()))
    }

    fn tokens(&self) -> Result<Vec<TokenRecord>, MemoryError> {
        let names = self.record_names(TOKEN_DIR).map_err(|e| MemoryError::Storage {
            id: None,
            storage_kind: None,
            message: e.to_string(),
        })?;
        let mut records = Vec::new();
        for name in names {
            let Some(id) = name.strip_suffix(".json").and_then(|id| TokenId::parse(id).ok()) else {
                continue;
            };
            if let Some(record) = self.token(&id)? {
                records.push(record);
            }
        }
        Ok(records)
    }

    fn lock_names(&self) -> Result<NamesLock<'_>, MemoryError> {
        let held = self
            .lock_records(TOKEN_DIR)
            .map_err(|e| MemoryError::from(memory_entry::StoreError::Storage(e)))?;
        Ok(NamesLock::new(held))
    }
}

impl<T: TokenStore + ?Sized> TokenStore for std::sync::Arc<T> {
    fn token(&self, id: &TokenId) -> Result<Option<TokenRecord>, MemoryError> {
        (**self).token(id)
    }

    fn put_token(&self, record: &TokenRecord) -> Result<(), MemoryError> {
        (**self).put_token(record)
    }

    fn tokens(&self) -> Result<Vec<TokenRecord>, MemoryError> {
        (**self).tokens()
    }

    fn lock_names(&self) -> Result<NamesLock<'_>, MemoryError> {
        (**self).lock_names()
    }
}
