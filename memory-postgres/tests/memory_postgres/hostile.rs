//! Hostile IDs and content: quotes, pattern characters, backslashes, Vietnamese, values at the length limit. They
//! round-trip byte for byte, never act as SQL or as patterns, and list and search as the reference store does.

use memory_entry::{NewEntry, Patch};
use memory_id::MemoryPrefix;
use memory_postgres::Settings;
use memory_store::{InMemoryStore, Listing, MemoryStore, Scored};

use crate::{at, id};

const IDS: &[&str] = &[
    "shared:it's",
    "shared:\"quoted\"",
    "shared:100%",
    "shared:%",
    "shared:_",
    "shared:a_b",
    "shared:aXb",
    "shared:tiếng-việt:ghi-chú",
    "shared:x';DROP TABLE alp_memories;--",
    "project:a_b:goals",
    "project:a_b:goals:deeper",
    "project:aXb:goals",
    "project:a%b:goals",
    "project:ab:goals",
    "private:wörker:nhật-ký",
];

fn contents() -> Vec<String> {
    vec![
        "it's a 'quoted' \"string\"".to_owned(),
        "100% of snake_case and c:\\temp\\new".to_owned(),
        "'); DROP TABLE alp_memories; --".to_owned(),
        "Tiếng Việt có dấu: Nguyễn, Đặng, Ưu tiên".to_owned(),
        "Tie\u{0302}\u{0301}ng Vie\u{0323}\u{0302}t (NFD)".to_owned(),
        "\\%_\\_%\\".to_owned(),
        "ệ".repeat(2000),
        "x".repeat(1999) + "'",
        "line\r\nwith\ttabs\u{1}and controls\u{7f}".to_owned(),
    ]
}

fn ids(scored: &[Scored]) -> Vec<&str> {
    scored.iter().map(|s| s.entry.id.as_str()).collect()
}

#[test]
fn hostile_ids_and_content_round_trip_byte_for_byte() {
    let Some((store, _db)) = crate::fresh_store(&Settings::default()) else { return };
    let contents = contents();
    for (n, text) in IDS.iter().enumerate() {
        let content = &contents[n % contents.len()];
        let created = store.create(NewEntry::new(id(text), content.clone()), at(0)).unwrap();
        let got = store.get(&id(text), at(1)).unwrap();
        assert_eq!(got, created, "{text}");
        assert_eq!(got.content.as_bytes(), content.as_bytes(), "{text}");
        assert_eq!(got.id.as_str().as_bytes(), text.as_bytes());
        let changed = format!("{content}\u{2028}'%_\\");
        let updated = store.update(&id(text), 1, &Patch::content_only(changed.clone()), at(2)).unwrap();
        assert_eq!(store.get(&id(text), at(3)).unwrap(), updated);
        assert_eq!(updated.content, changed);
    }
    let all = store
        .list(&Listing::new(
            vec![MemoryPrefix::parse("shared").unwrap(), prefix("project"), prefix("private")],
            at(4),
        ))
        .unwrap();
    let mut expected: Vec<&str> = IDS.to_vec();
    expected.sort_unstable();
    assert_eq!(ids(&all), expected, "every ID once, in byte order");
}

fn prefix(text: &str) -> MemoryPrefix {
    MemoryPrefix::parse(text).unwrap()
}

#[test]
fn prefixes_and_terms_are_never_patterns() {
    let Some((store, _db)) = crate::fresh_store(&Settings::default()) else { return };
    let reference = InMemoryStore::new();
    let contents = contents();
    for (n, text) in IDS.iter().enumerate() {
        let entry = NewEntry::new(id(text), contents[n % contents.len()].clone());
        store.create(entry.clone(), at(0)).unwrap();
        reference.create(entry, at(0)).unwrap();
    }
    let list = |roots: &[&str], query: &str| {
        let listing = Listing::new(roots.iter().map(|r| prefix(r)).collect(), at(1)).with_query(query);
        let found = store.list(&listing).unwrap();
        assert_eq!(found, reference.list(&listing).unwrap(), "roots {roots:?}, query {query:?}");
        found
    };
    assert_eq!(ids(&list(&["project:a_b"], "")), ["project:a_b:goals", "project:a_b:goals:deeper"]);
    assert_eq!(ids(&list(&["project:a%b"], "")), ["project:a%b:goals"]);
    assert_eq!(ids(&list(&["shared:a_b"], "")), ["shared:a_b"]);
    assert_eq!(ids(&list(&["shared:%"], "")), ["shared:%"]);
    assert_eq!(ids(&list(&["shared:_"], "")), ["shared:_"]);
    for query in [
        "100%",
        "%",
        "_",
        "\\",
        "snake_case",
        "c:\\temp",
        "'",
        "it's",
        "\"",
        "tiếng",
        "TIẾNG VIỆT",
        "a_b",
        "drop",
    ] {
        let found = list(&["shared", "project", "private"], query);
        assert!(!found.is_empty() || query == "drop", "{query:?} found nothing");
    }
    assert_eq!(ids(&list(&["shared"], "a_b")), ["shared:a_b"], "`_` is not a wildcard");
    assert!(list(&["shared"], "%%%%").is_empty(), "`%` is not a wildcard");
}
