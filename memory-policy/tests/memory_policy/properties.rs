//! Properties against the reference models `testkit::model::{grant, id}` written from `conformance/README.md`, on
//! grants, IDs and prefixes drawn from a small alphabet so that matches actually happen.

use std::sync::OnceLock;

use memory_id::{MemoryId, MemoryPrefix, Scope, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, Decision, DenyCode, Grant, GrantPolicy, Operation, PolicyEngine, Role,
    SubtreeDecision,
};
use proptest::prelude::*;
use testkit::model::grant::{
    authorize as model_authorize, covers as model_covers, grant_refusal, subtree as model_subtree,
};
use testkit::model::id::contains as model_contains;

const ALPHABET: [&str; 4] = ["a", "team", "worker", "main"];
const ROLES: [&str; 2] = ["worker", "main"];

/// Every valid ID over the alphabet with 1 to 4 segments below the scope keyword: deep enough to hold a witness for
/// every grant and prefix the strategies below produce.
fn all_ids() -> &'static [MemoryId] {
    static IDS: OnceLock<Vec<MemoryId>> = OnceLock::new();
    IDS.get_or_init(|| {
        let mut paths: Vec<String> = ALPHABET.iter().map(|s| (*s).to_owned()).collect();
        let mut all = paths.clone();
        for _ in 1..4 {
            paths = paths.iter().flat_map(|p| ALPHABET.iter().map(move |s| format!("{p}:{s}"))).collect();
            all.extend(paths.iter().cloned());
        }
        Scope::ALL
            .iter()
            .flat_map(|scope| all.iter().map(move |p| format!("{scope}:{p}")))
            .filter_map(|text| parse_memory_id(&text).ok())
            .collect()
    })
}

fn scope() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["shared", "project", "private"])
}

fn segments(max: usize) -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..=max)
}

/// Grant text: a scope, up to three segments, maybe a final `*`.
fn grant_text() -> impl Strategy<Value = String> {
    (scope(), segments(3), any::<bool>()).prop_map(|(scope, segs, star)| {
        let mut parts = vec![scope];
        parts.extend(segs);
        if star {
            parts.push("*");
        }
        parts.join(":")
    })
}

fn grant() -> impl Strategy<Value = Grant> {
    grant_text().prop_map(|g| Grant::parse(&g).unwrap())
}

fn prefix() -> impl Strategy<Value = MemoryPrefix> {
    (scope(), segments(3)).prop_map(|(scope, segs)| {
        let mut parts = vec![scope];
        parts.extend(segs);
        MemoryPrefix::parse(&parts.join(":")).unwrap()
    })
}

fn id() -> impl Strategy<Value = MemoryId> {
    prop::sample::select(all_ids().to_vec())
}

fn operation() -> impl Strategy<Value = Operation> {
    prop::sample::select(vec![Operation::Read, Operation::Write])
}

fn actor() -> impl Strategy<Value = Actor> {
    let grants = || prop::collection::vec(grant(), 0..5);
    (prop::sample::select(ROLES.to_vec()), grants(), grants()).prop_map(|(role, read, write)| {
        Actor::new(Role::parse(role).unwrap()).with_read(read).with_write(write)
    })
}

fn authorize(actor: &Actor, operation: Operation, id: &MemoryId) -> Decision {
    GrantPolicy.authorize(&AccessRequest { actor, operation, id })
}

fn grant_segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["shared", "project", "private", "a", "team", "*"]).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["", ".", "..", "**", "a*", "*a", "a/b", "\\", "\0", "\n", "Shared"])
            .prop_map(str::to_owned),
        1 => "a{199,201}",
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn grant_parsing_agrees_with_the_reference(parts in prop::collection::vec(grant_segment(), 1..6)) {
        let input = parts.join(":");
        let got = Grant::parse(&input);
        let expected = grant_refusal(&input).map(|(code, _)| code);
        prop_assert_eq!(got.as_ref().err().map(|e| e.reason().code()), expected, "{:?}", input);
        if let Ok(grant) = got {
            prop_assert_eq!(grant.as_str(), input.as_str());
            prop_assert_eq!(Grant::parse(&grant.to_string()).unwrap(), grant.clone());
            let message = Grant::parse(&format!("{input}:")).unwrap_err().to_string();
            prop_assert!(!message.chars().any(char::is_control), "{:?}", message);
        }
    }

    #[test]
    fn arbitrary_grants_and_roles_never_panic(input in any::<String>()) {
        let grant = Grant::parse(&input);
        let expected = grant_refusal(&input).map(|(code, _)| code);
        prop_assert_eq!(grant.err().map(|e| e.reason().code()), expected);
        if let Err(e) = Role::parse(&input) {
            prop_assert!(!e.to_string().chars().any(char::is_control));
        }
    }

    #[test]
    fn covers_agrees_with_the_model(grant in grant(), id in id()) {
        prop_assert_eq!(grant.covers(&id), model_covers(grant.as_str(), id.as_str()), "{} covers {}", grant, id);
    }

    #[test]
    fn a_wildcard_grant_never_covers_its_own_base(grant in grant(), extra in segments(2)) {
        if grant.is_wildcard() {
            let base = grant.base().as_str();
            if let Ok(id) = parse_memory_id(base) {
                prop_assert!(!grant.covers(&id), "{} covers its base", grant);
            }
            // …but covers everything strictly below it.
            let mut below = vec![base, "a"];
            below.extend(extra);
            if let Ok(id) = parse_memory_id(&below.join(":")) {
                prop_assert!(grant.covers(&id), "{} does not cover {}", grant, id);
            }
        }
    }

    #[test]
    fn authorize_agrees_with_the_model(actor in actor(), operation in operation(), id in id()) {
        let grants = actor.grants(operation).iter().map(Grant::as_str);
        let expected = model_authorize(actor.role().as_str(), grants, id.as_str());
        prop_assert_eq!(authorize(&actor, operation, &id), expected);
    }

    #[test]
    fn another_roles_private_memory_is_never_allowed(
        role in prop::sample::select(ROLES.to_vec()),
        grants in prop::collection::vec(grant(), 0..8),
        owner in prop::sample::select(ALPHABET.to_vec()),
        path in prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 1..3),
        operation in operation(),
    ) {
        prop_assume!(owner != role);
        let everything = ["private", "private:*", "private:main", "private:worker", "private:a:*", "shared", "project:*"];
        let actor = Actor::new(Role::parse(role).unwrap())
            .with_reports_to(Some(Role::parse(owner).unwrap()))
            .with_read(grants.iter().cloned().chain(everything.iter().map(|g| Grant::parse(g).unwrap())))
            .with_write(grants.into_iter().chain(everything.iter().map(|g| Grant::parse(g).unwrap())));
        let id = parse_memory_id(&format!("private:{owner}:{}", path.join(":"))).unwrap();
        prop_assert_eq!(authorize(&actor, operation, &id), Decision::Deny(DenyCode::PrivateMemoryDenied));
        let prefix = MemoryPrefix::parse(&format!("private:{owner}")).unwrap();
        prop_assert_eq!(
            GrantPolicy.authorize_subtree(&actor, operation, Some(&prefix)),
            SubtreeDecision::Deny(DenyCode::PrivateMemoryDenied)
        );
    }

    #[test]
    fn overlaps_means_some_covered_id_lies_in_the_prefix(grant in grant(), prefix in prefix()) {
        let witness = all_ids()
            .iter()
            .find(|id| model_covers(grant.as_str(), id.as_str()) && model_contains(prefix.as_str(), id.as_str()));
        prop_assert_eq!(grant.overlaps(&prefix), witness.is_some(), "{} overlaps {} (witness {:?})", grant, prefix, witness);
    }

    #[test]
    fn subtree_agrees_with_the_model(
        actor in actor(),
        operation in operation(),
        prefix in prop::option::of(prefix()),
    ) {
        let grants = actor.grants(operation).iter().map(Grant::as_str);
        let expected = model_subtree(actor.role().as_str(), grants, prefix.as_ref().map(MemoryPrefix::as_str));
        let got = match GrantPolicy.authorize_subtree(&actor, operation, prefix.as_ref()) {
            SubtreeDecision::Allow { roots } => Ok(roots.iter().map(|r| r.as_str().to_owned()).collect()),
            SubtreeDecision::Deny(code) => Err(code),
        };
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn subtree_roots_hold_exactly_what_authorize_allows(
        actor in actor(),
        operation in operation(),
        prefix in prop::option::of(prefix()),
    ) {
        let role = actor.role().as_str();
        let allowed: Vec<&MemoryId> = all_ids()
            .iter()
            .filter(|id| prefix.as_ref().is_none_or(|p| p.contains(id)))
            .filter(|id| authorize(&actor, operation, id) == Decision::Allow)
            .collect();
        let foreign = prefix.as_ref().is_some_and(|p| p.scope() == Scope::Private && p.owner().is_some_and(|o| o != role));
        match GrantPolicy.authorize_subtree(&actor, operation, prefix.as_ref()) {
            SubtreeDecision::Deny(DenyCode::PrivateMemoryDenied) => prop_assert!(foreign),
            SubtreeDecision::Deny(DenyCode::MemoryNotGranted) => {
                prop_assert!(!foreign);
                prop_assert!(allowed.is_empty(), "denied, but {:?} is allowed", allowed);
            }
            SubtreeDecision::Allow { roots } => {
                prop_assert!(!foreign);
                prop_assert!(!roots.is_empty());
                prop_assert!(roots.windows(2).all(|w| w[0] < w[1]), "not sorted: {:?}", roots);
                for id in &allowed {
                    prop_assert!(roots.iter().any(|r| r.contains(id)), "{} is in no root of {:?}", id, roots);
                }
                for (i, root) in roots.iter().enumerate() {
                    for (j, other) in roots.iter().enumerate() {
                        prop_assert!(i == j || !root.contains_prefix(other), "{} contains {}", root, other);
                    }
                    prop_assert!(prefix.as_ref().is_none_or(|p| p.contains_prefix(root)), "{} outside the prefix", root);
                    prop_assert!(
                        root.scope() != Scope::Private || root.owner() == Some(role),
                        "{} reaches beyond {}'s private memory", root, role
                    );
                    prop_assert!(allowed.iter().any(|id| root.contains(id)), "{} holds nothing allowed", root);
                }
            }
        }
    }
}
