//! Bearer tokens for the HTTP server (`alp serve`): each token is bound to one role, and a request's role is the
//! role of the token it carries, never anything the request says.
//!
//! A token reads `alp_<id>_<secret>`: `id` is 12 lowercase hex digits (public: it names the token in lists, logs
//! and audit records), `secret` is 43 characters of URL-safe base64 (no padding) of 32 bytes from the operating
//! system's generator. A [`TokenRecord`] keeps the token's role, name and times and the SHA-256 of the secret's 43
//! ASCII characters — never the secret — and [`TokenRecord::matches`] compares that hash in constant time. Records
//! live in a [`TokenStore`]: on a Markdown root, `<root>/tokens/<id>.json` (0600, written atomically).
//!
//! The operator's side is [`create_token`], [`revoke_token`] and [`rotate_token`] (each token made or revoked
//! writes one audit record, actor `""`, operation `token-create` or `token-revoke`, before the token is stored or
//! changed, and fails closed; a name is unique among unrevoked tokens, and names the token as its ID does); the
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
//!
//! - `format.rs`: the token's text, its ID, the `Authorization` header;
//! - `record.rs`: the record, as its file or row holds it;
//! - `stores.rs`: where records live;
//! - `operator.rs`: making and revoking tokens;
//! - `authenticate.rs`: checking a request's token.

mod authenticate;
mod format;
mod operator;
mod record;
mod stores;

pub use authenticate::{Identity, Refusal, authenticate};
pub use format::{BearerToken, Credential, TokenId, TokenParseError};
pub use operator::{Lifetime, create_token, find_token, revoke_token, rotate_token};
pub use record::{TokenListing, TokenRecord};
pub use stores::{NamesLock, TokenStore};

/// The directory of the root that holds token records (`memory_markdown::layout`).
#[cfg(target_os = "linux")]
pub const TOKEN_DIR: &str = memory_markdown::TOKENS_DIR;

/// How long a token lives unless `--expires` says otherwise: 90 days ([`Lifetime::parse`] reads it).
pub const DEFAULT_EXPIRES: &str = "90d";

/// The length of a token's text: `alp_` + 12 + `_` + 43.
pub const TOKEN_LEN: usize = 4 + ID_LEN + 1 + SECRET_LEN;
const ID_LEN: usize = 12;
const SECRET_LEN: usize = 43;
