//! The Markdown store of ALP memory: one Markdown file with YAML frontmatter per entry under a memory root,
//! resolved from a held root handle without following any symlink, written atomically and durably, with version
//! checks that hold across threads and processes ([`MarkdownStore`]); the file format ([`parse_entry_file`],
//! [`render_entry_file`]); the ID-to-path layout ([`MemoryPathMapper`]); and `config.yaml` ([`StoreConfig`]).
//!
//! It implements [`memory_store::MemoryStore`] and passes the adapter suite of `memory-entry`. A store holds no
//! policy: the `alp-memory` service authorizes every call before it reaches a store, so most users want that
//! crate; adopt this one for the on-disk format or the race-free store alone. Linux only (it relies on `openat2`,
//! `O_PATH`, `renameat2` and `flock`).
//!
//! ```
//! use memory_entry::{NewEntry, StoreError, Timestamp};
//! use memory_store::MemoryStore;
//! use memory_id::parse_memory_id;
//! use memory_markdown::MarkdownStore;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = MarkdownStore::open(dir.path().join("memory")).unwrap();
//! let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
//! let id = parse_memory_id("shared:team:onboarding").unwrap();
//! store.create(NewEntry::new(id.clone(), "Read the README first."), now).unwrap();
//! assert!(dir.path().join("memory/shared/team/onboarding.md").is_file());
//!
//! // A create never overwrites.
//! assert!(matches!(store.create(NewEntry::new(id, "Else."), now), Err(StoreError::AlreadyExists { .. })));
//! ```
#![cfg(target_os = "linux")]

mod cache;
mod case;
mod config;
mod entry_file;
mod errors;
mod format;
mod history;
pub mod layout;
mod listing;
mod locks;
mod markdown;
mod open;
mod options;
mod path;
mod reads;
mod records;
mod render;
mod walk;
mod writes;
mod yaml;
mod yaml_lines;

pub use cache::{CacheStats, ENTRY_OVERHEAD_BYTES};
pub use config::{CONFIG_FILE, CONFIG_KEYS, ConfigError, StoreConfig};
pub use format::{FrontmatterStatus, ParsedEntryFile, parse_entry_file};
pub use layout::{AUDIT_FILE, TOKENS_DIR};
pub use markdown::MarkdownStore;
pub use memory_fs::{Opening, Resolution};
pub use open::RootOpenError;
pub use options::StoreOptions;
pub use path::MemoryPathMapper;
pub use records::{MAX_RECORD_BYTES, RecordsLock};
pub use render::render_entry_file;
