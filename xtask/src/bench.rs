//! `cargo xtask bench [--sizes 1000,10000,50000] [--shapes canonical,seed,messy,none] [--rates 4,80] [--runs N]
//! [--quick] [--no-criterion] [--old-commit REV | --old PATH | --no-old]`
//!
//! 1. Builds `alp` in release mode, installs ripgrep and GNU time (`apt-get install -y ripgrep time`) when absent,
//!    and builds the `alp` of an older commit for comparison (default `5a3d736`, the last one before the workspace
//!    was reshaped; its source is exported with `git archive` into `target/bench-old/`, built there once).
//! 2. Generates one Markdown store per shape, match rate and size under `target/bench-stores/` (entries of about
//!    800 bytes, 400 per project, written directly as files). Shapes: `canonical` (the frontmatter alp writes),
//!    `seed` (the seed's hand-written notes: kind, version, second-precision timestamps, no importance), `messy`
//!    (frontmatter as people write it: comments, quoted values, unknown keys, offset timestamps, flow and block
//!    lists, titles of several words, and one file in twenty with a nested mapping one level deep),
//!    `none` (no frontmatter). Rates: the share of entries holding a query term.
//! 3. Times, interleaved in the same rounds, `alp memory search T1 T2 --json` with `--limit 20` and without, the
//!    older `alp` the same two ways, and `rg -i -c -e T1 -e T2` over the same directory; reports medians and ratios.
//! 4. Peak memory (`/usr/bin/time -f %M`) of a search with `--limit 20` on each store of the largest size, and
//!    `alp memory context` over a 500-entry project.
//! 5. Runs the criterion benchmarks (`cargo bench --workspace`), among them the warm server's cached search, and
//!    collects their estimates.
//! 6. Times a warm `alp mcp` server over 10,000 entries against CLI processes and ripgrep, as `cargo xtask
//!    mcp-latency` does.
//! 7. Writes `BENCHMARKS.md` and `benchmarks/search.svg`.
//!
//! `--quick` (a smoke run): sizes 1000 and 10000, 5 rounds, short criterion runs.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::corpus::{Shape, TERMS, generate, ripgrep};
use crate::flags::{Old, Runs};
use crate::measure::{interleaved, machine, median, ms, percentile, time, utc_now};
use crate::root;
use crate::setup::{ensure_tool, release_alp};

const DEFAULT_OLD: &str = "5a3d736";

/// `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Store sizes [default: 1000,10000,50000; with --quick 1000,10000]
    #[arg(long, value_name = "N,N", value_delimiter = ',', value_parser = clap::value_parser!(usize))]
    sizes: Option<Vec<usize>>,
    /// Frontmatter shapes
    #[arg(long, value_name = "SHAPE,…", value_delimiter = ',', value_parser = crate::flags::shape,
          default_value = "canonical,seed,messy,none")]
    shapes: Vec<Shape>,
    /// Shares of entries holding a query term, in percent
    #[arg(long, value_name = "P,P", value_delimiter = ',', value_parser = crate::flags::percentage,
          default_value = "4,80")]
    rates: Vec<u32>,
    /// [default: 11; with --quick 5]
    #[command(flatten)]
    runs: Runs,
    /// A smoke run: sizes 1000 and 10000, 5 rounds, short criterion runs
    #[arg(long)]
    quick: bool,
    /// Skip the criterion benchmarks
    #[arg(long)]
    no_criterion: bool,
    #[command(flatten)]
    old: Old,
    /// Run `cargo xtask peers` instead, with the other flags
    #[arg(long)]
    peers: bool,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let mut sizes = args.sizes.clone().unwrap_or(if args.quick {
        vec![1_000, 10_000]
    } else {
        vec![1_000, 10_000, 50_000]
    });
    sizes.sort_unstable();
    sizes.dedup();
    let runs = args.runs.or(if args.quick { 5 } else { 11 });
    let started = Instant::now();
    let alp = release_alp()?;
    ensure_tool("rg", "ripgrep")?;
    ensure_tool("/usr/bin/time", "time")?;
    let old = args.old.binary(DEFAULT_OLD)?;
    let stores = root().join("target/bench-stores");
    let mut rows = Vec::new();
    for &shape in &args.shapes {
        for &rate in &args.rates {
            for &size in &sizes {
                let store = stores.join(format!("{}-{rate}-{size}", shape.name()));
                let bytes = generate(&store, shape, rate, size, None)?;
                let row = compare(
                    &alp,
                    old.as_ref().map(|(path, _)| path.as_path()),
                    &store,
                    shape,
                    rate,
                    size,
                    bytes,
                    runs,
                )?;
                eprintln!(
                    "{:>9} {rate:>2}% {size:>6}: alp {:.1} ms ({:.1} ms all), rg {:.1} ms, ratio {:.2} ({:.2} all){}",
                    shape.name(),
                    ms(row.alp_limit),
                    ms(row.alp_all),
                    ms(row.rg),
                    row.ratio(row.alp_limit),
                    row.ratio(row.alp_all),
                    row.old_limit.map(|d| format!(", old {:.1} ms", ms(d))).unwrap_or_default()
                );
                rows.push(row);
            }
        }
    }
    let largest = sizes.last().copied().unwrap_or(0);
    let mut peaks = Vec::new();
    for &shape in &args.shapes {
        for &rate in &args.rates {
            let store = stores.join(format!("{}-{rate}-{largest}", shape.name()));
            peaks.push(Peak { shape, rate, size: largest, kib: peak_kib(&alp, &store)? });
        }
    }
    let context = context_timing(&alp, &stores.join("context-500"), runs.max(5) * 3)?;
    eprintln!("context over 500 entries: {:.2} ms (median)", ms(context.median));
    let criterion = if !args.no_criterion { criterion(args.quick)? } else { Vec::new() };
    let server = crate::mcp_latency::report(&alp, 10_000, if args.quick { 10 } else { 60 })?;
    let cache = std::fs::read_to_string(root().join("target/bench-cache-stats.txt")).ok();
    let report = Report {
        rows: &rows,
        peaks: &peaks,
        context: &context,
        estimates: &criterion,
        cache: cache.as_deref(),
        server: &server,
        old: old.as_ref().map(|(_, label)| label.as_str()),
        runs,
        took: started.elapsed(),
    };
    std::fs::write(root().join("BENCHMARKS.md"), report.render())
        .map_err(|e| format!("cannot write BENCHMARKS.md: {e}"))?;
    let plots = root().join("benchmarks");
    std::fs::create_dir_all(&plots).map_err(|e| format!("cannot create benchmarks/: {e}"))?;
    std::fs::write(plots.join("search.svg"), svg(&rows))
        .map_err(|e| format!("cannot write the plot: {e}"))?;
    eprintln!("wrote BENCHMARKS.md and benchmarks/search.svg");
    Ok(())
}

struct Row {
    shape: Shape,
    rate: u32,
    size: usize,
    bytes: u64,
    matches: usize,
    alp_limit: Duration,
    alp_all: Duration,
    rg: Duration,
    old_limit: Option<Duration>,
    old_all: Option<Duration>,
}

impl Row {
    fn ratio(&self, d: Duration) -> f64 {
        d.as_secs_f64() / self.rg.as_secs_f64().max(1e-9)
    }
}

pub(crate) fn search_command(alp: &Path, store: &Path, limit: bool) -> Command {
    let mut c = Command::new(alp);
    c.arg("--root").arg(store.join("memory")).arg("--agents").arg(store.join("agents"));
    c.args(["--as", "bench", "--json", "memory", "search", TERMS[0], TERMS[1]]);
    if limit {
        c.args(["--limit", "20"]);
    }
    c
}

/// A copy of `store`'s entries and agent definitions for the older `alp`, with an audit log of its own
/// (`<store>-old`, made afresh): the store's own log holds records of fields an older `alp` cannot read (`door`,
/// `shown`), and it refuses to append after them.
fn old_copy(store: &Path) -> Result<std::path::PathBuf, String> {
    let mut name = store.file_name().unwrap_or_default().to_owned();
    name.push("-old");
    let copy = store.with_file_name(name);
    if copy.exists() {
        std::fs::remove_dir_all(&copy).map_err(|e| format!("cannot remove {}: {e}", copy.display()))?;
    }
    crate::serve_receipts::copy_store(store, &copy)?;
    Ok(copy)
}

/// Times every command of a store in the same rounds (after one untimed run of each), and reports medians.
#[expect(clippy::too_many_arguments, reason = "one row's worth of parameters, each named")]
fn compare(
    alp: &Path,
    old: Option<&Path>,
    store: &Path,
    shape: Shape,
    rate: u32,
    size: usize,
    bytes: u64,
    runs: usize,
) -> Result<Row, String> {
    let output = search_command(alp, store, false).output().map_err(|e| format!("cannot run alp: {e}"))?;
    if !output.status.success() {
        return Err(format!("alp search failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let matches = String::from_utf8_lossy(&output.stdout).matches("\"score\":").count();
    let rg = || ripgrep(&store.join("memory/projects"));
    let old_store = old.map(|_| old_copy(store)).transpose()?;
    let mut commands: Vec<Box<dyn Fn() -> Command + '_>> = vec![
        Box::new(|| search_command(alp, store, true)),
        Box::new(|| search_command(alp, store, false)),
        Box::new(rg),
    ];
    if let (Some(old), Some(old_store)) = (old, &old_store) {
        commands.push(Box::new(move || search_command(old, old_store, true)));
        commands.push(Box::new(move || search_command(old, old_store, false)));
    }
    let mut medians = interleaved(&commands, runs)?.into_iter();
    let mut next = || medians.next().unwrap_or_default();
    let (alp_limit, alp_all, rg) = (next(), next(), next());
    let (old_limit, old_all) = match old {
        Some(_) => (Some(next()), Some(next())),
        None => (None, None),
    };
    Ok(Row { shape, rate, size, bytes, matches, alp_limit, alp_all, rg, old_limit, old_all })
}

struct Peak {
    shape: Shape,
    rate: u32,
    size: usize,
    kib: u64,
}

/// The largest resident set of a search with `--limit 20`, in KiB, as `/usr/bin/time -f %M` reports it (the
/// largest of three runs).
fn peak_kib(alp: &Path, store: &Path) -> Result<u64, String> {
    let mut peak = 0;
    for _ in 0..3 {
        let search = search_command(alp, store, true);
        let output = Command::new("/usr/bin/time")
            .args(["-f", "%M"])
            .arg(search.get_program())
            .args(search.get_args())
            .stdout(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run /usr/bin/time: {e}"))?;
        let text = String::from_utf8_lossy(&output.stderr);
        let kib: u64 = text
            .lines()
            .last()
            .and_then(|line| line.trim().parse().ok())
            .ok_or_else(|| format!("/usr/bin/time gave no peak: {text}"))?;
        peak = peak.max(kib);
    }
    Ok(peak)
}

pub(crate) struct ContextTiming {
    pub(crate) median: Duration,
    pub(crate) p90: Duration,
    pub(crate) baseline: Duration,
    pub(crate) ripgrep: Duration,
}

/// `alp memory context` over a project of 500 entries (mixed frontmatter), `alp --version` as the floor of starting
/// a process, and ripgrep over the same 500 files, interleaved.
pub(crate) fn context_timing(alp: &Path, store: &Path, runs: usize) -> Result<ContextTiming, String> {
    generate(store, Shape::Messy, 20, 500, Some("ctx"))?;
    let context = || {
        let mut c = Command::new(alp);
        c.arg("--root").arg(store.join("memory")).arg("--agents").arg(store.join("agents"));
        c.args(["--as", "bench", "--json", "memory", "context", TERMS[0], TERMS[1], "--budget", "4000"]);
        c.args(["--prefix", "project:ctx"]);
        c
    };
    let version = || {
        let mut c = Command::new(alp);
        c.arg("--version");
        c
    };
    let rg = || ripgrep(&store.join("memory/projects/ctx"));
    time(&mut context())?;
    time(&mut rg())?;
    let (mut samples, mut floor, mut searched) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        samples.push(time(&mut context())?);
        floor.push(time(&mut version())?);
        searched.push(time(&mut rg())?);
    }
    Ok(ContextTiming {
        median: median(&samples),
        p90: percentile(&samples, 90),
        baseline: median(&floor),
        ripgrep: median(&searched),
    })
}

struct Estimate {
    name: String,
    mean_ns: f64,
}

/// Runs the criterion benchmarks (`cargo bench --workspace --bench "*"`) and reads every criterion estimate of this run.
fn criterion(quick: bool) -> Result<Vec<Estimate>, String> {
    let dir = root().join("target/criterion");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(root().join("target/bench-cache-stats.txt"));
    let mut args = vec!["bench", "--workspace", "--bench", "*", "--", "--noplot"];
    if quick {
        args.extend(["--warm-up-time", "1", "--measurement-time", "2"]);
    }
    crate::run("cargo", &args)?;
    let mut estimates = Vec::new();
    collect(&dir, &dir, &mut estimates);
    estimates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(estimates)
}

fn collect(base: &Path, dir: &Path, out: &mut Vec<Estimate>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "new") {
                if let Some(estimate) = read_estimate(base, &path) {
                    out.push(estimate);
                }
            } else {
                collect(base, &path, out);
            }
        }
    }
}

fn read_estimate(base: &Path, new_dir: &Path) -> Option<Estimate> {
    let text = std::fs::read_to_string(new_dir.join("estimates.json")).ok()?;
    // {"mean":{"confidence_interval":{…},"point_estimate":123.4,…},…}
    let mean = text.split("\"mean\"").nth(1)?;
    let point = mean.split("\"point_estimate\":").nth(1)?;
    let number: String = point
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
        .collect();
    let name = new_dir.parent()?.strip_prefix(base).ok()?.to_string_lossy().into_owned();
    Some(Estimate { name, mean_ns: number.parse().ok()? })
}

fn human(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

struct Report<'a> {
    rows: &'a [Row],
    peaks: &'a [Peak],
    context: &'a ContextTiming,
    estimates: &'a [Estimate],
    cache: Option<&'a str>,
    /// What `mcp_latency::report` found.
    server: &'a str,
    old: Option<&'a str>,
    runs: usize,
    took: Duration,
}

impl Report<'_> {
    fn render(&self) -> String {
        let date = utc_now();
        let mut out = String::new();
        let _ = writeln!(out, "# Benchmarks\n");
        let _ = writeln!(
            out,
            "Generated by `cargo xtask bench` on {date} ({}; the whole run took {:.0} s). Do not edit by hand: run the \
             command again. Every ratio compares numbers measured in the same run, interleaved, on a shared and noisy \
             machine.\n",
            machine(),
            self.took.as_secs_f64()
        );
        self.search(&mut out);
        self.growth(&mut out);
        self.memory(&mut out);
        self.context(&mut out);
        self.criterion(&mut out);
        let _ = writeln!(out, "## A warm `alp mcp` server\n");
        let _ = writeln!(
            out,
            "The real server (`alp --as bench mcp`, a 64 MiB entry cache) spoken to over its standard input by a client \
             that times each round trip, against one `alp` process per call and against ripgrep, over 10,000 entries \
             (about 4% holding each term). The goal for a repeated `memory_search`: at most 0.25× ripgrep. \
             `cargo xtask mcp-latency` runs this part alone.\n"
        );
        let _ = writeln!(out, "{}", self.server.trim_end());
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "## Elsewhere\n\nThe PostgreSQL store against the Markdown store: [BENCHMARKS-postgres.md](BENCHMARKS-postgres.md) \
             (`cargo xtask pg-bench`).\n\n\
             `alp serve` over HTTP (search against ripgrep, get under concurrent clients, writes, idle connections, \
             group commit): [BENCHMARKS-serve.md](BENCHMARKS-serve.md) (`cargo xtask serve-bench`).\n\n\
             What keeping history costs (writes, listing and search over 20 versions per entry, disk per version): \
             [BENCHMARKS-history.md](BENCHMARKS-history.md) (`cargo xtask history-bench`).\n\n\
             `alp mcp` against the peers a user would otherwise pick: [BENCHMARKS-peers.md](BENCHMARKS-peers.md) \
             (`cargo xtask bench --peers`).\n\n\
             Search and context on a root mounted `nodev` (entry files opened directly) and on one without it: \
             [BENCHMARKS-nodev.md](BENCHMARKS-nodev.md) (`cargo xtask nodev-bench`, as root).\n"
        );
        out
    }

    fn search(&self, out: &mut String) {
        let (t0, t1) = (TERMS[0], TERMS[1]);
        let _ = writeln!(out, "## Search, end to end, against ripgrep\n");
        let _ = writeln!(
            out,
            "`alp --json memory search {t0} {t1} [--limit 20] > /dev/null` (process start, agent definition, policy, one \
             audit record appended and synced, listing, reading, matching and ranking every entry, the JSON output) \
             against `rg -i -c -e {t0} -e {t1} > /dev/null` over the same directory. Medians of {} interleaved rounds, \
             warm page cache. Goal: at most 1.0× ripgrep with `--limit 20` for every shape and rate.\n",
            self.runs
        );
        let _ = writeln!(
            out,
            "Shapes: `canonical` (what alp writes), `seed` (the seed's notes: kind, version, second-precision \
             timestamps), `messy` (comments, quoted values, unknown keys, offset timestamps, flow and block lists, \
             titles of several words; one file in twenty has a nested mapping one level deep), `none` (no \
             frontmatter). Rate: the share of entries holding a term; *matches* is what alp finds without a limit.\n"
        );
        let old = self.old.map(|rev| format!(" | old ({rev}) 20 | old / rg"));
        let _ = writeln!(
            out,
            "| shape | rate | entries | MB | matches | alp `--limit 20` | alp (all) | ripgrep | alp/rg 20 | alp/rg all{} |",
            old.clone().unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:{}|",
            if old.is_some() { "|---:|---:" } else { "" }
        );
        for row in self.rows {
            let old = match row.old_limit {
                Some(d) => format!(" | {:.1} ms | {:.2}", ms(d), row.ratio(d)),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {}% | {} | {:.1} | {} | {:.1} ms | {:.1} ms | {:.1} ms | **{:.2}** | {:.2}{old} |",
                row.shape.name(),
                row.rate,
                row.size,
                row.bytes as f64 / 1e6,
                row.matches,
                ms(row.alp_limit),
                ms(row.alp_all),
                ms(row.rg),
                row.ratio(row.alp_limit),
                row.ratio(row.alp_all),
            );
        }
        let _ = writeln!(out, "\n![alp / ripgrep against store size](benchmarks/search.svg)\n");
        if let Some(rev) = self.old {
            let _ = writeln!(
                out,
                "Before and after the workspace was reshaped: the `alp` of {rev} on the same stores in the same rounds \
                 (new / old, `--limit 20` and without):\n"
            );
            let _ = writeln!(out, "| shape | rate | entries | new/old 20 | new/old all |");
            let _ = writeln!(out, "|---|---:|---:|---:|---:|");
            for row in self.rows {
                if let (Some(limit), Some(all)) = (row.old_limit, row.old_all) {
                    let _ = writeln!(
                        out,
                        "| {} | {}% | {} | {:.2} | {:.2} |",
                        row.shape.name(),
                        row.rate,
                        row.size,
                        row.alp_limit.as_secs_f64() / limit.as_secs_f64().max(1e-9),
                        row.alp_all.as_secs_f64() / all.as_secs_f64().max(1e-9)
                    );
                }
            }
            let _ = writeln!(out);
        }
    }

    fn growth(&self, out: &mut String) {
        let _ = writeln!(out, "## Growth\n");
        let _ = writeln!(
            out,
            "The marginal cost of an entry between consecutive sizes (`--limit 20`; the smallest size also pays process \
             start, the audit record and the agent definition). Equal figures mean linear growth.\n"
        );
        let _ = writeln!(out, "| shape | rate | alp µs/entry | ripgrep µs/entry |");
        let _ = writeln!(out, "|---|---:|---|---|");
        let mut keys: Vec<(Shape, u32)> = self.rows.iter().map(|r| (r.shape, r.rate)).collect();
        keys.dedup();
        for (shape, rate) in keys {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.shape == shape && r.rate == rate).collect();
            let per_entry = |pick: &dyn Fn(&Row) -> Duration| {
                rows.windows(2)
                    .map(|pair| {
                        let per = (pick(pair[1]).as_secs_f64() - pick(pair[0]).as_secs_f64())
                            / (pair[1].size - pair[0].size).max(1) as f64;
                        format!("{:.2} ({}→{})", per * 1e6, pair[0].size, pair[1].size)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let _ = writeln!(
                out,
                "| {} | {rate}% | {} | {} |",
                shape.name(),
                per_entry(&|r| r.alp_limit),
                per_entry(&|r| r.rg)
            );
        }
        let _ = writeln!(out);
    }

    fn memory(&self, out: &mut String) {
        let _ = writeln!(out, "## Peak memory\n");
        let _ = writeln!(
            out,
            "Largest resident set of `alp memory search {} {} --limit 20` (`/usr/bin/time -f %M`, the largest of three \
             runs). Goal: under 64 MiB at 50,000 entries.\n",
            TERMS[0], TERMS[1]
        );
        let _ = writeln!(out, "| shape | rate | entries | peak |");
        let _ = writeln!(out, "|---|---:|---:|---:|");
        for peak in self.peaks {
            let _ = writeln!(
                out,
                "| {} | {}% | {} | {:.1} MiB |",
                peak.shape.name(),
                peak.rate,
                peak.size,
                peak.kib as f64 / 1024.0
            );
        }
        let _ = writeln!(out);
    }

    fn context(&self, out: &mut String) {
        let c = self.context;
        let _ = writeln!(out, "## Context\n");
        let _ = writeln!(
            out,
            "`alp --json memory context {} {} --budget 4000 --prefix project:ctx` over a project of 500 entries (mixed \
             frontmatter), end to end: median {:.2} ms, 90th percentile {:.2} ms (goal: under 5 ms). In the same \
             rounds, starting the process alone (`alp --version`) took {:.2} ms, and ripgrep over the same 500 files \
             (`rg -i -c -e {} -e {}`) {:.2} ms: the context took **{:.2}×** ripgrep's time.\n",
            TERMS[0],
            TERMS[1],
            ms(c.median),
            ms(c.p90),
            ms(c.baseline),
            TERMS[0],
            TERMS[1],
            ms(c.ripgrep),
            c.median.as_secs_f64() / c.ripgrep.as_secs_f64().max(f64::MIN_POSITIVE),
        );
    }

    fn criterion(&self, out: &mut String) {
        if self.estimates.is_empty() {
            return;
        }
        let _ = writeln!(out, "## Criterion benchmarks\n");
        let _ = writeln!(
            out,
            "Means from `cargo bench --workspace --bench '*'` in the same run (see each crate's `benches/`). `warm/` is \
             the long-running server's case: the same search repeated on a service whose store keeps its entry cache \
             (audit records appended and synced to a JSONL log), against ripgrep over the same 10,000 files. Goal: at \
             most 0.25× ripgrep.\n"
        );
        let _ = writeln!(out, "| benchmark | mean |");
        let _ = writeln!(out, "|---|---:|");
        for e in self.estimates {
            let _ = writeln!(out, "| `{}` | {} |", e.name, human(e.mean_ns));
        }
        let ratios = pair_ratios(self.estimates);
        if !ratios.is_empty() {
            let _ = writeln!(out, "\nRatios against the baseline measured in the same group:\n");
            for line in ratios {
                let _ = writeln!(out, "- {line}");
            }
        }
        if let Some(stats) = self.cache {
            let mut words = stats.split_whitespace();
            let mut field = |name: &str| {
                words.by_ref().skip_while(|w| *w != name).nth(1).map(str::to_owned).unwrap_or_default()
            };
            let (entries, bytes, per) = (field("entries"), field("bytes"), field("per_entry"));
            let _ = writeln!(
                out,
                "\nThe warm cache held {entries} entries in {bytes} bytes as counted against its budget: {per} bytes per \
                 entry (content, folded text, the ID twice, bookkeeping) for entries of about 700 bytes."
            );
        }
        let _ = writeln!(out);
    }
}

/// For every criterion group holding a benchmark whose name starts with `baseline`, the ratio of each other
/// benchmark of the group to it.
fn pair_ratios(estimates: &[Estimate]) -> Vec<String> {
    let mut lines = Vec::new();
    for baseline in
        estimates.iter().filter(|e| e.name.rsplit('/').next().is_some_and(|n| n.starts_with("baseline")))
    {
        let group = baseline.name.rsplit_once('/').map_or("", |(g, _)| g);
        for other in estimates.iter().filter(|e| {
            e.name != baseline.name
                && e.name.rsplit_once('/').map_or("", |(g, _)| g) == group
                && !e.name.rsplit('/').next().is_some_and(|n| n.starts_with("baseline"))
        }) {
            lines.push(format!(
                "`{}` is {:.2}× `{}`",
                other.name,
                other.mean_ns / baseline.mean_ns.max(1e-9),
                baseline.name
            ));
        }
    }
    lines
}

/// alp / ripgrep (`--limit 20`) against store size, one line per shape and rate, with the goal of 1.0 marked.
fn svg(rows: &[Row]) -> String {
    let (w, h, pad) = (720.0, 400.0, 56.0);
    let max_size = rows.iter().map(|r| r.size).max().unwrap_or(1) as f64;
    let max_ratio = rows.iter().map(|r| r.ratio(r.alp_limit)).fold(1.2, f64::max) * 1.1;
    let x = |size: usize| pad + (size as f64 / max_size) * (w - 2.0 * pad - 120.0);
    let y = |v: f64| h - pad - (v / max_ratio) * (h - 2.0 * pad);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{t}\" text-anchor=\"middle\">entries in the store</text>\n\
         <text x=\"14\" y=\"{cy}\" transform=\"rotate(-90 14 {cy})\" text-anchor=\"middle\">alp / ripgrep (median, --limit 20)</text>\n",
        b = h - pad,
        r = w - pad - 120.0,
        cx = (w - 120.0) / 2.0,
        t = h - 14.0,
        cy = h / 2.0
    );
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{size}</text>",
            x(size),
            h - pad + 16.0
        );
    }
    for i in 0..=4 {
        let v = max_ratio * f64::from(i) / 4.0;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.2}</text>",
            pad - 6.0,
            y(v) + 4.0
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{pad}\" y1=\"{g:.1}\" x2=\"{:.1}\" y2=\"{g:.1}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#666\">goal 1.0</text>",
        w - pad - 120.0,
        pad + 4.0,
        y(1.0) - 4.0,
        g = y(1.0)
    );
    let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
    let mut keys: Vec<(Shape, u32)> = rows.iter().map(|r| (r.shape, r.rate)).collect();
    keys.dedup();
    for (i, (shape, rate)) in keys.iter().enumerate() {
        let color = colors[i % colors.len()];
        let points: Vec<String> = rows
            .iter()
            .filter(|r| r.shape == *shape && r.rate == *rate)
            .map(|r| format!("{:.1},{:.1}", x(r.size), y(r.ratio(r.alp_limit))))
            .collect();
        let dash = if *rate < 50 { "" } else { " stroke-dasharray=\"6 3\"" };
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            points.join(" ")
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{color}\">{} {rate}%</text>",
            w - pad - 110.0,
            pad + 16.0 * i as f64,
            shape.name()
        );
    }
    out.push_str("</svg>\n");
    out
}
