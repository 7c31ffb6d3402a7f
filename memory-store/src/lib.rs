//! The store contract of ALP memory: the [`MemoryStore`] trait every storage adapter implements, the requests it
//! takes as data, the rules every store applies the same way, and [`InMemoryStore`], the reference store.
//!
//! - **The boundary.** [`MemoryStore`] takes what it needs as data: an ID, a [`Listing`] (subtrees, filters, query
//!   terms, expiry, instant, a [`Cancel`] flag), a [`Batch`], a `Patch`. It holds no policy; the `alp-memory`
//!   service authorizes every call before it reaches a store.
//! - **The rules, written once.** A store finds what it holds its own way and asks these what to do with it: the
//!   create rules ([`plan`], over the store's [`ScopeView`]), the live-entry rule ([`live`], [`live_at`],
//!   [`expired_at`]), and the history rules ([`restored`], [`redactable`], [`history_newest_first`]).
//! - **The adapter suite.** With the `testkit` feature, `testkit` holds the checks every store must pass; an
//!   adapter of your own runs them with `adapter_suite!`.
//!
//! The entry model itself (entries, fields, limits, versions, errors) is the `memory-entry` crate.
//!
//! ```
//! use memory_entry::{FieldValue, Kind, NewEntry, Patch, Timestamp};
//! use memory_id::parse_memory_id;
//! use memory_store::{InMemoryStore, MemoryStore};
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
//! ```

mod cancel;
mod create;
mod history;
mod listing;
mod live;
mod memory;
mod store;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use cancel::Cancel;
pub use create::{
    Batch, BatchPlan, Existing, OnExisting, ScopeView, SkipReason, Step, check_key_free,
    check_plan_unchanged, paths_clash, plan,
};
pub use history::{history_newest_first, redactable, restored};
pub use listing::{Expiry, Listing, Order, Scored};
pub use live::{Held, expired_at, live, live_at};
pub use memory::InMemoryStore;
pub use store::MemoryStore;
