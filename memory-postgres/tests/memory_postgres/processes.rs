//! Hosts simulated as processes: 8 processes, each with its own connections, make 50 compare-and-swap increments
//! each on shared entries and race to create one ID and one (type, key). No update is lost, exactly one create of
//! each wins, and the audit chain (one record per call, as the service writes) verifies with exactly one record per
//! call.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memory_audit::{AuditEvent, AuditOperation, AuditSink, Outcome, VerifyReport};
use memory_entry::{Fields, Key, MemoryType, NewEntry, Patch, StoreError, Timestamp};
use memory_postgres::{PostgresStore, Settings};
use memory_store::MemoryStore;

use crate::{child_results, id, spawn_child};

const HOSTS: usize = 8;
const INCREMENTS: u64 = 50;
const COUNTERS: usize = 4;

#[test]
fn eight_hosts_lose_no_update_and_one_create_wins() {
    let Some((store, db)) = crate::fresh_store(&Settings::default()) else { return };
    let now = Timestamp::now();
    for n in 0..COUNTERS {
        store.create(NewEntry::new(id(&format!("shared:counter:{n}")), "0"), now).unwrap();
    }
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() + 1500;
    let children: Vec<_> = (0..HOSTS)
        .map(|host| {
            spawn_child(
                "host",
                &[
                    ("ALP_PG_TEST_URL", db.url().to_owned()),
                    ("ALP_PG_TEST_HOST", host.to_string()),
                    ("ALP_PG_TEST_START", start.to_string()),
                ],
            )
        })
        .collect();
    let (mut calls, mut id_wins, mut key_wins, mut increments) = (0u64, 0, 0, vec![0u64; COUNTERS]);
    for child in children {
        for line in child_results(child) {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["calls", n] => calls += n.parse::<u64>().unwrap(),
                ["create-id", outcome] => id_wins += usize::from(*outcome == "won"),
                ["create-key", outcome] => key_wins += usize::from(*outcome == "won"),
                ["increments", counter, n] => {
                    increments[counter.parse::<usize>().unwrap()] += n.parse::<u64>().unwrap()
                }
                other => panic!("unexpected helper output {other:?}"),
            }
        }
    }
    assert_eq!((id_wins, key_wins), (1, 1), "exactly one create of the ID and of the (type, key) wins");
    assert_eq!(increments.iter().sum::<u64>(), HOSTS as u64 * INCREMENTS);
    for (n, made) in increments.iter().enumerate() {
        let entry = store.get(&id(&format!("shared:counter:{n}")), Timestamp::now()).unwrap();
        assert_eq!(entry.content, made.to_string(), "counter {n}: no update lost");
        assert_eq!(entry.version, made + 1, "counter {n}: one version per update");
    }
    let sink = store.audit_sink(None);
    match sink.verify(None).unwrap() {
        VerifyReport::Ok { records, .. } => assert_eq!(records, calls, "one record per call"),
        broken => panic!("the chain broke: {broken:?}"),
    }
    eprintln!("{HOSTS} hosts: {calls} calls, {} increments", HOSTS as u64 * INCREMENTS);
}

/// One host: its own store and sink (its own connections). Prints `RESULT` lines for the parent.
pub(crate) fn host_child() {
    let url = std::env::var("ALP_PG_TEST_URL").unwrap();
    let host: usize = std::env::var("ALP_PG_TEST_HOST").unwrap().parse().unwrap();
    let start: u128 = std::env::var("ALP_PG_TEST_START").unwrap().parse().unwrap();
    let store = PostgresStore::open(&url).unwrap();
    let sink = store.audit_sink(None);
    let mut calls = 0u64;
    // Every call is audited first, then done, as the service does.
    let mut audited = |operation: AuditOperation, target: &str| {
        calls += 1;
        sink.record(&AuditEvent {
            timestamp: time::OffsetDateTime::now_utc(),
            actor: format!("host{host}"),
            operation,
            door: None,
            id: target.to_owned(),
            outcome: Outcome::Allowed,
            code: None,
            grant: None,
            shown: Vec::new(),
            via: None,
        })
        .unwrap();
    };
    let wait = start.saturating_sub(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis());
    std::thread::sleep(Duration::from_millis(u64::try_from(wait).unwrap()));

    audited(AuditOperation::Create, "shared:race:one");
    let created =
        store.create(NewEntry::new(id("shared:race:one"), format!("host {host}")), Timestamp::now());
    println!("RESULT create-id {}", outcome(&created));
    let keyed = NewEntry::new(id(&format!("project:race:h{host}")), "keyed").with_fields(Fields {
        memory_type: Some(MemoryType::Decision),
        key: Some(Key::parse("the-key").unwrap()),
        ..Fields::default()
    });
    audited(AuditOperation::Create, keyed.id.as_str());
    let created = store.create(keyed, Timestamp::now());
    println!("RESULT create-key {}", outcome(&created));

    let mut made = [0u64; COUNTERS];
    for n in 0..INCREMENTS as usize {
        let counter = (host + n) % COUNTERS;
        let target = id(&format!("shared:counter:{counter}"));
        loop {
            audited(AuditOperation::Get, target.as_str());
            let current = store.get(&target, Timestamp::now()).unwrap();
            let value: u64 = current.content.parse().unwrap();
            audited(AuditOperation::Update, target.as_str());
            match store.update(
                &target,
                current.version,
                &Patch::content_only((value + 1).to_string()),
                Timestamp::now(),
            ) {
                Ok(_) => break,
                Err(StoreError::VersionConflict { .. }) => {}
                Err(other) => panic!("update failed: {other}"),
            }
        }
        made[counter] += 1;
    }
    for (counter, n) in made.iter().enumerate() {
        println!("RESULT increments {counter} {n}");
    }
    println!("RESULT calls {calls}");
}

fn outcome(result: &Result<memory_entry::MemoryEntry, StoreError>) -> &'static str {
    match result {
        Ok(_) => "won",
        Err(StoreError::AlreadyExists { .. }) => "lost",
        Err(other) => panic!("create failed: {other}"),
    }
}
