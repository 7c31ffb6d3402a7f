//! The public interface, used the way an adopter would: open a store on a root, write, read, list.

use memory_entry::{NewEntry, Patch, StoreError, Timestamp};
use memory_id::{MemoryPrefix, parse_memory_id};
use memory_markdown::{MarkdownStore, MemoryPathMapper};
use memory_store::{Listing, MemoryStore};

#[test]
fn public_interface() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path().join("memory")).unwrap();
    let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
    let id = parse_memory_id("project:alp:goals").unwrap();

    let created = store.create(NewEntry::new(id.clone(), "Ship the store.\n"), now).unwrap();
    assert_eq!(created.version, 1);
    let path = MemoryPathMapper::new(store.root()).map(&id).unwrap();
    assert!(std::fs::read_to_string(path).unwrap().ends_with("---\nShip the store.\n"));

    let patch = Patch::content_only("Ship it.\n".to_owned());
    let updated = store.update(&id, 1, &patch, now).unwrap();
    assert!(matches!(
        store.update(&id, 1, &patch, now),
        Err(StoreError::VersionConflict { expected: 1, actual: 2, .. })
    ));

    let listing = Listing::new(vec![MemoryPrefix::parse("project:alp").unwrap()], now).with_query("ship");
    let listed = store.list(&listing).unwrap();
    assert_eq!((listed.len(), listed[0].score), (1, 1));
    assert_eq!(listed[0].entry, updated);
    store.delete(&id, 2, now).unwrap();
    assert!(matches!(store.get(&id, now), Err(StoreError::NotFound { expired: false, .. })));
}
