//! Runs every vector of `conformance/grants.json`; the format is described in `conformance/README.md`.

use std::path::PathBuf;

use memory_id::{MemoryPrefix, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, Decision, Grant, GrantPolicy, InvalidGrantReason, Operation, PolicyEngine, Role,
    SubtreeDecision,
};
use serde::Deserialize;

#[path = "../../../conformance/text.rs"]
mod text;

use text::Text;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantVectors {
    version: u32,
    grants: GrantParsing,
    coverage: Vec<Coverage>,
    overlaps: Vec<Overlap>,
    decisions: Vec<DecisionVector>,
    subtrees: Vec<SubtreeVector>,
    roles: RoleVectors,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantParsing {
    valid: Vec<ValidGrant>,
    invalid: Vec<Invalid>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ValidGrant {
    input: Text,
    scope: String,
    base: Text,
    wildcard: bool,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Invalid {
    input: Text,
    reason: String,
    #[serde(default)]
    segment: Option<usize>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Coverage {
    grant: Text,
    id: Text,
    covers: bool,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Overlap {
    grant: String,
    prefix: String,
    overlaps: bool,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ActorVector {
    role: String,
    #[serde(default)]
    reports_to: Option<String>,
    read: Vec<String>,
    write: Vec<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OperationVector {
    Read,
    Write,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionVector {
    name: String,
    actor: ActorVector,
    operation: OperationVector,
    id: String,
    decision: String,
    code: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubtreeVector {
    name: String,
    actor: ActorVector,
    operation: OperationVector,
    prefix: Option<String>,
    decision: String,
    code: Option<String>,
    roots: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleVectors {
    valid: Vec<Text>,
    invalid: Vec<Invalid>,
}

fn load() -> GrantVectors {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance/grants.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let vectors: GrantVectors =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(vectors.version, 1, "unknown vector format version");
    vectors
}

/// Collects every failing vector, so one run reports all of them.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    fn finish(self, section: &str, ran: usize) {
        assert!(ran > 0, "{section}: no vectors");
        assert!(
            self.0.is_empty(),
            "{} of {ran} {section} vectors failed:\n  {}",
            self.0.len(),
            self.0.join("\n  ")
        );
    }
}

impl OperationVector {
    fn operation(self) -> Operation {
        match self {
            OperationVector::Read => Operation::Read,
            OperationVector::Write => Operation::Write,
        }
    }
}

impl ActorVector {
    fn actor(&self) -> Result<Actor, String> {
        let role = Role::parse(&self.role).map_err(|e| e.to_string())?;
        let reports_to =
            self.reports_to.as_deref().map(Role::parse).transpose().map_err(|e| e.to_string())?;
        let grants = |list: &[String]| -> Result<Vec<Grant>, String> {
            list.iter().map(|g| Grant::parse(g).map_err(|e| e.to_string())).collect()
        };
        Ok(Actor::new(role)
            .with_reports_to(reports_to)
            .with_read(grants(&self.read)?)
            .with_write(grants(&self.write)?))
    }
}

fn decision_text(decision: Decision) -> (&'static str, Option<&'static str>) {
    match decision {
        Decision::Allow => ("allow", None),
        Decision::Deny(code) => ("deny", Some(code.as_str())),
    }
}

fn grant_segment(reason: InvalidGrantReason) -> Option<usize> {
    match reason {
        InvalidGrantReason::MisplacedWildcard { index } | InvalidGrantReason::Segment { index, .. } => {
            Some(index)
        }
        _ => None,
    }
}

fn is_one_line(message: &str) -> bool {
    !message.chars().any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
}

#[test]
fn valid_grants() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.grants.valid {
        let input = v.input.expand();
        let _ = &v.note;
        match Grant::parse(&input) {
            Err(e) => failures.check(false, || format!("grant {input:?}: refused: {e}")),
            Ok(grant) => {
                let checks = [
                    ("as_str", grant.as_str() == input),
                    ("display", grant.to_string() == input),
                    ("scope", grant.scope().keyword() == v.scope),
                    ("base", grant.base().as_str() == v.base.expand()),
                    ("wildcard", grant.is_wildcard() == v.wildcard),
                ];
                for (what, ok) in checks {
                    failures.check(ok, || format!("grant {input:?}: {what} differs (got {grant:?})"));
                }
            }
        }
    }
    failures.finish("valid grant", vectors.grants.valid.len());
}

#[test]
fn invalid_grants() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.grants.invalid {
        let input = v.input.expand();
        let _ = &v.note;
        match Grant::parse(&input) {
            Ok(grant) => failures
                .check(false, || format!("grant {input:?}: accepted as {grant:?}, expected {}", v.reason)),
            Err(e) => {
                let reason = e.reason();
                failures.check(reason.code() == v.reason && grant_segment(reason) == v.segment, || {
                    format!(
                        "grant {input:?}: {} at {:?}, expected {} at {:?}",
                        reason.code(),
                        grant_segment(reason),
                        v.reason,
                        v.segment
                    )
                });
                failures
                    .check(e.input() == input, || format!("grant {input:?}: error input {:?}", e.input()));
                let message = e.to_string();
                failures.check(is_one_line(&message), || {
                    format!("grant {input:?}: message not one line: {message:?}")
                });
            }
        }
    }
    failures.finish("invalid grant", vectors.grants.invalid.len());
}

#[test]
fn coverage() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.coverage {
        let (grant, id) = (v.grant.expand(), v.id.expand());
        let _ = &v.note;
        let (Ok(g), Ok(i)) = (Grant::parse(&grant), parse_memory_id(&id)) else {
            failures.check(false, || format!("{grant:?} covers {id:?}: an input is invalid"));
            continue;
        };
        failures.check(g.covers(&i) == v.covers, || {
            format!("{grant:?} covers {id:?}: got {}, expected {}", g.covers(&i), v.covers)
        });
    }
    failures.finish("coverage", vectors.coverage.len());
}

#[test]
fn overlaps() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.overlaps {
        let _ = &v.note;
        let (Ok(g), Ok(p)) = (Grant::parse(&v.grant), MemoryPrefix::parse(&v.prefix)) else {
            failures.check(false, || format!("{:?} overlaps {:?}: an input is invalid", v.grant, v.prefix));
            continue;
        };
        failures.check(g.overlaps(&p) == v.overlaps, || {
            format!("{:?} overlaps {:?}: got {}, expected {}", v.grant, v.prefix, g.overlaps(&p), v.overlaps)
        });
    }
    failures.finish("overlaps", vectors.overlaps.len());
}

#[test]
fn decisions() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.decisions {
        let (actor, id) = match (v.actor.actor(), parse_memory_id(&v.id)) {
            (Ok(actor), Ok(id)) => (actor, id),
            (actor, id) => {
                failures
                    .check(false, || format!("{}: invalid input: {:?} {:?}", v.name, actor.err(), id.err()));
                continue;
            }
        };
        let request = AccessRequest { actor: &actor, operation: v.operation.operation(), id: &id };
        let got = decision_text(GrantPolicy.authorize(&request));
        failures.check(got == (v.decision.as_str(), v.code.as_deref()), || {
            format!("{}: got {got:?}, expected ({:?}, {:?})", v.name, v.decision, v.code)
        });
    }
    failures.finish("decision", vectors.decisions.len());
}

#[test]
fn subtrees() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.subtrees {
        let prefix = v.prefix.as_deref().map(MemoryPrefix::parse).transpose();
        let (actor, prefix) = match (v.actor.actor(), prefix) {
            (Ok(actor), Ok(prefix)) => (actor, prefix),
            (actor, prefix) => {
                failures.check(false, || {
                    format!("{}: invalid input: {:?} {:?}", v.name, actor.err(), prefix.err())
                });
                continue;
            }
        };
        let got = match GrantPolicy.authorize_subtree(&actor, v.operation.operation(), prefix.as_ref()) {
            SubtreeDecision::Allow { roots } => {
                ("allow", None, roots.iter().map(|r| r.as_str().to_owned()).collect::<Vec<_>>())
            }
            SubtreeDecision::Deny(code) => ("deny", Some(code.as_str()), Vec::new()),
        };
        failures.check(got == (v.decision.as_str(), v.code.as_deref(), v.roots.clone()), || {
            format!("{}: got {got:?}, expected ({:?}, {:?}, {:?})", v.name, v.decision, v.code, v.roots)
        });
    }
    failures.finish("subtree", vectors.subtrees.len());
}

#[test]
fn roles() {
    let vectors = load();
    let mut failures = Failures::default();
    for v in &vectors.roles.valid {
        let input = v.expand();
        failures.check(Role::parse(&input).is_ok_and(|r| r.as_str() == input), || {
            format!("role {input:?}: refused")
        });
    }
    for v in &vectors.roles.invalid {
        let input = v.input.expand();
        let _ = (&v.note, v.segment);
        match Role::parse(&input) {
            Ok(_) => failures.check(false, || format!("role {input:?}: accepted, expected {}", v.reason)),
            Err(e) => {
                failures.check(e.reason().code() == v.reason, || {
                    format!("role {input:?}: {}, expected {}", e.reason().code(), v.reason)
                });
                failures
                    .check(is_one_line(&e.to_string()), || format!("role {input:?}: message not one line"));
            }
        }
    }
    failures.finish("role", vectors.roles.valid.len() + vectors.roles.invalid.len());
}
