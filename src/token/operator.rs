//! The operator's side: a token's lifetime, making a token and revoking one, each on the audit record.

use memory_audit::{AuditOperation, AuditSink};
use memory_entry::{Timestamp, Ttl};

use super::*;
use crate::operator::operator_record;
use crate::{ActorSource, MemoryError};

/// How long a new token lives: a duration, or for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// It expires this long after it is made.
    For(Ttl),
    /// It never expires (it can still be revoked).
    Never,
}

impl Lifetime {
    /// Parses `--expires`: a positive duration (`90d`, `12h`, …) or `never`.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for anything else.
    pub fn parse(text: &str) -> Result<Lifetime, MemoryError> {
        if text == "never" {
            return Ok(Lifetime::Never);
        }
        Ttl::parse(text).map(Lifetime::For).map_err(|_| {
            MemoryError::Usage(format!(
                "--expires `{}` is neither `never` nor a duration (a positive integer and one of s, m, h, d, w, e.g. \
                 `90d`)",
                memory_id::shown(text)
            ))
        })
    }
}

/// Makes a token for `role`: the role must have a definition in `actors` (else [`MemoryError::AgentDefinition`]
/// and nothing is made). One audit record (actor `""`, `token-create`, the token's ID) is written first; only once
/// it is durable is the record stored. Returns the token (the only time its secret is seen) and its record.
///
/// # Errors
///
/// [`MemoryError::AgentDefinition`], [`MemoryError::Usage`] (an expiry past year 9999),
/// [`MemoryError::AuditUnavailable`] (nothing stored), [`MemoryError::Storage`].
pub fn create_token(
    tokens: &dyn TokenStore,
    audit: &dyn AuditSink,
    actors: &dyn ActorSource,
    role: &str,
    name: Option<&str>,
    lifetime: Lifetime,
    now: Timestamp,
) -> Result<(BearerToken, TokenRecord), MemoryError> {
    let actor = actors.actor(role)?;
    let now = now.truncated_to_millis();
    let expires_at = match lifetime {
        Lifetime::Never => None,
        Lifetime::For(ttl) => Some(now.checked_add(ttl).ok_or_else(|| {
            MemoryError::Usage(format!("--expires `{ttl}` ends after the year 9999; use `never`"))
        })?),
    };
    let token = loop {
        let token = BearerToken::generate()?;
        // 48 random bits: a clash is all but impossible, and never overwrites a record.
        if tokens.token(token.id())?.is_none() {
            break token;
        }
    };
    let record = TokenRecord {
        id: token.id().as_str().to_owned(),
        role: actor.role().as_str().to_owned(),
        name: name.map(str::to_owned),
        created_at: now,
        expires_at,
        revoked_at: None,
        secret_sha256: token.secret_sha256(),
    };
    operator_record(audit, AuditOperation::TokenCreate, record.id(), None, now)?;
    tokens.put_token(&record)?;
    Ok((token, record))
}

/// Revokes the token `id` from `now` on: an unknown ID is [`MemoryError::TokenNotFound`] with no audit record.
/// One record (actor `""`, `token-revoke`) is written before the record changes; revoking a revoked token writes
/// one more record and keeps the first `revokedAt`.
///
/// # Errors
///
/// [`MemoryError::Usage`] (not a token ID), [`MemoryError::TokenNotFound`], [`MemoryError::AuditUnavailable`]
/// (nothing changed), [`MemoryError::Storage`].
pub fn revoke_token(
    tokens: &dyn TokenStore,
    audit: &dyn AuditSink,
    id: &str,
    now: Timestamp,
) -> Result<TokenRecord, MemoryError> {
    let parsed = TokenId::parse(id).map_err(|_| MemoryError::TokenNotFound { id: id.to_owned() })?;
    let Some(mut record) = tokens.token(&parsed)? else {
        return Err(MemoryError::TokenNotFound { id: id.to_owned() });
    };
    let now = now.truncated_to_millis();
    operator_record(audit, AuditOperation::TokenRevoke, record.id(), None, now)?;
    if record.revoked_at.is_none() {
        record.revoked_at = Some(now);
        tokens.put_token(&record)?;
    }
    Ok(record)
}
