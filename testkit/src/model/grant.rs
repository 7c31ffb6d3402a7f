//! Grants and the grant policy as `conformance/README.md` defines them, on plain text.
//!
//! ```
//! use memory_policy::{Decision, DenyCode};
//! use testkit::model::grant;
//! assert!(grant::covers("shared:team:*", "shared:team:a"));
//! assert!(!grant::covers("shared:team:*", "shared:team"));
//! assert_eq!(grant::grant_refusal("shared:a*"), Some(("misplaced_wildcard", Some(2))));
//! let denied = Decision::Deny(DenyCode::PrivateMemoryDenied);
//! assert_eq!(grant::authorize("worker", ["private:*"], "private:main:x"), denied);
//! let roots = grant::subtree("worker", ["private", "shared:team:*"], None);
//! assert_eq!(roots, Ok(vec!["private:worker".to_owned(), "shared:team".to_owned()]));
//! ```

use memory_policy::{Decision, DenyCode};

use super::id::{self, Refusal};

/// Why `input` is not a grant, or `None` if it is one: the checks of an ID without a part count, where a segment
/// holding a `*` is `misplaced_wildcard` (checked before anything else) unless it is exactly `*` and the last.
pub fn grant_refusal(input: &str) -> Option<Refusal> {
    let parts = match id::head(input) {
        Ok(parts) => parts,
        Err(refusal) => return Some(refusal),
    };
    let last = parts.len() - 1;
    parts.iter().enumerate().skip(1).find_map(|(i, segment)| {
        if segment.contains('*') {
            (!(*segment == "*" && i == last)).then_some(("misplaced_wildcard", Some(i + 1)))
        } else {
            id::segment_problem(segment).map(|code| (code, Some(i + 1)))
        }
    })
}

/// A valid grant's base segments (without a final `*`), and whether it ends in `*`.
pub fn split(grant: &str) -> (Vec<&str>, bool) {
    let mut segments: Vec<&str> = grant.split(':').collect();
    let wildcard = segments.len() > 1 && segments.last() == Some(&"*");
    if wildcard {
        segments.pop();
    }
    (segments, wildcard)
}

/// A valid grant without its final `:*` (the whole grant when it has none).
pub fn base(grant: &str) -> String {
    split(grant).0.join(":")
}

/// Whether a valid grant covers a valid ID: the ID's segments begin with the base's, and with a final `*` the ID
/// has strictly more segments (a wildcard never covers its own base). Pure coverage, before the private rule.
pub fn covers(grant: &str, id: &str) -> bool {
    let (base, wildcard) = split(grant);
    let id: Vec<&str> = id.split(':').collect();
    id.starts_with(&base) && (!wildcard || id.len() > base.len())
}

/// Whether some valid ID is both covered by the grant and inside the prefix: one of the grant's base and the
/// prefix contains the other.
pub fn overlaps(grant: &str, prefix: &str) -> bool {
    let base = base(grant);
    id::contains(&base, prefix) || id::contains(prefix, &base)
}

/// Whether an ID or prefix lies in the private memory of a role other than `role` (`private` alone does not).
pub fn foreign_private(text: &str, role: &str) -> bool {
    let mut segments = text.split(':');
    segments.next() == Some("private") && segments.next().is_some_and(|owner| owner != role)
}

/// The grant as it takes effect for `role`: `private` and `private:*` narrow to `private:<role>`, a grant on
/// another role's private memory has no effect (`None`), every other grant stays as written.
pub fn effective(grant: &str, role: &str) -> Option<String> {
    let segments: Vec<&str> = grant.split(':').collect();
    if segments[0] != "private" {
        return Some(grant.to_owned());
    }
    match segments.get(1) {
        None | Some(&"*") => Some(format!("private:{role}")),
        Some(owner) if *owner == role => Some(grant.to_owned()),
        Some(_) => None,
    }
}

/// The policy for one ID, in order: another role's private memory is denied `PRIVATE_MEMORY_DENIED` whatever the
/// grants say; a covering grant (of the operation asked for) allows; otherwise `MEMORY_NOT_GRANTED`.
pub fn authorize<'a>(role: &str, grants: impl IntoIterator<Item = &'a str>, id: &str) -> Decision {
    if foreign_private(id, role) {
        Decision::Deny(DenyCode::PrivateMemoryDenied)
    } else if grants.into_iter().any(|grant| covers(grant, id)) {
        Decision::Allow
    } else {
        Decision::Deny(DenyCode::MemoryNotGranted)
    }
}

/// The policy for a subtree (`None`: everything), as `conformance/README.md` computes it: the roots to list,
/// sorted in byte order with duplicates and roots inside another root removed, or the deny code.
pub fn subtree<'a>(
    role: &str,
    grants: impl IntoIterator<Item = &'a str>,
    prefix: Option<&str>,
) -> Result<Vec<String>, DenyCode> {
    if prefix.is_some_and(|p| foreign_private(p, role)) {
        return Err(DenyCode::PrivateMemoryDenied);
    }
    let mut roots: Vec<String> = grants
        .into_iter()
        .filter_map(|grant| effective(grant, role))
        .filter_map(|grant| {
            let base = base(&grant);
            match prefix {
                None => Some(base),
                Some(p) if id::contains(&base, p) => Some(p.to_owned()),
                Some(p) if id::contains(p, &base) => Some(base),
                Some(_) => None,
            }
        })
        .collect();
    roots.sort();
    roots.dedup();
    let outermost: Vec<String> =
        roots.iter().filter(|r| !roots.iter().any(|o| o != *r && id::contains(o, r))).cloned().collect();
    if outermost.is_empty() { Err(DenyCode::MemoryNotGranted) } else { Ok(outermost) }
}
