//! The text of a token (`alp_<id>_<secret>`), its public ID, and what an `Authorization` header holds.

use std::fmt;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::*;
use crate::MemoryError;

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
    pub(super) id: TokenId,
    pub(super) secret: String,
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

pub(super) fn hex(bytes: &[u8]) -> String {
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
    /// The credential of an `Authorization` header value when its scheme is `Bearer` (any case): what follows the
    /// scheme and one or more spaces or tabs, without trailing spaces (possibly empty). `None` for no header or
    /// another scheme. The one reader of the header, for alp's tokens and for `alp serve`'s OAuth tokens alike.
    pub fn bearer_value(value: Option<&[u8]>) -> Option<&[u8]> {
        let value = value?.trim_ascii();
        let (scheme, rest) = match value.iter().position(|b| *b == b' ' || *b == b'\t') {
            Some(at) => value.split_at(at),
            None => (value, &b""[..]),
        };
        scheme.eq_ignore_ascii_case(b"bearer").then(|| rest.trim_ascii_start())
    }

    /// Reads the value of an `Authorization` header: `Bearer` (any case), one or more spaces, the token, optional
    /// trailing spaces. Any other scheme counts as no credential.
    pub fn from_header(value: Option<&[u8]>) -> Credential {
        let Some(token) = Credential::bearer_value(value) else { return Credential::Missing };
        match std::str::from_utf8(token)
            .map_err(|_| None)
            .and_then(|t| BearerToken::parse(t).map_err(|e| e.id))
        {
            Ok(token) => Credential::Token(token),
            Err(id) => Credential::Malformed { id },
        }
    }
}
