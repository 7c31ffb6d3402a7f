//! The entry cache (`StoreOptions::entry_cache`): never stale, bounded, and the same answers as no cache; and
//! listings with a limit.

use std::fs::{File, FileTimes};
use std::path::Path;
use std::time::Duration;

use memory_entry::{NewEntry, Timestamp};
use memory_id::MemoryPrefix;
use memory_markdown::{MarkdownStore, StoreOptions};
use memory_store::{Listing, MemoryStore, Scored};

use crate::id;

fn cached(root: &Path, budget: usize) -> MarkdownStore {
    MarkdownStore::open_with(root, StoreOptions::new().entry_cache(budget)).unwrap()
}

fn search(store: &MarkdownStore, query: &str, limit: Option<usize>) -> Vec<(String, usize, String)> {
    let listing = Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], Timestamp::now())
        .with_query(query)
        .with_limit(limit);
    store
        .list(&listing)
        .unwrap()
        .into_iter()
        .map(|s| (s.entry.id.into_string(), s.score, s.entry.content))
        .collect()
}

/// Files changed within the last second are not cached: wait until these have settled.
fn settle() {
    std::thread::sleep(Duration::from_millis(1100));
}

/// Rewrites `path` in place with `text` (the same size as before) and gives it back its modification time, as an
/// editor that preserves times, or a second write in the same clock tick, would leave it.
fn edit_in_place(path: &Path, text: &str) {
    let before = std::fs::metadata(path).unwrap();
    assert_eq!(before.len(), text.len() as u64, "the edit must keep the size");
    std::fs::write(path, text).unwrap();
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(FileTimes::new().set_modified(before.modified().unwrap()))
        .unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), before.modified().unwrap());
}

fn entry_text(word: &str) -> String {
    format!(
        "---\nkind: fact\nversion: 1\ncreatedAt: 2026-10-01T10:00:00Z\nupdatedAt: 2026-10-01T10:00:00Z\n---\n{word}\n"
    )
}

#[test]
fn an_edit_of_the_same_size_in_the_same_second_is_seen_by_the_next_listing() {
    let dir = tempfile::tempdir().unwrap();
    let store = cached(dir.path(), 1 << 20);
    let path = dir.path().join("shared/note.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, entry_text("alpha")).unwrap();
    assert_eq!(search(&store, "alpha", None).len(), 1);
    // Changed within the last second: not cached, so an edit in the same tick cannot hide.
    assert_eq!(store.cache_stats().unwrap().entries, 0);
    edit_in_place(&path, &entry_text("gamma"));
    assert!(search(&store, "alpha", None).is_empty());
    assert_eq!(search(&store, "gamma", None).len(), 1);
}

#[test]
fn an_edit_of_a_cached_file_that_keeps_its_size_and_mtime_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let store = cached(dir.path(), 1 << 20);
    let path = dir.path().join("shared/note.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, entry_text("alpha")).unwrap();
    settle();
    assert_eq!(search(&store, "alpha", None).len(), 1);
    assert_eq!(store.cache_stats().unwrap().entries, 1, "a settled file is cached");
    assert_eq!(store.cache_stats().unwrap().handles, 1, "holding its file: checked with fstat");
    assert_eq!(search(&store, "alpha", None).len(), 1, "and served from the cache");
    edit_in_place(&path, &entry_text("gamma"));
    assert!(search(&store, "alpha", None).is_empty());
    assert_eq!(search(&store, "gamma", None)[0].2, "gamma\n");
}

#[test]
fn writes_renames_and_deletes_are_seen_through_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = cached(dir.path(), 1 << 20);
    let now = Timestamp::now();
    for name in ["a", "b", "c"] {
        store.create(NewEntry::new(id(&format!("shared:{name}")), format!("word {name}")), now).unwrap();
    }
    settle();
    assert_eq!(search(&store, "word", None).len(), 3);
    assert_eq!(store.cache_stats().unwrap().entries, 3);
    // Through the store.
    let patch = memory_entry::Patch::new(Some("other".into()), vec![], vec![]).unwrap();
    store.update(&id("shared:a"), 1, &patch, Timestamp::now()).unwrap();
    // By hand: a file renamed over another (a new inode), and a delete.
    let shared = dir.path().join("shared");
    std::fs::write(shared.join("new.md"), "---\nkind: fact\n---\nreplaced b\n").unwrap();
    std::fs::rename(shared.join("new.md"), shared.join("b.md")).unwrap();
    std::fs::remove_file(shared.join("c.md")).unwrap();
    let found = search(&store, "word other replaced", None);
    let found: Vec<(&str, &str)> =
        found.iter().map(|(id, _, content)| (id.as_str(), content.as_str())).collect();
    assert_eq!(found, [("shared:a", "other"), ("shared:b", "replaced b\n")]);
}

#[test]
fn a_symlink_or_a_second_link_put_in_place_of_a_cached_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = cached(dir.path(), 1 << 20);
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("a.md"), entry_text("alpha")).unwrap();
    std::fs::write(dir.path().join("outside.md"), entry_text("alpha")).unwrap();
    settle();
    assert_eq!(search(&store, "alpha", None).len(), 1);
    assert_eq!(store.cache_stats().unwrap().entries, 1);
    std::fs::hard_link(shared.join("a.md"), dir.path().join("alias.md")).unwrap();
    assert!(search(&store, "alpha", None).is_empty(), "a second link is refused, cached or not");
    std::fs::remove_file(dir.path().join("alias.md")).unwrap();
    assert_eq!(search(&store, "alpha", None).len(), 1);
    std::fs::remove_file(shared.join("a.md")).unwrap();
    std::os::unix::fs::symlink("../outside.md", shared.join("a.md")).unwrap();
    assert!(search(&store, "alpha", None).is_empty(), "a symlink is never followed, cached or not");
}

#[test]
fn the_cache_stays_within_its_budget_and_answers_as_no_cache_does() {
    let dir = tempfile::tempdir().unwrap();
    let now = Timestamp::now();
    let plain = MarkdownStore::open(dir.path()).unwrap();
    for i in 0..300 {
        let words = ["alpha", "beta", "Gamma", "dữ liệu", "ΟΔΟΣ"];
        let content = format!("{} {} note {i}", words[i % 5], words[(i / 5) % 5]);
        plain.create(NewEntry::new(id(&format!("shared:n{i:03}")), content), now).unwrap();
    }
    settle();
    let small = cached(dir.path(), 40_000);
    let large = cached(dir.path(), 1 << 24);
    // Some entries hold their file, the others are checked by name.
    let few_handles =
        MarkdownStore::open_with(dir.path(), StoreOptions::new().entry_cache(1 << 24).entry_cache_handles(7))
            .unwrap();
    for round in 0..3 {
        for (query, limit) in
            [("alpha", None), ("gamma dữ", Some(7)), ("οδος beta", Some(1)), ("", Some(20)), ("", None)]
        {
            let expected = search(&plain, query, limit);
            assert_eq!(search(&small, query, limit), expected, "round {round}: {query} {limit:?}");
            assert_eq!(search(&large, query, limit), expected, "round {round}: {query} {limit:?}");
            assert_eq!(search(&few_handles, query, limit), expected, "round {round}: {query} {limit:?}");
        }
        let stats = small.cache_stats().unwrap();
        assert!(stats.bytes <= stats.budget, "{stats:?}");
        assert!(stats.entries > 0 && stats.entries < 300, "{stats:?}");
        assert_eq!(large.cache_stats().unwrap().entries, 300);
        let held = few_handles.cache_stats().unwrap();
        assert_eq!((held.entries, held.handles, held.max_handles), (300, 7, 7));
    }
}

/// Entries hold their files open only as far as the budget of descriptors goes; with or without one, every change
/// is seen, and an entry whose directory changed and settled again is bound to its new listing.
#[test]
fn entries_with_and_without_a_held_file_see_every_change_as_their_directories_change() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::new().entry_cache(1 << 20).entry_cache_handles(2);
    let store = MarkdownStore::open_with(dir.path(), options).unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    for name in ["a", "b", "c", "d"] {
        std::fs::write(shared.join(format!("{name}.md")), entry_text(&format!("{name}1"))).unwrap();
    }
    settle();
    let contents = |store: &MarkdownStore| -> Vec<String> {
        search(store, "", None).into_iter().map(|(_, _, content)| content).collect()
    };
    assert_eq!(contents(&store), ["a1\n", "b1\n", "c1\n", "d1\n"]);
    let stats = store.cache_stats().unwrap();
    assert_eq!((stats.entries, stats.handles), (4, 2));
    // An edit in place of each file, none of which changes the directory.
    for name in ["a", "b", "c", "d"] {
        edit_in_place(&shared.join(format!("{name}.md")), &entry_text(&format!("{name}2")));
    }
    assert_eq!(contents(&store), ["a2\n", "b2\n", "c2\n", "d2\n"]);
    settle();
    assert_eq!(contents(&store), ["a2\n", "b2\n", "c2\n", "d2\n"], "cached again");
    // The directory changes (a new name): every entry is checked by name, and bound again once it settles.
    std::fs::write(shared.join("e.md"), entry_text("e1")).unwrap();
    assert_eq!(contents(&store), ["a2\n", "b2\n", "c2\n", "d2\n", "e1\n"]);
    settle();
    assert_eq!(contents(&store), ["a2\n", "b2\n", "c2\n", "d2\n", "e1\n"]);
    for name in ["a", "b", "c", "d"] {
        edit_in_place(&shared.join(format!("{name}.md")), &entry_text(&format!("{name}3")));
    }
    // A file renamed over another: the directory changes, and the name leads to another file.
    std::fs::write(shared.join("tmp"), entry_text("x9")).unwrap();
    std::fs::rename(shared.join("tmp"), shared.join("e.md")).unwrap();
    assert_eq!(contents(&store), ["a3\n", "b3\n", "c3\n", "d3\n", "x9\n"]);
    let stats = store.cache_stats().unwrap();
    assert!(stats.handles <= 2, "{stats:?}");
}

/// Without a descriptor to spare, no entry holds its file, and the cache still answers.
#[test]
fn a_cache_without_descriptors_checks_every_file_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        MarkdownStore::open_with(dir.path(), StoreOptions::new().entry_cache(1 << 20).entry_cache_handles(0))
            .unwrap();
    let path = dir.path().join("shared/note.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, entry_text("alpha")).unwrap();
    settle();
    assert_eq!(search(&store, "alpha", None).len(), 1);
    let stats = store.cache_stats().unwrap();
    assert_eq!((stats.entries, stats.handles), (1, 0));
    edit_in_place(&path, &entry_text("gamma"));
    assert_eq!(search(&store, "gamma", None)[0].2, "gamma\n");
}

#[test]
fn a_listing_with_a_limit_keeps_the_best_in_rank_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    for i in 0..490 {
        let content = match i % 7 {
            0 => "postgres migration",
            1 | 2 => "postgres",
            3 => "Migration",
            _ => "nothing",
        };
        let at = Timestamp::from_unix_millis(1_790_000_000_000 + (i % 13) * 1000).unwrap();
        store.create(NewEntry::new(id(&format!("shared:e{i:03}")), content), at).unwrap();
    }
    for limit in [0, 1, 5, 99, 1000] {
        let listing = |limit| {
            Listing::new(vec![MemoryPrefix::parse("shared").unwrap()], Timestamp::now())
                .with_query("postgres migration")
                .with_limit(limit)
        };
        let mut all = store.list(&listing(None)).unwrap();
        all.sort_by(Scored::cmp_rank);
        all.truncate(limit);
        all.sort_by(|a, b| a.entry.id.cmp(&b.entry.id));
        assert_eq!(store.list(&listing(Some(limit))).unwrap(), all, "limit {limit}");
    }
}

#[test]
fn a_listing_over_many_small_directories_finds_every_entry_with_and_without_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    let now = Timestamp::now();
    for i in 0..450 {
        let id = id(&format!("shared:d{:02}:e{i:03}", i % 150));
        store.create(NewEntry::new(id, format!("note {i}")), now).unwrap();
    }
    let warm = cached(dir.path(), 1 << 24);
    for round in 0..2 {
        assert_eq!(search(&store, "note", None).len(), 450, "round {round}");
        assert_eq!(search(&warm, "note", None), search(&store, "note", None), "round {round}");
        assert_eq!(search(&warm, "note", Some(3)).len(), 3);
    }
}

#[test]
fn a_cached_directory_moved_elsewhere_below_the_root_lists_its_entries_under_their_new_ids() {
    let dir = tempfile::tempdir().unwrap();
    let store = cached(dir.path(), 1 << 20);
    let now = Timestamp::now();
    for name in ["a", "b"] {
        store.create(NewEntry::new(id(&format!("shared:team:{name}")), format!("word {name}")), now).unwrap();
    }
    settle();
    let ids = |store: &MarkdownStore| -> Vec<String> {
        search(store, "word", None).into_iter().map(|(id, _, _)| id).collect()
    };
    assert_eq!(ids(&store), ["shared:team:a", "shared:team:b"]);
    assert_eq!(ids(&store), ["shared:team:a", "shared:team:b"], "served from the cache");
    std::fs::rename(dir.path().join("shared/team"), dir.path().join("shared/crew")).unwrap();
    assert_eq!(ids(&store), ["shared:crew:a", "shared:crew:b"]);
    settle();
    assert_eq!(ids(&store), ["shared:crew:a", "shared:crew:b"]);
    assert_eq!(ids(&store), ["shared:crew:a", "shared:crew:b"], "served from the cache");
}

/// Enough files that a listing reads them on every thread it has: the first listings read them from disk, handing
/// them over as the walk finds them; once the cache holds them, a listing walks first and the threads then share
/// every file. Each way, the answers are those of a store without the cache, and an edit is seen.
#[test]
fn a_large_directory_answers_alike_read_from_disk_and_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let count = 1500;
    for i in 0..count {
        let word = if i % 3 == 0 { "postgres" } else { "sqlite00" };
        std::fs::write(shared.join(format!("n{i:04}.md")), entry_text(word)).unwrap();
    }
    settle();
    let plain = MarkdownStore::open(dir.path()).unwrap();
    let warm = cached(dir.path(), 1 << 26);
    for round in 0..4 {
        assert_eq!(search(&warm, "postgres", None), search(&plain, "postgres", None), "round {round}");
        assert_eq!(search(&warm, "postgres", Some(7)), search(&plain, "postgres", Some(7)), "round {round}");
    }
    assert_eq!(search(&plain, "postgres", None).len(), count / 3);
    assert_eq!(warm.cache_stats().unwrap().entries, count);
    edit_in_place(&shared.join("n0001.md"), &entry_text("postgres"));
    let found = search(&warm, "postgres", None);
    assert_eq!(found, search(&plain, "postgres", None));
    assert!(found.iter().any(|(id, _, _)| id == "shared:n0001"), "{found:?}");
}
