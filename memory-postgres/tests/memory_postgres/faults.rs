//! Faults: the server stopped mid-run and started again (clean errors, never a hang, nothing partial, the next call
//! succeeds, the chain verifies), and a client killed with `kill -9` inside a transaction (nothing partial, its
//! locks freed).

use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memory_audit::{AuditEvent, AuditOperation, AuditSink, Outcome, VerifyReport};
use memory_entry::{NewEntry, StorageErrorKind, StoreError, Timestamp};
use memory_id::MemoryPrefix;
use memory_postgres::{PostgresAuditSink, PostgresStore, init};
use memory_store::{Batch, Listing, MemoryStore, OnExisting};
use testkit::pg::{StopMode, private_cluster, quote_ident, test_database, with_dbname};

use crate::{id, spawn_child};

const BATCH: usize = 3;

fn event(n: u64) -> AuditEvent {
    AuditEvent {
        timestamp: time::OffsetDateTime::now_utc(),
        actor: "writer".into(),
        operation: AuditOperation::Create,
        door: None,
        id: format!("project:b:{n}"),
        outcome: Outcome::Allowed,
        code: None,
        grant: None,
        shown: Vec::new(),
        via: None,
    }
}

/// One audited batch of [`BATCH`] creates, `project:<project>:<n>:<i>`.
fn audited_batch(
    store: &PostgresStore,
    sink: &PostgresAuditSink,
    project: &str,
    n: u64,
) -> Result<(), String> {
    sink.record(&event(n)).map_err(|e| format!("audit: {e}"))?;
    let entries =
        (0..BATCH).map(|i| NewEntry::new(id(&format!("project:{project}:{n}:{i}")), format!("{n}/{i}")));
    store
        .write_batch(&Batch::new(entries.collect(), OnExisting::Fail), None, Timestamp::now())
        .map(drop)
        .map_err(|e| match &e {
            StoreError::Storage(storage) if storage.kind() == StorageErrorKind::Backend => {
                format!("store: {e}")
            }
            other => panic!("a failure that is not a clean backend error: {other:?}"),
        })
}

/// Every batch is whole or absent.
fn assert_no_partial_batch(store: &PostgresStore, project: &str) -> usize {
    let listing =
        Listing::new(vec![MemoryPrefix::parse(&format!("project:{project}")).unwrap()], Timestamp::now());
    let mut per_batch = std::collections::BTreeMap::<String, usize>::new();
    for scored in store.list(&listing).unwrap() {
        let batch = scored.entry.id.as_str().rsplit_once(':').unwrap().0.to_owned();
        *per_batch.entry(batch).or_default() += 1;
    }
    for (batch, count) in &per_batch {
        assert_eq!(*count, BATCH, "batch {batch} is partial");
    }
    per_batch.len()
}

#[test]
fn a_server_stopped_mid_run_gives_clean_errors_then_the_next_call_succeeds() {
    // Commits must survive the server's crash (the shared test cluster trades that for speed).
    let Some(mut cluster) = private_cluster(&["synchronous_commit = on"]) else { return };
    let mut admin = testkit::pg::parse_config(cluster.url()).unwrap().connect(postgres::NoTls).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {}", quote_ident("alp"))).unwrap();
    drop(admin);
    let url = with_dbname(cluster.url(), "alp");
    init(&url).unwrap();
    let store = PostgresStore::open(&url).unwrap();
    let sink = store.audit_sink(None);

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, sink, stop) = (store.clone(), sink.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let (mut ok, mut errors, mut slowest) = (0u64, Vec::new(), Duration::ZERO);
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let started = Instant::now();
                match audited_batch(&store, &sink, "b", n) {
                    Ok(()) => ok += 1,
                    Err(e) => errors.push(e),
                }
                slowest = slowest.max(started.elapsed());
                std::thread::sleep(Duration::from_millis(5));
            }
            (ok, errors, slowest)
        })
    };
    std::thread::sleep(Duration::from_millis(400));
    cluster.stop(StopMode::Immediate).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    stop.store(true, Ordering::SeqCst);
    let (ok, errors, slowest) = writer.join().unwrap();
    eprintln!(
        "before and during the stop: {ok} batches, {} clean errors, slowest call {slowest:?}",
        errors.len()
    );
    assert!(ok > 0 && !errors.is_empty(), "ok {ok}, errors {errors:?}");
    assert!(slowest < Duration::from_secs(20), "a call hung for {slowest:?}");
    for error in &errors {
        assert!(error.contains(store.url()), "the error names the database: {error}");
        assert!(!error.contains('\n'), "one line: {error}");
    }
    // While down: clean errors, at once.
    assert!(matches!(store.get(&id("project:b:1:0"), Timestamp::now()), Err(StoreError::Storage(_))));
    assert!(sink.record(&event(0)).is_err());
    assert!(sink.check_ready().is_err());

    cluster.restart().unwrap();
    // The first call after the restart succeeds: the pool drops the connections the server closed.
    assert_eq!(store.get(&id("project:b:1:0"), Timestamp::now()).unwrap().content, "1/0");
    sink.check_ready().unwrap();
    audited_batch(&store, &sink, "b", 1_000_000).unwrap();
    let batches = assert_no_partial_batch(&store, "b");
    // Every acknowledged batch is there (and perhaps one whose acknowledgement the stop cut off), plus the last.
    assert!(batches as u64 > ok, "{batches} whole batches, {ok} acknowledged before the stop");
    let VerifyReport::Ok { records, .. } = sink.verify(None).unwrap() else { panic!("the chain broke") };
    assert!(records > ok, "{records} records, {ok} acknowledged batches");
}

#[test]
fn a_client_killed_inside_a_transaction_leaves_nothing_partial_and_no_lock() {
    let Some(db) = test_database() else { return };
    init(db.url()).unwrap();
    let store = PostgresStore::open(db.url()).unwrap();

    // A writer killed at some instant of its stream of batches.
    let mut child = spawn_child("batch_writer", &[("ALP_PG_TEST_URL", db.url().to_owned())]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut committed = 0;
    while committed < 20 {
        let line = lines.next().expect("the writer ended early").unwrap();
        committed += usize::from(line.starts_with("RESULT committed"));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let batches = assert_no_partial_batch(&store, "k");
    assert!(batches >= 20, "{batches}");

    // A client holding the scope-root lock and an uncommitted row, killed.
    let mut child = spawn_child("lock_holder", &[("ALP_PG_TEST_URL", db.url().to_owned())]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while lines.next().expect("the lock holder ended early").unwrap() != "RESULT holding" {}
    child.kill().unwrap();
    child.wait().unwrap();
    store.create(NewEntry::new(id("shared:after"), "x"), Timestamp::now()).unwrap();
    assert!(matches!(store.get(&id("shared:partial"), Timestamp::now()), Err(StoreError::NotFound { .. })));
}

/// Writes audited-free batches of [`BATCH`] creates until killed, printing each commit.
pub(crate) fn batch_writer_child() {
    let store = PostgresStore::open(&std::env::var("ALP_PG_TEST_URL").unwrap()).unwrap();
    for n in 0.. {
        let entries = (0..BATCH).map(|i| NewEntry::new(id(&format!("project:k:{n}:{i}")), "x")).collect();
        store.write_batch(&Batch::new(entries, OnExisting::Fail), None, Timestamp::now()).unwrap();
        println!("RESULT committed {n}");
    }
}

/// Holds the scope-root lock of `shared` and an uncommitted row until killed.
pub(crate) fn lock_holder_child() {
    let mut client = testkit::pg::parse_config(&std::env::var("ALP_PG_TEST_URL").unwrap())
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    let mut tx = client.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&crate::open::scope_key("shared")]).unwrap();
    tx.execute(
        "INSERT INTO alp_memories (id, scope_root, version, created_at, updated_at, kind, importance, content, \
         folded) VALUES ('shared:partial', 'shared', 1, 0, 0, 'reference', 'medium', 'x', 'x')",
        &[],
    )
    .unwrap();
    println!("RESULT holding");
    std::thread::sleep(Duration::from_secs(600));
}
