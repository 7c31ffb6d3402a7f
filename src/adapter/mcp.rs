//! How a runtime starts `alp --as ROLE mcp`: the command, its arguments and environment, as `.mcp.json`, a Codex table or a shell line.

use std::path::{Component, Path};

use memory_policy::Role;

use super::*;

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
