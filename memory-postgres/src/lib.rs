//! ALP memory in PostgreSQL (`docs/POSTGRESQL.md`): [`PostgresStore`], a [`MemoryStore`](memory_store::MemoryStore)
//! that agents on several hosts share, and [`PostgresAuditSink`], the same hash-chained audit log in a table. The
//! service, the policy and the CLI do not change; only the store and the sink do.
//!
//! - **The same results as every store.** The create rules are `memory_entry`'s own [`plan`](memory_store::plan),
//!   run under a per-scope-root advisory lock; updates are a compare-and-swap on the version; listings fetch
//!   candidates by index (an ID range per root, the `pg_trgm` index on a column folded with the ranker's own
//!   folding) and admit and score them with the listing's own functions. It passes the adapter suite of
//!   `memory-entry` unchanged.
//! - **The same audit chain.** Each record's exact JSONL line is stored; `alp audit verify|head|show` work on it, and
//!   a log read back verifies with the JSONL verifier.
//! - **Never a hang.** The first connection is bounded by the URL's `connect_timeout` (else 5 s), later ones by the
//!   settings' `connectTimeout`; every statement by `statementTimeout`, every lock wait by `lockTimeout`. The
//!   statement bound holds on the client's side too (every round trip has a deadline; until the settings row is
//!   read, the default 30 s): a backend that stops answering or a peer that goes silent fails the call within
//!   `statementTimeout` plus `connectTimeout`, as an audit error before the call's record is written and a storage
//!   error after, and that connection is closed, never reused. A server that went away is a clean error, and the
//!   next call after it is back succeeds. Dropping a store or sink never blocks, inside an async runtime too.
//! - **Within the protocol's limits.** No statement binds more than 65,535 parameters, whatever the caller sends:
//!   every write binds one row's values; a listing's roots and query terms are sent a few thousand per statement
//!   (a larger listing is split into several statements on one snapshot, with the same result), and a statement
//!   built at run time with too many is refused before it is sent.
//! - **No password in any message.** Every error names the URL as [`redacted`] shows it.
//!
//! The schema is created once, by [`init`] (`alp init --store URL`); the database then needs only DML rights.
//! Plain connections only: TLS is not built in (use a Unix socket, a local network, or a TLS proxy); the URL's
//! `sslmode` must allow plain text. Most users want the `alp-memory` crate, which opens this store for
//! `--store postgresql://…`.
//!
//! ```no_run
//! use memory_entry::{NewEntry, Timestamp};
//! use memory_store::MemoryStore;
//! use memory_id::parse_memory_id;
//! use memory_postgres::{DatabaseOpenError, PostgresStore, init};
//!
//! let url = "postgresql://alp@%2Frun%2Fpostgresql/alp";
//! match init(url) {
//!     Ok(done) => println!("created {:?}", done.created),
//!     Err(DatabaseOpenError::AlreadyInitialized { .. }) => {} // a second init is refused
//!     Err(e) => return Err(e.into()),
//! }
//! let store = PostgresStore::open(url)?;
//! let id = parse_memory_id("project:alp:db")?;
//! store.create(NewEntry::new(id.clone(), "PostgreSQL 16, one database per team."), Timestamp::now())?;
//! assert_eq!(store.get(&id, Timestamp::now())?.version, 1);
//! // A stale writer loses, and learns it.
//! assert!(store.delete(&id, 7, Timestamp::now()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod audit;
mod db;
mod error;
mod pool;
mod row;
mod schema;
mod settings;
mod store;
mod tokens;
mod url;

pub use audit::PostgresAuditSink;
pub use error::DatabaseOpenError;
#[cfg(feature = "testkit")]
pub use schema::init_old_schema;
pub use schema::{Initialized, Migrated, SCHEMA_VERSION, TABLES, init, init_with, migrate};
pub use settings::{SETTINGS_KEYS, Settings};
pub use store::PostgresStore;
pub use tokens::{TokenNamesLock, TokenRow};
pub use url::redacted;
