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
/// and nothing is made), and a `name` must not be held by an unrevoked token (else [`MemoryError::NameTaken`] and
/// no record). One audit record (actor `""`, `token-create`, the token's ID) is written first; only once it is
/// durable is the record stored. Returns the token (the only time its secret is seen) and its record.
///
/// # Errors
///
/// [`MemoryError::AgentDefinition`], [`MemoryError::NameTaken`], [`MemoryError::Usage`] (an expiry past year
/// 9999), [`MemoryError::AuditUnavailable`] (nothing stored), [`MemoryError::Storage`].
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
    issue(tokens, audit, actor.role().as_str(), name, expires_at, None, now)
}

/// A new token of `role`, stored after its record: `name` must be free among unrevoked tokens other than
/// `replacing` (the token a rotation replaces, which still holds it).
fn issue(
    tokens: &dyn TokenStore,
    audit: &dyn AuditSink,
    role: &str,
    name: Option<&str>,
    expires_at: Option<Timestamp>,
    replacing: Option<&str>,
    now: Timestamp,
) -> Result<(BearerToken, TokenRecord), MemoryError> {
    // Held until the token is stored, so that no other process gives the name away between the check and the store.
    let _names = name.map(|_| tokens.lock_names()).transpose()?;
    if let Some(name) = name
        && let Some(holder) = tokens
            .tokens()?
            .into_iter()
            .find(|r| r.revoked_at.is_none() && r.name() == Some(name) && Some(r.id()) != replacing)
    {
        return Err(MemoryError::NameTaken {
            id: name.to_owned(),
            message: format!(
                "token name `{}` is held by token {} (not revoked); choose another name, revoke that token, or \
                 replace it with `alp token rotate {}`",
                memory_id::shown(name),
                holder.id(),
                holder.id()
            ),
        });
    }
    let token = loop {
        let token = BearerToken::generate()?;
        // 48 random bits: a clash is all but impossible, and never overwrites a record.
        if tokens.token(token.id())?.is_none() {
            break token;
        }
    };
    let record = TokenRecord {
        id: token.id().as_str().to_owned(),
        role: role.to_owned(),
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

/// The token an operator names: its ID, else its name. A name names the unrevoked token holding it, or, when every
/// token of that name is revoked, the newest of them; an ID wins over a name spelt the same.
///
/// # Errors
///
/// [`MemoryError::TokenNotFound`] when no token has that ID or name; [`MemoryError::Storage`].
pub fn find_token(tokens: &dyn TokenStore, id_or_name: &str) -> Result<TokenRecord, MemoryError> {
    if let Ok(id) = TokenId::parse(id_or_name)
        && let Some(record) = tokens.token(&id)?
    {
        return Ok(record);
    }
    let mut named: Vec<TokenRecord> =
        tokens.tokens()?.into_iter().filter(|r| r.name() == Some(id_or_name)).collect();
    // Unrevoked first, then the newest.
    named.sort_by(|a, b| {
        (a.revoked_at.is_some(), std::cmp::Reverse((a.created_at, &a.id)))
            .cmp(&(b.revoked_at.is_some(), std::cmp::Reverse((b.created_at, &b.id))))
    });
    named.into_iter().next().ok_or_else(|| MemoryError::TokenNotFound { id: id_or_name.to_owned() })
}

/// Revokes the token `id_or_name` names ([`find_token`]) from `now` on: an unknown one is
/// [`MemoryError::TokenNotFound`] with no audit record. One record (actor `""`, `token-revoke`, the token's ID) is
/// written before the record changes; revoking a revoked token writes one more record and keeps the first
/// `revokedAt`.
///
/// # Errors
///
/// [`MemoryError::TokenNotFound`], [`MemoryError::AuditUnavailable`] (nothing changed), [`MemoryError::Storage`].
pub fn revoke_token(
    tokens: &dyn TokenStore,
    audit: &dyn AuditSink,
    id_or_name: &str,
    now: Timestamp,
) -> Result<TokenRecord, MemoryError> {
    let record = find_token(tokens, id_or_name)?;
    revoke_record(tokens, audit, record, now)
}

fn revoke_record(
    tokens: &dyn TokenStore,
    audit: &dyn AuditSink,
    mut record: TokenRecord,
    now: Timestamp,
) -> Result<TokenRecord, MemoryError> {
    let now = now.truncated_to_millis();
    operator_record(audit, AuditOperation::TokenRevoke, record.id(), None, now)?;
    if record.revoked_at.is_none() {
        record.revoked_at = Some(now);
        tokens.put_token(&record)?;
    }
    Ok(record)
}

/// Replaces the unrevoked token `id_or_name` names ([`find_token`]): a new token with its role, name and
/// lifetime (as long from `now` as the old one was from its creation, or never), then the old one revoked, each
/// on its own record (`token-create`, then `token-revoke`). The new token is stored before the old one is revoked,
/// so a failure between the two leaves both usable, never neither. Returns the new token, its record and the old
/// record, revoked.
///
/// # Errors
///
/// [`MemoryError::TokenNotFound`]; [`MemoryError::Usage`] for a revoked token (make a new one instead);
/// [`MemoryError::AgentDefinition`] when its role has no definition any more; [`MemoryError::AuditUnavailable`];
/// [`MemoryError::Storage`].
pub fn rotate_token(
    tokens: &dyn TokenStore,
    audit: &dyn AuditSink,
    actors: &dyn ActorSource,
    id_or_name: &str,
    now: Timestamp,
) -> Result<(BearerToken, TokenRecord, TokenRecord), MemoryError> {
    let old = find_token(tokens, id_or_name)?;
    if let Some(at) = old.revoked_at {
        return Err(MemoryError::Usage(format!(
            "token {} was revoked at {at}; there is nothing to rotate: make a new one with `alp token create --role \
             {}`",
            old.id(),
            old.role()
        )));
    }
    actors.actor(old.role())?;
    let now = now.truncated_to_millis();
    let expires_at = match old.expires_at {
        None => None,
        Some(at) => {
            let lifetime = at.unix_millis().saturating_sub(old.created_at.unix_millis());
            Some(now.unix_millis().checked_add(lifetime).and_then(Timestamp::from_unix_millis).ok_or_else(
                || {
                    MemoryError::Usage(format!(
                        "token {}'s lifetime from now ends after the year 9999",
                        old.id()
                    ))
                },
            )?)
        }
    };
    let (token, record) = issue(tokens, audit, old.role(), old.name(), expires_at, Some(old.id()), now)?;
    let old = revoke_record(tokens, audit, old, now)?;
    Ok((token, record, old))
}
