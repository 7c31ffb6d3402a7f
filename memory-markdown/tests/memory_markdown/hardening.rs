//! The hardening rules of `docs/STORAGE.md`: everything in the root may have been written by someone else, and none of
//! it may cost more than it is worth. Hard links, special files, oversized files, YAML bombs, versions past 2^53 − 1
//! and locks held forever, each under both path resolutions where a path is resolved.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use memory_entry::{Limits, MAX_VERSION, NewEntry, Patch, StorageErrorKind, StoreError};
use memory_id::MemoryPrefix;
use memory_markdown::{FrontmatterStatus, MarkdownStore, StoreConfig, StoreOptions, parse_entry_file};
use memory_store::{Listing, MemoryStore};

use crate::{at, id, spawn_child};

/// Both path resolutions: `openat2` (where the kernel has it) and the `O_NOFOLLOW` component walk.
const RESOLUTIONS: [(&str, bool); 2] = [("openat2", false), ("component walk", true)];

/// A fresh root (`<tmp>/memory`) and its store under one resolution.
fn fresh(walk: bool, limits: Limits) -> (tempfile::TempDir, std::path::PathBuf, MarkdownStore) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let store =
        MarkdownStore::open_with(&root, StoreOptions::new().limits(limits).force_component_walk(walk))
            .unwrap();
    (dir, root, store)
}

fn storage_kind(result: Result<impl std::fmt::Debug, StoreError>) -> StorageErrorKind {
    match result {
        Err(StoreError::Storage(e)) => e.kind(),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

fn list_ids(store: &MarkdownStore, prefix: &str) -> Vec<String> {
    store
        .list(&Listing::new(vec![MemoryPrefix::parse(prefix).unwrap()], at(0)))
        .unwrap()
        .into_iter()
        .map(|e| e.entry.id.into_string())
        .collect()
}

const SECRET: &str = "main's private journal: the launch slips a week";

/// The three aliasing cases of a hard link: another role's private entry, a file outside the root, the audit log.
/// Each alias is refused on get and update, skipped by listings, and deletable; deleting it restores the original.
#[test]
fn hard_links_are_refused_like_symlinks_and_may_be_deleted() {
    for (label, walk) in RESOLUTIONS {
        let (dir, root, store) = fresh(walk, Limits::default());
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "a file outside the root").unwrap();
        store.create(NewEntry::new(id("private:main:journal"), SECRET), at(0)).unwrap();
        store.create(NewEntry::new(id("shared:team:ok"), "fine"), at(0)).unwrap();
        std::fs::write(root.join("audit.jsonl"), "{\"seq\":1}\n").unwrap();
        let aliases = [
            ("shared:team:leak", root.join("private/main/journal.md")),
            ("shared:team:outside", outside.clone()),
            ("shared:team:log", root.join("audit.jsonl")),
        ];
        for (alias, target) in &aliases {
            let path = root.join(format!("shared/team/{}.md", alias.rsplit(':').next().unwrap()));
            std::fs::hard_link(target, &path).unwrap();
        }
        for (alias, _) in &aliases {
            let err = store.get(&id(alias), at(0)).unwrap_err();
            let StoreError::Storage(storage) = &err else { panic!("{label}: {err:?}") };
            assert_eq!(storage.kind(), StorageErrorKind::HardLink, "{label}: {err}");
            assert!(err.to_string().contains("memory path symlink escape"), "{label}: {err}");
            assert!(!err.to_string().contains("launch slips"), "{label}: {err}");
            let patch = Patch::content_only("overwrite");
            assert_eq!(storage_kind(store.update(&id(alias), 1, &patch, at(0))), StorageErrorKind::HardLink);
        }
        // Listings skip every alias (and the original, which has two links now too).
        assert_eq!(list_ids(&store, "shared"), ["shared:team:ok"], "{label}");
        assert!(list_ids(&store, "private:main").is_empty(), "{label}");
        // The aliases still count against the entry limit: they are names in the scope root.
        // Deleting an alias only unlinks its name; the original is intact and readable again.
        for (alias, _) in &aliases {
            store.delete(&id(alias), 1, at(0)).unwrap();
        }
        assert_eq!(store.get(&id("private:main:journal"), at(0)).unwrap().content, SECRET, "{label}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "a file outside the root");
        assert_eq!(std::fs::read_to_string(root.join("audit.jsonl")).unwrap(), "{\"seq\":1}\n");
    }
}

/// A create on a kernel without `RENAME_NOREPLACE` links its temporary file to the entry's name, then unlinks the
/// temporary name. Killed in between, it leaves two links: the store recognises its own leftover and reads the
/// entry; a second link anywhere else is still refused.
#[test]
fn the_create_fallbacks_own_leftover_link_is_not_an_alias() {
    for (label, walk) in RESOLUTIONS {
        let (_dir, root, store) = fresh(walk, Limits::default());
        store.create(NewEntry::new(id("shared:x"), "body"), at(0)).unwrap();
        std::fs::hard_link(root.join("shared/x.md"), root.join("shared/.tmp:4242:7:00000000deadbeef"))
            .unwrap();
        assert_eq!(store.get(&id("shared:x"), at(0)).unwrap().content, "body", "{label}");
        assert_eq!(list_ids(&store, "shared"), ["shared:x"], "{label}");
        // The next create in the scope root removes the leftover.
        store.create(NewEntry::new(id("shared:y"), "y"), at(0)).unwrap();
        assert!(!root.join("shared/.tmp:4242:7:00000000deadbeef").exists(), "{label}");
        // A second name that is not the store's own temporary file in the same directory is an alias.
        std::fs::create_dir_all(root.join("shared/sub")).unwrap();
        std::fs::hard_link(root.join("shared/x.md"), root.join("shared/sub/.tmp:1:1:0000000000000001"))
            .unwrap();
        assert_eq!(storage_kind(store.get(&id("shared:x"), at(0))), StorageErrorKind::HardLink, "{label}");
    }
}

const FALLBACK_ROOT_VAR: &str = "ALP_STORE_TEST_FALLBACK_ROOT";

/// The helper process: creates `shared:c<n>` through the link fallback forever (until killed).
pub(crate) fn fallback_creator_child() {
    let root = std::env::var(FALLBACK_ROOT_VAR).unwrap();
    let limits = Limits { max_entries_per_scope_root: u64::MAX >> 12, ..Limits::default() };
    let store = MarkdownStore::open_with(&root, StoreOptions::new().limits(limits).force_link_fallback(true))
        .unwrap();
    println!("RESULT started");
    for n in std::process::id() as u64 * 1_000_000.. {
        store
            .create(NewEntry::new(id(&format!("shared:c{n}")), "created through the fallback"), at(0))
            .unwrap();
    }
}

/// `kill -9` at random instants of creates through the link-then-unlink fallback: every entry that exists is
/// readable (a leftover second link is the store's own), and the next create removes the leftovers.
#[test]
fn kill_9_during_fallback_creates_never_leaves_an_unreadable_entry() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let limits = Limits { max_entries_per_scope_root: u64::MAX >> 12, ..Limits::default() };
    let store = MarkdownStore::open_with(&root, StoreOptions::new().limits(limits)).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let (mut double_linked, mut kills) = (0, 0);
    let mut entries = 0;
    // At least 150 kills, and on until the creators have made 50 entries: a loaded machine gets fewer creates into
    // each run, so the count of runs follows the work done, not the other way round.
    while kills < 150 || entries < 50 {
        assert!(kills < 5_000, "the creators made only {entries} entries in {kills} runs");
        let mut child = spawn_child("fallback_creator", &[(FALLBACK_ROOT_VAR, root.display().to_string())]);
        let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let started = lines.map_while(Result::ok).any(|line| line == "RESULT started");
        if !started {
            let _ = child.kill();
            panic!("the creator exited before starting");
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_micros(1_000 + seed % 8_000));
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
        entries = 0;
        for entry in std::fs::read_dir(root.join("shared")).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let Some(stem) = name.strip_suffix(".md") else { continue };
            use std::os::unix::fs::MetadataExt as _;
            if entry.metadata().unwrap().nlink() > 1 {
                double_linked += 1;
            }
            let got = store.get(&id(&format!("shared:{stem}")), at(0));
            assert!(got.is_ok(), "after kill {kills}, `{name}` is unreadable: {got:?}");
            entries += 1;
        }
    }
    store.create(NewEntry::new(id("shared:after"), "x"), at(0)).unwrap();
    let temps = std::fs::read_dir(root.join("shared"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(".tmp:"))
        .count();
    assert_eq!(temps, 0, "the next create removes every leftover");
    println!(
        "{kills} kills, {entries} entries created; {double_linked} times an entry was seen with the fallback's \
         leftover second link"
    );
}

/// An entry file larger than `maxFileBytes` costs nothing: refused before it is read on get and update, skipped
/// by listings (counted against the limit), deletable.
#[test]
fn oversized_files_are_refused_before_reading() {
    for (label, walk) in RESOLUTIONS {
        let (_dir, root, store) = fresh(walk, Limits::default());
        std::fs::create_dir_all(root.join("shared")).unwrap();
        let big = std::fs::File::create(root.join("shared/big.md")).unwrap();
        big.set_len(2 * 1024 * 1024 * 1024).unwrap(); // 2 GiB, sparse
        drop(big);
        store.create(NewEntry::new(id("shared:small"), "small"), at(0)).unwrap();
        let started = Instant::now();
        let err = store.get(&id("shared:big"), at(0)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{label}: {:?}", started.elapsed());
        assert!(err.to_string().contains("2147483648 bytes, over the limit of 1048576"), "{label}: {err}");
        let patch = Patch::content_only("x");
        assert_eq!(
            storage_kind(store.update(&id("shared:big"), 1, &patch, at(0))),
            StorageErrorKind::TooLarge
        );
        let started = Instant::now();
        assert_eq!(list_ids(&store, "shared"), ["shared:small"], "{label}");
        assert!(started.elapsed() < Duration::from_secs(2), "{label}");
        store.delete(&id("shared:big"), 1, at(0)).unwrap();
        assert!(!root.join("shared/big.md").exists());
    }
    // The limit is a setting: a hand-written 2 MiB note is readable with a larger one.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let note = format!("---\nkind: fact\n---\n{}", "x".repeat(2 * 1024 * 1024));
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::write(root.join("shared/long.md"), &note).unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    assert_eq!(storage_kind(store.get(&id("shared:long"), at(0))), StorageErrorKind::TooLarge);
    std::fs::write(root.join("config.yaml"), "limits:\n  maxFileBytes: 4194304\n").unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    assert_eq!(store.get(&id("shared:long"), at(0)).unwrap().content.len(), 2 * 1024 * 1024);
}

/// FIFOs, sockets and devices at an entry's name are never opened for reading (a FIFO would block, a driver
/// would run): one storage error for all of them. A directory there is no entry (not found).
#[test]
fn special_files_are_never_opened() {
    for (label, walk) in RESOLUTIONS {
        let (_dir, root, store) = fresh(walk, Limits::default());
        std::fs::create_dir_all(root.join("shared/dir.md")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("shared/fifo.md"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(root.join("shared/socket.md")).unwrap();
        let mut special = vec!["shared:fifo", "shared:socket"];
        // A character device (the numbers of /dev/null) needs CAP_MKNOD; without it that case is skipped.
        let device = rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("shared/device.md"),
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            rustix::fs::makedev(1, 3),
        );
        match device {
            Ok(()) => special.push("shared:device"),
            Err(e) => eprintln!("note: no device node case ({e}): creating one needs CAP_MKNOD"),
        }
        for name in &special {
            let started = Instant::now();
            let err = store.get(&id(name), at(0)).unwrap_err();
            assert!(started.elapsed() < Duration::from_secs(2), "{label}: {name} blocked");
            let StoreError::Storage(storage) = &err else { panic!("{label}: {name}: {err:?}") };
            assert_eq!(storage.kind(), StorageErrorKind::NotRegular, "{label}: {name}: {err}");
            assert!(err.to_string().contains("is a FIFO, socket or device, not an entry file"), "{err}");
            let patch = Patch::content_only("x");
            assert_eq!(storage_kind(store.update(&id(name), 1, &patch, at(0))), StorageErrorKind::NotRegular);
        }
        assert!(matches!(store.get(&id("shared:dir"), at(0)), Err(StoreError::NotFound { .. })), "{label}");
        assert!(list_ids(&store, "shared").is_empty(), "{label}");
    }
}

/// A version never wraps: a hand-written version above 2^53 − 1 is refused on get, update and delete (and skipped
/// by listings), and an update of an entry at 2^53 − 1 is refused.
#[test]
fn versions_stay_at_most_2_pow_53_minus_1() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    std::fs::create_dir_all(root.join("shared")).unwrap();
    let file = |version: &str| format!("---\nkind: fact\nversion: {version}\n---\nbody\n");
    std::fs::write(root.join("shared/huge.md"), file("18446744073709551615")).unwrap();
    std::fs::write(root.join("shared/beyond.md"), file("123456789012345678901234567890")).unwrap();
    std::fs::write(root.join("shared/first.md"), file("9007199254740992")).unwrap();
    std::fs::write(root.join("shared/last.md"), file("9007199254740991")).unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    let patch = Patch::content_only("x");
    for (name, version) in [
        ("shared:huge", "18446744073709551615"),
        // Beyond 64 bits the YAML reader gives a float; the message shows it as read.
        ("shared:beyond", "1.2345678901234568e+29"),
        ("shared:first", "9007199254740992"),
    ] {
        let err = store.get(&id(name), at(0)).unwrap_err();
        assert!(err.to_string().contains(&format!("claims version {version},")), "{err}");
        assert_eq!(storage_kind(store.get(&id(name), at(0))), StorageErrorKind::VersionOverCap);
        assert_eq!(storage_kind(store.update(&id(name), 1, &patch, at(0))), StorageErrorKind::VersionOverCap);
        assert_eq!(storage_kind(store.delete(&id(name), 1, at(0))), StorageErrorKind::VersionOverCap);
    }
    assert_eq!(list_ids(&store, "shared"), ["shared:last"]);
    let last = store.get(&id("shared:last"), at(0)).unwrap();
    assert_eq!(last.version, MAX_VERSION);
    let err = store.update(&id("shared:last"), MAX_VERSION, &patch, at(0)).unwrap_err();
    assert!(matches!(err, StoreError::VersionLimit { limit: MAX_VERSION, .. }), "{err:?}");
    assert_eq!(store.get(&id("shared:last"), at(0)).unwrap(), last, "the refused update changed nothing");
    // The same holds in memory.
    let memory = memory_store::InMemoryStore::new();
    let mut entry = memory.create(NewEntry::new(id("shared:x"), "x"), at(0)).unwrap();
    for _ in 0..3 {
        entry = memory.update(&id("shared:x"), entry.version, &patch, at(0)).unwrap();
    }
    assert_eq!(entry.version, 4);
}

/// Every lock wait is bounded by `lockTimeout`: a lock someone holds forever makes a call fail, naming the lock,
/// instead of hanging it.
#[test]
fn a_lock_held_forever_fails_the_call_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    let config = StoreConfig { lock_timeout: Duration::from_millis(300), ..StoreConfig::default() };
    let store = MarkdownStore::open_with(&root, StoreOptions::new().config(config)).unwrap();
    store.create(NewEntry::new(id("shared:x"), "x"), at(0)).unwrap();
    // Hold every lock file exclusively, as a stuck process would.
    let held: Vec<std::fs::File> = std::fs::read_dir(root.join(".locks"))
        .unwrap()
        .map(|entry| {
            let file = std::fs::File::open(entry.unwrap().path()).unwrap();
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).unwrap();
            file
        })
        .collect();
    assert!(!held.is_empty());
    let patch = Patch::content_only("y");
    for call in [
        Box::new(|| store.update(&id("shared:x"), 1, &patch, at(0)).map(|_| ())) as Box<dyn Fn() -> _>,
        Box::new(|| store.create(NewEntry::new(id("shared:y"), "y"), at(0)).map(|_| ())),
        Box::new(|| store.delete(&id("shared:x"), 1, at(0))),
    ] {
        let started = Instant::now();
        let err = call().unwrap_err();
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(3), "{waited:?}");
        let StoreError::Storage(storage) = &err else { panic!("{err:?}") };
        assert_eq!(storage.kind(), StorageErrorKind::LockTimeout, "{err}");
        assert!(err.to_string().contains("is busy"), "{err}");
    }
    drop(held);
    store.update(&id("shared:x"), 1, &patch, at(0)).unwrap();
}

/// A YAML bomb in a hand-written frontmatter costs nothing: aliases are refused before any expansion, nesting
/// deeper than 32 levels and frontmatter longer than 64 KiB are broken frontmatter, and the note stays readable.
#[test]
fn yaml_bombs_in_frontmatter_are_broken_frontmatter() {
    let mut alias_bomb =
        String::from("---\nkind: fact\nanchor: &a [\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]\nbomb: [");
    while alias_bomb.len() < 25_000 {
        alias_bomb.push_str("*a, ");
    }
    alias_bomb.push_str("*a]\n---\nthe note\n");
    let deep_small = format!("---\nkind: fact\nx: {}{}\n---\nthe note\n", "[".repeat(40), "]".repeat(40));
    let deep_large =
        format!("---\nkind: fact\nx: {}{}\n---\nthe note\n", "[".repeat(100_000), "]".repeat(100_000));
    let long = format!("---\nkind: fact\nx: \"{}\"\n---\nthe note\n", "y".repeat(70 * 1024));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    std::fs::create_dir_all(root.join("shared")).unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    for (name, text) in
        [("alias", &alias_bomb), ("deep", &deep_small), ("deeper", &deep_large), ("long", &long)]
    {
        let started = Instant::now();
        let parsed = parse_entry_file(id("shared:x"), text.as_bytes(), at(0));
        assert_eq!(parsed.frontmatter, FrontmatterStatus::Broken, "{name}");
        assert_eq!(parsed.entry.content, "the note\n", "{name}");
        std::fs::write(root.join(format!("shared/{name}.md")), text).unwrap();
        let entry = store.get(&id(&format!("shared:{name}")), at(0)).unwrap();
        assert_eq!(entry.content, "the note\n", "{name}");
        assert!(started.elapsed() < Duration::from_secs(2), "{name}: {:?}", started.elapsed());
    }
    let started = Instant::now();
    assert_eq!(list_ids(&store, "shared").len(), 4);
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// `config.yaml` is a regular file of at most 64 KiB without aliases; anything else is a configuration error.
#[test]
fn config_yaml_is_bounded_and_plain() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("memory");
    std::fs::create_dir_all(&root).unwrap();
    let refused = |text: String, why: &str| {
        std::fs::write(root.join("config.yaml"), &text).unwrap();
        let err = MarkdownStore::open(&root).unwrap_err();
        assert!(matches!(err, memory_markdown::RootOpenError::Config(_)), "{err}");
        assert!(err.to_string().contains(why), "{err}");
    };
    refused("limits: &l\n  maxValueChars: 10\nlockTimeout: *l\n".into(), "config.yaml`: ");
    refused(format!("# {}\n", "x".repeat(70 * 1024)), "larger than 64 KiB");
    refused("limits:\n  maxFileBytes: 1000\n".into(), "maxFileBytes");
    refused("limits:\n  maxValueChars: 0\n".into(), "not a positive integer");
    refused("limits:\n  maxValueChars: 9007199254740992\n".into(), "not a positive integer");
    refused("lockTimeout: soon\n".into(), "lockTimeout");
    refused("limit:\n  maxValueChars: 1\n".into(), "valid keys: limits.maxEntriesPerScopeRoot");
    std::fs::remove_file(root.join("config.yaml")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("config.yaml"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR,
        0,
    )
    .unwrap();
    let started = Instant::now();
    let err = MarkdownStore::open(&root).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    std::fs::remove_file(root.join("config.yaml")).unwrap();
    std::fs::write(root.join("config.yaml"), "lockTimeout: 2s\nlimits:\n  maxValueChars: 300000\n").unwrap();
    std::fs::set_permissions(root.join("config.yaml"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = MarkdownStore::open(&root).unwrap();
    assert_eq!(store.config().lock_timeout, Duration::from_secs(2));
    // maxFileBytes follows a larger value limit when it is not given.
    assert_eq!(store.limits().max_file_bytes, 4 * 300_000 + 64 * 1024);
    assert!(Path::new(&root).join("config.yaml").is_file());
}

/// A file's mtime may lie outside the years timestamps are written in; it is clamped, so it always prints as a
/// four-digit year (it once printed as `-0001-…`).
#[test]
fn mtimes_are_clamped_to_years_1_to_9999() {
    use memory_entry::Timestamp;
    let nanos = |secs: i128| secs * 1_000_000_000;
    assert_eq!(
        Timestamp::from_unix_nanos_clamped(nanos(-62_200_000_000)).to_string(),
        "0001-01-01T00:00:00.000Z"
    );
    assert_eq!(
        Timestamp::from_unix_nanos_clamped(nanos(300_000_000_000)).to_string(),
        "9999-12-31T23:59:59.999Z"
    );
    assert_eq!(Timestamp::from_unix_nanos_clamped(nanos(0)).to_string(), "1970-01-01T00:00:00.000Z");
    assert_eq!(Timestamp::from_unix_nanos_clamped(i128::MIN).to_string(), "0001-01-01T00:00:00.000Z");
}
