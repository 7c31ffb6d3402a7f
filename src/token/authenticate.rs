//! The server's side: an `Authorization` header checked against its record and its role's definition.

use memory_entry::Timestamp;
use memory_policy::Actor;

use super::*;
use crate::ActorSource;

/// Why a request's credential was refused. Every refusal is a 401; the reason is for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// No `Authorization: Bearer …` header.
    Missing,
    /// A `Bearer` credential that is not a token.
    Malformed,
    /// No record for its ID, or the secret does not match.
    Unknown,
    /// Its `expiresAt` has passed.
    Expired,
    /// It was revoked.
    Revoked,
    /// Its role has no (valid) definition.
    Role,
    /// The record could not be read.
    Unavailable,
}

impl Refusal {
    /// A stable name: `missing`, `malformed`, `unknown`, `expired`, `revoked`, `role`, `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Missing => "missing",
            Refusal::Malformed => "malformed",
            Refusal::Unknown => "unknown",
            Refusal::Expired => "expired",
            Refusal::Revoked => "revoked",
            Refusal::Role => "role",
            Refusal::Unavailable => "unavailable",
        }
    }
}

/// Who a request acts as, from its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The token's ID (for `via` and logs).
    pub token_id: TokenId,
    /// The token's role: the actor of everything the request does.
    pub role: String,
    /// The role's definition as [`authenticate`] read it for this request, so that the request's call judges by
    /// the same reading instead of reading the definition a second time.
    pub actor: Actor,
}

/// Checks an `Authorization` header value at `now`: a well-formed token whose record exists, matches, is neither
/// expired nor revoked, and whose role has a definition. The record and the definition are read on every call; the
/// definition read is the [`Identity::actor`] returned.
///
/// # Errors
///
/// The [`Refusal`], with the token's ID when it parsed (never the secret).
pub fn authenticate(
    tokens: &dyn TokenStore,
    actors: &dyn ActorSource,
    header: Option<&[u8]>,
    now: Timestamp,
) -> Result<Identity, (Refusal, Option<TokenId>)> {
    let token = match Credential::from_header(header) {
        Credential::Missing => return Err((Refusal::Missing, None)),
        Credential::Malformed { id } => return Err((Refusal::Malformed, id)),
        Credential::Token(token) => token,
    };
    let id = token.id().clone();
    let record = match tokens.token(&id) {
        Ok(Some(record)) if record.matches(&token) => record,
        Ok(_) => return Err((Refusal::Unknown, Some(id))),
        Err(_) => return Err((Refusal::Unavailable, Some(id))),
    };
    if let Some(refusal) = record.refusal_at(now) {
        return Err((refusal, Some(id)));
    }
    let Ok(actor) = actors.actor(record.role()) else {
        return Err((Refusal::Role, Some(id)));
    };
    Ok(Identity { token_id: id, role: record.role, actor })
}
