//! Python virtual environments the tests make, with packages from PyPI (the official MCP SDK for `eras.rs`,
//! Authlib for `oauth.rs`): each made once per run of the test binary and kept under the target directory between
//! runs. When pip cannot reach PyPI the tests that need one print a notice and pass, unless
//! `ALP_REQUIRE_PYTHON_SDK=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether a test that needs Python packages must fail, rather than skip, when pip cannot reach PyPI.
pub(crate) fn required() -> bool {
    std::env::var("ALP_REQUIRE_PYTHON_SDK").is_ok_and(|v| v == "1")
}

/// Whether `ready` (a Python program) exits 0 in the environment at `dir`.
fn ready_in(dir: &Path, ready: &str) -> bool {
    Command::new(dir.join("bin/python"))
        .args(["-c", ready])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The environment `<target tmpdir>/<name>` with `packages` installed, or `None` (after a notice) when pip cannot
/// reach PyPI. `ready` is a Python program that exits 0 once the packages are there at the versions needed; an
/// existing environment where it does is used as it is.
pub(crate) fn venv(name: &str, packages: &[&str], ready: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    if ready_in(&dir, ready) {
        return Some(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let made = Command::new("python3").args(["-m", "venv"]).arg(&dir).output().expect("python3 runs");
    assert!(made.status.success(), "python3 -m venv: {}", String::from_utf8_lossy(&made.stderr));
    let pip = Command::new(dir.join("bin/pip"))
        .args(["install", "--disable-pip-version-check", "--quiet"])
        .args(packages)
        .output()
        .expect("pip runs");
    if !pip.status.success() {
        let said = String::from_utf8_lossy(&pip.stderr).into_owned();
        let unreachable = [
            "Could not fetch URL",
            "NewConnectionError",
            "Max retries exceeded",
            "Temporary failure in name resolution",
            "Network is unreachable",
            "No matching distribution found",
        ]
        .iter()
        .any(|sign| said.contains(sign));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(unreachable && !required(), "pip install {packages:?} failed:\n{said}");
        eprintln!("NOTICE: the tests that need {packages:?} are skipped: pip cannot reach PyPI:\n{said}");
        return None;
    }
    assert!(
        ready_in(&dir, ready),
        "the packages installed in {name} are not the versions needed: {packages:?}"
    );
    Some(dir)
}
