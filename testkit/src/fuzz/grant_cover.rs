//! `grant_cover`: a grant, an ID (also read as a prefix) and a role, against reference models
//! (`conformance/README.md`).
//!
//! Input: UTF-8 text `<grant>\n<id>\n<role>`; a missing part is empty, and the role is the rest of the text. A
//! newline can never be part of a valid grant, ID or role (it is a control character), so splitting on it loses
//! nothing that could be accepted. When the role is not a valid role name, `worker` acts instead, so that every
//! input still reaches the policy.
//!
//! Properties:
//! - `Grant::parse` accepts exactly what a reference validator of the grant grammar accepts, with the same reason
//!   code and position; an accepted grant's `base` is the grant without a final `:*`;
//! - `Grant::covers` equals the model: segment-wise prefix match, and a final `*` covers only strictly deeper IDs;
//! - `Grant::overlaps(prefix)` equals "the base contains the prefix or the prefix contains the base", and whenever
//!   it holds there is a witness ID both covered by the grant and inside the prefix (so the shortcut is exact);
//!   `listing_root` is the deeper of the two;
//! - `GrantPolicy::authorize`, for an actor holding that grant for read and write, equals the three-step model:
//!   another role's private memory is denied `PRIVATE_MEMORY_DENIED`, even for an actor that also holds `private`,
//!   `private:*` and every scope and reports to the owner; otherwise a covering grant allows;
//! - `GrantPolicy::authorize_subtree` denies another role's private subtree, lists one root equal to the model's
//!   (the effective grant intersected with the prefix), never a root in another role's private memory or outside
//!   the prefix, and every ID `authorize` allows inside the prefix lies under a root.

use memory_id::{MemoryId, MemoryPrefix, Scope, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, Decision, Grant, GrantPolicy, InvalidGrantError, InvalidGrantReason, Operation,
    PolicyEngine, Role, SubtreeDecision,
};

use crate::model::grant as model;
use crate::model::id::{Refusal, contains};

/// Checks the properties on `data`; inputs that are not UTF-8 are skipped.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut parts = text.splitn(3, '\n');
        let grant = parts.next().unwrap_or_default();
        let id = parts.next().unwrap_or_default();
        let role = parts.next().unwrap_or_default();
        check_parts(grant, id, role);
    }
}

/// Checks the properties on one (grant, ID, role) triple.
pub fn check_parts(grant_text: &str, id_text: &str, role_text: &str) {
    let parsed = Grant::parse(grant_text);
    assert_eq!(
        outcome(&parsed),
        model::grant_refusal(grant_text),
        "Grant::parse({grant_text:?}) disagrees with the grammar"
    );
    let Ok(grant) = parsed else { return };
    check_grant(grant_text, &grant);

    let role = Role::parse(role_text).or_else(|_| Role::parse("worker"));
    let Ok(role) = role else { panic!("`worker` is a role") };
    let id = parse_memory_id(id_text).ok();
    let prefix = MemoryPrefix::parse(id_text).ok();

    if let Some(id) = &id {
        assert_eq!(
            grant.covers(id),
            model::covers(grant_text, id.as_str()),
            "{grant_text:?} covers {id_text:?}: the crate and the model disagree"
        );
        check_authorize(&grant, id, &role);
    }
    let effective = model::effective(grant_text, role.as_str());
    assert_eq!(grant.effective_for(role.as_str()).map(|g| g.to_string()), effective, "{grant} for {role}");
    assert_eq!(grant.is_foreign_private(role.as_str()), effective.is_none(), "{grant} foreign for {role}");
    if let Some(prefix) = &prefix {
        check_overlap(&grant, prefix, id.as_ref());
        check_subtree(&grant, Some(prefix), id.as_ref(), &role);
    }
    check_subtree(&grant, None, id.as_ref(), &role);
}

fn outcome(result: &Result<Grant, InvalidGrantError>) -> Option<Refusal> {
    let error = result.as_ref().err()?;
    let index = match error.reason() {
        InvalidGrantReason::Segment { index, .. } | InvalidGrantReason::MisplacedWildcard { index } => {
            Some(index)
        }
        _ => None,
    };
    Some((error.reason().code(), index))
}

fn check_grant(text: &str, grant: &Grant) {
    let (base, wildcard) = model::split(text);
    assert_eq!(grant.as_str(), text);
    assert_eq!(grant.to_string(), text);
    assert_eq!(grant.is_wildcard(), wildcard, "{text:?}: wildcard");
    assert_eq!(grant.base().as_str(), base.join(":"), "{text:?}: base");
    assert_eq!(Scope::from_keyword(base[0]), Some(grant.scope()));
    let printed = grant.to_string();
    assert_eq!(Grant::parse(&printed).as_ref(), Ok(grant));
}

fn check_authorize(grant: &Grant, id: &MemoryId, role: &Role) {
    let holder = Actor::new(role.clone()).with_read([grant.clone()]).with_write([grant.clone()]);
    let every_scope = ["shared", "project", "private", "private:*", "project:*", "shared:*"]
        .into_iter()
        .filter_map(|g| Grant::parse(g).ok());
    let mut everything: Vec<Grant> = every_scope.collect();
    everything.push(grant.clone());
    let manager = id.owner().and_then(|owner| Role::parse(owner).ok());
    let greedy = Actor::new(role.clone())
        .with_reports_to(manager)
        .with_read(everything.clone())
        .with_write(everything);
    let nothing = Actor::new(role.clone());

    for operation in [Operation::Read, Operation::Write] {
        for (who, actor) in
            [("holding", &holder), ("holding every scope and", &greedy), ("holding nothing", &nothing)]
        {
            let grants: Vec<&str> = actor.grants(operation).iter().map(Grant::as_str).collect();
            let expected = model::authorize(role.as_str(), grants, id.as_str());
            let got = GrantPolicy.authorize(&AccessRequest { actor, operation, id });
            assert_eq!(got, expected, "{role} {who} {grant} asks to {operation} {id}");
        }
    }
}

fn check_overlap(grant: &Grant, prefix: &MemoryPrefix, id: Option<&MemoryId>) {
    let base = grant.base().as_str();
    let model = model::overlaps(grant.as_str(), prefix.as_str());
    assert_eq!(grant.overlaps(prefix), model, "{grant} overlaps {prefix}: the crate and the model disagree");
    let root = grant.listing_root(Some(prefix));
    assert_eq!(grant.listing_root(None).as_ref(), Some(grant.base()));
    if !model {
        assert_eq!(root, None, "{grant} and {prefix} do not overlap but list {root:?}");
        if let Some(id) = id {
            assert!(
                !(grant.covers(id) && prefix.contains(id)),
                "{grant} covers {id} inside {prefix} yet no overlap"
            );
        }
        return;
    }
    let deeper = if contains(base, prefix.as_str()) { prefix.as_str() } else { base };
    assert_eq!(root.as_ref().map(MemoryPrefix::as_str), Some(deeper), "{grant} in {prefix}: listing root");
    // The witness: the deeper of the two, made a full ID (and deeper than a wildcard's base) with `:x` segments.
    let mut witness = deeper.to_owned();
    loop {
        let long_enough = !grant.is_wildcard() || witness.split(':').count() > grant.base().segment_count();
        match parse_memory_id(&witness) {
            Ok(id) if long_enough => {
                assert!(grant.covers(&id), "witness {id} not covered by {grant}");
                assert!(prefix.contains(&id), "witness {id} not inside {prefix}");
                break;
            }
            Ok(_) => witness.push_str(":x"),
            Err(e) if e.reason().code() == "too_few_parts" => witness.push_str(":x"),
            Err(e) => {
                panic!("{grant} overlaps {prefix} but no valid ID lies in both (tried {witness:?}: {e})")
            }
        }
    }
}

/// `authorize_subtree` for an actor holding the grant, with a prefix or for everything, equals the model.
fn check_subtree(grant: &Grant, prefix: Option<&MemoryPrefix>, id: Option<&MemoryId>, role: &Role) {
    let holder = Actor::new(role.clone()).with_read([grant.clone()]).with_write([grant.clone()]);
    let expected = model::subtree(role.as_str(), [grant.as_str()], prefix.map(MemoryPrefix::as_str));
    let within = prefix.map_or_else(|| "everything".to_owned(), |p| format!("the subtree {p}"));
    for operation in [Operation::Read, Operation::Write] {
        let decision = GrantPolicy.authorize_subtree(&holder, operation, prefix);
        let actual = match &decision {
            SubtreeDecision::Allow { roots } => Ok(roots.iter().map(|r| r.to_string()).collect::<Vec<_>>()),
            SubtreeDecision::Deny(code) => Err(*code),
        };
        assert_eq!(actual, expected, "{role} holding {grant} asks to {operation} {within}");
        if let SubtreeDecision::Allow { roots } = &decision {
            check_roots(roots, prefix, role);
        }
        if let Some(id) = id {
            check_listed(&holder, operation, id, prefix, &decision);
        }
    }
}

/// Roots are sorted, none inside another, none in another role's private memory, all inside the prefix.
fn check_roots(roots: &[MemoryPrefix], prefix: Option<&MemoryPrefix>, role: &Role) {
    assert!(!roots.is_empty(), "an allowed subtree with no root");
    assert!(roots.windows(2).all(|w| w[0] < w[1]), "roots not sorted and distinct: {roots:?}");
    for root in roots {
        assert!(
            !(root.scope() == Scope::Private && root.owner() != Some(role.as_str())),
            "root {root} reaches beyond {role}'s private memory"
        );
        if let Some(prefix) = prefix {
            assert!(prefix.contains_prefix(root), "root {root} is outside the prefix {prefix}");
        }
        assert!(
            !roots.iter().any(|other| other != root && other.contains_prefix(root)),
            "nested root {root}"
        );
    }
}

/// Every ID that `authorize` allows inside the subtree lies under a listed root.
fn check_listed(
    actor: &Actor,
    operation: Operation,
    id: &MemoryId,
    prefix: Option<&MemoryPrefix>,
    decision: &SubtreeDecision,
) {
    let inside = prefix.is_none_or(|p| p.contains(id));
    let allowed = GrantPolicy.authorize(&AccessRequest { actor, operation, id }) == Decision::Allow;
    if !(inside && allowed) {
        return;
    }
    match decision {
        SubtreeDecision::Allow { roots } => {
            assert!(
                roots.iter().any(|r| r.contains(id)),
                "{id} is allowed but under none of the roots {roots:?}"
            );
        }
        SubtreeDecision::Deny(code) => {
            panic!("{id} is allowed inside {prefix:?}, yet the subtree is denied {code}")
        }
    }
}
