//! Actors, access requests, decisions and the default grant policy.

use std::fmt;
use std::str::FromStr;

use memory_id::{MemoryId, MemoryPrefix, Scope, SegmentProblem, validate_segment};
use serde::Serialize;

use crate::Grant;

/// A role name: a valid ID segment without `:` or `*`, so that `private:<role>` is a valid prefix whose owner is
/// exactly this role, `private:<role>` a grant on exactly its memory, and `<role>.yaml` a plain file name; and
/// without the pattern characters of the runtimes' deny rules (`? [ ] { } ( ) !`, `\`) or whitespace, so that a
/// fence written for `private/<role>/` denies exactly that directory.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Role(String);

/// A role name that is not a valid segment, or holds a character IDs and grants reserve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid role `{}`: {}", memory_id::shown(&self.input), self.reason.code())]
pub struct InvalidRoleError {
    input: String,
    reason: InvalidRoleReason,
}

/// Why a role name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidRoleReason {
    /// The name is not a valid ID segment.
    Segment(SegmentProblem),
    /// The name holds `:` (which separates ID segments, so `private:a:b` would name role `a`) or `*` (the grant
    /// wildcard, so the grant `private:*` could not be narrowed to this role).
    ReservedChar(char),
    /// The name holds a pattern character of the runtimes' permission rules (`? [ ] { } ( ) !`) or whitespace: a
    /// deny rule naming `private/<role>/**` would then match other directories, or none.
    PatternChar(char),
}

impl InvalidRoleReason {
    /// The stable machine-readable reason: a segment reason of [`SegmentProblem::code`], `reserved_char` or
    /// `pattern_char`.
    pub fn code(self) -> &'static str {
        match self {
            InvalidRoleReason::Segment(problem) => problem.code(),
            InvalidRoleReason::ReservedChar(_) => "reserved_char",
            InvalidRoleReason::PatternChar(_) => "pattern_char",
        }
    }
}

impl InvalidRoleError {
    /// The role exactly as given.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why it was refused.
    pub fn reason(&self) -> InvalidRoleReason {
        self.reason
    }

    /// What is wrong with it as a segment; `None` when it is a valid segment holding a reserved or pattern
    /// character.
    pub fn problem(&self) -> Option<SegmentProblem> {
        match self.reason {
            InvalidRoleReason::Segment(problem) => Some(problem),
            InvalidRoleReason::ReservedChar(_) | InvalidRoleReason::PatternChar(_) => None,
        }
    }
}

impl Role {
    /// Parses a role name.
    ///
    /// # Errors
    ///
    /// [`InvalidRoleError`] when the name is not a valid ID segment (empty, `.`/`..`, a separator, a control
    /// character, over 200 bytes), holds `:` or `*`, or holds a pattern character (`? [ ] { } ( ) !`) or
    /// whitespace. Checked in that order.
    pub fn parse(input: &str) -> Result<Role, InvalidRoleError> {
        let fail = |reason| Err(InvalidRoleError { input: input.to_owned(), reason });
        if let Err(problem) = validate_segment(input) {
            return fail(InvalidRoleReason::Segment(problem));
        }
        if let Some(c) = input.chars().find(|&c| c == ':' || c == '*') {
            return fail(InvalidRoleReason::ReservedChar(c));
        }
        if let Some(c) = input.chars().find(|&c| is_pattern_char(c)) {
            return fail(InvalidRoleReason::PatternChar(c));
        }
        Ok(Role(input.to_owned()))
    }

    /// The role name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A character the runtimes' permission rules read as a pattern (`? [ ] { } ( ) !`; `\` is already a separator
/// for segments), or whitespace, which ends a rule.
fn is_pattern_char(c: char) -> bool {
    matches!(c, '?' | '[' | ']' | '{' | '}' | '(' | ')' | '!' | '\\') || c.is_whitespace()
}

impl fmt::Debug for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Role({:?})", self.0)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Role {
    type Err = InvalidRoleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::parse(s)
    }
}

impl Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// What a request does: `read` (get, search) or `write` (create, update, delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// get and search.
    Read,
    /// create, update and delete.
    Write,
}

impl Operation {
    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role with its memory grants, as an agent definition declares them.
///
/// ```
/// use memory_policy::{Actor, Grant, Role};
///
/// let worker = Actor::new(Role::parse("worker").unwrap())
///     .with_read([Grant::parse("shared").unwrap(), Grant::parse("private:worker").unwrap()])
///     .with_write([Grant::parse("private:worker").unwrap()]);
/// assert_eq!(worker.grants(memory_policy::Operation::Read).len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    role: Role,
    reports_to: Option<Role>,
    read: Vec<Grant>,
    write: Vec<Grant>,
}

impl Actor {
    /// An actor with no grants at all.
    pub fn new(role: Role) -> Actor {
        Actor { role, reports_to: None, read: Vec::new(), write: Vec::new() }
    }

    /// Sets the role this one reports to. Reporting grants nothing.
    #[must_use]
    pub fn with_reports_to(mut self, manager: Option<Role>) -> Actor {
        self.reports_to = manager;
        self
    }

    /// Adds read grants.
    #[must_use]
    pub fn with_read(mut self, grants: impl IntoIterator<Item = Grant>) -> Actor {
        self.read.extend(grants);
        self
    }

    /// Adds write grants.
    #[must_use]
    pub fn with_write(mut self, grants: impl IntoIterator<Item = Grant>) -> Actor {
        self.write.extend(grants);
        self
    }

    /// The acting role.
    pub fn role(&self) -> &Role {
        &self.role
    }

    /// The role this one reports to, if any. It grants nothing.
    pub fn reports_to(&self) -> Option<&Role> {
        self.reports_to.as_ref()
    }

    /// The grants for one operation, as declared.
    pub fn grants(&self, operation: Operation) -> &[Grant] {
        match operation {
            Operation::Read => &self.read,
            Operation::Write => &self.write,
        }
    }

    /// The grants that can take effect for this role (see [`Grant::effective_for`]).
    pub fn effective_grants(&self, operation: Operation) -> Vec<Grant> {
        self.grants(operation).iter().filter_map(|g| g.effective_for(self.role.as_str())).collect()
    }

    /// How this role's grants for `operation` cover the subtree `prefix` (a scope root, for the grants matrix of
    /// `alp inspect`): [`Coverage::Whole`] when one grant covers every ID in it, [`Coverage::Part`] when grants
    /// cover only some, [`Coverage::Nothing`] otherwise, and always on another role's private memory. The grants
    /// are named as written (`private:*`, not what it narrows to).
    ///
    /// ```
    /// use memory_id::MemoryPrefix;
    /// use memory_policy::{Actor, Coverage, Grant, Operation, Role};
    ///
    /// let dev = Actor::new(Role::parse("dev").unwrap())
    ///     .with_read([Grant::parse("project:*").unwrap(), Grant::parse("shared:team").unwrap(), Grant::parse("private:*").unwrap()]);
    /// let root = |p| MemoryPrefix::parse(p).unwrap();
    /// assert_eq!(dev.coverage(Operation::Read, &root("project:alp")), Coverage::Whole(vec!["project:*".into()]));
    /// assert_eq!(dev.coverage(Operation::Read, &root("shared")), Coverage::Part(vec!["shared:team".into()]));
    /// assert_eq!(dev.coverage(Operation::Read, &root("private:dev")), Coverage::Whole(vec!["private:*".into()]));
    /// assert_eq!(dev.coverage(Operation::Read, &root("private:qa")), Coverage::Nothing);
    /// assert_eq!(dev.coverage(Operation::Write, &root("shared")), Coverage::Nothing);
    /// ```
    pub fn coverage(&self, operation: Operation, prefix: &MemoryPrefix) -> Coverage {
        let role = self.role.as_str();
        if is_foreign_private(prefix.scope(), prefix.owner(), role) {
            return Coverage::Nothing;
        }
        let (mut whole, mut part) = (Vec::new(), Vec::new());
        for grant in self.grants(operation) {
            let Some(effective) = grant.effective_for(role) else { continue };
            let base = effective.base();
            // A wildcard misses its base itself, which matters only where the prefix is an ID of its own.
            let misses_prefix = effective.is_wildcard() && base == prefix && prefix.to_id().is_some();
            if base.contains_prefix(prefix) && !misses_prefix {
                whole.push(grant.as_str().to_owned());
            } else if effective.overlaps(prefix) {
                part.push(grant.as_str().to_owned());
            }
        }
        match (whole.is_empty(), part.is_empty()) {
            (false, _) => Coverage::Whole(whole),
            (true, false) => Coverage::Part(part),
            (true, true) => Coverage::Nothing,
        }
    }

    /// Grants that can never take effect because they name another role's private memory, with the operation.
    pub fn never_effective(&self) -> Vec<(Operation, &Grant)> {
        [Operation::Read, Operation::Write]
            .into_iter()
            .flat_map(|op| self.grants(op).iter().map(move |g| (op, g)))
            .filter(|(_, g)| g.is_foreign_private(self.role.as_str()))
            .collect()
    }

    /// One line per never-effective grant, for people: ``read grant `private:main` names another role's private
    /// memory and is never effective``.
    pub fn warnings(&self) -> Vec<String> {
        self.never_effective()
            .into_iter()
            .map(|(op, g)| {
                format!("{op} grant `{g}` names another role's private memory and is never effective")
            })
            .collect()
    }
}

/// How a role's grants for one operation cover a subtree ([`Actor::coverage`]), with the grants that do, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Every ID in the subtree is covered; by these grants.
    Whole(Vec<String>),
    /// Some IDs in the subtree are covered, not all; by these grants.
    Part(Vec<String>),
    /// No ID in the subtree is covered (and none ever is in another role's private memory).
    Nothing,
}

/// The access request a policy judges: `{ type: "memory", actor, operation, id }`.
#[derive(Debug, Clone, Copy)]
pub struct AccessRequest<'a> {
    /// Who asks.
    pub actor: &'a Actor,
    /// Read or write.
    pub operation: Operation,
    /// The ID asked for.
    pub id: &'a MemoryId,
}

impl AccessRequest<'_> {
    /// The request type; always `memory` (the policy language has other request types this crate does not judge).
    pub const TYPE: &'static str = "memory";
}

impl Serialize for AccessRequest<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("AccessRequest", 4)?;
        s.serialize_field("type", Self::TYPE)?;
        s.serialize_field("actor", self.actor.role())?;
        s.serialize_field("operation", &self.operation)?;
        s.serialize_field("id", self.id)?;
        s.end()
    }
}

/// Why a request was denied. Serialised as its stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum DenyCode {
    /// No grant of the actor for that operation covers the ID (or overlaps the prefix).
    #[serde(rename = "MEMORY_NOT_GRANTED")]
    MemoryNotGranted,
    /// The ID (or prefix) lies in another role's private memory; no grant can allow that.
    #[serde(rename = "PRIVATE_MEMORY_DENIED")]
    PrivateMemoryDenied,
}

impl DenyCode {
    /// `MEMORY_NOT_GRANTED` or `PRIVATE_MEMORY_DENIED`.
    pub fn as_str(self) -> &'static str {
        match self {
            DenyCode::MemoryNotGranted => "MEMORY_NOT_GRANTED",
            DenyCode::PrivateMemoryDenied => "PRIVATE_MEMORY_DENIED",
        }
    }
}

impl fmt::Display for DenyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy's answer for one ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The request may go ahead.
    Allow,
    /// The request is refused, with the stable reason.
    Deny(DenyCode),
}

/// A policy's answer for a subtree (search, prune): where the store may list, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SubtreeDecision {
    /// List only inside these subtrees (none contains another), then keep only IDs that
    /// [`PolicyEngine::authorize`] allows.
    Allow {
        /// The subtrees the store may open.
        roots: Vec<MemoryPrefix>,
    },
    /// Refused, with the stable reason.
    Deny(DenyCode),
}

/// Decides memory requests. Storage never decides: the service asks the engine before any I/O, so changing the
/// storage adapter never changes permissions. Engines are shared across the threads of a listing, hence `Send + Sync`.
pub trait PolicyEngine: Send + Sync {
    /// Judges one request for one ID.
    fn authorize(&self, request: &AccessRequest<'_>) -> Decision;

    /// Judges a request over a subtree (`prefix`, or everything when `None`) and names the subtrees the store may
    /// list. An engine must never return a root whose listing could reveal an ID that `authorize` denies for the
    /// same actor and operation unless the caller filters with `authorize`; the service always does.
    fn authorize_subtree(
        &self,
        actor: &Actor,
        operation: Operation,
        prefix: Option<&MemoryPrefix>,
    ) -> SubtreeDecision;
}

/// The default policy of ALP memory.
///
/// For an ID:
/// 1. `private:<r>:…` with `r` not the actor's role → [`DenyCode::PrivateMemoryDenied`], whatever the grants say
///    (`reportsTo` gives nothing; `private:*` never reaches another role);
/// 2. a grant of the actor for that operation covers the ID → [`Decision::Allow`];
/// 3. otherwise → [`DenyCode::MemoryNotGranted`].
///
/// For a subtree: a prefix in another role's private memory → `PRIVATE_MEMORY_DENIED`; a prefix that no effective
/// grant overlaps, or no prefix and no effective grant → `MEMORY_NOT_GRANTED`; otherwise the roots to list are the
/// intersections of the prefix with each effective grant, with nested roots removed.
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_policy::*;
///
/// let main = Actor::new(Role::parse("main").unwrap()).with_read([Grant::parse("private:*").unwrap()]);
/// let id = parse_memory_id("private:worker:draft").unwrap();
/// let decision = GrantPolicy.authorize(&AccessRequest { actor: &main, operation: Operation::Read, id: &id });
/// assert_eq!(decision, Decision::Deny(DenyCode::PrivateMemoryDenied));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GrantPolicy;

/// Another role's private memory: an ID, prefix or grant in the private scope whose owner is named and is not
/// `role`. No grant ever reaches it. The one statement of the rule: the policy's two decisions and
/// [`Grant::is_foreign_private`] ask it. (A private ID always names its owner; only the prefix `private` does not.)
pub(crate) fn is_foreign_private(scope: Scope, owner: Option<&str>, role: &str) -> bool {
    scope == Scope::Private && owner.is_some_and(|owner| owner != role)
}

impl PolicyEngine for GrantPolicy {
    fn authorize(&self, request: &AccessRequest<'_>) -> Decision {
        let role = request.actor.role().as_str();
        if is_foreign_private(request.id.scope(), request.id.owner(), role) {
            return Decision::Deny(DenyCode::PrivateMemoryDenied);
        }
        if request.actor.grants(request.operation).iter().any(|g| g.covers(request.id)) {
            Decision::Allow
        } else {
            Decision::Deny(DenyCode::MemoryNotGranted)
        }
    }

    fn authorize_subtree(
        &self,
        actor: &Actor,
        operation: Operation,
        prefix: Option<&MemoryPrefix>,
    ) -> SubtreeDecision {
        let role = actor.role().as_str();
        if let Some(prefix) = prefix
            && is_foreign_private(prefix.scope(), prefix.owner(), role)
        {
            return SubtreeDecision::Deny(DenyCode::PrivateMemoryDenied);
        }
        let mut roots: Vec<MemoryPrefix> =
            actor.effective_grants(operation).iter().filter_map(|g| g.listing_root(prefix)).collect();
        if roots.is_empty() {
            return SubtreeDecision::Deny(DenyCode::MemoryNotGranted);
        }
        roots.sort();
        roots.dedup();
        let nested: Vec<bool> =
            roots.iter().map(|r| roots.iter().any(|other| other != r && other.contains_prefix(r))).collect();
        let roots = roots.into_iter().zip(nested).filter(|(_, inner)| !inner).map(|(r, _)| r).collect();
        SubtreeDecision::Allow { roots }
    }
}
