//! Logical IDs and prefixes as `conformance/README.md` defines them, checked in the documented order.
//!
//! ```
//! use testkit::model::id;
//! assert_eq!(id::id_refusal("shared:team:a"), None);
//! assert_eq!(id::id_refusal("shared:..:a"), Some(("dot_segment", Some(2))));
//! assert_eq!(id::id_refusal("project:alp"), Some(("too_few_parts", None)));
//! assert_eq!(id::prefix_refusal("project:alp"), None);
//! ```

/// Why an input is refused: the reason code and, for the reasons about one segment, the 1-based position of that
/// segment (the scope keyword is segment 1).
pub type Refusal = (&'static str, Option<usize>);

/// The three scope keywords.
pub const SCOPES: [&str; 3] = ["shared", "project", "private"];

/// The first problem of one segment after the scope keyword, in the documented order (`empty`, `dot_segment`,
/// `separator`, `control_char`, `segment_too_long`), or `None` for a valid segment.
pub fn segment_problem(segment: &str) -> Option<&'static str> {
    if segment.is_empty() {
        Some("empty")
    } else if segment == "." || segment == ".." {
        Some("dot_segment")
    } else if segment.contains(['/', '\\']) {
        Some("separator")
    } else if segment.chars().any(|c| c <= '\u{1f}' || c == '\u{7f}') {
        Some("control_char")
    } else if segment.len() > 200 {
        Some("segment_too_long")
    } else {
        None
    }
}

/// Whether `segment` is a valid segment after the scope keyword.
pub fn segment_ok(segment: &str) -> bool {
    segment_problem(segment).is_none()
}

/// How many segments an ID of `scope` needs at least: 2 for `shared`, 3 for `project` and `private`.
pub fn min_id_parts(scope: &str) -> usize {
    if scope == "shared" { 2 } else { 3 }
}

/// The checks an ID, a prefix and a grant share, in order: `too_long`, `too_many_segments`, `unknown_scope`. On
/// success, the segments (split on `:`, keeping empty pieces).
pub fn head(input: &str) -> Result<Vec<&str>, Refusal> {
    if input.len() > 1024 {
        return Err(("too_long", None));
    }
    let parts: Vec<&str> = input.split(':').collect();
    if parts.len() > 64 {
        return Err(("too_many_segments", None));
    }
    if !SCOPES.contains(&parts[0]) {
        return Err(("unknown_scope", None));
    }
    Ok(parts)
}

/// Why `input` is not a memory ID, or `None` if it is one.
pub fn id_refusal(input: &str) -> Option<Refusal> {
    refusal(input, true)
}

/// Why `input` is not a prefix (an ID without the part-count minimum), or `None` if it is one.
pub fn prefix_refusal(input: &str) -> Option<Refusal> {
    refusal(input, false)
}

fn refusal(input: &str, full_id: bool) -> Option<Refusal> {
    let parts = match head(input) {
        Ok(parts) => parts,
        Err(refusal) => return Some(refusal),
    };
    if full_id && parts.len() < min_id_parts(parts[0]) {
        return Some(("too_few_parts", None));
    }
    parts
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(i, segment)| segment_problem(segment).map(|code| (code, Some(i + 1))))
}

/// Whole-segment containment of two texts: the segments of `inner` begin with all the segments of `outer`
/// (`shared:team` contains `shared:team` and `shared:team:a`, not `shared:teams`).
pub fn contains(outer: &str, inner: &str) -> bool {
    let outer: Vec<&str> = outer.split(':').collect();
    let inner: Vec<&str> = inner.split(':').collect();
    inner.starts_with(&outer)
}
