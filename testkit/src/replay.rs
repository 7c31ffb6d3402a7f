//! Replaying fuzz inputs under `cargo test` on stable: every committed input of a target (the minimised cases under
//! `tests/fixtures/fuzzed/<target>/` and the seeds under `fuzz/seeds/<target>/`) goes through the target's own
//! property check ([`crate::fuzz`]), so a case fails `cargo test` for exactly the reason it failed under the fuzzer.

use std::path::{Path, PathBuf};

/// Every input file of `dir` (not `README.md`, not dot-files), sorted; a `required` directory must exist.
fn inputs(dir: &Path, required: bool) -> Vec<(PathBuf, Vec<u8>)> {
    if !dir.is_dir() {
        assert!(!required, "{} is missing", dir.display());
        return Vec::new();
    }
    let mut inputs: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            path.is_file() && name != "README.md" && !name.starts_with('.')
        })
        .map(|path| {
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            (path, bytes)
        })
        .collect();
    inputs.sort();
    inputs
}

/// The repository root (this crate lives one level below it).
pub fn repository() -> std::path::PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Runs `check` on every committed input of `target`, and names every input that fails. Returns how many inputs
/// ran.
///
/// # Panics
///
/// When an input fails its check (that is the test failing), or when `tests/fixtures/fuzzed/<target>/` is missing.
pub fn replay(target: &str, check: fn(&[u8])) -> usize {
    let repo = repository();
    let mut all = inputs(&repo.join("tests/fixtures/fuzzed").join(target), true);
    all.extend(inputs(&repo.join("fuzz/seeds").join(target), false));
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
    all.len()
}
