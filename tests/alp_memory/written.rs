//! "Writes disclose nothing a read grant would not": for random grants, the answer of `update`,
//! `restore` and `rename` holds the entry exactly when the actor may read the ID it wrote, and otherwise only its
//! ID and version (`{"id","version"}` as JSON), never the content another role wrote.

use alp_memory::json::written_object;
use alp_memory::memory_audit::MemoryAuditSink;
use alp_memory::memory_id::parse_memory_id;
use alp_memory::memory_policy::{
    AccessRequest, Actor, Decision, Grant, GrantPolicy, Operation, PolicyEngine, Role,
};
use alp_memory::memory_store::InMemoryStore;
use alp_memory::{CreateRequest, FieldInput, MemoryService, StaticActors, UpdateRequest, Written};
use proptest::prelude::*;

const SECRET: &str = "SECRET main wrote this";

/// The IDs main writes, and where the tester may move them.
const IDS: [&str; 4] = ["project:alp:log:one", "project:alp:log:two", "project:alp:notes:a", "shared:team:a"];
const TARGETS: [&str; 4] =
    ["project:alp:log:moved", "project:alp:notes:moved", "shared:team:moved", "shared:log:x"];

/// Grants a random definition may hold.
const GRANTS: [&str; 7] = [
    "project:alp:log:*",
    "project:alp:notes:*",
    "project:alp:*",
    "project:alp:log:one",
    "shared",
    "shared:team:*",
    "shared:log:*",
];

fn grants(picks: &[bool]) -> Vec<Grant> {
    GRANTS.iter().zip(picks).filter(|(_, on)| **on).map(|(g, _)| Grant::parse(g).unwrap()).collect()
}

fn may_read(actor: &Actor, id: &str) -> bool {
    let id = parse_memory_id(id).unwrap();
    GrantPolicy.authorize(&AccessRequest { actor, operation: Operation::Read, id: &id }) == Decision::Allow
}

/// The answer holds the entry iff `tester` may read its ID; a withheld answer is exactly `{"id","version"}` and
/// holds no content.
fn check(actor: &Actor, written: &Written) -> Result<(), TestCaseError> {
    let readable = may_read(actor, written.id().as_str());
    prop_assert_eq!(written.entry().is_some(), readable, "{:?}", written);
    let document = written_object(written);
    if readable {
        prop_assert_eq!(document["content"].as_str(), Some(SECRET));
    } else {
        let expected = serde_json::json!({ "id": written.id().as_str(), "version": written.version() });
        prop_assert_eq!(&document, &expected);
        prop_assert!(!document.to_string().contains("SECRET"));
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op {
    Update(usize),
    Restore(usize),
    Rename(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..IDS.len()).prop_map(Op::Update),
        (0..IDS.len()).prop_map(Op::Restore),
        (0..IDS.len(), 0..TARGETS.len()).prop_map(|(a, b)| Op::Rename(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_write_answers_with_the_entry_iff_the_actor_may_read_it(
        read in proptest::collection::vec(any::<bool>(), GRANTS.len()),
        write in proptest::collection::vec(any::<bool>(), GRANTS.len()),
        ops in proptest::collection::vec(op(), 1..8),
    ) {
        let main = Actor::new(Role::parse("main").unwrap())
            .with_read([Grant::parse("project:alp:*").unwrap(), Grant::parse("shared").unwrap()])
            .with_write([Grant::parse("project:alp:*").unwrap(), Grant::parse("shared:*").unwrap()]);
        let tester = Actor::new(Role::parse("tester").unwrap()).with_read(grants(&read)).with_write(grants(&write));
        let service = MemoryService::new(
            InMemoryStore::new(),
            MemoryAuditSink::new(),
            GrantPolicy,
            StaticActors::new([main, tester.clone()]),
        );
        for id in IDS {
            service
                .create("main", CreateRequest { id: id.into(), content: SECRET.into(), fields: FieldInput::new() })
                .unwrap();
        }
        for op in ops {
            let current = |id: &str| service.get("main", id).map(|e| e.version).ok();
            let result = match op {
                Op::Update(i) => current(IDS[i]).map(|v| {
                    service.update("tester", UpdateRequest {
                        id: IDS[i].into(),
                        expected_version: v,
                        content: None,
                        fields: FieldInput::new(),
                        clear: vec![],
                    })
                }),
                // Version 1 is main's secret.
                Op::Restore(i) => current(IDS[i]).map(|v| service.restore("tester", IDS[i], 1, v)),
                Op::Rename(i, j) => current(IDS[i]).map(|v| service.rename("tester", IDS[i], TARGETS[j], v)),
            };
            match result {
                Some(Ok(written)) => {
                    check(&tester, &written)?;
                }
                Some(Err(error)) => {
                    // A refusal names nothing the tester sent apart from IDs, and never the content.
                    prop_assert!(!error.to_string().contains("SECRET"));
                    prop_assert!(!alp_memory::json::error_object(&error).to_string().contains("SECRET"));
                }
                None => {}
            }
        }
    }
}

#[test]
fn a_write_only_role_gets_id_and_version_and_a_reader_the_entry() {
    let main = Actor::new(Role::parse("main").unwrap())
        .with_read([Grant::parse("project:alp:*").unwrap()])
        .with_write([Grant::parse("project:alp:*").unwrap()]);
    let logger =
        Actor::new(Role::parse("logger").unwrap()).with_write([Grant::parse("project:alp:log:*").unwrap()]);
    let service = MemoryService::new(
        InMemoryStore::new(),
        MemoryAuditSink::new(),
        GrantPolicy,
        StaticActors::new([main, logger]),
    );
    let id = "project:alp:log:one";
    service
        .create("main", CreateRequest { id: id.into(), content: SECRET.into(), fields: FieldInput::new() })
        .unwrap();
    let update = |v: u64| UpdateRequest {
        id: id.into(),
        expected_version: v,
        content: None,
        fields: FieldInput::new().with(alp_memory::memory_entry::FieldName::Importance, "high"),
        clear: vec![],
    };
    let records = service.audit().records().len();
    let written = service.update("logger", update(1)).unwrap();
    assert_eq!(written_object(&written), serde_json::json!({ "id": id, "version": 2 }));
    // One record, as for any update: deciding what to answer writes none.
    assert_eq!(service.audit().records().len(), records + 1);
    let restored = service.restore("logger", id, 1, 2).unwrap();
    assert_eq!(written_object(&restored), serde_json::json!({ "id": id, "version": 3 }));
    let renamed = service.rename("logger", id, "project:alp:log:two", 3).unwrap();
    assert_eq!(written_object(&renamed), serde_json::json!({ "id": "project:alp:log:two", "version": 1 }));
    // main may read: the whole entry.
    let read =
        service.update("main", UpdateRequest { id: "project:alp:log:two".into(), ..update(1) }).unwrap();
    assert_eq!(read.entry().map(|e| e.content.as_str()), Some(SECRET));
}

/// main reads and writes project alp; logger may only write its log and the note `project:alp:note`.
fn main_and_logger(
    clock: std::sync::Arc<std::sync::Mutex<&'static str>>,
) -> MemoryService<InMemoryStore, MemoryAuditSink, GrantPolicy, StaticActors> {
    let main = Actor::new(Role::parse("main").unwrap())
        .with_read([Grant::parse("project:alp:*").unwrap()])
        .with_write([Grant::parse("project:alp:*").unwrap()]);
    let logger = Actor::new(Role::parse("logger").unwrap())
        .with_write([Grant::parse("project:alp:log:*").unwrap(), Grant::parse("project:alp:note").unwrap()]);
    MemoryService::new(
        InMemoryStore::new(),
        MemoryAuditSink::new(),
        GrantPolicy,
        StaticActors::new([main, logger]),
    )
    .with_clock(move || crate::support::at(&clock.lock().unwrap()))
}

#[test]
fn a_prune_names_only_what_its_actor_may_read_and_counts_the_rest() {
    let clock = std::sync::Arc::new(std::sync::Mutex::new("2026-11-29T12:00:00Z"));
    let service = main_and_logger(clock.clone());
    for id in ["project:alp:log:a", "project:alp:log:b"] {
        let fields = FieldInput::new().with(alp_memory::memory_entry::FieldName::Ttl, "1h");
        service.create("main", CreateRequest { id: id.into(), content: SECRET.into(), fields }).unwrap();
    }
    *clock.lock().unwrap() = "2026-11-29T14:00:00Z";
    let records = service.audit().records().len();
    let pruned = service.prune("logger", None).unwrap();
    assert_eq!(pruned, alp_memory::Pruned { ids: vec![], withheld: 2 });
    // Both were deleted, each with its record (the operator's trail names them).
    let ids: Vec<String> = service.audit().records()[records..]
        .iter()
        .map(|r| format!("{} {}", r.operation().as_str(), r.id()))
        .collect();
    assert_eq!(ids, ["delete project:alp:log:a", "delete project:alp:log:b"]);
    assert_eq!(service.prune("main", None).unwrap(), alp_memory::Pruned::default());
}

#[test]
fn an_import_never_tells_a_write_only_role_whether_what_it_sent_is_stored() {
    let clock = std::sync::Arc::new(std::sync::Mutex::new("2026-11-29T12:00:00Z"));
    let service = main_and_logger(clock);
    let file = |value: &str| {
        format!("!alp-version: 80.0.0\n@memory\n  id: note\n  type: decision\n  key: k\n  value: {value}\n")
    };
    use alp_memory::memory_store::OnExisting;
    service.import_alp("main", "alp", &file(SECRET), OnExisting::Fail).unwrap();
    // main, who may read it, gets `unchanged` for the same file: nothing is written.
    let again = service.import_alp("main", "alp", &file(SECRET), OnExisting::Update).unwrap();
    assert_eq!((again.updated.len(), again.skipped[0].reason.as_str()), (0, "unchanged"));
    // logger, who may not, gets an update whether its guess is right or wrong: both bump the version.
    for guess in [SECRET, "a wrong guess"] {
        let report = service.import_alp("logger", "alp", &file(guess), OnExisting::Update).unwrap();
        assert_eq!(report.updated.len(), 1, "{guess}: {report:?}");
        assert!(report.skipped.is_empty(), "{guess}: {report:?}");
    }
    assert_eq!(service.get("main", "project:alp:note").unwrap().version, 3);
}
