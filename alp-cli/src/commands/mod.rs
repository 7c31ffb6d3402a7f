//! The commands of `docs/CLI.md`, a module per command group: each one calls the service (or the audit log, the
//! agent definitions, the root) and turns what it returns into what `alp` prints, the documents of
//! `alp_memory::json` with `--json` (text for people is rendered in `output.rs`).

mod agent;
mod audit;
mod audit_table;
mod init;
mod memory;
mod store;

pub(crate) use agent::agent;
pub(crate) use audit::{Log, audit, record_filter};
pub(crate) use init::init;
pub(crate) use memory::memory;
pub(crate) use store::{store_copy, store_migrate};

use crate::Printed;
use crate::args::Cli;

/// `alp completions SHELL`.
pub(crate) fn completions(shell: clap_complete::Shell) -> Printed {
    use clap::CommandFactory as _;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "alp", &mut script);
    Printed::ok(String::from_utf8_lossy(&script).into_owned())
}
