//! `alp_memory::token`: the token text and the `Authorization` header, table-driven and as a property (the one the
//! `token_header` fuzz target asserts), and the record's constant-time match.

use alp_memory::token::{BearerToken, Credential};
use proptest::prelude::*;

const GOOD: &str = "alp_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

#[test]
fn token_texts() {
    assert_eq!(BearerToken::parse(GOOD).unwrap().reveal(), GOOD);
    let dashes = format!("alp_0123456789ab_{}-", "-_".repeat(21));
    assert_eq!(BearerToken::parse(&dashes).unwrap().id().as_str(), "0123456789ab");
    for (bad, id) in [
        ("", None),
        ("alp_", None),
        ("ALP_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", None),
        ("alp_0123456789AB_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", None),
        ("alp_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Some("0123456789ab")),
        ("alp_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", Some("0123456789ab")),
        ("alp_0123456789ab-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Some("0123456789ab")),
        ("alp_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+", Some("0123456789ab")),
        ("alp_0123456789ab_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAé", Some("0123456789ab")),
    ] {
        let error = BearerToken::parse(bad).unwrap_err();
        assert_eq!(error.id().map(|id| id.as_str()), id, "{bad}");
        assert!(!error.to_string().contains("AAAA"), "no secret in the message: {error}");
    }
}

#[test]
fn authorization_headers() {
    let token = |h: &str| Credential::from_header(Some(h.as_bytes()));
    assert_eq!(Credential::from_header(None), Credential::Missing);
    for missing in ["", "Basic dXNlcjpwdw==", "Token alp_x", "Bearerx alp_0123456789ab_"] {
        assert_eq!(token(missing), Credential::Missing, "{missing}");
    }
    for ok in [format!("Bearer {GOOD}"), format!("bearer\t {GOOD} "), format!("BEARER {GOOD}")] {
        assert!(matches!(token(&ok), Credential::Token(t) if t.reveal() == GOOD), "{ok}");
    }
    for malformed in ["Bearer", "Bearer ", &format!("Bearer {GOOD} x"), &format!("Bearer {GOOD},{GOOD}")] {
        assert!(matches!(token(malformed), Credential::Malformed { .. }), "{malformed}");
    }
    assert_eq!(Credential::from_header(Some(b"Bearer \xff")), Credential::Malformed { id: None });
}

#[test]
fn generated_tokens_are_distinct_and_parse_back() {
    let a = BearerToken::generate().unwrap();
    let b = BearerToken::generate().unwrap();
    assert_ne!(a.reveal(), b.reveal());
    for token in [a, b] {
        assert_eq!(BearerToken::parse(&token.reveal()).unwrap(), token);
        assert_eq!(token.secret_sha256().len(), 64);
    }
}

proptest! {
    #[test]
    fn any_header_is_read_without_panic_and_a_token_round_trips(data in prop::collection::vec(any::<u8>(), 0..80), pick in 0..3u8) {
        let data = match pick {
            0 => data,
            1 => [b"Bearer ".as_slice(), &data].concat(),
            _ => format!("Bearer alp_0123456789ab_{}", String::from_utf8_lossy(&data)).into_bytes(),
        };
        match Credential::from_header(Some(&data)) {
            Credential::Token(token) => {
                let text = token.reveal();
                prop_assert_eq!(BearerToken::parse(&text), Ok(token.clone()));
                prop_assert!(data.trim_ascii().ends_with(text.as_bytes()));
                let shown = format!("{token:?}");
                prop_assert!(!shown.contains(&text[17..]));
            }
            Credential::Malformed { id: Some(id) } => prop_assert_eq!(id.as_str().len(), 12),
            _ => {}
        }
    }
}
