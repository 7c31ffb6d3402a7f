//! The adapter suite of `memory-entry`, run against the Markdown store under both path resolutions.

use memory_entry::Limits;
use memory_entry::testkit::Subject;
use memory_markdown::{MarkdownStore, StoreOptions};

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

memory_entry::adapter_suite!(markdown_store, markdown);
memory_entry::adapter_suite!(markdown_store_cached, markdown_cached);
memory_entry::adapter_suite!(markdown_store_component_walk, markdown_component_walk);
memory_entry::adapter_suite!(markdown_store_link_fallback, markdown_link_fallback);
