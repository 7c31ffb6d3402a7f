//! `grant_cover`: a grant, an ID (also read as a prefix) and a role, against reference models (DESIGN §2).
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
    AccessRequest, Actor, Decision, DenyCode, Grant, GrantPolicy, InvalidGrantError, InvalidGrantReason,
    Operation, PolicyEngine, Role, SubtreeDecision,
};

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
        model_grant(grant_text),
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
            model_covers(grant_text, id.as_str()),
            "{grant_text:?} covers {id_text:?}: the crate and the model disagree"
        );
        check_authorize(&grant, id, &role);
    }
    if let Some(prefix) = &prefix {
        check_overlap(&grant, prefix, id.as_ref());
        check_subtree(&grant, prefix, id.as_ref(), &role);
    }
    check_subtree_everything(&grant, id.as_ref(), &role);
}

fn outcome(result: &Result<Grant, InvalidGrantError>) -> Option<(&'static str, Option<usize>)> {
    let error = result.as_ref().err()?;
    let index = match error.reason() {
        InvalidGrantReason::Segment { index, .. } | InvalidGrantReason::MisplacedWildcard { index } => {
            Some(index)
        }
        _ => None,
    };
    Some((error.reason().code(), index))
}

/// The grant grammar of DESIGN §2 and `conformance/README.md`, independent of the crate.
fn model_grant(input: &str) -> Option<(&'static str, Option<usize>)> {
    if input.len() > 1024 {
        return Some(("too_long", None));
    }
    let parts: Vec<&str> = input.split(':').collect();
    if parts.len() > 64 {
        return Some(("too_many_segments", None));
    }
    if !["shared", "project", "private"].contains(&parts[0]) {
        return Some(("unknown_scope", None));
    }
    for (i, segment) in parts.iter().enumerate().skip(1) {
        if segment.contains('*') {
            if *segment == "*" && i == parts.len() - 1 {
                continue;
            }
            return Some(("misplaced_wildcard", Some(i + 1)));
        }
        let problem = if segment.is_empty() {
            Some("empty")
        } else if *segment == "." || *segment == ".." {
            Some("dot_segment")
        } else if segment.contains(['/', '\\']) {
            Some("separator")
        } else if segment.chars().any(|c| c <= '\u{1f}' || c == '\u{7f}') {
            Some("control_char")
        } else if segment.len() > 200 {
            Some("segment_too_long")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Some((problem, Some(i + 1)));
        }
    }
    None
}

/// The grant's base segments and whether it ends in `*`.
fn split_grant(grant: &str) -> (Vec<&str>, bool) {
    let mut segments: Vec<&str> = grant.split(':').collect();
    let wildcard = segments.len() > 1 && segments.last() == Some(&"*");
    if wildcard {
        segments.pop();
    }
    (segments, wildcard)
}

/// Coverage, as in `conformance/README.md`: the ID's segments begin with the base's; with `*`, strictly more.
fn model_covers(grant: &str, id: &str) -> bool {
    let (base, wildcard) = split_grant(grant);
    let id: Vec<&str> = id.split(':').collect();
    id.len() >= base.len() && id[..base.len()] == base[..] && (!wildcard || id.len() > base.len())
}

/// Whole-segment containment of two texts.
fn model_contains(outer: &str, inner: &str) -> bool {
    let outer: Vec<&str> = outer.split(':').collect();
    let inner: Vec<&str> = inner.split(':').collect();
    inner.len() >= outer.len() && inner[..outer.len()] == outer[..]
}

fn check_grant(text: &str, grant: &Grant) {
    let (base, wildcard) = split_grant(text);
    assert_eq!(grant.as_str(), text);
    assert_eq!(grant.to_string(), text);
    assert_eq!(grant.is_wildcard(), wildcard, "{text:?}: wildcard");
    assert_eq!(grant.base().as_str(), base.join(":"), "{text:?}: base");
    assert_eq!(Scope::from_keyword(base[0]), Some(grant.scope()));
    let printed = grant.to_string();
    assert_eq!(Grant::parse(&printed).as_ref(), Ok(grant));
}

/// Whether `id` lies in the private memory of a role other than `role`.
fn foreign_private(id: &MemoryId, role: &Role) -> bool {
    id.scope() == Scope::Private && id.owner() != Some(role.as_str())
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
        let ask = |actor: &Actor| GrantPolicy.authorize(&AccessRequest { actor, operation, id });
        let expected = if foreign_private(id, role) {
            Decision::Deny(DenyCode::PrivateMemoryDenied)
        } else if model_covers(grant.as_str(), id.as_str()) {
            Decision::Allow
        } else {
            Decision::Deny(DenyCode::MemoryNotGranted)
        };
        assert_eq!(ask(&holder), expected, "{role} holding {grant} asks to {operation} {id}");
        let greedy_expected = if foreign_private(id, role) {
            Decision::Deny(DenyCode::PrivateMemoryDenied)
        } else {
            Decision::Allow
        };
        assert_eq!(ask(&greedy), greedy_expected, "{role} holding every scope asks to {operation} {id}");
        let nothing_expected = if foreign_private(id, role) {
            Decision::Deny(DenyCode::PrivateMemoryDenied)
        } else {
            Decision::Deny(DenyCode::MemoryNotGranted)
        };
        assert_eq!(ask(&nothing), nothing_expected, "{role} holding nothing asks to {operation} {id}");
    }
}

fn check_overlap(grant: &Grant, prefix: &MemoryPrefix, id: Option<&MemoryId>) {
    let base = grant.base().as_str();
    let model = model_contains(base, prefix.as_str()) || model_contains(prefix.as_str(), base);
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
    let deeper = if model_contains(base, prefix.as_str()) { prefix.as_str() } else { base };
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

/// The grant as it takes effect for `role`, as text: `private` and `private:*` narrow to `private:<role>`, a grant
/// on another role's private memory has no effect.
fn model_effective(grant: &Grant, role: &Role) -> Option<String> {
    if grant.scope() != Scope::Private {
        return Some(grant.as_str().to_owned());
    }
    match grant.base().owner() {
        None => Some(format!("private:{role}")),
        Some(owner) if owner == role.as_str() => Some(grant.as_str().to_owned()),
        Some(_) => None,
    }
}

fn check_subtree(grant: &Grant, prefix: &MemoryPrefix, id: Option<&MemoryId>, role: &Role) {
    let holder = Actor::new(role.clone()).with_read([grant.clone()]).with_write([grant.clone()]);
    let effective = model_effective(grant, role);
    assert_eq!(grant.effective_for(role.as_str()).map(|g| g.to_string()), effective, "{grant} for {role}");
    assert_eq!(grant.is_foreign_private(role.as_str()), effective.is_none(), "{grant} foreign for {role}");
    for operation in [Operation::Read, Operation::Write] {
        let decision = GrantPolicy.authorize_subtree(&holder, operation, Some(prefix));
        let foreign = prefix.scope() == Scope::Private && prefix.owner().is_some_and(|o| o != role.as_str());
        let expected_root = effective.as_deref().and_then(|e| {
            let (base, _) = split_grant(e);
            let base = base.join(":");
            if model_contains(&base, prefix.as_str()) {
                Some(prefix.as_str().to_owned())
            } else if model_contains(prefix.as_str(), &base) {
                Some(base)
            } else {
                None
            }
        });
        let expected = match (foreign, expected_root) {
            (true, _) => Err(DenyCode::PrivateMemoryDenied),
            (false, None) => Err(DenyCode::MemoryNotGranted),
            (false, Some(root)) => Ok(vec![root]),
        };
        let actual = match &decision {
            SubtreeDecision::Allow { roots } => Ok(roots.iter().map(|r| r.to_string()).collect::<Vec<_>>()),
            SubtreeDecision::Deny(code) => Err(*code),
        };
        assert_eq!(actual, expected, "{role} holding {grant} asks to {operation} the subtree {prefix}");
        if let SubtreeDecision::Allow { roots } = &decision {
            check_roots(roots, Some(prefix), role);
        }
        if let Some(id) = id {
            check_listed(&holder, operation, id, Some(prefix), &decision);
        }
    }
}

fn check_subtree_everything(grant: &Grant, id: Option<&MemoryId>, role: &Role) {
    let holder = Actor::new(role.clone()).with_read([grant.clone()]).with_write([grant.clone()]);
    for operation in [Operation::Read, Operation::Write] {
        let decision = GrantPolicy.authorize_subtree(&holder, operation, None);
        match (&decision, model_effective(grant, role)) {
            (SubtreeDecision::Allow { roots }, Some(effective)) => {
                let (base, _) = split_grant(&effective);
                let roots: Vec<&str> = roots.iter().map(MemoryPrefix::as_str).collect();
                assert_eq!(roots, [base.join(":")], "{role} holding {grant}: roots of everything");
            }
            (SubtreeDecision::Deny(DenyCode::MemoryNotGranted), None) => {}
            (other, effective) => {
                panic!("{role} holding {grant} lists everything: {other:?}, model {effective:?}")
            }
        }
        if let SubtreeDecision::Allow { roots } = &decision {
            check_roots(roots, None, role);
        }
        if let Some(id) = id {
            check_listed(&holder, operation, id, None, &decision);
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
