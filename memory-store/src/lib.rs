//! Storage for ALP memory: the entry model, the [`MemoryStore`] adapter trait, and its adapters.
//!
//! Two adapters: [`MarkdownStore`], the store on disk (one Markdown file with YAML frontmatter per entry, resolved
//! from a held root handle without following any symlink, written atomically and durably, with version checks
//! that hold across threads and processes), and [`InMemoryStore`], the reference model. [`MemoryPathMapper`] maps
//! IDs to paths on its own, and [`parse_entry_file`] / [`render_entry_file`] read and write the file format.
//!
//! A store holds no policy. The `alp-memory` service authorizes every call before it reaches a store, so changing
//! the adapter never changes permissions; most users want that crate instead of this one. This crate is for
//! projects that need the entry model, the on-disk format, or a store adapter of their own (which the adapter suite
//! in `tests/` can check).
//!
//! ```
//! use memory_id::parse_memory_id;
//! use memory_store::{InMemoryStore, MemoryStore, NewEntry, StoreError, Timestamp};
//!
//! let store = InMemoryStore::new();
//! let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
//! let id = parse_memory_id("shared:team:onboarding").unwrap();
//! let entry = store.create(NewEntry::new(id.clone(), "Read the README first."), now).unwrap();
//! assert_eq!(entry.version, 1);
//!
//! // A create never overwrites.
//! let again = store.create(NewEntry::new(id, "Something else."), now);
//! assert!(matches!(again, Err(StoreError::AlreadyExists { .. })));
//! ```

mod alp;
mod entry;
mod error;
mod frontmatter;
mod handle;
mod limits;
mod markdown;
mod path;
mod store;
mod walk;
mod yaml;

pub use alp::{
    ALP_VERSION, AlpErrorKind, AlpFile, AlpMemory, AlpParseError, AlpPosition, SkippedObject, parse_alp,
    serialize_alp,
};
pub use entry::{
    EntryFieldError, EntryPatch, ExpiryFilter, Extra, FieldLimitError, Importance, InvalidFieldError, Kind,
    ListQuery, MAX_FIELD_BYTES, MAX_SAFE_INTEGER, MAX_VERSION, MemoryEntry, MemoryType, NewEntry, Timestamp,
    Ttl, TtlUnit, validate_scope_ref, validate_text_field,
};
pub use error::{ExistsReason, StorageError, StorageErrorKind, StoreError};
pub use frontmatter::{FrontmatterStatus, ParsedEntryFile, parse_entry_file, render_entry_file};
pub use handle::Resolution;
pub use limits::{CONFIG_FILE, CONFIG_KEYS, Limits, StoreConfig};
pub use markdown::{MarkdownStore, StoreOptions};
pub use path::MemoryPathMapper;
pub use store::{InMemoryStore, MemoryStore, paths_clash};
