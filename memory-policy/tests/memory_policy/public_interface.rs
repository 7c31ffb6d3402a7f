//! The crate as an adopter uses it: only public items, the way the docs show them.

use memory_id::{MemoryPrefix, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, Decision, DenyCode, Grant, GrantPolicy, InvalidGrantError, Operation, PolicyEngine,
    Role, SubtreeDecision, parse_agent_definition,
};

#[test]
fn the_crate_example() {
    let worker = Actor::new(Role::parse("worker").unwrap()).with_read([Grant::parse("project:alp").unwrap()]);
    let ask = |id: &str| {
        let id = parse_memory_id(id).unwrap();
        GrantPolicy.authorize(&AccessRequest { actor: &worker, operation: Operation::Read, id: &id })
    };
    assert_eq!(ask("project:alp:goals"), Decision::Allow);
    assert_eq!(ask("project:other:goals"), Decision::Deny(DenyCode::MemoryNotGranted));
    assert_eq!(ask("private:main:drafts"), Decision::Deny(DenyCode::PrivateMemoryDenied));
}

#[test]
fn from_str_and_display_round_trip() {
    for text in ["shared", "project:*", "shared:team:*", "private:worker"] {
        let grant: Grant = text.parse().unwrap();
        assert_eq!(grant.to_string(), text);
        assert_eq!(format!("{grant:?}"), format!("Grant({text:?})"));
    }
    let role: Role = "worker".parse().unwrap();
    assert_eq!(role.to_string(), "worker");
    assert_eq!(format!("{role:?}"), "Role(\"worker\")");
    let err: InvalidGrantError = "project:*:goals".parse::<Grant>().unwrap_err();
    assert_eq!(err.reason().code(), "misplaced_wildcard");
    assert_eq!(err.input(), "project:*:goals");
    assert_eq!(Operation::Read.to_string(), "read");
    assert_eq!(Operation::Write.as_str(), "write");
    assert_eq!(DenyCode::PrivateMemoryDenied.to_string(), "PRIVATE_MEMORY_DENIED");
    assert_eq!(DenyCode::MemoryNotGranted.as_str(), "MEMORY_NOT_GRANTED");
}

#[test]
fn serde_shapes() {
    let grant: Grant = serde_json::from_str("\"shared:team:*\"").unwrap();
    assert_eq!(serde_json::to_string(&grant).unwrap(), "\"shared:team:*\"");
    let err = serde_json::from_str::<Grant>("\"shared:*:x\"").unwrap_err().to_string();
    assert!(err.contains("invalid grant `shared:*:x`"), "{err}");
    assert_eq!(serde_json::to_string(&DenyCode::PrivateMemoryDenied).unwrap(), "\"PRIVATE_MEMORY_DENIED\"");
    let actor = Actor::new(Role::parse("worker").unwrap());
    let id = parse_memory_id("shared:x").unwrap();
    let request = AccessRequest { actor: &actor, operation: Operation::Write, id: &id };
    assert_eq!(
        serde_json::to_string(&request).unwrap(),
        r#"{"type":"memory","actor":"worker","operation":"write","id":"shared:x"}"#
    );
    assert_eq!(AccessRequest::TYPE, "memory");
}

#[test]
fn a_custom_engine_plugs_in() {
    /// Allows nothing: what an adopter's engine looks like.
    struct DenyAll;
    impl PolicyEngine for DenyAll {
        fn authorize(&self, _: &AccessRequest<'_>) -> Decision {
            Decision::Deny(DenyCode::MemoryNotGranted)
        }
        fn authorize_subtree(&self, _: &Actor, _: Operation, _: Option<&MemoryPrefix>) -> SubtreeDecision {
            SubtreeDecision::Deny(DenyCode::MemoryNotGranted)
        }
    }
    let engines: [&dyn PolicyEngine; 2] = [&GrantPolicy, &DenyAll];
    let actor = Actor::new(Role::parse("worker").unwrap()).with_read([Grant::parse("shared").unwrap()]);
    let id = parse_memory_id("shared:x").unwrap();
    let request = AccessRequest { actor: &actor, operation: Operation::Read, id: &id };
    let decisions: Vec<Decision> = engines.iter().map(|e| e.authorize(&request)).collect();
    assert_eq!(decisions, [Decision::Allow, Decision::Deny(DenyCode::MemoryNotGranted)]);
}

#[test]
fn definitions_from_text() {
    let yaml = "role: worker\nreportsTo: main\nmemory:\n  read: [shared]\n  write: ['private:worker']\n";
    let worker = parse_agent_definition(yaml, "worker", std::path::Path::new("agents/worker.yaml")).unwrap();
    assert_eq!(worker.reports_to().map(Role::as_str), Some("main"));
    assert_eq!(worker.effective_grants(Operation::Write), [Grant::parse("private:worker").unwrap()]);
    let err = parse_agent_definition(yaml, "main", std::path::Path::new("agents/main.yaml")).unwrap_err();
    assert_eq!(err.problem().code(), "role_mismatch");
    assert_eq!(err.problem().to_string(), "role_mismatch");
    fn assert_error<E: std::error::Error + Send + Sync + 'static>(_: &E) {}
    assert_error(&err);
}
