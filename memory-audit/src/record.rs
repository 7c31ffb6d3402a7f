//! Events, records, and the byte-exact encoding and hashing of a record.

use std::fmt;

use hmac::Mac;
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest, Sha256};
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::{AuditError, AuditKey};

/// The `prevHash` of the first record: 64 zeros. It is also the `last_hash` of an empty log.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The longest line a log may hold, in bytes, its `\n` not counted: 4 MiB. A sink refuses an event whose record
/// would be longer ([`AuditError::InvalidEvent`]), and every reader refuses a longer line rather than hold it.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Which door of the memory service was called, or which operator command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditOperation {
    /// `search` (also a context build and an export).
    Search,
    /// `get`.
    Get,
    /// `create`.
    Create,
    /// `update`.
    Update,
    /// `delete`.
    Delete,
    /// `redact`: an operator's erasure of one version's content (actor `""`).
    Redact,
    /// `token-create`: an operator made a bearer token (actor `""`, id the token's ID).
    #[serde(rename = "token-create")]
    TokenCreate,
    /// `token-revoke`: an operator revoked a bearer token (actor `""`, id the token's ID).
    #[serde(rename = "token-revoke")]
    TokenRevoke,
    /// `archive`: an operator moved the oldest records into an archive file (actor `""`, id the file's name).
    Archive,
    /// `agent-add`: an operator wrote a new agent definition (actor `""`, id the role).
    #[serde(rename = "agent-add")]
    AgentAdd,
    /// `agent-grant`: an operator added a grant to a definition (actor `""`, id the role).
    #[serde(rename = "agent-grant")]
    AgentGrant,
    /// `agent-revoke`: an operator removed a grant from a definition (actor `""`, id the role).
    #[serde(rename = "agent-revoke")]
    AgentRevoke,
    /// `agent-remove`: an operator removed a definition (actor `""`, id the role).
    #[serde(rename = "agent-remove")]
    AgentRemove,
}

impl AuditOperation {
    /// All operations, in the order of the format description.
    pub const ALL: [AuditOperation; 13] = [
        AuditOperation::Search,
        AuditOperation::Get,
        AuditOperation::Create,
        AuditOperation::Update,
        AuditOperation::Delete,
        AuditOperation::Redact,
        AuditOperation::TokenCreate,
        AuditOperation::TokenRevoke,
        AuditOperation::Archive,
        AuditOperation::AgentAdd,
        AuditOperation::AgentGrant,
        AuditOperation::AgentRevoke,
        AuditOperation::AgentRemove,
    ];

    /// The name written in the log: `search`, `get`, `create`, `update`, `delete`, `redact`, `token-create`,
    /// `token-revoke`, `archive`, `agent-add`, `agent-grant`, `agent-revoke` or `agent-remove`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditOperation::Search => "search",
            AuditOperation::Get => "get",
            AuditOperation::Create => "create",
            AuditOperation::Update => "update",
            AuditOperation::Delete => "delete",
            AuditOperation::Redact => "redact",
            AuditOperation::TokenCreate => "token-create",
            AuditOperation::TokenRevoke => "token-revoke",
            AuditOperation::Archive => "archive",
            AuditOperation::AgentAdd => "agent-add",
            AuditOperation::AgentGrant => "agent-grant",
            AuditOperation::AgentRevoke => "agent-revoke",
            AuditOperation::AgentRemove => "agent-remove",
        }
    }

    /// The operation written as `name` in the log; `None` for any other text (matched byte for byte).
    ///
    /// ```
    /// use memory_audit::AuditOperation;
    /// assert_eq!(AuditOperation::parse("token-create"), Some(AuditOperation::TokenCreate));
    /// assert_eq!(AuditOperation::parse("Get"), None);
    /// ```
    pub fn parse(name: &str) -> Option<AuditOperation> {
        AuditOperation::ALL.into_iter().find(|operation| operation.as_str() == name)
    }
}

/// What the caller called: the door of the memory service, the memory tool's `view`, or the operator command. A
/// record names it beside its [`AuditOperation`], which keeps the five words of the first format for every read and
/// write (a context build is a `search`, a history a `get`), so that filters written for them keep working.
///
/// The operator words are the operation's own (`redact`, `token-create`, …, `agent-remove`); an MCP tool is written
/// as the door it maps to, never as `mcp:<tool>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Door {
    /// `search`: a ranked search.
    Search,
    /// `get`: one entry.
    Get,
    /// `create`.
    Create,
    /// `update`.
    Update,
    /// `delete`.
    Delete,
    /// `context`: a context build.
    Context,
    /// `list`: a listing of IDs.
    List,
    /// `history`: the kept versions of one ID.
    History,
    /// `restore`: an old version written again.
    Restore,
    /// `export`: entries written out as an `.alp` file.
    Export,
    /// `import`: entries read in from an `.alp` file.
    Import,
    /// `prune`: expired entries removed.
    Prune,
    /// `view`: the memory tool's view of a file or a directory.
    View,
    /// `redact` (operator).
    Redact,
    /// `token-create` (operator).
    TokenCreate,
    /// `token-revoke` (operator).
    TokenRevoke,
    /// `archive` (operator).
    Archive,
    /// `agent-add` (operator; the record carries `grant`).
    AgentAdd,
    /// `agent-grant` (operator; the record carries `grant`).
    AgentGrant,
    /// `agent-revoke` (operator; the record carries `grant`).
    AgentRevoke,
    /// `agent-remove` (operator; the record carries `grant`).
    AgentRemove,
}

impl Door {
    /// All doors, in the order of the format description.
    pub const ALL: [Door; 21] = [
        Door::Search,
        Door::Get,
        Door::Create,
        Door::Update,
        Door::Delete,
        Door::Context,
        Door::List,
        Door::History,
        Door::Restore,
        Door::Export,
        Door::Import,
        Door::Prune,
        Door::View,
        Door::Redact,
        Door::TokenCreate,
        Door::TokenRevoke,
        Door::Archive,
        Door::AgentAdd,
        Door::AgentGrant,
        Door::AgentRevoke,
        Door::AgentRemove,
    ];

    /// The name written in the log: `search`, `get`, `create`, `update`, `delete`, `context`, `list`, `history`,
    /// `restore`, `export`, `import`, `prune`, `view`, `redact`, `token-create`, `token-revoke`, `archive`,
    /// `agent-add`, `agent-grant`, `agent-revoke` or `agent-remove`.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Search => "search",
            Door::Get => "get",
            Door::Create => "create",
            Door::Update => "update",
            Door::Delete => "delete",
            Door::Context => "context",
            Door::List => "list",
            Door::History => "history",
            Door::Restore => "restore",
            Door::Export => "export",
            Door::Import => "import",
            Door::Prune => "prune",
            Door::View => "view",
            Door::Redact => "redact",
            Door::TokenCreate => "token-create",
            Door::TokenRevoke => "token-revoke",
            Door::Archive => "archive",
            Door::AgentAdd => "agent-add",
            Door::AgentGrant => "agent-grant",
            Door::AgentRevoke => "agent-revoke",
            Door::AgentRemove => "agent-remove",
        }
    }

    /// The door written as `name` in the log; `None` for any other text (matched byte for byte).
    ///
    /// ```
    /// use memory_audit::Door;
    /// assert_eq!(Door::parse("context"), Some(Door::Context));
    /// assert_eq!(Door::parse("mcp:memory"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Door> {
        Door::ALL.into_iter().find(|door| door.as_str() == name)
    }

    /// Whether records of this door carry `grant`: the four `agent-*` doors, and only they.
    pub fn carries_grant(self) -> bool {
        matches!(self, Door::AgentAdd | Door::AgentGrant | Door::AgentRevoke | Door::AgentRemove)
    }
}

impl fmt::Display for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every operation is also a door: a record written before doors were recorded was made through the door its
/// operation names.
impl From<AuditOperation> for Door {
    fn from(operation: AuditOperation) -> Door {
        match operation {
            AuditOperation::Search => Door::Search,
            AuditOperation::Get => Door::Get,
            AuditOperation::Create => Door::Create,
            AuditOperation::Update => Door::Update,
            AuditOperation::Delete => Door::Delete,
            AuditOperation::Redact => Door::Redact,
            AuditOperation::TokenCreate => Door::TokenCreate,
            AuditOperation::TokenRevoke => Door::TokenRevoke,
            AuditOperation::Archive => Door::Archive,
            AuditOperation::AgentAdd => Door::AgentAdd,
            AuditOperation::AgentGrant => Door::AgentGrant,
            AuditOperation::AgentRevoke => Door::AgentRevoke,
            AuditOperation::AgentRemove => Door::AgentRemove,
        }
    }
}

/// One entry of a record's `shown`: `"<id>@<version>"`, the ID as stored and the version in plain decimal.
///
/// ```
/// assert_eq!(memory_audit::shown_entry("shared:team", 3), "shared:team@3");
/// ```
pub fn shown_entry(id: &str, version: u64) -> String {
    format!("{id}@{version}")
}

/// Splits an entry of `shown` into its ID and version: the text after the last `@` must be a version (a decimal
/// from 1, without leading zeros) and the ID before it must not be empty; `None` otherwise.
///
/// ```
/// use memory_audit::parse_shown_entry;
/// assert_eq!(parse_shown_entry("shared:a@b@12"), Some(("shared:a@b", 12)));
/// assert_eq!(parse_shown_entry("shared:a@012"), None);
/// assert_eq!(parse_shown_entry("shared:a"), None);
/// ```
pub fn parse_shown_entry(entry: &str) -> Option<(&str, u64)> {
    let (id, version) = entry.rsplit_once('@')?;
    let digits = !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit());
    if id.is_empty() || !digits || version.starts_with('0') {
        return None;
    }
    Some((id, version.parse().ok()?))
}

impl fmt::Display for AuditOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a call ended at the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The policy allowed the call; the store may be touched once this record is durable.
    Allowed,
    /// The policy denied the call; the record's code is the deny code.
    Denied,
    /// The call failed before the policy could allow it (invalid ID, broken agent definition, invalid entry); the
    /// record's code is the error code.
    Error,
}

impl Outcome {
    /// All outcomes.
    pub const ALL: [Outcome; 3] = [Outcome::Allowed, Outcome::Denied, Outcome::Error];

    /// The name written in the log: `allowed`, `denied` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Denied => "denied",
            Outcome::Error => "error",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the caller asks a sink to record. The sink adds `seq`, `prevHash` and `hash`.
///
/// The caller supplies the time: this crate never reads the clock. The record keeps it in UTC, truncated to
/// milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEvent {
    /// When the call was made. Any offset; it is converted to UTC.
    pub timestamp: OffsetDateTime,
    /// The acting role, as given (even when it names no known agent).
    pub actor: String,
    /// The operation: one of the five words of the first format for reads and writes, or the operator command.
    pub operation: AuditOperation,
    /// What the caller called ([`Door`]); `None` writes a record without `door`, as records were before doors
    /// were recorded.
    pub door: Option<Door>,
    /// The ID exactly as given, even when invalid; a search's prefix, or `""` for a search without one.
    pub id: String,
    /// How the call ended at the gate.
    pub outcome: Outcome,
    /// `None` when allowed; otherwise the deny or error code, such as `MEMORY_NOT_GRANTED`.
    pub code: Option<String>,
    /// The grants an `agent-*` command changed, as `"read:<grant>"` / `"write:<grant>"` (add: the new definition's
    /// grants; grant and revoke: the one changed; remove: the grants it had, which may be none). `Some` exactly when
    /// the door is one of the four `agent-*` doors ([`Door::carries_grant`]).
    pub grant: Option<Vec<String>>,
    /// The receipt of an `allowed` call that returned entries: every entry whose ID or content it returned, as
    /// `"<id>@<version>"` ([`shown_entry`]), in the order returned. Empty for every other call, and then the record
    /// has no `shown` field at all (never `[]`). A record with `shown` names its door.
    pub shown: Vec<String>,
    /// The bearer token the call came with, by its public ID, for calls served over HTTP (`alp serve`); `None`
    /// everywhere else, and then the record has no `via` field at all.
    pub via: Option<String>,
}

/// One line of the log: the event, its position and its link in the hash chain.
///
/// Serialised (by [`AuditRecord::to_line`] and by `Serialize`) with the fields in the order of the crate docs.
/// Deserialising checks the shape of every field (a positive `seq`, a canonical UTC timestamp, 64-digit lowercase
/// hex hashes, a code exactly when the outcome is not `allowed`) and refuses unknown fields, but it does not check
/// the hash: that is what [`verify`](crate::verify) does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawRecord")]
pub struct AuditRecord {
    seq: u64,
    #[serde(serialize_with = "serialize_timestamp")]
    timestamp: OffsetDateTime,
    actor: String,
    operation: AuditOperation,
    #[serde(skip_serializing_if = "Option::is_none")]
    door: Option<Door>,
    id: String,
    outcome: Outcome,
    code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grant: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shown: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<String>,
    prev_hash: String,
    hash: String,
}

impl AuditRecord {
    /// The record that follows the record `prev` (`None` for the first of a log) for `event`: its `seq`, its
    /// `prevHash` and its `hash` (SHA-256, or HMAC-SHA256 under `key`). For sinks that store the chain themselves
    /// (a database): the append must read `prev` and write the result under one lock.
    ///
    /// # Errors
    ///
    /// [`AuditError::InvalidEvent`] for an event that cannot be a record (an `allowed` outcome with a code, a
    /// refusal without one, a timestamp outside the years 0000–9999, a log already at `u64::MAX` records).
    pub fn next_after(
        prev: Option<&AuditRecord>,
        event: &AuditEvent,
        key: Option<&AuditKey>,
    ) -> Result<AuditRecord, AuditError> {
        prev.map_or_else(ChainHead::genesis, ChainHead::of).seal(event, key)
    }

    /// Reads one stored line (without its `\n`): it must be a record written byte for byte as
    /// [`AuditRecord::to_line`] writes it. The hash is not checked here; [`verify`](crate::verify) does that.
    ///
    /// # Errors
    ///
    /// What is wrong with the line, for people.
    pub fn from_line(line: &[u8]) -> Result<AuditRecord, String> {
        parse_line(line).map_err(|problem| problem.to_string())
    }

    /// The 1-based position of the record in its log.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// When the call was made, in UTC with millisecond precision.
    pub fn timestamp(&self) -> OffsetDateTime {
        self.timestamp
    }

    /// The acting role, as given.
    pub fn actor(&self) -> &str {
        &self.actor
    }

    /// The operation.
    pub fn operation(&self) -> AuditOperation {
        self.operation
    }

    /// What the caller called; `None` in records written before doors were recorded.
    pub fn door(&self) -> Option<Door> {
        self.door
    }

    /// The door, or for a record written before doors were recorded, the door its operation names.
    pub fn door_or_operation(&self) -> Door {
        self.door.unwrap_or_else(|| Door::from(self.operation))
    }

    /// The grants an `agent-*` command changed; `None` in every other record.
    pub fn grant(&self) -> Option<&[String]> {
        self.grant.as_deref()
    }

    /// The entries the call returned, as `"<id>@<version>"`, in the order returned; empty when it returned none.
    pub fn shown(&self) -> &[String] {
        &self.shown
    }

    /// The ID or prefix exactly as given (`""` for a search without prefix).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How the call ended at the gate.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The deny or error code; `None` when allowed.
    pub fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    /// The ID of the bearer token the call came with, in records written by the HTTP server; `None` elsewhere.
    pub fn via(&self) -> Option<&str> {
        self.via.as_deref()
    }

    /// The previous record's hash, or [`GENESIS_HASH`] for the first record.
    pub fn prev_hash(&self) -> &str {
        &self.prev_hash
    }

    /// The `seq` and `hash` of the record this one follows: `seq` − 1 and its `prevHash`, and nothing (0 and
    /// [`GENESIS_HASH`]) for the record with `seq` 1. For the first record of an archived log, where the log
    /// continues from.
    pub fn follows(&self) -> (u64, &str) {
        match self.seq {
            1 => (0, GENESIS_HASH),
            seq => (seq - 1, &self.prev_hash),
        }
    }

    /// This record's hash (or HMAC), as 64 lowercase hex digits.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The record as one line of the log: compact JSON in the canonical field order, ending in `\n`.
    pub fn to_line(&self) -> String {
        let mut line = self.unsigned_json();
        line.pop(); // the closing brace; the hash goes before it
        line.push_str(",\"hash\":");
        push_json_str(&mut line, &self.hash);
        line.push_str("}\n");
        line
    }

    /// The compact JSON of the record without `hash`: what the hash covers, after `prevHash` and `"\n"`.
    fn unsigned_json(&self) -> String {
        let via = self.via.as_ref().map_or(0, |via| via.len() + 9);
        let listed = |list: &[String]| list.iter().map(|s| s.len() + 3).sum::<usize>() + 12;
        let receipts = self.grant.as_deref().map_or(0, listed) + listed(&self.shown);
        let mut out = String::with_capacity(224 + self.actor.len() + self.id.len() + via + receipts);
        out.push_str("{\"seq\":");
        out.push_str(&self.seq.to_string());
        out.push_str(",\"timestamp\":\"");
        out.push_str(&format_timestamp(self.timestamp));
        out.push_str("\",\"actor\":");
        push_json_str(&mut out, &self.actor);
        out.push_str(",\"operation\":\"");
        out.push_str(self.operation.as_str());
        if let Some(door) = self.door {
            out.push_str("\",\"door\":\"");
            out.push_str(door.as_str());
        }
        out.push_str("\",\"id\":");
        push_json_str(&mut out, &self.id);
        out.push_str(",\"outcome\":\"");
        out.push_str(self.outcome.as_str());
        out.push_str("\",\"code\":");
        match &self.code {
            Some(code) => push_json_str(&mut out, code),
            None => out.push_str("null"),
        }
        if let Some(grant) = &self.grant {
            out.push_str(",\"grant\":");
            push_json_list(&mut out, grant);
        }
        if !self.shown.is_empty() {
            out.push_str(",\"shown\":");
            push_json_list(&mut out, &self.shown);
        }
        if let Some(via) = &self.via {
            out.push_str(",\"via\":");
            push_json_str(&mut out, via);
        }
        out.push_str(",\"prevHash\":");
        push_json_str(&mut out, &self.prev_hash);
        out.push('}');
        out
    }

    /// The hash this record should carry, given its other fields and the key.
    pub(crate) fn expected_hash(&self, key: Option<&AuditKey>) -> String {
        chain_hash(&self.prev_hash, &self.unsigned_json(), key)
    }
}

/// The bytes a canonical line ends with after its unsigned JSON: `,"hash":"`, 64 hex digits, `"}`.
const HASH_SUFFIX_BYTES: usize = 9 + 64 + 2;

/// The hash a record read as `line` (without its `\n`) should carry, computed over the line's own bytes: its
/// unsigned JSON is everything before the final `,"hash":"…"` and a closing `}`. Only for a line already known to
/// be canonical ([`parse_line`]), where those bytes are exactly what [`AuditRecord::unsigned_json`] would write, so
/// the walk of a long log encodes each record once (for the canonical check) instead of twice.
pub(crate) fn line_hash(prev_hash: &str, line: &[u8], key: Option<&AuditKey>) -> Option<String> {
    let unsigned = line.get(..line.len().checked_sub(HASH_SUFFIX_BYTES)?)?;
    if !line[unsigned.len()..].starts_with(b",\"hash\":\"") {
        return None;
    }
    let mut input = Vec::with_capacity(unsigned.len() + 1);
    input.extend_from_slice(unsigned);
    input.push(b'}');
    Some(chain_hash_bytes(prev_hash, &input, key))
}

/// `prevHash + "\n" + unsigned JSON`, hashed with SHA-256 or, with a key, HMAC-SHA256; lowercase hex.
fn chain_hash(prev_hash: &str, unsigned_json: &str, key: Option<&AuditKey>) -> String {
    chain_hash_bytes(prev_hash, unsigned_json.as_bytes(), key)
}

fn chain_hash_bytes(prev_hash: &str, unsigned_json: &[u8], key: Option<&AuditKey>) -> String {
    match key {
        None => {
            let mut hasher = Sha256::new();
            hasher.update(prev_hash.as_bytes());
            hasher.update(b"\n");
            hasher.update(unsigned_json);
            to_hex(&hasher.finalize())
        }
        Some(key) => {
            let mut mac = key.mac();
            mac.update(prev_hash.as_bytes());
            mac.update(b"\n");
            mac.update(unsigned_json);
            to_hex(&mac.finalize().into_bytes())
        }
    }
}

fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// Writes `s` as a JSON string exactly as `serde_json` does: `"` and `\` escaped, `\b \f \n \r \t` as short
/// escapes, every other character below U+0020 as `\u00xx` (lowercase hex), everything else (U+007F and all
/// non-ASCII included) as raw UTF-8.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0'..='\u{1f}' => {
                let b = c as u8;
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a list of strings as a compact JSON array.
fn push_json_list(out: &mut String, list: &[String]) {
    out.push('[');
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, s);
    }
    out.push(']');
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`. Only called on UTC times with a year in 0000–9999 (checked on the way in).
pub(crate) fn format_timestamp(t: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

fn serialize_timestamp<S: Serializer>(t: &OffsetDateTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_timestamp(*t))
}

/// Parses exactly the canonical form `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn parse_timestamp(s: &str) -> Result<OffsetDateTime, String> {
    let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    let invalid = || format!("timestamp `{}` is not RFC 3339 UTC with milliseconds", memory_id::shown(s));
    let t = PrimitiveDateTime::parse(s, format).map_err(|_| invalid())?.assume_utc();
    if format_timestamp(t) != s {
        return Err(invalid());
    }
    Ok(t)
}

/// The event's time in UTC, truncated to milliseconds, if it can be written in the canonical form.
fn normalize_timestamp(t: OffsetDateTime) -> Result<OffsetDateTime, AuditError> {
    let invalid = || AuditError::InvalidEvent {
        detail: format!("timestamp `{t}` is outside the years 0000-9999 in UTC"),
    };
    let utc = t.checked_to_offset(UtcOffset::UTC).ok_or_else(invalid)?;
    if !(0..=9999).contains(&utc.year()) {
        return Err(invalid());
    }
    let nanos = utc.nanosecond();
    utc.replace_nanosecond(nanos - nanos % 1_000_000).map_err(|_| invalid())
}

fn check_code(outcome: Outcome, code: Option<&str>) -> Result<(), String> {
    match (outcome, code) {
        (Outcome::Allowed, Some(code)) => {
            Err(format!("outcome `allowed` must have no code, found `{}`", memory_id::shown(code)))
        }
        (Outcome::Denied | Outcome::Error, None) => Err(format!("outcome `{outcome}` must have a code")),
        _ => Ok(()),
    }
}

/// The rules of `door`, `grant` and `shown` together: `grant` exactly on the `agent-*` doors; `shown` only on an
/// `allowed` record that names its door, each entry `"<id>@<version>"`.
fn check_receipts(
    door: Option<Door>,
    outcome: Outcome,
    grant: Option<&[String]>,
    shown: &[String],
) -> Result<(), String> {
    let carries_grant = door.is_some_and(Door::carries_grant);
    match (grant.is_some(), carries_grant) {
        (true, false) => {
            let door = door.map_or_else(|| "no door".to_owned(), |door| format!("door `{door}`"));
            return Err(format!("`grant` is only for the agent-* doors, not for a record with {door}"));
        }
        (false, true) => {
            return Err(format!("a record of door `{}` must carry `grant`", door.map_or("", Door::as_str)));
        }
        _ => {}
    }
    if shown.is_empty() {
        return Ok(());
    }
    if door.is_none() {
        return Err("a record with `shown` must name its door".to_owned());
    }
    if outcome != Outcome::Allowed {
        return Err(format!("a record with outcome `{outcome}` shows nothing, but `shown` is given"));
    }
    if let Some(bad) = shown.iter().find(|entry| parse_shown_entry(entry).is_none()) {
        return Err(format!("`shown` entry `{}` is not `<id>@<version>`", memory_id::shown(bad)));
    }
    Ok(())
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Where the chain stands: the last record's `seq` and `hash` (0 and [`GENESIS_HASH`] for an empty log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainHead {
    pub(crate) seq: u64,
    pub(crate) hash: String,
}

impl ChainHead {
    pub(crate) fn genesis() -> ChainHead {
        ChainHead { seq: 0, hash: GENESIS_HASH.to_owned() }
    }

    pub(crate) fn of(record: &AuditRecord) -> ChainHead {
        ChainHead { seq: record.seq, hash: record.hash.clone() }
    }

    /// The record that continues the chain with `event`. The head is not moved: the caller moves it once the
    /// record is durable.
    pub(crate) fn seal(&self, event: &AuditEvent, key: Option<&AuditKey>) -> Result<AuditRecord, AuditError> {
        check_code(event.outcome, event.code.as_deref())
            .and_then(|()| check_receipts(event.door, event.outcome, event.grant.as_deref(), &event.shown))
            .map_err(|detail| AuditError::InvalidEvent { detail })?;
        let seq = self.seq.checked_add(1).ok_or_else(|| AuditError::InvalidEvent {
            detail: format!("the log already holds {} records, the most it can", self.seq),
        })?;
        let mut record = AuditRecord {
            seq,
            timestamp: normalize_timestamp(event.timestamp)?,
            actor: event.actor.clone(),
            operation: event.operation,
            door: event.door,
            id: event.id.clone(),
            outcome: event.outcome,
            code: event.code.clone(),
            grant: event.grant.clone(),
            shown: event.shown.clone(),
            via: event.via.clone(),
            prev_hash: self.hash.clone(),
            hash: String::new(),
        };
        let unsigned = record.unsigned_json();
        // The line (without its `\n`) is the unsigned JSON with `,"hash":"<64 digits>"` (74 bytes) before its `}`.
        let line = unsigned.len() + 74;
        if line > MAX_LINE_BYTES {
            return Err(AuditError::InvalidEvent {
                detail: format!(
                    "the record would be a line of {line} bytes, more than the {MAX_LINE_BYTES} a line may hold"
                ),
            });
        }
        record.hash = chain_hash(&record.prev_hash, &unsigned, key);
        Ok(record)
    }
}

/// The wire shape, checked field by field on the way into an [`AuditRecord`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRecord {
    seq: u64,
    timestamp: String,
    actor: String,
    operation: AuditOperation,
    #[serde(default)]
    door: Option<Door>,
    id: String,
    outcome: Outcome,
    code: Option<String>,
    #[serde(default)]
    grant: Option<Vec<String>>,
    #[serde(default)]
    shown: Vec<String>,
    #[serde(default)]
    via: Option<String>,
    prev_hash: String,
    hash: String,
}

impl TryFrom<RawRecord> for AuditRecord {
    type Error = String;

    fn try_from(raw: RawRecord) -> Result<AuditRecord, String> {
        if raw.seq == 0 {
            return Err("`seq` must be at least 1".to_owned());
        }
        let timestamp = parse_timestamp(&raw.timestamp)?;
        check_code(raw.outcome, raw.code.as_deref())?;
        check_receipts(raw.door, raw.outcome, raw.grant.as_deref(), &raw.shown)?;
        for (name, value) in [("prevHash", &raw.prev_hash), ("hash", &raw.hash)] {
            if !is_hash(value) {
                return Err(format!("`{name}` is not 64 lowercase hex digits"));
            }
        }
        Ok(AuditRecord {
            seq: raw.seq,
            timestamp,
            actor: raw.actor,
            operation: raw.operation,
            door: raw.door,
            id: raw.id,
            outcome: raw.outcome,
            code: raw.code,
            grant: raw.grant,
            shown: raw.shown,
            via: raw.via,
            prev_hash: raw.prev_hash,
            hash: raw.hash,
        })
    }
}

/// Why one line (without its `\n`) is not a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineProblem {
    /// Not JSON, or not a record of the right shape.
    Malformed(String),
    /// A record, but not written byte for byte as [`AuditRecord::to_line`] would write it.
    NonCanonical,
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineProblem::Malformed(detail) => f.write_str(detail),
            LineProblem::NonCanonical => f.write_str("the record is not written in canonical form"),
        }
    }
}

/// The `seq` a line says it has, read from its start (`{"seq":` and the digits) without parsing the rest; `None`
/// when it does not start so.
pub(crate) fn seq_of_line(line: &[u8]) -> Option<u64> {
    let rest = line.strip_prefix(b"{\"seq\":")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// Parses one line of the log, given without its final `\n`, and checks that it is in canonical form.
pub(crate) fn parse_line(line: &[u8]) -> Result<AuditRecord, LineProblem> {
    let record: AuditRecord =
        serde_json::from_slice(line).map_err(|e| LineProblem::Malformed(e.to_string()))?;
    let canonical = record.to_line();
    if canonical.as_bytes().strip_suffix(b"\n") != Some(line) {
        return Err(LineProblem::NonCanonical);
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn event(timestamp: OffsetDateTime, outcome: Outcome, code: Option<&str>) -> AuditEvent {
        AuditEvent {
            timestamp,
            actor: "worker".to_owned(),
            operation: AuditOperation::Get,
            door: None,
            id: "shared:x".to_owned(),
            outcome,
            code: code.map(str::to_owned),
            grant: None,
            shown: Vec::new(),
            via: None,
        }
    }

    /// The hash the walk computes over a canonical line's own bytes is the one its record's encoding gives, with and
    /// without a key, for records with every optional field.
    #[test]
    fn a_lines_own_bytes_hash_as_its_record_does() {
        let t = datetime!(2026-11-29 22:33:13.123 UTC);
        let key = AuditKey::from_bytes(b"a key of at least sixteen bytes!").unwrap();
        let mut receipt = event(t, Outcome::Allowed, None);
        receipt.door = Some(Door::Search);
        receipt.shown = vec!["shared:x@1".to_owned(), "shared:\"quoted\"@2".to_owned()];
        receipt.via = Some("tok_1".to_owned());
        let mut grant = event(t, Outcome::Allowed, None);
        grant.operation = AuditOperation::AgentGrant;
        grant.door = Some(Door::AgentGrant);
        grant.grant = Some(vec!["read:shared".to_owned()]);
        for key in [None, Some(&key)] {
            for event in
                [event(t, Outcome::Denied, Some("MEMORY_NOT_GRANTED")), receipt.clone(), grant.clone()]
            {
                let record = ChainHead::genesis().seal(&event, key).unwrap();
                let line = record.to_line();
                let bytes = line.as_bytes().strip_suffix(b"\n").unwrap();
                assert_eq!(line_hash(record.prev_hash(), bytes, key).as_deref(), Some(record.hash()));
                assert_eq!(record.expected_hash(key), record.hash());
            }
        }
        assert_eq!(line_hash(GENESIS_HASH, b"{}", None), None, "too short to hold a hash");
    }

    #[test]
    fn timestamps_are_utc_and_truncated_to_milliseconds() {
        let t = datetime!(2026-11-29 23:33:13.123_999_999 +01:00);
        let record = ChainHead::genesis().seal(&event(t, Outcome::Allowed, None), None).unwrap();
        assert_eq!(format_timestamp(record.timestamp()), "2026-11-29T22:33:13.123Z");
        assert_eq!(record.timestamp(), datetime!(2026-11-29 22:33:13.123 UTC));
    }

    #[test]
    fn years_outside_four_digits_are_refused() {
        for t in [datetime!(-0001-01-01 0:00 UTC), datetime!(0000-01-01 0:30 +01:00)] {
            let err = ChainHead::genesis().seal(&event(t, Outcome::Allowed, None), None).unwrap_err();
            assert!(matches!(err, AuditError::InvalidEvent { .. }), "{err}");
        }
        let ok = ChainHead::genesis()
            .seal(&event(datetime!(9999-12-31 23:59:59.999 UTC), Outcome::Allowed, None), None);
        assert_eq!(format_timestamp(ok.unwrap().timestamp()), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn code_must_match_outcome() {
        let t = datetime!(2026-01-01 0:00 UTC);
        for (outcome, code) in
            [(Outcome::Allowed, Some("X")), (Outcome::Denied, None), (Outcome::Error, None)]
        {
            let err = ChainHead::genesis().seal(&event(t, outcome, code), None).unwrap_err();
            assert!(matches!(err, AuditError::InvalidEvent { .. }), "{err}");
        }
    }

    #[test]
    fn timestamp_parsing_accepts_only_the_canonical_form() {
        assert!(parse_timestamp("2026-11-29T22:33:13.123Z").is_ok());
        for bad in [
            "2026-11-29T22:33:13Z",
            "2026-11-29T22:33:13.1230Z",
            "2026-11-29T22:33:13.123+00:00",
            "2026-11-29t22:33:13.123z",
            "2026-11-29T22:33:60.000Z",
            "+2026-11-29T22:33:13.123Z",
            "-0001-11-29T22:33:13.123Z",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn line_and_unsigned_json_agree() {
        let record = ChainHead::genesis()
            .seal(&event(datetime!(2026-01-01 0:00 UTC), Outcome::Allowed, None), None)
            .unwrap();
        let line = record.to_line();
        let unsigned = record.unsigned_json();
        assert_eq!(line, format!("{},\"hash\":\"{}\"}}\n", &unsigned[..unsigned.len() - 1], record.hash()));
        assert_eq!(parse_line(line.trim_end().as_bytes()), Ok(record));
    }
}
