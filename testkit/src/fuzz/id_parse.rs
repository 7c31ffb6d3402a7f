//! `id_parse`: any bytes that are UTF-8, as a memory ID and as a prefix (`conformance/README.md`).
//!
//! Properties:
//! - `parse_memory_id` and `MemoryPrefix::parse` accept exactly what the reference validator written from the
//!   grammar ([`crate::model::id`]) accepts, and refuse the rest with the same reason code and segment position (so
//!   every refusal carries one of the nine documented codes, found in the documented order);
//! - an accepted ID: every segment after the scope keyword passes `validate_segment`; the part count is within the
//!   scope's minimum and the limits; it prints back as the input and parses back to an equal ID; its accessors
//!   (`segments`, `owner`, `path_segments`, `scope_root`) agree with the text; its scope root and its own prefix
//!   contain it, every ancestor prefix contains it, and a prefix that is not a whole-segment ancestor does not;
//! - an accepted prefix: the same checks without the minimum, and `to_id` exactly when the scope's minimum is met;
//! - IDs and prefixes agree: an ID is a prefix, and a refused ID is a refused prefix with the same reason, except
//!   `too_few_parts`;
//! - the error message is one line and shows no raw control character;
//! - nothing panics.

use memory_id::{
    InvalidIdReason, InvalidMemoryIdError, MAX_ID_BYTES, MAX_SEGMENT_BYTES, MAX_SEGMENTS, MemoryId,
    MemoryPrefix, Scope, parse_memory_id, validate_segment,
};

use crate::model::id as model;

/// Checks the properties on `data`; inputs that are not UTF-8 are skipped (an ID is text).
pub fn check(data: &[u8]) {
    if let Ok(input) = std::str::from_utf8(data) {
        check_str(input);
    }
}

/// Checks the properties on one input.
pub fn check_str(input: &str) {
    let id = parse_memory_id(input);
    let prefix = MemoryPrefix::parse(input);

    assert_eq!(
        outcome(&id),
        model::id_refusal(input),
        "parse_memory_id({input:?}) disagrees with the grammar"
    );
    assert_eq!(
        outcome(&prefix),
        model::prefix_refusal(input),
        "MemoryPrefix::parse({input:?}) disagrees with the grammar"
    );

    match (&id, &prefix) {
        (Ok(id), Ok(prefix)) => {
            assert_eq!(&id.to_prefix(), prefix, "an ID parses to its own prefix");
            check_id(input, id);
        }
        (Ok(_), Err(e)) => panic!("{input:?} is an ID but not a prefix: {e}"),
        (Err(e), Ok(_)) => {
            assert_eq!(e.reason().code(), "too_few_parts", "{input:?}: a prefix refused as an ID")
        }
        (Err(id_error), Err(prefix_error)) => {
            if id_error.reason().code() != "too_few_parts" {
                assert_eq!(
                    id_error.reason(),
                    prefix_error.reason(),
                    "{input:?}: ID and prefix refused differently"
                );
            }
        }
    }
    for error in [id.as_ref().err(), prefix.as_ref().err()].into_iter().flatten() {
        check_error(input, error);
    }
    if let Ok(prefix) = &prefix {
        check_prefix(input, prefix);
    }
}

/// The reason of a refusal as `(code, segment position)`, or `None` when accepted.
fn outcome<T>(result: &Result<T, InvalidMemoryIdError>) -> Option<model::Refusal> {
    let error = result.as_ref().err()?;
    let index = match error.reason() {
        InvalidIdReason::Segment { index, .. } => Some(index),
        _ => None,
    };
    Some((error.reason().code(), index))
}

fn check_error(input: &str, error: &InvalidMemoryIdError) {
    assert_eq!(error.input(), input, "the error carries the input as given");
    match error.reason() {
        InvalidIdReason::TooLong { len } => assert_eq!(len, input.len()),
        InvalidIdReason::TooManySegments { count } | InvalidIdReason::TooFewParts { count, .. } => {
            assert_eq!(count, input.split(':').count());
        }
        _ => {}
    }
    let message = error.to_string();
    assert!(
        !message.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')),
        "the message for {input:?} is not one clean line: {message:?}"
    );
}

fn check_id(input: &str, id: &MemoryId) {
    let segments: Vec<&str> = input.split(':').collect();
    let scope = id.scope();
    assert_eq!(Scope::from_keyword(segments[0]), Some(scope));
    for segment in &segments[1..] {
        assert_eq!(
            validate_segment(segment),
            Ok(()),
            "{input:?}: accepted with an invalid segment {segment:?}"
        );
    }
    assert!(segments.len() >= scope.min_id_parts(), "{input:?}: too few parts for {scope}");
    assert!(segments.len() <= MAX_SEGMENTS && input.len() <= MAX_ID_BYTES);
    assert!(segments.iter().all(|s| s.len() <= MAX_SEGMENT_BYTES));

    assert_eq!(id.as_str(), input);
    assert_eq!(id.to_string(), input);
    let printed = id.to_string();
    assert_eq!(parse_memory_id(&printed).as_ref(), Ok(id), "{input:?} does not parse back to itself");
    assert_eq!(input.parse::<MemoryId>().as_ref(), Ok(id));

    assert_eq!(id.segments().collect::<Vec<_>>(), segments);
    assert_eq!(id.segment_count(), segments.len());
    let owner_parts = if scope == Scope::Shared { 1 } else { 2 };
    assert_eq!(id.owner(), if scope == Scope::Shared { None } else { Some(segments[1]) });
    let path: Vec<&str> = id.path_segments().collect();
    assert!(!path.is_empty(), "{input:?}: no path segments");
    assert_eq!(path, segments[owner_parts..]);

    let root = id.scope_root();
    assert_eq!(root.as_str(), segments[..owner_parts].join(":"));
    assert!(root.contains(id), "{input:?} is outside its scope root");
    assert!(id.to_prefix().contains(id));
    assert_eq!(id.to_prefix().to_id().as_ref(), Some(id));
    for k in 1..=segments.len() {
        let ancestor = segments[..k].join(":");
        match MemoryPrefix::parse(&ancestor) {
            Ok(ancestor) => assert!(ancestor.contains(id), "{ancestor:?} does not contain {input:?}"),
            Err(e) => panic!("{ancestor:?}, an ancestor of the ID {input:?}, is not a prefix: {e}"),
        }
    }
    // A prefix that continues the last segment is no whole-segment ancestor: `shared:team` is not in `shared:teamx`.
    if let Ok(longer) = MemoryPrefix::parse(&format!("{input}x")) {
        assert!(!longer.contains(id), "{longer:?} contains {input:?}");
    }
}

fn check_prefix(input: &str, prefix: &MemoryPrefix) {
    let segments: Vec<&str> = input.split(':').collect();
    let scope = prefix.scope();
    assert_eq!(Scope::from_keyword(segments[0]), Some(scope));
    for segment in &segments[1..] {
        assert_eq!(validate_segment(segment), Ok(()), "prefix {input:?} accepted with an invalid segment");
    }
    assert_eq!(prefix.as_str(), input);
    let printed = prefix.to_string();
    assert_eq!(MemoryPrefix::parse(&printed).as_ref(), Ok(prefix));
    assert_eq!(prefix.segments().collect::<Vec<_>>(), segments);
    assert_eq!(prefix.segment_count(), segments.len());
    let owner = if scope == Scope::Shared { None } else { segments.get(1).copied() };
    assert_eq!(prefix.owner(), owner);
    assert!(prefix.contains_prefix(prefix));
    assert!(MemoryPrefix::of_scope(scope).contains_prefix(prefix));
    let as_id = prefix.to_id();
    assert_eq!(
        as_id.is_some(),
        segments.len() >= scope.min_id_parts(),
        "{input:?}: to_id disagrees with the parts"
    );
    if let Some(as_id) = as_id {
        assert_eq!(as_id.as_str(), input);
        assert!(prefix.contains(&as_id));
    }
}
