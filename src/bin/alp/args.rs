//! The command line of `alp` (DESIGN.md §9).
//!
//! `--root`, `--agents` and `--as` choose who acts and where, so they stand before the subcommand only: clap knows
//! them on the top-level command alone, so after the subcommand (`alp memory search --as=main`, or `--as=main` as
//! a search term) they are unknown arguments, a `USAGE` error, and given twice they are a `USAGE` error too.
//! `--json` only shapes the output and may stand anywhere. Agent-supplied values go after `--`.

use std::path::PathBuf;

use alp_memory::ClearField;
use alp_memory::memory_audit::ExpectedHead;
use alp_memory::memory_store::{Importance, Kind, MAX_SAFE_INTEGER, MemoryType};

/// The largest integer accepted anywhere on the command line: 2^53 − 1, so that every integer printed in JSON is
/// one JavaScript runtimes read exactly.
const MAX_JSON_INT: u64 = MAX_SAFE_INTEGER;
use clap::{Args, Parser, Subcommand};

/// Governed, audited memory for AI agents.
#[derive(Debug, Parser)]
#[command(name = "alp", version, about, disable_help_subcommand = true)]
pub(crate) struct Cli {
    /// The memory root (default: $ALP_MEMORY_ROOT, else ~/.alp/memory). Before the subcommand only.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,
    /// The directory of agent definitions, one ROLE.yaml file per role. Before the subcommand only.
    #[arg(long, value_name = "DIR", default_value = ".alp/agents")]
    pub(crate) agents: PathBuf,
    /// The acting role; its grants come from its definition. Before the subcommand only.
    #[arg(long = "as", value_name = "ROLE")]
    pub(crate) role: Option<String>,
    /// Machine output: exactly one JSON document on stdout, errors as JSON on the last line of stderr.
    #[arg(long, global = true, overrides_with = "json")]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing would only obscure the clap derive"
)]
pub(crate) enum Command {
    /// Create, read, update, delete, search and maintain memory entries.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Inspect agent definitions.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Check the audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Print the settings that fence the memory root for an agent runtime.
    #[command(subcommand)]
    Adapter(AdapterCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Create an entry (never overwrites).
    Create {
        /// The logical ID.
        id: String,
        #[command(flatten)]
        fields: FieldArgs,
        #[command(flatten)]
        content: ContentArgs,
    },
    /// Read one entry.
    Get {
        /// The logical ID.
        id: String,
    },
    /// Change the given fields of an entry at the expected version.
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
        clear: Vec<ClearField>,
    },
    /// Delete an entry at the expected version.
    Delete {
        /// The logical ID.
        id: String,
        /// The version you read.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
        expected_version: u64,
    },
    /// Search what the role may read, ranked deterministically.
    Search {
        /// Query terms; an entry's score is how many of them it contains.
        terms: Vec<String>,
        /// Only this subtree.
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
        #[command(flatten)]
        filter: FilterArgs,
        /// At most N results.
        #[arg(long, value_name = "N", value_parser = parse_count)]
        limit: Option<usize>,
    },
    /// Build context for an agent under a character budget.
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
    Prune {
        /// Only this subtree.
        #[arg(long, value_name = "P")]
        prefix: Option<String>,
    },
    /// Import an ALP 80 `.alp` memory file into a project.
    Import {
        /// The `.alp` file.
        file: PathBuf,
        /// The project the entries go to (`project:<P>:<id>`).
        #[arg(long, value_name = "P")]
        project: String,
    },
    /// Export a project's typed entries as an ALP 80 `.alp` memory file.
    Export {
        /// The project.
        #[arg(long, value_name = "P")]
        project: String,
        /// Write the file here instead of printing it.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// The optional entry fields of create and update, passed to the service as given (it validates them).
#[derive(Debug, Args)]
pub(crate) struct FieldArgs {
    /// fact, decision, reference, log or draft.
    #[arg(long, value_name = "K")]
    pub(crate) kind: Option<String>,
    /// One of the ten ALP 80 memory types.
    #[arg(long = "type", value_name = "T")]
    pub(crate) memory_type: Option<String>,
    /// Lookup key, unique within (type, scope).
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// critical, high, medium or low.
    #[arg(long, value_name = "I")]
    pub(crate) importance: Option<String>,
    /// What created the entry.
    #[arg(long, value_name = "S")]
    pub(crate) source: Option<String>,
    /// The feature or task the entry is scoped to.
    #[arg(long, value_name = "REF")]
    pub(crate) scope: Option<String>,
    /// Time to live, e.g. 90d (s, m, h, d, w).
    #[arg(long, value_name = "D")]
    pub(crate) ttl: Option<String>,
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

/// Search filters; a malformed value is a usage error.
#[derive(Debug, Args)]
pub(crate) struct FilterArgs {
    /// Only this kind.
    #[arg(long, value_name = "K", value_parser = parse_kind)]
    pub(crate) kind: Option<Kind>,
    /// Only this type.
    #[arg(long = "type", value_name = "T", value_parser = parse_type)]
    pub(crate) memory_type: Option<MemoryType>,
    /// Only this importance.
    #[arg(long, value_name = "I", value_parser = parse_importance)]
    pub(crate) importance: Option<Importance>,
    /// Only this key.
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// Only this source.
    #[arg(long, value_name = "S")]
    pub(crate) source: Option<String>,
    /// Only this scope reference.
    #[arg(long, value_name = "REF")]
    pub(crate) scope: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AgentCommand {
    /// Show a role's memory grants, and grants that can never take effect.
    Show {
        /// The role.
        role: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Walk the hash chain of the audit log and report where it first breaks.
    Verify {
        /// Also fail unless the record at SEQ has HASH (as `alp audit head` printed it): detects records cut from
        /// the end. `0:<64 zeros>` names the empty log.
        #[arg(long, value_name = "SEQ:HASH", value_parser = parse_expect)]
        expect: Option<ExpectedHead>,
        /// Verify a saved log instead of the root's.
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
    /// Print the sequence number and hash of the last record, to keep where the log's writers cannot change it.
    Head,
    /// Print records as stored, one JSON object per line.
    Show {
        /// Only records with seq ≥ SEQ.
        #[arg(long, value_name = "SEQ", default_value_t = 1, value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
        since: u64,
        /// At most N records.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(..=MAX_JSON_INT))]
        limit: Option<u64>,
    },
}

fn parse_expect(text: &str) -> Result<ExpectedHead, String> {
    ExpectedHead::parse(text).ok_or_else(|| {
        format!("`{text}` is not SEQ:HASH (a record number, a colon and 64 lowercase hex digits)")
    })
}

#[derive(Debug, Subcommand)]
pub(crate) enum AdapterCommand {
    /// Claude Code settings: deny other roles' private memory and direct edits of the root.
    Claude {
        /// The role the agent runs as.
        role: String,
    },
    /// Codex: the prompt rule and sandbox mode that keep the root unwritable.
    Codex {
        /// The role the agent runs as.
        role: String,
    },
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

fn parse_kind(text: &str) -> Result<Kind, String> {
    text.parse().map_err(|e: alp_memory::memory_store::InvalidFieldError| e.to_string())
}

fn parse_type(text: &str) -> Result<MemoryType, String> {
    text.parse().map_err(|e: alp_memory::memory_store::InvalidFieldError| e.to_string())
}

fn parse_importance(text: &str) -> Result<Importance, String> {
    text.parse().map_err(|e: alp_memory::memory_store::InvalidFieldError| e.to_string())
}

fn parse_clear(text: &str) -> Result<ClearField, String> {
    ClearField::parse(text).ok_or_else(|| {
        let names: Vec<&str> = ClearField::ALL.iter().map(|f| f.as_str()).collect();
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
                prop_assert_eq!(cli.agents.as_path(), std::path::Path::new("/srv/agents"), "{:?}", args);
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
