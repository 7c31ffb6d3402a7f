//! Bounded work: a query or filter value over its bound is `USAGE` before the gate (nothing read, no record), and a
//! call whose caller gave up stops at the store's next entry and writes nothing after its record.

use alp_memory::memory_entry::StorageErrorKind;
use alp_memory::memory_store::Cancel;
use alp_memory::{
    ContextRequest, CreateRequest, FieldInput, ListRequest, MAX_FILTER_CHARS, MAX_QUERY_CHARS,
    MAX_QUERY_TERMS, MemoryError, SearchRequest,
};

use crate::support::Harness;

/// `n` distinct terms (`t0 t1 …`).
fn terms(n: usize) -> String {
    (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>().join(" ")
}

fn search(query: &str) -> SearchRequest {
    SearchRequest { query: query.into(), ..SearchRequest::default() }
}

fn context(query: &str) -> ContextRequest {
    ContextRequest { query: query.into(), budget: 1000, ..ContextRequest::default() }
}

/// A valid prefix of exactly `chars` characters (ASCII, segments of at most 200 bytes).
fn prefix(chars: usize) -> String {
    let mut prefix = "shared".to_owned();
    while prefix.len() < chars {
        let room = (chars - prefix.len() - 1).min(200);
        prefix.push(':');
        prefix.push_str(&"a".repeat(room.max(1)));
    }
    assert_eq!(prefix.len(), chars);
    prefix
}

/// A search or context that was refused as USAGE and reached nothing: no record, no store call.
fn refused(h: &Harness, result: Result<impl std::fmt::Debug, MemoryError>, what: &str) {
    match result {
        Err(error) => {
            assert_eq!((error.kind(), error.code()), ("UsageError", "USAGE"), "{what}: {error}");
        }
        Ok(found) => panic!("{what}: accepted, found {found:?}"),
    }
    assert_eq!(h.take(), Vec::<String>::new(), "{what}: nothing audited, nothing read");
}

/// A call that passed the bounds: the listing, then its one `allowed` record (with the receipt), last.
fn served(h: &Harness, result: Result<impl std::fmt::Debug, MemoryError>, what: &str) {
    assert!(result.is_ok(), "{what}: {result:?}");
    let journal = h.take();
    assert_eq!(journal.last().map(String::as_str), Some("audit:allowed"), "{what}: {journal:?}");
    let (_, listings) = journal.split_last().unwrap_or((&String::new(), &[]));
    assert!(
        !listings.is_empty() && listings.iter().all(|line| line.starts_with("store:list")),
        "{what}: {journal:?}"
    );
}

#[test]
fn sixty_four_distinct_terms_are_served_and_a_sixty_fifth_is_usage() {
    let h = Harness::new();
    assert_eq!(MAX_QUERY_TERMS, 64);
    served(&h, h.service.search("worker", &search(&terms(64))), "64 terms");
    served(&h, h.service.context("worker", &context(&terms(64))), "64 terms (context)");
    // Duplicates after the ranker's folding count once: `T0 t0` and `T62` are given already, `A a` is one term.
    let folded = format!("{} T0 t0 T62 A a", terms(63));
    served(&h, h.service.search("worker", &search(&folded)), "63 terms, `T0` and `t62` again, `A a` once");
    refused(&h, h.service.search("worker", &search(&terms(65))), "65 terms");
    refused(&h, h.service.context("worker", &context(&terms(65))), "65 terms (context)");
    refused(&h, h.service.search("worker", &search(&format!("{folded} b"))), "65 once folded");
}

#[test]
fn four_thousand_and_ninety_six_characters_are_served_and_one_more_is_usage() {
    let h = Harness::new();
    assert_eq!(MAX_QUERY_CHARS, 4096);
    // Scalar values, not bytes: `é` is two bytes, and the count is taken before folding.
    served(&h, h.service.search("worker", &search(&"é".repeat(4096))), "4096 characters");
    served(&h, h.service.search("worker", &search(&"e\u{301}".repeat(2048))), "4096 with combining marks");
    refused(&h, h.service.search("worker", &search(&"é".repeat(4097))), "4097 characters");
    refused(&h, h.service.context("worker", &context(&"é".repeat(4097))), "4097 characters (context)");
    refused(&h, h.service.search("worker", &search(&" ".repeat(4097))), "4097 spaces, no term");
    // The request of the attack: 100,000 terms.
    refused(&h, h.service.search("worker", &search(&terms(100_000))), "100,000 terms");
}

#[test]
fn filter_values_of_1024_characters_are_served_and_1025_are_usage() {
    let h = Harness::new();
    assert_eq!(MAX_FILTER_CHARS, 1024);
    let (at, over) = (prefix(1024), prefix(1025));
    let with_prefix = |p: &str| SearchRequest { prefix: Some(p.to_owned()), ..search("x") };
    served(&h, h.service.search("worker", &with_prefix(&at)), "a 1024-character prefix");
    // Over the bound the prefix is never parsed: no INVALID_MEMORY_ID record.
    refused(&h, h.service.search("worker", &with_prefix(&over)), "a 1025-character prefix");
    served(
        &h,
        h.service.list("worker", &ListRequest { prefix: Some(at.clone()), ..ListRequest::default() }),
        "list under a 1024-character prefix",
    );
    refused(
        &h,
        h.service.list("worker", &ListRequest { prefix: Some(over.clone()), ..ListRequest::default() }),
        "list, 1025 characters",
    );
    for (name, at, over) in
        [("task", "é".repeat(1024), "é".repeat(1025)), ("feature", "f".repeat(1024), "f".repeat(1025))]
    {
        let plan = |value: &str| {
            let mut request = context("");
            match name {
                "task" => request.task = Some(value.to_owned()),
                _ => request.feature = Some(value.to_owned()),
            }
            request
        };
        served(&h, h.service.context("worker", &plan(&at)), &format!("a 1024-character {name}"));
        refused(&h, h.service.context("worker", &plan(&over)), &format!("a 1025-character {name}"));
        let prefixed = ContextRequest { prefix: Some(over.clone()), ..plan(&at) };
        refused(&h, h.service.context("worker", &prefixed), "a 1025-character context prefix");
    }
}

/// The entries of a store with many of them, all matching `many`.
fn many(h: &Harness, n: usize) {
    for i in 0..n {
        let request = CreateRequest {
            id: format!("shared:many:e{i:04}"),
            content: "many".into(),
            fields: FieldInput::new(),
        };
        h.service.create("main", request).unwrap();
    }
    h.take();
}

/// What main's search does: one listing of its granted subtrees, then its one `allowed` record.
const LISTED: [&str; 2] = ["store:list[private:main,project:alp,shared]", "audit:allowed"];

fn cancelled<T: std::fmt::Debug>(result: Result<T, MemoryError>, what: &str) {
    match result {
        Err(MemoryError::Storage { storage_kind: Some(StorageErrorKind::Cancelled), message, .. }) => {
            assert_eq!(
                message,
                "the call was cancelled by its caller; it stopped reading and wrote nothing more"
            );
        }
        other => panic!("{what}: expected the cancellation error, got {other:?}"),
    }
}

#[test]
fn a_cancelled_search_or_context_stops_reading_and_writes_nothing_more() {
    let h = Harness::new();
    many(&h, 300);
    let records = h.service.audit().inner.records().len();
    // Raised while the store reads: the flag raises itself at its 21st check, one per entry.
    let request = SearchRequest { cancel: Cancel::after_checks(20), ..search("many") };
    let error = h.service.search("main", &request).map(|page| page.entries);
    assert_eq!(error.as_ref().map_err(MemoryError::code).err(), Some("STORAGE_ERROR"));
    cancelled(error, "search");
    assert_eq!(h.take(), LISTED, "one record, one listing, nothing after");
    let raised = Cancel::new();
    raised.cancel();
    for request in [
        ContextRequest { cancel: raised.clone(), ..context("many") },
        ContextRequest { cancel: raised.clone(), task: Some("t".into()), ..context("many") },
    ] {
        cancelled(h.service.context("main", &request), "context");
        assert_eq!(h.take(), LISTED);
    }
    assert_eq!(h.service.audit().inner.records().len(), records + 3, "one record per call");
    // A flag that stays down changes nothing.
    let request = SearchRequest { cancel: Cancel::new(), ..search("many") };
    assert_eq!(h.service.search("main", &request).unwrap().entries.len(), 300);
}
