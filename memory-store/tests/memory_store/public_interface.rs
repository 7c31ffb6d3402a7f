//! The public interface, used the way an adopter would: open a store on a root, write, read, list.

use memory_id::{MemoryPrefix, parse_memory_id};
use memory_store::{
    EntryPatch, ListQuery, MarkdownStore, MemoryPathMapper, MemoryStore, NewEntry, StoreError, Timestamp,
};

#[test]
fn public_interface() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path().join("memory")).unwrap();
    let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
    let id = parse_memory_id("project:alp:goals").unwrap();

    let created = store.create(NewEntry::new(id.clone(), "Ship the store.\n"), now).unwrap();
    assert_eq!(created.version, 1);
    let path = MemoryPathMapper::new(store.root()).check(&id).unwrap();
    assert!(std::fs::read_to_string(path).unwrap().ends_with("---\nShip the store.\n"));

    let patch = EntryPatch { content: Some("Ship it.\n".to_owned()), ..EntryPatch::default() };
    let updated = store.update(&id, 1, &patch, now).unwrap();
    assert!(matches!(
        store.update(&id, 1, &patch, now),
        Err(StoreError::VersionConflict { expected: 1, actual: 2, .. })
    ));

    let roots = [MemoryPrefix::parse("project:alp").unwrap()];
    assert_eq!(store.list(&roots, &ListQuery::default(), now).unwrap(), [updated]);
    store.delete(&id, 2, now).unwrap();
    assert!(matches!(store.get(&id, now), Err(StoreError::NotFound { expired: false, .. })));
}
