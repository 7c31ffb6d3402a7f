//! Opening the root: store, audit sink and agent definitions, as the command line names them.

use std::path::{Path, PathBuf};

use alp_memory::memory_audit::{AuditError, AuditEvent, AuditKey, AuditRecord, AuditSink, JsonlAuditSink};
use alp_memory::memory_id::{MemoryId, MemoryPrefix};
use alp_memory::memory_policy::GrantPolicy;
use alp_memory::memory_store::{
    EntryPatch, Limits, ListQuery, MarkdownStore, MemoryEntry, MemoryStore, NewEntry, StoreError, Timestamp,
};
use alp_memory::{AgentDirectory, ContextRequest, MemoryError, MemoryService};

use alp_memory::adapter::{AdapterError, agents_warnings, claude_settings, codex_setup, fenced_roles};
use alp_memory::memory_policy::load_agent;

use crate::args::{AdapterCommand, Cli};

/// The audit log, directly under the root.
pub(crate) const AUDIT_FILE: &str = "audit.jsonl";

/// The environment variable naming the memory root.
pub(crate) const ROOT_VAR: &str = "ALP_MEMORY_ROOT";

/// The environment variable naming an HMAC key file for the audit chain (outside the root).
pub(crate) const AUDIT_KEY_VAR: &str = "ALP_AUDIT_KEY";

/// `--root`, else `$ALP_MEMORY_ROOT`, else `~/.alp/memory`.
pub(crate) fn resolve_root(cli: &Cli) -> Result<PathBuf, MemoryError> {
    if let Some(root) = &cli.root {
        return Ok(root.clone());
    }
    if let Some(root) = std::env::var_os(ROOT_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(root));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".alp").join("memory")),
        None => Err(MemoryError::Usage(format!(
            "no memory root: pass --root DIR or set {ROOT_VAR} (HOME is not set either)"
        ))),
    }
}

/// The HMAC key named by `$ALP_AUDIT_KEY`, refused when it lies inside the root (whoever can write the log could
/// then read the key).
pub(crate) fn audit_key(root: &Path) -> Result<Option<AuditKey>, MemoryError> {
    audit_key_reason(root).map_err(MemoryError::AuditUnavailable)
}

/// [`audit_key`], with the reason it failed as bare text.
fn audit_key_reason(root: &Path) -> Result<Option<AuditKey>, String> {
    let Some(path) = std::env::var_os(AUDIT_KEY_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    let unavailable = |why: String| format!("{AUDIT_KEY_VAR}: {why}");
    let key_path = path
        .canonicalize()
        .map_err(|e| unavailable(format!("cannot open key file `{}`: {e}", path.display())))?;
    if let Ok(root) = root.canonicalize()
        && key_path.starts_with(&root)
    {
        return Err(unavailable(format!(
            "the key file `{}` lies inside the memory root; keep it outside so the log's writers cannot read it",
            key_path.display()
        )));
    }
    AuditKey::from_file(&key_path).map(Some).map_err(|e| unavailable(e.to_string()))
}

/// The store of the root, or the reason it could not be opened (reported only when a call reaches the store, so
/// that an invalid ID or a denial is still reported first, as the precedence of §9 says).
pub(crate) enum CliStore {
    Open(MarkdownStore),
    Broken(StoreError, Limits),
}

impl MemoryStore for CliStore {
    fn limits(&self) -> &Limits {
        match self {
            CliStore::Open(store) => store.limits(),
            CliStore::Broken(_, limits) => limits,
        }
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        match self {
            CliStore::Open(store) => store.get(id, now),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }

    fn list(
        &self,
        roots: &[MemoryPrefix],
        query: &ListQuery,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        match self {
            CliStore::Open(store) => store.list(roots, query, now),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }

    fn list_where(
        &self,
        roots: &[MemoryPrefix],
        query: &ListQuery,
        now: Timestamp,
        keep: &(dyn Fn(&MemoryEntry) -> bool + Sync),
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        match self {
            CliStore::Open(store) => store.list_where(roots, query, now, keep),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }

    fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        match self {
            CliStore::Open(store) => store.create(entry, now),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }

    fn update(
        &self,
        id: &MemoryId,
        expected: u64,
        patch: &EntryPatch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        match self {
            CliStore::Open(store) => store.update(id, expected, patch, now),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }

    fn delete(&self, id: &MemoryId, expected: u64, now: Timestamp) -> Result<(), StoreError> {
        match self {
            CliStore::Open(store) => store.delete(id, expected, now),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }

    fn delete_expired(&self, id: &MemoryId, expected: u64, now: Timestamp) -> Result<(), StoreError> {
        match self {
            CliStore::Open(store) => store.delete_expired(id, expected, now),
            CliStore::Broken(e, _) => Err(e.clone()),
        }
    }
}

/// The audit log of the root, or the reason it cannot record: then every call fails closed.
pub(crate) enum CliSink {
    Open(JsonlAuditSink),
    Broken(PathBuf, String),
}

impl CliSink {
    fn broken(path: &Path, why: &str) -> AuditError {
        AuditError::Io { path: path.to_owned(), op: "open", source: std::io::Error::other(why.to_owned()) }
    }
}

impl AuditSink for CliSink {
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        match self {
            CliSink::Open(sink) => sink.record(event),
            CliSink::Broken(path, why) => Err(CliSink::broken(path, why)),
        }
    }

    fn check_ready(&self) -> Result<(), AuditError> {
        match self {
            CliSink::Open(sink) => sink.check_ready(),
            CliSink::Broken(path, why) => Err(CliSink::broken(path, why)),
        }
    }
}

/// Everything a memory command needs.
pub(crate) struct Setup {
    store: CliStore,
    sink: CliSink,
    agents: AgentDirectory,
}

/// The service the CLI runs.
pub(crate) type CliService = MemoryService<CliStore, CliSink, GrantPolicy, AgentDirectory>;

impl Setup {
    pub(crate) fn new(cli: &Cli) -> Result<Setup, MemoryError> {
        let root = resolve_root(cli)?;
        let store = match MarkdownStore::open(&root) {
            Ok(store) => CliStore::Open(store),
            Err(e) => CliStore::Broken(e.into(), Limits::default()),
        };
        // The reasons kept here are bare: the service says "audit log unavailable" once, when it reports them.
        let sink = match &store {
            CliStore::Broken(e, _) => {
                CliSink::Broken(root.join(AUDIT_FILE), format!("the memory root cannot be opened: {e}"))
            }
            CliStore::Open(store) => {
                let log = store.root().join(AUDIT_FILE);
                let opened = audit_key_reason(store.root()).and_then(|key| {
                    let sink = match key {
                        Some(key) => JsonlAuditSink::with_key(&log, key),
                        None => JsonlAuditSink::open(&log),
                    };
                    sink.map(|sink| sink.with_lock_timeout(store.config().lock_timeout))
                        .map_err(|e| e.to_string())
                });
                match opened {
                    Ok(sink) => CliSink::Open(sink),
                    Err(why) => CliSink::Broken(log, why),
                }
            }
        };
        Ok(Setup { store, sink, agents: AgentDirectory::new(&cli.agents) })
    }

    pub(crate) fn service(self) -> CliService {
        MemoryService::new(self.store, self.sink, GrantPolicy, self.agents)
    }
}

pub(crate) fn context(
    cli: &Cli,
    role: &str,
    query: &str,
    budget: usize,
    prefix: Option<&str>,
    task: Option<&str>,
    feature: Option<&str>,
) -> Result<crate::Printed, MemoryError> {
    let request = ContextRequest {
        query: query.to_owned(),
        budget,
        prefix: prefix.map(str::to_owned),
        task: task.map(str::to_owned),
        feature: feature.map(str::to_owned),
    };
    let context = Setup::new(cli)?.service().context(role, &request)?;
    let diagnostics = context.diagnostics();
    if cli.json {
        let document = serde_json::json!({
            "text": context.text(),
            "entryIds": context.entry_ids(),
            "diagnostics": {
                "characterBudget": diagnostics.character_budget(),
                "charactersUsed": diagnostics.characters_used(),
                "truncated": diagnostics.truncated(),
                "omittedEntryIds": diagnostics.omitted_entry_ids(),
            },
        });
        return Ok(crate::Printed::ok(crate::output::to_json(&document)?));
    }
    let mut text = context.text().to_owned();
    text.push_str(&format!(
        "---\n{} of {} characters used, {} entries included",
        diagnostics.characters_used(),
        diagnostics.character_budget(),
        context.entry_ids().len()
    ));
    if diagnostics.truncated() {
        text.push_str(&format!("; left out for the budget: {}", diagnostics.omitted_entry_ids().join(", ")));
    }
    Ok(crate::Printed::ok(text))
}

pub(crate) fn import(
    cli: &Cli,
    role: &str,
    file: &Path,
    project: &str,
) -> Result<crate::Printed, MemoryError> {
    let text = read_alp_file(file)?;
    let service = Setup::new(cli)?.service();
    let mut bar = Progress::new(!cli.json, "imported");
    let report =
        service.import_alp_with_progress(role, project, &text, &mut |done, total| bar.show(done, total))?;
    bar.finish();
    let skipped: Vec<serde_json::Value> =
        report.skipped.iter().map(|s| serde_json::json!({ "id": s.id, "reason": s.reason })).collect();
    if cli.json {
        let document = serde_json::json!({ "imported": report.imported.len(), "skipped": skipped });
        return Ok(crate::Printed::ok(crate::output::to_json(&document)?));
    }
    let mut text = format!("imported {} entries into `project:{project}`\n", report.imported.len());
    for id in &report.imported {
        text.push_str(&format!("  {id}\n"));
    }
    for s in &report.skipped {
        text.push_str(&format!("skipped {}: {}\n", s.id, s.reason));
    }
    Ok(crate::Printed::ok(text))
}

/// The largest `.alp` file an import reads: 16 MiB.
const MAX_ALP_BYTES: u64 = 16 * 1024 * 1024;

/// Reads an `.alp` file to import, never more than [`MAX_ALP_BYTES`] (and one more byte to know it is more).
fn read_alp_file(file: &Path) -> Result<String, MemoryError> {
    use std::io::Read as _;
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

pub(crate) fn export(
    cli: &Cli,
    role: &str,
    project: &str,
    output: Option<&Path>,
) -> Result<crate::Printed, MemoryError> {
    let report = Setup::new(cli)?.service().export_alp(role, project)?;
    if let Some(path) = output {
        std::fs::write(path, &report.text)
            .map_err(|e| MemoryError::Usage(format!("cannot write `{}`: {e}", path.display())))?;
    }
    let skipped: Vec<serde_json::Value> =
        report.skipped.iter().map(|s| serde_json::json!({ "id": s.id, "reason": s.reason })).collect();
    if cli.json {
        let mut document = serde_json::json!({ "exported": report.exported, "skipped": skipped });
        if output.is_none() {
            document["text"] = report.text.clone().into();
        }
        return Ok(crate::Printed::ok(crate::output::to_json(&document)?));
    }
    let mut text = match output {
        Some(path) => format!("exported {} entries to `{}`\n", report.exported, path.display()),
        None => report.text.clone(),
    };
    for s in &report.skipped {
        text.push_str(&format!("// skipped {}: {}\n", s.id, s.reason));
    }
    Ok(crate::Printed::ok(text))
}

/// A progress bar on stderr, drawn only for people (never with `--json`), only on a terminal, and only for long
/// work (at least [`Progress::MIN_TOTAL`] steps).
pub(crate) struct Progress {
    enabled: bool,
    label: &'static str,
    drawn: bool,
}

impl Progress {
    const MIN_TOTAL: usize = 50;

    pub(crate) fn new(for_people: bool, label: &'static str) -> Progress {
        use std::io::IsTerminal;
        Progress { enabled: for_people && std::io::stderr().is_terminal(), label, drawn: false }
    }

    pub(crate) fn show(&mut self, done: usize, total: usize) {
        if !self.enabled || total < Self::MIN_TOTAL {
            return;
        }
        const WIDTH: usize = 30;
        let filled = done * WIDTH / total.max(1);
        eprint!("\r[{}{}] {done}/{total} {}", "#".repeat(filled), " ".repeat(WIDTH - filled), self.label);
        self.drawn = true;
    }

    pub(crate) fn finish(&self) {
        if self.drawn {
            eprintln!();
        }
    }
}

pub(crate) fn adapter(cli: &Cli, command: &AdapterCommand) -> Result<crate::Printed, MemoryError> {
    let (role, claude) = match command {
        AdapterCommand::Claude { role } => (role, true),
        AdapterCommand::Codex { role } => (role, false),
    };
    let actor = load_agent(&cli.agents, role)?;
    let root = resolve_root(cli)?;
    let store = MarkdownStore::open(&root).map_err(|e| MemoryError::from(StoreError::from(e)))?;
    let canonical = store.root().to_path_buf();
    let agents = cli.agents.canonicalize().map_err(|e| {
        MemoryError::Usage(format!("cannot resolve the agents directory `{}`: {e}", cli.agents.display()))
    })?;
    let workspace = std::env::current_dir()
        .and_then(|dir| dir.canonicalize())
        .map_err(|e| MemoryError::Usage(format!("cannot resolve the current directory: {e}")))?;
    let note = alp_memory::adapter::INTERACTIVE_NOTE;
    if claude {
        let roles = fenced_roles(&canonical, &agents).map_err(adapter_error)?;
        let settings = claude_settings(&canonical, &agents, actor.role(), &roles).map_err(adapter_error)?;
        let warnings = agents_warnings(&agents, &workspace);
        if cli.json {
            for warning in &warnings {
                eprintln!("warning: {warning}");
            }
            eprintln!("note: {note}");
            return Ok(crate::Printed::ok(crate::output::to_json(&settings)?));
        }
        let pretty =
            serde_json::to_string_pretty(&settings).map_err(|e| MemoryError::Usage(e.to_string()))?;
        let mut text = format!("{pretty}\n\n");
        for warning in &warnings {
            text.push_str(&format!("warning: {warning}\n"));
        }
        text.push_str(&format!("note: merge this into the agent's Claude Code settings; {note}"));
        return Ok(crate::Printed::ok(text));
    }
    let setup = codex_setup(&canonical, &agents, actor.role(), &workspace).map_err(adapter_error)?;
    if cli.json {
        eprintln!("note: {note}");
        return Ok(crate::Printed::ok(crate::output::to_json(&setup)?));
    }
    let mut text = format!("sandbox mode: {}\n\nprompt:\n{}\n", setup.sandbox_mode(), setup.prompt());
    for warning in setup.warnings() {
        text.push_str(&format!("warning: {warning}\n"));
    }
    Ok(crate::Printed::ok(text))
}

/// A path a rule cannot state is the caller's to fix (`USAGE`); a name under the root or the agents directory that
/// cannot be fenced is a storage problem, named (DESIGN §5).
fn adapter_error(error: AdapterError) -> MemoryError {
    match error {
        AdapterError::Path { .. } => MemoryError::Usage(error.to_string()),
        _ => MemoryError::Storage { id: None, storage_kind: None, message: error.to_string() },
    }
}
