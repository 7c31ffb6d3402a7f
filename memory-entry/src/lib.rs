//! The entry model of ALP memory: what an entry is, its fields, their validation and limits, its versions, and the
//! errors a store reports.
//!
//! - **The model.** An entry is a logical ID, a version, two timestamps, the content, and seven [`Fields`]
//!   (`kind`, `type`, `key`, `importance`, `source`, `scope`, `ttl`). A field is named by a [`FieldName`] and
//!   carried by a [`FieldValue`]; creates ([`NewEntry`]), updates ([`Patch`]) and filters ([`Filter`]) are built
//!   from them, so a field is declared once. Keys, sources and scope references are validated newtypes ([`Key`],
//!   [`Source`], [`ScopeRef`]): one that exists is valid.
//! - **Versions.** Every write of an ID takes the next version ([`next_version`]); a [`Version`] is one kept version
//!   (an entry, a redacted entry, or a tombstone), bounded by [`Limits::keep_versions`].
//! - **Errors.** [`StoreError`] is what any store reports, with stable variants the service maps to its codes.
//!
//! Portable: no file system, no YAML, no platform API. The store contract (the `MemoryStore` trait, listings,
//! batches, the create rules, the in-memory store and the adapter suite) is the `memory-store` crate; most users want
//! the `alp-memory` crate (the governed service).
//!
//! ```
//! use memory_entry::{FieldName, FieldValue, Kind, NewEntry, Patch, Timestamp};
//! use memory_id::parse_memory_id;
//!
//! let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
//! let mut entry = NewEntry::new(parse_memory_id("project:alp:goals").unwrap(), "Ship governed memory.").into_entry(now);
//! assert_eq!(entry.version, 1);
//!
//! let patch = Patch::new(None, vec![FieldValue::Kind(Kind::Decision)], vec![]).unwrap();
//! patch.apply(&mut entry, now).unwrap();
//! assert_eq!((entry.version, entry.fields.kind), (2, Kind::Decision));
//!
//! // A malformed field never becomes a value.
//! assert!(FieldValue::parse(FieldName::Ttl, "soon").is_err());
//! ```

mod entry;
mod error;
mod field;
mod history;
mod limits;
mod time;

pub use entry::{EntryFieldError, Extra, FieldLimitError, Filter, MemoryEntry, NewEntry, Patch};
pub use error::{ExistsReason, StorageError, StorageErrorKind, StoreError};
pub use field::{
    FieldName, FieldValue, Fields, Importance, InvalidFieldError, Key, Kind, MAX_FIELD_BYTES, MemoryType,
    ScopeRef, Source, Ttl, TtlUnit, UniqueKey,
};
pub use history::{DEFAULT_KEEP_VERSIONS, Version, VersionMissing, next_version, versions_to_drop};
pub use limits::{LimitError, LimitValue, Limits, MAX_SAFE_INTEGER, MAX_VERSION};
pub use time::Timestamp;
