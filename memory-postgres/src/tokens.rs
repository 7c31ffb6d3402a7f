//! The tokens table: one row per bearer token of `alp serve` (its secret's SHA-256, never the secret), read at
//! every request so that every replica on one database sees a new or revoked token at once.

use memory_entry::{StorageError, StorageErrorKind, StoreError, Timestamp};

use crate::PostgresStore;
use crate::pool::Pooled;
use crate::schema::advisory_key;

/// The advisory lock of token names.
const NAMES_LOCK: &str = "alp-memory/token-names";

/// The lock of token names, held from [`PostgresStore::lock_token_names`] until it is dropped: a session-level
/// advisory lock on a connection of its own, released on drop (or, should that fail, by closing the connection).
pub struct TokenNamesLock<'a> {
    conn: Pooled<'a>,
    key: i64,
}

impl std::fmt::Debug for TokenNamesLock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenNamesLock").finish_non_exhaustive()
    }
}

impl Drop for TokenNamesLock<'_> {
    fn drop(&mut self) {
        let unlocked = self.conn.session().query_one("SELECT pg_advisory_unlock($1)", &[&self.key]);
        if !unlocked.is_ok_and(|row| row.get::<_, bool>(0)) {
            // The session might still hold the lock: it must not go back to the pool. Its end releases the lock.
            self.conn.discard();
        }
    }
}

/// One row of the tokens table, as stored: times in whole milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRow {
    /// The public ID, 12 lowercase hex characters.
    pub id: String,
    /// The role the token acts as.
    pub role: String,
    /// What it was made for, if given.
    pub name: Option<String>,
    /// When it was made.
    pub created_at: Timestamp,
    /// When it expires (`None`: never).
    pub expires_at: Option<Timestamp>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
    /// The lowercase hex SHA-256 of its secret.
    pub secret_sha256: String,
}

macro_rules! select_tokens {
    ($rest:literal) => {
        concat!(
            "SELECT id, role, name, created_at, expires_at, revoked_at, secret_sha256 FROM alp_tokens ",
            $rest
        )
    };
}

fn corrupt(id: &str, what: &str) -> StoreError {
    StoreError::Storage(StorageError::about(StorageErrorKind::Corrupt, Some(id), what.to_owned()))
}

fn decode(row: &tokio_postgres::Row) -> Result<TokenRow, StoreError> {
    let id: String = row.get(0);
    let time = |millis: i64| {
        Timestamp::from_unix_millis(millis).ok_or_else(|| corrupt(&id, "a token time is not a time"))
    };
    let created_at = time(row.get(3))?;
    let expires_at = row.get::<_, Option<i64>>(4).map(time).transpose()?;
    let revoked_at = row.get::<_, Option<i64>>(5).map(time).transpose()?;
    Ok(TokenRow {
        role: row.get(1),
        name: row.get(2),
        created_at,
        expires_at,
        revoked_at,
        secret_sha256: row.get(6),
        id,
    })
}

impl PostgresStore {
    /// Takes the lock of token names (a session-level advisory lock, the same for every process and host using the
    /// database), waiting at most `lockTimeout`: held while a name is checked free and the token that takes it is
    /// stored, so that two processes never give one name to two tokens.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] of kind `LockTimeout` when another holder kept it for `lockTimeout`, or when the
    /// database fails.
    pub fn lock_token_names(&self) -> Result<TokenNamesLock<'_>, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let key = advisory_key(NAMES_LOCK, "");
        conn.session()
            .execute("SELECT pg_advisory_lock($1)", &[&key])
            .map_err(|e| self.failure(&e, "locking the token names", None))?;
        Ok(TokenNamesLock { conn, key })
    }

    /// The token row of `id`, or `None`.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when the database fails.
    pub fn token_row(&self, id: &str) -> Result<Option<TokenRow>, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(id)))?;
        let row = conn
            .session()
            .query_opt(select_tokens!("WHERE id = $1"), &[&id])
            .map_err(|e| self.failure(&e, "reading a token", Some(id)))?;
        row.as_ref().map(decode).transpose()
    }

    /// Stores `row`, replacing the row of the same ID in one statement.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when the database fails (the old row is then intact).
    pub fn put_token_row(&self, row: &TokenRow) -> Result<(), StoreError> {
        const PUT: &str = "INSERT INTO alp_tokens (id, role, name, created_at, expires_at, revoked_at, secret_sha256) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET role = $2, name = $3, \
             created_at = $4, expires_at = $5, revoked_at = $6, secret_sha256 = $7";
        let millis = |t: Option<Timestamp>| t.map(Timestamp::unix_millis);
        let mut conn = self.db.conn().map_err(|f| f.into_store(Some(&row.id)))?;
        conn.session()
            .execute(
                PUT,
                &[
                    &row.id,
                    &row.role,
                    &row.name,
                    &row.created_at.unix_millis(),
                    &millis(row.expires_at),
                    &millis(row.revoked_at),
                    &row.secret_sha256,
                ],
            )
            .map_err(|e| self.failure(&e, "writing a token", Some(&row.id)))?;
        Ok(())
    }

    /// Every token row, by ID.
    ///
    /// # Errors
    ///
    /// [`StoreError::Storage`] when the database fails.
    pub fn token_rows(&self) -> Result<Vec<TokenRow>, StoreError> {
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let rows = conn
            .session()
            .query(select_tokens!("ORDER BY id"), &[])
            .map_err(|e| self.failure(&e, "reading the tokens", None))?;
        rows.iter().map(decode).collect()
    }
}
