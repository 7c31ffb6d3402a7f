//! `alp audit …`: the audit log read, verified and archived, in either place: a root's `audit.jsonl` or a database's
//! table (`memory_postgres::PostgresAuditSink`). The work is memory-audit's (`select`, `disclosed`, `archive`,
//! `verify_with`); this module checks the command line, opens the log and prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use alp_memory::MemoryError;
use alp_memory::memory_audit::{
    self, ArchiveError, ArchiveReport, Disclosed, GENESIS_HASH, LogSource, QueryError, RecordFilter,
    VerifyOptions, VerifyReport, Window,
};
use alp_memory::memory_entry::{StorageErrorKind, Timestamp};
use memory_postgres::PostgresAuditSink;
use serde_json::json;

use super::audit_table::{AuditTable, local_time};
use crate::Printed;
use crate::args::{AuditCommand, Cli, ShowArgs, TimeBound};
use crate::output::{ShownLines, Terminal, counted, to_json};
use crate::setup::{self, AUDIT_FILE, Place};

/// What a record of `alp audit show` means, for people (on stderr, so stdout stays the records as stored): the
/// outcome of the authorization, written before a write touches the store, and after a read and before its answer.
pub(crate) const AUDIT_SHOW_NOTE: &str = "note: each record is the authorization outcome of one call: `allowed` means \
    the policy let the call through, not that it succeeded. A write's record is written before the store is touched \
    (an update that loses a race is recorded `allowed`, then fails with VERSION_CONFLICT and changes nothing); an \
    allowed read's after the read and before the answer, naming in `shown` what the answer disclosed";

/// How many records `alp audit show` shows on a terminal when neither `--tail` nor `--limit` is given.
const TERMINAL_TAIL: u64 = 50;

/// `alp audit …`: the place's log (the root must exist, the database must hold the schema), or a saved one with
/// `verify --file`.
pub(crate) fn audit(cli: &Cli, command: &AuditCommand) -> Result<Printed, MemoryError> {
    match command {
        AuditCommand::Verify { expect, from, file } => {
            let options = VerifyOptions::new().expecting(expect.clone()).continuing_from(from.clone());
            verify(cli, &options, file.as_deref())
        }
        AuditCommand::Head => {
            let (seq, hash) = Log::open(cli)?.head()?;
            Ok(Printed::ok(if cli.json {
                to_json(&json!({ "seq": seq, "hash": hash }))
            } else {
                format!("{seq}:{hash}")
            }))
        }
        AuditCommand::Show(args) => show(cli, args),
        AuditCommand::Disclosed { id, archive } => disclosed(cli, id, archive.as_deref()),
        AuditCommand::Archive { to, before } => archive(cli, to, *before),
    }
}

/// The log of the place the command line names.
pub(crate) enum Log {
    /// A root's `audit.jsonl`.
    File {
        /// The root, as the store opened it.
        root: PathBuf,
        /// The log.
        path: PathBuf,
    },
    /// A database's table.
    Database(PostgresAuditSink),
}

impl Log {
    /// Opens the place: the root must exist (nothing is created), the database must hold the current schema.
    pub(crate) fn open(cli: &Cli) -> Result<Log, MemoryError> {
        match setup::resolve_place(cli)? {
            Place::Root(root) => {
                let root = setup::open_store(&root)?.root().to_owned();
                Ok(Log::File { path: root.join(AUDIT_FILE), root })
            }
            Place::Database(url) => {
                Ok(Log::Database(setup::open_database(&url)?.audit_sink(setup::audit_key(None)?)))
            }
        }
    }

    /// The last record's `seq` and `hash` (0 and 64 zeros for an empty log).
    pub(crate) fn head(&self) -> Result<(u64, String), MemoryError> {
        match self {
            Log::File { path, .. } => memory_audit::head(path).map_err(|e| unavailable(&e)),
            Log::Database(sink) => sink.head().map_err(|e| unavailable(&e)),
        }
    }

    /// The sources `show` and `disclosed` read: the segments of `archive` (when given), then the live log. The live
    /// log is opened first, so that an archive running meanwhile leaves its records in a source read here.
    pub(crate) fn sources(&self, archive: Option<&Path>) -> Result<Vec<LogSource<'_>>, MemoryError> {
        match self {
            Log::File { path, .. } => memory_audit::log_sources(path, archive).map_err(query_error),
            Log::Database(sink) => {
                let live = sink.source().map_err(|e| unavailable(&e))?;
                let mut sources: Vec<LogSource<'_>> =
                    memory_audit::archive_sources(archive).map_err(query_error)?;
                sources.push(live);
                Ok(sources)
            }
        }
    }

    /// The last `n` records of the live log that `filter` keeps, oldest first, each as stored, to `out`: a file log
    /// is read back from its end ([`memory_audit::select_last`]: what the newest page of a long log costs is the
    /// page's), a database's table through its source. Returns how many.
    pub(crate) fn last(
        &self,
        filter: &RecordFilter,
        n: u64,
        out: &mut dyn Write,
    ) -> Result<u64, MemoryError> {
        match self {
            Log::File { path, .. } => memory_audit::select_last(path, filter, n, out).map_err(query_error),
            Log::Database(_) => {
                memory_audit::select(self.sources(None)?, filter, Window::Last(n), out).map_err(query_error)
            }
        }
    }

    /// How the records of `window` are read, its sources opened now: the last records of the live log alone are
    /// read back from its end ([`Log::last`]), so the newest page of a log kept for months costs what the page
    /// holds; anything else reads the segments of `archive` (when given), then the live log, forward.
    pub(crate) fn reading(&self, archive: Option<&Path>, window: Window) -> Result<Reading<'_>, MemoryError> {
        Ok(match (window, archive) {
            (Window::Last(n), None) => Reading::Back { log: self, n },
            (_, archive) => Reading::Forward { sources: self.sources(archive)?, window },
        })
    }

    /// Verifies the live log: its start must be announced by the archive that cut it (a saved segment need not be).
    pub(crate) fn verify(&self, options: &VerifyOptions) -> Result<VerifyReport, MemoryError> {
        let options = options.clone().announced_start();
        match self {
            Log::File { root, path } => {
                let key = setup::audit_key(Some(root))?;
                memory_audit::verify_with(path, key.as_ref(), &options).map_err(|e| unavailable(&e))
            }
            Log::Database(sink) => sink.verify_with(&options).map_err(|e| unavailable(&e)),
        }
    }

    /// The live log's first record: its `seq` and where the log continues from; `None` for an empty log.
    fn first(&self) -> Result<Option<First>, MemoryError> {
        let mut line = Vec::new();
        memory_audit::select(self.sources(None)?, &RecordFilter::default(), Window::First(1), &mut line)
            .map_err(query_error)?;
        if line.is_empty() {
            return Ok(None);
        }
        let record: serde_json::Value = serde_json::from_slice(&line).map_err(|e| {
            MemoryError::AuditUnavailable(format!("the first audit record does not parse: {e}"))
        })?;
        let seq = record["seq"].as_u64().unwrap_or(1);
        let hash = if seq == 1 { GENESIS_HASH } else { record["prevHash"].as_str().unwrap_or(GENESIS_HASH) };
        Ok(Some(First { seq, from: (seq.saturating_sub(1), hash.to_owned()) }))
    }
}

/// How records are read ([`Log::reading`]).
pub(crate) enum Reading<'a> {
    /// The last `n` records of the live log, read back from its end: lines older than the answer are not read (a
    /// malformed one among them is `verify`'s to find, with the rest of the chain).
    Back { log: &'a Log, n: u64 },
    /// The records of `window` in these sources (archive segments, then the live log), read forward.
    Forward { sources: Vec<LogSource<'a>>, window: Window },
}

impl Reading<'_> {
    /// Writes the records `filter` keeps, each as stored, to `out`; returns how many.
    pub(crate) fn write(self, filter: &RecordFilter, out: &mut dyn Write) -> Result<u64, MemoryError> {
        match self {
            Reading::Back { log, n } => log.last(filter, n, out),
            Reading::Forward { sources, window } => {
                memory_audit::select(sources, filter, window, out).map_err(query_error)
            }
        }
    }
}

/// The first record of a live log.
struct First {
    seq: u64,
    /// The `seq` and `hash` of the record the log continues from (0 and 64 zeros before `seq` 1).
    from: (u64, String),
}

/// `alp audit verify`: the place's log, or a saved log or archive with `--file`.
fn verify(cli: &Cli, options: &VerifyOptions, file: Option<&Path>) -> Result<Printed, MemoryError> {
    let report = match file {
        Some(file) => {
            // A saved log: no root needed; the key, when set, is the one it was written with. A name with nothing
            // behind it is an error, never an empty log that verifies.
            let storage = |message: String| MemoryError::Storage {
                id: None,
                storage_kind: Some(StorageErrorKind::Io),
                message,
            };
            if let Err(e) = std::fs::symlink_metadata(file) {
                return Err(storage(format!("cannot verify `{}`: {e}", file.display())));
            }
            memory_audit::verify_with(file, setup::audit_key(None)?.as_ref(), options)
                .map_err(|e| storage(e.to_string()))?
        }
        // The live log: its start must be announced by the archive that cut it (a saved segment need not be).
        None => Log::open(cli)?.verify(options)?,
    };
    Ok(verify_output(cli, &report))
}

fn verify_output(cli: &Cli, report: &VerifyReport) -> Printed {
    match report {
        VerifyReport::Ok { records, last_hash, from: (from_seq, from_hash) } => Printed::ok(if cli.json {
            to_json(&json!({
                "ok": true,
                "records": records,
                "lastHash": last_hash,
                "from": { "seq": from_seq, "hash": from_hash },
            }))
        } else if *from_seq == 0 {
            format!("audit log intact: {}, last hash {last_hash}", counted(*records, "record", "records"))
        } else {
            format!(
                "audit log intact: {} continuing from record {from_seq} ({from_hash}), last hash {last_hash}",
                counted(*records, "record", "records")
            )
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

/// `alp audit show`: the matching records as stored (piped, redirected, `--json`), or as a table on a terminal.
fn show(cli: &Cli, args: &ShowArgs) -> Result<Printed, MemoryError> {
    let filter = record_filter(args)?;
    check_archive(args.archive.as_deref())?;
    let table = !cli.json && Terminal::stdout().is_terminal();
    let default_tail = (table && args.tail.is_none() && args.limit.is_none()).then_some(TERMINAL_TAIL);
    let window = match (args.tail.or(default_tail), args.limit) {
        (Some(n), _) => Window::Last(n),
        (None, Some(n)) => Window::First(n),
        (None, None) => Window::All,
    };
    let log = Log::open(cli)?;
    let reading = log.reading(args.archive.as_deref(), window)?;
    if !cli.json {
        eprintln!("{AUDIT_SHOW_NOTE}");
    }
    let stdout_failed = |e: std::io::Error| MemoryError::Usage(format!("cannot write to stdout: {e}"));
    if table {
        let mut out = AuditTable::new(std::io::stdout().lock(), args.wide, local_time);
        let count = reading.write(&filter, &mut out)?;
        out.finish(count, default_tail).map_err(stdout_failed)?;
    } else {
        let mut out = ShownLines::new(std::io::stdout().lock(), Terminal::stdout());
        reading.write(&filter, &mut out)?;
        out.flush().map_err(stdout_failed)?;
    }
    Ok(Printed::ok(String::new()))
}

/// The filters of `alp audit show`, with `--from` and `--to` read against one clock reading; `--from` after `--to`
/// is `USAGE`, since no record could match.
pub(crate) fn record_filter(args: &ShowArgs) -> Result<RecordFilter, MemoryError> {
    let now = Timestamp::now();
    let from = args.from.map(|bound| instant(bound, now));
    let to = args.to.map(|bound| instant(bound, now));
    if let (Some(from), Some(to)) = (from, to)
        && from > to
    {
        return Err(MemoryError::Usage(format!(
            "--from ({from}) is after --to ({to}): no record can match; give the earlier time to --from"
        )));
    }
    Ok(RecordFilter {
        since: args.since,
        before: None,
        from: from.map(Timestamp::as_offset_date_time),
        to: to.map(Timestamp::as_offset_date_time),
        actor: args.actor.clone(),
        door: args.door,
        outcome: args.outcome,
        code: args.code.clone(),
        via: args.via.clone(),
        id: args.id.clone(),
        disclosed: args.disclosed.clone(),
    })
}

/// A bound as an instant: a duration back from `now`, or the earliest instant a timestamp holds when that is
/// further back.
fn instant(bound: TimeBound, now: Timestamp) -> Timestamp {
    match bound {
        TimeBound::At(at) => at,
        TimeBound::Ago(ttl) => {
            let back = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX).saturating_mul(1000);
            Timestamp::from_unix_millis(now.unix_millis().saturating_sub(back))
                .filter(|at| at.as_offset_date_time().year() >= 1)
                .unwrap_or_else(|| Timestamp::from_unix_nanos_clamped(i128::MIN))
        }
    }
}

/// `--archive DIR` of `show` and `disclosed` must name a directory.
fn check_archive(archive: Option<&Path>) -> Result<(), MemoryError> {
    let Some(dir) = archive else { return Ok(()) };
    let refuse = |why: String| {
        MemoryError::Usage(format!(
            "--archive `{}` {why}; it names the directory `alp audit archive --to` wrote",
            dir.display()
        ))
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(refuse("is not a directory".to_owned())),
        Err(e) => Err(refuse(format!("cannot be used: {e}"))),
    }
}

/// `alp audit disclosed ID`: which roles received the entry.
fn disclosed(cli: &Cli, id: &str, archive: Option<&Path>) -> Result<Printed, MemoryError> {
    check_archive(archive)?;
    let log = Log::open(cli)?;
    let answer = memory_audit::disclosed(id, log.sources(archive)?).map_err(query_error)?;
    if cli.json {
        return setup::json_string(&answer).map(Printed::ok);
    }
    Ok(Printed::people(&disclosed_text(&answer, archive)))
}

/// `alp audit disclosed` for people: one line per role.
fn disclosed_text(answer: &Disclosed, archive: Option<&Path>) -> String {
    let read = match archive {
        Some(dir) => format!("the archive in `{}` and the live log", dir.display()),
        None => "the live log".to_owned(),
    };
    if answer.roles.is_empty() {
        return format!("`{}` was disclosed to no role in {read}\n", answer.id);
    }
    let mut text = format!(
        "`{}` was disclosed to {} in {read} (local times):\n",
        answer.id,
        counted(answer.roles.len() as u64, "role", "roles")
    );
    for role in &answer.roles {
        let name = if role.role.is_empty() { "(operator)" } else { role.role.as_str() };
        let when = if role.records == 1 {
            local_time(&role.first)
        } else {
            format!("{} to {}", local_time(&role.first), local_time(&role.last))
        };
        let versions: Vec<String> = role.versions.iter().map(u64::to_string).collect();
        let noun = if versions.len() == 1 { "version" } else { "versions" };
        let via = if role.via.is_empty() { String::new() } else { format!(", via {}", role.via.join(", ")) };
        text.push_str(&format!(
            "  {name}: {}, {when}, {noun} {}{via}\n",
            counted(role.records, "record", "records"),
            versions.join(", ")
        ));
    }
    text
}

/// `alp audit archive --to DIR [--before SEQ]` (operator). Everything the command line can get wrong is refused
/// before anything is written: `--as`, a `--before` past the log's end or at or before its first record, a DIR
/// inside the memory root, whose parent is missing, that is not a directory or cannot be written.
fn archive(cli: &Cli, to: &Path, before: Option<u64>) -> Result<Printed, MemoryError> {
    if cli.role.is_some() {
        return Err(MemoryError::Usage(
            "`alp audit archive` takes no --as: it is an operator command, recorded with actor \"\""
                .to_owned(),
        ));
    }
    let log = Log::open(cli)?;
    let dir = archive_dir(
        to,
        match &log {
            Log::File { root, .. } => Some(root.as_path()),
            Log::Database(_) => None,
        },
    )?;
    let (last, _) = log.head()?;
    let first = log.first()?;
    if let Some(before) = before {
        if before > last + 1 {
            return Err(MemoryError::Usage(format!(
                "--before {before} lies past the end of the log: its last record is seq {last}, so --before is at \
                 most {}; nothing was archived",
                last + 1
            )));
        }
        if let Some(first) = first.as_ref().filter(|first| before <= first.seq) {
            return Err(MemoryError::Usage(format!(
                "nothing to archive: the live log starts at seq {}, so no record of it lies before seq {before}",
                first.seq
            )));
        }
    }
    let report = match (&first, before) {
        // All but the last of at most one record: nothing to move, and nothing is written.
        (None, None) => ArchiveReport { archived: 0, file: None, from: (0, GENESIS_HASH.to_owned()) },
        (Some(first), None) if last <= first.seq => {
            ArchiveReport { archived: 0, file: None, from: first.from.clone() }
        }
        _ => {
            let now = Timestamp::now();
            match &log {
                Log::File { root, path } => {
                    let key = setup::audit_key(Some(root))?;
                    memory_audit::archive(path, &dir, before, key.as_ref(), now.as_offset_date_time())
                }
                Log::Database(sink) => sink.archive(&dir, before, now),
            }
            .map_err(archive_error)?
        }
    };
    let (from_seq, from_hash) = &report.from;
    let file = report.file.as_ref().map(|file| file.display().to_string());
    Ok(if cli.json {
        Printed::ok(to_json(&json!({
            "archived": report.archived,
            "file": file,
            "from": { "seq": from_seq, "hash": from_hash },
        })))
    } else {
        match file {
            Some(file) => Printed::people(&format!(
                "archived {} to `{file}`; the live log continues from record {from_seq}: check it with `alp audit \
                 verify --from {from_seq}:{from_hash}`, and the archive with `alp audit verify --file {file}`",
                counted(report.archived, "record", "records")
            )),
            None => Printed::people(
                "nothing to archive: the live log holds at most one record, and the last one stays; nothing was \
                 written",
            ),
        }
    })
}

/// The archive directory, absolute: outside the memory root (`root`, when the log is a root's), a directory or a
/// name to create in an existing directory, and writable.
fn archive_dir(to: &Path, root: Option<&Path>) -> Result<PathBuf, MemoryError> {
    let refuse = |why: String| {
        MemoryError::Usage(format!("cannot archive to `{}`: {why}; nothing was archived", to.display()))
    };
    let absolute = std::path::absolute(to).map_err(|e| refuse(e.to_string()))?;
    // The directory as it will be reached: canonical when it exists, else its canonical parent and its name.
    let (resolved, existing) = match absolute.canonicalize() {
        Ok(dir) => {
            if !dir.is_dir() {
                return Err(refuse("it is not a directory".to_owned()));
            }
            (dir.clone(), dir)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
                return Err(refuse(e.to_string()));
            };
            let parent = parent.canonicalize().map_err(|e| {
                refuse(format!("its parent `{}` cannot be used ({e}); create it first", parent.display()))
            })?;
            if !parent.is_dir() {
                return Err(refuse(format!("its parent `{}` is not a directory", parent.display())));
            }
            (parent.join(name), parent)
        }
        Err(e) => return Err(refuse(e.to_string())),
    };
    if let Some(root) = root.and_then(|root| root.canonicalize().ok())
        && resolved.starts_with(&root)
    {
        return Err(refuse(format!(
            "it lies inside the memory root `{}`; archives must live outside it",
            root.display()
        )));
    }
    use rustix::fs::{Access, access};
    access(&existing, Access::WRITE_OK | Access::EXEC_OK).map_err(|e| {
        let e = std::io::Error::from(e);
        refuse(format!("`{}` is not writable ({e})", existing.display()))
    })?;
    Ok(resolved)
}

/// The log could not be read or recorded to.
fn unavailable(error: &dyn std::fmt::Display) -> MemoryError {
    MemoryError::AuditUnavailable(error.to_string())
}

/// How a failure to read a log for people reads: the live log or a line of it is `AUDIT_UNAVAILABLE`, an archive
/// that cannot be read a storage error, stdout that cannot be written what every command says of it.
fn query_error(error: QueryError) -> MemoryError {
    match error {
        QueryError::Archive(e) => archive_error(e),
        QueryError::Write(e) => MemoryError::Usage(format!("cannot write to stdout: {e}")),
        other => unavailable(&other),
    }
}

/// How an archive that did not happen reads. Whatever the error, the live log still verifies and holds every record
/// no segment holds.
fn archive_error(error: ArchiveError) -> MemoryError {
    let storage = |message: String| MemoryError::Storage {
        id: None,
        storage_kind: Some(StorageErrorKind::Io),
        message,
    };
    match error {
        ArchiveError::Audit(e) => unavailable(&e),
        ArchiveError::Broken { .. } => unavailable(&error),
        ArchiveError::PastTheEnd { .. } => MemoryError::Usage(error.to_string()),
        other => storage(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use alp_memory::memory_entry::{Timestamp, Ttl};

    use super::instant;
    use crate::args::TimeBound;

    #[test]
    fn a_duration_back_from_now_and_one_past_the_first_instant() {
        let now = Timestamp::parse("2026-11-29T22:33:13.123Z").unwrap();
        let ago = |text: &str| instant(TimeBound::Ago(Ttl::parse(text).unwrap()), now).to_string();
        assert_eq!(ago("2h"), "2026-11-29T20:33:13.123Z");
        assert_eq!(ago("90d"), "2026-08-31T22:33:13.123Z");
        assert_eq!(ago("9007199254740991s"), "0001-01-01T00:00:00.000Z");
        assert_eq!(instant(TimeBound::At(now), now), now);
    }
}
