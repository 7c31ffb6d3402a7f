//! The command line of `alp` (`docs/CLI.md`).
//!
//! `--root`, `--store`, `--agents` and `--as` choose who acts and where, so they stand before the subcommand only:
//! clap knows them on the top-level command alone, so after the subcommand (`alp memory search --as=main`, or
//! `--as=main` as a search term) they are unknown arguments, a `USAGE` error, and given twice they are a `USAGE`
//! error too. `--json` only shapes the output and may stand anywhere. Agent-supplied values go after `--`.

use std::path::PathBuf;

use alp_memory::memory_audit::{Door, ExpectedHead, Outcome};
use alp_memory::memory_entry::{
    FieldName, FieldValue, Importance, Kind, MAX_SAFE_INTEGER, MemoryType, Timestamp, Ttl,
};
use alp_memory::memory_store::OnExisting;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// The largest integer accepted anywhere on the command line: 2^53 − 1, so that every integer printed in JSON is
/// one JavaScript runtimes read exactly.
const MAX_JSON_INT: u64 = MAX_SAFE_INTEGER;

const GLOBAL: &str = "Global options (before the subcommand)";

/// Governed, audited memory for AI agents: every access names a logical ID a policy understands, is authorized
/// before any I/O, and is audited in a hash-chained log.
#[derive(Debug, Parser)]
#[command(
    name = "alp",
    version,
    about,
    disable_help_subcommand = true,
    after_long_help = "Pass agent-supplied values after `--`: alp --as worker memory search -- \"$QUERY\""
)]
pub(crate) struct Cli {
    /// The memory root (default: $ALP_MEMORY_ROOT, else ~/.alp/memory).
    #[arg(long, value_name = "DIR", help_heading = GLOBAL, conflicts_with = "store")]
    pub(crate) root: Option<PathBuf>,
    /// A PostgreSQL database instead of a root: postgres:// or postgresql:// (default: $ALP_MEMORY_STORE). The
    /// password comes from the URL, PGPASSWORD or PGPASSFILE, and is never printed.
    #[arg(long, value_name = "URL", help_heading = GLOBAL)]
    pub(crate) store: Option<String>,
    /// The directory of agent definitions, one ROLE.yaml file per role (default: $ALP_AGENTS_DIR, else
    /// .alp/agents in the current directory).
    #[arg(long, value_name = "DIR", help_heading = GLOBAL)]
    pub(crate) agents: Option<PathBuf>,
    /// The acting role; its grants come from its definition.
    #[arg(long = "as", value_name = "ROLE", help_heading = GLOBAL)]
    pub(crate) role: Option<String>,
    /// Machine output: exactly one JSON document on stdout, errors as JSON on the last line of stderr (anywhere on
    /// the command line).
    #[arg(long, global = true, overrides_with = "json", help_heading = GLOBAL)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

// Every subcommand enum is `defer`: a subcommand's arguments (and those of the commands below it) are built only when
// the command line uses it, or when help, completions or man pages need them all. Built eagerly, the whole tree was
// the largest part of every start (about 40 page faults and 0.5 ms of a one-shot `alp --version`).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum Command {
    /// Create, read, update, delete, search and maintain memory entries.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Show, list, add and remove agent definitions, and change their grants.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Read, check and archive the audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Print the settings that fence the memory root for an agent runtime.
    #[command(subcommand)]
    Adapter(AdapterCommand),
    /// Operator commands on a whole store (no role, no policy).
    #[command(subcommand)]
    Store(StoreCommand),
    /// Create a memory root, its config.yaml and agent definitions.
    #[command(
        after_long_help = "Example:\n  alp --root ~/team/memory --agents ~/team/agents init --role main --role worker"
    )]
    Init {
        /// A role to define, reading and writing shared memory, every project and its own private memory.
        /// Repeatable.
        #[arg(long = "role", value_name = "ROLE")]
        roles: Vec<String>,
    },
    /// Serve memory to an agent over MCP (stdin and stdout), as the role given by --as.
    ///
    /// No tool argument changes the role: runtimes start this with the role of their agent, and `alp adapter mcp
    /// ROLE` prints their configuration.
    #[command(
        after_long_help = "Example (what a runtime runs):\n  alp --root /srv/memory --agents /srv/agents --as worker mcp"
    )]
    Mcp,
    /// Serve memory over MCP's Streamable HTTP transport: each request acts as the role of its bearer token.
    ///
    /// An operator command: no --as. Tokens come from `alp token create`; agents reach the server with
    /// `alp adapter mcp ROLE --url URL`.
    #[command(
        after_long_help = "Example:\n  alp --root /srv/memory --agents /srv/agents --json serve --listen 127.0.0.1:7707"
    )]
    Serve {
        /// Where to listen: HOST:PORT or [V6]:PORT (port 0: a free port; not loopback only with --tls-cert), or
        /// unix:PATH (a socket made 0660). Repeatable; default 127.0.0.1:7707.
        #[arg(long = "listen", value_name = "ADDR")]
        listen: Vec<String>,
        /// A host name accepted in Host and Origin headers besides the listen addresses, localhost and loopback.
        /// Repeatable.
        #[arg(long = "allowed-host", value_name = "HOST")]
        allowed_hosts: Vec<String>,
        /// At most this many tool calls run at once; a call waits up to 5 s for a slot, then gets 503.
        #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
        max_concurrency: u32,
        /// At most this many connections are open at once; past it, new connections wait in the listen backlog
        /// (nothing of theirs is read until one closes).
        #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
        max_connections: u32,
        /// Serve TLS on every TCP listener with this PEM certificate chain (needs --tls-key).
        #[arg(long, value_name = "PEM", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, value_name = "PEM", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// Seconds a connection may wait for its next request (hidden: the tests shorten it; 60 by default).
        #[arg(long, hide = true, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=3600))]
        idle_timeout: u32,
        #[command(flatten)]
        oauth: OAuthArgs,
    },
    /// Serve a read-only web page over the root or database for the operator: an overview, the grants matrix,
    /// entries with their history and who received each version, and the audit trail (no --as).
    ///
    /// Listens on loopback only, at a URL holding a random key, printed once (`{"url"}` with --json); a request
    /// without the key is refused with 403. The pages need no script and fetch nothing from elsewhere. Each page
    /// that reads memory writes one audit record (actor "", door `list` or `history`); nothing else is written.
    /// Stops on SIGINT or SIGTERM.
    #[command(
        after_long_help = "Examples:\n  alp --root ~/team/memory inspect\n  alp --store postgresql://alp@db.internal/alp --json inspect --listen 127.0.0.1:7708"
    )]
    Inspect {
        /// Where to listen: a loopback HOST:PORT or [V6]:PORT (port 0: a free port). Default 127.0.0.1:0.
        #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:0")]
        listen: String,
    },
    /// Create, list, revoke and rotate the bearer tokens of `alp serve` (operator commands: no --as).
    #[command(subcommand)]
    Token(TokenCommand),
    /// Print a shell completion script.
    #[command(
        after_long_help = "Example:\n  alp completions bash > ~/.local/share/bash-completion/completions/alp"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum MemoryCommand {
    /// Create an entry (never overwrites).
    #[command(
        after_long_help = "Example:\n  alp --as worker memory create project:alp:log:2026-11 --kind log --content \"Migrated the store.\""
    )]
    Create {
        /// The logical ID.
        id: String,
        #[command(flatten)]
        fields: FieldArgs,
        #[command(flatten)]
        content: ContentArgs,
    },
    /// Read one entry, or one kept version of it.
    #[command(
        after_long_help = "Examples:\n  alp --as worker memory get project:alp:goals\n  alp --as worker memory get project:alp:goals --version 2"
    )]
    Get {
        /// The logical ID.
        id: String,
        /// A kept version instead of the current entry (expired and deleted entries too).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_JSON_INT))]
        version: Option<u64>,
    },
    /// List the kept versions of an entry, newest first (deleted and expired entries too).
    #[command(after_long_help = "Example:\n  alp --as worker memory history project:alp:goals --limit 5")]
    History {
        /// The logical ID.
        id: String,
        /// Only the N newest versions.
        #[arg(long, value_name = "N", value_parser = parse_count)]
        limit: Option<usize>,
    },
    /// Write a new version with the content and fields of a kept one (also brings a deleted entry back).
    #[command(
        after_long_help = "Example:\n  alp --as main memory restore project:alp:goals --version 2 --expected-version 5"
    )]
    Restore {
        /// The logical ID.
        id: String,
        /// The kept version to restore.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_JSON_INT))]
        version: u64,
        /// The version the entry is at (its tombstone's, when it is deleted); a different one is a conflict.
        #[arg(long, value_name = "M", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
        expected_version: u64,
    },
    /// Erase the content of one kept version from the store (an operator command: no --as).
    #[command(
        after_long_help = "Example:\n  alp --root ~/team/memory memory redact private:worker:notes --version 3"
    )]
    Redact {
        /// The logical ID.
        id: String,
        /// The version whose content goes; not the current one (update the entry first).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_JSON_INT))]
        version: u64,
    },
    /// Change the given fields of an entry at the expected version.
    #[command(
        after_long_help = "Example:\n  alp --as main memory update project:alp:goals --expected-version 1 --content \"Ship it.\""
    )]
    Update {
        /// The logical ID.
        id: String,
        /// The version you read; a different stored version is a conflict.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
        expected_version: u64,
        #[command(flatten)]
        fields: FieldArgs,
        #[command(flatten)]
        content: ContentArgs,
        /// Remove an optional field (kind and importance return to their defaults). Repeatable.
        #[arg(long, value_name = "FIELD", value_parser = parse_clear)]
        clear: Vec<FieldName>,
    },
    /// Delete an entry at the expected version.
    #[command(
        after_long_help = "Example:\n  alp --as main memory delete project:alp:goals --expected-version 2"
    )]
    Delete {
        /// The logical ID.
        id: String,
        /// The version you read.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
        expected_version: u64,
    },
    /// Search what the role may read, ranked deterministically.
    #[command(after_long_help = "Example:\n  alp --as worker memory search --limit 5 -- postgres migration")]
    Search {
        /// Query terms; an entry's score is how many of them it contains.
        terms: Vec<String>,
        /// Only this subtree.
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
        /// At most N results (at most 1000, the default).
        #[arg(long, value_name = "N", value_parser = parse_count)]
        limit: Option<usize>,
    },
    /// List what the role may read, by ID (a search without terms).
    #[command(after_long_help = "Example:\n  alp --as worker memory list project:alp --type decision")]
    List {
        /// Only this subtree.
        prefix: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
        /// At most N entries (at most 1000, the default).
        #[arg(long, value_name = "N", value_parser = parse_count)]
        limit: Option<usize>,
        /// Only entries whose ID sorts after ID: the last of the previous page, when the answer said `more`.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
    },
    /// Build context for an agent under a character budget.
    #[command(
        after_long_help = "Example:\n  alp --as worker memory context database --budget 1200 --task task-db-setup"
    )]
    Context {
        /// Query terms.
        terms: Vec<String>,
        /// The character budget.
        #[arg(long, value_name = "N", value_parser = parse_count)]
        budget: usize,
        /// Only this subtree.
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
        /// Plan for this task (task, feature, unscoped and critical entries).
        #[arg(long, value_name = "T")]
        task: Option<String>,
        /// The task's feature, or plan for this feature alone.
        #[arg(long, value_name = "F")]
        feature: Option<String>,
    },
    /// Delete expired entries the role may write.
    #[command(after_long_help = "Example:\n  alp --as main memory prune --prefix project:alp")]
    Prune {
        /// Only this subtree.
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
    },
    /// Import an ALP 80 `.alp` memory file into a project.
    #[command(
        after_long_help = "Example:\n  alp --as main memory import .alp/memory.alp --project alp --on-existing update"
    )]
    Import {
        /// The `.alp` file.
        file: PathBuf,
        /// The project the entries go to (`project:<P>:<id>`).
        #[arg(long, value_name = "P")]
        project: String,
        /// What to do with an entry that exists: fail (import nothing), skip it, or update it when it differs.
        #[arg(long, value_name = "MODE", value_enum, default_value_t = OnExistingArg::Fail)]
        on_existing: OnExistingArg,
    },
    /// Export a project's typed entries as an ALP 80 `.alp` memory file.
    #[command(after_long_help = "Example:\n  alp --as main memory export --project alp --output alp.alp")]
    Export {
        /// The project.
        #[arg(long, value_name = "P")]
        project: String,
        /// Write the file here instead of printing it.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// `--on-existing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnExistingArg {
    /// Refuse the whole import.
    Fail,
    /// Leave existing entries untouched.
    Skip,
    /// Update existing entries whose value or fields differ.
    Update,
}

impl From<OnExistingArg> for OnExisting {
    fn from(arg: OnExistingArg) -> OnExisting {
        match arg {
            OnExistingArg::Fail => OnExisting::Fail,
            OnExistingArg::Skip => OnExisting::Skip,
            OnExistingArg::Update => OnExisting::Update,
        }
    }
}

// The optional entry fields of create and update, passed to the service as given (it validates them after the
// policy allowed the call).
//
// Not a doc comment, here or on the other flattened argument structs: clap makes a flattened struct's doc comment
// the `about` of the subcommand, and with the subcommand's arguments built only when it is used (`defer`), that
// would replace the subcommand's own help line.
#[derive(Debug, Args)]
pub(crate) struct FieldArgs {
    /// One of: fact, decision, reference (the default), log, draft.
    #[arg(long, value_name = "K")]
    pub(crate) kind: Option<String>,
    /// One of: project, architecture, feature, task, decision, error, agent, knowledge, conversation, context.
    #[arg(long = "type", value_name = "T")]
    pub(crate) memory_type: Option<String>,
    /// Lookup key, unique within (type, scope).
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// One of: critical, high, medium (the default), low.
    #[arg(long, value_name = "I")]
    pub(crate) importance: Option<String>,
    /// What created the entry.
    #[arg(long, value_name = "S")]
    pub(crate) source: Option<String>,
    /// The feature or task the entry is scoped to.
    #[arg(long, value_name = "REF")]
    pub(crate) scope: Option<String>,
    /// Time to live: a positive integer and s, m, h, d or w (90d).
    #[arg(long, value_name = "D")]
    pub(crate) ttl: Option<String>,
}

impl FieldArgs {
    /// The fields given, by name, as text: the one mapping from flags to the model.
    pub(crate) fn input(&self) -> alp_memory::FieldInput {
        let mut input = alp_memory::FieldInput::new();
        for (name, text) in [
            (FieldName::Kind, &self.kind),
            (FieldName::Type, &self.memory_type),
            (FieldName::Key, &self.key),
            (FieldName::Importance, &self.importance),
            (FieldName::Source, &self.source),
            (FieldName::Scope, &self.scope),
            (FieldName::Ttl, &self.ttl),
        ] {
            if let Some(text) = text {
                input.push(name, text.clone());
            }
        }
        input
    }
}

#[derive(Debug, Args)]
pub(crate) struct ContentArgs {
    /// The content.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub(crate) content: Option<String>,
    /// Read the content from a file (`-` for stdin).
    #[arg(long, value_name = "PATH")]
    pub(crate) file: Option<PathBuf>,
}

// Search filters; a malformed value is a usage error.
#[derive(Debug, Args)]
pub(crate) struct FilterArgs {
    /// Only this kind (fact, decision, reference, log, draft).
    #[arg(long, value_name = "K", value_parser = parse_kind)]
    pub(crate) kind: Option<Kind>,
    /// Only this type (project, architecture, feature, task, decision, error, agent, knowledge, conversation,
    /// context).
    #[arg(long = "type", value_name = "T", value_parser = parse_type)]
    pub(crate) memory_type: Option<MemoryType>,
    /// Only this importance (critical, high, medium, low).
    #[arg(long, value_name = "I", value_parser = parse_importance)]
    pub(crate) importance: Option<Importance>,
    /// Only this key.
    #[arg(long, value_name = "K", value_parser = parse_key)]
    pub(crate) key: Option<FieldValue>,
    /// Only this source.
    #[arg(long, value_name = "S", value_parser = parse_source)]
    pub(crate) source: Option<FieldValue>,
    /// Only this scope reference.
    #[arg(long, value_name = "REF", value_parser = parse_scope)]
    pub(crate) scope: Option<FieldValue>,
}

impl FilterArgs {
    /// The filter: every value given must match.
    pub(crate) fn filter(&self) -> alp_memory::memory_entry::Filter {
        let mut values = Vec::new();
        values.extend(self.kind.map(FieldValue::Kind));
        values.extend(self.memory_type.map(FieldValue::Type));
        values.extend(self.importance.map(FieldValue::Importance));
        values.extend(self.key.clone());
        values.extend(self.source.clone());
        values.extend(self.scope.clone());
        alp_memory::memory_entry::Filter::new(values)
    }
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum AgentCommand {
    /// Show a role's memory grants, and grants that can never take effect.
    #[command(after_long_help = "Example:\n  alp agent show worker")]
    Show {
        /// The role.
        role: String,
    },
    /// List the roles defined in the agents directory.
    #[command(after_long_help = "Example:\n  alp --agents .alp/agents agent list")]
    List,
    /// Define a new role (an operator command: no --as; one audit record).
    ///
    /// Without --read and --write the role gets what `alp init --role ROLE` gives: shared memory, every project and
    /// its own private memory, to read and to write. With either, exactly the grants given. A role that has a
    /// definition is ALREADY_EXISTS; a grant on another role's private memory is refused (it could never take
    /// effect). The definition is written atomically, mode 0600.
    #[command(
        after_long_help = "Examples:\n  alp --root ~/team/memory agent add qa\n  alp --root ~/team/memory agent add auditor --read shared --read \"project:*\" --write private:auditor --reports-to main"
    )]
    Add {
        /// The new role (the file ROLE.yaml in the agents directory).
        role: String,
        /// A read grant (repeatable).
        #[arg(long = "read", value_name = "GRANT")]
        read: Vec<String>,
        /// A write grant (repeatable).
        #[arg(long = "write", value_name = "GRANT")]
        write: Vec<String>,
        /// The role this one reports to (grants no memory access).
        #[arg(long, value_name = "ROLE")]
        reports_to: Option<String>,
    },
    /// Add one grant to a role's definition (an operator command: no --as; one audit record).
    ///
    /// Only the grant list changes: every other key and comment of the file is kept as it was. A grant the role
    /// holds already changes nothing and writes no record. A running `alp serve` or `alp mcp` applies it at its
    /// next call.
    #[command(
        after_long_help = "Examples:\n  alp --root ~/team/memory agent grant qa --write shared:qa\n  alp --root ~/team/memory agent grant worker --read \"project:alp\""
    )]
    Grant {
        /// The role.
        role: String,
        #[command(flatten)]
        grant: OneGrant,
    },
    /// Remove one grant from a role's definition (an operator command: no --as; one audit record).
    ///
    /// Only the grant list changes, as with `agent grant`. A grant the file does not hold changes nothing, writes
    /// no record and exits 0.
    #[command(after_long_help = "Example:\n  alp --root ~/team/memory agent revoke qa --write shared:qa")]
    Revoke {
        /// The role.
        role: String,
        #[command(flatten)]
        grant: OneGrant,
    },
    /// Remove a role's definition (an operator command: no --as; one audit record listing the grants it had).
    ///
    /// Its memory stays; its tokens are refused from their next request on (revoke them too).
    #[command(after_long_help = "Example:\n  alp --root ~/team/memory agent remove qa")]
    Remove {
        /// The role.
        role: String,
    },
}

// `--read GRANT` or `--write GRANT`: exactly one. (A doc comment here would replace the help of the commands that
// flatten it.)
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct OneGrant {
    /// A read grant.
    #[arg(long, value_name = "GRANT")]
    pub(crate) read: Option<String>,
    /// A write grant.
    #[arg(long, value_name = "GRANT")]
    pub(crate) write: Option<String>,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum AuditCommand {
    /// Walk the hash chain of the audit log and report where it first breaks.
    #[command(
        after_long_help = "Examples:\n  alp audit verify --expect \"$(alp audit head)\"\n  alp audit verify --from \"$(cat /secure/audit-head)\"\n  alp audit verify --file /backup/audit/audit-1-9000.jsonl"
    )]
    Verify {
        /// Also fail unless the record at SEQ has HASH (as `alp audit head` printed it): detects records cut from
        /// the end. `0:<64 zeros>` names the empty log.
        #[arg(long, value_name = "SEQ:HASH", value_parser = parse_expect)]
        expect: Option<ExpectedHead>,
        /// Also fail unless the log continues from the record SEQ with HASH: the last record of the archive before
        /// it, or a head kept before it was archived.
        #[arg(long, value_name = "SEQ:HASH", value_parser = parse_anchor)]
        from: Option<ExpectedHead>,
        /// Verify a saved log or an archive instead of the root's (it must exist).
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
    /// Print the sequence number and hash of the last record, to keep where the log's writers cannot change it.
    #[command(after_long_help = "Example:\n  alp audit head > /secure/audit-head")]
    Head,
    /// Print the records that match, as stored (one JSON object per line), or as a table on a terminal.
    ///
    /// Piped, redirected or with --json: the matching records exactly as stored, one per line. On a terminal: a
    /// table, newest last, of the last 50 matching records unless --tail or --limit says otherwise. Filters combine
    /// with AND.
    ///
    /// Each record is the authorization outcome of one call: `allowed` means the policy let the call through, not
    /// that it succeeded. A write's record is written before the store is touched (an update that loses a race is
    /// recorded `allowed`, then fails with VERSION_CONFLICT and changes nothing); an allowed read's after the read
    /// and before the answer, naming in `shown` what the answer disclosed.
    #[command(
        after_long_help = "Examples:\n  alp audit show --since 100 --limit 20\n  alp audit show --actor worker --door context --from 2h\n  alp audit show --disclosed project:alp:goals --archive /backup/audit"
    )]
    Show(ShowArgs),
    /// Say which roles received an entry: when, which versions, through which tokens.
    #[command(
        after_long_help = "Examples:\n  alp audit disclosed private:main:plans\n  alp --json audit disclosed shared:team:db --archive /backup/audit"
    )]
    Disclosed {
        /// The entry's ID.
        id: String,
        /// Read the archive segments in DIR (written by `alp audit archive`) before the live log.
        #[arg(long, value_name = "DIR")]
        archive: Option<PathBuf>,
    },
    /// Move the oldest records into an archive file outside the root, keeping the chain checkable (an operator
    /// command: no --as).
    ///
    /// The records before SEQ (by default all but the last) go to DIR/audit-<first>-<last>.jsonl (mode 0400),
    /// written and synced before they leave the live log; the live log then continues from the last of them and
    /// records the archive. DIR is created (mode 0700) when missing; it must lie outside the memory root.
    #[command(after_long_help = "Example:\n  alp audit archive --to /backup/audit --before 9001")]
    Archive {
        /// The archive directory (outside the memory root; created, mode 0700, when missing).
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
        /// Archive the records with seq < SEQ (at least 2, at most one past the last record).
        #[arg(long, value_name = "SEQ", value_parser = parse_before)]
        before: Option<u64>,
    },
}

// The filters of `alp audit show`, combined with AND. (Not a doc comment: see `FieldArgs`.)
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// Only the last N matching records (on a terminal, 50 unless --limit is given).
    #[arg(long, value_name = "N", value_parser = parse_tail, conflicts_with = "limit")]
    pub(crate) tail: Option<u64>,
    /// Only records with seq ≥ SEQ.
    #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
    pub(crate) since: Option<u64>,
    /// Only the first N matching records.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
    pub(crate) limit: Option<u64>,
    /// Only records at or after T: an RFC 3339 time, or a duration back from now (30m, 2h, 90d).
    #[arg(long, value_name = "T", value_parser = parse_time_bound)]
    pub(crate) from: Option<TimeBound>,
    /// Only records at or before T: an RFC 3339 time, or a duration back from now.
    #[arg(long, value_name = "T", value_parser = parse_time_bound)]
    pub(crate) to: Option<TimeBound>,
    /// Only records of this role (`""` for operator commands).
    #[arg(long, value_name = "ROLE")]
    pub(crate) actor: Option<String>,
    /// Only records of this door (search, get, create, update, delete, context, list, history, restore, export,
    /// import, prune, view, redact, token-create, token-revoke, archive, agent-add, agent-grant, agent-revoke,
    /// agent-remove).
    #[arg(long, value_name = "DOOR", value_parser = parse_door)]
    pub(crate) door: Option<Door>,
    /// Only records with this outcome (allowed, denied, error).
    #[arg(long, value_name = "OUTCOME", value_parser = parse_outcome)]
    pub(crate) outcome: Option<Outcome>,
    /// Only records with this deny or error code (MEMORY_NOT_GRANTED, INVALID_MEMORY_ID, …).
    #[arg(long, value_name = "CODE", value_parser = parse_code)]
    pub(crate) code: Option<String>,
    /// Only records of calls made with this bearer token (its ID, as `alp token list` shows it).
    #[arg(long, value_name = "TOKEN_ID")]
    pub(crate) via: Option<String>,
    /// Only records whose ID lies under PREFIX, segment by segment (`project:a` holds `project:a:x`, not
    /// `project:ab`).
    #[arg(long, value_name = "PREFIX")]
    pub(crate) id: Option<String>,
    /// Only records of calls that returned the entry ID (any version).
    #[arg(long, value_name = "ID")]
    pub(crate) disclosed: Option<String>,
    /// Read the archive segments in DIR (written by `alp audit archive`) before the live log.
    #[arg(long, value_name = "DIR")]
    pub(crate) archive: Option<PathBuf>,
    /// On a terminal, list the entries each call returned instead of counting them.
    #[arg(long)]
    pub(crate) wide: bool,
}

/// A bound of `alp audit show --from/--to`: an instant, or a duration back from the time the command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeBound {
    /// An RFC 3339 time.
    At(Timestamp),
    /// That long before now.
    Ago(Ttl),
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum StoreCommand {
    /// Copy every entry (versions and timestamps kept), its history, the tokens and the audit log into an empty
    /// store, then verify the copied chain.
    #[command(
        after_long_help = "Examples:\n  alp --root ~/team/memory store copy --to postgresql://alp@db.internal/alp\n  alp --store postgresql://alp@db.internal/alp store copy --to ~/team/memory-backup"
    )]
    Copy {
        /// The target: a postgres:// or postgresql:// URL, or a directory that is missing or empty.
        #[arg(long, value_name = "URL|DIR")]
        to: String,
    },
    /// Upgrade an older PostgreSQL schema in place to the one this alp reads (a Markdown root, or a schema already
    /// current, is left as it is).
    #[command(after_long_help = "Example:\n  alp --store postgresql://alp@db.internal/alp store migrate")]
    Migrate,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum TokenCommand {
    /// Make a token bound to one role; prints it once (the only output that ever holds its secret).
    ///
    /// Without --json only the token goes to stdout (a note for people goes to stderr), so
    /// `TOKEN=$(alp token create --role worker)` captures exactly it.
    #[command(
        after_long_help = "Examples:\n  alp token create --role worker --name laptop --expires 30d\n  TOKEN=$(alp token create --role worker --name ci)"
    )]
    Create {
        /// The role the token acts as (it must have a definition).
        #[arg(long)]
        role: String,
        /// A name for people, unique among unrevoked tokens; `token revoke` and `token rotate` take it as they
        /// take the ID.
        #[arg(long)]
        name: Option<String>,
        /// How long it lives: a duration (90d, 12h, …) or `never`.
        #[arg(long, default_value = alp_memory::token::DEFAULT_EXPIRES)]
        expires: String,
    },
    /// List the tokens (no secrets, no hashes), oldest first.
    List,
    /// Revoke a token: refused from its next request on.
    #[command(after_long_help = "Examples:\n  alp token revoke 0123456789ab\n  alp token revoke laptop")]
    Revoke {
        /// The token's ID (12 hex digits, as `alp token list` shows) or its name.
        token: String,
    },
    /// Replace a token: a new one with the same role, name and lifetime, and the old one revoked.
    ///
    /// Prints the new token as `token create` does (only the token on stdout without --json), so
    /// `TOKEN=$(alp token rotate laptop)` captures it.
    #[command(after_long_help = "Example:\n  TOKEN=$(alp token rotate laptop)")]
    Rotate {
        /// The token's ID or its name.
        token: String,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub(crate) enum AdapterCommand {
    /// Claude Code settings: deny other roles' private memory and direct edits of the root and the definitions.
    #[command(after_long_help = "Example:\n  alp adapter claude worker > worker-settings.json")]
    Claude {
        /// The role the agent runs as.
        role: String,
        /// The agent reaches memory only through the MCP server: deny reading and editing the whole root.
        #[arg(long)]
        via_mcp: bool,
    },
    /// Codex: the prompt rule and sandbox mode that keep the root unwritable.
    #[command(after_long_help = "Example:\n  alp adapter codex worker")]
    Codex {
        /// The role the agent runs as.
        role: String,
        /// The agent reaches memory only through the MCP server: the prompt names its tools, and the output adds
        /// the `[mcp_servers.alp-memory]` table for config.toml.
        #[arg(long)]
        via_mcp: bool,
    },
    /// How a runtime starts the MCP server of a role (an MCP client's server entry, or Codex's config.toml table).
    ///
    /// The JSON document is the server entry of Claude Code and other MCP clients; `--format toml` prints the
    /// `[mcp_servers.alp-memory]` table of Codex's `config.toml`. Register the server at user scope (the note on
    /// stderr gives the command), never in the agent's workspace: the server's command line fixes the role, so an
    /// agent that can edit it can act as another role.
    #[command(
        after_long_help = "Examples:\n  alp adapter mcp worker                   # stderr names: claude mcp add --scope user alp-memory -- …\n  alp adapter mcp worker --format toml >> ~/.codex/config.toml"
    )]
    Mcp {
        /// The role the server acts as.
        role: String,
        /// `json`: the server entry (`mcpServers`); `toml`: the `[mcp_servers.alp-memory]` table.
        #[arg(long, value_enum, default_value_t = McpFormat::Json)]
        format: McpFormat,
        /// The URL of an `alp serve` endpoint (http or https): print the HTTP entry, whose token comes from the
        /// runtime's ALP_MEMORY_TOKEN variable, instead of the command that starts a stdio server.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
}

/// `alp adapter mcp --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum McpFormat {
    /// The server entry as JSON (`{"mcpServers":{"alp-memory":{…}}}`).
    Json,
    /// The Codex `config.toml` table.
    Toml,
}

fn parse_expect(text: &str) -> Result<ExpectedHead, String> {
    ExpectedHead::parse(text).ok_or_else(|| {
        format!("`{text}` is not SEQ:HASH (a record number, a colon and 64 lowercase hex digits)")
    })
}

/// `--from SEQ:HASH` of `alp audit verify`: the same form as `--expect`.
fn parse_anchor(text: &str) -> Result<ExpectedHead, String> {
    parse_expect(text)
}

/// `--tail N`: at least one record.
fn parse_tail(text: &str) -> Result<u64, String> {
    let count = parse_count(text)?;
    if count == 0 {
        return Err("`0` would show nothing; --tail takes a number of records of at least 1".to_owned());
    }
    Ok(count as u64)
}

/// `--before SEQ` of `alp audit archive`: no record lies before seq 1, so at least 2.
fn parse_before(text: &str) -> Result<u64, String> {
    let seq = parse_count(text)? as u64;
    if seq < 2 {
        return Err(format!(
            "no record lies before seq {seq}: nothing to archive; --before takes a seq of at least 2"
        ));
    }
    Ok(seq)
}

/// `--from` and `--to` of `alp audit show`: an RFC 3339 time, or a duration back from now (`2h`, `90d`).
pub(crate) fn parse_time_bound(text: &str) -> Result<TimeBound, String> {
    if let Ok(ttl) = Ttl::parse(text) {
        return Ok(TimeBound::Ago(ttl));
    }
    Timestamp::parse(text).map(TimeBound::At).map_err(|_| {
        format!(
            "`{text}` is neither an RFC 3339 time (2026-11-29T22:33:13Z) nor a duration back from now (a positive \
             integer and one of s, m, h, d, w: 2h, 90d)"
        )
    })
}

/// `--door`: a word the log writes.
pub(crate) fn parse_door(text: &str) -> Result<Door, String> {
    Door::parse(text).ok_or_else(|| {
        let doors: Vec<&str> = Door::ALL.iter().map(|door| door.as_str()).collect();
        format!("`{text}` is not a door; one of {}", doors.join(", "))
    })
}

/// `--outcome`: allowed, denied or error.
pub(crate) fn parse_outcome(text: &str) -> Result<Outcome, String> {
    Outcome::ALL.into_iter().find(|outcome| outcome.as_str() == text).ok_or_else(|| {
        let outcomes: Vec<&str> = Outcome::ALL.iter().map(|outcome| outcome.as_str()).collect();
        format!("`{text}` is not an outcome; one of {}", outcomes.join(", "))
    })
}

/// `--code`: a code as records write it, capital letters and underscores (`MEMORY_NOT_GRANTED`).
pub(crate) fn parse_code(text: &str) -> Result<String, String> {
    let word = text.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && text.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    if !word {
        return Err(format!(
            "`{text}` is not a code; codes are written in capitals, e.g. MEMORY_NOT_GRANTED, PRIVATE_MEMORY_DENIED, \
             INVALID_MEMORY_ID"
        ));
    }
    Ok(text.to_owned())
}

/// A count (`--limit`, `--budget`): a decimal integer of at most 2^53 − 1.
fn parse_count(text: &str) -> Result<usize, String> {
    let value: u64 = text.parse().map_err(|_| format!("`{text}` is not a non-negative integer"))?;
    if value > MAX_JSON_INT {
        return Err(format!(
            "`{text}` is larger than {MAX_JSON_INT}, the largest integer JSON readers keep exact"
        ));
    }
    usize::try_from(value).map_err(|_| format!("`{text}` is too large for this machine"))
}

/// A filter value's bound, checked before its parser (the bound is the reason given for a value over it).
fn bounded(name: &str, text: &str) -> Result<(), String> {
    alp_memory::check_filter(name, text).map_err(|e| e.to_string())
}

fn parse_kind(text: &str) -> Result<Kind, String> {
    bounded("--kind", text)?;
    text.parse().map_err(|e: alp_memory::memory_entry::InvalidFieldError| e.to_string())
}

fn parse_type(text: &str) -> Result<MemoryType, String> {
    bounded("--type", text)?;
    text.parse().map_err(|e: alp_memory::memory_entry::InvalidFieldError| e.to_string())
}

fn parse_importance(text: &str) -> Result<Importance, String> {
    bounded("--importance", text)?;
    text.parse().map_err(|e: alp_memory::memory_entry::InvalidFieldError| e.to_string())
}

/// A `--key` filter value.
fn parse_key(text: &str) -> Result<FieldValue, String> {
    parse_value(FieldName::Key, text)
}

/// A `--source` filter value.
fn parse_source(text: &str) -> Result<FieldValue, String> {
    parse_value(FieldName::Source, text)
}

/// A `--scope` filter value.
fn parse_scope(text: &str) -> Result<FieldValue, String> {
    parse_value(FieldName::Scope, text)
}

/// A filter value of the field `name`, within its bound.
fn parse_value(name: FieldName, text: &str) -> Result<FieldValue, String> {
    bounded(&format!("--{name}"), text)?;
    FieldValue::parse(name, text).map_err(|e| e.to_string())
}

fn parse_clear(text: &str) -> Result<FieldName, String> {
    FieldName::parse(text).ok_or_else(|| {
        let names: Vec<&str> = FieldName::ALL.iter().map(|f| f.as_str()).collect();
        format!("`{text}` cannot be cleared; one of {}", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    //! The identity of a call comes from before the subcommand only: whatever an agent manages to put after it.
    use clap::Parser as _;
    use proptest::prelude::*;

    use super::Cli;

    /// Arguments an agent might smuggle in: every spelling of the identity options, values that look like them,
    /// `--`, and plain words.
    fn hostile_argument() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "--as",
                "--as=main",
                "--as=",
                "-as",
                "--as main",
                "--root",
                "--root=/tmp/evil",
                "--agents",
                "--agents=/tmp/evil",
                "--store=postgresql://evil",
                "--json",
                "--",
                "-",
                "main",
                "/tmp/evil",
                "--prefix",
                "private:main",
                "--content",
                "--file",
                "--limit",
                "3",
                "--budget",
                "100",
                "--ROOT",
                "--a",
                "--as\0main",
                "—as=main",
                "--as\u{200b}=main",
                "-h",
            ])
            .prop_map(str::to_owned),
            "[-=a-z:/ ]{0,12}",
            any::<String>(),
        ]
    }

    /// The subcommands whose arguments carry agent-supplied values.
    fn subcommand() -> impl Strategy<Value = Vec<String>> {
        prop::sample::select(vec![
            vec!["memory", "search"],
            vec!["memory", "context", "--budget", "100"],
            vec!["memory", "get", "shared:x"],
            vec!["memory", "create", "shared:x"],
            vec!["memory", "update", "shared:x", "--expected-version", "1"],
            vec!["memory", "list"],
            vec!["audit", "verify"],
            vec!["agent", "show", "worker"],
        ])
        .prop_map(|words| words.into_iter().map(str::to_owned).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// After `alp --root R --agents A --as worker <subcommand>`, any arguments at all either fail to parse or
        /// leave the acting role, the root and the agents directory exactly as given before the subcommand.
        #[test]
        fn the_identity_is_what_stands_before_the_subcommand(
            command in subcommand(),
            tail in prop::collection::vec(hostile_argument(), 0..6),
        ) {
            let mut args: Vec<String> =
                ["alp", "--root", "/srv/memory", "--agents", "/srv/agents", "--as", "worker"]
                    .into_iter().map(str::to_owned).collect();
            args.extend(command);
            args.extend(tail);
            if let Ok(cli) = Cli::try_parse_from(&args) {
                prop_assert_eq!(cli.role.as_deref(), Some("worker"), "{:?}", args);
                prop_assert_eq!(cli.root.as_deref(), Some(std::path::Path::new("/srv/memory")), "{:?}", args);
                prop_assert_eq!(cli.agents.as_deref(), Some(std::path::Path::new("/srv/agents")), "{:?}", args);
            }
        }
    }

    /// Each spelling named in the findings fails to parse.
    #[test]
    fn each_spelling_after_the_subcommand_fails() {
        let base = ["alp", "--as", "worker", "memory"];
        for tail in [
            &["search", "--as=main", "--prefix", "private:main"][..],
            &["search", "--as", "main"],
            &["search", "term", "--as=main"],
            &["create", "shared:x", "--content", "--as=main"],
            &["search", "--root=/tmp/x"],
            &["search", "--agents=/tmp/x"],
            &["context", "x", "--budget", "10", "--root", "/tmp/x"],
        ] {
            let args: Vec<&str> = base.iter().chain(tail).copied().collect();
            assert!(Cli::try_parse_from(&args).is_err(), "{args:?}");
        }
        for twice in [
            &["alp", "--as", "a", "--as", "b", "memory", "search"][..],
            &["alp", "--root", "/a", "--root=/b", "memory", "search"],
            &["alp", "--agents", "/a", "--agents", "/b", "memory", "search"],
        ] {
            assert!(Cli::try_parse_from(twice).is_err(), "{twice:?}");
        }
        let after_dashes =
            Cli::try_parse_from(["alp", "--as", "worker", "memory", "search", "--", "--as=main"]);
        assert_eq!(after_dashes.unwrap().role.as_deref(), Some("worker"));
    }
}

/// The OAuth 2.1 flags of `alp serve`: JWT access tokens of trusted issuers accepted beside alp's own tokens.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OAuthArgs {
    /// Accept OAuth access tokens (JWTs) of this authorization server (an https URL; its keys come from its RFC 8414
    /// or OpenID metadata) and serve the RFC 9728 metadata. Repeatable.
    #[arg(long = "oauth-issuer", value_name = "URL")]
    pub(crate) issuers: Vec<String>,
    /// This server's canonical URI, which a token's `aud` must hold (default: the first listen URL, ending in /mcp).
    #[arg(long, value_name = "URI", requires = "issuers")]
    pub(crate) resource: Option<String>,
    /// The claim of a token that names its role.
    #[arg(long = "oauth-role-claim", value_name = "NAME", default_value = "alp_role")]
    pub(crate) role_claim: String,
    /// The issuer's keys (a JWKS file) instead of fetching them; only with exactly one --oauth-issuer.
    #[arg(long = "oauth-jwks", value_name = "FILE", requires = "issuers")]
    pub(crate) jwks: Option<std::path::PathBuf>,
    /// PEM certificates the HTTPS client trusts when it fetches an issuer's keys, instead of the system's roots.
    #[arg(long = "oauth-ca", value_name = "PEM", requires = "issuers")]
    pub(crate) ca: Option<std::path::PathBuf>,
}
