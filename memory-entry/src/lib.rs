//! The portable core of ALP memory: the entry model, its validation and limits, the [`MemoryStore`] adapter trait
//! with the create rules every store applies ([`plan`]), and [`InMemoryStore`], the reference store.
//!
//! - **The model.** An entry is a logical ID, a version, two timestamps, the content, and seven [`Fields`]
//!   (`kind`, `type`, `key`, `importance`, `source`, `scope`, `ttl`). A field is named by a [`FieldName`] and
//!   carried by a [`FieldValue`]; creates ([`NewEntry`]), updates ([`Patch`]) and filters ([`Filter`]) are built
//!   from them, so a field is declared once. Keys, sources and scope references are validated newtypes ([`Key`],
//!   [`Source`], [`ScopeRef`]): one that exists is valid.
//! - **The store boundary.** [`MemoryStore`] takes what it needs as data: an ID, a [`Listing`] (subtrees, filters,
//!   query terms, expiry, instant), a [`Batch`], a [`Patch`]. It holds no policy; the `alp-memory` service
//!   authorizes every call before it reaches a store.
//! - **The adapter suite.** With the `testkit` feature, `testkit` holds the checks every store must pass; an
//!   adapter of your own runs them with `adapter_suite!`.
//!
//! Portable: no file system, no YAML, no platform API. Most users want the `alp-memory` crate (the governed
//! service); adopt this one for the entry model or to write a store.
//!
//! ```
//! use memory_entry::{FieldName, FieldValue, InMemoryStore, Kind, MemoryStore, NewEntry, Patch, Timestamp};
//! use memory_id::parse_memory_id;
//!
//! let store = InMemoryStore::new();
//! let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
//! let id = parse_memory_id("project:alp:goals").unwrap();
//! store.create(NewEntry::new(id.clone(), "Ship governed memory."), now).unwrap();
//!
//! let patch = Patch::new(None, vec![FieldValue::Kind(Kind::Decision)], vec![]).unwrap();
//! let updated = store.update(&id, 1, &patch, now).unwrap();
//! assert_eq!((updated.version, updated.fields.kind), (2, Kind::Decision));
//!
//! // A stale writer learns that it lost.
//! assert!(store.update(&id, 1, &patch, now).is_err());
//! // A malformed field never becomes a value.
//! assert!(FieldValue::parse(FieldName::Ttl, "soon").is_err());
//! ```

mod cancel;
mod entry;
mod error;
mod field;
mod history;
mod limits;
mod live;
mod memory;
mod store;
mod time;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use cancel::Cancel;
pub use entry::{EntryFieldError, Extra, FieldLimitError, Filter, MemoryEntry, NewEntry, Patch};
pub use error::{ExistsReason, StorageError, StorageErrorKind, StoreError};
pub use field::{
    FieldName, FieldValue, Fields, Importance, InvalidFieldError, Key, Kind, MAX_FIELD_BYTES, MemoryType,
    ScopeRef, Source, Ttl, TtlUnit, UniqueKey,
};
pub use history::{
    DEFAULT_KEEP_VERSIONS, Version, VersionMissing, history_newest_first, next_version, redactable, restored,
    versions_to_drop,
};
pub use limits::{LimitError, LimitValue, Limits, MAX_SAFE_INTEGER, MAX_VERSION};
pub use live::{Held, expired_at, live, live_at};
pub use memory::InMemoryStore;
pub use store::{
    Batch, BatchPlan, Existing, Expiry, Listing, MemoryStore, OnExisting, Order, ScopeView, Scored,
    SkipReason, Step, check_key_free, check_plan_unchanged, paths_clash, plan,
};
pub use time::Timestamp;
