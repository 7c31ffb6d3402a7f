//! What the checks build from: IDs, instants, entries and patches, and readers of their results.

use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};

use crate::Scored;
use memory_entry::{
    ExistsReason, FieldValue, Key, Limits, MemoryEntry, MemoryType, NewEntry, Patch, ScopeRef, StoreError,
    Timestamp, Ttl, TtlUnit,
};

use super::{Make, Subject};

pub(super) fn id(text: &str) -> MemoryId {
    parse_memory_id(text).unwrap()
}

/// A fixed instant, plus `secs` seconds.
pub(super) fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_790_000_000_000 + secs * 1000).unwrap()
}

pub(super) fn fresh(make: &Make) -> Subject {
    make(Limits::default())
}

pub(super) fn new(text: &str, content: &str) -> NewEntry {
    NewEntry::new(id(text), content)
}

pub(super) fn keyed(text: &str, memory_type: MemoryType, key: &str, scope: Option<&str>) -> NewEntry {
    let mut entry = new(text, "keyed");
    entry.fields.memory_type = Some(memory_type);
    entry.fields.key = Some(Key::parse(key).unwrap());
    entry.fields.scope = scope.map(|s| ScopeRef::parse(s).unwrap());
    entry
}

pub(super) fn with_ttl(mut entry: NewEntry, hours: u64) -> NewEntry {
    entry.fields.ttl = Some(Ttl::new(hours, TtlUnit::Hours).unwrap());
    entry
}

pub(super) fn set(values: Vec<FieldValue>) -> Patch {
    Patch::new(None, values, vec![]).unwrap()
}

pub(super) fn prefix(text: &str) -> MemoryPrefix {
    MemoryPrefix::parse(text).unwrap()
}

pub(super) fn listed_ids(entries: &[Scored]) -> Vec<&str> {
    entries.iter().map(|e| e.entry.id.as_str()).collect()
}

pub(super) fn exists_reason(result: Result<MemoryEntry, StoreError>) -> (ExistsReason, String, String) {
    match result {
        Err(StoreError::AlreadyExists { id, existing, reason }) => (reason, id.into_string(), existing),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
}
