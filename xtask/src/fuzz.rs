//! `cargo xtask fuzz [--seconds N] [TARGET]`: runs the cargo-fuzz targets of `fuzz/` for N seconds each.
//!
//! Needs the nightly toolchain (cargo-fuzz instruments with sanitizers); installs cargo-fuzz when it is absent.
//! Each target starts from its committed seeds (`fuzz/seeds/<target>/`, built from `conformance/`) and a scratch
//! corpus (`fuzz/corpus/<target>/`, git-ignored). A crash fails the run and names the artifact to replay with
//! `cargo +nightly fuzz run <target> <artifact>`; minimise it and commit it under `tests/fixtures/fuzzed/<target>/`.
//! Every run is capped at 512 MiB of memory and 10 s per input, so an input that costs more (a YAML alias bomb in
//! `frontmatter_parse` or `agent_definition`) is a failure like a crash.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::root;

/// The memory cap of every fuzz run, in MiB (libFuzzer's `-rss_limit_mb`; its default is 2048).
const RSS_LIMIT_MB: u64 = 512;
/// The longest one input may take, in seconds (libFuzzer's `-timeout`).
const TIMEOUT_SECONDS: u64 = 10;

/// `cargo xtask fuzz [--seconds N] [TARGET]`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds each target runs
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub(crate) seconds: u64,
    /// Run only this target
    pub(crate) target: Option<String>,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let seconds = args.seconds;
    let only = args.target.as_deref();
    ensure_toolchain()?;
    let fuzz_dir = root().join("fuzz");
    let targets = list_targets(&fuzz_dir)?;
    let selected: Vec<&String> = match only {
        Some(name) => {
            let found: Vec<&String> = targets.iter().filter(|t| *t == name).collect();
            if found.is_empty() {
                return Err(format!("no fuzz target `{name}`; targets: {}", targets.join(", ")));
            }
            found
        }
        None => targets.iter().collect(),
    };
    let status = Command::new("cargo")
        .args(["+nightly", "fuzz", "build", "-O"])
        .current_dir(&fuzz_dir)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz build: {e}"))?;
    if !status.success() {
        return Err("cargo fuzz build failed".to_owned());
    }
    let mut summary = Vec::new();
    for target in selected {
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
        let seeds = fuzz_dir.join("seeds").join(target);
        let mut command = Command::new("cargo");
        command.args(["+nightly", "fuzz", "run", "-O", target]).arg(&corpus);
        if seeds.is_dir() {
            command.arg(&seeds);
        }
        // Every target runs under a memory cap and a per-input time limit: hostile input must cost bounded time and
        // memory (an expanded YAML alias bomb or a quadratic parse would trip them).
        command
            .args([
                "--",
                &format!("-max_total_time={seconds}"),
                &format!("-rss_limit_mb={RSS_LIMIT_MB}"),
                &format!("-timeout={TIMEOUT_SECONDS}"),
                "-print_final_stats=1",
            ])
            .current_dir(&fuzz_dir)
            .stderr(Stdio::piped());
        eprintln!("+ cargo +nightly fuzz run -O {target} (for {seconds}s)");
        let output = command.output().map_err(|e| format!("cannot run cargo fuzz run {target}: {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let runs = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .map(str::trim)
            .next_back()
            .unwrap_or("?")
            .to_owned();
        if !output.status.success() {
            let tail: Vec<&str> =
                stderr.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
            eprintln!("{}", tail.join("\n"));
            let artifact = stderr
                .lines()
                .find_map(|l| l.split("Test unit written to ").nth(1))
                .unwrap_or("(see fuzz/artifacts)")
                .trim()
                .to_owned();
            return Err(format!(
                "fuzz target `{target}` crashed after {runs} runs; artifact: {artifact}; replay with `cargo +nightly fuzz run {target} {artifact}`"
            ));
        }
        summary.push(format!("{target}: {runs} runs in {seconds}s, no crash"));
    }
    for line in summary {
        eprintln!("{line}");
    }
    Ok(())
}

fn ensure_toolchain() -> Result<(), String> {
    let nightly = Command::new("cargo").args(["+nightly", "--version"]).output();
    if !nightly.is_ok_and(|o| o.status.success()) {
        return Err(
            "the nightly toolchain is needed for cargo-fuzz: rustup toolchain install nightly".to_owned()
        );
    }
    let fuzz = Command::new("cargo").args(["+nightly", "fuzz", "--version"]).output();
    if !fuzz.is_ok_and(|o| o.status.success()) {
        crate::run("cargo", &["install", "cargo-fuzz", "--locked"])?;
    }
    Ok(())
}

/// The `[[bin]]` names of `fuzz/Cargo.toml`.
fn list_targets(fuzz_dir: &Path) -> Result<Vec<String>, String> {
    let manifest = std::fs::read_to_string(fuzz_dir.join("Cargo.toml"))
        .map_err(|e| format!("cannot read fuzz/Cargo.toml: {e}"))?;
    let mut targets = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some(name) = line.strip_prefix("name").map(str::trim).and_then(|l| l.strip_prefix('='))
        {
            targets.push(name.trim().trim_matches('"').to_owned());
        }
    }
    if targets.is_empty() {
        return Err("fuzz/Cargo.toml declares no [[bin]] targets".to_owned());
    }
    Ok(targets)
}
