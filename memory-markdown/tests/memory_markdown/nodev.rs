//! The `nodev` rule: on a root mounted `nodev` the store opens entry files directly (`O_RDONLY | O_NOFOLLOW |
//! O_NONBLOCK | O_NOCTTY`, then `fstat`) and still refuses everything that is not a regular file with one link.
//! Needs root (to mount a tmpfs); skipped otherwise, with a note. CI runs as root.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memory_entry::{Limits, NewEntry, Patch, StorageErrorKind, StoreError};
use memory_id::MemoryPrefix;
use memory_markdown::{MarkdownStore, Opening, StoreOptions};
use memory_store::{Listing, MemoryStore};

use testkit::tmpfs::Tmpfs;

use crate::{at, id};

fn skipped() {
    testkit::tmpfs::skipped("the nodev test");
}

fn open(root: &PathBuf, walk: bool) -> MarkdownStore {
    MarkdownStore::open_with(root, StoreOptions::new().limits(Limits::default()).force_component_walk(walk))
        .unwrap()
}

fn storage_kind(result: Result<impl std::fmt::Debug, StoreError>) -> StorageErrorKind {
    match result {
        Err(StoreError::Storage(e)) => e.kind(),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

#[test]
fn a_root_mounted_nodev_opens_entries_directly_and_refuses_everything_else() {
    let Some(mount) = Tmpfs::mount("nodev") else { return skipped() };
    for walk in [false, true] {
        let root = mount.path().join(if walk { "walk" } else { "openat2" });
        let store = open(&root, walk);
        assert_eq!(store.opening(), Opening::Direct);
        store.create(NewEntry::new(id("shared:ok"), "fine"), at(0)).unwrap();
        store.create(NewEntry::new(id("private:main:journal"), "secret"), at(0)).unwrap();
        assert_eq!(store.get(&id("shared:ok"), at(0)).unwrap().content, "fine");
        let shared = root.join("shared");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            shared.join("fifo.md"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(shared.join("socket.md")).unwrap();
        // As root, mknod succeeds on a nodev mount; opening the node is what the mount refuses.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            shared.join("device.md"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            rustix::fs::makedev(1, 3),
        )
        .unwrap();
        std::os::unix::fs::symlink("../private/main/journal.md", shared.join("link.md")).unwrap();
        std::fs::hard_link(root.join("private/main/journal.md"), shared.join("hard.md")).unwrap();
        for name in ["shared:fifo", "shared:socket", "shared:device"] {
            let started = Instant::now();
            let err = store.get(&id(name), at(0)).unwrap_err();
            assert!(started.elapsed() < Duration::from_secs(2), "{name} blocked");
            let StoreError::Storage(storage) = &err else { panic!("{name}: {err:?}") };
            assert_eq!(storage.kind(), StorageErrorKind::NotRegular, "{name}: {err}");
            assert!(err.to_string().contains("is a FIFO, socket or device, not an entry file"), "{err}");
            let patch = Patch::content_only("x");
            assert_eq!(storage_kind(store.update(&id(name), 1, &patch, at(0))), StorageErrorKind::NotRegular);
        }
        let err = store.get(&id("shared:link"), at(0)).unwrap_err();
        assert!(err.to_string().contains("memory path symlink escape"), "{err}");
        assert!(!err.to_string().contains("secret"), "{err}");
        assert_eq!(storage_kind(store.get(&id("shared:hard"), at(0))), StorageErrorKind::HardLink);
        let listed: Vec<String> = store
            .list(&Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], at(0)))
            .unwrap()
            .into_iter()
            .map(|e| e.entry.id.into_string())
            .collect();
        assert_eq!(listed, ["shared:ok"]);
    }
}

#[test]
fn a_root_mounted_with_devices_keeps_the_proc_reopen() {
    let Some(mount) = Tmpfs::mount("dev") else { return skipped() };
    let store = open(&mount.path().join("memory"), false);
    assert_eq!(store.opening(), Opening::ProcReopen);
    // A device node there is never opened: the handle is `O_PATH`, and only a regular file is reopened.
    let shared = mount.path().join("memory/shared");
    std::fs::create_dir_all(&shared).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        shared.join("device.md").as_path(),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        rustix::fs::makedev(1, 3),
    )
    .unwrap();
    assert_eq!(storage_kind(store.get(&id("shared:device"), at(0))), StorageErrorKind::NotRegular);
}
