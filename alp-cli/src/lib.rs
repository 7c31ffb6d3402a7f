//! `alp`: the command line of alp-memory. The contract runtimes rely on is `docs/CLI.md`: with `--json`, stdout holds
//! exactly one JSON document and an error is the last line of stderr, `{"error":{"kind","code","message", …}}`;
//! the exit status names the error class.
//!
//! The library holds the whole program so that tools can read its command-line definition ([`command`], for the man
//! page); the `alp` binary only calls [`main`].

mod adapter;
mod args;
mod commands;
mod inspect;
mod mcp;
mod output;
mod serve;
mod setup;

use std::io::Write;
use std::process::ExitCode;

use alp_memory::MemoryError;
use clap::Parser;

use args::{Cli, Command};

/// The command-line definition of `alp` (every command, option and help text), for generated documentation.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// What a command prints on stdout, and its exit status.
pub(crate) struct Printed {
    stdout: String,
    status: u8,
}

impl Printed {
    pub(crate) fn ok(stdout: String) -> Printed {
        Printed { stdout, status: 0 }
    }

    /// Output for people that holds text from memory (IDs, content, reasons) and no colour of alp's own: on a
    /// terminal its control characters are made visible ([`output::Terminal::show`]).
    pub(crate) fn people(stdout: &str) -> Printed {
        Printed::ok(output::Terminal::stdout().show(stdout).into_owned())
    }

    pub(crate) fn with_status(stdout: String, status: u8) -> Printed {
        Printed { stdout, status }
    }
}

/// Runs `alp` with the process's arguments and returns its exit status.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `--json` must shape even the errors of a command line that does not parse.
    let json = args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage(&e, json),
    };
    match run(&cli) {
        Ok(printed) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(printed.stdout.as_bytes());
            if !printed.stdout.ends_with('\n') && !printed.stdout.is_empty() {
                let _ = stdout.write_all(b"\n");
            }
            let _ = stdout.flush();
            ExitCode::from(printed.status)
        }
        Err(error) => fail(&error, cli.json),
    }
}

fn usage(error: &clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = error.print();
        return ExitCode::SUCCESS;
    }
    if let Some(message) = misplaced_global(error) {
        return fail(&MemoryError::Usage(message), json);
    }
    if json {
        let rendered = error.kind().as_str().map_or_else(|| error.to_string(), str::to_owned);
        let detail = error
            .to_string()
            .lines()
            .next()
            .map(|l| l.trim_start_matches("error: ").to_owned())
            .unwrap_or(rendered);
        fail(&MemoryError::Usage(detail), true)
    } else {
        let _ = error.print();
        ExitCode::from(exit_code(&MemoryError::Usage(String::new())))
    }
}

/// The options that choose identity and place, with their value names: before the subcommand only.
const BEFORE_THE_SUBCOMMAND: [(&str, &str); 4] =
    [("--root", "DIR"), ("--store", "URL"), ("--agents", "DIR"), ("--as", "ROLE")];

/// The message for one of [`BEFORE_THE_SUBCOMMAND`] given after the subcommand (clap only knows them on the
/// top-level command, so there it is an unknown argument): where to put it instead. Clap's own tip, to pass it
/// after `--`, would make it a value, never the option it was meant to be.
fn misplaced_global(error: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else { return None };
    let name = arg.split('=').next().unwrap_or_default();
    let (option, value) = BEFORE_THE_SUBCOMMAND.iter().find(|(option, _)| *option == name)?;
    Some(format!(
        "`{option}` is a global option: put it before the subcommand (`alp {option} {value} memory get ID`, not \
         `alp memory get ID {option} {value}`)"
    ))
}

fn fail(error: &MemoryError, json: bool) -> ExitCode {
    // Rendered first and written at once: stderr is unbuffered, and the line a runtime parses must not reach it in
    // pieces that other output could come between.
    let line = if json {
        format!("{}\n", alp_memory::json::error_document(error))
    } else {
        format!("{}\n", output::error_line(error, output::Colour::stderr(), output::Terminal::stderr()))
    };
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    ExitCode::from(exit_code(error))
}

/// The exit status of an error (`docs/CLI.md`, "Errors"):
/// 1 storage · 2 usage, agent definition or configuration · 3 invalid ID · 4 denied · 5 not found · 6 version
/// conflict · 7 already exists · 8 limit or invalid entry · 9 audit unavailable.
pub(crate) fn exit_code(error: &MemoryError) -> u8 {
    match error {
        MemoryError::Usage(_) | MemoryError::AgentDefinition(_) | MemoryError::Config { .. } => 2,
        MemoryError::InvalidMemoryId(_) | MemoryError::InvalidMemoryPath { .. } => 3,
        MemoryError::Unauthorized { .. } => 4,
        MemoryError::NotFound { .. }
        | MemoryError::TokenNotFound { .. }
        | MemoryError::VersionNotFound { .. } => 5,
        MemoryError::VersionConflict { .. } => 6,
        MemoryError::AlreadyExists { .. } | MemoryError::NameTaken { .. } => 7,
        MemoryError::LimitExceeded { .. } | MemoryError::InvalidEntry { .. } => 8,
        MemoryError::AuditUnavailable(_) | MemoryError::MissingRoot(_) => 9,
        _ => 1,
    }
}

fn run(cli: &Cli) -> Result<Printed, MemoryError> {
    match &cli.command {
        Command::Memory(command) => commands::memory(cli, command),
        Command::Agent(command) => commands::agent(cli, command),
        Command::Audit(command) => commands::audit(cli, command),
        Command::Adapter(command) => adapter::adapter(cli, command),
        Command::Store(args::StoreCommand::Copy { to }) => commands::store_copy(cli, to),
        Command::Store(args::StoreCommand::Migrate) => commands::store_migrate(cli),
        Command::Init { roles } => commands::init(cli, roles),
        Command::Mcp => mcp::serve(cli),
        Command::Serve {
            listen,
            allowed_hosts,
            max_concurrency,
            max_connections,
            tls_cert,
            tls_key,
            idle_timeout,
            oauth,
        } => {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => {
                    Some(memory_mcp::http::TlsFiles { cert: cert.clone(), key: key.clone() })
                }
                _ => None,
            };
            let limits = serve::Limits {
                max_concurrency: *max_concurrency,
                max_connections: *max_connections,
                idle_timeout: *idle_timeout,
            };
            serve::serve(cli, listen, allowed_hosts, limits, tls, oauth)
        }
        Command::Token(command) => serve::token(cli, command),
        Command::Inspect { listen } => inspect::inspect(cli, listen),
        Command::Completions { shell } => Ok(commands::completions(*shell)),
    }
}
