//! `alp memory …`: the doors, their compositions (list, context, prune, import, export), history and redaction.

use std::io::{IsTerminal, Read};
use std::path::Path;

use alp_memory::json;
use alp_memory::memory_entry::Version;
use alp_memory::memory_store::{Cancel, MemoryStore as _};
use alp_memory::{
    ContextRequest, CreateRequest, ListRequest, MemoryError, QueryTerms, SearchRequest, Skipped,
    UpdateRequest, check_filter,
};
use serde_json::{Value, json};

use crate::Printed;
use crate::args::{Cli, ContentArgs, MemoryCommand};
use crate::output::{Colour, Progress, Terminal, counted, entry_markdown, first_line, to_json, version_line};
use crate::setup::{self, CliService};

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
            let page = service.search(role, &request)?;
            let results = &page.entries;
            Ok(Printed::ok(if cli.json {
                setup::json_string(&json::SearchJson(&page))?
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
        MemoryCommand::List { prefix, filter, limit, after } => {
            let request = ListRequest {
                prefix: prefix.clone(),
                filter: filter.filter(),
                limit: *limit,
                after: after.clone(),
                cancel: Cancel::never(),
            };
            let page = service.list(role, &request)?;
            let entries = &page.entries;
            Ok(if cli.json {
                Printed::ok(setup::json_string(&json::ListJson(&page))?)
            } else if entries.is_empty() {
                Printed::ok("no entries found".to_owned())
            } else {
                let mut lines: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        format!("{}  v{}  {}  {}", e.id, e.version, e.fields.kind, first_line(&e.content))
                    })
                    .collect();
                if let (true, Some(last)) = (page.more, entries.last()) {
                    lines.push(format!("(more entries follow: --after {})", last.id));
                }
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
