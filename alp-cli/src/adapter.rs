//! `alp adapter`: what starts an agent runtime with memory. `alp adapter claude|codex ROLE` prints the runtime
//! fences of an agent that reads the root's files itself; `alp adapter mcp ROLE` and `alp adapter claude|codex ROLE
//! --via-mcp` print the configuration that starts `alp --as ROLE mcp` (docs/RUNTIMES.md).

use std::path::{Path, PathBuf};

use alp_memory::MemoryError;
use alp_memory::adapter::{
    AdapterError, INTERACTIVE_NOTE, McpServerCommand, McpStore, agents_warnings, claude_settings,
    claude_settings_via_mcp, codex_setup, codex_setup_via_mcp, fenced_roles,
};
use alp_memory::memory_policy::Role;

use crate::Printed;
use crate::args::{AdapterCommand, Cli, McpFormat};
use crate::setup::{
    AUDIT_KEY_VAR, AgentsDir, Place, audit_key, json_string, open_database, open_store, resolve_place,
};

/// `alp adapter claude|codex ROLE`: the runtime fences of an agent that reads the root's files itself; with
/// `--via-mcp`, and for `alp adapter mcp`, the configuration of the MCP server instead ([`via_mcp`]).
pub(crate) fn adapter(cli: &Cli, command: &AdapterCommand) -> Result<Printed, MemoryError> {
    let (role, claude) = match command {
        AdapterCommand::Claude { role, via_mcp: false } => (role, true),
        AdapterCommand::Codex { role, via_mcp: false } => (role, false),
        AdapterCommand::Claude { .. } | AdapterCommand::Codex { .. } | AdapterCommand::Mcp { .. } => {
            return via_mcp(cli, command);
        }
    };
    let agents_dir = AgentsDir::resolve(cli)?;
    let actor = agents_dir.load(role)?;
    let root = match resolve_place(cli)? {
        Place::Root(root) => root,
        Place::Database(_) => {
            let name = if claude { "claude" } else { "codex" };
            return Err(MemoryError::Usage(format!(
                "with --store, memory is not on this machine's file system, so there is no root to fence; give the \
                 agent memory through MCP: alp adapter {name} {role} --via-mcp"
            )));
        }
    };
    let store = open_store(&root)?;
    let canonical = store.root().to_path_buf();
    let (agents, workspace) = (agents_dir.canonical()?, workspace()?);
    let note = alp_memory::adapter::INTERACTIVE_NOTE;
    // stdout holds only the document (the settings JSON, the prompt), so `> file` writes a valid file; every note
    // and warning goes to stderr.
    if claude {
        let roles = fenced_roles(&canonical, &agents).map_err(adapter_error)?;
        let settings = claude_settings(&canonical, &agents, actor.role(), &roles).map_err(adapter_error)?;
        for warning in agents_warnings(&agents, &workspace) {
            eprintln!("warning: {warning}");
        }
        eprintln!(
            "note: merge this into the agent's Claude Code settings (user or managed settings); {note}"
        );
        return Ok(Printed::ok(if cli.json {
            json_string(&settings)?
        } else {
            serde_json::to_string_pretty(&settings).map_err(|e| MemoryError::Usage(e.to_string()))?
        }));
    }
    let setup = codex_setup(&canonical, &agents, actor.role(), &workspace).map_err(adapter_error)?;
    if cli.json {
        eprintln!("note: {note}");
        return Ok(Printed::ok(json_string(&setup)?));
    }
    print_codex_notes(setup.sandbox_mode(), setup.warnings());
    Ok(Printed::ok(setup.prompt().to_owned()))
}

/// The notes of `alp adapter codex` without `--json`, on stderr (stdout holds the prompt alone): the sandbox mode
/// and every warning.
fn print_codex_notes(sandbox_mode: &str, warnings: &[String]) {
    eprintln!("note: give this prompt to the agent, and start it with `codex exec --sandbox {sandbox_mode}`");
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

/// The current directory, canonical: the agent's workspace, which the fences warn about.
fn workspace() -> Result<PathBuf, MemoryError> {
    std::env::current_dir()
        .and_then(|dir| dir.canonicalize())
        .map_err(|e| MemoryError::Usage(format!("cannot resolve the current directory: {e}")))
}

/// A path a rule cannot state is the caller's to fix (`USAGE`); a name under the root or the agents directory that
/// cannot be fenced is a storage problem, named (`docs/RUNTIMES.md`).
fn adapter_error(error: AdapterError) -> MemoryError {
    match error {
        AdapterError::Path { .. } => MemoryError::Usage(error.to_string()),
        _ => MemoryError::Storage { id: None, storage_kind: None, message: error.to_string() },
    }
}

/// `alp adapter mcp`, and `alp adapter claude|codex --via-mcp`.
fn via_mcp(cli: &Cli, command: &AdapterCommand) -> Result<Printed, MemoryError> {
    let (role, what) = match command {
        AdapterCommand::Mcp { role, format, url: Some(url) } => {
            return crate::serve::adapter_http(cli, role, url, *format);
        }
        AdapterCommand::Mcp { role, format, url: None } => (role, Output::Server(*format)),
        AdapterCommand::Claude { role, .. } => (role, Output::Claude),
        AdapterCommand::Codex { role, .. } => (role, Output::Codex),
    };
    let agents = AgentsDir::resolve(cli)?;
    let role = agents.load(role)?.role().clone();
    let places = Places::resolve(cli, &agents)?;
    // stdout holds only the document (JSON, TOML or the prompt), so `> file` writes a valid file; every note and
    // warning goes to stderr. No note suggests a server entry in the agent's workspace, which the agent could
    // rewrite to act as another role: each names user-scope registration.
    match what {
        Output::Server(format) => {
            let server = places.server(&role)?;
            let register = match format {
                McpFormat::Json => format!(
                    "register the server at user scope, outside the agent's workspace: {}",
                    server.claude_add()
                ),
                McpFormat::Toml => format!(
                    "add the table to the user's ~/.codex/config.toml, outside the agent's workspace, or run: {}",
                    server.codex_add()
                ),
            };
            eprintln!("note: {register}");
            Ok(Printed::ok(match (format, cli.json) {
                (McpFormat::Json, true) => json_string(&server.mcp_json())?,
                (McpFormat::Json, false) => pretty(&server.mcp_json())?,
                (McpFormat::Toml, true) => {
                    json_string(&serde_json::json!({ "configToml": server.codex_toml() }))?
                }
                (McpFormat::Toml, false) => server.codex_toml(),
            }))
        }
        Output::Claude => {
            let server = places.server(&role)?;
            let settings = claude_settings_via_mcp(places.root.as_deref(), &places.agents, &places.workspace)
                .map_err(adapter_error)?;
            for warning in agents_warnings(&places.agents, &places.workspace) {
                eprintln!("warning: {warning}");
            }
            eprintln!(
                "note: merge this into the agent's Claude Code settings (user or managed settings), and register \
                 the server at user scope, outside the agent's workspace: {}",
                server.claude_add()
            );
            eprintln!("note: {INTERACTIVE_NOTE}");
            Ok(Printed::ok(if cli.json { json_string(&settings)? } else { pretty(&settings)? }))
        }
        Output::Codex => {
            let server = places.server(&role)?;
            let setup = codex_setup_via_mcp(
                places.root.as_deref(),
                &places.agents,
                &role,
                &places.workspace,
                &server,
            )
            .map_err(adapter_error)?;
            let register = format!(
                "register the server at user scope (the user's ~/.codex/config.toml, outside the agent's \
                 workspace): {}",
                server.codex_add()
            );
            if cli.json {
                eprintln!("note: {register}");
                eprintln!("note: {INTERACTIVE_NOTE}");
                return Ok(Printed::ok(json_string(&setup)?));
            }
            eprintln!("note: {register}");
            print_codex_notes(setup.sandbox_mode(), setup.warnings());
            Ok(Printed::ok(setup.prompt().to_owned()))
        }
    }
}

enum Output {
    Server(McpFormat),
    Claude,
    Codex,
}

/// The canonical places a runtime's configuration names.
struct Places {
    /// The root, or `None` for a database.
    root: Option<PathBuf>,
    /// A database's URL without its password.
    database: Option<String>,
    agents: PathBuf,
    workspace: PathBuf,
}

impl Places {
    fn resolve(cli: &Cli, agents: &AgentsDir) -> Result<Places, MemoryError> {
        // The store the server will serve. A root must exist (like for every memory command) and is named by its
        // canonical path; a database must hold the schema and is named by its URL without the password.
        let (root, database) = match resolve_place(cli)? {
            Place::Root(root) => (Some(open_store(&root)?.root().to_path_buf()), None),
            Place::Database(url) => (None, Some(open_database(&url)?.url().to_owned())),
        };
        Ok(Places { root, database, agents: agents.canonical()?, workspace: workspace()? })
    }

    /// How the runtime starts the server: this `alp`, absolute paths, and `ALP_AUDIT_KEY` when it is set (checked
    /// like every command checks it: a readable key outside the root).
    fn server(&self, role: &Role) -> Result<McpServerCommand, MemoryError> {
        let alp = std::env::current_exe()
            .and_then(|exe| exe.canonicalize())
            .map_err(|e| MemoryError::Usage(format!("cannot find the path of alp itself: {e}")))?;
        let store = match (&self.root, &self.database) {
            (Some(root), _) => McpStore::Root(root),
            (None, Some(url)) => McpStore::Database(url),
            (None, None) => return Err(MemoryError::Usage("no root and no database to serve".to_owned())),
        };
        let mut server = McpServerCommand::new(&alp, store, &self.agents, role).map_err(adapter_error)?;
        if audit_key(self.root.as_deref())?.is_some() {
            let key = key_path()?;
            server = server.with_env(AUDIT_KEY_VAR, &key);
        }
        Ok(server)
    }
}

/// The absolute path of the `ALP_AUDIT_KEY` file.
fn key_path() -> Result<String, MemoryError> {
    let named = std::env::var_os(AUDIT_KEY_VAR).map(PathBuf::from).unwrap_or_default();
    let canonical = Path::new(&named).canonicalize().map_err(|e| {
        MemoryError::AuditUnavailable(format!(
            "{AUDIT_KEY_VAR}: cannot open key file `{}`: {e}",
            named.display()
        ))
    })?;
    canonical.to_str().map(str::to_owned).ok_or_else(|| {
        MemoryError::Usage(format!("{AUDIT_KEY_VAR}: `{}` is not valid UTF-8", canonical.display()))
    })
}

fn pretty(value: &impl serde::Serialize) -> Result<String, MemoryError> {
    serde_json::to_string_pretty(value)
        .map_err(|e| MemoryError::Usage(format!("cannot write JSON output: {e}")))
}
