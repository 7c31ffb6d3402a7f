//! Bearer tokens for the HTTP server (`alp serve`): each token is bound to one role, and a request's role is the
//! role of the token it carries, never anything the request says.
//!
//! A token reads `alp_<id>_<secret>`: `id` is 12 lowercase hex digits (public: it names the token in lists, logs
//! and audit records), `secret` is 43 characters of URL-safe base64 (no padding) of 32 bytes from the operating
//! system's generator. A [`TokenRecord`] keeps the token's role, name and times and the SHA-256 of the secret's 43
//! ASCII characters — never the secret — and [`TokenRecord::matches`] compares that hash in constant time. Records
//! live in a [`TokenStore`]: on a Markdown root, `<root>/tokens/<id>.json` (0600, written atomically).
//!
//! The operator's side is [`create_token`] and [`revoke_token`] (each writes one audit record, actor `""`,
//! operation `token-create` or `token-revoke`, before the token is stored or changed, and fails closed); the
//! server's side is [`authenticate`], which reads the record again on every request, so a revoked or expired token
//! is refused at its next request.
//!
//! ```
//! use alp_memory::token::{BearerToken, Credential};
//!
//! let token = BearerToken::generate().unwrap();
//! let text = token.reveal();
//! assert!(text.starts_with("alp_") && text.len() == 60);
//! assert_eq!(BearerToken::parse(&text).unwrap().id(), token.id());
//! // Debug output never shows the secret.
//! assert!(!format!("{token:?}").contains(&text[17..]));
//!
//! let header = format!("Bearer {text}");
//! assert!(matches!(Credential::from_header(Some(header.as_bytes())), Credential::Token(_)));
//! assert!(matches!(Credential::from_header(Some(b"Basic dXNlcjpwdw==")), Credential::Missing));
//! assert!(matches!(Credential::from_header(Some(b"Bearer alp_nope")), Credential::Malformed { id: None }));
//! ```

use std::fmt;

use base64::Engine as _;
use memory_audit::{AuditEvent, AuditOperation, AuditSink, Outcome};
use memory_entry::{Timestamp, Ttl};
use memory_policy::Actor;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::{ActorSource, MemoryError};

/// The directory of the root that holds token records (`memory_markdown::layout`).
#[cfg(target_os = "linux")]
pub const TOKEN_DIR: &str = memory_markdown::TOKENS_DIR;

/// How long a token lives unless `--expires` says otherwise: 90 days ([`Lifetime::parse`] reads it).
pub const DEFAULT_EXPIRES: &str = "90d";

/// The length of a token's text: `alp_` + 12 + `_` + 43.
pub const TOKEN_LEN: usize = 4 + ID_LEN + 1 + SECRET_LEN;
const ID_LEN: usize = 12;
const SECRET_LEN: usize = 43;

/// A token's public ID: 12 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenId(String);

impl TokenId {
    /// Parses a token ID.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] unless `text` is 12 lowercase hex digits.
    pub fn parse(text: &str) -> Result<TokenId, MemoryError> {
        if is_id(text.as_bytes()) {
            Ok(TokenId(text.to_owned()))
        } else {
            Err(MemoryError::Usage(format!(
                "`{}` is not a token id (12 lowercase hex digits, as `alp token list` shows)",
                memory_id::shown(text)
            )))
        }
    }

    /// The ID as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_id(bytes: &[u8]) -> bool {
    bytes.len() == ID_LEN && bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn is_secret(bytes: &[u8]) -> bool {
    bytes.len() == SECRET_LEN && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// A whole token, secret included. Only [`BearerToken::reveal`] shows the secret; `Debug` shows the ID alone.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken {
    id: TokenId,
    secret: String,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerToken").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Why a text is not a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a token: {reason}")]
pub struct TokenParseError {
    reason: &'static str,
    id: Option<TokenId>,
}

impl TokenParseError {
    /// Why, in words (never the input).
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The token's ID, when the text has a well-formed one (so a refusal can be logged by ID).
    pub fn id(&self) -> Option<&TokenId> {
        self.id.as_ref()
    }
}

impl BearerToken {
    /// A new token: 6 random bytes for the ID and 32 for the secret, from the operating system's generator.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Storage`] when the generator fails.
    pub fn generate() -> Result<BearerToken, MemoryError> {
        let mut bytes = [0u8; 6 + 32];
        getrandom::fill(&mut bytes).map_err(|e| MemoryError::Storage {
            id: None,
            storage_kind: None,
            message: format!("cannot read the operating system's random generator: {e}"),
        })?;
        let (id, secret) = bytes.split_at(6);
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
        Ok(BearerToken { id: TokenId(id), secret })
    }

    /// Parses `alp_<id>_<secret>` exactly (no spaces, no padding).
    ///
    /// # Errors
    ///
    /// [`TokenParseError`] with the reason, and the ID when that part is well formed.
    pub fn parse(text: &str) -> Result<BearerToken, TokenParseError> {
        let bytes = text.as_bytes();
        let fail = |reason| {
            let id = bytes.get(4..4 + ID_LEN).filter(|id| is_id(id) && bytes.starts_with(b"alp_"));
            TokenParseError {
                reason,
                id: id.and_then(|id| std::str::from_utf8(id).ok()).map(|id| TokenId(id.to_owned())),
            }
        };
        let Some(rest) = bytes.strip_prefix(b"alp_") else {
            return Err(fail("it does not start with `alp_`"));
        };
        if bytes.len() != TOKEN_LEN {
            return Err(fail("it is not 60 characters long"));
        }
        let (id, rest) = rest.split_at(ID_LEN);
        if !is_id(id) {
            return Err(fail("its id is not 12 lowercase hex digits"));
        }
        let Some(secret) = rest.strip_prefix(b"_") else { return Err(fail("no `_` after its id")) };
        if !is_secret(secret) {
            return Err(fail("its secret is not 43 characters of URL-safe base64"));
        }
        // Both parts are ASCII, checked above.
        let text_of = |part: &[u8]| String::from_utf8_lossy(part).into_owned();
        Ok(BearerToken { id: TokenId(text_of(id)), secret: text_of(secret) })
    }

    /// The token's public ID.
    pub fn id(&self) -> &TokenId {
        &self.id
    }

    /// The whole token as text, secret included: for `alp token create`'s output and for clients, nothing else.
    pub fn reveal(&self) -> String {
        format!("alp_{}_{}", self.id, self.secret)
    }

    /// The lowercase hex SHA-256 of the secret's 43 ASCII characters, as records keep it.
    pub fn secret_sha256(&self) -> String {
        hex(&Sha256::digest(self.secret.as_bytes()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What an `Authorization` header holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// No header, or a credential that is not `Bearer` (so it counts as none).
    Missing,
    /// A `Bearer` credential that is not a token; `id` when its ID part is well formed.
    Malformed {
        /// The token's ID, when it parses.
        id: Option<TokenId>,
    },
    /// A well-formed token (not yet checked against its record).
    Token(BearerToken),
}

impl Credential {
    /// Reads the value of an `Authorization` header: `Bearer` (any case), one or more spaces, the token, optional
    /// trailing spaces. Any other scheme counts as no credential.
    pub fn from_header(value: Option<&[u8]>) -> Credential {
        let Some(value) = value else { return Credential::Missing };
        let value = value.trim_ascii();
        let (scheme, rest) = match value.iter().position(|b| *b == b' ' || *b == b'\t') {
            Some(at) => value.split_at(at),
            None => (value, &b""[..]),
        };
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return Credential::Missing;
        }
        let token = rest.trim_ascii_start();
        match std::str::from_utf8(token)
            .map_err(|_| None)
            .and_then(|t| BearerToken::parse(t).map_err(|e| e.id))
        {
            Ok(token) => Credential::Token(token),
            Err(id) => Credential::Malformed { id },
        }
    }
}

/// A token's record: everything but the secret, whose SHA-256 it keeps. Serialized as the record file holds it:
/// `{"id","role","name","createdAt","expiresAt","revokedAt","secretSha256"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRecord {
    id: String,
    role: String,
    name: Option<String>,
    #[serde(with = "instant")]
    created_at: Timestamp,
    #[serde(with = "optional_instant")]
    expires_at: Option<Timestamp>,
    #[serde(with = "optional_instant")]
    revoked_at: Option<Timestamp>,
    secret_sha256: String,
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

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn storage(id: &str, message: &str) -> MemoryError {
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

#[cfg(all(target_os = "linux", feature = "postgres"))]
impl TokenRecord {
    /// The record a row of the tokens table holds, checked as a record file is.
    fn from_row(row: memory_postgres::TokenRow) -> Result<TokenRecord, MemoryError> {
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
    fn to_row(&self) -> memory_postgres::TokenRow {
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

fn operator_record(
    audit: &dyn AuditSink,
    operation: AuditOperation,
    id: &str,
    now: Timestamp,
) -> Result<(), MemoryError> {
    let event = AuditEvent {
        timestamp: now.as_offset_date_time(),
        actor: String::new(),
        operation,
        id: id.to_owned(),
        outcome: Outcome::Allowed,
        code: None,
        via: None,
    };
    audit.record(&event).map(|_| ()).map_err(|e| MemoryError::AuditUnavailable(e.to_string()))
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
    operator_record(audit, AuditOperation::TokenCreate, record.id(), now)?;
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
    operator_record(audit, AuditOperation::TokenRevoke, record.id(), now)?;
    if record.revoked_at.is_none() {
        record.revoked_at = Some(now);
        tokens.put_token(&record)?;
    }
    Ok(record)
}

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
