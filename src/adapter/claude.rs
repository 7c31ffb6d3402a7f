//! Claude Code: a settings fragment whose `permissions.deny` and `sandbox.filesystem.denyRead` fence the root for the agent's own file tools.

use std::path::Path;

use memory_policy::Role;
use serde::Serialize;

use super::fence::{fenced_places, rule_path};
use super::*;

/// The Claude Code settings fragment: `{"permissions":{"deny":[…]},"sandbox":{"filesystem":{"denyRead":[…]}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaudeSettings {
    permissions: ClaudePermissions,
    sandbox: ClaudeSandbox,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct ClaudePermissions {
    deny: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct ClaudeSandbox {
    filesystem: ClaudeFilesystem,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct ClaudeFilesystem {
    #[serde(rename = "denyRead")]
    deny_read: Vec<String>,
}

impl ClaudeSettings {
    /// The `permissions.deny` rules.
    pub fn deny(&self) -> &[String] {
        &self.permissions.deny
    }

    /// The `sandbox.filesystem.denyRead` paths.
    pub fn deny_read(&self) -> &[String] {
        &self.sandbox.filesystem.deny_read
    }
}

/// Settings for an agent running as `role`: a `Read` rule for every place that holds another role's private content
/// or IDs, as the store's layout lists them (`memory_markdown::layout`): `Read(//<root>/private/<other>/**)` and
/// `Read(//<root>/history/private/<other>/**)` (kept versions and tombstones) for every other role in `roles`, then
/// `Read(//<root>/audit.jsonl)`, `Read(//<root>/tokens/**)` and `Read(//<root>/.locks/**)`, which name every role's
/// IDs; `Edit(//<root>/**)` (every write goes through the service), `Edit(//<agents>/**)` (the definitions decide
/// every grant), and the same places in `sandbox.filesystem.denyRead`. `roles` may hold `role` itself and
/// duplicates; they are skipped. A [`Role`] never holds a pattern character, so every rule names exactly one
/// directory or file.
///
/// # Errors
///
/// [`AdapterError::Path`] when the root or the agents directory is not a canonical absolute UTF-8 path free of
/// pattern characters and whitespace.
///
/// ```
/// use std::path::Path;
/// use alp_memory::adapter::claude_settings;
/// use alp_memory::memory_policy::Role;
///
/// let roles = [Role::parse("main").unwrap(), Role::parse("worker").unwrap()];
/// let settings = claude_settings(Path::new("/srv/memory"), Path::new("/srv/agents"), &roles[1], &roles).unwrap();
/// assert_eq!(
///     settings.deny(),
///     [
///         "Read(//srv/memory/private/main/**)",
///         "Read(//srv/memory/history/private/main/**)",
///         "Read(//srv/memory/audit.jsonl)",
///         "Read(//srv/memory/tokens/**)",
///         "Read(//srv/memory/.locks/**)",
///         "Edit(//srv/memory/**)",
///         "Edit(//srv/agents/**)",
///     ]
/// );
/// assert_eq!(
///     settings.deny_read(),
///     [
///         "//srv/memory/private/main",
///         "//srv/memory/history/private/main",
///         "//srv/memory/audit.jsonl",
///         "//srv/memory/tokens",
///         "//srv/memory/.locks",
///     ]
/// );
/// ```
pub fn claude_settings(
    canonical_root: &Path,
    canonical_agents: &Path,
    role: &Role,
    roles: &[Role],
) -> Result<ClaudeSettings, AdapterError> {
    let root = rule_path(canonical_root)?;
    let agents = rule_path(canonical_agents)?;
    let mut others: Vec<&Role> = roles.iter().filter(|r| *r != role).collect();
    others.sort();
    others.dedup();
    let mut deny = Vec::new();
    let mut deny_read = Vec::new();
    for (path, directory) in fenced_places(&others)? {
        let path = format!("{root}/{path}");
        deny.push(if directory { format!("Read({path}/**)") } else { format!("Read({path})") });
        deny_read.push(path);
    }
    deny.push(format!("Edit({root}/**)"));
    deny.push(format!("Edit({agents}/**)"));
    Ok(ClaudeSettings {
        permissions: ClaudePermissions { deny },
        sandbox: ClaudeSandbox { filesystem: ClaudeFilesystem { deny_read } },
    })
}

/// Settings for an agent that reaches memory only through the MCP server (`--via-mcp`): the fence covers the whole
/// root, `Read(//<root>/**)` and `Edit(//<root>/**)`, and the root in `sandbox.filesystem.denyRead`, so an `alp`
/// started from the agent's shell cannot read its root and fails closed; `Edit(//<agents>/**)` as without MCP. With
/// no root (`None`: the memory is in a database) only the agents directory is fenced.
///
/// The server's own command line decides the role, so the runtime's configuration in the agent's workspace is fenced
/// too: `Edit(//<workspace>/.mcp.json)` and `Edit(//<workspace>/.claude/**)`, where `canonical_workspace` is the
/// directory the agent starts in. Otherwise an agent could rewrite a project-scope server entry to `--as` another
/// role and act as that role at its next start; the server belongs at user scope ([`McpServerCommand::claude_add`]).
///
/// # Errors
///
/// [`AdapterError::Path`] as for [`claude_settings`], for the root, the agents directory or the workspace.
///
/// ```
/// use std::path::Path;
/// use alp_memory::adapter::claude_settings_via_mcp;
///
/// let (agents, workspace) = (Path::new("/srv/agents"), Path::new("/home/dev/app"));
/// let settings = claude_settings_via_mcp(Some(Path::new("/srv/memory")), agents, workspace).unwrap();
/// assert_eq!(
///     settings.deny(),
///     [
///         "Read(//srv/memory/**)",
///         "Edit(//srv/memory/**)",
///         "Edit(//srv/agents/**)",
///         "Edit(//home/dev/app/.mcp.json)",
///         "Edit(//home/dev/app/.claude/**)",
///     ]
/// );
/// assert_eq!(settings.deny_read(), ["//srv/memory"]);
///
/// let over_a_database = claude_settings_via_mcp(None, agents, workspace).unwrap();
/// assert_eq!(
///     over_a_database.deny(),
///     ["Edit(//srv/agents/**)", "Edit(//home/dev/app/.mcp.json)", "Edit(//home/dev/app/.claude/**)"]
/// );
/// ```
pub fn claude_settings_via_mcp(
    canonical_root: Option<&Path>,
    canonical_agents: &Path,
    canonical_workspace: &Path,
) -> Result<ClaudeSettings, AdapterError> {
    let agents = rule_path(canonical_agents)?;
    let workspace = rule_path(canonical_workspace)?;
    let runtime = [format!("Edit({workspace}/.mcp.json)"), format!("Edit({workspace}/.claude/**)")];
    let (mut deny, deny_read) = match canonical_root {
        Some(canonical_root) => {
            let root = rule_path(canonical_root)?;
            (vec![format!("Read({root}/**)"), format!("Edit({root}/**)")], vec![root])
        }
        // A database: no memory on this machine's file system, so only the definitions and the runtime's
        // configuration are fenced.
        None => (Vec::new(), Vec::new()),
    };
    deny.push(format!("Edit({agents}/**)"));
    deny.extend(runtime);
    Ok(ClaudeSettings {
        permissions: ClaudePermissions { deny },
        sandbox: ClaudeSandbox { filesystem: ClaudeFilesystem { deny_read } },
    })
}
