//! Client-side bounds and the protocol's limit: a backend that stops answering (SIGSTOP) fails the call within
//! statementTimeout + connectTimeout, the connection is discarded and the next call works; a peer that accepts and
//! never answers fails the open within the connect timeout; no listing, batch, copy or audit append sends more bind
//! parameters than the protocol allows, however many terms, roots, filters or rows it has.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use memory_audit::{AuditSink, MemoryAuditSink, VerifyReport};
use memory_entry::{
    FieldValue, Filter, Kind, Limits, MemoryEntry, NewEntry, StorageErrorKind, StoreError, Timestamp, Ttl,
    TtlUnit,
};
use memory_id::MemoryPrefix;
use memory_postgres::{DatabaseOpenError, PostgresAuditSink, PostgresStore, Settings, init_with};
use memory_store::{Batch, Listing, MemoryStore, OnExisting};
use testkit::pg::{Stopped, TestDb, backend_pids, test_database, with_param};

use crate::{fresh_store, id};

fn secs(n: u64) -> Ttl {
    Ttl::new(n, TtlUnit::Seconds).unwrap()
}

/// statementTimeout 2 s, connectTimeout 1 s: a stopped call must fail within 3 s (plus the test's own slack).
const STATEMENT: Duration = Duration::from_secs(2);
const BOUND: Duration = Duration::from_secs(3);
const SLACK: Duration = Duration::from_millis(1500);

/// A store on a fresh database whose settings hold small timeouts, its connections named `application`.
fn bounded_store(application: &str) -> Option<(PostgresStore, TestDb, String)> {
    let db = test_database()?;
    let settings = Settings {
        statement_timeout: secs(2),
        connect_timeout: secs(1),
        lock_timeout: secs(1),
        ..Settings::default()
    };
    init_with(db.url(), &settings).unwrap();
    let url = with_param(db.url(), "application_name", application);
    let store = PostgresStore::open(&url).unwrap();
    Some((store, db, url))
}

/// The one backend serving `application`.
fn only_backend(db: &TestDb, application: &str) -> i32 {
    let pids = backend_pids(db.url(), application).unwrap();
    assert_eq!(pids.len(), 1, "one connection is open: {pids:?}");
    pids[0]
}

fn event() -> memory_audit::AuditEvent {
    memory_audit::AuditEvent {
        timestamp: time::OffsetDateTime::now_utc(),
        actor: "worker".into(),
        operation: memory_audit::AuditOperation::Get,
        door: None,
        id: "shared:a".into(),
        outcome: memory_audit::Outcome::Allowed,
        code: None,
        grant: None,
        shown: Vec::new(),
        via: None,
    }
}

#[test]
fn a_stopped_backend_fails_the_call_within_the_bound_and_its_connection_is_never_reused() {
    let application = "alp-bounds-stopped";
    let Some((store, db, _url)) = bounded_store(application) else { return };
    let sink = store.audit_sink(None);
    store.create(NewEntry::new(id("shared:a"), "alpha"), Timestamp::now()).unwrap();
    sink.record(&event()).unwrap();

    // A store call (made after its audit record): a storage error, within the bound.
    let stopped = Stopped::new(only_backend(&db, application)).unwrap();
    let started = Instant::now();
    let error = store.get(&id("shared:a"), Timestamp::now()).unwrap_err();
    let took = started.elapsed();
    let StoreError::Storage(storage) = &error else { panic!("not a storage error: {error:?}") };
    assert_eq!(storage.kind(), StorageErrorKind::Backend, "{error}");
    assert!(took >= STATEMENT && took < BOUND + SLACK, "failed after {took:?}");
    let message = error.to_string();
    assert!(message.contains("did not answer within 2 s (statementTimeout)"), "{message}");
    assert!(message.contains(store.url()) && !message.contains('\n'), "{message}");

    // The stopped connection is discarded: the next call opens a fresh one and works while the old backend is
    // still stopped (reusing it would hang again).
    let started = Instant::now();
    assert_eq!(store.get(&id("shared:a"), Timestamp::now()).unwrap().content, "alpha");
    assert!(started.elapsed() < STATEMENT, "the next call waited {:?}", started.elapsed());

    // An audit record that cannot be written in time: an audit error (the service fails closed).
    let fresh = backend_pids(db.url(), application).unwrap();
    assert_eq!(fresh.len(), 2, "the stopped backend and a fresh one: {fresh:?}");
    let second = Stopped::new(*fresh.iter().find(|pid| **pid != stopped.pid()).unwrap()).unwrap();
    let started = Instant::now();
    let error = sink.record(&event()).unwrap_err();
    let took = started.elapsed();
    assert!(took >= STATEMENT && took < BOUND + SLACK, "failed after {took:?}");
    assert!(error.to_string().contains("did not answer within 2 s"), "{error}");

    // The server back: every call works, nothing half-written, the chain verifies.
    second.resume();
    stopped.resume();
    assert_eq!(store.get(&id("shared:a"), Timestamp::now()).unwrap().content, "alpha");
    sink.record(&event()).unwrap();
    let VerifyReport::Ok { records, .. } = sink.verify(None).unwrap() else { panic!("the chain broke") };
    assert_eq!(records, 2);
}

#[test]
fn a_backend_stopped_inside_a_transaction_fails_it_within_the_bound_and_frees_its_lock_once_back() {
    let application = "alp-bounds-tx";
    let Some((store, db, url)) = bounded_store(application) else { return };
    store.create(NewEntry::new(id("shared:a"), "alpha"), Timestamp::now()).unwrap();
    let stopped = Stopped::new(only_backend(&db, application)).unwrap();
    // A create takes the scope-root lock in a transaction: its first statement gets no answer.
    let started = Instant::now();
    let error = store.create(NewEntry::new(id("shared:b"), "beta"), Timestamp::now()).unwrap_err();
    assert!(started.elapsed() < BOUND + SLACK, "failed after {:?}", started.elapsed());
    assert!(matches!(error, StoreError::Storage(_)), "{error:?}");
    stopped.resume();
    // Another process (a fresh store) creates at once: nothing holds the lock, nothing was half-written.
    let other = PostgresStore::open(&url).unwrap();
    other.create(NewEntry::new(id("shared:b"), "beta"), Timestamp::now()).unwrap();
    assert_eq!(store.get(&id("shared:b"), Timestamp::now()).unwrap().version, 1);
}

#[test]
fn a_peer_that_accepts_and_never_answers_fails_the_open_within_the_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and keeps it open, saying nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let url = format!("postgresql://alp@127.0.0.1:{port}/alp?connect_timeout=1");
    let started = Instant::now();
    let error = PostgresStore::open(&url).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(error, DatabaseOpenError::Unreachable { .. }), "{error:?}");
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(1) + SLACK, "failed after {took:?}");
    assert!(error.to_string().contains("no answer within 1 s"), "{error}");
    let error = PostgresAuditSink::open(&url, None).unwrap_err();
    assert!(matches!(error, DatabaseOpenError::Unreachable { .. }), "{error:?}");
}

/// More than the protocol's 65,535 bind parameters if each were one.
const MANY: usize = 70_000;

fn roomy() -> Settings {
    Settings {
        limits: Limits { max_entries_per_scope_root: 10_000, ..Limits::default() },
        ..Settings::default()
    }
}

fn ids(found: &[memory_store::Scored]) -> Vec<&str> {
    found.iter().map(|scored| scored.entry.id.as_str()).collect()
}

#[test]
fn a_search_with_more_terms_than_the_protocol_has_parameters_still_answers() {
    let Some((store, _db)) = fresh_store(&Settings::default()) else { return };
    store.create(NewEntry::new(id("shared:a"), "alpha"), Timestamp::now()).unwrap();
    store.create(NewEntry::new(id("shared:b"), "omega"), Timestamp::now()).unwrap();
    store.create(NewEntry::new(id("shared:c"), "gamma"), Timestamp::now()).unwrap();
    // Terms that match nothing, then two that match: the matches lie in different chunks.
    let mut query: Vec<String> = (0..MANY).map(|n| format!("zz{n}q")).collect();
    query.insert(10, "alpha".into());
    query.push("gamma".into());
    let listing = Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], Timestamp::now())
        .with_query(&query.join(" "));
    assert_eq!(listing.terms().len(), MANY + 2);
    assert_eq!(ids(&store.list(&listing).unwrap()), ["shared:a", "shared:c"]);
}

#[test]
fn a_listing_with_more_roots_or_filter_values_than_the_protocol_has_parameters_still_answers() {
    let Some((store, _db)) = fresh_store(&Settings::default()) else { return };
    store.create(NewEntry::new(id("project:p7:a"), "x"), Timestamp::now()).unwrap();
    store.create(NewEntry::new(id("project:p69999:b"), "x"), Timestamp::now()).unwrap();
    store.create(NewEntry::new(id("shared:c"), "x"), Timestamp::now()).unwrap();
    let roots: Vec<MemoryPrefix> =
        (0..MANY).map(|n| MemoryPrefix::parse(&format!("project:p{n}")).unwrap()).collect();
    let listing = Listing::new(roots, Timestamp::now());
    assert_eq!(ids(&store.list(&listing).unwrap()), ["project:p69999:b", "project:p7:a"]);

    // The same value many times over, and a second value of one field: both checked, the SQL bounded.
    let mut values = vec![FieldValue::Kind(Kind::Reference); MANY];
    let listing = Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], Timestamp::now());
    assert_eq!(
        ids(&store.list(&listing.clone().with_filter(Filter::new(values.clone()))).unwrap()),
        ["shared:c"]
    );
    values.push(FieldValue::Kind(Kind::Fact));
    assert!(store.list(&listing.with_filter(Filter::new(values))).unwrap().is_empty());
}

/// More rows than fit in one statement of 15 parameters a row (65,535 / 15 = 4,369).
const ROWS: usize = 5_000;

#[test]
fn a_batch_and_a_copy_of_more_rows_than_one_statement_could_bind_are_written_whole() {
    let Some((store, _db)) = fresh_store(&roomy()) else { return };
    let entries: Vec<NewEntry> =
        (0..ROWS).map(|n| NewEntry::new(id(&format!("shared:n{n}")), format!("entry {n}"))).collect();
    let written = store.write_batch(&Batch::new(entries, OnExisting::Fail), None, Timestamp::now()).unwrap();
    assert_eq!(written.len(), ROWS);

    let Some((copy, _copy_db)) = fresh_store(&roomy()) else { return };
    let all: Vec<MemoryEntry> = store.all_entries().unwrap();
    assert_eq!(all.len(), ROWS);
    copy.insert_exact(&all).unwrap();
    assert_eq!(copy.all_entries().unwrap(), all);
}

#[test]
fn an_audit_append_of_more_lines_than_one_statement_could_bind_is_written_whole() {
    let Some((store, _db)) = fresh_store(&Settings::default()) else { return };
    let memory = MemoryAuditSink::new();
    for _ in 0..ROWS {
        memory.record(&event()).unwrap();
    }
    let lines: Vec<String> = memory.records().iter().map(memory_audit::AuditRecord::to_line).collect();
    let sink = store.audit_sink(None);
    assert_eq!(sink.append_lines(&lines).unwrap(), ROWS as u64);
    let VerifyReport::Ok { records, .. } = sink.verify(None).unwrap() else { panic!("the chain broke") };
    assert_eq!(records, ROWS as u64);
}
