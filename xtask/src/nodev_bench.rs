//! `cargo xtask nodev-bench`: search and context on a root mounted `nodev` (entry files opened directly, one open
//! each) against the same stores on a tmpfs that allows devices (the `O_PATH` handle reopened through
//! `/proc/self/fd`), with ripgrep over the same files as the yardstick, in one run. Writes BENCHMARKS-nodev.md.
//! Needs root (it mounts two tmpfs under `target/nodev-bench/`, and unmounts them when done or failing).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::bench::{self, ContextTiming};
use crate::corpus::{self, Shape, TERMS, ripgrep};
use crate::flags::Runs;
use crate::measure::{self, ms, ratio};
use crate::root;
use crate::setup::{ensure_tool, release_alp};

const ENTRIES: usize = 10_000;
const RATES: [u32; 2] = [4, 80];

/// A tmpfs mounted for the run, unmounted when dropped.
struct Mount {
    path: PathBuf,
}

impl Mount {
    fn new(path: PathBuf, options: &str) -> Result<Mount, String> {
        std::fs::create_dir_all(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        // A mount left by an interrupted run goes first.
        let _ = Command::new("umount").arg(&path).status();
        let path_text = path.display().to_string();
        crate::run("mount", &["-t", "tmpfs", "-o", &format!("{options},size=1g"), "tmpfs", &path_text])?;
        Ok(Mount { path })
    }

    /// The mount options the kernel reports for it.
    fn options(&self) -> String {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let target = self.path.display().to_string();
        mounts
            .lines()
            .rev()
            .find_map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                (fields.get(1) == Some(&target.as_str()))
                    .then(|| fields.get(3).copied().unwrap_or("").to_owned())
            })
            .unwrap_or_else(|| "?".into())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

struct Row {
    shape: Shape,
    rate: u32,
    matches: usize,
    nodev: Duration,
    dev: Duration,
    rg: Duration,
}

/// `cargo xtask nodev-bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// [default: 11]
    #[command(flatten)]
    runs: Runs,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let runs = args.runs.or(11);
    let uid = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .map(|l| l.split_whitespace().nth(2).unwrap_or("").to_owned())
    });
    if uid.as_deref() != Some("0") {
        return Err("nodev-bench mounts two tmpfs and needs root".into());
    }
    let run = measure::Run::start();
    let alp = release_alp()?;
    ensure_tool("rg", "ripgrep")?;
    let base = root().join("target/nodev-bench");
    let nodev = Mount::new(base.join("nodev"), "nodev")?;
    let dev = Mount::new(base.join("dev"), "dev")?;
    let mut rows = Vec::new();
    for shape in Shape::ALL {
        for rate in RATES {
            let name = format!("{}-{rate}-{ENTRIES}", shape.name());
            let (on_nodev, on_dev) = (nodev.path.join(&name), dev.path.join(&name));
            corpus::generate(&on_nodev, shape, rate, ENTRIES, None)?;
            corpus::generate(&on_dev, shape, rate, ENTRIES, None)?;
            let output = bench::search_command(&alp, &on_nodev, true)
                .output()
                .map_err(|e| format!("cannot run alp: {e}"))?;
            if !output.status.success() {
                return Err(format!("alp search failed: {}", String::from_utf8_lossy(&output.stderr)));
            }
            let matches = String::from_utf8_lossy(&output.stdout).matches("\"score\":").count();
            let commands: [Box<dyn Fn() -> Command + '_>; 3] = [
                Box::new(|| bench::search_command(&alp, &on_nodev, true)),
                Box::new(|| bench::search_command(&alp, &on_dev, true)),
                Box::new(|| ripgrep(&on_nodev.join("memory/projects"))),
            ];
            let mut medians = measure::interleaved(&commands, runs)?.into_iter();
            let mut next = || medians.next().unwrap_or_default();
            let row = Row { shape, rate, matches, nodev: next(), dev: next(), rg: next() };
            eprintln!(
                "{:>9} {rate:>2}%: nodev {:.1} ms ({:.2}x rg), O_PATH {:.1} ms ({:.2}x rg), rg {:.1} ms",
                shape.name(),
                ms(row.nodev),
                ratio(row.nodev, row.rg),
                ms(row.dev),
                ratio(row.dev, row.rg),
                ms(row.rg)
            );
            rows.push(row);
            // Free the tmpfs memory of this shape before the next.
            let _ = std::fs::remove_dir_all(&on_nodev);
            let _ = std::fs::remove_dir_all(&on_dev);
        }
    }
    let context_runs = runs.max(5) * 3;
    let context_nodev = bench::context_timing(&alp, &nodev.path.join("context-500"), context_runs)?;
    let context_dev = bench::context_timing(&alp, &dev.path.join("context-500"), context_runs)?;
    eprintln!(
        "context over 500 entries: nodev {:.2} ms, O_PATH {:.2} ms, rg {:.2} ms",
        ms(context_nodev.median),
        ms(context_dev.median),
        ms(context_nodev.ripgrep)
    );
    let report = render(&Report {
        rows: &rows,
        context: [&context_nodev, &context_dev],
        options: [nodev.options(), dev.options()],
        runs,
        context_runs,
        ran: run.ran(),
    });
    std::fs::write(root().join("BENCHMARKS-nodev.md"), report)
        .map_err(|e| format!("cannot write BENCHMARKS-nodev.md: {e}"))?;
    eprintln!("wrote BENCHMARKS-nodev.md");
    Ok(())
}

struct Report<'a> {
    rows: &'a [Row],
    context: [&'a ContextTiming; 2],
    options: [String; 2],
    runs: usize,
    context_runs: usize,
    ran: measure::Ran,
}

fn render(r: &Report<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Benchmarks on a root mounted `nodev`\n");
    let _ = writeln!(
        out,
        "Generated by `cargo xtask nodev-bench` (as root) in {:.0} s on {}. Load average (1, 5, 15 min) {} at the \
         start, {} at the end: other builds shared the machine, so absolute times are noisy; every ratio compares \
         commands timed in the same rounds (interleaved, each round starting with a different command), medians of \
         {} runs after one untimed run each.\n",
        r.ran.took.as_secs_f64(),
        measure::machine(),
        r.ran.load_before,
        r.ran.load_after,
        r.runs
    );
    let _ = writeln!(
        out,
        "Two tmpfs are mounted for the run: `{}` (the store opens entry files directly, `O_RDONLY | O_NOFOLLOW | \
         O_NONBLOCK | O_NOCTTY` and `fstat`: one open per file) and `{}` (devices allowed, so the store resolves \
         with `O_PATH`, checks with `fstat` and reopens through `/proc/self/fd`: two opens per file). The same \
         {ENTRIES} entries (400 per project) of each frontmatter shape and match rate are written on both; ripgrep \
         (`rg -i -c -e {} -e {}`) reads the same files.\n",
        r.options[0], r.options[1], TERMS[0], TERMS[1]
    );
    let _ = writeln!(
        out,
        "## Search, `alp memory search {} {} --limit 20`, {ENTRIES} entries\n",
        TERMS[0], TERMS[1]
    );
    let _ = writeln!(
        out,
        "| shape | match rate | matches | nodev ms | O_PATH ms | ripgrep ms | nodev / rg | O_PATH / rg |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in r.rows {
        let _ = writeln!(
            out,
            "| {} | {}% | {} | {:.1} | {:.1} | {:.1} | {:.2}× | {:.2}× |",
            row.shape.name(),
            row.rate,
            row.matches,
            ms(row.nodev),
            ms(row.dev),
            ms(row.rg),
            ratio(row.nodev, row.rg),
            ratio(row.dev, row.rg)
        );
    }
    let worst = r.rows.iter().map(|row| ratio(row.nodev, row.rg)).fold(0.0, f64::max);
    let _ = writeln!(out, "\nTarget: ≤ 1.00× ripgrep on nodev; worst measured {worst:.2}×.\n");
    let _ = writeln!(out, "## Context over a 500-entry project (`alp memory context … --budget 4000`)\n");
    let _ = writeln!(out, "| root | median ms | p90 ms | `alp --version` ms | ripgrep ms | context / rg |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for (label, c) in [("nodev", r.context[0]), ("O_PATH", r.context[1])] {
        let _ = writeln!(
            out,
            "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× |",
            ms(c.median),
            ms(c.p90),
            ms(c.baseline),
            ms(c.ripgrep),
            ratio(c.median, c.ripgrep)
        );
    }
    let _ = writeln!(
        out,
        "\nTarget: ≤ 0.60× ripgrep and < 5 ms on nodev; measured {:.2}× and {:.2} ms (medians of {} runs).",
        ratio(r.context[0].median, r.context[0].ripgrep),
        ms(r.context[0].median),
        r.context_runs
    );
    out
}
