//! The JWT check's memory of accepted tokens (`memory_mcp::oauth::KeySet`): a token checked again is answered
//! exactly as a set that never saw it answers, at any time; what a set remembers is bounded; a refused token is
//! never remembered.

use memory_mcp::oauth::{Expected, Issuer, JwtRefusal, KeySet, LEEWAY_SECS, MAX_REMEMBERED, peek};
use proptest::prelude::*;
use serde_json::{Value, json};
use testkit::oauth::{ISSUER, JWKS, NOW, RESOURCE, claims, sign};

fn keys() -> KeySet {
    KeySet::parse(JWKS.as_bytes()).unwrap()
}

fn check(
    keys: &KeySet,
    token: &str,
    expect: &Expected<'_>,
    now: u64,
) -> Result<(String, String), JwtRefusal> {
    let issuer = Issuer::parse(ISSUER).unwrap();
    let peeked = peek(token)?;
    keys.verify(token, &peeked, &issuer, expect, now).map(|accepted| (accepted.sub, accepted.role))
}

const EXPECT: Expected<'static> = Expected { resource: RESOURCE, role_claim: "alp_role" };

/// Claims whose times, audience, subject and role vary around what is accepted at [`NOW`].
fn varied_claims() -> impl Strategy<Value = Value> {
    let time = || prop_oneof![Just(None), (-200i64..200).prop_map(Some)];
    (
        -200i64..900,
        time(),
        time(),
        prop_oneof![Just(json!(RESOURCE)), Just(json!("http://elsewhere/mcp")), Just(json!([RESOURCE, "x"]))],
        prop_oneof![Just(json!("agent-1")), Just(json!("")), Just(json!(7))],
        prop_oneof![Just(json!("worker")), Just(json!(["worker"]))],
    )
        .prop_map(|(exp, nbf, iat, aud, sub, role)| {
            let mut claims = claims();
            claims["exp"] = json!(NOW as i64 + exp);
            for (name, at) in [("nbf", nbf), ("iat", iat)] {
                match at {
                    Some(at) => claims[name] = json!(NOW as i64 + at),
                    None => drop(claims.as_object_mut().unwrap().remove(name)),
                }
            }
            claims["aud"] = aud;
            claims["sub"] = sub;
            claims["alp_role"] = role;
            claims
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever a set answered before, and at whatever time, it answers a token as a set that never saw it does.
    #[test]
    fn a_remembered_token_is_answered_as_a_fresh_set_answers_it(
        claims in varied_claims(),
        alg in prop_oneof![Just("RS256"), Just("ES256"), Just("EdDSA")],
        first in 0u64..1000,
        later in 0u64..2000,
    ) {
        let token = sign(alg, &claims);
        let seen = keys();
        let first_answer = check(&seen, &token, &EXPECT, NOW - 200 + first);
        prop_assert_eq!(&first_answer, &check(&keys(), &token, &EXPECT, NOW - 200 + first));
        prop_assert_eq!(seen.remembered_len(), usize::from(first_answer.is_ok()));
        let at = NOW - 200 + later;
        prop_assert_eq!(check(&seen, &token, &EXPECT, at), check(&keys(), &token, &EXPECT, at));
    }
}

#[test]
fn a_remembered_token_expires_at_its_exp_and_the_leeway() {
    let keys = keys();
    let token = sign("ES256", &claims());
    let exp = NOW + 600;
    assert_eq!(check(&keys, &token, &EXPECT, NOW), Ok(("agent-1".to_owned(), "worker".to_owned())));
    assert_eq!(keys.remembered_len(), 1);
    assert!(check(&keys, &token, &EXPECT, exp + LEEWAY_SECS - 1).is_ok());
    assert_eq!(check(&keys, &token, &EXPECT, exp + LEEWAY_SECS), Err(JwtRefusal::Expired));
}

#[test]
fn a_token_remembered_for_one_resource_or_claim_is_checked_again_for_another() {
    let keys = keys();
    let token = sign("EdDSA", &claims());
    assert!(check(&keys, &token, &EXPECT, NOW).is_ok());
    let other = Expected { resource: "http://127.0.0.1:7708/mcp", role_claim: "alp_role" };
    assert_eq!(check(&keys, &token, &other, NOW), Err(JwtRefusal::Audience));
    let claim = Expected { resource: RESOURCE, role_claim: "role" };
    assert_eq!(check(&keys, &token, &claim, NOW), Err(JwtRefusal::RoleClaim));
    assert_eq!(keys.remembered_len(), 1);
}

#[test]
fn a_token_whose_signature_fails_is_never_remembered_nor_is_a_copy_with_another_signature() {
    let keys = keys();
    let token = sign("RS256", &claims());
    // The same header and claims under another key's signature.
    let (signed, _) = token.rsplit_once('.').unwrap();
    let other = sign("RS256", &json!({ "other": true }));
    let forged = format!("{signed}.{}", other.rsplit_once('.').unwrap().1);
    assert_eq!(check(&keys, &forged, &EXPECT, NOW), Err(JwtRefusal::Signature));
    assert_eq!(keys.remembered_len(), 0);
    assert!(check(&keys, &token, &EXPECT, NOW).is_ok());
    assert_eq!(check(&keys, &forged, &EXPECT, NOW), Err(JwtRefusal::Signature));
    assert_eq!(keys.remembered_len(), 1);
}

#[test]
fn what_a_set_remembers_is_bounded() {
    let keys = keys();
    for n in 0..=MAX_REMEMBERED {
        let mut claims = claims();
        claims["sub"] = json!(format!("agent-{n}"));
        // Tokens of the first half expire before the last one is checked, so a full memory forgets them first.
        claims["exp"] = json!(if n < MAX_REMEMBERED / 2 { NOW + 1 } else { NOW + 600 });
        let token = sign("EdDSA", &claims);
        let now = if n == MAX_REMEMBERED { NOW + 100 } else { NOW };
        assert!(check(&keys, &token, &EXPECT, now).is_ok(), "token {n}");
        assert!(keys.remembered_len() <= MAX_REMEMBERED);
    }
    assert_eq!(keys.remembered_len(), MAX_REMEMBERED - MAX_REMEMBERED / 2 + 1);
}
