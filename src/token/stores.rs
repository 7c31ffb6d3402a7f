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
}

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
}
