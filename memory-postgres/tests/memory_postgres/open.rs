//! Opening and initialising: no schema, a second init, a newer schema, broken settings, an unreachable server,
//! and lock waits that end within `lockTimeout` instead of hanging.

use memory_entry::{NewEntry, Patch, StorageErrorKind, StoreError, TtlUnit};
use memory_postgres::{DatabaseOpenError, PostgresStore, SCHEMA_VERSION, Settings, init, redacted};
use memory_store::MemoryStore;
use testkit::pg::test_database;

use crate::{at, id};

#[test]
fn a_database_without_the_schema_names_alp_init_and_init_runs_once() {
    let Some(db) = test_database() else { return };
    let error = PostgresStore::open(db.url()).unwrap_err();
    assert!(matches!(error, DatabaseOpenError::NoSchema { .. }), "{error:?}");
    assert!(error.to_string().contains("alp init --store"), "{error}");
    let done = init(db.url()).unwrap();
    assert_eq!(
        done.created,
        [
            "table alp_schema",
            "table alp_settings",
            "table alp_memories",
            "table alp_audit",
            "table alp_history",
            "table alp_tokens"
        ]
    );
    assert_eq!(done.url, db.url(), "no password to remove");
    let again = init(db.url()).unwrap_err();
    assert!(matches!(again, DatabaseOpenError::AlreadyInitialized { .. }), "{again:?}");
    let store = PostgresStore::open(db.url()).unwrap();
    assert_eq!(*store.settings(), Settings::default());
    assert!(store.is_empty().unwrap());
}

#[test]
fn a_newer_schema_is_refused_naming_both_versions() {
    let Some(db) = test_database() else { return };
    init(db.url()).unwrap();
    db.connect().unwrap().batch_execute("UPDATE alp_schema SET version = 7").unwrap();
    let error = PostgresStore::open(db.url()).unwrap_err();
    assert_eq!(
        error,
        DatabaseOpenError::NewerSchema { url: db.url().to_owned(), found: 7, supported: SCHEMA_VERSION }
    );
    let message = error.to_string();
    assert!(
        message.contains("version 7") && message.contains(&format!("version {SCHEMA_VERSION}")),
        "{message}"
    );
}

#[test]
fn broken_settings_name_the_key() {
    let Some(db) = test_database() else { return };
    init(db.url()).unwrap();
    let mut client = db.connect().unwrap();
    for (sql, key) in [
        ("UPDATE alp_settings SET lock_timeout = 'soon'", "lockTimeout"),
        ("UPDATE alp_settings SET lock_timeout = '10s', max_file_bytes = 1000", "limits.maxFileBytes"),
        ("UPDATE alp_settings SET max_file_bytes = 1048576, statement_timeout = '30d'", "statementTimeout"),
    ] {
        client.batch_execute(sql).unwrap();
        match PostgresStore::open(db.url()) {
            Err(DatabaseOpenError::Settings { key: found, .. }) => assert_eq!(found, key, "{sql}"),
            other => panic!("{sql}: expected a settings error, got {other:?}"),
        }
    }
    client.batch_execute("DELETE FROM alp_settings").unwrap();
    assert!(matches!(PostgresStore::open(db.url()), Err(DatabaseOpenError::Settings { .. })));
}

#[test]
fn an_unreachable_server_is_a_clean_error_without_the_password() {
    let url = "postgresql://alp:hunter2@%2Fnonexistent-alp-socket-dir/alp?connect_timeout=1";
    for error in [PostgresStore::open(url).unwrap_err(), init(url).unwrap_err()] {
        assert!(matches!(error, DatabaseOpenError::Unreachable { .. }), "{error:?}");
        let message = error.to_string();
        assert!(!message.contains("hunter2"), "{message}");
        assert!(message.contains(&redacted(url)), "{message}");
    }
    assert!(matches!(
        PostgresStore::open("postgresql://alp:hunter2@h:notaport/db"),
        Err(DatabaseOpenError::InvalidUrl { .. })
    ));
}

#[test]
fn a_held_row_lock_or_scope_lock_ends_in_a_lock_timeout_not_a_hang() {
    let settings = Settings {
        lock_timeout: memory_entry::Ttl::new(1, TtlUnit::Seconds).unwrap(),
        ..Settings::default()
    };
    let Some((store, db)) = crate::fresh_store(&settings) else { return };
    store.create(NewEntry::new(id("shared:held"), "x"), at(0)).unwrap();
    let mut other = db.connect().unwrap();
    let mut tx = other.transaction().unwrap();
    tx.execute("SELECT 1 FROM alp_memories WHERE id = 'shared:held' FOR UPDATE", &[]).unwrap();
    let updated = store.update(&id("shared:held"), 1, &Patch::content_only("y"), at(1));
    assert!(
        matches!(&updated, Err(StoreError::Storage(e)) if e.kind() == StorageErrorKind::LockTimeout),
        "{updated:?}"
    );
    // The scope-root lock, held by another writer (the key is documented: FNV-1a 64 of the namespace, NUL, root).
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&scope_key("shared")]).unwrap();
    let created = store.create(NewEntry::new(id("shared:other"), "x"), at(1));
    match &created {
        Err(StoreError::Storage(e)) => {
            assert_eq!(e.kind(), StorageErrorKind::LockTimeout);
            assert!(
                e.message().contains("scope root `shared`") && e.message().contains("lockTimeout"),
                "{e}"
            );
        }
        other => panic!("expected a lock timeout, got {other:?}"),
    }
    tx.rollback().unwrap();
    store.create(NewEntry::new(id("shared:other"), "x"), at(1)).unwrap();
    assert_eq!(
        store.get(&id("shared:held"), at(2)).unwrap().version,
        1,
        "the timed-out update wrote nothing"
    );
}

/// The advisory-lock key of a scope root, as the crate documents it.
pub(crate) fn scope_key(root: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in b"alp-memory/scope-root".iter().chain(&[0]).chain(root.as_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// The columns, constraints and indexes of the public schema, as text, sorted.
fn schema_of(db: &testkit::pg::TestDb) -> Vec<String> {
    let mut client = db.connect().unwrap();
    let mut out: Vec<String> = client
        .query(
            "SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || \
             coalesce(column_default, '') || ' ' || coalesce(collation_name, '') \
             FROM information_schema.columns WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    out.extend(
        client
            .query("SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'", &[])
            .unwrap()
            .iter()
            .map(|row| row.get::<_, String>(0)),
    );
    out.extend(
        client
            .query(
                "SELECT conrelid::regclass::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint \
                 WHERE connamespace = 'public'::regnamespace",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get::<_, String>(0)),
    );
    out.sort();
    out
}

#[test]
fn an_older_schema_is_refused_naming_migrate_and_migrate_makes_the_schema_init_makes() {
    let Some(old) = test_database() else { return };
    let Some(new) = test_database() else { return };
    for version in 1..SCHEMA_VERSION {
        let Some(db) = test_database() else { return };
        memory_postgres::init_old_schema(db.url(), version).unwrap();
        let error = PostgresStore::open(db.url()).unwrap_err();
        assert_eq!(
            error,
            DatabaseOpenError::OlderSchema {
                url: db.url().to_owned(),
                found: version,
                supported: SCHEMA_VERSION
            }
        );
        let message = error.to_string();
        assert!(
            message.contains(&format!("version {version}"))
                && message.contains(&format!("version {SCHEMA_VERSION}"))
                && message.contains("alp store migrate"),
            "{message}"
        );
        assert!(matches!(
            memory_postgres::PostgresAuditSink::open(db.url(), None),
            Err(DatabaseOpenError::OlderSchema { .. })
        ));
    }
    memory_postgres::init_old_schema(old.url(), 1).unwrap();
    assert_eq!(
        memory_postgres::migrate(old.url()).unwrap(),
        memory_postgres::Migrated { from: 1, to: SCHEMA_VERSION }
    );
    assert_eq!(
        memory_postgres::migrate(old.url()).unwrap(),
        memory_postgres::Migrated { from: SCHEMA_VERSION, to: SCHEMA_VERSION }
    );
    init(new.url()).unwrap();
    assert_eq!(schema_of(&old), schema_of(&new));
    let store = PostgresStore::open(old.url()).unwrap();
    assert_eq!(*store.settings(), Settings::default());
    // No schema at all is not something to migrate.
    let Some(empty) = test_database() else { return };
    assert!(matches!(memory_postgres::migrate(empty.url()), Err(DatabaseOpenError::NoSchema { .. })));
}
