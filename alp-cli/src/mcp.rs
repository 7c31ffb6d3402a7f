//! `alp --as ROLE mcp`, the MCP server a runtime starts with a fixed role (docs/RUNTIMES.md). The configuration
//! that starts it (`alp adapter mcp ROLE`, `alp adapter claude|codex ROLE --via-mcp`) is in [`crate::adapter`].

use std::io::IsTerminal as _;

use alp_memory::MemoryError;
use alp_memory::memory_policy::Role;
use memory_mcp::MemoryServer;

use crate::Printed;
use crate::args::Cli;
use crate::setup::{AgentsDir, open_service};

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
