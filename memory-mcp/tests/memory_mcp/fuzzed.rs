//! Every committed input of the `memory_path` and `mcp_stdio` fuzz targets (`tests/fixtures/fuzzed/<target>/`,
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
fn http_body_inputs_keep_their_property() {
    assert!(testkit::replay::replay("http_body", testkit::fuzz::http_body::check) > 0);
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

    /// A message-like object: members drawn from JSON-RPC's names and others, each maybe of the right kind.
    fn message() -> impl Strategy<Value = String> {
        let member = prop_oneof![
            Just(("jsonrpc".to_owned(), json!("2.0"))),
            value().prop_map(|v| ("jsonrpc".to_owned(), v)),
            (-3i64..3).prop_map(|id| ("id".to_owned(), json!(id))),
            value().prop_map(|v| ("id".to_owned(), v)),
            "[a-z/]{1,10}".prop_map(|m| ("method".to_owned(), json!(m))),
            value().prop_map(|v| ("method".to_owned(), v)),
            value().prop_map(|v| ("params".to_owned(), v)),
            value().prop_map(|v| ("result".to_owned(), v)),
            value().prop_map(|v| ("error".to_owned(), v)),
            ("[a-z]{1,4}", value()),
        ];
        prop::collection::vec(member, 0..6).prop_map(|members| {
            // Written by hand, so repeated keys stay repeated.
            let parts: Vec<String> =
                members.iter().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect();
            format!("{{{}}}", parts.join(","))
        })
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
}
