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
//!
//! Layout: `fence.rs` (which places are fenced), `claude.rs`, `codex.rs`, `mcp.rs` (how a runtime starts the MCP
//! server).

mod claude;
mod codex;
mod fence;
mod mcp;

pub use claude::{ClaudeSettings, claude_settings, claude_settings_via_mcp};
pub use codex::{CodexSetup, codex_setup, codex_setup_via_mcp};
pub use fence::{agents_warnings, fenced_roles};
pub use mcp::{MCP_SERVER_NAME, McpServerCommand, McpStore};

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
