//! JSON-RPC 2.0 as both transports read it: the error codes, the request ids this server answers under, and the
//! shape of a message read in one pass without holding it ([`Envelope`]).
//!
//! The shape is read before rmcp reads the message into its own types, so that what rmcp would get wrong or pay
//! for is refused first, at a cost bounded by the message's length and nothing else:
//! - a value is checked as a full parse would check it and skipped, never kept: only the `method` string and a
//!   valid `id` are held;
//! - the values of a message are counted; one with more than [`MAX_VALUES`] is refused. rmcp buffers a whole
//!   message in serde's intermediate form before it picks the request type, a few dozen bytes a value, so the
//!   count bounds what a message of at most 4 MiB can make the server hold (a 4 MiB array of small numbers would
//!   otherwise become two million buffered values, over 60 MB). A tool call's arguments are a handful of values.
//! - nesting is bounded by `serde_json`'s own recursion limit (128).
//!
//! The same pass reads the request's era ([`Era`]) from `params._meta`, holding nothing of it either: MCP
//! `2026-07-28` names its protocol version in every request's `_meta`, and earlier revisions open a session with
//! `initialize`. Both transports serve both eras and choose per request by this reading alone.

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// JSON-RPC: the message is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a request (also used for a request over the size limit or with a bad id).
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the params do not fit the method.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// MCP: a request other than `initialize` and `ping` before `initialize`.
pub(crate) const NOT_INITIALIZED: i64 = -32002;
/// MCP `2026-07-28`: the `_meta` key that names a request's protocol version.
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The largest integer id magnitude: 2^53 - 1, the integers every JSON reader holds exactly.
pub(crate) const MAX_SAFE_ID: i64 = (1 << 53) - 1;
/// The answer to a request with an id outside [`is_request_id`].
pub(crate) const BAD_ID: &str =
    "Invalid Request: the id must be a string or an integer from -(2^53 - 1) to 2^53 - 1";
/// The most JSON values (objects, arrays, strings, numbers, booleans and nulls, at every depth) one message may
/// hold.
pub const MAX_VALUES: usize = 65_536;

/// A request id this server answers under: a string, or an integer from -(2^53 - 1) to 2^53 - 1 (not a float,
/// even one with no fraction: `1.0` is refused).
pub(crate) fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| (-MAX_SAFE_ID..=MAX_SAFE_ID).contains(&n)),
        _ => false,
    }
}

/// The shape of one message, read without holding it. Of repeated keys, the first counts.
#[derive(Debug)]
pub(crate) enum Envelope {
    /// A JSON object.
    Object(Members),
    /// A JSON array: a batch, which neither transport accepts.
    Array,
    /// Any other JSON value.
    Other,
}

/// What a message object holds, as far as routing it needs.
#[derive(Debug, Default)]
pub(crate) struct Members {
    /// `id`: `Some(Probe(Some(id)))` for an id this server answers under, `Some(Probe(None))` for any other value.
    pub(crate) id: Option<Probe<Value>>,
    /// `method`: `Some(Probe(Some(name)))` for a string.
    pub(crate) method: Option<Probe<String>>,
    /// `jsonrpc`: whether it is the string `"2.0"`.
    pub(crate) version: Option<bool>,
    /// `params`: whether it is an object.
    pub(crate) params: Option<bool>,
    /// Whether the message has a `result` or an `error` (a response).
    pub(crate) answer: bool,
    /// Every value in the message, the object itself included (saturating).
    pub(crate) values: usize,
    /// The era its `params._meta` names.
    pub(crate) era: Era,
}

/// Which protocol era a request belongs to, read from `params._meta["io.modelcontextprotocol/protocolVersion"]`
/// alone: nothing else of the message (its method, `clientInfo`, any other `_meta` key, an HTTP header) decides it,
/// and an era never decides who acts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Era {
    /// The session era (revisions up to `2025-11-25`): `_meta` names no protocol version, or names one of the
    /// revisions this server serves through `initialize`. On stdio such a request waits for `initialize`.
    #[default]
    Session,
    /// The stateless era (`2026-07-28`): `_meta` names any other version string. The request carries everything it
    /// needs and is served without `initialize`, or refused with -32022 when its version is not one this server
    /// serves.
    Stateless,
    /// `_meta` holds the key, but not as one string that every reader of the message would read alike: a value that
    /// is not a string, or a key, `_meta` or `params` repeated around it. Refused with -32602 (Invalid params), as
    /// the specification says of a malformed required field; nothing runs.
    Malformed,
}

impl Members {
    /// The message's id when it is one this server answers under.
    pub(crate) fn valid_id(&self) -> Option<Value> {
        self.id.as_ref().and_then(|Probe(id)| id.clone())
    }
}

/// What one message sent to the HTTP transport is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// A request, with its method.
    Request(String),
    /// A notification or a response: accepted, nothing to answer.
    Accepted,
}

/// The answer to a request of [`Era::Malformed`].
pub(crate) const MALFORMED_VERSION: &str = "Invalid params: `_meta` must name `io.modelcontextprotocol/protocolVersion` \
     once, as a string";

/// Why a message is refused before rmcp reads it: the JSON-RPC error to answer with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// [`PARSE_ERROR`], [`INVALID_REQUEST`] or [`INVALID_PARAMS`].
    pub(crate) code: i64,
    /// The error's message.
    pub(crate) message: String,
    /// The request's id, when it had a valid one.
    pub(crate) id: Option<Value>,
}

/// Reads `bytes` as one JSON value and returns its shape; `None` when they are not JSON (a syntax error, trailing
/// bytes, or nesting past `serde_json`'s limit). Costs one pass over the bytes and holds at most the method name.
pub(crate) fn envelope(bytes: &[u8]) -> Option<Envelope> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let envelope = Envelope::deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(envelope)
}

/// The HTTP transport's reading of one POSTed message: a request (with its method) or something accepted without
/// an answer, or the JSON-RPC error of a `400`.
///
/// Refused: a request whose `_meta` names its protocol version malformed ([`Era::Malformed`], -32602); what is not
/// JSON (-32700); a batch, a value that is not an object, a message of more than
/// [`MAX_VALUES`] values, a `jsonrpc` other than `"2.0"`, a `method` that is not a string, `params` that are not
/// an object, a request whose id is not one [`is_request_id`] accepts, and an object that is none of request,
/// notification and response (-32600).
pub(crate) fn classify(bytes: &[u8]) -> Result<Message, Refusal> {
    let refuse = |message: &str, id: Option<Value>| Refusal {
        code: INVALID_REQUEST,
        message: format!("Invalid Request: {message}"),
        id,
    };
    let members = match envelope(bytes) {
        None => return Err(Refusal { code: PARSE_ERROR, message: "Parse error".to_owned(), id: None }),
        Some(Envelope::Array) => {
            return Err(refuse("a batch (a JSON array) is not accepted; send one message per request", None));
        }
        Some(Envelope::Other) => return Err(refuse("a message is a JSON object", None)),
        Some(Envelope::Object(members)) => members,
    };
    let id = members.valid_id();
    if members.values > MAX_VALUES {
        return Err(refuse(&format!("a message holds at most {MAX_VALUES} JSON values"), id));
    }
    if members.version != Some(true) {
        return Err(refuse("`jsonrpc` must be \"2.0\"", id));
    }
    if members.params == Some(false) {
        return Err(refuse("`params` must be an object", id));
    }
    match (members.method, &members.id) {
        (Some(Probe(Some(_))), Some(Probe(Some(_)))) if members.era == Era::Malformed => {
            Err(Refusal { code: INVALID_PARAMS, message: MALFORMED_VERSION.to_owned(), id })
        }
        (Some(Probe(Some(method))), Some(Probe(Some(_)))) => Ok(Message::Request(method)),
        (Some(Probe(Some(_))), Some(Probe(None))) => {
            Err(Refusal { code: INVALID_REQUEST, message: BAD_ID.to_owned(), id: None })
        }
        (Some(Probe(Some(_))), None) => Ok(Message::Accepted),
        (Some(Probe(None)), _) => Err(refuse("`method` must be a string", id)),
        (None, Some(Probe(Some(_)))) if members.answer => Ok(Message::Accepted),
        _ => Err(refuse("not a JSON-RPC request, notification or response", id)),
    }
}

impl Refusal {
    /// The JSON-RPC error object answered for it: `jsonrpc`, `id` (null without a valid one) and `error`.
    pub(crate) fn to_json(&self) -> Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id.clone().unwrap_or(Value::Null),
            "error": { "code": self.code, "message": self.message },
        })
    }
}

/// What the HTTP transport answers to a POSTed body before rmcp reads it (the token already accepted): `Ok` with
/// the method of a request to hand on, or the status and JSON body of the answer (`202` and none for a
/// notification or a response, `400` and a JSON-RPC error for a refusal).
pub(crate) fn http_answer(body: &[u8]) -> Result<String, (u16, Option<Value>)> {
    match classify(body) {
        Ok(Message::Request(method)) => Ok(method),
        Ok(Message::Accepted) => Err((202, None)),
        Err(refusal) => Err((400, Some(refusal.to_json()))),
    }
}

/// A value read for its kind only: `Some` for the kind looked for (a request id, a string), else `None`; nothing
/// else of it is kept.
#[derive(Debug)]
pub(crate) struct Probe<T>(pub(crate) Option<T>);

/// Skips one value, counting it and every value inside it into the total it holds.
struct Skip<'a>(&'a mut usize);

impl<'de> DeserializeSeed<'de> for Skip<'_> {
    /// Whether the value was an object.
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        *self.0 = self.0.saturating_add(1);
        Ok(false)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        *self.0 = self.0.saturating_add(1);
        Ok(false)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        *self.0 = self.0.saturating_add(1);
        Ok(false)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        *self.0 = self.0.saturating_add(1);
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        *self.0 = self.0.saturating_add(1);
        Ok(false)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        *self.0 = self.0.saturating_add(1);
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        *self.0 = self.0.saturating_add(1);
        while seq.next_element_seed(Skip(&mut *self.0))?.is_some() {}
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        *self.0 = self.0.saturating_add(1);
        while map.next_key_seed(Key)?.is_some() {
            // A key is a string: one value.
            *self.0 = self.0.saturating_add(1);
            map.next_value_seed(Skip(&mut *self.0))?;
        }
        Ok(true)
    }
}

/// Reads one object key as a string (so its escapes and UTF-8 are checked, as a full parse would), keeping nothing.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// Skips what is left of a sequence or a map, checking it as a full parse would and keeping nothing.
fn skip_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<(), A::Error> {
    let mut uncounted = 0;
    Skip(&mut uncounted).visit_seq(seq).map(|_| ())
}

/// As [`skip_seq`], for a map.
fn skip_map<'de, A: MapAccess<'de>>(map: A) -> Result<(), A::Error> {
    let mut uncounted = 0;
    Skip(&mut uncounted).visit_map(map).map(|_| ())
}

/// What the era reading found across every `params`, every `_meta` in them and every protocol version key in those.
#[derive(Debug, Default)]
struct EraReading {
    /// `params` members seen (saturating).
    params: u8,
    /// `_meta` members seen inside them.
    metas: u8,
    /// Protocol version keys seen inside those, and the kind of the last one.
    versions: u8,
    version: Option<Version>,
}

/// The kind of a protocol version value.
#[derive(Debug, Clone, Copy)]
enum Version {
    /// A revision this server serves through `initialize`.
    Session,
    /// Any other string.
    Other,
    /// Not a string.
    NotString,
}

impl EraReading {
    fn era(&self) -> Era {
        match self.version {
            None => Era::Session,
            // One key, in one `_meta`, in one `params`: read alike by every reader of the message (serde_json keeps
            // the last of repeated keys, this reading would see the first).
            Some(_) if self.params > 1 || self.metas > 1 || self.versions > 1 => Era::Malformed,
            Some(Version::Session) => Era::Session,
            Some(Version::Other) => Era::Stateless,
            Some(Version::NotString) => Era::Malformed,
        }
    }
}

/// Counts one scalar value into `values` and returns `found`.
fn one<T>(values: &mut usize, found: T) -> T {
    *values = values.saturating_add(1);
    found
}

/// Whether a key read is the one named, keeping nothing of it.
struct KeyIs(&'static str);

impl<'de> DeserializeSeed<'de> for KeyIs {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

/// The scalar arms of a visitor that looks into one object: any other value counts as one and is not that object.
macro_rules! not_an_object {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
            Ok(one(self.values, false))
        }

        fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
            Ok(one(self.values, false))
        }

        fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
            Ok(one(self.values, false))
        }

        fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
            Ok(one(self.values, false))
        }

        fn visit_str<E>(self, _: &str) -> Result<bool, E> {
            Ok(one(self.values, false))
        }

        fn visit_unit<E>(self) -> Result<bool, E> {
            Ok(one(self.values, false))
        }
    };
}

/// `params`, counted as [`Skip`] counts it, reading its `_meta`; whether it was an object.
struct Params<'a> {
    values: &'a mut usize,
    era: &'a mut EraReading,
}

impl<'de> DeserializeSeed<'de> for Params<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        self.era.params = self.era.params.saturating_add(1);
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Params<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        *self.values = self.values.saturating_add(1);
        while let Some(meta) = map.next_key_seed(KeyIs("_meta"))? {
            *self.values = self.values.saturating_add(1);
            if meta {
                self.era.metas = self.era.metas.saturating_add(1);
                map.next_value_seed(Meta { values: &mut *self.values, era: &mut *self.era })?;
            } else {
                map.next_value_seed(Skip(&mut *self.values))?;
            }
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        Skip(self.values).visit_seq(seq)
    }

    not_an_object!();
}

/// A `_meta` value, counted as [`Skip`] counts it, reading its protocol version key; whether it was an object.
struct Meta<'a> {
    values: &'a mut usize,
    era: &'a mut EraReading,
}

impl<'de> DeserializeSeed<'de> for Meta<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Meta<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        *self.values = self.values.saturating_add(1);
        while let Some(version) = map.next_key_seed(KeyIs(PROTOCOL_VERSION_KEY))? {
            *self.values = self.values.saturating_add(1);
            if version {
                self.era.versions = self.era.versions.saturating_add(1);
                self.era.version = Some(map.next_value_seed(VersionKind(&mut *self.values))?);
            } else {
                map.next_value_seed(Skip(&mut *self.values))?;
            }
        }
        Ok(true)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        Skip(self.values).visit_seq(seq)
    }

    not_an_object!();
}

/// A protocol version value, counted as [`Skip`] counts it: its kind, nothing of it kept.
struct VersionKind<'a>(&'a mut usize);

impl<'de> DeserializeSeed<'de> for VersionKind<'_> {
    type Value = Version;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Version, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for VersionKind<'_> {
    type Value = Version;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E>(self, version: &str) -> Result<Version, E> {
        Ok(one(self.0, if is_session_revision(version) { Version::Session } else { Version::Other }))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Version, A::Error> {
        Skip(self.0).visit_map(map).map(|_| Version::NotString)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Version, A::Error> {
        Skip(self.0).visit_seq(seq).map(|_| Version::NotString)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Version, E> {
        Ok(one(self.0, Version::NotString))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Version, E> {
        Ok(one(self.0, Version::NotString))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Version, E> {
        Ok(one(self.0, Version::NotString))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Version, E> {
        Ok(one(self.0, Version::NotString))
    }

    fn visit_unit<E>(self) -> Result<Version, E> {
        Ok(one(self.0, Version::NotString))
    }
}

/// Whether `version` is a revision this server serves through `initialize` (`2024-11-05` to `2025-11-25`).
pub(crate) fn is_session_revision(version: &str) -> bool {
    crate::server::SUPPORTED.iter().any(|served| served.has_initialize() && served.as_str() == version)
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Envelope, D::Error> {
        struct Shape;
        impl<'de> Visitor<'de> for Shape {
            type Value = Envelope;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                let mut members = Members { values: 1, ..Members::default() };
                let mut era = EraReading::default();
                while let Some(key) = map.next_key::<String>()? {
                    members.values = members.values.saturating_add(1);
                    match key.as_str() {
                        "id" if members.id.is_none() => {
                            members.values = members.values.saturating_add(1);
                            members.id = Some(map.next_value()?);
                        }
                        "method" if members.method.is_none() => {
                            members.values = members.values.saturating_add(1);
                            members.method = Some(map.next_value()?);
                        }
                        "jsonrpc" if members.version.is_none() => {
                            members.values = members.values.saturating_add(1);
                            let Probe(version) = map.next_value::<Probe<String>>()?;
                            members.version = Some(version.is_some_and(|v| v == "2.0"));
                        }
                        "params" => {
                            let object =
                                map.next_value_seed(Params { values: &mut members.values, era: &mut era })?;
                            members.params.get_or_insert(object);
                        }
                        other => {
                            members.answer |= matches!(other, "result" | "error");
                            map.next_value_seed(Skip(&mut members.values))?;
                        }
                    }
                }
                members.era = era.era();
                Ok(Envelope::Object(members))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Envelope, A::Error> {
                skip_seq(seq).map(|()| Envelope::Array)
            }

            fn visit_bool<E>(self, _: bool) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_i64<E>(self, _: i64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_u64<E>(self, _: u64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_f64<E>(self, _: f64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_str<E>(self, _: &str) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_unit<E>(self) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
        }
        deserializer.deserialize_any(Shape)
    }
}

/// Reads the kind of a value, skipping whatever it is not looking for.
macro_rules! probe {
    ($target:ty, $expecting:literal, { $($found:item)* }) => {
        impl<'de> Deserialize<'de> for Probe<$target> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Probe<$target>, D::Error> {
                struct Kind;
                impl<'de> Visitor<'de> for Kind {
                    type Value = Probe<$target>;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }

                    $($found)*

                    fn visit_bool<E>(self, _: bool) -> Result<Probe<$target>, E> {
                        Ok(Probe(None))
                    }

                    fn visit_f64<E>(self, _: f64) -> Result<Probe<$target>, E> {
                        Ok(Probe(None))
                    }

                    fn visit_unit<E>(self) -> Result<Probe<$target>, E> {
                        Ok(Probe(None))
                    }

                    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Probe<$target>, A::Error> {
                        skip_seq(seq).map(|()| Probe(None))
                    }

                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Probe<$target>, A::Error> {
                        skip_map(map).map(|()| Probe(None))
                    }
                }
                deserializer.deserialize_any(Kind)
            }
        }
    };
}

probe!(Value, "a request id", {
    fn visit_str<E>(self, id: &str) -> Result<Probe<Value>, E> {
        Ok(Probe(Some(Value::String(id.to_owned()))))
    }

    fn visit_i64<E>(self, id: i64) -> Result<Probe<Value>, E> {
        Ok(Probe((-MAX_SAFE_ID..=MAX_SAFE_ID).contains(&id).then(|| Value::from(id))))
    }

    fn visit_u64<E>(self, id: u64) -> Result<Probe<Value>, E> {
        Ok(Probe(i64::try_from(id).ok().filter(|id| *id <= MAX_SAFE_ID).map(Value::from)))
    }
});

probe!(String, "a string", {
    fn visit_str<E>(self, text: &str) -> Result<Probe<String>, E> {
        Ok(Probe(Some(text.to_owned())))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Probe<String>, E> {
        Ok(Probe(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Probe<String>, E> {
        Ok(Probe(None))
    }
});

/// The top-level `"id"` of a JSON object that may be cut short, read without parsing the values it skips.
pub(crate) fn top_level_id(prefix: &[u8]) -> Option<Value> {
    let mut scanner = Scanner { bytes: prefix, at: 0 };
    scanner.skip_space();
    scanner.expect(b'{')?;
    loop {
        scanner.skip_space();
        let key = scanner.string()?;
        scanner.skip_space();
        scanner.expect(b':')?;
        scanner.skip_space();
        let start = scanner.at;
        scanner.value()?;
        if key == b"\"id\"" {
            let raw = prefix.get(start..scanner.at)?;
            let id: Value = serde_json::from_slice(raw).ok()?;
            return is_request_id(&id).then_some(id);
        }
        scanner.skip_space();
        scanner.expect(b',')?;
    }
}

/// A cursor over JSON bytes that can skip strings and whole values.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string, quotes included; `None` when it is cut short.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at);
                }
                _ => self.at += 1,
            }
        }
    }

    /// One value of any kind; `None` when it is cut short.
    fn value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                // The end of a value at the top: the next member, or the end of the object around it.
                b',' | b'}' | b']' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0 && matches!(self.bytes.get(self.at.wrapping_sub(1)), Some(b'"' | b'}' | b']')) {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_id_of_a_request_cut_short() {
        let cut = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"content":"aaaa"#;
        assert_eq!(top_level_id(cut), Some(json!(7)));
        let nested = br#"{"method":"x","params":{"id":1,"s":"}\"{"},"id":"abc","params2":"#;
        assert_eq!(top_level_id(nested), Some(json!("abc")));
        let none = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"content":"aaaa"#;
        assert_eq!(top_level_id(none), None);
        assert_eq!(top_level_id(b"[1,2]"), None);
        assert_eq!(top_level_id(br#"{"id":1.5,"#), None);
        assert_eq!(top_level_id(br#"{"id" : "x" }"#), Some(json!("x")));
    }

    fn check(body: &str, expected: Result<Message, (i64, Option<Value>)>) {
        let got = classify(body.as_bytes()).map_err(|refusal| (refusal.code, refusal.id));
        assert_eq!(got, expected, "{body}");
    }

    #[test]
    fn messages_accepted() {
        let request = |method: &str| Ok(Message::Request(method.to_owned()));
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, request("ping"));
        check(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#,
            request("tools/call"),
        );
        check(
            r#"{"method":"tools/list","params":{},"id":-9007199254740991,"jsonrpc":"2.0"}"#,
            request("tools/list"),
        );
        check(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Ok(Message::Accepted));
        check(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, Ok(Message::Accepted));
        check(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}"#, Ok(Message::Accepted));
    }

    #[test]
    fn messages_refused() {
        let invalid = |id: Option<Value>| Err((INVALID_REQUEST, id));
        check("{", Err((PARSE_ERROR, None)));
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#, Err((PARSE_ERROR, None)));
        check("[]", invalid(None));
        check("7", invalid(None));
        check(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, invalid(Some(json!(1))));
        check(r#"{"id":1,"method":"ping"}"#, invalid(Some(json!(1))));
        check(r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#, invalid(Some(json!(1))));
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#, invalid(Some(json!(1))));
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}"#, invalid(Some(json!(1))));
        check(r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#, invalid(None));
        check(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, invalid(None));
        check(r#"{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}"#, invalid(None));
        check(r#"{"jsonrpc":"2.0","id":1,"method":7}"#, invalid(Some(json!(1))));
        check(r#"{"jsonrpc":"2.0","id":1}"#, invalid(Some(json!(1))));
    }

    #[test]
    fn values_are_counted_at_every_depth() {
        let body = |n: usize| {
            let items = vec!["1"; n].join(",");
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":[{items}]}}}}"#)
        };
        // The object, three keys with their values, `params`' key and object, `a` and the array: 11 values around
        // the items.
        let fits = MAX_VALUES - 11;
        assert!(classify(body(fits).as_bytes()).is_ok());
        let refused = classify(body(fits + 1).as_bytes()).unwrap_err();
        assert_eq!((refused.code, refused.id), (INVALID_REQUEST, Some(json!(1))));
        let Some(Envelope::Object(members)) = envelope(br#"{"x":{"y":[1,{"z":null}]},"id":1}"#) else {
            panic!("an object")
        };
        // {}, x, {}, y, [], 1, {}, z, null, id, 1
        assert_eq!(members.values, 11);
    }

    /// The era of a request with `params` written as given, and the values counted.
    fn era_of(params: &str) -> (Era, usize) {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{params}}}"#);
        let Some(Envelope::Object(members)) = envelope(body.as_bytes()) else { panic!("an object: {body}") };
        (members.era, members.values)
    }

    #[test]
    fn eras_are_read_from_the_version_in_meta_alone() {
        let session = [
            "{}",
            r#"{"_meta":{}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-11-05"}}"#,
            r#"{"_meta":"io.modelcontextprotocol/protocolVersion"}"#,
            r#"{"_meta":["io.modelcontextprotocol/protocolVersion","2026-07-28"]}"#,
            // Only `params._meta` counts: not the top of params, not a `_meta` deeper down.
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
            r#"{"arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"_meta":{"x":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            // Repeated members that name no version are read as before.
            r#"{"_meta":{},"_meta":{"a":1}}"#,
        ];
        for params in session {
            assert_eq!(era_of(params).0, Era::Session, "{params}");
        }
        let stateless = [
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":""}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25 "}}"#,
            r#"{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}"#,
            r#"{"name":"x","_meta":{"a":[1,2],"io.modelcontextprotocol/protocolVersion":"9999"},"arguments":{}}"#,
        ];
        for params in stateless {
            assert_eq!(era_of(params).0, Era::Stateless, "{params}");
        }
        let malformed = [
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":{"v":"2026-07-28"}}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":["2026-07-28"]}}"#,
            // Read differently by a reader that keeps the first of repeated keys and one that keeps the last.
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25"}}"#,
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"},"_meta":{}}"#,
            r#"{"_meta":{}},"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        ];
        for params in malformed {
            assert_eq!(era_of(params).0, Era::Malformed, "{params}");
        }
        // The reading counts exactly what skipping counts: the message's {}, its four keys and their values,
        // `_meta`'s key and {}, the version's key and string.
        assert_eq!(era_of(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#).1, 13);
        assert_eq!(era_of(r#"{"_meta":{"x":"2026-07-28"}}"#).1, 13);
        assert_eq!(era_of(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":[1,[2,{"a":3}]]}}"#).1, 19);
    }

    #[test]
    fn a_request_naming_its_version_malformed_is_invalid_params() {
        let body = r#"{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}"#;
        check(body, Err((INVALID_PARAMS, Some(json!("m")))));
        // A notification is accepted (and answered by nobody), as any notification is.
        let notification = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}"#;
        check(notification, Ok(Message::Accepted));
        let stateless = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        check(stateless, Ok(Message::Request("server/discover".to_owned())));
    }
}
