//! `alp`: the command line of alp-memory. The contract runtimes rely on is DESIGN.md §9: with `--json`, stdout holds
//! exactly one JSON document and an error is the last line of stderr, `{"error":{"kind","code","message", …}}`;
//! the exit status names the error class.

mod args;
mod output;
mod setup;

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use alp_memory::memory_policy::{Operation, load_agent};
use alp_memory::{CreateRequest, EntryFields, MemoryError, SearchFilter, SearchRequest, UpdateRequest};
use clap::Parser;
use serde_json::json;

use alp_memory::memory_audit::ExpectedHead;
use args::{AgentCommand, AuditCommand, Cli, Command, ContentArgs, FieldArgs, MemoryCommand};
use output::{EntryJson, entry_markdown, error_json, to_json};
use setup::Setup;

/// What a command prints on stdout, and its exit status.
struct Printed {
    stdout: String,
    status: u8,
}

impl Printed {
    fn ok(stdout: String) -> Printed {
        Printed { stdout, status: 0 }
    }
}

fn main() -> ExitCode {
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
        ExitCode::from(MemoryError::Usage(String::new()).exit_code())
    }
}

fn fail(error: &MemoryError, json: bool) -> ExitCode {
    let mut stderr = std::io::stderr().lock();
    if json {
        let _ = writeln!(stderr, "{}", error_json(error));
    } else {
        let _ = writeln!(stderr, "error: {error}");
    }
    ExitCode::from(error.exit_code())
}

fn run(cli: &Cli) -> Result<Printed, MemoryError> {
    match &cli.command {
        Command::Memory(command) => memory(cli, command),
        Command::Agent(AgentCommand::Show { role }) => agent_show(cli, role),
        Command::Audit(AuditCommand::Verify { expect, file }) => {
            audit_verify(cli, expect.as_ref(), file.as_deref())
        }
        Command::Audit(AuditCommand::Head) => audit_head(cli),
        Command::Audit(AuditCommand::Show { since, limit }) => audit_show(cli, *since, *limit),
        Command::Adapter(command) => setup::adapter(cli, command),
    }
}

fn require_role(cli: &Cli) -> Result<&str, MemoryError> {
    cli.role
        .as_deref()
        .ok_or_else(|| MemoryError::Usage("memory commands need the acting role: pass --as ROLE".to_owned()))
}

fn memory(cli: &Cli, command: &MemoryCommand) -> Result<Printed, MemoryError> {
    let role = require_role(cli)?;
    match command {
        MemoryCommand::Create { id, fields, content } => {
            let service = Setup::new(cli)?.service();
            let content = read_content(content, true, value_limit(&service))?.unwrap_or_default();
            let entry = service
                .create(role, CreateRequest { id: id.clone(), content, fields: entry_fields(fields) })?;
            entry_output(cli, &entry)
        }
        MemoryCommand::Get { id } => {
            let entry = Setup::new(cli)?.service().get(role, id)?;
            entry_output(cli, &entry)
        }
        MemoryCommand::Update { id, expected_version, fields, content, clear } => {
            let service = Setup::new(cli)?.service();
            let content = read_content(content, false, value_limit(&service))?;
            let request = UpdateRequest {
                id: id.clone(),
                expected_version: *expected_version,
                content,
                fields: entry_fields(fields),
                clear: clear.clone(),
            };
            let entry = service.update(role, request)?;
            entry_output(cli, &entry)
        }
        MemoryCommand::Delete { id, expected_version } => {
            Setup::new(cli)?.service().delete(role, id, *expected_version)?;
            if cli.json {
                Ok(Printed::ok(to_json(&json!({ "id": id, "deleted": true }))?))
            } else {
                Ok(Printed::ok(format!("deleted `{id}` (it was at version {expected_version})")))
            }
        }
        MemoryCommand::Search { terms, prefix, filter, limit } => {
            let request = SearchRequest {
                query: terms.join(" "),
                prefix: prefix.clone(),
                filter: SearchFilter {
                    kind: filter.kind,
                    memory_type: filter.memory_type,
                    importance: filter.importance,
                    key: filter.key.clone(),
                    source: filter.source.clone(),
                    scope: filter.scope.clone(),
                },
                limit: *limit,
            };
            let results = Setup::new(cli)?.service().search(role, &request)?;
            if cli.json {
                let entries: Vec<EntryJson<'_>> = results.iter().map(EntryJson::scored).collect();
                Ok(Printed::ok(to_json(&json!({ "entries": entries }))?))
            } else if results.is_empty() {
                Ok(Printed::ok("no entries found".to_owned()))
            } else {
                let blocks: Vec<String> =
                    results.iter().map(|r| entry_markdown(&r.entry, Some(r.score))).collect();
                Ok(Printed::ok(blocks.join("\n")))
            }
        }
        MemoryCommand::Context { terms, budget, prefix, task, feature } => setup::context(
            cli,
            role,
            &terms.join(" "),
            *budget,
            prefix.as_deref(),
            task.as_deref(),
            feature.as_deref(),
        ),
        MemoryCommand::Prune { prefix } => {
            let service = Setup::new(cli)?.service();
            let mut bar = setup::Progress::new(!cli.json, "expired entries handled");
            let pruned = service
                .prune_with_progress(role, prefix.as_deref(), &mut |done, total| bar.show(done, total))?;
            bar.finish();
            if cli.json {
                let ids: Vec<&str> = pruned.iter().map(|id| id.as_str()).collect();
                Ok(Printed::ok(to_json(&json!({ "pruned": ids }))?))
            } else if pruned.is_empty() {
                Ok(Printed::ok("nothing to prune".to_owned()))
            } else {
                let lines: Vec<String> = pruned.iter().map(|id| format!("pruned `{id}`")).collect();
                Ok(Printed::ok(lines.join("\n")))
            }
        }
        MemoryCommand::Import { file, project } => setup::import(cli, role, file, project),
        MemoryCommand::Export { project, output } => setup::export(cli, role, project, output.as_deref()),
    }
}

fn entry_fields(args: &FieldArgs) -> EntryFields {
    EntryFields {
        kind: args.kind.clone(),
        memory_type: args.memory_type.clone(),
        key: args.key.clone(),
        importance: args.importance.clone(),
        source: args.source.clone(),
        scope: args.scope.clone(),
        ttl: args.ttl.clone(),
    }
}

fn entry_output(cli: &Cli, entry: &alp_memory::memory_store::MemoryEntry) -> Result<Printed, MemoryError> {
    if cli.json {
        Ok(Printed::ok(to_json(&EntryJson::new(entry))?))
    } else {
        Ok(Printed::ok(entry_markdown(entry, None)))
    }
}

/// The value limit of the store a command runs on, in characters.
fn value_limit(service: &setup::CliService) -> u64 {
    use alp_memory::memory_store::MemoryStore as _;
    service.store().limits().max_value_chars
}

/// The content of a create or update: `--content`, `--file PATH` (`-` is stdin), or — for a create with neither —
/// stdin when it is not a terminal. A file or stdin is read only up to `limit` characters and one more, never
/// further (DESIGN §5): longer content reaches the service as `limit + 1` characters, which it refuses as over the
/// limit.
fn read_content(
    args: &ContentArgs,
    stdin_by_default: bool,
    limit: u64,
) -> Result<Option<String>, MemoryError> {
    if let Some(text) = &args.content {
        return Ok(Some(text.clone()));
    }
    match &args.file {
        Some(path) if path == Path::new("-") => read_stdin(limit).map(Some),
        Some(path) => std::fs::File::open(path)
            .map_err(|e| MemoryError::Usage(format!("cannot read `{}`: {e}", path.display())))
            .and_then(|file| read_capped(file, limit, &path.display().to_string()))
            .map(Some),
        None if stdin_by_default => {
            if std::io::stdin().is_terminal() {
                Err(MemoryError::Usage(
                    "no content: pass --content TEXT, --file PATH, or pipe it on stdin".to_owned(),
                ))
            } else {
                read_stdin(limit).map(Some)
            }
        }
        None => Ok(None),
    }
}

fn read_stdin(limit: u64) -> Result<String, MemoryError> {
    read_capped(std::io::stdin().lock(), limit, "stdin")
}

/// Reads UTF-8 text, at most `limit + 1` characters of it: at most `4 × (limit + 1)` bytes are read.
fn read_capped(reader: impl Read, limit: u64, from: &str) -> Result<String, MemoryError> {
    let keep = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let max_bytes = limit.saturating_add(1).saturating_mul(4);
    let mut bytes = Vec::new();
    reader
        .take(max_bytes)
        .read_to_end(&mut bytes)
        .map_err(|e| MemoryError::Usage(format!("cannot read {from}: {e}")))?;
    let hit_cap = bytes.len() as u64 == max_bytes;
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // The cap may cut the last character in half; what precedes it is already more than the limit.
        Err(e) if hit_cap && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes)
                .map_err(|_| MemoryError::Usage(format!("content from {from} is not valid UTF-8")))?
        }
        Err(_) => return Err(MemoryError::Usage(format!("content from {from} is not valid UTF-8"))),
    };
    if let Some((at, _)) = text.char_indices().nth(keep) {
        text.truncate(at);
    }
    Ok(text)
}

fn agent_show(cli: &Cli, role: &str) -> Result<Printed, MemoryError> {
    let actor = load_agent(&cli.agents, role)?;
    let grants = |op| actor.grants(op).iter().map(|g| g.as_str().to_owned()).collect::<Vec<_>>();
    let (read, write) = (grants(Operation::Read), grants(Operation::Write));
    let warnings = actor.warnings();
    if cli.json {
        let document = json!({
            "role": actor.role().as_str(),
            "reportsTo": actor.reports_to().map(|r| r.as_str()),
            "memory": { "read": read, "write": write },
            "warnings": warnings,
        });
        return Ok(Printed::ok(to_json(&document)?));
    }
    let none = || "(none)".to_owned();
    let mut text = format!("role: {}\n", actor.role());
    if let Some(manager) = actor.reports_to() {
        text.push_str(&format!("reports to: {manager} (reporting grants no memory access)\n"));
    }
    let list = |v: &[String]| if v.is_empty() { none() } else { v.join(", ") };
    text.push_str(&format!("read:  {}\nwrite: {}\n", list(&read), list(&write)));
    for warning in warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    Ok(Printed::ok(text))
}

fn audit_verify(
    cli: &Cli,
    expect: Option<&ExpectedHead>,
    file: Option<&Path>,
) -> Result<Printed, MemoryError> {
    use alp_memory::memory_audit::{VerifyReport, verify_expecting};
    let report = match file {
        // A saved log: no root needed; the key, when set, is the one it was written with.
        Some(file) => {
            let key = setup::audit_key(Path::new("/nonexistent-root"))?;
            verify_expecting(file, key.as_ref(), expect)
        }
        None => {
            let root = setup::resolve_root(cli)?;
            let key = setup::audit_key(&root)?;
            verify_expecting(root.join(setup::AUDIT_FILE), key.as_ref(), expect)
        }
    }
    .map_err(|e| MemoryError::AuditUnavailable(e.to_string()))?;
    match report {
        VerifyReport::Ok { records, last_hash } => {
            let stdout = if cli.json {
                to_json(&json!({ "ok": true, "records": records, "lastHash": last_hash }))?
            } else {
                format!("audit log intact: {records} records, last hash {last_hash}")
            };
            Ok(Printed::ok(stdout))
        }
        VerifyReport::Broken { first_bad_seq, reason } => {
            let stdout = if cli.json {
                to_json(&json!({ "ok": false, "firstBadSeq": first_bad_seq, "reason": reason.code() }))?
            } else {
                format!("audit log broken at record {first_bad_seq}: {reason}")
            };
            Ok(Printed { stdout, status: 1 })
        }
    }
}

fn audit_head(cli: &Cli) -> Result<Printed, MemoryError> {
    let root = setup::resolve_root(cli)?;
    let (seq, hash) = alp_memory::memory_audit::head(root.join(setup::AUDIT_FILE))
        .map_err(|e| MemoryError::AuditUnavailable(e.to_string()))?;
    if cli.json {
        return Ok(Printed::ok(to_json(&json!({ "seq": seq, "hash": hash }))?));
    }
    Ok(Printed::ok(format!("{seq}:{hash}")))
}

/// The records as stored, one per line (JSONL with or without `--json`), written straight to stdout.
fn audit_show(cli: &Cli, since: u64, limit: Option<u64>) -> Result<Printed, MemoryError> {
    let root = setup::resolve_root(cli)?;
    let mut stdout = std::io::stdout().lock();
    alp_memory::memory_audit::show(root.join(setup::AUDIT_FILE), since, limit, &mut stdout)
        .map_err(|e| MemoryError::AuditUnavailable(e.to_string()))?;
    stdout.flush().map_err(|e| MemoryError::Usage(format!("cannot write to stdout: {e}")))?;
    Ok(Printed::ok(String::new()))
}
