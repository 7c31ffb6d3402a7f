//! Project automation: `cargo xtask ci | arch | fuzz | man | test` and the benchmarks, each of which writes its
//! `BENCHMARKS*.md`. `cargo xtask --help` lists the subcommands and `cargo xtask SUBCOMMAND --help` their flags,
//! declared once: the shared groups in `cli.rs`, each subcommand's own in its file (`Args`). What the benchmarks
//! share (ranks of samples, the generator, host facts, the report's opening) is `measure.rs`; the stores they
//! generate are `corpus.rs`; the builds and tools they need are `setup.rs`.

mod arch;
mod audit_bench;
mod bench;
mod cli;
mod corpus;
mod flags;
mod fuzz;
mod history_bench;
mod inspect_bench;
mod man;
mod mcp_latency;
mod measure;
mod nodev_bench;
mod peers;
mod pg_bench;
mod serve_attack;
mod serve_bench;
mod serve_eras;
mod serve_load;
mod serve_receipts;
mod setup;
mod test;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser as _;

use crate::cli::{Cli, Task};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().collect();
    // `bench --peers …` is `peers …`: the peers take flags of their own.
    if args.get(1).is_some_and(|a| a == "bench") && args.iter().skip(2).any(|a| a == "--peers") {
        args.retain(|a| a != "--peers");
        args[1] = "peers".to_owned();
    }
    let result = match Cli::parse_from(args).task {
        Task::Ci { no_fuzz } => ci(no_fuzz),
        Task::Arch => arch::run(),
        Task::AuditBench(args) => audit_bench::run(&args),
        Task::Fuzz(args) => fuzz::run(&args),
        Task::Bench(args) => bench::run(&args),
        Task::Man => man::run(),
        Task::McpLatency(args) => mcp_latency::run(&args),
        Task::NodevBench(args) => nodev_bench::run(&args),
        Task::Peers(args) => peers::run(&args),
        Task::PgBench(args) => pg_bench::run(&args),
        Task::ServeLoad(args) => serve_load::run(&args),
        Task::ServeBench(args) => serve_bench::run(&args),
        Task::ServeAttack(args) => serve_attack::run(&args),
        Task::HistoryBench(args) => history_bench::run(&args),
        Task::InspectBench(args) => inspect_bench::run(&args),
        Task::Test { args } => return test::run(&args),
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
fn ci(no_fuzz: bool) -> Result<(), String> {
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
    arch::run()?;
    run("cargo", &["xtask", "test"])?;
    run("cargo", &["xtask", "man"])?;
    if no_fuzz {
        return Ok(());
    }
    fuzz::run(&fuzz::Args { seconds: 30, target: None })
}
