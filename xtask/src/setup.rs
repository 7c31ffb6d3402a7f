//! What a benchmark needs before it measures: the release `alp` of this tree (or the one `--alp` names), the `alp`
//! of an older revision, and the tools it compares against.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::root;

/// Where cargo builds: `CARGO_TARGET_DIR` when it is set, else `target/` in the workspace.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

/// Builds `alp` in release mode: its path.
pub(crate) fn release_alp() -> Result<PathBuf, String> {
    crate::run("cargo", &["build", "--release", "-p", "alp-cli", "--bin", "alp"])?;
    Ok(target_dir().join("release/alp"))
}

/// Installs `package` with apt-get when `program --version` does not run.
pub(crate) fn ensure_tool(program: &str, package: &str) -> Result<(), String> {
    let present = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    crate::run("apt-get", &["install", "-y", package])
        .map_err(|e| format!("{package} is needed by the benchmarks and could not be installed: {e}"))
}

/// Builds the `alp` of `rev` once, from its source exported with `git archive`, with its own target directory.
pub(crate) fn build_old(rev: &str) -> Result<PathBuf, String> {
    let base = root().join("target/bench-old").join(rev);
    let binary = base.join("target/release/alp");
    if binary.is_file() {
        return Ok(binary);
    }
    let src = base.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("cannot create {}: {e}", src.display()))?;
    let archive = Command::new("git")
        .args(["archive", "--format=tar", rev])
        .current_dir(root())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git archive: {e}"))?;
    let stdout = archive.stdout.ok_or("git archive gave no output")?;
    let status = Command::new("tar")
        .args(["-x", "-C"])
        .arg(&src)
        .stdin(stdout)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        return Err(format!("cannot export {rev} with git archive | tar"));
    }
    // Since the workspace was split, `alp` is the binary of the package alp-cli, and cargo looks for a `--bin` only
    // in the default members unless told the package; before, it was the root package's.
    let package: &[&str] = if src.join("alp-cli/Cargo.toml").is_file() { &["-p", "alp-cli"] } else { &[] };
    eprintln!(
        "+ cargo build --release {}--bin alp (in {}, for the comparison with {rev})",
        package.iter().map(|a| format!("{a} ")).collect::<String>(),
        src.display()
    );
    let status = Command::new("cargo")
        .args(["build", "--release"])
        .args(package)
        .args(["--bin", "alp"])
        .env("CARGO_TARGET_DIR", base.join("target"))
        .current_dir(&src)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() || !binary.is_file() {
        return Err(format!("cannot build alp at {rev}"));
    }
    Ok(binary)
}
