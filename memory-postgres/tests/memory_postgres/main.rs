#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
//! Integration tests of `memory-postgres` against a real PostgreSQL: the adapter suite and the audit sink suite of
//! the workspace, hosts simulated as processes, faults (a server stopped mid-run, a client killed inside a
//! transaction), hostile IDs and content, and listings equal to the reference store's.
//!
//! Each test gets its own database on the cluster in `ALP_TEST_DATABASE_URL` (`cargo xtask test` starts one);
//! without it the tests skip with a notice (and fail under `ALP_REQUIRE_POSTGRES=1`). The fault tests start a
//! private cluster of their own, under the same rule.

mod adapter_suite;
mod audit_archive;
mod audit_suite;
mod bounds;
mod faults;
mod hostile;
mod model;
mod open;
mod processes;
mod redact;
use memory_entry::Timestamp;
use memory_id::{MemoryId, parse_memory_id};
use memory_postgres::{PostgresStore, Settings, init_with};
use testkit::pg::{TestDb, test_database};

/// Parses an ID known to be valid.
pub(crate) fn id(text: &str) -> MemoryId {
    parse_memory_id(text).unwrap()
}

/// A fixed instant, plus `secs` seconds.
pub(crate) fn at(secs: i64) -> Timestamp {
    Timestamp::from_unix_millis(1_790_000_000_000 + secs * 1000).unwrap()
}

/// A fresh database with the schema and `settings`, and a store on it; `None` when PostgreSQL tests are skipped.
pub(crate) fn fresh_store(settings: &Settings) -> Option<(PostgresStore, TestDb)> {
    let db = test_database()?;
    init_with(db.url(), settings).unwrap();
    let store = PostgresStore::open(db.url()).unwrap();
    Some((store, db))
}

/// The environment variable that turns this test binary into a helper process.
const CHILD_ROLE: &str = "ALP_PG_TEST_CHILD";

/// Starts this test binary again as a helper process running `role` (see [`child_process_entry`]) with `vars`.
pub(crate) fn spawn_child(role: &str, vars: &[(&str, String)]) -> std::process::Child {
    testkit::process::spawn_child(CHILD_ROLE, role, vars)
}

pub(crate) use testkit::process::child_results;

/// Not a test of its own: the entry point of helper processes, which do nothing unless started by
/// [`spawn_child`].
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(CHILD_ROLE) else { return };
    match role.as_str() {
        "host" => processes::host_child(),
        "batch_writer" => faults::batch_writer_child(),
        "lock_holder" => faults::lock_holder_child(),
        "archiver" => audit_archive::archiver_child(),
        other => panic!("unknown helper role `{other}`"),
    }
}
