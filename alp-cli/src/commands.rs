//! The commands of `docs/CLI.md`: each one calls the service (or the audit log, the agent definitions, the root) and
//! turns what it returns into what `alp` prints, the documents of `alp_memory::json` with `--json`.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use alp_memory::json;
use alp_memory::memory_audit::{VerifyReport, verify_expecting};
use alp_memory::memory_entry::{Cancel, MemoryStore as _, Version};
use alp_memory::memory_policy::{Operation, Role};
use alp_memory::{
    ContextRequest, CreateRequest, MemoryError, QueryTerms, SearchRequest, Skipped, UpdateRequest,
    check_filter,
};
use serde_json::{Value, json};

use crate::Printed;
use crate::args::{AgentCommand, AuditCommand, Cli, ContentArgs, MemoryCommand};
use crate::output::{Colour, Progress, ShownLines, Terminal, entry_markdown, to_json};
use crate::setup::{self, AUDIT_FILE, AgentsDir, CliService, Place};

fn require_role(cli: &Cli) -> Result<&str, MemoryError> {
    cli.role
        .as_deref()
        .ok_or_else(|| MemoryError::Usage("memory commands need the acting role: pass --as ROLE".to_owned()))
}

/// The bounds of a query and of its filter values (docs/CLI.md, "Bounded work"), checked as part of the command
/// line: before `config.yaml`, the root, a definition or the audit log is read. (Typed filters, `--kind` to
/// `--scope`, are checked by their parsers.)
fn check_bounds(command: &MemoryCommand) -> Result<(), MemoryError> {
    let filters = |values: &[(&str, &Option<String>)]| {
        values.iter().try_for_each(|(name, value)| value.as_deref().map_or(Ok(()), |v| check_filter(name, v)))
    };
    match command {
        MemoryCommand::Search { terms, prefix, .. } => {
            QueryTerms::from_pieces(terms).check()?;
            filters(&[("--prefix", prefix)])
        }
        MemoryCommand::List { prefix, .. } => filters(&[("PREFIX", prefix)]),
        MemoryCommand::Context { terms, prefix, task, feature, .. } => {
            QueryTerms::from_pieces(terms).check()?;
            filters(&[("--prefix", prefix), ("--task", task), ("--feature", feature)])
        }
        _ => Ok(()),
    }
}

/// `alp memory …`.
pub(crate) fn memory(cli: &Cli, command: &MemoryCommand) -> Result<Printed, MemoryError> {
    if let MemoryCommand::Redact { id, version } = command {
        return redact(cli, id, *version);
    }
    let role = require_role(cli)?;
    check_bounds(command)?;
    let service = setup::open_service(cli)?;
    match command {
        MemoryCommand::Redact { id, version } => redact(cli, id, *version),
        MemoryCommand::Get { id, version: Some(version) } => {
            version_output(cli, &service.get_version(role, id, *version)?)
        }
        MemoryCommand::History { id, limit } => {
            let versions = service.history(role, id, *limit)?;
            Ok(if cli.json {
                Printed::ok(to_json(&json::history_document(id, &versions)))
            } else {
                let lines: Vec<String> = versions.iter().map(version_line).collect();
                Printed::people(&format!("history of `{id}`, newest first:\n{}", lines.join("\n")))
            })
        }
        MemoryCommand::Restore { id, version, expected_version } => {
            written_output(cli, role, "restored", &service.restore(role, id, *version, *expected_version)?)
        }
        MemoryCommand::Create { id, fields, content } => {
            let content = read_content(content, true, value_limit(&service))?.unwrap_or_default();
            let entry =
                service.create(role, CreateRequest { id: id.clone(), content, fields: fields.input() })?;
            entry_output(cli, &entry)
        }
        MemoryCommand::Get { id, version: None } => entry_output(cli, &service.get(role, id)?),
        MemoryCommand::Update { id, expected_version, fields, content, clear } => {
            let content = read_content(content, false, value_limit(&service))?;
            let request = UpdateRequest {
                id: id.clone(),
                expected_version: *expected_version,
                content,
                fields: fields.input(),
                clear: clear.clone(),
            };
            written_output(cli, role, "updated", &service.update(role, request)?)
        }
        MemoryCommand::Delete { id, expected_version } => {
            service.delete(role, id, *expected_version)?;
            Ok(if cli.json {
                Printed::ok(to_json(&json::deleted_document(id)))
            } else {
                Printed::people(&format!("deleted `{id}` (it was at version {expected_version})"))
            })
        }
        MemoryCommand::Search { terms, prefix, filter, limit } => {
            let request = SearchRequest {
                query: QueryTerms::from_pieces(terms),
                prefix: prefix.clone(),
                filter: filter.filter(),
                limit: *limit,
                cancel: Cancel::never(),
            };
            let results = service.search(role, &request)?;
            Ok(Printed::ok(if cli.json {
                setup::json_string(&json::SearchJson(&results))?
            } else if results.is_empty() {
                "no entries found".to_owned()
            } else {
                let (colour, terminal) = (Colour::stdout(), Terminal::stdout());
                let blocks: Vec<String> = results
                    .iter()
                    .map(|r| entry_markdown(&r.entry, Some(r.score), colour, terminal))
                    .collect();
                blocks.join("\n")
            }))
        }
        MemoryCommand::List { prefix, filter, limit } => {
            let entries = service.list(role, prefix.as_deref(), filter.filter(), *limit)?;
            Ok(if cli.json {
                Printed::ok(setup::json_string(&json::ListJson(&entries))?)
            } else if entries.is_empty() {
                Printed::ok("no entries found".to_owned())
            } else {
                let lines: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        format!("{}  v{}  {}  {}", e.id, e.version, e.fields.kind, first_line(&e.content))
                    })
                    .collect();
                Printed::people(&lines.join("\n"))
            })
        }
        MemoryCommand::Context { terms, budget, prefix, task, feature } => {
            let request = ContextRequest {
                query: QueryTerms::from_pieces(terms),
                budget: *budget,
                prefix: prefix.clone(),
                task: task.clone(),
                feature: feature.clone(),
                cancel: Cancel::never(),
            };
            let context = service.context(role, &request)?;
            if cli.json {
                return Ok(Printed::ok(to_json(&json::context_document(&context))));
            }
            let diagnostics = context.diagnostics();
            let mut text = context.text().to_owned();
            text.push_str("---\n");
            if !context.entry_tiers().is_empty() {
                text.push_str("why each entry is here (the budget goes to the tiers in this order: critical, task, feature, project/architecture, other):\n");
                for (id, tier) in context.entry_ids().iter().zip(context.entry_tiers()) {
                    text.push_str(&format!(
                        "- {id}: {}\n",
                        tier_reason(*tier, request.task.as_deref(), request.feature.as_deref())
                    ));
                }
            }
            text.push_str(&format!(
                "{} of {} characters used, {} included",
                diagnostics.characters_used(),
                diagnostics.character_budget(),
                counted(context.entry_ids().len() as u64, "entry", "entries")
            ));
            if diagnostics.truncated() {
                text.push_str(&format!(
                    "; left out for the budget: {}",
                    diagnostics.omitted_entry_ids().join(", ")
                ));
            }
            Ok(Printed::people(&text))
        }
        MemoryCommand::Prune { prefix } => {
            let mut bar = Progress::new(!cli.json, "expired entries");
            let pruned = service
                .prune_with_progress(role, prefix.as_deref(), &mut |done, total| bar.show(done, total))?;
            bar.finish();
            Ok(if cli.json {
                let ids: Vec<&str> = pruned.ids.iter().map(|id| id.as_str()).collect();
                let mut document = json!({ "pruned": ids });
                // Entries the role may not read are counted, never named.
                if pruned.withheld > 0 {
                    document["withheld"] = json!(pruned.withheld);
                }
                Printed::ok(to_json(&document))
            } else if pruned.ids.is_empty() && pruned.withheld == 0 {
                Printed::ok("nothing to prune".to_owned())
            } else {
                let mut lines: Vec<String> = pruned.ids.iter().map(|id| format!("pruned `{id}`")).collect();
                if pruned.withheld > 0 {
                    lines.push(format!("pruned {} expired entries this role may not read", pruned.withheld));
                }
                Printed::people(&lines.join("\n"))
            })
        }
        MemoryCommand::Import { file, project, on_existing } => {
            let text = read_alp_file(file)?;
            let mut bar = Progress::new(!cli.json, "entries imported");
            let report = service.import_alp_with_progress(
                role,
                project,
                &text,
                (*on_existing).into(),
                &mut |done, total| {
                    bar.show(done, total);
                },
            )?;
            bar.finish();
            if cli.json {
                let updated: Vec<&str> = report.updated.iter().map(|id| id.as_str()).collect();
                let document = json!({
                    "imported": report.imported.len(),
                    "updated": updated,
                    "skipped": skipped_json(&report.skipped),
                });
                return Ok(Printed::ok(to_json(&document)));
            }
            let mut text = format!(
                "imported {} into `project:{project}`, updated {}, left {} alone",
                counted(report.imported.len() as u64, "entry", "entries"),
                report.updated.len(),
                report.skipped.len()
            );
            text.push_str(&skipped_summary(&report.skipped));
            Ok(Printed::people(&text))
        }
        MemoryCommand::Export { project, output } => {
            let report = service.export_alp(role, project)?;
            if let Some(path) = output {
                std::fs::write(path, &report.text)
                    .map_err(|e| MemoryError::Usage(format!("cannot write `{}`: {e}", path.display())))?;
            }
            if cli.json {
                let mut document =
                    json!({ "exported": report.exported, "skipped": skipped_json(&report.skipped) });
                if output.is_none() {
                    document["text"] = report.text.clone().into();
                }
                return Ok(Printed::ok(to_json(&document)));
            }
            let mut text = match output {
                Some(path) => {
                    format!(
                        "exported {} to `{}`",
                        counted(report.exported as u64, "entry", "entries"),
                        path.display()
                    )
                }
                None => report.text.trim_end().to_owned(),
            };
            for s in &report.skipped {
                text.push_str(&format!("\n// skipped {}: {}", s.id, s.reason));
            }
            Ok(Printed::people(&text))
        }
    }
}

/// Why an entry of a planned context is there, for people: its tier in the read plan.
fn tier_reason(tier: alp_memory::memory_context::Tier, task: Option<&str>, feature: Option<&str>) -> String {
    use alp_memory::memory_context::Tier;
    let shown = |name: Option<&str>| name.map(|n| format!(" `{n}`")).unwrap_or_default();
    match tier {
        Tier::Critical => "critical (importance critical, whatever its scope)".to_owned(),
        Tier::Task => format!("task (scoped to the task{})", shown(task)),
        Tier::Feature => format!("feature (scoped to the feature{})", shown(feature)),
        Tier::ProjectOrArchitecture => {
            "project/architecture (unscoped, of type project or architecture)".to_owned()
        }
        Tier::Unscoped => "other (unscoped)".to_owned(),
    }
}

/// `1 entry`, `2 entries`: a count and its noun in the right number.
pub(crate) fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn skipped_json(skipped: &[Skipped]) -> Vec<Value> {
    skipped.iter().map(|s| json!({ "id": s.id, "reason": s.reason })).collect()
}

/// The entries an import left alone, for people, after the summary line (which counts them all): why the routine
/// ones were left alone, then the first few others with their reason.
fn skipped_summary(skipped: &[Skipped]) -> String {
    const SHOWN: usize = 10;
    let routine = skipped.iter().filter(|s| s.reason == "exists" || s.reason == "unchanged").count();
    let mut text = String::new();
    if routine > 0 {
        if routine == skipped.len() {
            text.push_str(" (already there or unchanged)");
        } else {
            text.push_str(&format!(" ({routine} of them already there or unchanged)"));
        }
    }
    let others: Vec<&Skipped> =
        skipped.iter().filter(|s| s.reason != "exists" && s.reason != "unchanged").collect();
    for s in others.iter().take(SHOWN) {
        text.push_str(&format!("\nskipped {}: {}", s.id, s.reason));
    }
    if others.len() > SHOWN {
        text.push_str(&format!("\n… and {} more skipped (see --json)", others.len() - SHOWN));
    }
    text
}

fn first_line(content: &str) -> String {
    const WIDTH: usize = 60;
    let line = content.lines().next().unwrap_or("");
    match line.char_indices().nth(WIDTH) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// An entry as `get`, `create` and `update` print it: the entry document written from the borrowed entry (as
/// search and list results are), or Markdown for people.
fn entry_output(cli: &Cli, entry: &alp_memory::memory_entry::MemoryEntry) -> Result<Printed, MemoryError> {
    Ok(Printed::ok(if cli.json {
        setup::json_string(&json::EntryJson::new(entry))?
    } else {
        entry_markdown(entry, None, Colour::stdout(), Terminal::stdout())
    }))
}

/// What `update` and `restore` print: the entry when `role` may read it; otherwise (writes disclose nothing a read grant
/// would not: the service's [`Written::Withheld`](alp_memory::Written)) only its ID and version, `{"id","version"}` with `--json`.
fn written_output(
    cli: &Cli,
    role: &str,
    verb: &str,
    written: &alp_memory::Written,
) -> Result<Printed, MemoryError> {
    match written {
        alp_memory::Written::Entry(entry) => entry_output(cli, entry),
        alp_memory::Written::Withheld { id, version } => Ok(if cli.json {
            Printed::ok(setup::json_string(&json::WrittenJson(written))?)
        } else {
            Printed::people(&format!(
                "{verb} `{id}`, now at version {version} (its content is not shown: `{role}` may write it but not read it)"
            ))
        }),
    }
}

/// `alp memory redact ID --version N`: an operator command, so `--as` is refused before anything is opened.
fn redact(cli: &Cli, id: &str, version: u64) -> Result<Printed, MemoryError> {
    if cli.role.is_some() {
        return Err(MemoryError::Usage(
            "redact is an operator command and takes no --as: whoever may write the store redacts".to_owned(),
        ));
    }
    let service = setup::open_service(cli)?;
    service.redact(id, version)?;
    Ok(if cli.json {
        Printed::ok(to_json(&json::redact_document(id, version)))
    } else {
        Printed::people(&format!(
            "redacted version {version} of `{id}`: its content is gone, its fields stay"
        ))
    })
}

/// A kept version as `get --version` prints it: the entry (with `"redacted":true` when redacted).
fn version_output(cli: &Cli, version: &Version) -> Result<Printed, MemoryError> {
    match version {
        Version::Entry(entry) => entry_output(cli, entry),
        _ if cli.json => Ok(Printed::ok(to_json(&json::version_object(version)))),
        Version::Redacted(entry) => Ok(Printed::ok(format!(
            "{}\n(version {} was redacted: its content is gone)\n",
            entry_markdown(entry, None, Colour::stdout(), Terminal::stdout()).trim_end(),
            entry.version
        ))),
        Version::Tombstone { .. } => Ok(Printed::people(&version_line(version))),
    }
}

/// One line of `alp memory history` for people.
fn version_line(version: &Version) -> String {
    let what = match version {
        Version::Entry(entry) => first_line(&entry.content),
        Version::Redacted(_) => "(redacted)".to_owned(),
        Version::Tombstone { .. } => "(deleted)".to_owned(),
    };
    format!("  version {}  {}  {what}", version.version(), version.updated_at())
}

/// The value limit of the store a command runs on, in characters.
fn value_limit(service: &CliService) -> u64 {
    service.store().limits().max_value_chars
}

/// The content of a create or update: `--content`, `--file PATH` (`-` is stdin), or — for a create with neither —
/// stdin when it is not a terminal and not empty (else `USAGE` "no content given": a create that read nothing makes
/// no entry). A file or stdin is read only up to `limit` characters and one more, never
/// further (`docs/STORAGE.md`): longer content reaches the service as `limit + 1` characters, which it refuses as over
/// the limit.
fn read_content(
    args: &ContentArgs,
    stdin_by_default: bool,
    limit: u64,
) -> Result<Option<String>, MemoryError> {
    if let Some(text) = &args.content {
        return Ok(Some(text.clone()));
    }
    match &args.file {
        Some(path) if path == Path::new("-") => {
            read_capped(std::io::stdin().lock(), limit, "stdin").map(Some)
        }
        Some(path) => std::fs::File::open(path)
            .map_err(|e| MemoryError::Usage(format!("cannot read `{}`: {e}", path.display())))
            .and_then(|file| read_capped(file, limit, &format!("`{}`", path.display())))
            .map(Some),
        None if stdin_by_default => {
            // A terminal is never waited on, and an empty stdin (a closed or empty pipe, `/dev/null`) is no content
            // at all, never an empty entry made by mistake: an empty entry takes `--content ""`.
            let none = || {
                MemoryError::Usage(
                    "no content given: pass --content TEXT, --file PATH, or pipe it on stdin (an empty entry takes \
                     --content \"\")"
                        .to_owned(),
                )
            };
            if std::io::stdin().is_terminal() {
                return Err(none());
            }
            let text = read_capped(std::io::stdin().lock(), limit, "stdin")?;
            if text.is_empty() { Err(none()) } else { Ok(Some(text)) }
        }
        None => Ok(None),
    }
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
    let not_utf8 = || MemoryError::Usage(format!("the content from {from} is not valid UTF-8"));
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // The cap may cut the last character in half; what precedes it is already more than the limit.
        Err(e) if hit_cap && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|_| not_utf8())?
        }
        Err(_) => return Err(not_utf8()),
    };
    if let Some((at, _)) = text.char_indices().nth(keep) {
        text.truncate(at);
    }
    Ok(text)
}

/// The largest `.alp` file an import reads: 16 MiB.
const MAX_ALP_BYTES: u64 = 16 * 1024 * 1024;

/// Reads an `.alp` file to import, never more than [`MAX_ALP_BYTES`] (and one more byte to know it is more).
fn read_alp_file(file: &Path) -> Result<String, MemoryError> {
    let cannot = |e: std::io::Error| MemoryError::Usage(format!("cannot read `{}`: {e}", file.display()));
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .map_err(cannot)?
        .take(MAX_ALP_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_ALP_BYTES {
        return Err(MemoryError::LimitExceeded {
            id: String::new(),
            limit: MAX_ALP_BYTES,
            count: MAX_ALP_BYTES + 1,
            message: format!(
                "`{}` is more than {} MiB, the largest .alp file an import reads; split it",
                file.display(),
                MAX_ALP_BYTES / (1024 * 1024)
            ),
        });
    }
    String::from_utf8(bytes)
        .map_err(|_| MemoryError::Usage(format!("`{}` is not valid UTF-8", file.display())))
}

/// `alp agent …`: reads definitions only, needs no root.
pub(crate) fn agent(cli: &Cli, command: &AgentCommand) -> Result<Printed, MemoryError> {
    match command {
        AgentCommand::Show { role } => agent_show(cli, role),
        AgentCommand::List => agent_list(cli),
    }
}

fn agent_show(cli: &Cli, role: &str) -> Result<Printed, MemoryError> {
    let actor = AgentsDir::resolve(cli)?.load(role)?;
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
        return Ok(Printed::ok(to_json(&document)));
    }
    let mut text = format!("role: {}\n", actor.role());
    if let Some(manager) = actor.reports_to() {
        text.push_str(&format!("reports to: {manager} (reporting grants no memory access)\n"));
    }
    let list = |v: &[String]| if v.is_empty() { "(none)".to_owned() } else { v.join(", ") };
    text.push_str(&format!("read:  {}\nwrite: {}\n", list(&read), list(&write)));
    for warning in warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    Ok(Printed::people(&text))
}

/// Every definition in the agents directory, by role; one that does not load is listed with its error as a
/// warning (the listing itself succeeds).
fn agent_list(cli: &Cli) -> Result<Printed, MemoryError> {
    let agents = AgentsDir::resolve(cli)?;
    let roles = agents.roles()?;
    let listed: Vec<(String, Option<String>, Vec<String>)> = roles
        .iter()
        .map(|role| match agents.load(role.as_str()) {
            Ok(actor) => (
                role.as_str().to_owned(),
                actor.reports_to().map(|r| r.as_str().to_owned()),
                actor.warnings(),
            ),
            Err(e) => (role.as_str().to_owned(), None, vec![e.to_string()]),
        })
        .collect();
    if cli.json {
        let roles: Vec<Value> = listed
            .iter()
            .map(|(role, reports_to, warnings)| json!({ "role": role, "reportsTo": reports_to, "warnings": warnings }))
            .collect();
        return Ok(Printed::ok(to_json(&json!({ "roles": roles }))));
    }
    if listed.is_empty() {
        return Ok(Printed::ok(format!(
            "no agent definitions: {}; create some with `alp init --role ROLE`",
            agents.described()
        )));
    }
    let mut text = String::new();
    for (role, reports_to, warnings) in &listed {
        text.push_str(role);
        if let Some(manager) = reports_to {
            text.push_str(&format!(" (reports to {manager})"));
        }
        text.push('\n');
        for warning in warnings {
            text.push_str(&format!("  warning: {warning}\n"));
        }
    }
    Ok(Printed::people(&text))
}

/// `alp audit …`: the place's log (the root must exist, the database must hold the schema), or a saved one with
/// `verify --file`.
pub(crate) fn audit(cli: &Cli, command: &AuditCommand) -> Result<Printed, MemoryError> {
    let unavailable = |e: &dyn std::fmt::Display| MemoryError::AuditUnavailable(e.to_string());
    if let AuditCommand::Verify { expect, file: Some(file) } = command {
        // A saved log: no root needed; the key, when set, is the one it was written with.
        let report = verify_expecting(file, setup::audit_key(None)?.as_ref(), expect.as_ref())
            .map_err(|e| unavailable(&e))?;
        return Ok(verify_output(cli, &report));
    }
    match setup::resolve_place(cli)? {
        Place::Root(root) => {
            let log = setup::open_store(&root)?.root().join(AUDIT_FILE);
            match command {
                AuditCommand::Verify { expect, .. } => {
                    let key = setup::audit_key(log.parent())?;
                    let report =
                        verify_expecting(&log, key.as_ref(), expect.as_ref()).map_err(|e| unavailable(&e))?;
                    Ok(verify_output(cli, &report))
                }
                AuditCommand::Head => {
                    let (seq, hash) = alp_memory::memory_audit::head(log).map_err(|e| unavailable(&e))?;
                    Ok(head_output(cli, seq, &hash))
                }
                AuditCommand::Show { since, limit } => {
                    show_note(cli);
                    let mut stdout = ShownLines::new(std::io::stdout().lock(), Terminal::stdout());
                    alp_memory::memory_audit::show(log, *since, *limit, &mut stdout)
                        .map_err(|e| unavailable(&e))?;
                    stdout.flush().map_err(|e| MemoryError::Usage(format!("cannot write to stdout: {e}")))?;
                    Ok(Printed::ok(String::new()))
                }
            }
        }
        Place::Database(url) => {
            let sink = setup::open_database(&url)?.audit_sink(setup::audit_key(None)?);
            match command {
                AuditCommand::Verify { expect, .. } => {
                    let report = sink.verify(expect.as_ref()).map_err(|e| unavailable(&e))?;
                    Ok(verify_output(cli, &report))
                }
                AuditCommand::Head => {
                    let (seq, hash) = sink.head().map_err(|e| unavailable(&e))?;
                    Ok(head_output(cli, seq, &hash))
                }
                AuditCommand::Show { since, limit } => {
                    show_note(cli);
                    let mut stdout = ShownLines::new(std::io::stdout().lock(), Terminal::stdout());
                    sink.show(*since, *limit, &mut stdout).map_err(|e| unavailable(&e))?;
                    stdout.flush().map_err(|e| MemoryError::Usage(format!("cannot write to stdout: {e}")))?;
                    Ok(Printed::ok(String::new()))
                }
            }
        }
    }
}

/// What a record of `alp audit show` means, for people (on stderr, so stdout stays the records as stored): the
/// outcome of the authorization, written before the store is touched.
pub(crate) const AUDIT_SHOW_NOTE: &str = "note: each record is the authorization outcome of one call, written before \
    the store is touched: `allowed` means the policy let the call through, not that it succeeded (an update that \
    loses a race is recorded `allowed`, then fails with VERSION_CONFLICT and changes nothing)";

fn show_note(cli: &Cli) {
    if !cli.json {
        eprintln!("{AUDIT_SHOW_NOTE}");
    }
}

fn head_output(cli: &Cli, seq: u64, hash: &str) -> Printed {
    Printed::ok(if cli.json {
        to_json(&json!({ "seq": seq, "hash": hash }))
    } else {
        format!("{seq}:{hash}")
    })
}

fn verify_output(cli: &Cli, report: &VerifyReport) -> Printed {
    match report {
        VerifyReport::Ok { records, last_hash } => Printed::ok(if cli.json {
            to_json(&json!({ "ok": true, "records": records, "lastHash": last_hash }))
        } else {
            format!("audit log intact: {}, last hash {last_hash}", counted(*records, "record", "records"))
        }),
        VerifyReport::Broken { first_bad_seq, reason } => Printed::with_status(
            if cli.json {
                to_json(&json!({ "ok": false, "firstBadSeq": first_bad_seq, "reason": reason.code() }))
            } else {
                format!("audit log broken at record {first_bad_seq}: {reason}")
            },
            1,
        ),
    }
}

/// `alp init`: a new root (0700) with `config.yaml` at its defaults, the agents directory, and a definition for
/// each `--role`. Everything is checked before anything is created: a root that exists and is not empty, a role
/// name that is not valid, or a definition that is already there is a `USAGE` error and nothing is written.
pub(crate) fn init(cli: &Cli, roles: &[String]) -> Result<Printed, MemoryError> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};

    let place = setup::resolve_place(cli)?;
    if let Place::Root(root) = &place {
        check_new_root(root)?;
    }
    let agents_dir = AgentsDir::resolve(cli)?;
    let parsed = check_new_roles(agents_dir.path(), roles)?;
    let cannot = |what: &Path, e: std::io::Error| MemoryError::Storage {
        id: None,
        storage_kind: None,
        message: format!("cannot create `{}`: {e}", what.display()),
    };
    let mut created: Vec<String> = Vec::new();
    let (key, shown, export) = match &place {
        Place::Root(root) => {
            if !root.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(root)
                    .map_err(|e| cannot(root, e))?;
            }
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| cannot(root, e))?;
            let root = root.canonicalize().map_err(|e| cannot(root, e))?;
            created.push(root.display().to_string());
            let config = root.join(alp_memory::memory_markdown::CONFIG_FILE);
            write_new(&config, &alp_memory::memory_markdown::StoreConfig::default_yaml(), 0o600)
                .map_err(|e| cannot(&config, e))?;
            created.push(config.display().to_string());
            // The new root opens as every other command will open it.
            setup::open_store(&root)?;
            (
                "root",
                root.display().to_string(),
                format!("export {}={}", setup::ROOT_VAR, shell_word(&root.display().to_string())),
            )
        }
        Place::Database(url) => {
            let done = memory_postgres::init(url).map_err(setup::postgres_open_error)?;
            created.extend(done.created.iter().cloned());
            let export = format!("export {}={}", setup::STORE_VAR, shell_word(&done.url));
            ("store", done.url, export)
        }
    };

    let named = agents_dir.path();
    if !named.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(named).map_err(|e| cannot(named, e))?;
        created.push(named.canonicalize().map_err(|e| cannot(named, e))?.display().to_string());
    }
    let agents = named.canonicalize().map_err(|e| cannot(named, e))?;
    for role in &parsed {
        let file = agents.join(format!("{role}.yaml"));
        write_new(&file, &definition(role), 0o644).map_err(|e| cannot(&file, e))?;
        created.push(file.display().to_string());
    }

    if cli.json {
        let mut document = serde_json::Map::new();
        document.insert(key.into(), shown.into());
        if key == "root" {
            document.insert("agents".into(), agents.display().to_string().into());
        }
        document.insert("created".into(), created.into());
        return Ok(Printed::ok(to_json(&Value::Object(document))));
    }
    let mut text = String::new();
    for path in &created {
        text.push_str(&format!("created {path}\n"));
    }
    text.push_str(&format!(
        "set these (in your shell profile too) so that alp finds this {} and these agents from any directory:\n  \
         {export}\n  export {}={}\n",
        if key == "root" { "root" } else { "database" },
        setup::AGENTS_VAR,
        shell_word(&agents.display().to_string())
    ));
    match parsed.first() {
        Some(role) => text.push_str(&format!(
            "next: alp --as {role} memory create shared:notes:first --content \"Our first shared note.\""
        )),
        None => text.push_str(&format!(
            "next: define a role in {} (see `alp agent show`), then: alp --as ROLE memory list",
            agents.display()
        )),
    }
    Ok(Printed::ok(text))
}

/// A root `init` may create: missing, or an empty directory.
fn check_new_root(root: &Path) -> Result<(), MemoryError> {
    match std::fs::read_dir(root).map(|mut entries| entries.next().is_some()) {
        Ok(true) => Err(MemoryError::Usage(format!(
            "`{}` is not empty; `alp init` only creates a new root (choose an empty or missing directory)",
            root.display()
        ))),
        Ok(false) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(MemoryError::Usage(format!("cannot use `{}` as a memory root: {e}", root.display()))),
    }
}

/// The roles `init` may define: valid names, each once, without a definition yet.
fn check_new_roles(agents: &Path, roles: &[String]) -> Result<Vec<Role>, MemoryError> {
    let usage = MemoryError::Usage;
    let mut parsed = Vec::new();
    for role in roles {
        let role = Role::parse(role).map_err(|e| usage(format!("cannot define role `{role}`: {e}")))?;
        if parsed.contains(&role) {
            return Err(usage(format!("role `{role}` is given twice")));
        }
        let file = agents.join(format!("{role}.yaml"));
        if std::fs::symlink_metadata(&file).is_ok() {
            return Err(usage(format!(
                "`{}` already exists; edit it instead of defining role `{role}` again",
                file.display()
            )));
        }
        parsed.push(role);
    }
    Ok(parsed)
}

/// The definition `alp init --role ROLE` writes: shared memory, every project and the role's own private memory,
/// to read and to write.
fn definition(role: &Role) -> String {
    format!(
        "# The memory grants of role `{role}`: what it may read and write (see `alp agent show {role}`).\n\
         role: {role}\n\
         # reportsTo: main          # who the role reports to (grants no memory access)\n\
         memory:\n\
         \x20 read: [shared, \"project:*\", \"private:{role}\"]\n\
         \x20 write: [shared, \"project:*\", \"private:{role}\"]\n"
    )
}

/// Writes a file that must not exist yet, with `mode`.
fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// A path or URL as one shell word: quoted when it holds anything but plain characters.
fn shell_word(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `alp completions SHELL`.
pub(crate) fn completions(shell: clap_complete::Shell) -> Printed {
    use clap::CommandFactory as _;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "alp", &mut script);
    Printed::ok(String::from_utf8_lossy(&script).into_owned())
}

/// `alp store migrate`: an operator command (no `--as`). On a database, upgrades an older schema in place under the
/// schema's advisory lock; a schema already current, or a Markdown root (which has no schema to upgrade), prints
/// equal numbers. `{"from":N,"to":N}`.
pub(crate) fn store_migrate(cli: &Cli) -> Result<Printed, MemoryError> {
    if cli.role.is_some() {
        return Err(MemoryError::Usage(
            "`alp store migrate` takes no --as: whoever may change the store's schema migrates it".to_owned(),
        ));
    }
    let (from, to) = match setup::resolve_place(cli)? {
        Place::Root(root) => {
            setup::open_store(&root)?;
            (memory_postgres::SCHEMA_VERSION, memory_postgres::SCHEMA_VERSION)
        }
        Place::Database(url) => {
            let done = memory_postgres::migrate(&url).map_err(setup::postgres_open_error)?;
            (done.from, done.to)
        }
    };
    Ok(if cli.json {
        Printed::ok(format!("{{\"from\":{from},\"to\":{to}}}\n"))
    } else if from == to {
        Printed::people(&format!("the store is at schema version {to}: nothing to migrate"))
    } else {
        Printed::people(&format!("migrated the store from schema version {from} to {to}"))
    })
}

/// `alp store copy --to URL|DIR`: every entry of the place (live and expired, versions and timestamps kept) and its
/// audit log, into an empty target — a missing or empty directory, or a database without the schema or without
/// entries and records — then the copied chain is verified. The source log is verified first: a broken log is not
/// copied. The copy itself is [`alp_memory::copy::copy_store`].
pub(crate) fn store_copy(cli: &Cli, to: &str) -> Result<Printed, MemoryError> {
    use alp_memory::copy::{CopySource, CopyTarget, check_target, copy_store};

    let target = if to.starts_with("postgres://") || to.starts_with("postgresql://") {
        CopyTarget::Database(to)
    } else {
        CopyTarget::Root(Path::new(to))
    };
    check_target(target).map_err(copy_error)?;
    let mut bar = Progress::new(!cli.json, "entries copied");
    let report = match setup::resolve_place(cli)? {
        Place::Root(root) => {
            let store = setup::open_store(&root)?;
            let key = setup::audit_key(Some(store.root()))?;
            copy_store(CopySource::Markdown(&store), target, key.as_ref(), &mut |done, total| {
                bar.show(done, total)
            })
        }
        Place::Database(url) => {
            let store = setup::open_database(&url)?;
            let key = setup::audit_key(None)?;
            copy_store(CopySource::Postgres(&store), target, key.as_ref(), &mut |done, total| {
                bar.show(done, total)
            })
        }
    }
    .map_err(copy_error)?;
    bar.finish();
    if cli.json {
        return Ok(Printed::ok(to_json(&json!({ "copied": report.entries }))));
    }
    Ok(Printed::ok(format!(
        "copied {} and {} to {}; the copied audit chain verifies",
        counted(report.entries as u64, "entry", "entries"),
        counted(report.audit_records as u64, "audit record", "audit records"),
        report.target
    )))
}

/// How a failed copy reads: a target in use is `USAGE`; a log that does not verify or cannot be read or written is
/// `AUDIT_UNAVAILABLE`; a store's own failures read as they do for every command.
fn copy_error(error: alp_memory::copy::CopyError) -> MemoryError {
    use alp_memory::copy::CopyError;
    match error {
        CopyError::Store(e) => e.into(),
        CopyError::Tokens(e) => e,
        CopyError::OpenRoot { path, source } => setup::open_error(&path, source),
        CopyError::OpenDatabase(e) => setup::postgres_open_error(e),
        CopyError::Create { .. } => {
            MemoryError::Storage { id: None, storage_kind: None, message: error.to_string() }
        }
        CopyError::DirectoryNotEmpty { .. }
        | CopyError::DatabaseNotEmpty { .. }
        | CopyError::LockTimeout(_) => MemoryError::Usage(error.to_string()),
        other => MemoryError::AuditUnavailable(other.to_string()),
    }
}
