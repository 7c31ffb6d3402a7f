//! `MemoryPathMapper`: every accepted ID maps under the root, distinct IDs map to distinct paths, and the seed's
//! three checks.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use memory_entry::{NewEntry, StorageErrorKind, StoreError};
use memory_id::{MemoryId, parse_memory_id};
use memory_markdown::{MarkdownStore, MemoryPathMapper};
use memory_store::MemoryStore;
use proptest::prelude::*;

use crate::{at, id};

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{1,6}",
        prop::sample::select(vec![
            ".hidden", "...", "x.md", ".md", "md", "a b", "é", "Team", "team", "-", "~", "$HOME", "%2e%2e",
            "..a", "a..", "x.md.md",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ]
}

fn raw_id() -> impl Strategy<Value = String> {
    (prop::sample::select(vec!["shared", "project", "private"]), prop::collection::vec(segment(), 1..5))
        .prop_map(|(scope, segments)| format!("{scope}:{}", segments.join(":")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// 2000 batches of up to 8 IDs: each accepted ID maps under the root through plain components ending in
    /// `.md`, and no two distinct IDs share a path.
    #[test]
    fn accepted_ids_map_under_the_root_and_never_share_a_path_2000_cases(raws in prop::collection::vec(raw_id(), 1..8)) {
        let mapper = MemoryPathMapper::new("/data/mem");
        let mut seen: BTreeMap<std::path::PathBuf, MemoryId> = BTreeMap::new();
        for raw in raws {
            let Ok(id) = parse_memory_id(&raw) else { continue };
            let path = mapper.map(&id).unwrap();
            prop_assert!(path.starts_with("/data/mem"));
            let rel = path.strip_prefix("/data/mem").unwrap();
            prop_assert!(rel.components().all(|c| matches!(c, Component::Normal(_))), "{rel:?}");
            prop_assert!(rel.extension().is_some_and(|e| e == "md"));
            prop_assert_eq!(rel, MemoryPathMapper::relative_path(&id));
            if let Some(other) = seen.insert(path.clone(), id.clone()) {
                prop_assert_eq!(&other, &id, "two IDs share {:?}", path);
            }
        }
    }
}

#[test]
fn layout_of_the_three_scopes() {
    let mapper = MemoryPathMapper::new("/data/mem");
    let cases = [
        ("shared:team:onboarding", "/data/mem/shared/team/onboarding.md"),
        ("project:alp:goals", "/data/mem/projects/alp/goals.md"),
        ("private:worker:notes:today", "/data/mem/private/worker/notes/today.md"),
        ("shared:x.md:y", "/data/mem/shared/x.md/y.md"),
        ("shared:.hidden", "/data/mem/shared/.hidden.md"),
    ];
    for (text, path) in cases {
        assert_eq!(mapper.map(&id(text)).unwrap(), Path::new(path), "{text}");
    }
    assert_eq!(MemoryPathMapper::scope_root_dir(&id("project:alp:goals")), Path::new("projects/alp"));
    assert!(parse_memory_id("../../.ssh/id_rsa").is_err());
    assert!(parse_memory_id("shared:../x").is_err());
}

/// The seed's three path checks, made by the store on every open (they are not offered as path checks, which race
/// with a swap between the check and the open): the path stays under the root, a parent that resolves outside is
/// refused, a target that is a symlink is refused, each with the seed's message.
#[test]
fn seed_checks_on_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let evil = dir.path().join("mem-evil");
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::create_dir_all(evil.join("loot")).unwrap();
    std::fs::write(evil.join("loot/x.md"), "outside").unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    let mapper = MemoryPathMapper::new(&root);

    // Nothing exists yet below `shared`: the mapped path is under the root, and a create puts the file there.
    assert_eq!(mapper.map(&id("shared:a:b")).unwrap(), root.join("shared/a/b.md"));
    store.create(NewEntry::new(id("shared:a:b"), "x"), at(0)).unwrap();
    assert!(root.join("shared/a/b.md").is_file());

    // A parent that resolves outside (a string-prefix sibling of the root): refused.
    std::os::unix::fs::symlink(&evil, root.join("shared/out")).unwrap();
    let StoreError::Storage(err) = store.get(&id("shared:out:loot:x"), at(0)).unwrap_err() else {
        panic!("a parent symlink was followed")
    };
    assert_eq!(err.kind(), StorageErrorKind::SymlinkEscape);
    assert!(err.to_string().starts_with("memory path symlink escape: "), "{err}");

    // A target that is a symlink: refused, even to a file inside.
    std::fs::write(root.join("shared/real.md"), "x").unwrap();
    std::os::unix::fs::symlink(root.join("shared/real.md"), root.join("shared/alias.md")).unwrap();
    let StoreError::Storage(err) = store.get(&id("shared:alias"), at(0)).unwrap_err() else {
        panic!("a target symlink was followed")
    };
    assert_eq!(err.kind(), StorageErrorKind::SymlinkEscape);
    assert_eq!(
        err.to_string(),
        "memory path symlink escape: `shared/alias.md` is or passes through a symbolic link for `shared:alias`"
    );
    assert!(store.get(&id("shared:real"), at(0)).is_ok());
}
