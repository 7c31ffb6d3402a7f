//! The adapter suite of `memory-entry`, run against the Markdown store under both path resolutions and both ways
//! of opening entry files.

use memory_entry::Limits;
use memory_markdown::{MarkdownStore, Opening, StoreOptions};
use memory_store::testkit::Subject;

fn markdown(limits: Limits) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open_with_limits(dir.path().join("memory"), limits).unwrap();
    Subject::new(store, dir)
}

fn markdown_component_walk(limits: Limits) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::new().limits(limits).force_component_walk(true);
    let store = MarkdownStore::open_with(dir.path().join("memory"), options).unwrap();
    Subject::new(store, dir)
}

/// Entry files opened directly, as on a root mounted `nodev` (the temporary directory here may not be: the suite
/// plants no device node, and `nodev.rs` checks the refusals on a real `nodev` mount).
fn markdown_direct_open(limits: Limits) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::new().limits(limits).force_opening(Opening::Direct);
    let store = MarkdownStore::open_with(dir.path().join("memory"), options).unwrap();
    assert_eq!(store.opening(), Opening::Direct);
    Subject::new(store, dir)
}

/// Entry files reopened through `/proc/self/fd`, even where the root is mounted `nodev`.
fn markdown_proc_reopen(limits: Limits) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::new().limits(limits).force_opening(Opening::ProcReopen);
    let store = MarkdownStore::open_with(dir.path().join("memory"), options).unwrap();
    assert_eq!(store.opening(), Opening::ProcReopen);
    Subject::new(store, dir)
}

fn markdown_link_fallback(limits: Limits) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::new().limits(limits).force_link_fallback(true);
    let store = MarkdownStore::open_with(dir.path().join("memory"), options).unwrap();
    Subject::new(store, dir)
}

/// With the entry cache on: the suite's listings are at instants before the files were written, so this checks that
/// the cache changes nothing for files it must not cache (the cache's own tests are in `cache.rs`).
fn markdown_cached(limits: Limits) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions::new().limits(limits).entry_cache(1 << 20);
    let store = MarkdownStore::open_with(dir.path().join("memory"), options).unwrap();
    Subject::new(store, dir)
}

memory_store::adapter_suite!(markdown_store, markdown);
memory_store::adapter_suite!(markdown_store_cached, markdown_cached);
memory_store::adapter_suite!(markdown_store_component_walk, markdown_component_walk);
memory_store::adapter_suite!(markdown_store_link_fallback, markdown_link_fallback);
memory_store::adapter_suite!(markdown_store_direct_open, markdown_direct_open);
memory_store::adapter_suite!(markdown_store_proc_reopen, markdown_proc_reopen);
