//! The stores the benchmarks generate: entries written directly as files, from a fixed seed, so every run
//! measures the same stores.
//!
//! Two kinds: [`generate`] writes the stores of `cargo xtask bench` (every frontmatter shape, a chosen share of
//! entries holding a query term, reused across runs), [`notes`] the plain store of the server benchmarks
//! (`mcp-latency`, `serve-*`, `history-bench`, written afresh into a temporary directory).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::measure::Lcg;

/// The query terms every generated store holds in some entries.
pub(crate) const TERMS: [&str; 2] = ["postgres", "migration"];
/// `rg -i -c -e postgres -e migration FILES`: ripgrep counting the query terms, the yardstick of the searches.
pub(crate) fn ripgrep(files: &Path) -> Command {
    let mut c = Command::new("rg");
    c.args(["-i", "-c", "-e", TERMS[0], "-e", TERMS[1]]).arg(files);
    c
}

/// Entries per project `pNNN` (under the 500-entry limit of a scope root).
pub(crate) const PER_PROJECT: usize = 400;
/// The definition of the role `bench`, which reads every project.
const READER: &str = "role: bench\nmemory:\n  read: [\"project:*\"]\n";

/// The frontmatter every generated entry of a store has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Canonical,
    Seed,
    Messy,
    None,
}

impl Shape {
    pub(crate) const ALL: [Shape; 4] = [Shape::Canonical, Shape::Seed, Shape::Messy, Shape::None];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Shape::Canonical => "canonical",
            Shape::Seed => "seed",
            Shape::Messy => "messy",
            Shape::None => "none",
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Shape, String> {
        Shape::ALL
            .into_iter()
            .find(|shape| shape.name() == text)
            .ok_or_else(|| format!("`{text}` is not one of canonical, seed, messy, none"))
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "memory",
    "service",
    "policy",
    "grant",
    "role",
    "project",
    "shared",
    "private",
    "entry",
    "version",
    "audit",
    "record",
    "search",
    "context",
    "budget",
    "ranking",
    "deterministic",
    "storage",
    "atomic",
    "write",
    "rename",
    "lock",
    "process",
    "thread",
    "worker",
    "review",
    "decision",
    "reference",
    "fact",
    "draft",
    "log",
    "feature",
    "task",
    "scope",
    "importance",
    "critical",
    "deploy",
    "release",
    "config",
    "cache",
    "index",
    "query",
    "latency",
    "throughput",
    "Cơ",
    "sở",
    "dữ",
    "liệu",
    "người",
    "dùng",
    "API",
    "schema",
    "backup",
];

/// The frontmatter of entry `i` in `shape` (empty for `none`).
fn frontmatter(shape: Shape, i: usize, rng: &mut Lcg) -> String {
    let minute = i % 60;
    let day = 1 + i % 9;
    match shape {
        Shape::Canonical => format!(
            "---\nkind: fact\nversion: 1\ncreatedAt: 2026-10-01T10:{minute:02}:00.000Z\n\
             updatedAt: 2026-10-0{day}T10:{minute:02}:00.000Z\ntype: knowledge\nkey: note-{i}\nimportance: medium\n\
             source: bench-generator\n---\n"
        ),
        Shape::Seed => format!(
            "---\nkind: fact\nversion: 1\ncreatedAt: 2026-10-01T10:{minute:02}:00Z\nupdatedAt: 2026-10-0{day}T10:{minute:02}:00Z\n---\n"
        ),
        Shape::Messy => match rng.below(20) {
            0 => format!(
                "---\ntitle: Note {i}\nkind: decision\nmeta:\n  owner: someone\n  reviewed: 2026-10-0{day}\n\
                 updatedAt: 2026-10-0{day}T10:{minute:02}:00+02:00\n---\n"
            ),
            1..=7 => format!(
                "---\n# hand-written note\nupdatedAt: '2026-10-0{day}T10:{minute:02}:00+02:00'\ntitle: \"Note {i}: about things\"\n\
                 kind: \"fact\"\ntags: [a, b]\nversion: 1\nauthor: someone # trailing comment\n\
                 createdAt: 2026-10-01T10:{minute:02}:00.5Z\n---\n"
            ),
            8..=13 => format!(
                "---\ntitle: Meeting notes {i} (draft)\ndate: 2026-10-0{day}\ntags:\n  - meeting\n  - \"q4 plan\"\n\
                 draft: false\nimportance: high\naliases: []\n---\n"
            ),
            _ => format!(
                "---\nkind: reference\n\nsource: 'https://example.org/{i}'   # where it came from\n\
                 updatedAt: 2026-10-0{day}T10:{minute:02}:00.123456-05:00\ntype: knowledge\nkey: \"ref-{i}\"\n---\n"
            ),
        },
        Shape::None => String::new(),
    }
}

/// About 800 bytes of words; `rate` percent of entries hold one query term or both.
pub(crate) fn content(rng: &mut Lcg, rate: u32) -> String {
    let mut text = String::with_capacity(800);
    while text.len() < 640 {
        text.push_str(rng.pick(WORDS));
        text.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    if rng.below(10_000) < u64::from(rate) * 100 {
        match rng.below(3) {
            0 => text.push_str("postgres "),
            1 => text.push_str("Migration "),
            _ => text.push_str("PostgreSQL migration "),
        }
    }
    text.push('\n');
    text
}

/// Writes `size` entries under `store` unless a complete store is already there; returns the bytes of Markdown.
/// `project` names a single project holding every entry (else 400 entries per project `pNNN`).
pub(crate) fn generate(
    store: &Path,
    shape: Shape,
    rate: u32,
    size: usize,
    project: Option<&str>,
) -> Result<u64, String> {
    let marker = store.join(".complete");
    let fail = |e: std::io::Error| format!("cannot write the bench store {}: {e}", store.display());
    if let Ok(text) = std::fs::read_to_string(&marker)
        && let Ok(bytes) = text.trim().parse()
    {
        return Ok(bytes);
    }
    if store.exists() {
        std::fs::remove_dir_all(store).map_err(fail)?;
    }
    let agents = store.join("agents");
    std::fs::create_dir_all(&agents).map_err(fail)?;
    std::fs::write(agents.join("bench.yaml"), READER).map_err(fail)?;
    let seed = u64::try_from(size).unwrap_or(0) ^ (u64::from(rate) << 32) ^ 0x5eed;
    let mut rng = Lcg(seed);
    let mut bytes = 0u64;
    for i in 0..size {
        let dir = match project {
            Some(name) => store.join(format!("memory/projects/{name}/notes")),
            None => store.join(format!("memory/projects/p{:03}/notes", i / PER_PROJECT)),
        };
        if i == 0 || (project.is_none() && i % PER_PROJECT == 0) {
            std::fs::create_dir_all(&dir).map_err(fail)?;
        }
        let text = frontmatter(shape, i, &mut rng) + &content(&mut rng, rate);
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("n{i:06}.md")), text).map_err(fail)?;
    }
    std::fs::write(&marker, bytes.to_string()).map_err(fail)?;
    Ok(bytes)
}

/// The words of [`notes`].
const NOTE_WORDS: &[&str] = &[
    "agent", "memory", "service", "policy", "grant", "role", "project", "entry", "version", "audit",
    "record", "search", "context", "budget", "ranking", "storage", "atomic", "write", "lock", "worker",
    "review", "decision", "deploy", "release", "config", "cache", "index", "query", "latency", "schema",
    "backup", "dữ", "liệu",
];

/// The definition of the role `bench` when it may also write every project: for the write benchmarks.
pub(crate) const WRITER: &str = "role: bench\nmemory:\n  read: [\"project:*\"]\n  write: [\"project:*\"]\n";

/// A note as agents write them, for the write benchmarks' creates and updates.
pub(crate) const NOTE: &str = "A decision, a fact or a note of a few hundred bytes, as agents write them. It says \
                               what was decided and why, who asked, and where to look next.";

/// [`notes`], with the role `bench` allowed to write every project ([`WRITER`]).
pub(crate) fn writable_notes(dir: &Path, entries: usize) -> Result<(), String> {
    notes(dir, entries)?;
    std::fs::write(dir.join("agents/bench.yaml"), WRITER)
        .map_err(|e| format!("cannot write the agent definition in {}: {e}", dir.display()))
}

/// `entries` entries of about 700 bytes under `dir/memory/projects/pNNN/notes/`, 400 per project (under the
/// 500-entry limit of a scope root), about 4% mentioning each query term, and the definition `dir/agents/bench.yaml`.
pub(crate) fn notes(dir: &Path, entries: usize) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write the store in {}: {e}", dir.display());
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).map_err(fail)?;
    std::fs::write(agents.join("bench.yaml"), READER).map_err(fail)?;
    let mut rng = Lcg(0x5eed ^ u64::try_from(entries).unwrap_or_default());
    let mut notes = PathBuf::new();
    for i in 0..entries {
        if i % PER_PROJECT == 0 {
            notes = dir.join(format!("memory/projects/p{:03}/notes", i / PER_PROJECT));
            std::fs::create_dir_all(&notes).map_err(fail)?;
        }
        let mut content = String::with_capacity(720);
        while content.len() < 640 {
            let word = usize::try_from(rng.next()).unwrap_or_default() % NOTE_WORDS.len();
            content.push_str(NOTE_WORDS.get(word).copied().unwrap_or("memory"));
            content.push(if rng.next().is_multiple_of(12) { '\n' } else { ' ' });
        }
        for term in TERMS {
            if rng.next().is_multiple_of(25) {
                content.push_str(term);
                content.push(' ');
            }
        }
        let text = format!(
            "---\nkind: fact\nversion: 1\ncreatedAt: 2026-10-01T10:00:00.000Z\nupdatedAt: 2026-10-0{}T10:00:00.000Z\n\
             importance: medium\n---\n{content}\n",
            1 + i % 9
        );
        std::fs::write(notes.join(format!("note-{i}.md")), text).map_err(fail)?;
    }
    Ok(())
}
