//! Which places are fenced: the roles whose private memory another role must not read, the paths a rule can state exactly, and the warnings about the agents directory.

use std::path::{Component, Path};

use memory_policy::{DEFINITION_EXTENSION, Role};

use super::*;

/// The `//`-absolute form of a canonical directory, refusing what a settings rule cannot express exactly.
pub(super) fn rule_path(canonical: &Path) -> Result<String, AdapterError> {
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

/// What an agent must not read, relative to the root, and whether each is a directory: the store's layout
/// (`memory_markdown::layout::fenced_places`), so a place added there is fenced here.
#[cfg(target_os = "linux")]
pub(super) fn fenced_places(others: &[&Role]) -> Result<Vec<(String, bool)>, AdapterError> {
    memory_markdown::layout::fenced_places(others.iter().map(|r| r.as_str()))
        .iter()
        .map(|place| Ok((relative_text(place.path())?, place.is_directory())))
        .collect()
}

/// The Markdown store, whose layout decides what to fence, runs on Linux only.
#[cfg(not(target_os = "linux"))]
pub(super) fn fenced_places(_others: &[&Role]) -> Result<Vec<(String, bool)>, AdapterError> {
    Err(AdapterError::Path { path: String::new(), reason: "a memory root is kept on Linux only" })
}

/// A path of the layout, relative to the root, as text (`/`-separated UTF-8).
#[cfg(target_os = "linux")]
pub(super) fn relative_text(path: &Path) -> Result<String, AdapterError> {
    path.to_str().map(str::to_owned).ok_or_else(|| AdapterError::Path {
        path: path.display().to_string(),
        reason: "it is not valid UTF-8",
    })
}
