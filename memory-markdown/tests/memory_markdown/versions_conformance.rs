//! Runs `conformance/versions.json` (format in `conformance/README.md`, "Versions") against the reference store and
//! the Markdown store: every case on a fresh store of each, every step's outcome compared.

use memory_entry::Limits;
use memory_markdown::MarkdownStore;
use memory_store::{InMemoryStore, MemoryStore};
use testkit::conformance::versions::{VersionCase, play};
use testkit::conformance::{load_cases, run};

use crate::at;

fn limits(case: &VersionCase) -> Limits {
    Limits { keep_versions: case.keep_versions.unwrap_or(100), ..Limits::default() }
}

fn check(
    case: &VersionCase,
    store: &dyn MemoryStore,
    which: &str,
    failures: &mut testkit::conformance::Failures,
) {
    for (n, step) in case.steps.iter().enumerate() {
        let got = play(store, step, at(n as i64));
        failures.check(got == step.expect, || {
            format!(
                "{which}, case `{}`, step {n} ({}): expected {:?}, got {got:?}",
                case.name, step.op, step.expect
            )
        });
    }
}

#[test]
fn version_vectors() {
    let cases: Vec<VersionCase> = load_cases("versions.json");
    assert!(cases.len() >= 9, "vector file lost cases");
    run("versions", &cases, |case, failures| {
        check(case, &InMemoryStore::with_limits(limits(case)), "in-memory", failures);
        let dir = tempfile::tempdir().unwrap();
        let markdown = MarkdownStore::open_with_limits(dir.path(), limits(case)).unwrap();
        check(case, &markdown, "markdown", failures);
    });
}
