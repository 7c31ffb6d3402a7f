//! Every committed input of the `memory_path`, `mcp_stdio`, `mcp_era`, `http_body` and `oauth_bearer` fuzz targets (`tests/fixtures/fuzzed/<target>/`,
//! `fuzz/seeds/<target>/`) through the target's own property.

#[test]
fn memory_path_inputs_keep_their_property() {
    assert!(testkit::replay::replay("memory_path", testkit::fuzz::memory_path::check) > 0);
}

#[test]
fn mcp_stdio_inputs_keep_their_property() {
    assert!(testkit::replay::replay("mcp_stdio", testkit::fuzz::mcp_stdio::check) > 0);
}

#[test]
fn mcp_era_inputs_keep_their_property() {
    assert!(testkit::replay::replay("mcp_era", testkit::fuzz::mcp_era::check) > 0);
}

#[test]
fn http_body_inputs_keep_their_property() {
    assert!(testkit::replay::replay("http_body", testkit::fuzz::http_body::check) > 0);
}

#[test]
fn oauth_bearer_inputs_keep_their_property() {
    assert!(testkit::replay::replay("oauth_bearer", testkit::fuzz::oauth_bearer::check) > 0);
}

/// The seeds that are valid tokens are accepted, as the role their claim names: the property's accepting branch
/// is reached, so it is not vacuous.
#[test]
fn oauth_bearer_seeds_that_are_valid_tokens_are_accepted() {
    use memory_mcp::oauth::{Expected, Issuer, KeySet, jwt_bearer, peek};
    let keys = KeySet::parse(testkit::oauth::JWKS.as_bytes()).unwrap();
    assert_eq!(keys.len(), 3);
    let issuer = Issuer::parse(testkit::oauth::ISSUER).unwrap();
    let expect = Expected { resource: testkit::oauth::RESOURCE, role_claim: "alp_role" };
    for alg in ["RS256", "ES256", "EdDSA"] {
        let seed = testkit::replay::repository()
            .join("fuzz/seeds/oauth_bearer")
            .join(format!("valid-{}", alg.to_lowercase()));
        let header = std::fs::read(&seed).unwrap();
        let jwt = jwt_bearer(Some(&header)).unwrap();
        let peeked = peek(jwt).unwrap();
        let accepted = keys.verify(jwt, &peeked, &issuer, &expect, testkit::oauth::NOW).unwrap();
        assert_eq!((accepted.sub.as_str(), accepted.role.as_str()), ("agent-1", "worker"), "{alg}");
        // The same claims signed here verify too (the signer of the benchmark).
        let signed = testkit::oauth::sign(alg, &testkit::oauth::claims());
        assert!(keys.verify(&signed, &peek(&signed).unwrap(), &issuer, &expect, testkit::oauth::NOW).is_ok());
    }
}

mod http_body {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A JSON value of any kind, small.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z/2.0]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(("[a-z]{0,3}", inner), 0..4)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    /// An object written by hand from `members` (key, JSON text), so repeated keys stay repeated.
    fn object(members: &[(String, String)]) -> String {
        let parts: Vec<String> =
            members.iter().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect();
        format!("{{{}}}", parts.join(","))
    }

    /// A protocol version of any era, or not a string.
    fn version() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(json!("2026-07-28").to_string()),
            Just(json!("2025-11-25").to_string()),
            Just(json!("1900-01-01").to_string()),
            value().prop_map(|v| v.to_string()),
        ]
    }

    /// `params` whose `_meta` may name a protocol version, with `_meta` and the key maybe repeated.
    fn params_with_meta() -> impl Strategy<Value = String> {
        let meta_member = prop_oneof![
            3 => version().prop_map(|v| ("io.modelcontextprotocol/protocolVersion".to_owned(), v)),
            1 => value().prop_map(|v| ("io.modelcontextprotocol/clientCapabilities".to_owned(), v.to_string())),
            1 => ("[a-z]{1,3}", value()).prop_map(|(k, v)| (k, v.to_string())),
        ];
        let meta = prop_oneof![
            4 => prop::collection::vec(meta_member, 0..3).prop_map(|members| object(&members)),
            1 => value().prop_map(|v| v.to_string()),
        ];
        let params_member = prop_oneof![
            3 => meta.prop_map(|m| ("_meta".to_owned(), m)),
            1 => ("name|arguments|[a-z]{1,3}", value()).prop_map(|(k, v)| (k, v.to_string())),
        ];
        prop::collection::vec(params_member, 0..3).prop_map(|members| object(&members))
    }

    /// A message-like object: members drawn from JSON-RPC's names and others, each maybe of the right kind.
    fn message() -> impl Strategy<Value = String> {
        let member = prop_oneof![
            Just(("jsonrpc".to_owned(), json!("2.0").to_string())),
            value().prop_map(|v| ("jsonrpc".to_owned(), v.to_string())),
            (-3i64..3).prop_map(|id| ("id".to_owned(), json!(id).to_string())),
            value().prop_map(|v| ("id".to_owned(), v.to_string())),
            "[a-z/]{1,10}".prop_map(|m| ("method".to_owned(), json!(m).to_string())),
            value().prop_map(|v| ("method".to_owned(), v.to_string())),
            value().prop_map(|v| ("params".to_owned(), v.to_string())),
            params_with_meta().prop_map(|p| ("params".to_owned(), p)),
            value().prop_map(|v| ("result".to_owned(), v.to_string())),
            value().prop_map(|v| ("error".to_owned(), v.to_string())),
            ("[a-z]{1,4}", value()).prop_map(|(k, v)| (k, v.to_string())),
        ];
        prop::collection::vec(member, 0..6).prop_map(|members| object(&members))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

        /// The front's answer agrees with the model for messages of every shape, repeated keys included.
        #[test]
        fn the_front_agrees_with_the_model(body in message()) {
            testkit::fuzz::http_body::check(body.as_bytes());
        }

        /// Any bytes: a valid answer, as the model decides.
        #[test]
        fn any_bytes_get_a_valid_answer(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            testkit::fuzz::http_body::check(&bytes);
        }
    }

    proptest! {
        // Each case serves eight requests through two fresh servers.
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// A hostile `_meta` of any shape (the key, `_meta` and the version of any kind, repeated or not) never
        /// changes who acts, and its era is the documented rule's.
        #[test]
        fn a_hostile_meta_never_changes_the_role(params in params_with_meta()) {
            // The generated params' first `_meta` as written, or the params themselves when they hold none.
            let meta = first_meta(&params).unwrap_or(params);
            testkit::fuzz::mcp_era::check(meta.as_bytes());
        }
    }

    /// The text of the first `_meta` member of `params` as written (repeated keys kept), if any.
    fn first_meta(params: &str) -> Option<String> {
        let start = params.find("\"_meta\":")? + "\"_meta\":".len();
        let mut de = serde_json::Deserializer::from_str(&params[start..]).into_iter::<Value>();
        de.next()?.ok()?;
        Some(params[start..start + de.byte_offset()].to_owned())
    }
}
