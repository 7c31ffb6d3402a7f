//! Receipts: every allowed read's record names exactly what its answer held (`shown`, `<id>@<version>` in answer
//! order), and no answer leaves the service before its record is durable. And the bound on one answer: at most
//! 1,000 entries, a listing paged with `after`.

use alp_memory::memory_audit::{AuditRecord, Door};
use alp_memory::memory_entry::{FieldName, Limits};
use alp_memory::{
    ContextRequest, CreateRequest, FieldInput, ListRequest, MAX_ANSWER_ENTRIES, MemoryError, SearchRequest,
    UpdateRequest,
};
use proptest::prelude::*;

use crate::support::Harness;

fn create(h: &Harness, id: &str, content: &str) {
    create_as(h, "main", id, content);
}

fn create_as(h: &Harness, role: &str, id: &str, content: &str) {
    let request = CreateRequest { id: id.into(), content: content.into(), fields: FieldInput::new() };
    h.service.create(role, request).unwrap();
}

fn last(h: &Harness) -> AuditRecord {
    h.records().pop().unwrap()
}

fn search(prefix: Option<&str>, query: &str) -> SearchRequest {
    SearchRequest { query: query.into(), prefix: prefix.map(Into::into), ..SearchRequest::default() }
}

fn list(prefix: Option<&str>) -> ListRequest {
    ListRequest { prefix: prefix.map(Into::into), ..ListRequest::default() }
}

#[test]
fn each_read_door_names_what_its_answer_held_in_answer_order() {
    let h = Harness::new();
    create(&h, "shared:team:db", "postgres in production");
    create(&h, "shared:team:ci", "postgres in ci, sqlite locally");
    create(&h, "project:alp:plan", "ship receipts");
    let update = UpdateRequest {
        id: "shared:team:ci".into(),
        expected_version: 1,
        content: Some("postgres in ci and in production".into()),
        fields: FieldInput::new(),
        clear: Vec::new(),
    };
    h.service.update("main", update).unwrap();

    let entry = h.service.get("worker", "shared:team:db").unwrap();
    assert_eq!(entry.version, 1);
    let record = last(&h);
    assert_eq!((record.door(), record.shown()), (Some(Door::Get), &["shared:team:db@1".to_owned()][..]));

    let found = h.service.search("worker", &search(Some("shared"), "postgres production")).unwrap();
    let answered: Vec<String> =
        found.entries.iter().map(|s| format!("{}@{}", s.entry.id, s.entry.version)).collect();
    assert_eq!(answered, ["shared:team:ci@2", "shared:team:db@1"], "rank order: both terms, newer first");
    let record = last(&h);
    assert_eq!((record.door(), record.shown()), (Some(Door::Search), &answered[..]));

    let page = h.service.list("worker", &list(None)).unwrap();
    assert_eq!(last(&h).shown(), ["project:alp:plan@1", "shared:team:ci@2", "shared:team:db@1"]);
    assert_eq!((last(&h).door(), page.entries.len(), page.more), (Some(Door::List), 3, false));

    let history = h.service.history("worker", "shared:team:ci", None).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(last(&h).shown(), ["shared:team:ci@2", "shared:team:ci@1"], "newest first");
    assert_eq!(last(&h).door(), Some(Door::History));

    h.service.get_version("worker", "shared:team:ci", 1).unwrap();
    assert_eq!((last(&h).door(), last(&h).shown()), (Some(Door::Get), &["shared:team:ci@1".to_owned()][..]));
}

#[test]
fn a_context_names_the_entries_its_text_holds_never_the_ones_it_left_out() {
    let h = Harness::new();
    create(&h, "shared:a", "alpha fits");
    create(&h, "shared:b", &"beta is far too long for the budget ".repeat(20));
    let request = ContextRequest { query: "alpha beta".into(), budget: 60, ..ContextRequest::default() };
    let context = h.service.context("worker", &request).unwrap();
    assert_eq!(context.entry_ids(), ["shared:a"]);
    assert_eq!(context.diagnostics().omitted_entry_ids(), ["shared:b"]);
    let record = last(&h);
    assert_eq!((record.door(), record.shown()), (Some(Door::Context), &["shared:a@1".to_owned()][..]));
    assert_eq!(record.operation().as_str(), "search", "a context is still a search");
}

#[test]
fn a_history_names_its_tombstones_and_an_export_every_entry_it_names() {
    let h = Harness::new();
    create(&h, "shared:gone", "soon deleted");
    h.service.delete("main", "shared:gone", 1).unwrap();
    h.service.history("main", "shared:gone", None).unwrap();
    assert_eq!(last(&h).shown(), ["shared:gone@2", "shared:gone@1"]);

    let fields = FieldInput::new().with(FieldName::Type, "decision").with(FieldName::Key, "db");
    let request = CreateRequest { id: "project:alp:db".into(), content: "postgres".into(), fields };
    h.service.create("main", request).unwrap();
    create(&h, "project:alp:notes:deep", "no type: skipped, but named");
    let report = h.service.export_alp("main", "alp").unwrap();
    assert_eq!((report.exported, report.skipped.len()), (1, 1));
    let record = last(&h);
    assert_eq!(record.door(), Some(Door::Export));
    assert_eq!(record.shown(), ["project:alp:db@1", "project:alp:notes:deep@1"]);
}

#[test]
fn writes_refusals_and_empty_answers_carry_no_receipt() {
    let h = Harness::new();
    create(&h, "shared:a", "x");
    assert!(last(&h).shown().is_empty());
    assert_eq!(last(&h).door(), Some(Door::Create));
    // Denied: recorded before anything is read, no receipt.
    let denied = h.service.get("reviewer", "shared:a").unwrap_err();
    assert_eq!(denied.code(), "MEMORY_NOT_GRANTED");
    assert!(last(&h).shown().is_empty());
    // Allowed but nothing found: the record says allowed, names nothing.
    let missing = h.service.get("worker", "shared:missing").unwrap_err();
    assert_eq!(missing.code(), "NOT_FOUND");
    assert!(last(&h).shown().is_empty());
    assert!(h.service.search("worker", &search(None, "nothing-matches-this")).unwrap().entries.is_empty());
    assert!(last(&h).shown().is_empty());
    // The log's line has no `shown` key at all, never `[]`.
    let line = last(&h).to_line();
    assert!(!line.contains("\"shown\""), "{line}");
}

#[test]
fn one_answer_holds_at_most_a_thousand_entries_and_a_listing_pages_with_after() {
    let h = Harness::with(Limits { max_entries_per_scope_root: 2_000, ..Limits::default() }, None);
    for n in 0..1_005 {
        create(&h, &format!("shared:n:{n:04}"), "note");
    }
    let first = h.service.list("worker", &list(Some("shared:n"))).unwrap();
    assert_eq!((first.entries.len(), first.more), (MAX_ANSWER_ENTRIES, true));
    assert_eq!(last(&h).shown().len(), MAX_ANSWER_ENTRIES, "the receipt names the page, not the store");
    let after = first.entries.last().unwrap().id.as_str().to_owned();
    assert_eq!(after, "shared:n:0999");
    let next = ListRequest { after: Some(after), ..list(Some("shared:n")) };
    let second = h.service.list("worker", &next).unwrap();
    let ids: Vec<&str> = second.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        (ids, second.more),
        (vec!["shared:n:1000", "shared:n:1001", "shared:n:1002", "shared:n:1003", "shared:n:1004"], false)
    );

    let all = h.service.search("worker", &search(Some("shared:n"), "note")).unwrap();
    assert_eq!((all.entries.len(), all.more), (MAX_ANSWER_ENTRIES, true));
    let twenty = SearchRequest { limit: Some(20), ..search(Some("shared:n"), "note") };
    let page = h.service.search("worker", &twenty).unwrap();
    assert_eq!((page.entries.len(), page.more), (20, true));
}

#[test]
fn a_limit_over_a_thousand_or_an_after_outside_the_listing_is_usage_and_records_nothing() {
    let h = Harness::new();
    create(&h, "shared:a", "x");
    let before = h.records().len();
    let cases: Vec<(&str, Result<(), MemoryError>)> = vec![
        (
            "search --limit 1001",
            h.service.search("worker", &SearchRequest { limit: Some(1_001), ..search(None, "") }).map(|_| ()),
        ),
        (
            "list --limit 1001",
            h.service.list("worker", &ListRequest { limit: Some(1_001), ..list(None) }).map(|_| ()),
        ),
        (
            "--after outside the prefix",
            h.service
                .list("worker", &ListRequest { after: Some("project:alp:x".into()), ..list(Some("shared")) })
                .map(|_| ()),
        ),
        (
            "--after not an ID",
            h.service.list("worker", &ListRequest { after: Some("../x".into()), ..list(None) }).map(|_| ()),
        ),
    ];
    for (what, result) in cases {
        let error = result.unwrap_err();
        assert_eq!((error.kind(), error.code()), ("UsageError", "USAGE"), "{what}: {error}");
    }
    assert_eq!(h.records().len(), before, "refused before the gate: no record");
}

/// A read the model can ask for, by one of the team's roles.
#[derive(Debug, Clone)]
enum Read {
    Get(&'static str, usize),
    Search(&'static str, Option<&'static str>),
    List(&'static str, Option<&'static str>),
    History(&'static str, usize),
    Context(&'static str, usize),
}

const ROLES: [&str; 3] = ["main", "worker", "reviewer"];
const IDS: [&str; 5] =
    ["shared:team:a", "shared:team:b", "project:alp:x", "private:main:p", "private:worker:w"];
const PREFIXES: [Option<&str>; 4] = [None, Some("shared"), Some("project:alp"), Some("private:main")];

fn read() -> impl Strategy<Value = Read> {
    let role = prop::sample::select(&ROLES[..]);
    let prefix = prop::sample::select(&PREFIXES[..]);
    prop_oneof![
        (role.clone(), 0..IDS.len()).prop_map(|(r, i)| Read::Get(r, i)),
        (role.clone(), prefix.clone()).prop_map(|(r, p)| Read::Search(r, p)),
        (role.clone(), prefix).prop_map(|(r, p)| Read::List(r, p)),
        (role.clone(), 0..IDS.len()).prop_map(|(r, i)| Read::History(r, i)),
        (role, 10..400usize).prop_map(|(r, b)| Read::Context(r, b)),
    ]
}

/// Runs `read`; what it answered, as `<id>@<version>` in answer order (`None` when it failed).
fn answer(h: &Harness, read: &Read) -> Result<Vec<String>, MemoryError> {
    let pair = |id: &dyn std::fmt::Display, version: u64| format!("{id}@{version}");
    match read {
        Read::Get(role, i) => h.service.get(role, IDS[*i]).map(|e| vec![pair(&e.id, e.version)]),
        Read::Search(role, prefix) => h
            .service
            .search(role, &search(*prefix, "note"))
            .map(|p| p.entries.iter().map(|s| pair(&s.entry.id, s.entry.version)).collect()),
        Read::List(role, prefix) => h
            .service
            .list(role, &list(*prefix))
            .map(|p| p.entries.iter().map(|e| pair(&e.id, e.version)).collect()),
        Read::History(role, i) => h
            .service
            .history(role, IDS[*i], None)
            .map(|versions| versions.iter().map(|v| pair(v.id(), v.version())).collect()),
        Read::Context(role, budget) => {
            let request =
                ContextRequest { query: "note".into(), budget: *budget, ..ContextRequest::default() };
            // The context answers IDs; each included entry's version is its current one.
            h.service.context(role, &request).map(|c| {
                c.entry_ids()
                    .iter()
                    .map(|id| {
                        let version = h
                            .service
                            .store()
                            .inner
                            .get(&id.parse().unwrap(), crate::support::at(crate::support::T0))
                            .unwrap()
                            .version;
                        pair(id, version)
                    })
                    .collect()
            })
        }
    }
}

fn seeded(fail_from: Option<usize>) -> Harness {
    seed(Harness::with(Limits::default(), fail_from))
}

fn seed(h: Harness) -> Harness {
    for (n, id) in IDS.iter().enumerate() {
        let owner = if id.starts_with("private:worker:") { "worker" } else { "main" };
        create_as(&h, owner, id, &format!("note {n} {}", "words ".repeat(n * 3)));
    }
    h.service.delete("main", "shared:team:b", 1).unwrap();
    h
}

/// For random reads by several roles, every allowed read's record names exactly what the answer held, in order; a
/// refused or failed read names nothing; each read writes exactly one record.
fn check_receipts(h: &Harness, reads: &[Read]) -> Result<(), TestCaseError> {
    for read in reads {
        let before = h.records().len();
        let answered = answer(h, read);
        let records = h.records();
        prop_assert_eq!(records.len(), before + 1, "{:?}: one record per read", read);
        let record = records.last().unwrap();
        match answered {
            Ok(shown) => {
                prop_assert_eq!(record.outcome().as_str(), "allowed");
                prop_assert_eq!(record.shown(), &shown[..], "{:?}", read);
            }
            Err(_) => prop_assert!(record.shown().is_empty(), "{:?}: {:?}", read, record.shown()),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_allowed_reads_receipt_is_exactly_its_answer(reads in prop::collection::vec(read(), 1..24)) {
        check_receipts(&seeded(None), &reads)?;
    }

    /// A sink that fails after `n` records: no read answers once its record could not be written, so no entry
    /// ever reaches a caller without a durable record naming it first.
    #[test]
    fn no_answer_leaves_without_a_durable_record(n in 6usize..20, reads in prop::collection::vec(read(), 1..24)) {
        // Seeding writes 6 records (5 creates and a delete).
        let h = seeded(Some(n));
        for read in &reads {
            let durable_before = h.records().len();
            let answered = answer(&h, read);
            let durable = h.records().len() > durable_before;
            if !durable {
                let error = answered.as_ref().unwrap_err();
                prop_assert_eq!(error.code(), "AUDIT_UNAVAILABLE", "{:?}", read);
            }
            if let Ok(shown) = &answered {
                prop_assert!(durable, "{:?} answered {:?} without a record", read, shown);
                let records = h.records();
                prop_assert_eq!(records.last().unwrap().shown(), &shown[..]);
            }
        }
    }
}

/// The same receipts over the Markdown store and over PostgreSQL (fewer cases): what a read discloses does not
/// depend on the store.
#[cfg(target_os = "linux")]
#[test]
fn receipts_are_the_answer_over_every_store() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let markdown = runner.run(&prop::collection::vec(read(), 1..24), |reads| {
        let dir = tempfile::tempdir().unwrap();
        let store = memory_markdown::MarkdownStore::open(dir.path().join("memory")).unwrap();
        check_receipts(&seed(Harness::over(Box::new(store), None)), &reads)
    });
    if let Err(failure) = markdown {
        panic!("markdown: {failure}");
    }
    if testkit::pg::test_database().is_none() {
        return; // skipped, with the notice test_database prints (a failure under ALP_REQUIRE_POSTGRES=1)
    }
    let postgres = runner.run(&prop::collection::vec(read(), 1..24), |reads| {
        let db = testkit::pg::test_database().expect("the cluster answered a moment ago");
        memory_postgres::init(db.url()).expect("the schema is created");
        let store = memory_postgres::PostgresStore::open(db.url()).expect("a fresh database opens");
        check_receipts(&seed(Harness::over(Box::new(store), None)), &reads)
    });
    if let Err(failure) = postgres {
        panic!("postgresql: {failure}");
    }
}
