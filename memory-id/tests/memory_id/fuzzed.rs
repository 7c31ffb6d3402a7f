//! Replays, on stable, the inputs of the `id_parse` fuzz target: the minimised cases committed under
//! `tests/fixtures/fuzzed/id_parse/` and the seeds under `fuzz/seeds/id_parse/`. The property is the fuzz target's
//! own (`fuzz/src/id_parse.rs`, included here), so a case fails here for exactly the reason it failed there.

#[path = "../../../fuzz/src/id_parse.rs"]
#[allow(unreachable_pub, dead_code, reason = "shared with the fuzz crate, where it is the public API")]
mod property;

use std::path::{Path, PathBuf};

/// Every input file of `dir` (not `README.md`, not dot-files), sorted; `required` directories must exist.
fn inputs(dir: &Path, required: bool) -> Vec<(PathBuf, Vec<u8>)> {
    if !dir.is_dir() {
        assert!(!required, "{} is missing", dir.display());
        return Vec::new();
    }
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            path.is_file() && name != "README.md" && !name.starts_with('.')
        })
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    inputs.sort();
    inputs
}

/// Runs `check` on every committed input of `target`, and names every input that fails.
fn replay(target: &str, check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut all = inputs(&root.join("tests/fixtures/fuzzed").join(target), true);
    all.extend(inputs(&root.join("fuzz/seeds").join(target), false));
    let failed: Vec<String> = all
        .iter()
        .filter(|(_, bytes)| std::panic::catch_unwind(|| check(bytes)).is_err())
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail:\n{}",
        failed.len(),
        all.len(),
        failed.join("\n")
    );
}

#[test]
fn id_parse() {
    replay("id_parse", property::check);
}
