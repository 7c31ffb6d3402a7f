//! `http_body`: what `alp serve` answers to a POSTed body once its token is accepted and before rmcp reads it
//! (`memory_mcp::testkit::http_answer`, the function the HTTP front calls), against a reference model written here
//! from the rules of the front's module docs.
//!
//! Input: any bytes, as the body of a `POST /mcp`.
//!
//! Properties:
//! - nothing panics;
//! - the answer is one of: handed on to rmcp with a method; `202` with an empty body; `400` whose body is a JSON
//!   object with exactly the members `jsonrpc` (`"2.0"`), `id` and `error` (`code` -32700, -32600 or -32602,
//!   `message` a string), the id null or a valid request id the body carried at its top level;
//! - it agrees with the model: the model reads the body whole into `serde_json` values (first of repeated keys
//!   winning, as the front reads them), counts every value and key, and decides hand-on, `202` or `400` with the
//!   same code and id. A body handed on names the method the model found. A request whose `params._meta` names
//!   `io.modelcontextprotocol/protocolVersion` as anything but one string, read alike whichever of repeated keys
//!   counts (the key, its `_meta` and its `params` each once), is refused with -32602 and its id.

use serde::de::{Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's invalid params.
const INVALID_PARAMS: i64 = -32602;
/// MCP's `_meta` key for a request's protocol version.
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The largest integer id magnitude.
const MAX_SAFE_ID: i64 = (1 << 53) - 1;

/// What the front does with a body.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Handed on to rmcp, with the request's method.
    HandedOn(String),
    /// `202`, no body.
    Accepted,
    /// `400` with this JSON-RPC error code and id.
    Refused(i64, Value),
}

/// Checks the properties on `data`.
pub fn check(data: &[u8]) {
    let got = match memory_mcp::testkit::http_answer(data) {
        Ok(method) => Outcome::HandedOn(method),
        Err((202, body)) => {
            assert!(body.is_empty(), "a 202 has no body");
            Outcome::Accepted
        }
        Err((400, body)) => {
            let answer: Value = serde_json::from_slice(&body).expect("a 400's body is JSON");
            let object = answer.as_object().expect("an object");
            let keys: Vec<&str> = object.keys().map(String::as_str).collect();
            assert_eq!(keys, ["jsonrpc", "id", "error"], "{answer}");
            assert_eq!(answer["jsonrpc"], "2.0");
            let error = answer["error"].as_object().expect("an error object");
            assert_eq!(error.len(), 2, "{answer}");
            assert!(error["message"].is_string(), "{answer}");
            let code = error["code"].as_i64().expect("an integer code");
            assert!(matches!(code, PARSE_ERROR | INVALID_REQUEST | INVALID_PARAMS), "{answer}");
            let id = answer["id"].clone();
            assert!(id.is_null() || is_request_id(&id), "{answer}");
            Outcome::Refused(code, id)
        }
        Err((status, _)) => panic!("status {status} for a body"),
    };
    assert_eq!(
        got,
        model(data),
        "{:?}",
        String::from_utf8_lossy(data.get(..200.min(data.len())).unwrap_or_default())
    );
}

fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| (-MAX_SAFE_ID..=MAX_SAFE_ID).contains(&n)),
        _ => false,
    }
}

/// The values of a JSON value: itself, and every key and value inside it.
fn count(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(members) => members.values().map(|v| 1 + count(v)).sum(),
        _ => 0,
    }
}

/// The top-level members of an object in the order written, repeated keys kept.
struct Members(Vec<(String, Value)>);

struct MembersSeed;

impl<'de> DeserializeSeed<'de> for MembersSeed {
    type Value = Option<Members>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Members>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Members>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Members>, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    members.push((key, value));
                }
                Ok(Some(Members(members)))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// The reference model of the front's rules.
fn model(data: &[u8]) -> Outcome {
    let refused = |id: Option<&Value>| {
        Outcome::Refused(INVALID_REQUEST, id.filter(|id| is_request_id(id)).cloned().unwrap_or(Value::Null))
    };
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return Outcome::Refused(PARSE_ERROR, Value::Null);
    };
    if !value.is_object() {
        return refused(None);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(data);
    let Members(members) = MembersSeed.deserialize(&mut deserializer).ok().flatten().expect("an object");
    let first = |name: &str| members.iter().find(|(key, _)| key == name).map(|(_, value)| value);
    let values = 1 + members.iter().map(|(_, value)| 1 + count(value)).sum::<usize>();
    let id = first("id");
    // The front reads `id`, `method` and `jsonrpc` for their kind only: inside them, nothing is counted.
    let uncounted: usize =
        ["id", "method", "jsonrpc"].iter().filter_map(|n| first(n)).map(|v| count(v) - 1).sum();
    if values - uncounted > memory_mcp::MAX_VALUES {
        return refused(id);
    }
    if first("jsonrpc") != Some(&Value::String("2.0".to_owned())) {
        return refused(id);
    }
    if first("params").is_some_and(|params| !params.is_object()) {
        return refused(id);
    }
    let answer = members.iter().any(|(key, _)| key == "result" || key == "error");
    match (first("method"), id) {
        (Some(Value::String(_)), Some(id)) if is_request_id(id) && era(data) == Era::Malformed => {
            Outcome::Refused(INVALID_PARAMS, id.clone())
        }
        (Some(Value::String(method)), Some(id)) if is_request_id(id) => Outcome::HandedOn(method.clone()),
        (Some(Value::String(_)), Some(_)) => Outcome::Refused(INVALID_REQUEST, Value::Null),
        (Some(Value::String(_)), None) => Outcome::Accepted,
        (Some(_), _) => refused(id),
        (None, Some(id)) if is_request_id(id) && answer => Outcome::Accepted,
        _ => refused(id),
    }
}

/// A JSON value with every repeated key of every object kept (`serde_json::Value` keeps the last).
enum Tree {
    Object(Vec<(String, Tree)>),
    String(String),
    Other,
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tree, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tree;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Tree>()? {
                    members.push((key, value));
                }
                Ok(Tree::Object(members))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Tree::Other)
            }

            fn visit_str<E>(self, text: &str) -> Result<Tree, E> {
                Ok(Tree::String(text.to_owned()))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Tree, E> {
                Ok(Tree::Other)
            }

            fn visit_i64<E>(self, _: i64) -> Result<Tree, E> {
                Ok(Tree::Other)
            }

            fn visit_u64<E>(self, _: u64) -> Result<Tree, E> {
                Ok(Tree::Other)
            }

            fn visit_f64<E>(self, _: f64) -> Result<Tree, E> {
                Ok(Tree::Other)
            }

            fn visit_unit<E>(self) -> Result<Tree, E> {
                Ok(Tree::Other)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// The members of an object named `key`, every occurrence.
fn named<'a>(members: &'a [(String, Tree)], key: &'a str) -> impl Iterator<Item = &'a Tree> {
    members.iter().filter(move |(name, _)| name == key).map(|(_, value)| value)
}

/// The era of a message as the model reads it (the front's `Era`, written again from the documented rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// No protocol version in `params._meta`, or a revision reached through `initialize`.
    Session,
    /// Any other version string, once.
    Stateless(String),
    /// The key is there, but not as one string that every reader reads alike (the key, its `_meta` and its
    /// `params` each once).
    Malformed,
}

/// The revisions reached through `initialize`.
const SESSION_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The era of `data`, read with every repeated key kept.
pub fn era(data: &[u8]) -> Era {
    let Ok(Tree::Object(top)) = serde_json::from_slice::<Tree>(data) else { return Era::Session };
    let params: Vec<&Tree> = named(&top, "params").collect();
    let metas: Vec<&Tree> = params
        .iter()
        .filter_map(|params| match params {
            Tree::Object(members) => Some(named(members, "_meta").collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect();
    let versions: Vec<&Tree> = metas
        .iter()
        .filter_map(|meta| match meta {
            Tree::Object(members) => Some(named(members, PROTOCOL_VERSION_KEY).collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect();
    match versions.as_slice() {
        [] => Era::Session,
        [_] if params.len() > 1 || metas.len() > 1 => Era::Malformed,
        [Tree::String(version)] if SESSION_REVISIONS.contains(&version.as_str()) => Era::Session,
        [Tree::String(version)] => Era::Stateless(version.clone()),
        _ => Era::Malformed,
    }
}
