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
//!
//! Paths use the canonical root in the `//` absolute form: in Claude Code settings a single leading `/` is relative
//! to the settings file.

use std::path::{Component, Path};

use memory_policy::Role;
use serde::Serialize;

/// Said by both adapters: deny lists do not bind interactive sessions.
pub const INTERACTIVE_NOTE: &str = "interactive sessions ignore deny lists on both Claude Code and Codex: \
these fences hold only for agents the runtime starts non-interactively";

/// Why fence settings cannot be written for a root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot write runtime settings for memory root `{root}`: {reason}")]
pub struct AdapterError {
    root: String,
    reason: &'static str,
}

/// The `//`-absolute form of a canonical root, refusing what a settings rule cannot express exactly.
fn rule_root(canonical_root: &Path) -> Result<String, AdapterError> {
    let shown = canonical_root.display().to_string();
    let fail = |reason| Err(AdapterError { root: shown.clone(), reason });
    if !canonical_root.is_absolute() || canonical_root.components().any(|c| matches!(c, Component::ParentDir))
    {
        return fail("it is not a canonical absolute path");
    }
    let Some(text) = canonical_root.to_str() else {
        return fail("it is not valid UTF-8");
    };
    if text
        .chars()
        .any(|c| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '(' | ')' | '\\') || c.is_control())
    {
        return fail("it holds a character that permission rules treat as a pattern");
    }
    Ok(format!("/{}", text.trim_end_matches('/')))
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
/// `Edit(//<root>/**)` (every write goes through the service), and the same private directories in
/// `sandbox.filesystem.denyRead`. `roles` may hold `role` itself and duplicates; they are skipped.
///
/// # Errors
///
/// [`AdapterError`] when the root is not a canonical absolute UTF-8 path free of pattern characters.
///
/// ```
/// use std::path::Path;
/// use alp_memory::adapter::claude_settings;
/// use alp_memory::memory_policy::Role;
///
/// let roles = [Role::parse("main").unwrap(), Role::parse("worker").unwrap()];
/// let settings = claude_settings(Path::new("/srv/memory"), &roles[1], &roles).unwrap();
/// assert_eq!(settings.deny(), ["Read(//srv/memory/private/main/**)", "Edit(//srv/memory/**)"]);
/// assert_eq!(settings.deny_read(), ["//srv/memory/private/main"]);
/// ```
pub fn claude_settings(
    canonical_root: &Path,
    role: &Role,
    roles: &[Role],
) -> Result<ClaudeSettings, AdapterError> {
    let root = rule_root(canonical_root)?;
    let mut others: Vec<&Role> = roles.iter().filter(|r| *r != role).collect();
    others.sort();
    others.dedup();
    let private_dirs: Vec<String> = others.iter().map(|r| format!("{root}/private/{r}")).collect();
    let mut deny: Vec<String> = private_dirs.iter().map(|dir| format!("Read({dir}/**)")).collect();
    deny.push(format!("Edit({root}/**)"));
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

/// The Codex setup for an agent running as `role`, started in `workspace` (the current directory).
///
/// # Errors
///
/// [`AdapterError`] as for [`claude_settings`].
pub fn codex_setup(canonical_root: &Path, role: &Role, workspace: &Path) -> Result<CodexSetup, AdapterError> {
    rule_root(canonical_root)?;
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
    warnings.push(format!("keep `{root}` out of sandbox_workspace_write.writable_roots"));
    warnings.push(INTERACTIVE_NOTE.to_owned());
    Ok(CodexSetup { sandbox_mode: "workspace-write", prompt, warnings })
}
