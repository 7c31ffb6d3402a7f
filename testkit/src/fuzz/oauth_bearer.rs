//! `oauth_bearer`: any bytes as the `Authorization` value of a request to `alp serve` with OAuth on, checked as
//! the front checks it (`memory_mcp::oauth`: [`jwt_bearer`], [`peek`], [`KeySet::verify`]) against the test
//! issuer's keys ([`crate::oauth`]) at [`crate::oauth::NOW`]. Nothing panics; the answer is a refusal (a 401) or a
//! role, and a role is given only to a token whose claims, read independently here, say what the module's rules
//! require: `iss` the issuer, `aud` holding the resource, `exp` ahead and `nbf`/`iat` not (60 s leeway), a `sub`
//! string and the role claim naming the role returned. A token checked a second time is answered as the first time
//! (the set remembers the tokens it accepted). A value starting `alp_` is never read as a JWT.

use base64::Engine as _;
use memory_mcp::oauth::{Expected, Issuer, KeySet, jwt_bearer, peek};
use serde_json::Value;

use crate::oauth::{ISSUER, JWKS, NOW, RESOURCE};

/// The property.
pub fn check(data: &[u8]) {
    let keys = KeySet::parse(JWKS.as_bytes()).unwrap();
    let issuer = Issuer::parse(ISSUER).unwrap();
    let Some(jwt) = jwt_bearer(Some(data)) else { return };
    assert!(!jwt.starts_with("alp_"), "alp's own tokens are never JWTs");
    let Ok(peeked) = peek(jwt) else { return };
    if peeked.issuer() != ISSUER {
        return;
    }
    let expect = Expected { resource: RESOURCE, role_claim: "alp_role" };
    let first = keys.verify(jwt, &peeked, &issuer, &expect, NOW);
    // Checked again (an accepted token from the set's memory), the answer is the same.
    assert_eq!(keys.verify(jwt, &peeked, &issuer, &expect, NOW), first);
    let Ok(accepted) = first else { return };
    // Accepted: the claims must say so, read here without the crate's reader.
    let payload = jwt.split('.').nth(1).unwrap();
    let claims: Value =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap())
            .unwrap();
    assert_eq!(claims["iss"], ISSUER);
    let aud_ok = claims["aud"] == RESOURCE
        || claims["aud"].as_array().is_some_and(|auds| auds.iter().any(|aud| aud == RESOURCE));
    assert!(aud_ok, "{claims}");
    let now = NOW as f64;
    assert!(claims["exp"].as_f64().unwrap() + 60.0 > now, "{claims}");
    for key in ["nbf", "iat"] {
        if let Some(at) = claims.get(key) {
            assert!(at.as_f64().unwrap() <= now + 60.0, "{claims}");
        }
    }
    assert_eq!(claims["sub"].as_str(), Some(accepted.sub.as_str()));
    assert_eq!(claims["alp_role"].as_str(), Some(accepted.role.as_str()));
    assert!(!accepted.sub.is_empty() && !accepted.sub.chars().any(char::is_control));
    let header = jwt.split('.').next().unwrap();
    let header: Value =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).unwrap())
            .unwrap();
    assert!(matches!(header["alg"].as_str(), Some("RS256" | "ES256" | "EdDSA")), "{header}");
}
