//! The subcommands, declared once with clap. Each subcommand's own flags are its `Args`, in the file of what it
//! runs; the flag groups several of them share are in `flags.rs`, which imports no bench, so no bench and this
//! file import each other.

use clap::{Parser, Subcommand};

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
    /// How long each page of the real `alp inspect` takes over a 10,000-entry root and a 100,000-record log:
    /// `BENCHMARKS-inspect.md`
    InspectBench(crate::inspect_bench::Args),
    /// Reading a large audit log with the real `alp` (`disclosed`, `show --disclosed`, `verify`) against
    /// `sha256sum`: `BENCHMARKS-audit.md`
    AuditBench(crate::audit_bench::Args),
    /// `cargo test --workspace ARGS…` against a throwaway PostgreSQL cluster (every argument, `--help` included,
    /// goes to `cargo test`)
    #[command(disable_help_flag = true)]
    Test {
        /// The arguments of `cargo test`
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
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
