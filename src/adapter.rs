//! Runtime fences (DESIGN.md §10): settings that keep an agent's own file tools away from the memory root, so that
//! memory is reached only through the service.
//!
//! The service is the real boundary; these fences close the side door of direct file access. How far each runtime
//! goes differs, and the output says so:
//! - **Claude Code** has a real ACL for its file tools: [`claude_settings`] denies reading other roles' private
//!   directories and editing anything under the root, for the file tools (`permissions.deny`) and for sandboxed
//!   commands (`sandbox.filesystem.denyRead`).
//! - **Codex** restricts writes only: [`codex_setup`] keeps the root unwritable with the `workspace-write` sandbox
//!   (the root outside the workspace and outside `writable_roots`) and states the read rule in the prompt, which is
//!   all Codex can do about reads.
//! - Interactive sessions ignore deny lists on both runtimes ([`INTERACTIVE_NOTE`]).
//! - The agents directory decides every grant, so it is fenced like the root: Claude's fragment denies editing it,
//!   and both adapters warn when it lies inside the agent's workspace ([`agents_warnings`]).
//!
//! Paths use the canonical root in the `//` absolute form: in Claude Code settings a single leading `/` is relative
//! to the settings file. A path or role name a rule could not state exactly (a pattern character, whitespace) is
//! an error, never skipped: [`fenced_roles`] refuses a `private/` directory or a definition file it cannot fence.

use std::path::{Component, Path};

use memory_policy::{DEFINITION_EXTENSION, Role};
use serde::Serialize;

/// Said by both adapters: deny lists do not bind interactive sessions.
pub const INTERACTIVE_NOTE: &str = "interactive sessions ignore deny lists on both Claude Code and Codex: \
these fences hold only for agents the runtime starts non-interactively";

/// Why fence settings cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// The memory root or the agents directory is a path a permission rule cannot state exactly.
    #[error("cannot write runtime settings for `{path}`: {reason}")]
    Path {
        /// The path.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// A directory under `private/`, or a definition file in the agents directory, has a name that is not a role a
    /// rule can fence; skipping it would leave that memory unfenced.
    #[error("cannot fence `{path}`: {reason}; rename or remove it")]
    Unfenceable {
        /// The directory or file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A directory could not be listed.
    #[error("cannot list `{path}`: {reason}")]
    Unreadable {
        /// The directory.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The `//`-absolute form of a canonical directory, refusing what a settings rule cannot express exactly.
fn rule_path(canonical: &Path) -> Result<String, AdapterError> {
    let fail = |reason| Err(AdapterError::Path { path: canonical.display().to_string(), reason });
    if !canonical.is_absolute() || canonical.components().any(|c| matches!(c, Component::ParentDir)) {
        return fail("it is not a canonical absolute path");
    }
    let Some(text) = canonical.to_str() else {
        return fail("it is not valid UTF-8");
    };
    if text.chars().any(|c| {
        matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '(' | ')' | '!' | '\\')
            || c.is_control()
            || c.is_whitespace()
    }) {
        return fail("it holds a character that permission rules treat as a pattern, or whitespace");
    }
    Ok(format!("/{}", text.trim_end_matches('/')))
}

/// The roles a fence must name: every definition file in `agents_dir` and every directory under
/// `<root>/private/`. A name that is not a valid role (which includes every name holding a pattern character or
/// whitespace) is an error naming it: an unfenced `private/` directory would be readable by the agent's own tools.
/// Files in `agents_dir` that do not end in `.yaml` are not definitions and are ignored.
///
/// # Errors
///
/// [`AdapterError::Unfenceable`] for such a name; [`AdapterError::Unreadable`] when a directory exists but cannot
/// be listed.
pub fn fenced_roles(canonical_root: &Path, agents_dir: &Path) -> Result<Vec<Role>, AdapterError> {
    let mut roles = Vec::new();
    let suffix = format!(".{DEFINITION_EXTENSION}");
    for name in names_in(agents_dir)? {
        if let Some(stem) = name.strip_suffix(&suffix) {
            roles.push(role_named(stem, &agents_dir.join(&name))?);
        }
    }
    let private = canonical_root.join("private");
    for name in names_in(&private)? {
        roles.push(role_named(&name, &private.join(&name))?);
    }
    roles.sort();
    roles.dedup();
    Ok(roles)
}

fn role_named(name: &str, path: &Path) -> Result<Role, AdapterError> {
    Role::parse(name).map_err(|e| AdapterError::Unfenceable {
        path: path.display().to_string(),
        reason: format!("`{}` is not a role name ({})", memory_id::shown(name), e.reason().code()),
    })
}

/// The names in `dir` (none when it does not exist); a name that is not UTF-8 is an error, as it cannot be fenced.
fn names_in(dir: &Path) -> Result<Vec<String>, AdapterError> {
    let unreadable = |e: std::io::Error| AdapterError::Unreadable {
        path: dir.display().to_string(),
        reason: e.to_string(),
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(unreadable(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name().into_string().map_err(|name| AdapterError::Unfenceable {
            path: dir.join(&name).display().to_string(),
            reason: "its name is not UTF-8".to_owned(),
        })?;
        names.push(name);
    }
    Ok(names)
}

/// Warnings about the agents directory for an agent started in `workspace`: inside it, the agent could edit its
/// own grants (Claude's fragment denies that for its file tools; Codex's sandbox lets the workspace be written).
pub fn agents_warnings(canonical_agents: &Path, workspace: &Path) -> Vec<String> {
    if canonical_agents.starts_with(workspace) {
        vec![format!(
            "the agents directory `{}` lies inside the current directory `{}`: definitions decide every grant, so an \
             agent that can write there can grant itself anything; keep them outside the agent's workspace (--agents)",
            canonical_agents.display(),
            workspace.display()
        )]
    } else {
        Vec::new()
    }
}

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

/// Settings for an agent running as `role`: `Read(//<root>/private/<other>/**)` for every other role in `roles`,
/// `Edit(//<root>/**)` (every write goes through the service), `Edit(//<agents>/**)` (the definitions decide every
/// grant), and the same private directories in `sandbox.filesystem.denyRead`. `roles` may hold `role` itself and
/// duplicates; they are skipped. A [`Role`] never holds a pattern character, so every rule names exactly one
/// directory.
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
///     ["Read(//srv/memory/private/main/**)", "Edit(//srv/memory/**)", "Edit(//srv/agents/**)"]
/// );
/// assert_eq!(settings.deny_read(), ["//srv/memory/private/main"]);
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
    let private_dirs: Vec<String> = others.iter().map(|r| format!("{root}/private/{r}")).collect();
    let mut deny: Vec<String> = private_dirs.iter().map(|dir| format!("Read({dir}/**)")).collect();
    deny.push(format!("Edit({root}/**)"));
    deny.push(format!("Edit({agents}/**)"));
    Ok(ClaudeSettings {
        permissions: ClaudePermissions { deny },
        sandbox: ClaudeSandbox { filesystem: ClaudeFilesystem { deny_read: private_dirs } },
    })
}

/// What Codex needs: `{"sandboxMode","prompt","warnings":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodexSetup {
    sandbox_mode: &'static str,
    prompt: String,
    warnings: Vec<String>,
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
    let prompt = format!(
        "Memory rules for role `{role}`:\n\
         - Reach memory only through the `alp` command the runtime provides; it acts as role `{role}`. Never pass \
         another role to it.\n\
         - Never read, list, search or copy files under `{root}` with your own tools: not with cat, grep, rg, find, \
         ls, editors or scripts.\n\
         - Never read another role's private memory. Everything under `{root}/private/` other than \
         `{root}/private/{role}/` belongs to other roles; if you need a fact that lives there, ask for it to be \
         shared through shared or project memory.\n\
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
    Ok(CodexSetup { sandbox_mode: "workspace-write", prompt, warnings })
}
