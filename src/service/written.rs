//! What a write answers: writes disclose nothing a read grant would not.

use memory_entry::MemoryEntry;
use memory_id::MemoryId;

/// The answer of a write that stores content the caller may not have sent: [`update`](crate::MemoryService::update)
/// (the fields it did not change stay), [`restore`](crate::MemoryService::restore) (an old version's content) and
/// [`rename`](crate::MemoryService::rename) (the moved entry).
///
/// The service decides which one a call gets, once, from the actor it resolved for the call and the policy's read
/// decision on the written ID (no second definition read, no extra audit record): the whole entry only when the
/// actor may also *read* that ID, otherwise just its ID and new version. Every door renders this value as it is
/// (`alp --json` and the MCP tools: the entry document, or exactly `{"id","version"}`; the memory tool: a one-line
/// confirmation in either case), so no door can show a write-only role what another role wrote.
///
/// ```
/// use alp_memory::{MemoryService, StaticActors, UpdateRequest, Written, FieldInput};
/// use alp_memory::memory_audit::MemoryAuditSink;
/// use alp_memory::memory_entry::{NewEntry, Timestamp};
/// use alp_memory::memory_store::{InMemoryStore, MemoryStore};
/// use alp_memory::memory_id::parse_memory_id;
/// use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Role};
///
/// let logger = Actor::new(Role::parse("logger").unwrap()).with_write([Grant::parse("shared:log:*").unwrap()]);
/// let store = InMemoryStore::new();
/// let id = parse_memory_id("shared:log:one").unwrap();
/// store.create(NewEntry::new(id, "written by another role"), Timestamp::now()).unwrap();
/// let service = MemoryService::new(store, MemoryAuditSink::new(), GrantPolicy, StaticActors::new([logger]));
///
/// let request = UpdateRequest {
///     id: "shared:log:one".into(),
///     expected_version: 1,
///     content: None,
///     fields: FieldInput::new(),
///     clear: Vec::new(),
/// };
/// let written = service.update("logger", request).unwrap();
/// assert!(written.entry().is_none()); // logger may write here, not read
/// assert_eq!((written.id().as_str(), written.version()), ("shared:log:one", 2));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[expect(clippy::large_enum_variant, reason = "one answer per call, moved once: boxing it would buy nothing")]
pub enum Written {
    /// The actor may read the ID: the entry as it now stands.
    Entry(MemoryEntry),
    /// The actor may write the ID but not read it: only the ID and the version the write made.
    Withheld {
        /// The ID written.
        id: MemoryId,
        /// The version it is now at.
        version: u64,
    },
}

impl Written {
    /// `entry` when `readable`, else only its ID and version.
    pub(crate) fn new(entry: MemoryEntry, readable: bool) -> Written {
        if readable {
            Written::Entry(entry)
        } else {
            Written::Withheld { id: entry.id, version: entry.version }
        }
    }

    /// The ID written.
    pub fn id(&self) -> &MemoryId {
        match self {
            Written::Entry(entry) => &entry.id,
            Written::Withheld { id, .. } => id,
        }
    }

    /// The version the write made.
    pub fn version(&self) -> u64 {
        match self {
            Written::Entry(entry) => entry.version,
            Written::Withheld { version, .. } => *version,
        }
    }

    /// The entry, when the actor may read it.
    pub fn entry(&self) -> Option<&MemoryEntry> {
        match self {
            Written::Entry(entry) => Some(entry),
            Written::Withheld { .. } => None,
        }
    }

    /// The entry, when the actor may read it.
    pub fn into_entry(self) -> Option<MemoryEntry> {
        match self {
            Written::Entry(entry) => Some(entry),
            Written::Withheld { .. } => None,
        }
    }
}
