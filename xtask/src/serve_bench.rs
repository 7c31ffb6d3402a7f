//! `cargo xtask serve-bench [--quick] [--sizes 1000,10000,100000] [--shapes canonical,seed,messy,none] [--runs N]
//! [--seconds N] [--idle N] [--alp PATH] [--old-commit REV | --old PATH | --no-old] [--only receipts|eras]`: the
//! real `alp serve` over HTTP, and `BENCHMARKS-serve.md`.
//!
//! 1. Builds `alp` in release mode (with `--alp`, measures the binary at PATH instead); needs ripgrep and strace
//!    (installed with apt-get when absent). Builds the `alp` of an older revision too (default `9592246`, the last
//!    before receipts; exported with `git archive` into `target/bench-old/`, built there once), unless `--old`
//!    names one or `--no-old`.
//! 2. Search against ripgrep: for each shape, the 10,000-entry store of `cargo xtask bench` (under
//!    `target/bench-stores/`, generated once and reused, 4% of entries holding a term); a server
//!    `alp --json serve --listen 127.0.0.1:0` on it, one kept-alive connection, and rounds of one
//!    `rg -i -c -e postgres -e migration` over the same files then three `memory_search` calls (limit 20). Medians;
//!    the first search of a round (after ripgrep's run) and the two after it are reported apart.
//! 3. The search curve: the same on the `canonical` stores of every size.
//! 4. `memory_get` latency on the 10,000-entry store with 1, 8 and 32 clients, each on its own connection with its
//!    own token, calling back to back for N seconds: p50 and p99 of every call.
//! 5. Memory per idle connection: the server's `VmRSS` (from `/proc/PID/status`) before and after opening N more
//!    connections that each make one call and then stay open, idle; the difference divided by N.
//! 6. Writes: `memory_create` of new entries and `memory_update` of one entry, alternating, one client, on a store
//!    of 100 entries: p50 and p95 of each (every write is synced, its audit record too, and an update keeps the
//!    version it replaces in the history).
//! 7. Group commit, as `cargo xtask serve-load` measures it: reads per second with 32 clients against one client in
//!    the same run, and fsyncs per audit record counted under strace.
//! 8. Receipts (`serve_receipts.rs`, measured first, on a machine the other parts have not yet worked): the older
//!    `alp` against this one on copies of the 10,000-entry `canonical` store, and the older one against itself
//!    (A/A), in the same rounds, `memory_search` and `memory_get`; the bytes of their audit records. With
//!    `--no-old`, the section of the last run is kept.
//! 9. Protocol eras (`serve_eras.rs`, measured after the receipts): on one server, `memory_search` and `memory_get`
//!    in the stateless `2026-07-28` era against the session era, and the session era against itself (A/A).
//! 10. Writes `BENCHMARKS-serve.md`, with the machine's load average before and after the run.
//!
//! `--quick`: sizes 1000 and 10000, 7 rounds (the receipts' too), 3 s per timed load, 100 idle connections.
//! `--only receipts` or `--only eras`: that section alone, written in place of its last run in the file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use alp_memory::MAX_ANSWER_ENTRIES;

use crate::corpus::{NOTE, Shape, TERMS, generate, ripgrep, writable_notes};
use crate::flags::{Alp, Old, Runs, Seconds, positive};
use crate::measure::{Ran, Run, dentries, machine, ms, proc_status, quantile, time};
use crate::root;
use crate::serve_load::{Client, Server, token};
use crate::setup::ensure_tool;

const RATE: u32 = 4;
const LIMIT: usize = 20;
/// The size the shapes are compared at, and the get latency and idle connections measured on.
const MAIN_SIZE: usize = 10_000;

/// `cargo xtask serve-bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A smoke run: sizes 1000 and 10000, 7 rounds, 3 s per timed load, 100 idle connections, 100 writes
    #[arg(long)]
    quick: bool,
    /// Sizes of the search curve [default: 1000,10000,100000; with --quick 1000,10000]
    #[arg(long, value_name = "N,N", value_delimiter = ',', value_parser = positive::<usize>)]
    sizes: Option<Vec<usize>>,
    /// Frontmatter shapes compared at 10,000 entries
    #[arg(long, value_name = "SHAPE,…", value_delimiter = ',', value_parser = crate::flags::shape,
          default_value = "canonical,seed,messy,none")]
    shapes: Vec<Shape>,
    /// [default: 21; with --quick 7]
    #[command(flatten)]
    runs: Runs,
    /// [default: 10; with --quick 3]
    #[command(flatten)]
    seconds: Seconds,
    /// Idle connections opened [default: 500; with --quick 100]
    #[arg(long, value_name = "N", value_parser = positive::<usize>)]
    idle: Option<usize>,
    #[command(flatten)]
    alp: Alp,
    /// The `alp` whose receipts-free reads are compared with this one's [default: 9592246]
    #[command(flatten)]
    old: Old,
    /// Measure one section alone and replace it in `BENCHMARKS-serve.md`, keeping the rest of the file
    #[arg(long, value_enum, value_name = "SECTION")]
    only: Option<Only>,
}

/// A section `--only` measures alone.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Only {
    /// What a read's receipt costs against the older `alp` (needs an older one: not with `--no-old`).
    Receipts,
    /// A call in the stateless era against the session era.
    Eras,
}

struct Options {
    sizes: Vec<usize>,
    shapes: Vec<Shape>,
    runs: usize,
    seconds: u64,
    idle: usize,
    writes: usize,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let quick = args.quick;
    let mut sizes =
        args.sizes.clone().unwrap_or(if quick { vec![1_000, 10_000] } else { vec![1_000, 10_000, 100_000] });
    sizes.sort_unstable();
    sizes.dedup();
    let o = Options {
        sizes,
        shapes: args.shapes.clone(),
        runs: args.runs.or(if quick { 7 } else { 21 }),
        seconds: args.seconds.or(if quick { 3 } else { 10 }),
        idle: args.idle.unwrap_or(if quick { 100 } else { 500 }),
        writes: if quick { 100 } else { 300 },
    };
    let run = Run::start();
    ensure_tool("rg", "ripgrep")?;
    ensure_tool("strace", "strace")?;
    let alp = args.alp.binary()?;
    let old = args.old.binary(crate::serve_receipts::DEFAULT_OLD)?;
    let stores = root().join("target/bench-stores");

    // The receipts first: what a receipt adds to a search shows only on a machine at rest, and measured last (after
    // a 100,000-entry store walked and tens of thousands of synced records) two runs of three found every server's
    // search at 12 ms instead of 7, and the difference hidden.
    let main_store = stores.join(format!("{}-{RATE}-{MAIN_SIZE}", Shape::Canonical.name()));
    generate(&main_store, Shape::Canonical, RATE, MAIN_SIZE, None)?;
    // `--alp PATH`: the reports name the binary by its path.
    let label = args.alp.alp.as_ref().map(|path| path.display().to_string());
    let receipts_of = |(old, old_label): &(PathBuf, String)| {
        let builds = crate::serve_receipts::Builds { new: &alp, new_label: label.as_deref(), old, old_label };
        crate::serve_receipts::section(&builds, &main_store, MAIN_SIZE, o.runs)
    };
    let eras_of = || crate::serve_eras::section(&alp, label.as_deref(), &main_store, MAIN_SIZE, o.runs);
    if let Some(only) = args.only {
        let section = match (only, &old) {
            (Only::Receipts, None) => {
                return Err("--only receipts needs an older alp: not --no-old".to_owned());
            }
            (Only::Receipts, Some(old)) => receipts_of(old)?,
            (Only::Eras, _) => eras_of()?,
        };
        return replace_section(&section);
    }
    let receipts = old.as_ref().map(receipts_of).transpose()?;
    let eras = eras_of()?;

    let dentries = dentries();
    let mut shapes = Vec::new();
    for &shape in &o.shapes {
        let store = stores.join(format!("{}-{RATE}-{MAIN_SIZE}", shape.name()));
        let row = search_row(&alp, &store, shape, MAIN_SIZE, o.runs)?;
        eprintln!("search {} {MAIN_SIZE}: {}", shape.name(), row.summary());
        shapes.push(row);
    }
    let mut curve = Vec::new();
    for &size in &o.sizes {
        if let Some(row) = shapes.iter().find(|r| r.shape == Shape::Canonical && r.size == size) {
            curve.push(row.clone());
            continue;
        }
        let store = stores.join(format!("{}-{RATE}-{size}", Shape::Canonical.name()));
        let generating = Instant::now();
        let bytes = generate(&store, Shape::Canonical, RATE, size, None)?;
        let made = generating.elapsed();
        let mut row = search_row(&alp, &store, Shape::Canonical, size, o.runs)?;
        row.bytes = bytes;
        eprintln!("search canonical {size}: {} (store ready in {:.1} s)", row.summary(), made.as_secs_f64());
        curve.push(row);
    }

    let store = main_store;
    let gets = get_latency(&alp, &store, &[1, 8, 32], Duration::from_secs(o.seconds))?;
    let idle = idle_memory(&alp, &store, o.idle)?;
    eprintln!("idle: {} connections, VmRSS {} → {} KiB", idle.connections, idle.before_kib, idle.after_kib);

    let dir = std::env::temp_dir().join(format!("alp-serve-bench-{}", std::process::id()));
    let writes = write_latency(&alp, &dir.join("writes"), o.writes);
    let duration = Duration::from_secs(o.seconds);
    let group = match &writes {
        Ok(_) => {
            crate::serve_load::rows(&alp, &dir.join("group"), duration, &[1, 32], crate::serve_load::ROUNDS)
                .map(|rows| crate::serve_load::render(&rows, duration))
        }
        Err(e) => Err(e.clone()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let writes = writes?;
    let group = group?;
    eprintln!("{group}");

    let report = Report {
        shapes: &shapes,
        curve: &curve,
        gets: &gets,
        idle: &idle,
        writes: &writes,
        group: &group,
        runs: o.runs,
        seconds: o.seconds,
        ran: run.ran(),
        dentries,
    };
    // The section `cargo xtask serve-attack` writes into the same file is kept, and so are the receipts of the
    // last run when this one measured none.
    let last = std::fs::read_to_string(root().join("BENCHMARKS-serve.md")).unwrap_or_default();
    let receipts = match &receipts {
        Some(section) => section.as_str(),
        None => crate::measure::section(&last, crate::serve_receipts::HEADING).unwrap_or_default(),
    };
    let attacks = crate::serve_attack::section(&last).unwrap_or_default();
    std::fs::write(
        root().join("BENCHMARKS-serve.md"),
        format!("{}{receipts}{eras}{attacks}", report.render()),
    )
    .map_err(|e| format!("cannot write BENCHMARKS-serve.md: {e}"))?;
    eprintln!("wrote BENCHMARKS-serve.md");
    Ok(())
}

/// The tokens of `n` clients of the store's role `bench`.
fn tokens(alp: &Path, store: &Path, n: usize) -> Result<Vec<String>, String> {
    (0..n).map(|i| token(alp, &store.join("memory"), &store.join("agents"), i)).collect()
}

#[derive(Clone)]
struct SearchRow {
    shape: Shape,
    size: usize,
    bytes: u64,
    matches: usize,
    /// More matched than one answer holds.
    more: bool,
    /// The first search of each round, right after ripgrep's run.
    after_rg: Duration,
    /// The two searches that follow it.
    repeated: Duration,
    repeated_p90: Duration,
    rg: Duration,
}

impl SearchRow {
    fn ratio(&self, d: Duration) -> f64 {
        d.as_secs_f64() / self.rg.as_secs_f64().max(1e-9)
    }

    fn summary(&self) -> String {
        format!(
            "search {:.2} ms repeated ({:.2} ms after rg), rg {:.2} ms: {:.2}× ({:.2}×)",
            ms(self.repeated),
            ms(self.after_rg),
            ms(self.rg),
            self.ratio(self.repeated),
            self.ratio(self.after_rg)
        )
    }
}

fn rg_time(store: &Path) -> Result<Duration, String> {
    time(&mut ripgrep(&store.join("memory/projects")))
}

/// Rounds of one ripgrep run then three `memory_search` calls over one kept-alive connection.
fn search_row(alp: &Path, store: &Path, shape: Shape, size: usize, runs: usize) -> Result<SearchRow, String> {
    let bytes = generate(store, shape, RATE, size, None)?;
    let tokens = tokens(alp, store, 1)?;
    let mut server = Server::start(alp, &store.join("memory"), &store.join("agents"), false)?;
    let result = (|| {
        let mut client = Client::connect(&server.addr, &tokens[0])?;
        let arguments = format!(r#"{{"query":"{} {}","limit":{LIMIT}}}"#, TERMS[0], TERMS[1]);
        // One answer holds at most MAX_ANSWER_ENTRIES; past that, it says `"more":true`.
        let all = format!(
            r#"{{"query":"{} {}","limit":{}}}"#,
            TERMS[0],
            TERMS[1],
            size.clamp(1, MAX_ANSWER_ENTRIES)
        );
        let answer = client.call("memory_search", &all)?;
        let matches = answer.matches("\\\"score\\\":").count().max(answer.matches("\"score\":").count());
        let more = answer.contains("\\\"more\\\":true") || answer.contains("\"more\":true");
        for _ in 0..3 {
            client.call("memory_search", &arguments)?;
            rg_time(store)?;
        }
        let (mut first, mut repeated, mut rg) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            rg.push(rg_time(store)?);
            for k in 0..3 {
                let started = Instant::now();
                client.call("memory_search", &arguments)?;
                let took = started.elapsed();
                if k == 0 { first.push(took) } else { repeated.push(took) }
            }
        }
        Ok(SearchRow {
            shape,
            size,
            bytes,
            matches,
            more,
            after_rg: quantile(&first, 0.5),
            repeated: quantile(&repeated, 0.5),
            repeated_p90: quantile(&repeated, 0.9),
            rg: quantile(&rg, 0.5),
        })
    })();
    server.stop()?;
    result
}

struct GetRow {
    clients: usize,
    calls: usize,
    p50: Duration,
    p99: Duration,
    rate: f64,
}

/// `memory_get` latency with each count of clients, each on its own connection and token, back to back.
fn get_latency(
    alp: &Path,
    store: &Path,
    counts: &[usize],
    duration: Duration,
) -> Result<Vec<GetRow>, String> {
    let most = counts.iter().copied().max().unwrap_or(1);
    let tokens = tokens(alp, store, most)?;
    let mut server = Server::start(alp, &store.join("memory"), &store.join("agents"), false)?;
    let result = (|| {
        let mut rows = Vec::new();
        let arguments = r#"{"id":"project:p000:notes:n000000"}"#;
        let mut warm = Client::connect_for(&server.addr, &tokens[0], arguments)?;
        for _ in 0..50 {
            warm.get()?;
        }
        for &n in counts {
            let stop = Arc::new(AtomicBool::new(false));
            let mut clients = Vec::new();
            for token in &tokens[..n] {
                clients.push(Client::connect_for(&server.addr, token, arguments)?);
            }
            let started = Instant::now();
            let handles: Vec<_> = clients
                .into_iter()
                .map(|mut client| {
                    let stop = Arc::clone(&stop);
                    std::thread::spawn(move || -> Result<Vec<Duration>, String> {
                        let mut samples = Vec::new();
                        while !stop.load(Ordering::Relaxed) {
                            let call = Instant::now();
                            client.get()?;
                            samples.push(call.elapsed());
                        }
                        Ok(samples)
                    })
                })
                .collect();
            std::thread::sleep(duration);
            stop.store(true, Ordering::Relaxed);
            let mut samples = Vec::new();
            for handle in handles {
                samples.extend(handle.join().map_err(|_| "a client thread panicked".to_owned())??);
            }
            let took = started.elapsed();
            let calls = samples.len();
            let row = GetRow {
                clients: n,
                calls,
                p50: quantile(&samples, 0.5),
                p99: quantile(&samples, 0.99),
                rate: calls as f64 / took.as_secs_f64(),
            };
            eprintln!(
                "get {n} clients: p50 {:.3} ms, p99 {:.3} ms, {:.0}/s",
                ms(row.p50),
                ms(row.p99),
                row.rate
            );
            rows.push(row);
        }
        Ok(rows)
    })();
    server.stop()?;
    result
}

struct Idle {
    connections: usize,
    before_kib: u64,
    after_kib: u64,
}

fn vm_rss_kib(pid: u32) -> Result<u64, String> {
    proc_status(pid, "VmRSS")
}

/// The server's resident set before and after `n` more connections, each of which made one call and is idle.
fn idle_memory(alp: &Path, store: &Path, n: usize) -> Result<Idle, String> {
    let tokens = tokens(alp, store, 1)?;
    // Past `--max-connections` (256 by default) the server makes new connections wait: room for all of them.
    let most = (n + 16).to_string();
    let mut server = Server::start_with(
        alp,
        &store.join("memory"),
        &store.join("agents"),
        false,
        &["--max-connections", &most],
    )?;
    let result = (|| {
        let arguments = r#"{"id":"project:p000:notes:n000000"}"#;
        // Warm: the server's first calls, and a few connections opened and closed.
        for _ in 0..4 {
            let mut client = Client::connect_for(&server.addr, &tokens[0], arguments)?;
            for _ in 0..20 {
                client.get()?;
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        let before_kib = vm_rss_kib(server.pid())?;
        let mut open = Vec::with_capacity(n);
        for _ in 0..n {
            let mut client = Client::connect_for(&server.addr, &tokens[0], arguments)?;
            client.get()?;
            open.push(client);
        }
        std::thread::sleep(Duration::from_millis(500));
        let after_kib = vm_rss_kib(server.pid())?;
        // Every connection is still served.
        for client in &mut open {
            client.get()?;
        }
        drop(open);
        Ok(Idle { connections: n, before_kib, after_kib })
    })();
    server.stop()?;
    result
}

struct Writes {
    creates: Vec<Duration>,
    updates: Vec<Duration>,
}

/// `memory_create` and `memory_update`, alternating, `n` of each, one client, on a store of 100 entries whose
/// role may write every project.
fn write_latency(alp: &Path, dir: &Path, n: usize) -> Result<Writes, String> {
    writable_notes(dir, 100)?;
    let (memory, agents) = (dir.join("memory"), dir.join("agents"));
    let token = token(alp, &memory, &agents, 0)?;
    let mut server = Server::start(alp, &memory, &agents, false)?;
    let result = (|| {
        let mut client = Client::connect(&server.addr, &token)?;
        let content = NOTE;
        let target = "project:w:notes:updated";
        let created =
            client.call("memory_create", &format!(r#"{{"id":"{target}","content":"{content}"}}"#))?;
        let mut version = version_of(&created)?;
        let (mut creates, mut updates) = (Vec::new(), Vec::new());
        // A few untimed calls of each first.
        for i in 0..(n + 5) {
            let started = Instant::now();
            client.call(
                "memory_create",
                &format!(r#"{{"id":"project:w{}:notes:n{i}","content":"{content} {i}"}}"#, i / 100),
            )?;
            let create = started.elapsed();
            let started = Instant::now();
            let updated = client.call(
                "memory_update",
                &format!(r#"{{"id":"{target}","expectedVersion":{version},"content":"{content} {i}"}}"#),
            )?;
            let update = started.elapsed();
            version = version_of(&updated)?;
            if i >= 5 {
                creates.push(create);
                updates.push(update);
            }
        }
        Ok(Writes { creates, updates })
    })();
    server.stop()?;
    result
}

/// The version of the entry a create or update answered with.
fn version_of(answer: &str) -> Result<u64, String> {
    let value: serde_json::Value =
        serde_json::from_str(answer).map_err(|e| format!("an answer that is not JSON ({e}): {answer}"))?;
    let result = &value["result"];
    if let Some(version) = result["structuredContent"]["version"].as_u64() {
        return Ok(version);
    }
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let entry: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    entry["version"].as_u64().ok_or_else(|| format!("an answer without the entry's version: {answer}"))
}

struct Report<'a> {
    shapes: &'a [SearchRow],
    curve: &'a [SearchRow],
    gets: &'a [GetRow],
    idle: &'a Idle,
    writes: &'a Writes,
    group: &'a str,
    runs: usize,
    seconds: u64,
    ran: Ran,
    /// The kernel's cached dentries when the searches started.
    dentries: String,
}

impl Report<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Benchmarks of `alp serve`\n");
        let _ = writeln!(
            out,
            "{}. Every figure is measured through the real release `alp serve` over HTTP/1.1 on 127.0.0.1 (raw \
             JSON-RPC `tools/call` POSTs to `/mcp` on kept-alive connections, one bearer token per client), and every \
             ratio compares numbers measured in the same run. Every call appends its audit record.\n",
            self.ran.generated("serve-bench", &machine())
        );
        self.search(&mut out);
        self.gets(&mut out);
        self.idle(&mut out);
        self.writes(&mut out);
        let _ = writeln!(out, "## Group commit\n");
        let _ = writeln!(
            out,
            "As `cargo xtask serve-load` measures it, on a store of 100 entries. Goals: at most one fsync per four \
             audit records with 32 clients, and at least 2.5× the reads per second of one client.\n"
        );
        let _ = writeln!(out, "{}", self.group.trim_end());
        let _ = writeln!(out);
        out
    }

    fn search(&self, out: &mut String) {
        let _ = writeln!(out, "## Warm `memory_search` against ripgrep\n");
        let _ = writeln!(
            out,
            "`memory_search` `{} {}` (limit {LIMIT}) on one kept-alive connection to a server started on the store, \
             against `rg -i -c -e {} -e {}` over the same files (the stores of `cargo xtask bench`: entries of about \
             800 bytes, 400 per project, {RATE}% holding each term). {} rounds of one ripgrep run then three searches; \
             medians. *After rg* is the first search of a round (the CPU caches hold ripgrep's work), *repeated* the \
             two after it. Goal: a warm search over 10,000 entries at most 0.25× ripgrep. A warm search reads no \
             file whose stamp is unchanged: it checks each cached entry's stamp with one `fstat` of the file the \
             entry holds open, while the file's directory is unchanged, and otherwise by name, which looks the name \
             up in the kernel's dentry cache, as each of ripgrep's opens does (it held {} dentries when the \
             searches started: the more it holds, the longer its hash chains). Past the cache's budget (64 MiB, \
             about 30,000 such entries) the other files are read again by every search, as at 100,000 entries. \
             *Matches*: what one search without the limit finds (one answer holds at most {MAX_ANSWER_ENTRIES} \
             entries: `{MAX_ANSWER_ENTRIES}+` when more matched).\n",
            TERMS[0], TERMS[1], TERMS[0], TERMS[1], self.runs, self.dentries
        );
        let header = "| shape | entries | MB | matches | search, repeated (p90) | search, after rg | ripgrep | \
                      repeated / rg | after rg / rg |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|";
        let row = |r: &SearchRow| {
            format!(
                "| {} | {} | {:.1} | {}{} | {:.2} ms ({:.2} ms) | {:.2} ms | {:.2} ms | **{:.2}** | {:.2} |",
                r.shape.name(),
                r.size,
                r.bytes as f64 / 1e6,
                r.matches,
                if r.more { "+" } else { "" },
                ms(r.repeated),
                ms(r.repeated_p90),
                ms(r.after_rg),
                ms(r.rg),
                r.ratio(r.repeated),
                r.ratio(r.after_rg)
            )
        };
        let _ = writeln!(out, "{header}");
        for r in self.shapes {
            let _ = writeln!(out, "{}", row(r));
        }
        let _ = writeln!(out, "\n### The curve (`canonical`)\n");
        let _ = writeln!(out, "{header}");
        for r in self.curve {
            let _ = writeln!(out, "{}", row(r));
        }
        let _ = writeln!(out, "\nMarginal cost of an entry between consecutive sizes (repeated search):\n");
        let _ = writeln!(out, "| sizes | search µs/entry | ripgrep µs/entry |\n|---|---:|---:|");
        for pair in self.curve.windows(2) {
            let entries = (pair[1].size - pair[0].size).max(1) as f64;
            let per = |a: Duration, b: Duration| (b.as_secs_f64() - a.as_secs_f64()) / entries * 1e6;
            let _ = writeln!(
                out,
                "| {} → {} | {:.2} | {:.2} |",
                pair[0].size,
                pair[1].size,
                per(pair[0].repeated, pair[1].repeated),
                per(pair[0].rg, pair[1].rg)
            );
        }
        let _ = writeln!(out);
    }

    fn gets(&self, out: &mut String) {
        let _ = writeln!(out, "## `memory_get` under concurrent clients\n");
        let _ = writeln!(
            out,
            "One entry read by every client of a server on the 10,000-entry `canonical` store, each client on its \
             own connection with its own token, calling back to back for {} s; percentiles of every call's round \
             trip.\n",
            self.seconds
        );
        let _ = writeln!(
            out,
            "| clients | calls | p50 | p99 | calls/s | × one client |\n|---:|---:|---:|---:|---:|---:|"
        );
        let base = self.gets.first().map_or(1.0, |r| r.rate);
        for r in self.gets {
            let _ = writeln!(
                out,
                "| {} | {} | {:.3} ms | {:.3} ms | {:.0} | {:.2}× |",
                r.clients,
                r.calls,
                ms(r.p50),
                ms(r.p99),
                r.rate,
                r.rate / base.max(1e-9)
            );
        }
        let _ = writeln!(out);
    }

    fn idle(&self, out: &mut String) {
        let i = self.idle;
        let grew = i.after_kib.saturating_sub(i.before_kib);
        let _ = writeln!(out, "## Memory per idle connection\n");
        let _ = writeln!(
            out,
            "The server's `VmRSS` (`/proc/PID/status`) after a few warm-up calls: {} KiB; after {} more connections, \
             each of which made one `memory_get` and then stayed open and idle: {} KiB. **{:.1} KiB per idle \
             connection** ({} KiB / {}; the server started with `--max-connections` above that count, so none \
             waited). The resident set counts pages touched, so this is what the connections cost \
             the machine, allocator slack included; every connection was still served afterwards.\n",
            i.before_kib,
            i.connections,
            i.after_kib,
            grew as f64 / i.connections.max(1) as f64,
            grew,
            i.connections
        );
    }

    fn writes(&self, out: &mut String) {
        let mut creates = self.writes.creates.clone();
        let mut updates = self.writes.updates.clone();
        let _ = writeln!(out, "## Writes\n");
        let _ = writeln!(
            out,
            "One client on a store of 100 entries, alternating `memory_create` of a new entry (100 per project) and \
             `memory_update` of one entry with its `expectedVersion` ({} of each after 5 untimed). Each write is \
             synced before it is answered, and so is its audit record; an update also keeps the version it replaces \
             in the store's history.\n",
            creates.len()
        );
        let _ = writeln!(out, "| call | p50 | p95 | p95 / p50 |\n|---|---:|---:|---:|");
        for (name, samples) in [("`memory_create`", &mut creates), ("`memory_update`", &mut updates)] {
            let p50 = quantile(samples, 0.5);
            let p95 = quantile(samples, 0.95);
            let _ = writeln!(
                out,
                "| {name} | {:.3} ms | {:.3} ms | {:.2} |",
                ms(p50),
                ms(p95),
                p95.as_secs_f64() / p50.as_secs_f64().max(1e-9)
            );
        }
        let _ = writeln!(out);
    }
}

/// Writes `section` into `BENCHMARKS-serve.md` in place of the section with its heading (its first line), or
/// before the attacks' section when the file has none, keeping everything else.
fn replace_section(section: &str) -> Result<(), String> {
    let path = root().join("BENCHMARKS-serve.md");
    let last = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let heading = section.lines().next().unwrap_or_default();
    let text = match crate::measure::section(&last, heading) {
        Some(old) => last.replacen(old, section, 1),
        None => match crate::serve_attack::section(&last) {
            Some(attacks) => last.replacen(attacks, &format!("{section}{attacks}"), 1),
            None => format!("{last}{section}"),
        },
    };
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("wrote the section {heading:?} of BENCHMARKS-serve.md");
    Ok(())
}
