//! Test keys and tokens for the OAuth front of `alp serve` (`memory_mcp::oauth`): an RSA-2048, an EC P-256 and an
//! Ed25519 key made once for the tests (private keys committed on purpose: they sign nothing but test tokens), their
//! public JWKS ([`JWKS`], kids `rsa-1`, `ec-1`, `ed-1`), and [`sign`], which makes a token with any header alg and
//! claims. Used by the `oauth_bearer` fuzz property and memory-mcp's JWT benchmark.
#![allow(clippy::expect_used, reason = "test keys that are known to parse")]

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The public keys, as an issuer's JWKS document.
pub const JWKS: &str = include_str!("jwks.json");
/// The issuer the test tokens name.
pub const ISSUER: &str = "https://idp.test";
/// The resource (audience) the test tokens name.
pub const RESOURCE: &str = "http://127.0.0.1:7707/mcp";
/// The time the test tokens are checked at (2027-01-15), seconds since the Unix epoch.
pub const NOW: u64 = 1_800_000_000;

const RS256_DER: &[u8] = include_bytes!("rs256.der");
const ES256_DER: &[u8] = include_bytes!("es256.der");
const EDDSA_DER: &[u8] = include_bytes!("eddsa.der");

/// Claims valid at [`NOW`] for [`ISSUER`] and [`RESOURCE`]: sub `agent-1`, role `worker`.
pub fn claims() -> Value {
    json!({ "iss": ISSUER, "aud": RESOURCE, "sub": "agent-1", "iat": NOW - 10, "exp": NOW + 600,
            "alp_role": "worker" })
}

/// `claims` signed with the test key of `alg` (`RS256`, `ES256` or `EdDSA`), its kid in the header.
///
/// # Panics
///
/// For any other alg.
pub fn sign(alg: &str, claims: &Value) -> String {
    let (algorithm, kid, key) = match alg {
        "RS256" => (Algorithm::RS256, "rsa-1", EncodingKey::from_rsa_der(RS256_DER)),
        "ES256" => (Algorithm::ES256, "ec-1", EncodingKey::from_ec_der(ES256_DER)),
        "EdDSA" => (Algorithm::EdDSA, "ed-1", EncodingKey::from_ed_der(EDDSA_DER)),
        other => panic!("no test key for {other}"),
    };
    let mut header = Header::new(algorithm);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).expect("the test keys sign")
}
