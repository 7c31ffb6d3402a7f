//! Grants: which subtree of memory a role may read or write.

use std::fmt;
use std::str::FromStr;

use memory_id::{InvalidIdReason, MAX_ID_BYTES, MAX_SEGMENTS, MemoryId, MemoryPrefix, Scope, SegmentProblem};

/// A grant: an ID-shaped pattern matched segment by segment.
///
/// Grammar: a scope keyword, then zero or more valid segments, then optionally a final `*`. A grant without `*`
/// covers the ID it names and every ID below it; a grant ending in `*` covers only IDs strictly deeper than the part
/// before the `*`.
///
/// | grant | covers | does not cover |
/// |---|---|---|
/// | `shared` | every `shared:…` | `project:…`, `private:…` |
/// | `project:alp` | `project:alp:goals`, `project:alp:log:2026-09` | `project:other:goals` |
/// | `project:*` | every project | `shared:…`, `private:…` |
/// | `private:worker` | all of worker's private memory | `private:main:…` |
/// | `shared:team:*` | `shared:team:onboarding` and deeper | `shared:team` itself |
///
/// Coverage alone never decides access to private memory: the policy refuses another role's private memory before
/// it looks at grants (see [`GrantPolicy`](crate::GrantPolicy)).
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_policy::Grant;
///
/// let grant = Grant::parse("shared:team:*").unwrap();
/// assert!(grant.covers(&parse_memory_id("shared:team:onboarding").unwrap()));
/// assert!(!grant.covers(&parse_memory_id("shared:team").unwrap()));
/// assert_eq!(Grant::parse("project:*:goals").unwrap_err().reason().code(), "misplaced_wildcard");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Grant {
    raw: String,
    base: MemoryPrefix,
    wildcard: bool,
}

/// Why a grant was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidGrantReason {
    /// Longer than [`MAX_ID_BYTES`] bytes.
    TooLong {
        /// The grant's length in bytes.
        len: usize,
    },
    /// More than [`MAX_SEGMENTS`] segments (a final `*` included).
    TooManySegments {
        /// How many segments the grant has.
        count: usize,
    },
    /// The first segment is not exactly `shared`, `project` or `private`.
    UnknownScope,
    /// A `*` that is not the whole last segment.
    MisplacedWildcard {
        /// The 1-based position of the segment holding it; the scope keyword is segment 1.
        index: usize,
    },
    /// A segment that is not valid.
    Segment {
        /// The 1-based position of the segment; the scope keyword is segment 1.
        index: usize,
        /// What is wrong with it.
        problem: SegmentProblem,
    },
}

impl InvalidGrantReason {
    /// The stable machine-readable reason: `too_long`, `too_many_segments`, `unknown_scope`, `misplaced_wildcard`,
    /// or one of the segment reasons of [`SegmentProblem::code`].
    pub fn code(&self) -> &'static str {
        match self {
            InvalidGrantReason::TooLong { .. } => "too_long",
            InvalidGrantReason::TooManySegments { .. } => "too_many_segments",
            InvalidGrantReason::UnknownScope => "unknown_scope",
            InvalidGrantReason::MisplacedWildcard { .. } => "misplaced_wildcard",
            InvalidGrantReason::Segment { problem, .. } => problem.code(),
        }
    }
}

/// A grant that does not follow the grant grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid grant `{}`: {}", memory_id::shown(&self.input), self.detail())]
pub struct InvalidGrantError {
    input: String,
    reason: InvalidGrantReason,
}

impl InvalidGrantError {
    /// The grant exactly as written.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why it was refused.
    pub fn reason(&self) -> InvalidGrantReason {
        self.reason
    }

    fn detail(&self) -> String {
        match self.reason {
            InvalidGrantReason::TooLong { len } => {
                format!("it is {len} bytes long, the limit is {MAX_ID_BYTES}")
            }
            InvalidGrantReason::TooManySegments { count } => {
                format!("it has {count} segments, the limit is {MAX_SEGMENTS}")
            }
            InvalidGrantReason::UnknownScope => {
                "it must start with `shared`, `project` or `private`".to_owned()
            }
            InvalidGrantReason::MisplacedWildcard { index } => {
                format!("segment {index} holds a `*`, which may only be the whole last segment")
            }
            InvalidGrantReason::Segment { index, problem } => {
                let segment = self.input.split(':').nth(index - 1).unwrap_or_default();
                format!("segment {index} (`{}`) is invalid: {}", memory_id::shown(segment), problem.code())
            }
        }
    }
}

impl Grant {
    /// Parses a grant.
    ///
    /// # Errors
    ///
    /// [`InvalidGrantError`] when the grant is too long, has too many segments, does not start with a scope
    /// keyword, holds an invalid segment, or has a `*` anywhere but as the whole last segment.
    pub fn parse(input: &str) -> Result<Grant, InvalidGrantError> {
        let fail = |reason| Err(InvalidGrantError { input: input.to_owned(), reason });
        // The bounds of an ID, with a final `*` counted as a segment.
        if input.len() > MAX_ID_BYTES {
            return fail(InvalidGrantReason::TooLong { len: input.len() });
        }
        let count = input.split(':').count();
        if count > MAX_SEGMENTS {
            return fail(InvalidGrantReason::TooManySegments { count });
        }
        // A grant is a prefix, then maybe `:*`: the prefix is read by the ID grammar itself.
        let (base_text, wildcard) = match input.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (input, false),
        };
        // A `*` anywhere else, after the scope keyword, is misplaced; it is reported where an invalid segment
        // before it would not be.
        let misplaced =
            base_text.split(':').skip(1).position(|segment| segment.contains('*')).map(|at| at + 2);
        match MemoryPrefix::parse(base_text) {
            Ok(base) => match misplaced {
                None => Ok(Grant { raw: input.to_owned(), base, wildcard }),
                Some(index) => fail(InvalidGrantReason::MisplacedWildcard { index }),
            },
            Err(error) => match (error.reason(), misplaced) {
                (InvalidIdReason::Segment { index, .. }, Some(star)) if star <= index => {
                    fail(InvalidGrantReason::MisplacedWildcard { index: star })
                }
                (InvalidIdReason::Segment { index, problem }, _) => {
                    fail(InvalidGrantReason::Segment { index, problem })
                }
                // What is left is the scope keyword (the bounds were checked above, and a prefix needs no more
                // than its keyword).
                _ => fail(InvalidGrantReason::UnknownScope),
            },
        }
    }

    /// The grant as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The scope named by the first segment.
    pub fn scope(&self) -> Scope {
        self.base.scope()
    }

    /// The part before a final `*`, or the whole grant.
    pub fn base(&self) -> &MemoryPrefix {
        &self.base
    }

    /// Whether the grant ends in `*` (covers only IDs strictly deeper than its base).
    pub fn is_wildcard(&self) -> bool {
        self.wildcard
    }

    /// Whether this grant covers `id`. This is pure coverage: it does not apply the private-memory rule.
    pub fn covers(&self, id: &MemoryId) -> bool {
        self.base.contains(id) && (!self.wildcard || id.segment_count() > self.base.segment_count())
    }

    /// Whether some valid ID is both covered by this grant and inside `prefix`'s subtree.
    ///
    /// Because every grant covers at least one valid ID below any prefix of its base (the length limits of a grant
    /// leave room for one more segment), this holds exactly when one of the two subtrees contains the other.
    pub fn overlaps(&self, prefix: &MemoryPrefix) -> bool {
        self.base.contains_prefix(prefix) || prefix.contains_prefix(&self.base)
    }

    /// The subtree to list to find every ID this grant covers inside `prefix` (or everywhere when `None`): the
    /// deeper of the grant's base and the prefix, or `None` when they do not overlap.
    pub fn listing_root(&self, prefix: Option<&MemoryPrefix>) -> Option<MemoryPrefix> {
        match prefix {
            None => Some(self.base.clone()),
            Some(prefix) if self.base.contains_prefix(prefix) => Some(prefix.clone()),
            Some(prefix) if prefix.contains_prefix(&self.base) => Some(self.base.clone()),
            Some(_) => None,
        }
    }

    /// Whether this grant names private memory of a role other than `role` (and so can never take effect for it).
    pub fn is_foreign_private(&self, role: &str) -> bool {
        crate::engine::is_foreign_private(self.scope(), self.base.owner(), role)
    }

    /// The part of this grant that can take effect for `role`: itself, except that a grant on the whole private
    /// scope (`private`, `private:*`) narrows to `private:<role>` and one on another role's private memory has no
    /// effect at all.
    pub fn effective_for(&self, role: &str) -> Option<Grant> {
        if self.scope() != Scope::Private {
            return Some(self.clone());
        }
        match self.base.owner() {
            Some(owner) if owner == role => Some(self.clone()),
            Some(_) => None,
            None => Grant::parse(&format!("private:{role}")).ok(),
        }
    }
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Grant({:?})", self.raw)
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl FromStr for Grant {
    type Err = InvalidGrantError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Grant::parse(s)
    }
}

impl serde::Serialize for Grant {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.raw)
    }
}

impl<'de> serde::Deserialize<'de> for Grant {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Grant::parse(&text).map_err(serde::de::Error::custom)
    }
}
