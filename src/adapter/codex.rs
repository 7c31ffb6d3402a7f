//! Codex: the sandbox mode that keeps the root unwritable and the prompt that states the read rule.

use std::path::Path;

use memory_policy::Role;
use serde::Serialize;

#[cfg(target_os = "linux")]
use super::fence::relative_text;
use super::fence::rule_path;
use super::*;

/// The prompt lines that name every place of other roles' private content or IDs, from the store's layout: the
/// parents of the per-role places but `role`'s own, and the places of every role.
#[cfg(target_os = "linux")]
fn codex_fence_lines(root: &str, role: &Role) -> Result<String, AdapterError> {
    use memory_markdown::layout;
    let quoted = |paths: Vec<String>| paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>();
    let parents = layout::private_parents()
        .iter()
        .map(|p| Ok(format!("{root}/{}/", relative_text(p)?)))
        .collect::<Result<Vec<_>, AdapterError>>()?;
    let own = layout::private_places(role.as_str())
        .iter()
        .map(|p| Ok(format!("{root}/{}/", relative_text(p.path())?)))
        .collect::<Result<Vec<_>, AdapterError>>()?;
    let shared = layout::places_of_every_role()
        .iter()
        .map(|p| {
            let path = relative_text(p.path())?;
            Ok(if p.is_directory() { format!("{root}/{path}/") } else { format!("{root}/{path}") })
        })
        .collect::<Result<Vec<_>, AdapterError>>()?;
    Ok(format!(
        "- Never read another role's private memory. Everything under {} other than {} belongs to other roles \
         (their entries, and the kept versions of them); if you need a fact that lives there, ask for it to be \
         shared through shared or project memory.\n\
         - Never read {}: they name every role's memory.\n",
        joined(&quoted(parents), "and"),
        joined(&quoted(own), "and"),
        joined(&quoted(shared), "or"),
    ))
}

#[cfg(not(target_os = "linux"))]
fn codex_fence_lines(_root: &str, _role: &Role) -> Result<String, AdapterError> {
    fenced_places(&[]).map(|_| String::new())
}

/// `a`, `a and b`, `a, b and c`, with `word` in place of "and".
#[cfg(target_os = "linux")]
fn joined(items: &[String], word: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} {word} {last}", init.join(", ")),
    }
}

/// What Codex needs: `{"sandboxMode","prompt","warnings":[…]}`, and with [`codex_setup_via_mcp`] also
/// `"configToml"`, the `[mcp_servers.alp-memory]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodexSetup {
    sandbox_mode: &'static str,
    prompt: String,
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config_toml: Option<String>,
}

impl CodexSetup {
    /// The sandbox mode: always `workspace-write`, with the root outside the workspace and `writable_roots`.
    pub fn sandbox_mode(&self) -> &str {
        self.sandbox_mode
    }

    /// The prompt text stating the read rule.
    pub fn prompt(&self) -> &str {
        &self.prompt
    }

    /// What weakens the fence here (e.g. a root inside the workspace).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The `[mcp_servers.alp-memory]` table for Codex's `config.toml` ([`codex_setup_via_mcp`] only).
    pub fn config_toml(&self) -> Option<&str> {
        self.config_toml.as_deref()
    }
}

/// The Codex setup for an agent running as `role`, started in `workspace` (the current directory), with its
/// definitions in `canonical_agents`.
///
/// # Errors
///
/// [`AdapterError`] as for [`claude_settings`].
pub fn codex_setup(
    canonical_root: &Path,
    canonical_agents: &Path,
    role: &Role,
    workspace: &Path,
) -> Result<CodexSetup, AdapterError> {
    rule_path(canonical_root)?;
    rule_path(canonical_agents)?;
    let root = canonical_root.display();
    let fence = codex_fence_lines(&root.to_string(), role)?;
    let prompt = format!(
        "Memory rules for role `{role}`:\n\
         - Reach memory only through the `alp` command the runtime provides; it acts as role `{role}`. Never pass \
         another role to it.\n\
         - Never read, list, search or copy files under `{root}` with your own tools: not with cat, grep, rg, find, \
         ls, editors or scripts.\n\
         {fence}\
         - Never write under `{root}` except through `alp`; the sandbox keeps it read-only to you.\n"
    );
    let mut warnings = vec![
        "Codex's sandbox restricts writes only: reading other roles' private memory is forbidden by this prompt alone"
            .to_owned(),
    ];
    if workspace.starts_with(canonical_root) {
        warnings.push(format!(
            "the current directory `{}` lies inside the memory root `{root}`: workspace-write would let the agent \
             write the root; start the agent elsewhere",
            workspace.display()
        ));
    } else if canonical_root.starts_with(workspace) {
        warnings.push(format!(
            "the memory root `{root}` lies inside the current directory `{}`: workspace-write would let the agent \
             write it; move the root (set ALP_MEMORY_ROOT) outside the workspace",
            workspace.display()
        ));
    }
    warnings.extend(agents_warnings(canonical_agents, workspace));
    warnings.push(format!("keep `{root}` out of sandbox_workspace_write.writable_roots"));
    warnings.push(INTERACTIVE_NOTE.to_owned());
    Ok(CodexSetup { sandbox_mode: "workspace-write", prompt, warnings, config_toml: None })
}

/// The Codex setup for an agent that reaches memory only through the MCP server (`--via-mcp`): the sandbox and
/// warnings of [`codex_setup`], a prompt that names the server's tools as the only way to memory, and `server`'s
/// `config.toml` table. With no root (`None`: the memory is in a database) the prompt also forbids `alp` and the
/// database itself.
///
/// # Errors
///
/// [`AdapterError`] as for [`codex_setup`].
pub fn codex_setup_via_mcp(
    canonical_root: Option<&Path>,
    canonical_agents: &Path,
    role: &Role,
    workspace: &Path,
    server: &McpServerCommand,
) -> Result<CodexSetup, AdapterError> {
    let Some(canonical_root) = canonical_root else {
        // A database: nothing of memory on this machine's file system; the server's tools are the only door.
        rule_path(canonical_agents)?;
        let prompt = format!(
            "Memory rules for role `{role}`:\n\
             - Reach memory only through the tools of the `{MCP_SERVER_NAME}` MCP server (memory_search, memory_get, \
             memory_create, memory_update, memory_delete, memory_context, memory); they act as role `{role}`, and no \
             argument changes that.\n\
             - Never run the `alp` command and never connect to the memory database yourself.\n"
        );
        let mut warnings = vec![
            "Codex's sandbox restricts writes only: using the database or `alp` directly is forbidden by this \
             prompt alone"
                .to_owned(),
        ];
        warnings.extend(agents_warnings(canonical_agents, workspace));
        warnings.push(INTERACTIVE_NOTE.to_owned());
        return Ok(CodexSetup {
            sandbox_mode: "workspace-write",
            prompt,
            warnings,
            config_toml: Some(server.codex_toml()),
        });
    };
    let mut setup = codex_setup(canonical_root, canonical_agents, role, workspace)?;
    let root = canonical_root.display();
    setup.prompt = format!(
        "Memory rules for role `{role}`:\n\
         - Reach memory only through the tools of the `{MCP_SERVER_NAME}` MCP server (memory_search, memory_get, \
         memory_create, memory_update, memory_delete, memory_context, memory); they act as role `{role}`, and no \
         argument changes that.\n\
         - Never read, list, search or copy files under `{root}` with your own tools: not with cat, grep, rg, find, \
         ls, editors or scripts, and not with the `alp` command.\n\
         - Never write under `{root}`; the sandbox keeps it read-only to you.\n"
    );
    if let Some(first) = setup.warnings.first_mut() {
        *first =
            "Codex's sandbox restricts writes only: reading the memory root directly is forbidden by this \
                  prompt alone"
                .to_owned();
    }
    setup.config_toml = Some(server.codex_toml());
    Ok(setup)
}
