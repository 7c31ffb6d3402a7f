//! Project automation: `cargo xtask ci | test | fuzz | bench | nodev-bench | pg-bench | mcp-latency | man`.
//!
//! - `ci` runs the checks of `.ci/run`: formatting, clippy, docs, the architecture graph, `cargo xtask test`, the man pages, then the fuzz
//!   smoke (`--no-fuzz` skips it).
//! - `fuzz [--seconds N] [TARGET]` runs cargo-fuzz targets on the nightly toolchain (installing cargo-fuzz when it
//!   is absent) and fails on any crash, naming the artifact.
//! - `arch` checks that ARCHITECTURE.md's dependency graph is the graph the manifests have.
//! - `man` writes the man pages of `alp` to `target/man/`.
//! - `mcp-latency` times `memory_get` and a 10,000-entry `memory_search` in a warm `alp mcp` against the same calls
//!   as `alp` processes.
//! - `bench` generates stores of every frontmatter shape and match rate, runs the benchmarks and the ripgrep (and
//!   older `alp`) comparison, and writes `BENCHMARKS.md`.
//! - `nodev-bench [--runs N]` (as root) times search over 10,000 entries and context over 500 on a tmpfs mounted
//!   `nodev` (entry files opened directly) and on one without it (the `O_PATH` reopen), against ripgrep over the
//!   same files, and writes `BENCHMARKS-nodev.md`.
//! - `bench --peers [--quick] [--sizes 850,8500] [--runs N] [--alp PATH]` (or `peers`) installs the MCP reference memory server and
//!   basic-memory under `target/peers/`, drives them and `alp mcp` with one client and one workload, and writes
//!   `BENCHMARKS-peers.md`.
//! - `pg-bench [--quick] [--sizes 10000,100000]` times create, update, get, search and 8 concurrent writers on
//!   PostgreSQL against the Markdown store, and writes `BENCHMARKS-postgres.md`.
//! - `serve-bench [--quick]` times search, get, writes, idle connections and group commit through the real `alp
//!   serve` over HTTP, and writes `BENCHMARKS-serve.md`.
//! - `serve-attack [--seconds N] [--connections N] [--creates N] [--alp PATH]` measures the real `alp serve` under
//!   unauthenticated bodies, a flood of 4 MiB bodies and callers that leave, and writes the section "Attacks on the
//!   HTTP front" of `BENCHMARKS-serve.md`.
//! - `history-bench [--quick]` times writes that keep history against bare durable writes and, through `alp mcp`,
//!   against the build before history, and listing, search and context over entries with 20 versions against one,
//!   and writes `BENCHMARKS-history.md`.
//! - `test [-- ARGS…]` runs `cargo test --workspace ARGS…` against a throwaway PostgreSQL cluster it starts and
//!   stops, and exits with the tests' status.

mod arch;
mod bench;
mod fuzz;
mod history_bench;
mod host;
mod man;
mod mcp_latency;
mod nodev_bench;
mod peers;
mod pg_bench;
mod serve_attack;
mod serve_bench;
mod serve_load;
mod test;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(&args[1..]),
        Some("arch") => arch::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("man") => man::run(&args[1..]),
        Some("mcp-latency") => mcp_latency::run(&args[1..]),
        Some("nodev-bench") => nodev_bench::run(&args[1..]),
        Some("peers") => peers::run(&args[1..]),
        Some("pg-bench") => pg_bench::run(&args[1..]),
        Some("serve-load") => serve_load::run(&args[1..]),
        Some("serve-bench") => serve_bench::run(&args[1..]),
        Some("serve-attack") => serve_attack::run(&args[1..]),
        Some("history-bench") => history_bench::run(&args[1..]),
        Some("test") => return test::run(&args[1..]),
        _ => Err(format!(
            "usage: cargo xtask <ci [--no-fuzz] | arch | fuzz [--seconds N] [TARGET] | man | mcp-latency [--runs N] [--entries N] [--alp PATH] | bench [--sizes 1000,10000,50000] [--shapes canonical,seed,messy,none] [--rates 4,80] [--runs N] [--quick] [--no-criterion] [--old-commit REV | --old PATH | --no-old] | nodev-bench [--runs N] | bench --peers [--quick] [--sizes 850,8500] [--runs N] [--alp PATH] | pg-bench [--quick] [--sizes N,N] [--runs N] [--search-runs N] | serve-load [--seconds N] [--clients 1,32] [--rounds N] [--alp PATH] | serve-bench [--quick] [--sizes N,N] [--shapes …] [--runs N] [--seconds N] [--idle N] | serve-attack [--seconds N] [--connections N] [--creates N] [--alp PATH] | history-bench [--quick] [--entries N] [--versions N] [--runs N] [--writes N] [--before REV] | test [-- CARGO_TEST_ARGS…]>{}",
            args.first().map(|a| format!(" (unknown command `{a}`)")).unwrap_or_default()
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (xtask lives one level below it).
pub(crate) fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// Runs a command in the workspace root, echoing it; fails with its exit status.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<(), String> {
    eprintln!("+ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed with {status}", args.join(" ")))
    }
}

/// The checks CI runs (`.ci/run` installs what they need, then calls this): formatting, clippy, docs, the README's
/// test command (`cargo xtask test`: the whole suite around a throwaway PostgreSQL cluster; CI sets
/// `ALP_REQUIRE_POSTGRES=1` so a missing cluster fails instead of skipping), the man pages, then a fuzz smoke of
/// every target.
fn ci(args: &[String]) -> Result<(), String> {
    run("cargo", &["fmt", "--all", "--check"])?;
    run("cargo", &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])?;
    eprintln!("+ RUSTDOCFLAGS=\"-D warnings\" cargo doc --workspace --no-deps --quiet");
    let docs = std::process::Command::new("cargo")
        .args(["doc", "--workspace", "--no-deps", "--quiet"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run cargo doc: {e}"))?;
    if !docs.success() {
        return Err(format!("cargo doc failed with {docs}"));
    }
    arch::run(&[])?;
    run("cargo", &["xtask", "test"])?;
    run("cargo", &["xtask", "man"])?;
    if args.iter().any(|a| a == "--no-fuzz") {
        return Ok(());
    }
    fuzz::run(&["--seconds".to_owned(), "30".to_owned()])
}
