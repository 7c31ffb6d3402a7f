//! Model-based: random entries and random listings give exactly the reference store's results (the same IDs, in
//! the same order, with the same scores), whatever the roots, filters, terms, expiry and instant.

use memory_entry::{FieldValue, Fields, Filter, Importance, Key, Kind, MemoryType, NewEntry, ScopeRef, Ttl};
use memory_id::{MemoryPrefix, parse_memory_id};
use memory_postgres::Settings;
use memory_store::{Expiry, InMemoryStore, Listing, MemoryStore};
use proptest::prelude::*;

use crate::at;

const SCOPES: &[&str] = &["shared", "project:a_b", "project:aXb", "private:w"];
const SEGMENTS: &[&str] = &["x", "x.md", "te_m", "te%m", "tiếng", "Ab", "it's", "a\"q", "ß", "Σ"];
const WORDS: &[&str] = &[
    "postgres",
    "PostgreSQL",
    "100%",
    "snake_case",
    "c:\\temp",
    "Tiếng",
    "Việt",
    "TIẾNG",
    "Tie\u{0302}\u{0301}ng",
    "straße",
    "STRASSE",
    "ΟΔΟΣ",
    "x_y",
    "%",
    "_",
    "\\",
    "migrate",
    "it's",
    "",
];
const TERMS: &[&str] = &[
    "post", "100%", "_", "%", "\\", "việt", "TIẾNG", "ß", "ss", "x.md", "a_b", "it's", "σ", "ς", "te%",
    "migrate", "q\"", "nothing",
];
const ROOTS: &[&str] =
    &["shared", "project", "project:a_b", "project:aXb", "private", "private:w", "shared:x"];

/// Roots, query, filter values, expiry, and seconds after the entries were written.
type ListingCase = (Vec<&'static str>, String, Vec<FieldValue>, Expiry, i64);

#[derive(Debug, Clone)]
struct Case {
    /// ID, content, fields, and age in seconds when written.
    entries: Vec<(String, String, Fields, i64)>,
    listings: Vec<ListingCase>,
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        0..5usize,
        0..4usize,
        prop::option::of(0..3usize),
        prop::option::of(0..2usize),
        prop::option::of(0..2usize),
        prop::option::of(0..2usize),
    )
        .prop_map(|(kind, importance, memory_type, key, scope, ttl)| Fields {
            kind: Kind::ALL[kind],
            importance: Importance::ALL[importance],
            memory_type: memory_type.map(|t| MemoryType::ALL[t]),
            key: key.map(|k| Key::parse(["k1", "k2"][k]).unwrap()),
            scope: scope.map(|s| ScopeRef::parse(["feat-x", "task-y"][s]).unwrap()),
            ttl: ttl.map(|t| Ttl::parse(["1h", "1d"][t]).unwrap()),
            source: None,
        })
}

fn filter_value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        (0..5usize).prop_map(|k| FieldValue::Kind(Kind::ALL[k])),
        (0..4usize).prop_map(|i| FieldValue::Importance(Importance::ALL[i])),
        (0..3usize).prop_map(|t| FieldValue::Type(MemoryType::ALL[t])),
        (0..2usize).prop_map(|k| FieldValue::Key(Key::parse(["k1", "k2"][k]).unwrap())),
        (0..2usize).prop_map(|s| FieldValue::Scope(ScopeRef::parse(["feat-x", "task-y"][s]).unwrap())),
        (0..2usize).prop_map(|t| FieldValue::Ttl(Ttl::parse(["1h", "1d"][t]).unwrap())),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let entry = (
        prop::sample::select(SCOPES),
        prop::collection::vec(prop::sample::select(SEGMENTS), 1..3),
        prop::collection::vec(prop::sample::select(WORDS), 0..5),
        fields(),
        prop::sample::select(&[0i64, -3000, -90_000][..]),
    )
        .prop_map(|(scope, segments, words, fields, age)| {
            (format!("{scope}:{}", segments.join(":")), words.join(" "), fields, age)
        });
    let listing = (
        prop::collection::vec(prop::sample::select(ROOTS), 0..3),
        prop::collection::vec(prop::sample::select(TERMS), 0..4),
        prop::collection::vec(filter_value(), 0..2),
        prop::sample::select(&[Expiry::Live, Expiry::Expired, Expiry::Any][..]),
        prop::sample::select(&[0i64, 7200, 200_000][..]),
    )
        .prop_map(|(roots, terms, filter, expiry, later)| (roots, terms.join(" "), filter, expiry, later));
    (prop::collection::vec(entry, 1..24), prop::collection::vec(listing, 1..8))
        .prop_map(|(entries, listings)| Case { entries, listings })
}

#[test]
fn listings_equal_the_reference_stores() {
    let Some((store, db)) = crate::fresh_store(&Settings::default()) else { return };
    let admin = std::cell::RefCell::new(db.connect().unwrap());
    let config = ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() };
    proptest!(config, |(case in case())| {
        admin.borrow_mut().batch_execute("TRUNCATE alp_memories, alp_history").unwrap();
        let reference = InMemoryStore::new();
        for (text, content, fields, age) in &case.entries {
            let Ok(id) = parse_memory_id(text) else { continue };
            let mut entry = NewEntry::new(id, content.clone()).with_fields(fields.clone());
            entry.updated_at = Some(at(*age));
            entry.created_at = Some(at(*age));
            let ours = store.create(entry.clone(), at(0));
            let theirs = reference.create(entry, at(0));
            prop_assert_eq!(ours, theirs, "create of {}", text);
        }
        for (roots, query, filter, expiry, later) in &case.listings {
            let roots = roots.iter().map(|r| MemoryPrefix::parse(r).unwrap()).collect();
            let listing = Listing::new(roots, at(*later))
                .with_query(query)
                .with_filter(Filter::new(filter.clone()))
                .with_expiry(*expiry);
            prop_assert_eq!(store.list(&listing).unwrap(), reference.list(&listing).unwrap(), "{:?}", listing);
        }
    });
}
