//! Runtime fences (`docs/RUNTIMES.md`): settings that keep an agent's own file tools away from the memory root, so that
//! memory is reached only through the service.
//!
//! The service is the real boundary; these fences close the side door of direct file access. How far each runtime
//! goes differs, and the output says so:
//! - **Claude Code** has a real ACL for its file tools: [`claude_settings`] denies reading every place that holds
//!   other roles' private content or IDs (their private directories and kept versions, the audit log, token records
//!   and lock files, as the store's layout lists them in `memory_markdown::layout`) and editing anything under the
//!   root, for the file tools (`permissions.deny`) and for sandboxed commands (`sandbox.filesystem.denyRead`).
//! - **Codex** restricts writes only: [`codex_setup`] keeps the root unwritable with the `workspace-write` sandbox
//!   (the root outside the workspace and outside `writable_roots`) and states the read rule in the prompt, naming
//!   the same places, which is all Codex can do about reads.
//! - Interactive sessions ignore deny lists on both runtimes ([`INTERACTIVE_NOTE`]).
//! - The agents directory decides every grant, so it is fenced like the root: Claude's fragment denies editing it,
//!   and both adapters warn when it lies inside the agent's workspace ([`agents_warnings`]).
//! - With the MCP server (`alp --as ROLE mcp`, started by the runtime as [`McpServerCommand`] describes), the agent
//!   needs no file access to memory at all: [`claude_settings_via_mcp`] fences the whole root, and
//!   [`codex_setup_via_mcp`] names the server's tools as the only way to memory and adds its `config.toml` table.
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

/// What an agent must not read, relative to the root, and whether each is a directory: the store's layout
/// (`memory_markdown::layout::fenced_places`), so a place added there is fenced here.
#[cfg(target_os = "linux")]
fn fenced_places(others: &[&Role]) -> Result<Vec<(String, bool)>, AdapterError> {
    memory_markdown::layout::fenced_places(others.iter().map(|r| r.as_str()))
        .iter()
        .map(|place| Ok((relative_text(place.path())?, place.is_directory())))
        .collect()
}

/// The Markdown store, whose layout decides what to fence, runs on Linux only.
#[cfg(not(target_os = "linux"))]
fn fenced_places(_others: &[&Role]) -> Result<Vec<(String, bool)>, AdapterError> {
    Err(AdapterError::Path { path: String::new(), reason: "a memory root is kept on Linux only" })
}

/// A path of the layout, relative to the root, as text (`/`-separated UTF-8).
#[cfg(target_os = "linux")]
fn relative_text(path: &Path) -> Result<String, AdapterError> {
    path.to_str().map(str::to_owned).ok_or_else(|| AdapterError::Path {
        path: path.display().to_string(),
        reason: "it is not valid UTF-8",
    })
}

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

/// The name the MCP server is registered under, in `.mcp.json` and in Codex's `config.toml`.
pub const MCP_SERVER_NAME: &str = "alp-memory";

/// Where the MCP server's memory lives, as its command line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpStore<'a> {
    /// A Markdown root, canonical: `--root <root>`.
    Root(&'a Path),
    /// A PostgreSQL database: `--store <url>`, the URL without its password (the server reads the password from
    /// `PGPASSWORD` or `PGPASSFILE` in its environment).
    Database(&'a str),
}

/// How a runtime starts the MCP server of one role (`docs/RUNTIMES.md`): `alp` with absolute paths, `--as ROLE` and
/// `mcp`, and `ALP_AUDIT_KEY` in its environment when the chain is keyed. The role stands in the runtime's
/// configuration, which the agent cannot change, and no tool of the server takes one.
///
/// ```
/// use std::path::Path;
/// use alp_memory::adapter::{McpServerCommand, McpStore};
/// use alp_memory::memory_policy::Role;
///
/// let worker = Role::parse("worker").unwrap();
/// let server = McpServerCommand::new(
///     Path::new("/usr/local/bin/alp"),
///     McpStore::Root(Path::new("/srv/memory")),
///     Path::new("/srv/agents"),
///     &worker,
/// )
/// .unwrap();
/// assert_eq!(server.args(), ["--root", "/srv/memory", "--agents", "/srv/agents", "--as", "worker", "mcp"]);
/// assert_eq!(
///     server.codex_toml(),
///     "[mcp_servers.alp-memory]\ncommand = \"/usr/local/bin/alp\"\n\
///      args = [\"--root\", \"/srv/memory\", \"--agents\", \"/srv/agents\", \"--as\", \"worker\", \"mcp\"]\n"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerCommand {
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// An absolute path as text, for a command line a runtime stores as JSON or TOML.
fn absolute_text(path: &Path) -> Result<String, AdapterError> {
    let fail = |reason| Err(AdapterError::Path { path: path.display().to_string(), reason });
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return fail("it is not a canonical absolute path");
    }
    match path.to_str() {
        Some(text) => Ok(text.to_owned()),
        None => fail("it is not valid UTF-8"),
    }
}

impl McpServerCommand {
    /// `alp` at `alp`, serving `store` with the definitions in `canonical_agents`, as `role`. Every path must be
    /// absolute (the runtime may start the server anywhere).
    ///
    /// # Errors
    ///
    /// [`AdapterError::Path`] for a path that is not absolute or not UTF-8.
    pub fn new(
        alp: &Path,
        store: McpStore<'_>,
        canonical_agents: &Path,
        role: &Role,
    ) -> Result<McpServerCommand, AdapterError> {
        let mut args = Vec::new();
        match store {
            McpStore::Root(root) => args.extend(["--root".to_owned(), absolute_text(root)?]),
            McpStore::Database(url) => args.extend(["--store".to_owned(), url.to_owned()]),
        }
        args.extend([
            "--agents".to_owned(),
            absolute_text(canonical_agents)?,
            "--as".to_owned(),
            role.as_str().to_owned(),
            "mcp".to_owned(),
        ]);
        Ok(McpServerCommand { command: absolute_text(alp)?, args, env: Vec::new() })
    }

    /// The same command with `name=value` in its environment (`ALP_AUDIT_KEY`).
    #[must_use]
    pub fn with_env(mut self, name: &str, value: &str) -> McpServerCommand {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The program: the absolute path of `alp`.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Its arguments.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Its environment beyond the runtime's own.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The server entry in the `mcpServers` form of Claude Code and other MCP clients (to register at user scope,
    /// [`claude_add`](Self::claude_add), never in a file the agent can edit):
    /// `{"mcpServers":{"alp-memory":{"type":"stdio","command","args":[…],"env":{…}}}}` (`env` only when set).
    pub fn mcp_json(&self) -> serde_json::Value {
        let mut server = serde_json::Map::new();
        server.insert("type".into(), "stdio".into());
        server.insert("command".into(), self.command.clone().into());
        server.insert("args".into(), self.args.clone().into());
        if !self.env.is_empty() {
            let env: serde_json::Map<String, serde_json::Value> =
                self.env.iter().map(|(name, value)| (name.clone(), value.clone().into())).collect();
            server.insert("env".into(), env.into());
        }
        let mut servers = serde_json::Map::new();
        servers.insert(MCP_SERVER_NAME.into(), server.into());
        let mut document = serde_json::Map::new();
        document.insert("mcpServers".into(), servers.into());
        document.into()
    }

    /// The `[mcp_servers.alp-memory]` table of Codex's `config.toml`: `command`, `args` and, when set, `env`.
    pub fn codex_toml(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|arg| toml_string(arg)).collect();
        let mut text = format!(
            "[mcp_servers.{MCP_SERVER_NAME}]\ncommand = {}\nargs = [{}]\n",
            toml_string(&self.command),
            args.join(", ")
        );
        if !self.env.is_empty() {
            let env: Vec<String> = self
                .env
                .iter()
                .map(|(name, value)| format!("{} = {}", toml_string(name), toml_string(value)))
                .collect();
            text.push_str(&format!("env = {{ {} }}\n", env.join(", ")));
        }
        text
    }

    /// The command that registers this server with Claude Code at user scope, outside every workspace, so that no
    /// agent can edit the command line that fixes its role: `claude mcp add --scope user [--env NAME=VALUE]…
    /// alp-memory -- COMMAND ARGS…`, each word quoted for a POSIX shell.
    ///
    /// ```
    /// use std::path::Path;
    /// use alp_memory::adapter::{McpServerCommand, McpStore};
    /// use alp_memory::memory_policy::Role;
    ///
    /// let worker = Role::parse("worker").unwrap();
    /// let root = McpStore::Root(Path::new("/srv/memory"));
    /// let server = McpServerCommand::new(Path::new("/bin/alp"), root, Path::new("/srv/agents"), &worker).unwrap();
    /// assert_eq!(
    ///     server.claude_add(),
    ///     "claude mcp add --scope user alp-memory -- /bin/alp --root /srv/memory --agents /srv/agents --as worker mcp"
    /// );
    /// ```
    pub fn claude_add(&self) -> String {
        format!(
            "claude mcp add --scope user {}{MCP_SERVER_NAME} -- {}",
            self.env_options(),
            self.command_line()
        )
    }

    /// The command that registers this server with Codex, which keeps it in the user's `~/.codex/config.toml`,
    /// outside every workspace: `codex mcp add alp-memory [--env NAME=VALUE]… -- COMMAND ARGS…`, each word quoted
    /// for a POSIX shell.
    pub fn codex_add(&self) -> String {
        format!("codex mcp add {MCP_SERVER_NAME} {}-- {}", self.env_options(), self.command_line())
    }

    fn env_options(&self) -> String {
        self.env
            .iter()
            .map(|(name, value)| format!("--env {} ", shell_word(&format!("{name}={value}"))))
            .collect()
    }

    fn command_line(&self) -> String {
        let words: Vec<String> =
            std::iter::once(&self.command).chain(&self.args).map(|word| shell_word(word)).collect();
        words.join(" ")
    }
}

/// `text` as one word of a POSIX shell command: as it is when it holds only characters no shell treats specially,
/// else in single quotes (a `'` inside written `'\''`). Hand-written: ten lines, where a quoting crate would be a
/// new dependency for one call.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-:=@%+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
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

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn shell_words_are_plain_or_single_quoted() {
        let cases = [
            ("/usr/bin/alp", "/usr/bin/alp"),
            ("postgresql://alp@db:5432/mem", "postgresql://alp@db:5432/mem"),
            ("ALP_AUDIT_KEY=/k", "ALP_AUDIT_KEY=/k"),
            ("postgresql://db/m?sslmode=require", "'postgresql://db/m?sslmode=require'"),
            ("/home/o'neil/mem", "'/home/o'\\''neil/mem'"),
            ("$(rm -rf ~)", "'$(rm -rf ~)'"),
            ("", "''"),
        ];
        for (text, word) in cases {
            assert_eq!(shell_word(text), word, "{text}");
        }
    }
}
