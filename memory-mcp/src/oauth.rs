//! OAuth 2.1 access tokens (JWTs) as `alp serve` accepts them, checked against a trusted issuer's keys. Pure: no
//! clock (the time comes in as a value), no file, no network; `alp serve` fetches and caches the keys
//! (`memory_mcp::http`) and calls this for every token.
//!
//! A token is accepted only when all of these hold, checked in this order, each failure a [`JwtRefusal`]:
//! 1. three base64url parts, at most [`MAX_TOKEN_BYTES`], a header without `crit` ([`peek`]);
//! 2. its `alg` is `RS256`, `ES256` or `EdDSA` — never `none`, never an HMAC — and it names a `kid`;
//! 3. its `iss` is a string naming a trusted issuer (the caller picks that issuer's [`KeySet`]: a key of one issuer
//!    never verifies another's token);
//! 4. the key with that `kid` in that issuer's set exists, is of the token's `alg`, and the signature verifies
//!    (jsonwebtoken on ring; no signature code here);
//! 5. `iss` equals the issuer, `aud` (a string or an array) holds the resource URI (RFC 8707);
//! 6. `exp` is a number in the future, `nbf` and `iat`, when present, numbers not in the future, each with
//!    [`LEEWAY_SECS`] of leeway;
//! 7. `sub` is a non-empty string of at most 255 characters without control characters;
//! 8. the role claim is a string (whether a role of that name has a definition is the caller's check).
//!
//! A client sends the same access token with every request until it expires, so a [`KeySet`] remembers the tokens
//! it accepted (at most [`MAX_REMEMBERED`], by the SHA-256 digest of the token with the issuer and the
//! [`Expected`] values it was checked for): for a token seen again, its key is still looked up (step 4), but its
//! signature is not verified again and steps 5, 7 and 8 are not checked again, since none of them can change for
//! the same bytes and the same keys; only step 6, which depends on the time, is checked again. A refused token is
//! never remembered, and keys fetched again make a new set, which remembers nothing.
//!
//! ```
//! use memory_mcp::oauth::{JwtRefusal, KeySet, peek};
//!
//! let keys = KeySet::parse(br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1",
//!     "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#).unwrap();
//! assert!(keys.contains("k1"));
//! // `alg: none` is refused before any key is looked at.
//! let none = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.";
//! assert_eq!(peek(none).unwrap_err(), JwtRefusal::Algorithm);
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The leeway of `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECS: u64 = 60;
/// The longest token read; a longer one is [`JwtRefusal::Malformed`] without being decoded.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The longest `sub` accepted (it becomes part of every audit record's `via`).
pub const MAX_SUBJECT_CHARS: usize = 255;

/// The most accepted tokens a [`KeySet`] remembers. Past it, the expired ones are forgotten, and all of them if
/// that leaves too many: a client then has its token verified once more.
pub const MAX_REMEMBERED: usize = 4096;

/// The default name of the claim that names a token's role.
pub const DEFAULT_ROLE_CLAIM: &str = "alp_role";

/// Why a JWT was refused. Every refusal is a `401 invalid_token`; the reason is for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JwtRefusal {
    /// Not three base64url parts of JSON objects, too long, or a header with `crit`.
    Malformed,
    /// An `alg` other than RS256, ES256 or EdDSA, or one that is not the alg of the key its `kid` names.
    Algorithm,
    /// `iss` missing, not a string, or not a trusted issuer.
    Issuer,
    /// No `kid`, or no key with that `kid` in the issuer's set.
    UnknownKey,
    /// The signature does not verify with the key.
    Signature,
    /// `aud` does not hold the resource URI.
    Audience,
    /// `exp` missing, not a number, or past (beyond the leeway).
    Expired,
    /// `nbf` not a number, or ahead (beyond the leeway).
    NotYetValid,
    /// `iat` not a number, or ahead (beyond the leeway).
    IssuedInFuture,
    /// `sub` missing, not a string, empty, too long or holding control characters.
    Subject,
    /// The role claim missing or not a string.
    RoleClaim,
    /// The role claim names a role without a (valid) definition.
    Role,
    /// The issuer's keys could not be had (its metadata or JWKS could not be fetched).
    KeysUnavailable,
}

impl JwtRefusal {
    /// A stable name, as `/metrics` counts it: `jwt_malformed`, `jwt_algorithm`, `jwt_issuer`, `jwt_unknown_key`,
    /// `jwt_signature`, `jwt_audience`, `jwt_expired`, `jwt_not_yet_valid`, `jwt_issued_in_future`,
    /// `jwt_subject`, `jwt_role_claim`, `jwt_role`, `jwt_keys_unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            JwtRefusal::Malformed => "jwt_malformed",
            JwtRefusal::Algorithm => "jwt_algorithm",
            JwtRefusal::Issuer => "jwt_issuer",
            JwtRefusal::UnknownKey => "jwt_unknown_key",
            JwtRefusal::Signature => "jwt_signature",
            JwtRefusal::Audience => "jwt_audience",
            JwtRefusal::Expired => "jwt_expired",
            JwtRefusal::NotYetValid => "jwt_not_yet_valid",
            JwtRefusal::IssuedInFuture => "jwt_issued_in_future",
            JwtRefusal::Subject => "jwt_subject",
            JwtRefusal::RoleClaim => "jwt_role_claim",
            JwtRefusal::Role => "jwt_role",
            JwtRefusal::KeysUnavailable => "jwt_keys_unavailable",
        }
    }
}

/// A trusted authorization server: its issuer identifier (an `https` URL without query or fragment, RFC 8414)
/// and its authority (host, with `:port` when the URL names one), which audit records name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer {
    url: String,
    authority: String,
}

/// Why an issuer URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--oauth-issuer `{url}` is not an https URL without user, query or fragment")]
pub struct IssuerError {
    url: String,
}

impl Issuer {
    /// Reads an issuer identifier: `https://HOST[:PORT][/PATH]`, no user, query or fragment.
    ///
    /// # Errors
    ///
    /// [`IssuerError`] for anything else.
    pub fn parse(url: &str) -> Result<Issuer, IssuerError> {
        let refuse = || IssuerError { url: url.to_owned() };
        let rest = url
            .get(..8)
            .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
            .and_then(|_| url.get(8..))
            .ok_or_else(refuse)?;
        if url.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(refuse());
        }
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.is_empty() || authority.contains('@') || authority.starts_with(':') {
            return Err(refuse());
        }
        Ok(Issuer { url: url.to_owned(), authority: authority.to_ascii_lowercase() })
    }

    /// The issuer identifier, as tokens' `iss` must name it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The host, with `:port` when the URL names one.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The `via` of the audit records of a call made with a token of this issuer for `sub`:
    /// `oauth:<authority>:<sub>`.
    pub fn via(&self, sub: &str) -> String {
        format!("oauth:{}:{sub}", self.authority)
    }
}

/// The signature algorithms accepted.
const ALGORITHMS: [(&str, Algorithm); 3] =
    [("RS256", Algorithm::RS256), ("ES256", Algorithm::ES256), ("EdDSA", Algorithm::EdDSA)];

/// One verification key: the one algorithm it verifies.
struct Key {
    alg: Algorithm,
    key: DecodingKey,
}

/// An issuer's verification keys by `kid` (its JWKS, RFC 7517), keeping only keys this server can use: RSA
/// (RS256), EC P-256 (ES256) and OKP Ed25519 (EdDSA) public keys with a `kid`, not marked for encryption, whose
/// `alg`, when given, is the one their type verifies. Symmetric (`oct`) keys are never kept. The first key of a
/// `kid` wins.
#[derive(Default)]
pub struct KeySet {
    keys: HashMap<String, Key>,
    /// Tokens this set accepted, by [`remembered_as`].
    accepted: Mutex<HashMap<[u8; 32], Remembered>>,
}

/// A token a [`KeySet`] accepted: what it said, and its times, checked again at every use.
#[derive(Debug, Clone)]
struct Remembered {
    accepted: Accepted,
    times: Times,
}

/// A token's `exp`, `nbf` and `iat` (step 6 of the module docs).
#[derive(Debug, Clone, Copy)]
struct Times {
    exp: Option<f64>,
    nbf: Option<Option<f64>>,
    iat: Option<Option<f64>>,
}

impl Times {
    /// The claims as the token holds them: a claim absent is `None`, a claim that is not a number `Some(None)`.
    fn of(claims: &Map<String, Value>) -> Times {
        Times {
            exp: claims.get("exp").and_then(Value::as_f64),
            nbf: claims.get("nbf").map(Value::as_f64),
            iat: claims.get("iat").map(Value::as_f64),
        }
    }

    /// Step 6 at `now` (seconds since the Unix epoch).
    fn check(&self, now: u64) -> Result<(), JwtRefusal> {
        let leeway = LEEWAY_SECS as f64;
        let now = now as f64;
        match self.exp {
            Some(exp) if now < exp + leeway => {}
            _ => return Err(JwtRefusal::Expired),
        }
        if self.nbf.is_some_and(|nbf| !nbf.is_some_and(|nbf| nbf <= now + leeway)) {
            return Err(JwtRefusal::NotYetValid);
        }
        if self.iat.is_some_and(|iat| !iat.is_some_and(|iat| iat <= now + leeway)) {
            return Err(JwtRefusal::IssuedInFuture);
        }
        Ok(())
    }
}

/// What a token is remembered by: the SHA-256 digest of the issuer, the expected values and the token, each
/// followed by a NUL byte. The first three come from the server's command line, which cannot hold one, so a
/// digest names one token checked for one issuer and one resource and role claim.
fn remembered_as(token: &str, issuer: &Issuer, expect: &Expected<'_>) -> [u8; 32] {
    let mut digest = Sha256::new();
    for part in [issuer.url(), expect.resource, expect.role_claim, token] {
        digest.update(part.as_bytes());
        digest.update([0]);
    }
    digest.finalize().into()
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut kids: Vec<&String> = self.keys.keys().collect();
        kids.sort();
        f.debug_struct("KeySet").field("kids", &kids).finish()
    }
}

/// Why a JWKS document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JWKS document (a JSON object with a `keys` array): {reason}")]
pub struct JwksError {
    reason: String,
}

impl KeySet {
    /// Reads a JWKS document. Keys this server cannot use are left out (see [`KeySet`]).
    ///
    /// # Errors
    ///
    /// [`JwksError`] when the document is not a JSON object with a `keys` array.
    pub fn parse(json: &[u8]) -> Result<KeySet, JwksError> {
        let document: Value =
            serde_json::from_slice(json).map_err(|e| JwksError { reason: e.to_string() })?;
        let Some(keys) = document.get("keys").and_then(Value::as_array) else {
            return Err(JwksError { reason: "no `keys` array".to_owned() });
        };
        let mut set = KeySet::default();
        for key in keys {
            // A key of a type jsonwebtoken does not know is left out, not a failure of the whole set.
            let Ok(jwk) = serde_json::from_value::<Jwk>(key.clone()) else { continue };
            let Some(kid) = jwk.common.key_id.clone() else { continue };
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))) {
                continue;
            }
            let alg = match &jwk.algorithm {
                AlgorithmParameters::RSA(_) => Algorithm::RS256,
                AlgorithmParameters::EllipticCurve(params) if params.curve == EllipticCurve::P256 => {
                    Algorithm::ES256
                }
                AlgorithmParameters::OctetKeyPair(params) if params.curve == EllipticCurve::Ed25519 => {
                    Algorithm::EdDSA
                }
                _ => continue,
            };
            let declared = key.get("alg").and_then(Value::as_str);
            if declared
                .is_some_and(|declared| ALGORITHMS.iter().all(|(name, a)| *name != declared || *a != alg))
            {
                continue;
            }
            let Ok(decoding) = DecodingKey::from_jwk(&jwk) else { continue };
            set.keys.entry(kid).or_insert(Key { alg, key: decoding });
        }
        Ok(set)
    }

    /// Whether a key with `kid` is in the set.
    pub fn contains(&self, kid: &str) -> bool {
        self.keys.contains_key(kid)
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks `token` (already [`peek`]ed) against this set, as a token of `issuer` for `resource`, at `now`
    /// (seconds since the Unix epoch), steps 4 to 8 of the module docs; a token this set accepted before, for the
    /// same issuer and expected values, only step 6 (see the module docs).
    ///
    /// # Errors
    ///
    /// The [`JwtRefusal`] of the first check that fails.
    pub fn verify(
        &self,
        token: &str,
        peeked: &Peeked,
        issuer: &Issuer,
        expect: &Expected<'_>,
        now: u64,
    ) -> Result<Accepted, JwtRefusal> {
        let key = self.keys.get(&peeked.kid).ok_or(JwtRefusal::UnknownKey)?;
        if key.alg != peeked.alg {
            return Err(JwtRefusal::Algorithm);
        }
        let digest = remembered_as(token, issuer, expect);
        let seen = self.remembered().get(&digest).cloned();
        if let Some(seen) = seen {
            seen.times.check(now)?;
            return Ok(seen.accepted);
        }
        let (accepted, times) = Self::verify_signed(key, token, issuer, expect, now)?;
        let mut remembered = self.remembered();
        if remembered.len() >= MAX_REMEMBERED {
            remembered.retain(|_, seen| seen.times.check(now).is_ok());
            if remembered.len() >= MAX_REMEMBERED {
                remembered.clear();
            }
        }
        remembered.insert(digest, Remembered { accepted: accepted.clone(), times });
        Ok(accepted)
    }

    /// How many accepted tokens the set remembers.
    pub fn remembered_len(&self) -> usize {
        self.remembered().len()
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Remembered>> {
        // Every change is one insert, retain or clear: a panic cannot leave the map half-changed.
        self.accepted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Steps 4 to 8 with `key`: what the token says, and its times.
    fn verify_signed(
        key: &Key,
        token: &str,
        issuer: &Issuer,
        expect: &Expected<'_>,
        now: u64,
    ) -> Result<(Accepted, Times), JwtRefusal> {
        // jsonwebtoken checks the signature (and that the key's family is the alg's); the claims are checked here,
        // against `now` given as a value.
        let mut validation = Validation::new(key.alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let claims = match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
            Ok(data) => data.claims,
            Err(error) => {
                return Err(match error.kind() {
                    ErrorKind::InvalidSignature => JwtRefusal::Signature,
                    ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => JwtRefusal::Algorithm,
                    _ => JwtRefusal::Malformed,
                });
            }
        };
        if claims.get("iss").and_then(Value::as_str) != Some(issuer.url()) {
            return Err(JwtRefusal::Issuer);
        }
        let audience_holds = match claims.get("aud") {
            Some(Value::String(aud)) => aud == expect.resource,
            Some(Value::Array(auds)) => auds.iter().any(|aud| aud.as_str() == Some(expect.resource)),
            _ => false,
        };
        if !audience_holds {
            return Err(JwtRefusal::Audience);
        }
        let times = Times::of(&claims);
        times.check(now)?;
        let sub = match claims.get("sub").and_then(Value::as_str) {
            Some(sub)
                if !sub.is_empty()
                    && sub.chars().count() <= MAX_SUBJECT_CHARS
                    && !sub.chars().any(char::is_control) =>
            {
                sub.to_owned()
            }
            _ => return Err(JwtRefusal::Subject),
        };
        let role = match claims.get(expect.role_claim) {
            Some(Value::String(role)) => role.clone(),
            _ => return Err(JwtRefusal::RoleClaim),
        };
        Ok((Accepted { sub, role }, times))
    }
}

/// What a token must name besides its issuer: the resource URI its `aud` must hold, and the claim that names its
/// role.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// This server's canonical URI (`--resource`).
    pub resource: &'a str,
    /// The claim naming the role (`--oauth-role-claim`, [`DEFAULT_ROLE_CLAIM`] by default).
    pub role_claim: &'a str,
}

/// What [`peek`] read of a token before its signature is checked: enough to choose the issuer and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peeked {
    alg: Algorithm,
    kid: String,
    iss: String,
}

impl Peeked {
    /// The `iss` claim (not yet verified).
    pub fn issuer(&self) -> &str {
        &self.iss
    }

    /// The `kid` of the header.
    pub fn kid(&self) -> &str {
        &self.kid
    }
}

/// A token that passed every check: its subject and the role its role claim names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `sub`.
    pub sub: String,
    /// The role claim's value (the caller checks that a role of that name has a definition).
    pub role: String,
}

/// Reads a token's header and its `iss` without checking anything else (steps 1 to 3 of the module docs, but for
/// trusting the issuer, which is the caller's: it holds the list).
///
/// # Errors
///
/// [`JwtRefusal::Malformed`], [`JwtRefusal::Algorithm`], [`JwtRefusal::UnknownKey`] (no `kid`) or
/// [`JwtRefusal::Issuer`] (no `iss` string).
pub fn peek(token: &str) -> Result<Peeked, JwtRefusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(JwtRefusal::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtRefusal::Malformed);
    };
    let header = object(header)?;
    if header.contains_key("crit") {
        return Err(JwtRefusal::Malformed);
    }
    let alg = header.get("alg").and_then(Value::as_str).ok_or(JwtRefusal::Algorithm)?;
    let (_, alg) = ALGORITHMS.iter().find(|(name, _)| *name == alg).ok_or(JwtRefusal::Algorithm)?;
    let kid = header.get("kid").and_then(Value::as_str).ok_or(JwtRefusal::UnknownKey)?.to_owned();
    let iss = object(payload)?.get("iss").and_then(Value::as_str).ok_or(JwtRefusal::Issuer)?.to_owned();
    Ok(Peeked { alg: *alg, kid, iss })
}

/// A base64url part holding a JSON object.
fn object(part: &str) -> Result<Map<String, Value>, JwtRefusal> {
    let bytes = URL_SAFE_NO_PAD.decode(part).map_err(|_| JwtRefusal::Malformed)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(JwtRefusal::Malformed),
    }
}

/// The value of an `Authorization` header when it is a bearer credential that is not one of alp's own tokens
/// (which start `alp_`): the JWT to check. `None` for anything else.
pub fn jwt_bearer(header: Option<&[u8]>) -> Option<&str> {
    let value = alp_memory::token::Credential::bearer_value(header)?;
    let text = std::str::from_utf8(value).ok()?;
    (!text.starts_with("alp_")).then_some(text)
}
