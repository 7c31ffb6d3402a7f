//! `cargo xtask history-bench [--quick] [--entries N] [--versions N] [--runs N] [--writes N] [--before REV]`: what
//! keeping every version costs the Markdown store, and `BENCHMARKS-history.md`.
//!
//! 1. Writes, in one run, interleaved: `update` of one entry (which keeps the version it replaces in `history/`
//!    before replacing the entry file) and `delete` of a fresh entry (which keeps the entry and its tombstone), on a
//!    store opened in-process, against the bare loops any durable store pays: write + fsync + rename + directory
//!    fsync of a file of the same size, and unlink + directory fsync. Medians of every call.
//! 2. Listing, search and context, end to end (`alp --json memory list|search|context`, release build): a store of
//!    N entries (10,000 by default) each with 20 versions (19 kept in `history/`, written directly as files, then
//!    checked through the store), against the same N entries with one version, interleaved rounds, medians.
//! 3. Bytes per kept version on disk, for notes of a few sizes: entries updated ten times through the store, then
//!    the apparent size and the allocated blocks of their history directories divided by the versions kept.
//! 4. Updates and deletes through `alp mcp`, this build's server against the server of the last revision whose
//!    store kept no history (`--before REV`, `b30316b` by default; built once under `target/bench-old/`), each on a
//!    store of its own, interleaved rounds, medians.
//! 5. Writes `BENCHMARKS-history.md`, with the machine's load average before and after.
//!
//! The stores of step 2 are kept under `target/bench-stores/` and reused; the others are temporary directories
//! under `target/` (the disk the stores live on; never a tmpfs).
//!
//! `--quick`: 2,000 entries × 20 versions, 7 rounds, 100 writes of each kind.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alp_memory::memory_entry::{Limits, NewEntry, Patch, Timestamp};
use alp_memory::memory_id::parse_memory_id;
use alp_memory::memory_markdown::{MarkdownStore, render_entry_file};
use alp_memory::memory_store::MemoryStore;

use crate::corpus::{NOTE, PER_PROJECT, TERMS, writable_notes};
use crate::flags::{Runs, positive};
use crate::measure::{Ran, Run, machine, median, ms, ratio};
use crate::root;
use crate::setup::{build_old, release_alp, target_dir};

/// `cargo xtask history-bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A smoke run: 2,000 entries, 7 rounds, 100 writes of each kind
    #[arg(long)]
    quick: bool,
    /// Entries of the listing and search stores [default: 10000; with --quick 2000]
    #[arg(long, value_name = "N", value_parser = positive::<usize>)]
    entries: Option<usize>,
    /// Versions of each entry (at least 2)
    #[arg(long, value_name = "N", value_parser = positive::<usize>, default_value_t = 20)]
    versions: usize,
    /// [default: 31; with --quick 7]
    #[command(flatten)]
    runs: Runs,
    /// Writes of each kind [default: 400; with --quick 100]
    #[arg(long, value_name = "N", value_parser = positive::<usize>)]
    writes: Option<usize>,
    /// The revision whose `alp` keeps no history, for the service-level comparison
    #[arg(long, value_name = "REV", default_value = BEFORE_HISTORY)]
    before: String,
}

struct Options {
    entries: usize,
    versions: u64,
    runs: usize,
    writes: usize,
    /// The revision whose `alp` keeps no history, for the service-level comparison.
    before: String,
}

/// The last revision whose Markdown store kept no history: its update writes the entry file once, its delete only
/// unlinks it.
const BEFORE_HISTORY: &str = "b30316b";

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let quick = args.quick;
    let o = Options {
        entries: args.entries.unwrap_or(if quick { 2_000 } else { 10_000 }),
        versions: args.versions.max(2) as u64,
        runs: args.runs.or(if quick { 7 } else { 31 }),
        writes: args.writes.unwrap_or(if quick { 100 } else { 400 }),
        before: args.before.clone(),
    };
    let run = Run::start();
    let alp = release_alp()?;
    let scratch = target_dir().join(format!("history-bench-{}", std::process::id()));
    let result = (|| {
        let writes = write_costs(&scratch.join("writes"), o.writes)?;
        eprintln!(
            "first update {:.3} ms, second {:.3} ms, update keeping {} versions {:.3} ms, delete {:.3} ms, bare replace {:.3} ms, \
             bare unlink {:.3} ms",
            ms(writes.update_first),
            ms(writes.update_second),
            writes.keep,
            ms(writes.update),
            ms(writes.delete),
            ms(writes.replace),
            ms(writes.unlink)
        );
        let disk = disk_per_version(&scratch.join("disk"))?;
        let old = build_old(&o.before)?;
        let served = served_writes(&alp, &old, &scratch.join("served"), o.writes)?;
        eprintln!(
            "through alp mcp: update {:.3} ms (before history {:.3} ms), delete {:.3} ms (before history {:.3} ms)",
            ms(served.update[0]),
            ms(served.update[1]),
            ms(served.delete[0]),
            ms(served.delete[1])
        );
        Ok::<_, String>((writes, disk, served))
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    let (writes, disk, served) = result?;
    let stores = root().join("target/bench-stores");
    let many = stores.join(format!("history-{}x{}", o.entries, o.versions));
    let one = stores.join(format!("history-{}x1", o.entries));
    let generating = Instant::now();
    let files = generate(&many, o.entries, o.versions)? + generate(&one, o.entries, 1)?;
    eprintln!("history stores ready in {:.1} s ({files} files written)", generating.elapsed().as_secs_f64());
    check(&many, o.entries, o.versions)?;
    let reads = read_costs(&alp, &one, &many, o.runs)?;
    let report =
        Report { o: &o, writes: &writes, served: &served, disk: &disk, reads: &reads, ran: run.ran() };
    std::fs::write(root().join("BENCHMARKS-history.md"), report.render())
        .map_err(|e| format!("cannot write BENCHMARKS-history.md: {e}"))?;
    eprintln!("wrote BENCHMARKS-history.md");
    Ok(())
}

fn now() -> Timestamp {
    Timestamp::now()
}

const CONTENT: &str = "A decision, a fact or a note of a few hundred bytes, as agents write them. \
    It says what was decided and why, who asked, and where to look next. \
    Nothing in it is special: no frontmatter lookalikes, no odd characters, just text.\n";

fn fail<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e}")
}

struct WriteCosts {
    /// The first update of a fresh entry (one version kept after it).
    update_first: Duration,
    /// The second update of an entry (its history directory exists; two versions kept after it).
    update_second: Duration,
    /// An update of an entry that already keeps `history.keepVersions` versions (the oldest is dropped).
    update: Duration,
    /// `history.keepVersions`.
    keep: u64,
    delete: Duration,
    replace: Duration,
    unlink: Duration,
    /// The size of the entry file the bare loops write, in bytes.
    file_bytes: usize,
    samples: usize,
}

/// Step 1: `n` rounds of one call of each, in a rotating order.
fn write_costs(dir: &Path, n: usize) -> Result<WriteCosts, String> {
    std::fs::create_dir_all(dir).map_err(fail("cannot create the scratch directory"))?;
    let limits = Limits { max_entries_per_scope_root: u64::MAX, ..Limits::default() };
    let store =
        MarkdownStore::open_with_limits(dir.join("memory"), limits).map_err(fail("cannot open the store"))?;
    let target = parse_memory_id("project:alp:bench:updated").map_err(fail("a bad ID"))?;
    let created = store.create(NewEntry::new(target.clone(), CONTENT), now()).map_err(fail("create"))?;
    let file_bytes = render_entry_file(&created).len();
    let body = render_entry_file(&created);
    let mut version = created.version;
    let patch = Patch::content_only(CONTENT.to_owned());
    // The entry updated in the loop keeps as many versions as the store keeps, before the first timed update.
    let keep = store.config().limits.keep_versions;
    for _ in 0..keep {
        version = store.update(&target, version, &patch, now()).map_err(fail("update"))?.version;
    }
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).map_err(fail("cannot create the bare directory"))?;
    let bare_dir = std::fs::File::open(&bare).map_err(fail("cannot open the bare directory"))?;
    let mut samples: [Vec<Duration>; 6] = Default::default();
    let mut next = 0u64;
    for round in 0..n + 5 {
        for k in 0..5 {
            let which = (round + k) % 5;
            let took = match which {
                0 => {
                    let started = Instant::now();
                    let updated = store.update(&target, version, &patch, now()).map_err(fail("update"))?;
                    let took = started.elapsed();
                    version = updated.version;
                    took
                }
                1 => {
                    next += 1;
                    let id = parse_memory_id(&format!("project:del:n{next}")).map_err(fail("a bad ID"))?;
                    let made =
                        store.create(NewEntry::new(id.clone(), CONTENT), now()).map_err(fail("create"))?;
                    let started = Instant::now();
                    store.delete(&id, made.version, now()).map_err(fail("delete"))?;
                    started.elapsed()
                }
                2 => {
                    let id = parse_memory_id(&format!("project:upd:n{round}")).map_err(fail("a bad ID"))?;
                    let made =
                        store.create(NewEntry::new(id.clone(), CONTENT), now()).map_err(fail("create"))?;
                    let started = Instant::now();
                    let first = store.update(&id, made.version, &patch, now()).map_err(fail("update"))?;
                    let took = started.elapsed();
                    let started = Instant::now();
                    store.update(&id, first.version, &patch, now()).map_err(fail("update"))?;
                    if round >= 5 {
                        samples[5].push(started.elapsed());
                    }
                    took
                }
                3 => {
                    let started = Instant::now();
                    bare_replace(&bare, &bare_dir, body.as_bytes(), next)?;
                    started.elapsed()
                }
                _ => {
                    let file = bare.join("gone.md");
                    std::fs::write(&file, body.as_bytes()).map_err(fail("cannot write"))?;
                    let started = Instant::now();
                    std::fs::remove_file(&file).map_err(fail("cannot unlink"))?;
                    bare_dir.sync_all().map_err(fail("cannot sync the directory"))?;
                    started.elapsed()
                }
            };
            if round >= 5 {
                samples[which].push(took);
            }
        }
    }
    let [update, delete, update_first, replace, unlink, update_second] = samples.map(|s| median(&s));
    Ok(WriteCosts {
        update_first,
        update_second,
        update,
        keep,
        delete,
        replace,
        unlink,
        file_bytes,
        samples: n,
    })
}

/// Medians of updates and deletes through `alp mcp`: `[this build, the build before history]`.
struct Served {
    update: [Duration; 2],
    delete: [Duration; 2],
    samples: usize,
}

/// Updates and deletes through `alp --as bench mcp` (each call authorised, audited with a synced record and done by
/// the Markdown store), this build's server and the server of the build before history side by side, each on a
/// store of its own: `n` rounds, each an update of one entry and a delete of a fresh entry in both servers, in an
/// order that alternates between them (after 5 untimed rounds).
fn served_writes(alp: &Path, old: &Path, dir: &Path, n: usize) -> Result<Served, String> {
    let content = NOTE;
    let mut servers = Vec::new();
    for (k, binary) in [alp, old].into_iter().enumerate() {
        let store = dir.join(format!("store-{k}"));
        writable_notes(&store, 100)?;
        let (memory, agents) = (store.join("memory"), store.join("agents"));
        let mut server = crate::mcp_latency::Server::start(binary, &memory, &agents)?;
        server.call(&format!(
            r#""name":"memory_create","arguments":{{"id":"project:w:notes:updated","content":"{content}"}}"#
        ))?;
        servers.push(server);
    }
    let mut samples: [[Vec<Duration>; 2]; 2] = Default::default();
    // Each round's update takes the entry from version `round + 1` to the next, in both servers.
    for (round, version) in (0..n + 5).zip(1u64..) {
        for step in 0..2 {
            // Round by round, the other server goes first.
            let k = (round + step) % 2;
            let server = &mut servers[k];
            let update = server.call(&format!(
                r#""name":"memory_update","arguments":{{"id":"project:w:notes:updated","expectedVersion":{version},"content":"{content} {round}"}}"#
            ))?;
            let fresh = format!("project:d:notes:n{round}");
            server.call(&format!(
                r#""name":"memory_create","arguments":{{"id":"{fresh}","content":"{content}"}}"#
            ))?;
            let delete = server.call(&format!(
                r#""name":"memory_delete","arguments":{{"id":"{fresh}","expectedVersion":1}}"#
            ))?;
            if round >= 5 {
                samples[0][k].push(update);
                samples[1][k].push(delete);
            }
        }
    }
    for server in servers {
        if !server.stop()? {
            return Err("alp mcp did not exit with status 0".to_owned());
        }
    }
    let [updates, deletes] = samples;
    Ok(Served { update: updates.map(|s| median(&s)), delete: deletes.map(|s| median(&s)), samples: n })
}

/// One durable atomic replace: write a temporary file, fsync it, rename it over the target, fsync the directory.
fn bare_replace(dir: &Path, handle: &std::fs::File, bytes: &[u8], n: u64) -> Result<(), String> {
    let temp = dir.join(format!(".tmp-{n}"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .map_err(fail("cannot create a temporary file"))?;
    file.write_all(bytes).map_err(fail("cannot write"))?;
    file.sync_all().map_err(fail("cannot sync"))?;
    std::fs::rename(&temp, dir.join("bare.md")).map_err(fail("cannot rename"))?;
    handle.sync_all().map_err(fail("cannot sync the directory"))
}

struct DiskRow {
    content_bytes: usize,
    entries: usize,
    versions: u64,
    apparent: u64,
    allocated: u64,
    entry_file: u64,
}

/// Step 3: for each content size, 10 entries updated 10 times each; the history directories measured.
fn disk_per_version(dir: &Path) -> Result<Vec<DiskRow>, String> {
    std::fs::create_dir_all(dir).map_err(fail("cannot create the scratch directory"))?;
    let store = MarkdownStore::open(dir.join("memory")).map_err(fail("cannot open the store"))?;
    let mut rows = Vec::new();
    for (n, size) in [200usize, 2_000, 20_000].into_iter().enumerate() {
        let content: String = CONTENT.repeat(size / CONTENT.len() + 1).chars().take(size).collect();
        let entries = 10;
        for e in 0..entries {
            let id = parse_memory_id(&format!("project:size{n}:notes:n{e}")).map_err(fail("a bad ID"))?;
            let mut entry =
                store.create(NewEntry::new(id.clone(), content.clone()), now()).map_err(fail("create"))?;
            for u in 0..10 {
                let patch = Patch::content_only(format!("{u} {content}"));
                entry = store.update(&id, entry.version, &patch, now()).map_err(fail("update"))?;
            }
        }
        let history = dir.join(format!("memory/history/projects/size{n}"));
        let (mut apparent, mut allocated, mut versions) = (0, 0, 0);
        walk(&history, &mut |meta, is_file| {
            allocated += meta.blocks() * 512;
            if is_file {
                apparent += meta.len();
                versions += 1;
            }
        })?;
        let entry_file = std::fs::metadata(dir.join(format!("memory/projects/size{n}/notes/n0.md")))
            .map_or(0, |m| m.len());
        rows.push(DiskRow { content_bytes: size, entries, versions, apparent, allocated, entry_file });
    }
    Ok(rows)
}

fn walk(dir: &Path, visit: &mut dyn FnMut(&std::fs::Metadata, bool)) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(fail("cannot stat the history"))?;
    visit(&meta, false);
    for entry in std::fs::read_dir(dir).map_err(fail("cannot list the history"))? {
        let entry = entry.map_err(fail("cannot list the history"))?;
        let meta = entry.metadata().map_err(fail("cannot stat the history"))?;
        if meta.is_dir() {
            walk(&entry.path(), visit)?;
        } else {
            visit(&meta, true);
        }
    }
    Ok(())
}

/// The entry file (or history file) text of entry `i` at `version`.
fn entry_text(i: usize, version: u64, content: &str) -> Result<String, String> {
    let id = parse_memory_id(&format!("project:p{:03}:notes:n{i:06}", i / PER_PROJECT))
        .map_err(fail("a bad ID"))?;
    let at = Timestamp::parse(&format!("2026-10-01T10:{:02}:{:02}Z", version % 60, i % 60))
        .map_err(fail("a bad time"))?;
    let mut entry = NewEntry::new(id, content.to_owned()).into_entry(at);
    entry.version = version;
    Ok(render_entry_file(&entry))
}

/// About 800 bytes of words, about 4% of entries holding each query term (as the other benchmarks' stores).
fn content(i: usize, version: u64) -> String {
    const WORDS: &[&str] = &[
        "agent", "memory", "service", "policy", "grant", "role", "project", "entry", "version", "audit",
        "record", "search", "context", "budget", "ranking", "storage", "atomic", "write", "lock", "worker",
        "review", "decision", "deploy", "release", "config", "cache", "index", "query", "latency", "schema",
        "backup",
    ];
    let mut state = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let mut text = format!("Revision {version}. ");
    while text.len() < 640 {
        text.push_str(WORDS[usize::try_from(next()).unwrap_or(0) % WORDS.len()]);
        text.push(if next().is_multiple_of(12) { '\n' } else { ' ' });
    }
    for term in TERMS {
        if next().is_multiple_of(25) {
            text.push_str(term);
            text.push(' ');
        }
    }
    text.push('\n');
    text
}

/// Step 2's store: `entries` entries at version `versions`, the versions below it in `history/`; written directly
/// unless a complete store is already there. The number of files written.
fn generate(store: &Path, entries: usize, versions: u64) -> Result<u64, String> {
    let marker = store.join(".complete");
    if marker.is_file() {
        return Ok(0);
    }
    let io = |e: std::io::Error| format!("cannot write the bench store {}: {e}", store.display());
    if store.exists() {
        std::fs::remove_dir_all(store).map_err(io)?;
    }
    let agents = store.join("agents");
    std::fs::create_dir_all(&agents).map_err(io)?;
    std::fs::write(agents.join("bench.yaml"), "role: bench\nmemory:\n  read: [\"project:*\"]\n")
        .map_err(io)?;
    let mut files = 0;
    for i in 0..entries {
        let rel = format!("projects/p{:03}/notes/n{i:06}.md", i / PER_PROJECT);
        let file = store.join("memory").join(&rel);
        if i % PER_PROJECT == 0
            && let Some(parent) = file.parent()
        {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&file, entry_text(i, versions, &content(i, versions))?).map_err(io)?;
        files += 1;
        if versions > 1 {
            let history = store.join("memory/history").join(&rel);
            std::fs::create_dir_all(&history).map_err(io)?;
            for v in 1..versions {
                std::fs::write(history.join(format!("{v:016}.md")), entry_text(i, v, &content(i, v))?)
                    .map_err(io)?;
                files += 1;
            }
        }
    }
    std::fs::write(&marker, files.to_string()).map_err(io)?;
    Ok(files)
}

/// The store reads the generated history as history: every version of a few entries.
fn check(store: &Path, entries: usize, versions: u64) -> Result<(), String> {
    let opened = MarkdownStore::open(store.join("memory")).map_err(fail("cannot open the history store"))?;
    for i in [0, entries / 2, entries - 1] {
        let id = parse_memory_id(&format!("project:p{:03}:notes:n{i:06}", i / PER_PROJECT))
            .map_err(fail("a bad ID"))?;
        let kept = opened.history(&id, None).map_err(fail("cannot read a generated history"))?;
        if kept.len() as u64 != versions {
            return Err(format!(
                "the generated history of `{id}` holds {} versions, not {versions}",
                kept.len()
            ));
        }
    }
    Ok(())
}

struct ReadRow {
    name: String,
    one: Duration,
    many: Duration,
    /// Under strace on the store with history: the file and descriptor calls, and those naming `history`.
    traced: Option<(usize, usize)>,
}

/// `alp ARGS` on `store` once under `strace -f -e trace=%file,%desc`: how many calls it made, and how many of them
/// named a path starting with `history` (every path the store opens starts from its root's handle, so any look
/// into the history directory names it). `None` when strace cannot run.
fn traced(alp: &Path, store: &Path, args: &[String]) -> Option<(usize, usize)> {
    let out = target_dir().join(format!("history-bench-strace-{}", std::process::id()));
    let status = Command::new("strace")
        .args(["-f", "-e", "trace=%file,%desc", "-o"])
        .arg(&out)
        .arg(alp)
        .args(alp_args(store, args))
        .env_remove("ALP_AUDIT_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(&out).ok();
    let _ = std::fs::remove_file(&out);
    let text = text.filter(|_| status.success())?;
    Some((text.lines().count(), text.lines().filter(|line| line.contains("\"history")).count()))
}

/// The arguments of `alp` for the command `args` on `store`, as the bench's role, with `--json`.
fn alp_args(store: &Path, args: &[String]) -> Vec<std::ffi::OsString> {
    let mut all: Vec<std::ffi::OsString> = vec![
        "--root".into(),
        store.join("memory").into(),
        "--agents".into(),
        store.join("agents").into(),
        "--as".into(),
        "bench".into(),
        "--json".into(),
    ];
    all.extend(args.iter().map(Into::into));
    all
}

/// Step 2: each command on both stores, interleaved, after one untimed run of each.
fn read_costs(alp: &Path, one: &Path, many: &Path, runs: usize) -> Result<Vec<ReadRow>, String> {
    // Each command as words; its label is the words after `memory`, in backticks.
    let commands: Vec<(String, Vec<String>)> = [
        vec!["list", "project"],
        vec!["search", TERMS[0], TERMS[1], "--limit", "20"],
        vec!["context", TERMS[0], TERMS[1], "--budget", "4000"],
        vec!["context", TERMS[0], TERMS[1], "--budget", "4000", "--prefix", "project:p000"],
    ]
    .into_iter()
    .map(|words| {
        let label = format!("`memory {}`", words.join(" "));
        (label, std::iter::once("memory").chain(words).map(str::to_owned).collect())
    })
    .collect();
    let time = |store: &Path, args: &[String]| -> Result<Duration, String> {
        let started = Instant::now();
        let output = Command::new(alp)
            .args(alp_args(store, args))
            .env_remove("ALP_AUDIT_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("cannot run alp: {e}"))?;
        let took = started.elapsed();
        if !output.status.success() {
            return Err(format!(
                "alp {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(took)
    };
    let mut rows = Vec::new();
    for (name, args) in &commands {
        time(one, args)?;
        time(many, args)?;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..runs {
            if round % 2 == 0 {
                a.push(time(one, args)?);
                b.push(time(many, args)?);
            } else {
                b.push(time(many, args)?);
                a.push(time(one, args)?);
            }
        }
        let row = ReadRow {
            name: name.clone(),
            one: median(&a),
            many: median(&b),
            traced: traced(alp, many, args),
        };
        eprintln!("{}: {:.2} ms against {:.2} ms", row.name, ms(row.many), ms(row.one));
        rows.push(row);
    }
    Ok(rows)
}

struct Report<'a> {
    o: &'a Options,
    writes: &'a WriteCosts,
    served: &'a Served,
    disk: &'a [DiskRow],
    reads: &'a [ReadRow],
    ran: Ran,
}

impl Report<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Benchmarks of history\n");
        let _ = writeln!(
            out,
            "{}. Every ratio compares numbers measured in the same run, interleaved. The Markdown store keeps \
             every version of an entry under `history/` (`history.keepVersions` bounds how many; it cannot turn \
             history off), so the writes are compared with the bare loops of the durable writes they make.\n",
            self.ran.generated("history-bench", &machine())
        );
        let w = self.writes;
        let _ = writeln!(out, "## Writes\n");
        let _ = writeln!(
            out,
            "The store opened in-process, {} calls of each kind in rotating order (after 5 untimed), medians. \
             *Bare replace*: write a {}-byte file, fsync it, rename it over the target, fsync the directory (one \
             durable write: the floor of an update that keeps no history). *Bare unlink*: unlink a file and fsync the \
             directory (the floor of a delete that keeps nothing). An update keeps the version it replaces (a second \
             durable write); a delete keeps the entry (moving the entry file itself when it is exactly that copy) and \
             its tombstone before the name goes. Goals: an update at most 1.5× the cost of one without history, a \
             delete at most 2× (measured against the build before history in the section after this table).\n",
            w.samples, w.file_bytes
        );
        let _ = writeln!(out, "| call | median | × bare replace | × bare unlink |\n|---|---:|---:|---:|");
        let deep = format!("`update` of an entry keeping {} versions", w.keep);
        for (name, d) in [
            ("`update`, an entry's first (makes its history directory)", w.update_first),
            ("`update`, an entry's second", w.update_second),
            (deep.as_str(), w.update),
            ("`delete` (history kept)", w.delete),
            ("bare replace", w.replace),
            ("bare unlink", w.unlink),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.3} ms | {:.2}× | {:.2}× |",
                ms(d),
                ratio(d, w.replace),
                ratio(d, w.unlink)
            );
        }
        let _ = writeln!(
            out,
            "\nAn entry's second update costs **{:.2}×** one bare durable replace (its first, which makes the \
             entry's history directory, {:.2}×), and an update of an entry that \
             already keeps {} versions **{:.2}×** (after the write, it also drops the oldest version). An update \
             that keeps its previous version makes two files durable: one after the other that would be two bare \
             replaces, 2×; the update syncs the two at once, and the file system may merge the syncs. A delete costs **{:.2}×** a bare replace plus a bare unlink ({:.3} ms).\n",
            ratio(w.update_second, w.replace),
            ratio(w.update_first, w.replace),
            w.keep,
            ratio(w.update, w.replace),
            ratio(w.delete, w.replace + w.unlink),
            ms(w.replace + w.unlink)
        );
        let v = self.served;
        let _ = writeln!(out, "### Through the MCP server, against the build before history\n");
        let _ = writeln!(
            out,
            "Today's cost of a write, as a runtime pays it: `alp --as bench mcp` of this build and of `{}` (the last \
             revision whose store kept no history: an update writes the entry file once, a delete unlinks it), each \
             server on a store of its own, {} rounds of an update of one entry and a delete of a fresh entry in both, \
             the servers alternating which goes first (after 5 untimed rounds), medians of each call's round trip. \
             Each call is authorised, audited with a synced record and done by the Markdown store, in both builds.\n",
            self.o.before, v.samples
        );
        let _ = writeln!(out, "| call | this build | before history | ratio |\n|---|---:|---:|---:|");
        for (name, [now, before]) in [("`memory_update`", v.update), ("`memory_delete`", v.delete)] {
            let _ = writeln!(
                out,
                "| {name} | {:.3} ms | {:.3} ms | **{:.2}×** |",
                ms(now),
                ms(before),
                ratio(now, before)
            );
        }
        let _ = writeln!(
            out,
            "\nKeeping history makes an update through the server **{:.2}×** its cost before history (goal ≤ 1.5×) \
             and a delete **{:.2}×** (goal ≤ 2×). In the store alone, measured above against the bare durable \
             writes, it is more: there, the audit record's sync and the protocol, which both builds pay, are not \
             counted.\n",
            ratio(v.update[0], v.update[1]),
            ratio(v.delete[0], v.delete[1])
        );
        let _ = writeln!(out, "## Listing, search and context with history\n");
        let _ = writeln!(
            out,
            "`alp --as bench --json …` processes (release build) on {} entries of about 800 bytes ({} per project) \
             at version {} with the {} versions below it kept in `history/` (written directly as files; the store \
             reads them back as history), against the same {} entries with one version. {} interleaved rounds, \
             medians. Goal: no slower (history is never walked by them). Each command also ran once on the store \
             with history under `strace -f -e trace=%file,%desc`: its file and descriptor calls, and how many of them \
             named the history directory (every path the store opens starts from its root's handle, so any look \
             into it names it).\n",
            self.o.entries,
            PER_PROJECT,
            self.o.versions,
            self.o.versions - 1,
            self.o.entries,
            self.o.runs
        );
        let _ = writeln!(
            out,
            "| command | 1 version | {} versions | ratio | calls under strace | of them naming `history` \
             |\n|---|---:|---:|---:|---:|---:|",
            self.o.versions
        );
        for r in self.reads {
            let _ = writeln!(
                out,
                "| {} | {:.2} ms | {:.2} ms | **{:.2}** | {} | {} |",
                r.name,
                ms(r.one),
                ms(r.many),
                ratio(r.many, r.one),
                r.traced.map_or("?".to_owned(), |(calls, _)| calls.to_string()),
                r.traced.map_or("?".to_owned(), |(_, history)| history.to_string())
            );
        }
        let _ = writeln!(out, "\n## Disk per kept version\n");
        let _ = writeln!(
            out,
            "Entries created and then updated ten times each through the store; their history directories \
             (`history/<entry path>/<16-digit version>.md`, one directory per entry) measured: the files' apparent \
             size, and the blocks allocated to the files and directories, divided by the versions kept.\n"
        );
        let _ = writeln!(
            out,
            "| content | entry file | entries | versions kept | bytes/version (apparent) | bytes/version on disk (blocks) |\n|---:|---:|---:|---:|---:|---:|"
        );
        for d in self.disk {
            let per = |bytes: u64| bytes as f64 / d.versions.max(1) as f64;
            let _ = writeln!(
                out,
                "| {} B | {} B | {} | {} | {:.0} | {:.0} |",
                d.content_bytes,
                d.entry_file,
                d.entries,
                d.versions,
                per(d.apparent),
                per(d.allocated)
            );
        }
        let _ = writeln!(out);
        out
    }
}
