//! `alp --as ROLE mcp`, the MCP server a runtime starts with a fixed role (DESIGN.md §11), and the configuration
//! that starts it: `alp adapter mcp ROLE`, `alp adapter claude|codex ROLE --via-mcp` (§10).

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use alp_memory::MemoryError;
use alp_memory::adapter::{
    INTERACTIVE_NOTE, McpServerCommand, McpStore, agents_warnings, claude_settings_via_mcp,
    codex_setup_via_mcp,
};
use alp_memory::memory_policy::Role;
use memory_mcp::MemoryServer;

use crate::Printed;
use crate::args::{AdapterCommand, Cli, McpFormat};
use crate::setup::{
    AUDIT_KEY_VAR, AgentsDir, Place, adapter_error, audit_key, json_string, open_database, open_service,
    open_store, print_codex_notes, resolve_place, workspace,
};

/// Serves the role named by `--as` on stdin and stdout until stdin ends. The root (and its `config.yaml`) and the
/// role's definition are checked before the first message is read, so a runtime configured with a wrong root or
/// role sees the error at once, on stderr; from then on the definition is read again on every call.
pub(crate) fn serve(cli: &Cli) -> Result<Printed, MemoryError> {
    let Some(role) = cli.role.as_deref() else {
        return Err(MemoryError::Usage(
            "`alp mcp` needs --as ROLE before the subcommand: the server acts as that role, and no tool argument \
             changes it (alp --as worker mcp)"
                .to_owned(),
        ));
    };
    let service = open_service(cli)?;
    let role = AgentsDir::resolve(cli)?.load(role)?.role().clone();
    if std::io::stdin().is_terminal() {
        // A person started it by hand: say what the silence means.
        eprintln!("{}", waiting_note(&role));
    }
    let server = MemoryServer::new(service, role);
    memory_mcp::serve_stdio(server).map_err(|e| MemoryError::Storage {
        id: None,
        storage_kind: None,
        message: e.to_string(),
    })?;
    Ok(Printed::ok(String::new()))
}

/// What `alp mcp` says on stderr when stdin is a terminal: it waits for a client, and a runtime starts it itself.
fn waiting_note(role: &Role) -> String {
    format!(
        "alp mcp: the MCP server of role `{role}` is waiting for an MCP client's JSON-RPC messages on stdin (Ctrl-D \
         ends it); agent runtimes start it themselves: `alp adapter mcp {role}` prints their configuration"
    )
}

/// `alp adapter mcp`, and `alp adapter claude|codex --via-mcp`.
pub(crate) fn adapter(cli: &Cli, command: &AdapterCommand) -> Result<Printed, MemoryError> {
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
