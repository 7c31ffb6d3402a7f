//! What a listing sees and skips, file modes, the configuration file, opening a root.

use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;

use memory_entry::{Limits, NewEntry, Patch, StorageErrorKind, StoreError};
use memory_id::MemoryPrefix;
use memory_markdown::MarkdownStore;
use memory_store::{Expiry, Listing, MemoryStore};

use crate::{at, id};

fn listed(store: &MarkdownStore, roots: &[&str]) -> Vec<String> {
    let roots: Vec<MemoryPrefix> = roots.iter().map(|r| MemoryPrefix::parse(r).unwrap()).collect();
    let listing = Listing::new(roots.to_vec(), at(0)).with_expiry(Expiry::Any);
    store.list(&listing).unwrap().into_iter().map(|e| e.entry.id.into_string()).collect()
}

#[test]
fn listing_skips_temp_lock_non_md_invalid_names_symlinks_and_special_files_11_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let store = MarkdownStore::open(root).unwrap();
    store.create(NewEntry::new(id("shared:real"), "x"), at(0)).unwrap();
    store.create(NewEntry::new(id("shared:.hidden"), "x"), at(0)).unwrap();
    store.create(NewEntry::new(id("shared:dir.md:inside"), "x"), at(0)).unwrap();
    let shared = root.join("shared");
    std::fs::write(shared.join(".tmp:1:2:0123456789abcdef"), "---\n---\ntemp").unwrap();
    std::fs::write(shared.join("notes.txt"), "not an entry").unwrap();
    std::fs::write(shared.join("README"), "not an entry").unwrap();
    std::fs::write(shared.join("a:b.md"), "would not map back to its own path").unwrap();
    std::fs::write(shared.join(".md"), "empty stem").unwrap();
    std::fs::write(shared.join("..md"), "dot-segment stem").unwrap();
    std::fs::write(shared.join("back\\slash.md"), "separator").unwrap();
    std::fs::write(shared.join("ctrl\u{1}.md"), "control character").unwrap();
    symlink("real.md", shared.join("alias.md")).unwrap();
    std::fs::create_dir(shared.join("bad:dir")).unwrap();
    std::fs::write(shared.join("bad:dir/x.md"), "under an invalid directory name").unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, shared.join("fifo.md").as_path(), rustix::fs::Mode::RUSR).unwrap();
    // Not UTF-8: cannot be an ID.
    std::fs::write(shared.join(std::ffi::OsStr::from_bytes(b"caf\xe9.md")), "x").unwrap();
    assert!(root.join(".locks").read_dir().unwrap().count() > 0, "lock files exist");
    assert_eq!(listed(&store, &["shared"]), ["shared:.hidden", "shared:dir.md:inside", "shared:real"]);
    // The same for the entry count of the limits: 3 entries, so a limit of 4 leaves room for one more.
    let tight =
        MarkdownStore::open_with_limits(root, Limits { max_entries_per_scope_root: 4, ..Limits::default() })
            .unwrap();
    tight.create(NewEntry::new(id("shared:fourth"), "x"), at(0)).unwrap();
    match tight.create(NewEntry::new(id("shared:fifth"), "x"), at(0)) {
        Err(StoreError::LimitExceeded { count: 4, limit: 4, .. }) => {}
        other => panic!("expected the limit at 4 entries, got {other:?}"),
    }
    // The create under the scope-root lock removed the leftover temporary file, and nothing else.
    assert!(!shared.join(".tmp:1:2:0123456789abcdef").exists());
    assert!(shared.join("notes.txt").exists() && shared.join("a:b.md").exists());
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn files_are_0600_and_directories_0700() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("new-root");
    let store = MarkdownStore::open(&root).unwrap();
    assert_eq!(mode(&root), 0o700, "a root the store creates");
    store.create(NewEntry::new(id("project:alp:log:2026:09"), "x"), at(0)).unwrap();
    store.update(&id("project:alp:log:2026:09"), 1, &Patch::default(), at(1)).unwrap();
    for d in ["projects", "projects/alp", "projects/alp/log", "projects/alp/log/2026", ".locks"] {
        assert_eq!(mode(&root.join(d)), 0o700, "{d}");
    }
    assert_eq!(mode(&root.join("projects/alp/log/2026/09.md")), 0o600);
    for lock in std::fs::read_dir(root.join(".locks")).unwrap() {
        let lock = lock.unwrap();
        assert!(!lock.file_name().to_string_lossy().ends_with(".md"));
        assert_eq!(mode(&lock.path()), 0o600, "{:?}", lock.file_name());
    }
}

const UMASK_CHILD_ROOT: &str = "MEMORY_MARKDOWN_UMASK_ROOT";

/// Not a test of its own: creates an entry and writes a record in the root the parent test names, under the umask
/// it was started with, and does nothing unless started by that test.
#[test]
fn directories_made_under_a_umask_child() {
    let Ok(root) = std::env::var(UMASK_CHILD_ROOT) else { return };
    let store = MarkdownStore::open(&root).unwrap();
    store.create(NewEntry::new(id("project:alp:log:2026:09"), "x"), at(0)).unwrap();
    store.write_record("tokens", "t1.json", b"{}").unwrap();
}

/// Every directory the store makes is 0700 whatever the umask: the root and its missing parents, entry directories,
/// the lock directory and a record directory (the root and record directories once took the umask's mode: 0500
/// under 0277). The umask is the process's, so each runs in a child process of this test binary.
#[test]
fn directories_are_0700_under_a_restrictive_or_permissive_umask() {
    for umask in ["0277", "0077", "0"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("parent/root");
        let exe = std::env::current_exe().unwrap();
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                "umask \"$1\" && exec \"$2\" --exact listing::directories_made_under_a_umask_child",
                "sh",
            ])
            .arg(umask)
            .arg(&exe)
            .env(UMASK_CHILD_ROOT, &root)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "umask {umask}");
        assert!(root.join("tokens/t1.json").is_file(), "umask {umask}");
        assert_eq!(mode(&dir.path().join("parent")), 0o700, "umask {umask}: the root's parent");
        for d in
            ["", "projects", "projects/alp", "projects/alp/log", "projects/alp/log/2026", ".locks", "tokens"]
        {
            assert_eq!(mode(&root.join(d)), 0o700, "umask {umask}: {d}");
        }
    }
}

#[test]
fn deleting_the_last_entry_of_a_directory_removes_the_empty_directories() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    store.create(NewEntry::new(id("project:alp:a:b:c"), "x"), at(0)).unwrap();
    store.delete(&id("project:alp:a:b:c"), 1, at(0)).unwrap();
    assert!(!dir.path().join("projects/alp/a").exists());
    assert!(dir.path().join("projects/alp").is_dir(), "the scope root directory stays");
    // A leftover empty directory (a crash between mkdir and rename) does not block the entry it clashes with.
    std::fs::create_dir_all(dir.path().join("projects/alp/x.md/y")).unwrap();
    store.create(NewEntry::new(id("project:alp:x"), "x"), at(0)).unwrap();
    // A directory holding other files does, with a storage error naming the path.
    std::fs::create_dir_all(dir.path().join("projects/alp/z.md")).unwrap();
    std::fs::write(dir.path().join("projects/alp/z.md/notes.txt"), "keep me").unwrap();
    match store.create(NewEntry::new(id("project:alp:z"), "x"), at(0)) {
        Err(StoreError::Storage(e)) => assert_eq!(e.kind(), StorageErrorKind::Corrupt, "{e}"),
        other => panic!("expected a storage error, got {other:?}"),
    }
}

#[test]
fn config_yaml_limits_are_read_and_bad_config_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.yaml"), "limits:\n  maxEntriesPerScopeRoot: 2\n  maxTtl: 30d\n")
        .unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    assert_eq!(store.limits().max_entries_per_scope_root, 2);
    assert_eq!(store.limits().max_ttl.as_secs(), 30 * 86_400);
    std::fs::write(dir.path().join("config.yaml"), "limits:\n  maxEntries: 2\n").unwrap();
    match MarkdownStore::open(dir.path()).unwrap_err() {
        memory_markdown::RootOpenError::Config(e) => assert_eq!(e.key(), Some("limits.maxEntries")),
        other => panic!("expected a configuration error, got {other}"),
    }
    // Explicit limits do not read the file.
    assert!(MarkdownStore::open_with_limits(dir.path(), Limits::default()).is_ok());
}

#[test]
fn opening_a_root_leaves_no_probe_behind_and_uses_openat2_here() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the case probe file is removed");
    // This kernel has openat2; the component walk is covered by forcing it.
    println!("resolution on this kernel: {:?}", store.resolution());
    assert_eq!(store.root(), dir.path().canonicalize().unwrap());
    assert_eq!(
        store.get(&id("shared:missing"), at(0)),
        Err(StoreError::NotFound { id: id("shared:missing"), expired: false })
    );
    // A read leaves no trace either (no lock directory is made by reads).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_directory_at_an_entry_name_is_not_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    store.create(NewEntry::new(id("shared:x.md:y"), "x"), at(0)).unwrap();
    // `shared:x` would be `shared/x.md`, which is the directory of `shared:x.md:y`.
    assert_eq!(
        store.get(&id("shared:x"), at(0)),
        Err(StoreError::NotFound { id: id("shared:x"), expired: false })
    );
    assert_eq!(listed(&store, &["shared:x"]), Vec::<String>::new());
    assert_eq!(listed(&store, &["shared:x.md"]), ["shared:x.md:y"]);
}

/// One hand-written entry file for [`a_limited_listing_is_the_best_of_the_full_listing`].
#[derive(Debug, Clone)]
struct Note {
    terms: Vec<bool>,
    updated: u8,
    kind: &'static str,
    ttl: Option<&'static str>,
    frontmatter: bool,
}

fn note() -> impl proptest::strategy::Strategy<Value = Note> {
    use proptest::prelude::*;
    (
        proptest::collection::vec(any::<bool>(), 3),
        0u8..4,
        prop::sample::select(vec!["fact", "decision", "reference"]),
        prop::option::of(prop::sample::select(vec!["1s", "3650d"])),
        any::<bool>(),
    )
        .prop_map(|(terms, updated, kind, ttl, frontmatter)| Note {
            terms,
            updated,
            kind,
            ttl,
            frontmatter,
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// With a limit, the store may skip entries before it reads their frontmatter (those that score below the
    /// last it keeps): what it returns is still exactly the best `limit` of the full listing, in rank order, with
    /// ties on score and time, filters and expired entries.
    #[test]
    fn a_limited_listing_is_the_best_of_the_full_listing(
        notes in proptest::collection::vec(note(), 1..160),
        limit in 0usize..12,
        filtered in proptest::prelude::any::<bool>(),
    ) {
        use memory_entry::{Filter, FieldValue, Kind};
        use memory_store::Scored;
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        let words = ["postgres", "migration", "Schema"];
        for (i, note) in notes.iter().enumerate() {
            let mut text = String::new();
            if note.frontmatter {
                text.push_str(&format!(
                    "---\nkind: {}\nversion: 1\ncreatedAt: 2026-10-01T10:00:00Z\nupdatedAt: 2026-10-01T10:00:0{}Z\n",
                    note.kind, note.updated
                ));
                if let Some(ttl) = note.ttl {
                    text.push_str(&format!("ttl: {ttl}\n"));
                }
                text.push_str("---\n");
            }
            for (word, present) in words.iter().zip(&note.terms) {
                if *present {
                    text.push_str(word);
                    text.push(' ');
                }
            }
            text.push_str("note\n");
            std::fs::write(shared.join(format!("n{i:03}.md")), text).unwrap();
        }
        let store = MarkdownStore::open(dir.path()).unwrap();
        let filter = if filtered { Filter::new(vec![FieldValue::Kind(Kind::Fact)]) } else { Filter::default() };
        let listing = |limit| {
            Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], at(0))
                .with_query("postgres migration schema")
                .with_filter(filter.clone())
                .with_limit(limit)
        };
        let mut best = store.list(&listing(None)).unwrap();
        best.sort_by(Scored::cmp_rank);
        best.truncate(limit);
        best.sort_by(|a, b| a.entry.id.cmp(&b.entry.id));
        proptest::prop_assert_eq!(store.list(&listing(Some(limit))).unwrap(), best);
    }
}

/// Enough files in one directory that the listing reads them on every thread it has, some in the chunks handed over as
/// the walk finds them and the rest from the tail the threads share once it is over: each matching entry is listed
/// exactly once, with its own content, and a limited listing keeps the best of them.
#[test]
fn a_large_directory_read_by_every_thread_lists_each_entry_once_with_its_content() {
    use memory_store::Scored;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let count = 731;
    for i in 0..count {
        // Entry i holds "postgres" (i % 4) times, so scores differ and tie in groups.
        let text = format!("{}note {i}\n", "postgres ".repeat(i % 4));
        std::fs::write(shared.join(format!("n{i:04}.md")), text).unwrap();
    }
    let store = MarkdownStore::open(dir.path()).unwrap();
    let listing = |limit| {
        Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], at(0))
            .with_query("postgres")
            .with_limit(limit)
    };
    let all = store.list(&listing(None)).unwrap();
    let expected: Vec<String> = (0..count).filter(|i| i % 4 > 0).map(|i| format!("shared:n{i:04}")).collect();
    let mut got: Vec<String> = all.iter().map(|s| s.entry.id.to_string()).collect();
    got.sort();
    assert_eq!(got, expected);
    for scored in &all {
        let i: usize = scored.entry.id.as_str()["shared:n".len()..].parse().unwrap();
        assert_eq!(scored.entry.content, format!("{}note {i}\n", "postgres ".repeat(i % 4)));
    }
    let mut best = all.clone();
    best.sort_by(Scored::cmp_rank);
    best.truncate(25);
    best.sort_by(|a, b| a.entry.id.cmp(&b.entry.id));
    assert_eq!(store.list(&listing(Some(25))).unwrap(), best);
}
