//! Opening the root: store, audit sink and agent definitions, as the command line names them; and the runtime fences.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alp_memory::memory_audit::{AuditKey, AuditSink, JsonlAuditSink};
use alp_memory::memory_entry::StorageErrorKind;
use alp_memory::memory_markdown::{MarkdownStore, RootOpenError, StoreOptions};
use alp_memory::memory_policy::{
    Actor, AgentDefinitionError, AgentDefinitionProblem, DefinitionCache, GrantPolicy, list_roles, load_agent,
};
use alp_memory::memory_store::MemoryStore;
use alp_memory::{ActorSource, MemoryError, MemoryService};
use memory_postgres::{DatabaseOpenError as PgOpenError, PostgresStore};

use crate::args::{Cli, Command};

/// The audit log, directly under the root.
pub(crate) use alp_memory::copy::AUDIT_FILE;

/// The environment variable naming the memory root.
pub(crate) const ROOT_VAR: &str = "ALP_MEMORY_ROOT";

/// The environment variable naming a PostgreSQL store.
pub(crate) const STORE_VAR: &str = "ALP_MEMORY_STORE";

/// The environment variable naming the agents directory.
pub(crate) const AGENTS_VAR: &str = "ALP_AGENTS_DIR";

/// The agents directory when neither `--agents` nor `ALP_AGENTS_DIR` names one, relative to the current directory.
const DEFAULT_AGENTS: &str = ".alp/agents";

/// The agents directory of a command, absolute, and which setting chose it: `--agents`, else `ALP_AGENTS_DIR`, else
/// `.alp/agents` in the current directory. Every message about a missing or unknown role names it and its origin,
/// so a definition looked for in the wrong place is found at once.
#[derive(Debug, Clone)]
pub(crate) struct AgentsDir {
    path: PathBuf,
    origin: AgentsOrigin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentsOrigin {
    Flag,
    Variable,
    Default,
}

impl AgentsDir {
    /// The directory the command line and the environment name, made absolute (canonical when it exists).
    pub(crate) fn resolve(cli: &Cli) -> Result<AgentsDir, MemoryError> {
        let variable = std::env::var_os(AGENTS_VAR).filter(|v| !v.is_empty());
        let (named, origin) = match (&cli.agents, variable) {
            (Some(dir), _) => (dir.clone(), AgentsOrigin::Flag),
            (None, Some(dir)) => (PathBuf::from(dir), AgentsOrigin::Variable),
            (None, None) => (PathBuf::from(DEFAULT_AGENTS), AgentsOrigin::Default),
        };
        let absolute = std::path::absolute(&named).map_err(|e| {
            MemoryError::Usage(format!("cannot resolve the agents directory `{}`: {e}", named.display()))
        })?;
        let path = absolute.canonicalize().unwrap_or(absolute);
        Ok(AgentsDir { path, origin })
    }

    /// The absolute path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Which setting chose the directory, in the words every message uses.
    fn chosen(&self) -> &'static str {
        match self.origin {
            AgentsOrigin::Flag => "(from --agents)",
            AgentsOrigin::Variable => "(from ALP_AGENTS_DIR)",
            AgentsOrigin::Default => "(the default .alp/agents)",
        }
    }

    /// `the agents directory is `/abs` (from --agents)`, and how to choose another when the default chose it.
    pub(crate) fn described(&self) -> String {
        let mut text = format!("the agents directory is `{}` {}", self.path.display(), self.chosen());
        if self.origin == AgentsOrigin::Default {
            text.push_str(&format!("; pass --agents DIR or set {AGENTS_VAR} to use another"));
        }
        text
    }

    /// A definition error, with the directory and its origin added when the role is missing or the directory
    /// cannot be read.
    pub(crate) fn explain(&self, error: AgentDefinitionError) -> AgentDefinitionError {
        match error.problem() {
            AgentDefinitionProblem::UnknownRole | AgentDefinitionProblem::Unreadable(_) => {
                let note = self.described();
                error.with_note(note)
            }
            _ => error,
        }
    }

    /// The definition of `role`.
    pub(crate) fn load(&self, role: &str) -> Result<Actor, MemoryError> {
        load_agent(&self.path, role).map_err(|e| MemoryError::AgentDefinition(self.explain(e)))
    }

    /// The roles defined here (none when the directory does not exist).
    pub(crate) fn roles(&self) -> Result<Vec<alp_memory::memory_policy::Role>, MemoryError> {
        list_roles(&self.path).map_err(|e| MemoryError::AgentDefinition(self.explain(e)))
    }

    /// The directory, canonical, as the runtime fences name it: it must exist.
    pub(crate) fn canonical(&self) -> Result<PathBuf, MemoryError> {
        self.path.canonicalize().map_err(|e| {
            MemoryError::Usage(format!("cannot resolve the agents directory: {e}; {}", self.described()))
        })
    }
}

/// The service's actors: definitions read from the agents directory on every call (a server's calls share one
/// [`DefinitionCache`], which parses a definition again only when its text changed), with its errors explained.
#[derive(Debug, Clone)]
pub(crate) struct CliAgents {
    dir: AgentsDir,
    parsed: Arc<DefinitionCache>,
}

impl CliAgents {
    pub(crate) fn new(dir: AgentsDir) -> CliAgents {
        CliAgents { dir, parsed: Arc::default() }
    }
}

impl ActorSource for CliAgents {
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError> {
        self.parsed.load(&self.dir.path, role).map_err(|e| self.dir.explain(e))
    }
}

/// Where memory lives: a Markdown root or a PostgreSQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// A directory (`--root`, `ALP_MEMORY_ROOT`, `~/.alp/memory`).
    Root(PathBuf),
    /// A `postgres://` or `postgresql://` URL (`--store`, `ALP_MEMORY_STORE`).
    Database(String),
}

/// The place the command line names (`docs/CLI.md`): `--root` or `--store` (both together is refused by the parser),
/// else `ALP_MEMORY_ROOT` or `ALP_MEMORY_STORE` (both set is `USAGE`), else `~/.alp/memory`.
pub(crate) fn resolve_place(cli: &Cli) -> Result<Place, MemoryError> {
    if let Some(url) = &cli.store {
        return database(url);
    }
    if cli.root.is_some() {
        return resolve_root(cli).map(Place::Root);
    }
    let variable = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    match (variable(ROOT_VAR), variable(STORE_VAR)) {
        (Some(_), Some(_)) => Err(MemoryError::Usage(format!(
            "both {ROOT_VAR} and {STORE_VAR} are set; unset one, or pass --root or --store"
        ))),
        (None, Some(url)) => database(&url.to_string_lossy()),
        _ => resolve_root(cli).map(Place::Root),
    }
}

/// A `--store` value: only PostgreSQL URLs.
fn database(url: &str) -> Result<Place, MemoryError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Place::Database(url.to_owned()))
    } else {
        Err(MemoryError::Usage(format!(
            "`{}` is not a PostgreSQL URL; --store takes postgres://… or postgresql://… (a directory is --root)",
            memory_postgres::redacted(url)
        )))
    }
}

/// Opens the database's store, refusing one that cannot be reached or has no (or a newer) schema as
/// `AUDIT_UNAVAILABLE` (like a missing root), and broken settings as `INVALID_CONFIG`.
pub(crate) fn open_database(url: &str) -> Result<PostgresStore, MemoryError> {
    PostgresStore::open(url).map_err(postgres_open_error)
}

/// How a failure to open or initialise a database reads (`docs/POSTGRESQL.md`).
pub(crate) fn postgres_open_error(error: PgOpenError) -> MemoryError {
    match error {
        PgOpenError::InvalidUrl { .. } | PgOpenError::AlreadyInitialized { .. } => {
            MemoryError::Usage(error.to_string())
        }
        PgOpenError::Settings { ref key, .. } => {
            MemoryError::Config { key: Some(key.to_string()), message: error.to_string() }
        }
        other => MemoryError::AuditUnavailable(other.to_string()),
    }
}

/// The environment variable naming an HMAC key file for the audit chain (outside the root).
pub(crate) const AUDIT_KEY_VAR: &str = "ALP_AUDIT_KEY";

/// The service the CLI runs: a store and a sink chosen when the command line is read.
pub(crate) type CliService = MemoryService<Box<dyn MemoryStore>, Box<dyn AuditSink>, GrantPolicy, CliAgents>;

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
pub(crate) fn audit_key(root: Option<&Path>) -> Result<Option<AuditKey>, MemoryError> {
    let Some(path) = std::env::var_os(AUDIT_KEY_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    let unavailable = |why: String| MemoryError::AuditUnavailable(format!("{AUDIT_KEY_VAR}: {why}"));
    // The key file failing for a reason of the system's (too many open files, a permission error, an I/O error) is
    // a storage failure naming the file and the reason; a missing, empty or oversized key is an unusable log.
    let storage = |why: String| MemoryError::Storage {
        id: None,
        storage_kind: Some(StorageErrorKind::Io),
        message: format!("{AUDIT_KEY_VAR}: {why}"),
    };
    let key_path = path.canonicalize().map_err(|e| {
        let why = format!("cannot open key file `{}`: {e}", path.display());
        if e.raw_os_error().is_some() && e.kind() != std::io::ErrorKind::NotFound {
            storage(why)
        } else {
            unavailable(why)
        }
    })?;
    if let Some(root) = root.and_then(|root| root.canonicalize().ok())
        && key_path.starts_with(&root)
    {
        return Err(unavailable(format!(
            "the key file `{}` lies inside the memory root; keep it outside so the log's writers cannot read it",
            key_path.display()
        )));
    }
    AuditKey::from_file(&key_path)
        .map(Some)
        .map_err(|e| if e.is_io() { storage(e.to_string()) } else { unavailable(e.to_string()) })
}

/// The error for a root that is not there (`AUDIT_UNAVAILABLE`, exit 9): nothing is created, and the message says
/// the root is missing, names it and how to make one (`docs/CLI.md`).
pub(crate) fn missing_root(root: &Path, not_a_directory: bool) -> MemoryError {
    let what = if not_a_directory { "is not a directory" } else { "does not exist" };
    MemoryError::MissingRoot(format!(
        "the memory root `{}` {what}; create it with `alp --root {} init` (or pass the right --root, or set \
         ALP_MEMORY_ROOT)",
        root.display(),
        root.display()
    ))
}

/// Opens the root's store, refusing a missing root (nothing is created) and a broken `config.yaml` (checked right
/// after the command line).
pub(crate) fn open_store(root: &Path) -> Result<MarkdownStore, MemoryError> {
    open_store_with(root, StoreOptions::new().create_missing(false))
}

/// Opens the root's store as [`open_store`] does, with the entry cache of a long-running server (`alp mcp`,
/// `alp serve`): [`MCP_ENTRY_CACHE_BYTES`].
pub(crate) fn open_server_store(root: &Path) -> Result<MarkdownStore, MemoryError> {
    raise_open_file_limit();
    open_store_with(root, StoreOptions::new().create_missing(false).entry_cache(MCP_ENTRY_CACHE_BYTES))
}

/// Raises the soft limit of open files to the hard limit, as long-running servers commonly do: the entry cache
/// holds a share of what the soft limit allows open ([`StoreOptions::entry_cache_handles`]), so that a repeated
/// search checks each cached file without looking its name up. Nothing changes when the limit cannot be raised.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
        // Refused (a hard limit lowered meanwhile): the soft limit stays, and so does a smaller share for the cache.
        let _ = setrlimit(Resource::Nofile, raised);
    }
}

/// The byte budget of the entry cache of `alp mcp` and `alp serve`, long-running servers (`docs/CLI.md`, "The MCP
/// server": it may keep what it has read, and sees every change on the next call): about 30,000 notes of 800 bytes. The
/// cache keeps parsed entries and their folded text, checked against each file's metadata on every search
/// ([`StoreOptions::entry_cache`]).
pub(crate) const MCP_ENTRY_CACHE_BYTES: usize = 64 << 20;

fn open_store_with(root: &Path, options: StoreOptions) -> Result<MarkdownStore, MemoryError> {
    MarkdownStore::open_with(root, options).map_err(|e| open_error(root, e))
}

/// How a failure to open the root `root` reads: a missing root says how to make one, a broken `config.yaml` is
/// `INVALID_CONFIG`, a failure of the system's is `STORAGE_ERROR`.
pub(crate) fn open_error(root: &Path, error: RootOpenError) -> MemoryError {
    match error {
        RootOpenError::Missing(_) => missing_root(root, false),
        RootOpenError::NotADirectory(_) => missing_root(root, true),
        RootOpenError::Config(config) => {
            MemoryError::Config { key: config.key().map(str::to_owned), message: config.to_string() }
        }
        RootOpenError::Storage(storage) => {
            MemoryError::from(alp_memory::memory_entry::StoreError::Storage(storage))
        }
        other => MemoryError::AuditUnavailable(other.to_string()),
    }
}

/// The service over the place: its store, its audit log (keyed when `ALP_AUDIT_KEY` is set; for a root, waiting at
/// most its `lockTimeout` for the log's lock) and the agent definitions.
pub(crate) fn open_service(cli: &Cli) -> Result<CliService, MemoryError> {
    let agents = CliAgents::new(AgentsDir::resolve(cli)?);
    let root = match resolve_place(cli)? {
        Place::Root(root) => root,
        Place::Database(url) => {
            let store = open_database(&url)?;
            let sink = store.audit_sink(audit_key(None)?);
            let store: Box<dyn MemoryStore> = Box::new(store);
            let sink: Box<dyn AuditSink> = Box::new(sink);
            return Ok(MemoryService::new(store, sink, GrantPolicy, agents));
        }
    };
    let server = matches!(cli.command, Command::Mcp);
    let store = if server { open_server_store(&root)? } else { open_store(&root)? };
    let log = store.root().join(AUDIT_FILE);
    let key = audit_key(Some(store.root()))?;
    let sink = match key {
        Some(key) => JsonlAuditSink::with_key(&log, key),
        None => JsonlAuditSink::open(&log),
    }
    .map_err(|e| MemoryError::AuditUnavailable(e.to_string()))?
    .with_lock_timeout(store.config().lock_timeout);
    // The MCP server's errors reach its client: the log is named relative to the root there. The operator's own
    // commands name it by its path.
    let sink = if server { sink.named(AUDIT_FILE) } else { sink };
    let store: Box<dyn MemoryStore> = Box::new(store);
    let sink: Box<dyn AuditSink> = Box::new(sink);
    Ok(MemoryService::new(store, sink, GrantPolicy, agents))
}

/// `value` as one line of JSON, for `--json` output.
pub(crate) fn json_string(value: &impl serde::Serialize) -> Result<String, MemoryError> {
    serde_json::to_string(value).map_err(|e| MemoryError::Usage(format!("cannot write JSON output: {e}")))
}
