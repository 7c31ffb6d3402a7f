//! The subcommands and the flag groups several of them share, declared once with clap. Each subcommand's own
//! flags are its `Args`, in the file of what it runs.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Parser, Subcommand};

use crate::corpus::Shape;

/// Project automation.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", disable_help_subcommand = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) task: Task,
}

/// What `cargo xtask` runs.
#[derive(Debug, Subcommand)]
pub(crate) enum Task {
    /// The checks of `.ci/run`: formatting, clippy, docs, the architecture graph, `cargo xtask test`, the man
    /// pages, then a fuzz smoke of every target
    Ci {
        /// Skip the fuzz smoke
        #[arg(long)]
        no_fuzz: bool,
    },
    /// Check that ARCHITECTURE.md's dependency graph is the graph the manifests have
    Arch,
    /// Run the cargo-fuzz targets on the nightly toolchain and fail on any crash
    Fuzz(crate::fuzz::Args),
    /// Write the man pages of `alp` to `target/man/`
    Man,
    /// Time a warm `alp mcp` against `alp` processes and ripgrep
    McpLatency(crate::mcp_latency::Args),
    /// Search against ripgrep and older `alp`, criterion, a warm server: `BENCHMARKS.md` (with `--peers`: the
    /// same as `cargo xtask peers`, which takes the flags after it)
    Bench(crate::bench::Args),
    /// Search and context on a root mounted `nodev` and on one without it, as root: `BENCHMARKS-nodev.md`
    NodevBench(crate::nodev_bench::Args),
    /// `alp mcp` against the memory servers a user would otherwise pick: `BENCHMARKS-peers.md`
    Peers(crate::peers::Args),
    /// The PostgreSQL store against the Markdown store: `BENCHMARKS-postgres.md`
    PgBench(crate::pg_bench::Args),
    /// Audited reads through `alp serve` under concurrent clients, and fsyncs per audit record
    ServeLoad(crate::serve_load::Args),
    /// The real `alp serve` over HTTP: `BENCHMARKS-serve.md`
    ServeBench(crate::serve_bench::Args),
    /// The real `alp serve` under three attacks: the section "Attacks on the HTTP front" of `BENCHMARKS-serve.md`
    ServeAttack(crate::serve_attack::Args),
    /// What keeping every version costs the Markdown store: `BENCHMARKS-history.md`
    HistoryBench(crate::history_bench::Args),
    /// `cargo test --workspace ARGS…` against a throwaway PostgreSQL cluster (every argument, `--help` included,
    /// goes to `cargo test`)
    #[command(disable_help_flag = true)]
    Test {
        /// The arguments of `cargo test`
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `--alp PATH`: the `alp` a benchmark measures.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Alp {
    /// Measure the `alp` at PATH instead of this tree's release build (to compare two builds)
    #[arg(long, value_name = "PATH")]
    pub(crate) alp: Option<PathBuf>,
}

impl Alp {
    /// The absolute path of the `alp` given, or of the release build of this tree, built now.
    pub(crate) fn binary(&self) -> Result<PathBuf, String> {
        match &self.alp {
            Some(path) => std::fs::canonicalize(path).map_err(|e| format!("--alp `{}`: {e}", path.display())),
            None => crate::setup::release_alp(),
        }
    }
}

/// `--runs N`: the timed rounds, each bench with its own default.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct Runs {
    /// Timed rounds of every measurement
    #[arg(long, value_name = "N", value_parser = positive::<usize>)]
    pub(crate) runs: Option<usize>,
}

impl Runs {
    /// The rounds given, else `default`.
    pub(crate) fn or(self, default: usize) -> usize {
        self.runs.unwrap_or(default)
    }
}

/// `--seconds N`: how long each timed load lasts, each bench with its own default.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct Seconds {
    /// Seconds of each timed load
    #[arg(long, value_name = "N", value_parser = positive::<u64>)]
    pub(crate) seconds: Option<u64>,
}

impl Seconds {
    /// The seconds given, else `default`.
    pub(crate) fn or(self, default: u64) -> u64 {
        self.seconds.unwrap_or(default)
    }
}

/// A number above zero (surrounding spaces allowed, so that `--sizes "1000, 10000"` reads).
pub(crate) fn positive<T: FromStr + PartialOrd + Default>(text: &str) -> Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(n) if n > T::default() => Ok(n),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// A percentage, 0 to 100.
pub(crate) fn percentage(text: &str) -> Result<u32, String> {
    match text.trim().parse() {
        Ok(rate) if rate <= 100 => Ok(rate),
        _ => Err(format!("`{text}` is not a percentage")),
    }
}

/// A frontmatter shape by name.
pub(crate) fn shape(text: &str) -> Result<Shape, String> {
    Shape::parse(text.trim())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::Cli;

    #[test]
    fn flags_are_consistent() {
        Cli::command().debug_assert();
    }
}
