//! A token's record (the role, the name, the times and the SHA-256 of the secret, never the secret), as its file or row holds it.

use memory_entry::Timestamp;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq as _;

use super::*;
use crate::MemoryError;

/// A token's record: everything but the secret, whose SHA-256 it keeps. Serialized as the record file holds it:
/// `{"id","role","name","createdAt","expiresAt","revokedAt","secretSha256"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRecord {
    pub(super) id: String,
    pub(super) role: String,
    pub(super) name: Option<String>,
    #[serde(with = "instant")]
    pub(super) created_at: Timestamp,
    #[serde(with = "optional_instant")]
    pub(super) expires_at: Option<Timestamp>,
    #[serde(with = "optional_instant")]
    pub(super) revoked_at: Option<Timestamp>,
    pub(super) secret_sha256: String,
}

/// The view of a record that `alp token list` prints: no hash.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenListing<'a> {
    id: &'a str,
    role: &'a str,
    name: Option<&'a str>,
    created_at: String,
    expires_at: Option<String>,
    revoked_at: Option<String>,
}

impl TokenRecord {
    /// The token's ID.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The role the token acts as.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The operator's name for it, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// When it was made.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When it stops working (`None`: never).
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.expires_at
    }

    /// When it was revoked, if it was.
    pub fn revoked_at(&self) -> Option<Timestamp> {
        self.revoked_at
    }

    /// Whether `token` is this record's token: same ID, and the SHA-256 of its secret equal in constant time.
    pub fn matches(&self, token: &BearerToken) -> bool {
        let hash = token.secret_sha256();
        token.id.as_str() == self.id && bool::from(hash.as_bytes().ct_eq(self.secret_sha256.as_bytes()))
    }

    /// Why the token cannot be used at `now`, if it cannot: revoked, or expired (`expiresAt <= now`).
    pub fn refusal_at(&self, now: Timestamp) -> Option<Refusal> {
        if self.revoked_at.is_some() {
            Some(Refusal::Revoked)
        } else if self.expires_at.is_some_and(|at| at <= now) {
            Some(Refusal::Expired)
        } else {
            None
        }
    }

    /// The listing view (no hash).
    pub fn listing(&self) -> TokenListing<'_> {
        TokenListing {
            id: &self.id,
            role: &self.role,
            name: self.name.as_deref(),
            created_at: self.created_at.to_string(),
            expires_at: self.expires_at.map(|t| t.to_string()),
            revoked_at: self.revoked_at.map(|t| t.to_string()),
        }
    }

    /// The record file's bytes: the JSON object and a newline.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] if it cannot be serialized (it always can).
    pub fn to_json(&self) -> Result<Vec<u8>, MemoryError> {
        let mut bytes = serde_json::to_vec(self).map_err(|e| storage(&self.id, &e.to_string()))?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Reads a record file's bytes; `id` is the ID its name says, which the record must hold.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] for anything that is not such a record.
    pub fn from_json(id: &TokenId, bytes: &[u8]) -> Result<TokenRecord, MemoryError> {
        let record: TokenRecord = serde_json::from_slice(bytes)
            .map_err(|e| storage(id.as_str(), &format!("token record `{id}` is not valid: {e}")))?;
        if record.id != id.as_str() || !is_hash(&record.secret_sha256) {
            return Err(storage(id.as_str(), &format!("token record `{id}` is not valid")));
        }
        Ok(record)
    }
}

pub(super) fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

pub(super) fn storage(id: &str, message: &str) -> MemoryError {
    MemoryError::Storage { id: Some(id.to_owned()), storage_kind: None, message: message.to_owned() }
}

mod instant {
    use memory_entry::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

mod optional_instant {
    use memory_entry::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.collect_str(t),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| Timestamp::parse(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(all(target_os = "linux", feature = "postgres"))]
impl TokenRecord {
    /// The record a row of the tokens table holds, checked as a record file is.
    pub(super) fn from_row(row: memory_postgres::TokenRow) -> Result<TokenRecord, MemoryError> {
        if TokenId::parse(&row.id).is_err() || !is_hash(&row.secret_sha256) {
            return Err(storage(&row.id, &format!("token record `{}` is not valid", row.id)));
        }
        Ok(TokenRecord {
            id: row.id,
            role: row.role,
            name: row.name,
            created_at: row.created_at,
            expires_at: row.expires_at,
            revoked_at: row.revoked_at,
            secret_sha256: row.secret_sha256,
        })
    }

    /// This record as a row of the tokens table.
    pub(super) fn to_row(&self) -> memory_postgres::TokenRow {
        memory_postgres::TokenRow {
            id: self.id.clone(),
            role: self.role.clone(),
            name: self.name.clone(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            revoked_at: self.revoked_at,
            secret_sha256: self.secret_sha256.clone(),
        }
    }
}
