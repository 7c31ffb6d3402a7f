//! `cargo xtask bench [--sizes 1000,10000,50000] [--runs N] [--quick] [--no-criterion]`
//!
//! 1. Builds `alp` in release mode and installs ripgrep (`apt-get install -y ripgrep`) when `rg` is absent.
//! 2. Generates a Markdown store per size under `target/bench-stores/<size>/` (entries of about 800 bytes spread
//!    over projects of 400 entries, so no scope root reaches the 500-entry limit), written directly as files.
//! 3. Times, interleaved in the same run, `alp memory search T1 T2 --limit 20 --json` end to end (its audit record
//!    included) and `rg -i -c -e T1 -e T2` over the same directory, and reports medians and their ratio.
//! 4. Runs the criterion benchmarks (`cargo bench --workspace`) and collects their estimates.
//! 5. Writes `BENCHMARKS.md` and `benchmarks/search.svg`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::root;

const TERMS: [&str; 2] = ["postgres", "migration"];
const PER_PROJECT: usize = 400;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut sizes = vec![1_000usize, 10_000, 50_000];
    let mut runs = 15usize;
    let mut quick = false;
    let mut with_criterion = true;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--sizes" => {
                let list = rest.next().ok_or("--sizes needs a list like 1000,10000")?;
                sizes = list
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("--sizes: `{s}` is not a number")))
                    .collect::<Result<_, _>>()?;
            }
            "--runs" => {
                let n = rest.next().ok_or("--runs needs a number")?;
                runs = n.parse().map_err(|_| format!("--runs: `{n}` is not a number"))?;
            }
            "--quick" => quick = true,
            "--no-criterion" => with_criterion = false,
            other => return Err(format!("bench: unexpected argument `{other}`")),
        }
    }
    let started = Instant::now();
    crate::run("cargo", &["build", "--release", "-p", "alp-cli", "--bin", "alp"])?;
    let alp = root().join("target/release/alp");
    ensure_ripgrep()?;
    let stores = root().join("target/bench-stores");
    let mut rows = Vec::new();
    for &size in &sizes {
        let store = stores.join(size.to_string());
        let bytes = generate(&store, size)?;
        let row = compare(&alp, &store, size, bytes, runs)?;
        eprintln!(
            "{size:>6} entries ({:.1} MB): alp {:.1} ms, rg {:.1} ms, ratio {:.2}",
            bytes as f64 / 1e6,
            ms(row.alp),
            ms(row.rg),
            row.ratio()
        );
        rows.push(row);
    }
    let criterion = if with_criterion { criterion(quick)? } else { Vec::new() };
    let report = render(&rows, &criterion, started.elapsed());
    std::fs::write(root().join("BENCHMARKS.md"), report)
        .map_err(|e| format!("cannot write BENCHMARKS.md: {e}"))?;
    let plots = root().join("benchmarks");
    std::fs::create_dir_all(&plots).map_err(|e| format!("cannot create benchmarks/: {e}"))?;
    std::fs::write(plots.join("search.svg"), svg(&rows))
        .map_err(|e| format!("cannot write the plot: {e}"))?;
    eprintln!("wrote BENCHMARKS.md and benchmarks/search.svg");
    Ok(())
}

fn ensure_ripgrep() -> Result<(), String> {
    if Command::new("rg").arg("--version").stdout(Stdio::null()).status().is_ok_and(|s| s.success()) {
        return Ok(());
    }
    crate::run("apt-get", &["install", "-y", "ripgrep"])
        .map_err(|e| format!("ripgrep is needed for the comparison and could not be installed: {e}"))
}

/// A deterministic generator (a 64-bit LCG), so every run measures the same stores.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        let len = u64::try_from(words.len()).unwrap_or(1);
        words[usize::try_from(self.next() % len).unwrap_or(0)]
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

/// Writes `size` entries under `store` unless a complete store is already there; returns the bytes of Markdown.
fn generate(store: &Path, size: usize) -> Result<u64, String> {
    let marker = store.join(".complete");
    let fail = |e: std::io::Error| format!("cannot write the bench store {}: {e}", store.display());
    if marker.is_file() {
        let text = std::fs::read_to_string(&marker).map_err(fail)?;
        if let Ok(bytes) = text.trim().parse() {
            return Ok(bytes);
        }
    }
    if store.exists() {
        std::fs::remove_dir_all(store).map_err(fail)?;
    }
    let agents = store.join("agents");
    std::fs::create_dir_all(&agents).map_err(fail)?;
    std::fs::write(agents.join("bench.yaml"), "role: bench\nmemory:\n  read: [\"project:*\"]\n")
        .map_err(fail)?;
    let mut rng = Lcg(u64::try_from(size).unwrap_or(0) ^ 0x5eed);
    let mut bytes = 0u64;
    for i in 0..size {
        let dir = store.join(format!("memory/projects/p{:03}/notes", i / PER_PROJECT));
        if i % PER_PROJECT == 0 {
            std::fs::create_dir_all(&dir).map_err(fail)?;
        }
        let mut content = String::with_capacity(800);
        while content.len() < 640 {
            content.push_str(rng.pick(WORDS));
            content.push(if rng.next().is_multiple_of(12) { '\n' } else { ' ' });
        }
        // About 4% of entries mention each term, 0.4% both.
        for term in TERMS {
            if rng.next().is_multiple_of(25) {
                content.push_str(term);
                content.push(' ');
            }
        }
        let minute = i % 60;
        let text = format!(
            "---\nkind: fact\nversion: 1\ncreatedAt: 2026-10-01T10:{minute:02}:00.000Z\n\
             updatedAt: 2026-10-0{}T10:{minute:02}:00.000Z\ntype: knowledge\nkey: note-{i}\nimportance: medium\n\
             source: bench-generator\n---\n{content}\n",
            1 + i % 9
        );
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("n{i:06}.md")), text).map_err(fail)?;
    }
    std::fs::write(&marker, bytes.to_string()).map_err(fail)?;
    Ok(bytes)
}

struct Row {
    size: usize,
    bytes: u64,
    alp: Duration,
    rg: Duration,
    results: usize,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.alp.as_secs_f64() / self.rg.as_secs_f64().max(1e-9)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn time(command: &mut Command) -> Result<Duration, String> {
    let start = Instant::now();
    let status = command.stdout(Stdio::null()).stderr(Stdio::null()).status().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    // rg exits 1 when nothing matches; anything else is a failure.
    if status.success() || status.code() == Some(1) {
        Ok(elapsed)
    } else {
        Err(format!("{command:?} failed: {status}"))
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Times alp and rg alternately (warm cache: one untimed run of each first).
fn compare(alp: &Path, store: &Path, size: usize, bytes: u64, runs: usize) -> Result<Row, String> {
    let memory = store.join("memory");
    let alp_command = || {
        let mut c = Command::new(alp);
        c.arg("--root")
            .arg(&memory)
            .arg("--agents")
            .arg(store.join("agents"))
            .args(["--as", "bench", "--json", "memory", "search", TERMS[0], TERMS[1], "--limit", "20"]);
        c
    };
    let rg_command = || {
        let mut c = Command::new("rg");
        c.args(["-i", "-c", "-e", TERMS[0], "-e", TERMS[1]]).arg(memory.join("projects"));
        c
    };
    let output = alp_command().output().map_err(|e| format!("cannot run alp: {e}"))?;
    if !output.status.success() {
        return Err(format!("alp search failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let document: String = String::from_utf8_lossy(&output.stdout).into_owned();
    let results = document.matches("\"score\":").count();
    time(&mut rg_command())?;
    let (mut alp_samples, mut rg_samples) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        alp_samples.push(time(&mut alp_command())?);
        rg_samples.push(time(&mut rg_command())?);
    }
    Ok(Row { size, bytes, alp: median(alp_samples), rg: median(rg_samples), results })
}

struct Estimate {
    name: String,
    mean_ns: f64,
}

/// Runs the criterion benchmarks (`cargo bench --workspace --bench "*"`) and reads every criterion estimate of this run.
fn criterion(quick: bool) -> Result<Vec<Estimate>, String> {
    let dir = root().join("target/criterion");
    let _ = std::fs::remove_dir_all(&dir);
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

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_owned));
    format!(
        "{cpu}, {cores} cores; {}; {}",
        rustc.unwrap_or_else(|| "rustc ?".into()),
        rg.unwrap_or_else(|| "ripgrep ?".into())
    )
}

fn render(rows: &[Row], estimates: &[Estimate], took: Duration) -> String {
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Generated by `cargo xtask bench` on {date} ({}; the whole run took {:.0} s). Do not edit by hand: run the \
         command again. Every ratio compares numbers measured in the same run, on a shared and noisy machine.\n",
        machine(),
        took.as_secs_f64()
    );
    let _ = writeln!(out, "## Search, end to end, against ripgrep\n");
    let _ = writeln!(
        out,
        "`alp memory search {t0} {t1} --limit 20 --json > /dev/null` (process start, agent definition, policy, one \
         audit record appended and fsynced, listing, reading, folding, matching and ranking every entry) against \
         `rg -i -c -e {t0} -e {t1} > /dev/null` over the same directory. Medians of interleaved runs, warm page cache. \
         The goal: a ratio of at most 1.2.\n",
        t0 = TERMS[0],
        t1 = TERMS[1]
    );
    let _ = writeln!(out, "| entries | Markdown | alp search | ripgrep | alp / rg | alp results |");
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {:.1} MB | {:.1} ms | {:.1} ms | {:.2} | {} |",
            row.size,
            row.bytes as f64 / 1e6,
            ms(row.alp),
            ms(row.rg),
            row.ratio(),
            row.results
        );
    }
    // The marginal cost of an entry between consecutive sizes: equal figures mean the search grows linearly (the
    // first size also pays process start, the audit record and the agent definition).
    let marginal: Vec<String> = rows
        .windows(2)
        .filter(|pair| pair[1].size > pair[0].size)
        .map(|pair| {
            let per_entry = (pair[1].alp.as_secs_f64() - pair[0].alp.as_secs_f64())
                / (pair[1].size - pair[0].size) as f64;
            format!("{:.2} µs per entry from {} to {} entries", per_entry * 1e6, pair[0].size, pair[1].size)
        })
        .collect();
    if !marginal.is_empty() {
        let _ = writeln!(out, "\nGrowth (alp): {}. Equal figures mean linear growth.", marginal.join(", "));
    }
    let _ = writeln!(out, "\n![search time against store size](benchmarks/search.svg)\n");
    let _ = writeln!(out, "## Criterion benchmarks\n");
    let _ = writeln!(
        out,
        "Means from `cargo bench --workspace --bench '*'` in the same run (see each crate's `benches/`).\n"
    );
    let _ = writeln!(out, "| benchmark | mean |");
    let _ = writeln!(out, "|---|---:|");
    for e in estimates {
        let _ = writeln!(out, "| `{}` | {} |", e.name, human(e.mean_ns));
    }
    let ratios = pair_ratios(estimates);
    if !ratios.is_empty() {
        let _ = writeln!(out, "\nRatios against the baseline measured in the same group:\n");
        for line in ratios {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// For every criterion group holding a benchmark whose name starts with `baseline`, the ratio of each other
/// benchmark of the group to it.
fn pair_ratios(estimates: &[Estimate]) -> Vec<String> {
    let mut lines = Vec::new();
    for baseline in
        estimates.iter().filter(|e| e.name.rsplit('/').next().is_some_and(|n| n.starts_with("baseline")))
    {
        let group = baseline.name.rsplit_once('/').map_or("", |(g, _)| g);
        for other in estimates
            .iter()
            .filter(|e| e.name != baseline.name && e.name.rsplit_once('/').map_or("", |(g, _)| g) == group)
        {
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

/// A small line plot: search time (ms) against store size, alp and ripgrep.
fn svg(rows: &[Row]) -> String {
    let (w, h, pad) = (640.0, 360.0, 56.0);
    let max_size = rows.iter().map(|r| r.size).max().unwrap_or(1) as f64;
    let max_ms = rows.iter().map(|r| ms(r.alp).max(ms(r.rg))).fold(1.0, f64::max) * 1.1;
    let x = |size: usize| pad + (size as f64 / max_size) * (w - 2.0 * pad);
    let y = |v: f64| h - pad - (v / max_ms) * (h - 2.0 * pad);
    let line = |pick: &dyn Fn(&Row) -> f64| -> String {
        rows.iter().map(|r| format!("{:.1},{:.1}", x(r.size), y(pick(r)))).collect::<Vec<_>>().join(" ")
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{pad}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{t}\" text-anchor=\"middle\">entries in the store</text>\n\
         <text x=\"14\" y=\"{cy}\" transform=\"rotate(-90 14 {cy})\" text-anchor=\"middle\">search time (ms, median)</text>\n",
        b = h - pad,
        r = w - pad,
        cx = w / 2.0,
        t = h - 14.0,
        cy = h / 2.0
    );
    for r in rows {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            x(r.size),
            h - pad + 16.0,
            r.size
        );
    }
    for i in 0..=4 {
        let v = max_ms * f64::from(i) / 4.0;
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
            pad - 6.0,
            y(v) + 4.0
        );
    }
    let _ = writeln!(
        out,
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>",
        line(&|r| ms(r.alp))
    );
    let _ = writeln!(
        out,
        "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\" points=\"{}\"/>",
        line(&|r| ms(r.rg))
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#1f77b4\">alp memory search</text>",
        pad + 10.0,
        pad + 4.0
    );
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#d62728\">rg -i -c</text>",
        pad + 10.0,
        pad + 20.0
    );
    out.push_str("</svg>\n");
    out
}
