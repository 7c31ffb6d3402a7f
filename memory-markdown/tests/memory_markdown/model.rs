//! Model-based test: random sequences of calls give the same results on the Markdown store as on the in-memory
//! store, the reference model. The IDs are chosen to collide (file/directory clashes, shared keys, a small limit).

use memory_entry::{FieldName, FieldValue, Key, Kind, Limits, MemoryType, NewEntry, Patch, Ttl, TtlUnit};
use memory_id::MemoryPrefix;
use memory_markdown::MarkdownStore;
use memory_store::{Expiry, InMemoryStore, Listing, MemoryStore};
use proptest::prelude::*;

use crate::{at, id};

const IDS: &[&str] = &[
    "shared:a",
    "shared:a.md:b",
    "shared:a.md:b.md:c",
    "shared:b",
    "project:p:x",
    "project:p:x.md:y",
    "private:r:n",
];

#[derive(Debug, Clone)]
enum Op {
    Create { which: usize, key: Option<&'static str>, ttl_hours: Option<u64> },
    Update { which: usize, version_delta: i8, key: Option<Option<&'static str>>, content: bool },
    Delete { which: usize, version_delta: i8 },
    DeleteExpired { which: usize, version_delta: i8 },
    Get { which: usize },
    List { root: &'static str, expiry: Expiry },
    Wait { hours: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    let which = 0..IDS.len();
    let key = prop::option::of(prop::sample::select(vec!["k1", "k2"]));
    let delta = prop::sample::select(vec![0i8, 0, 0, -1, 1]);
    prop_oneof![
        3 => (which.clone(), key.clone(), prop::option::of(1u64..3))
            .prop_map(|(which, key, ttl_hours)| Op::Create { which, key, ttl_hours }),
        3 => (which.clone(), delta.clone(), prop::option::of(key), any::<bool>())
            .prop_map(|(which, version_delta, key, content)| Op::Update { which, version_delta, key, content }),
        1 => (which.clone(), delta.clone()).prop_map(|(which, version_delta)| Op::Delete { which, version_delta }),
        1 => (which.clone(), delta).prop_map(|(which, version_delta)| Op::DeleteExpired { which, version_delta }),
        1 => which.prop_map(|which| Op::Get { which }),
        1 => (
            prop::sample::select(vec!["shared", "shared:a", "shared:a.md", "project", "private:r"]),
            prop::sample::select(vec![Expiry::Live, Expiry::Expired, Expiry::Any]),
        )
            .prop_map(|(root, expiry)| Op::List { root, expiry }),
        1 => (1i64..3).prop_map(|hours| Op::Wait { hours }),
    ]
}

fn version_of(store: &dyn MemoryStore, which: usize, now: memory_entry::Timestamp, delta: i8) -> u64 {
    let any = Listing::new(vec![id(IDS[which]).to_prefix()], now).with_expiry(Expiry::Any);
    let entry = store.list(&any).unwrap().into_iter().find(|e| e.entry.id.as_str() == IDS[which]);
    let version: u64 = entry.map_or(1, |e| e.entry.version);
    version.saturating_add_signed(i64::from(delta)).max(1)
}

fn run(store: &dyn MemoryStore, ops: &[Op]) -> Vec<String> {
    let mut now = at(0);
    let mut log = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        let line = match op {
            Op::Create { which, key, ttl_hours } => {
                let mut entry = NewEntry::new(id(IDS[*which]), format!("created by op {n}"));
                entry.fields.memory_type = key.map(|_| MemoryType::Knowledge);
                entry.fields.key = key.map(|k| Key::parse(k).unwrap());
                entry.fields.ttl = ttl_hours.map(|h| Ttl::new(h, TtlUnit::Hours).unwrap());
                entry.fields.kind = Kind::Fact;
                format!("{:?}", store.create(entry, now))
            }
            Op::Update { which, version_delta, key, content } => {
                let expected = version_of(store, *which, now, *version_delta);
                let (set, clear) = match key {
                    None => (vec![], vec![]),
                    Some(Some(k)) => (
                        vec![
                            FieldValue::Key(Key::parse(k).unwrap()),
                            FieldValue::Type(MemoryType::Knowledge),
                        ],
                        vec![],
                    ),
                    Some(None) => (vec![], vec![FieldName::Key, FieldName::Type]),
                };
                let patch = Patch::new(content.then(|| format!("updated by op {n}")), set, clear).unwrap();
                format!("{:?}", store.update(&id(IDS[*which]), expected, &patch, now))
            }
            Op::Delete { which, version_delta } => {
                let expected = version_of(store, *which, now, *version_delta);
                format!("{:?}", store.delete(&id(IDS[*which]), expected, now))
            }
            Op::DeleteExpired { which, version_delta } => {
                let expected = version_of(store, *which, now, *version_delta);
                format!("{:?}", store.delete_expired(&id(IDS[*which]), expected, now))
            }
            Op::Get { which } => format!("{:?}", store.get(&id(IDS[*which]), now)),
            Op::List { root, expiry } => {
                let listing =
                    Listing::new(vec![MemoryPrefix::parse(root).unwrap()], now).with_expiry(*expiry);
                format!("{:?}", store.list(&listing))
            }
            Op::Wait { hours } => {
                now =
                    memory_entry::Timestamp::from_unix_millis(now.unix_millis() + hours * 3_600_000).unwrap();
                String::from("waited")
            }
        };
        log.push(format!("{op:?} => {line}"));
    }
    log
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// 48 random sequences of up to 24 calls: the Markdown store answers exactly as the model does.
    #[test]
    fn markdown_store_matches_the_in_memory_model_48_sequences(ops in prop::collection::vec(op(), 1..24)) {
        let limits = Limits { max_entries_per_scope_root: 3, ..Limits::default() };
        let model = InMemoryStore::with_limits(limits);
        let dir = tempfile::tempdir().unwrap();
        let real = MarkdownStore::open_with_limits(dir.path(), limits).unwrap();
        let expected = run(&model, &ops);
        let actual = run(&real, &ops);
        for (e, a) in expected.iter().zip(&actual) {
            prop_assert_eq!(e, a);
        }
    }
}
