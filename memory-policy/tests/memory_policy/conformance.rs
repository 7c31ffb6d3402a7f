//! Runs every vector of `conformance/grants.json`; the format is described in `conformance/README.md`. The loader,
//! the Text notation and the failure list are `testkit::conformance`; every vector is also run against the
//! reference model `testkit::model::grant`, so a wrong vector is told apart from a wrong policy.

use memory_id::{MemoryPrefix, parse_memory_id};
use memory_policy::{
    AccessRequest, Actor, Decision, Grant, GrantPolicy, InvalidGrantReason, Operation, PolicyEngine, Role,
    SubtreeDecision,
};
use serde::Deserialize;
use testkit::conformance::{Invalid, Refused, Text, is_one_line, run};
use testkit::model::grant as model;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantVectors {
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
    testkit::conformance::load("grants.json")
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
    /// The grants of one operation, as written.
    fn grants(&self, operation: OperationVector) -> &[String] {
        match operation {
            OperationVector::Read => &self.read,
            OperationVector::Write => &self.write,
        }
    }

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

#[test]
fn valid_grants() {
    run("valid grant", &load().grants.valid, |v, failures| {
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
    });
}

#[test]
fn invalid_grants() {
    run("invalid grant", &load().grants.invalid, |v, failures| {
        let _ = &v.note;
        let result = Grant::parse(&v.input.expand());
        let message = result.as_ref().err().map(ToString::to_string).unwrap_or_default();
        let refused = result.as_ref().err().map(|e| Refused {
            reason: (e.reason().code(), grant_segment(e.reason())),
            input: e.input(),
            message: &message,
        });
        v.check(failures, "grant", refused);
    });
}

#[test]
fn coverage() {
    run("coverage", &load().coverage, |v, failures| {
        let (grant, id) = (v.grant.expand(), v.id.expand());
        let _ = &v.note;
        let (Ok(g), Ok(i)) = (Grant::parse(&grant), parse_memory_id(&id)) else {
            failures.check(false, || format!("{grant:?} covers {id:?}: an input is invalid"));
            return;
        };
        failures.check(g.covers(&i) == v.covers, || {
            format!("{grant:?} covers {id:?}: got {}, expected {}", g.covers(&i), v.covers)
        });
    });
}

#[test]
fn overlaps() {
    run("overlaps", &load().overlaps, |v, failures| {
        let _ = &v.note;
        let (Ok(g), Ok(p)) = (Grant::parse(&v.grant), MemoryPrefix::parse(&v.prefix)) else {
            failures.check(false, || format!("{:?} overlaps {:?}: an input is invalid", v.grant, v.prefix));
            return;
        };
        failures.check(g.overlaps(&p) == v.overlaps, || {
            format!("{:?} overlaps {:?}: got {}, expected {}", v.grant, v.prefix, g.overlaps(&p), v.overlaps)
        });
    });
}

#[test]
fn decisions() {
    run("decision", &load().decisions, |v, failures| {
        let (actor, id) = match (v.actor.actor(), parse_memory_id(&v.id)) {
            (Ok(actor), Ok(id)) => (actor, id),
            (actor, id) => {
                failures
                    .check(false, || format!("{}: invalid input: {:?} {:?}", v.name, actor.err(), id.err()));
                return;
            }
        };
        let request = AccessRequest { actor: &actor, operation: v.operation.operation(), id: &id };
        let got = decision_text(GrantPolicy.authorize(&request));
        failures.check(got == (v.decision.as_str(), v.code.as_deref()), || {
            format!("{}: got {got:?}, expected ({:?}, {:?})", v.name, v.decision, v.code)
        });
    });
}

#[test]
fn subtrees() {
    run("subtree", &load().subtrees, |v, failures| {
        let prefix = v.prefix.as_deref().map(MemoryPrefix::parse).transpose();
        let (actor, prefix) = match (v.actor.actor(), prefix) {
            (Ok(actor), Ok(prefix)) => (actor, prefix),
            (actor, prefix) => {
                failures.check(false, || {
                    format!("{}: invalid input: {:?} {:?}", v.name, actor.err(), prefix.err())
                });
                return;
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
    });
}

#[test]
fn roles() {
    let vectors = load();
    run("valid role", &vectors.roles.valid, |v, failures| {
        let input = v.expand();
        failures.check(Role::parse(&input).is_ok_and(|r| r.as_str() == input), || {
            format!("role {input:?}: refused")
        });
    });
    run("invalid role", &vectors.roles.invalid, |v, failures| {
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
    });
}

/// Every grammar, coverage, overlap, decision and subtree vector also runs against the reference model, so that a
/// wrong vector is told apart from a wrong policy.
#[test]
fn vectors_agree_with_the_model() {
    let vectors = load();
    run("valid grant (model)", &vectors.grants.valid, |v, failures| {
        let input = v.input.expand();
        let model = (model::grant_refusal(&input), model::base(&input), model::split(&input).1);
        failures.check(model == (None, v.base.expand(), v.wildcard), || {
            format!("grant {input:?}: model {model:?}")
        });
    });
    run("invalid grant (model)", &vectors.grants.invalid, |v, failures| {
        let input = v.input.expand();
        let model = model::grant_refusal(&input);
        failures.check(model == Some((&v.reason, v.segment)), || format!("grant {input:?}: model {model:?}"));
    });
    run("coverage (model)", &vectors.coverage, |v, failures| {
        let (grant, id) = (v.grant.expand(), v.id.expand());
        failures.check(model::covers(&grant, &id) == v.covers, || {
            format!("{grant:?} covers {id:?}: model differs")
        });
    });
    run("overlaps (model)", &vectors.overlaps, |v, failures| {
        failures.check(model::overlaps(&v.grant, &v.prefix) == v.overlaps, || {
            format!("{:?} overlaps {:?}: model differs", v.grant, v.prefix)
        });
    });
    run("decision (model)", &vectors.decisions, |v, failures| {
        let grants = v.actor.grants(v.operation).iter().map(String::as_str);
        let got = decision_text(model::authorize(&v.actor.role, grants, &v.id));
        failures
            .check(got == (v.decision.as_str(), v.code.as_deref()), || format!("{}: model {got:?}", v.name));
    });
    run("subtree (model)", &vectors.subtrees, |v, failures| {
        let grants = v.actor.grants(v.operation).iter().map(String::as_str);
        let got = match model::subtree(&v.actor.role, grants, v.prefix.as_deref()) {
            Ok(roots) => ("allow", None, roots),
            Err(code) => ("deny", Some(code.as_str()), Vec::new()),
        };
        failures.check(got == (v.decision.as_str(), v.code.as_deref(), v.roots.clone()), || {
            format!("{}: model {got:?}", v.name)
        });
    });
}
