//! `cargo xtask audit-bench [--records N] [--runs N] [--quick]`: reading a large audit log with the real `alp`, and
//! `BENCHMARKS-audit.md`.
//!
//! 1. Builds `alp` in release mode (and installs GNU time for peak memory when absent).
//! 2. Writes a log of N records (default 1,000,000) under `target/bench-audit/`, as the service writes them: reads
//!    with receipts (most a `get` naming one entry, some a `search` naming twenty), writes, refusals, a third of the
//!    records with a token's `via`, one second apart. The chain is sealed record by record with memory-audit's own
//!    `AuditRecord::next_after`, streamed to the file (nothing held in memory).
//! 3. Times, interleaved in the same rounds, `sha256sum` of the log (the baseline: reading and hashing every byte
//!    once), `alp audit disclosed ID`, `alp audit show --disclosed ID --json`, `alp audit verify` and `alp audit
//!    show --tail 50 --json` (the newest page, read back from the log's end; and forward, as with `--archive`),
//!    each under
//!    `/usr/bin/time -f %M` for its largest resident set. Reports medians, the ratio of each to `sha256sum`
//!    (per round: lowest, median, highest) and the peak memory.
//!
//! `--quick`: 100,000 records, 3 rounds.

use std::fmt::Write as _;
use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use alp_memory::memory_audit::{AuditEvent, AuditOperation, AuditRecord, Door, Outcome, shown_entry};
use alp_memory::memory_entry::Timestamp;

use crate::flags::Runs;
use crate::measure::{Run, machine, median, ms};
use crate::root;
use crate::setup::{ensure_tool, release_alp};

/// The entry whose receivers `disclosed` and `show --disclosed` look for.
const TARGET: &str = "project:alp:n:7";

/// `cargo xtask audit-bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// How many records the log holds (default 1,000,000; 100,000 with `--quick`).
    #[arg(long, value_name = "N", value_parser = crate::flags::positive::<u64>)]
    records: Option<u64>,
    #[command(flatten)]
    runs: Runs,
    /// A smoke run: 100,000 records, 3 rounds.
    #[arg(long)]
    quick: bool,
}

/// One command measured: how long, and its largest resident set in KiB.
#[derive(Debug, Clone, Copy)]
struct Sample {
    took: Duration,
    peak_kib: u64,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let run = Run::start();
    let records = args.records.unwrap_or(if args.quick { 100_000 } else { 1_000_000 });
    let rounds = args.runs.or(if args.quick { 3 } else { 5 });
    let alp = release_alp()?;
    ensure_tool("/usr/bin/time", "time")?;
    let dir = root().join("target/bench-audit");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (memory, agents) = (dir.join("memory"), dir.join("agents"));
    let init = Command::new(&alp)
        .arg("--root")
        .arg(&memory)
        .arg("--agents")
        .arg(&agents)
        .args(["--json", "init", "--role", "main", "--role", "worker"])
        .output()
        .map_err(|e| format!("cannot run alp init: {e}"))?;
    if !init.status.success() {
        return Err(format!("alp init failed: {}", String::from_utf8_lossy(&init.stderr)));
    }
    let log = memory.join("audit.jsonl");
    let started = Instant::now();
    let (bytes, receipts) = write_log(&log, records)?;
    eprintln!(
        "audit-bench: {records} records, {bytes} bytes, written in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let place = |command: &mut Command| {
        command.arg("--root").arg(&memory).arg("--agents").arg(&agents);
    };
    // An archive directory with no segment: `show --archive` reads its sources forward, the live log whole.
    let empty = dir.join("archive");
    std::fs::create_dir_all(&empty).map_err(|e| format!("cannot create {}: {e}", empty.display()))?;
    let empty_str = empty.to_str().ok_or("the bench directory's path is not UTF-8")?;
    let mut names = Vec::new();
    let mut commands: Vec<Command> = Vec::new();
    let mut sha = Command::new("sha256sum");
    sha.arg(&log);
    names.push("sha256sum".to_owned());
    commands.push(sha);
    for (name, args) in [
        (format!("alp audit disclosed {TARGET}"), vec!["--json", "audit", "disclosed", TARGET]),
        (
            format!("alp audit show --disclosed {TARGET} --json"),
            vec!["--json", "audit", "show", "--disclosed", TARGET],
        ),
        ("alp audit verify".to_owned(), vec!["--json", "audit", "verify"]),
        ("alp audit show --tail 50 --json".to_owned(), vec!["--json", "audit", "show", "--tail", "50"]),
        (
            "alp audit show --tail 50 --json --archive EMPTY".to_owned(),
            vec!["--json", "audit", "show", "--tail", "50", "--archive", empty_str],
        ),
    ] {
        let mut command = Command::new(&alp);
        place(&mut command);
        command.args(args);
        names.push(name);
        commands.push(command);
    }
    // A first run of each, untimed: the file in the page cache for every command alike.
    for command in &mut commands {
        measure(command)?;
    }
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); commands.len()];
    for round in 0..rounds {
        for (index, command) in commands.iter_mut().enumerate() {
            samples[index].push(measure(command)?);
        }
        eprintln!("audit-bench: round {} of {rounds}", round + 1);
    }
    let report =
        render(&names, &samples, records, bytes, receipts, &run.ran().generated("audit-bench", &machine()));
    let path = root().join("BENCHMARKS-audit.md");
    std::fs::write(&path, report).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("audit-bench: wrote {}", path.display());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs `command` under `/usr/bin/time -f %M`, its output discarded.
fn measure(command: &Command) -> Result<Sample, String> {
    let mut timed = Command::new("/usr/bin/time");
    timed.args(["-f", "%M"]).arg(command.get_program()).args(command.get_args());
    let start = Instant::now();
    let output = timed.stdout(Stdio::null()).stderr(Stdio::piped()).output().map_err(|e| e.to_string())?;
    let took = start.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("{command:?} failed: {}: {stderr}", output.status));
    }
    let peak_kib = stderr
        .lines()
        .filter_map(|line| line.trim().parse::<u64>().ok())
        .next_back()
        .ok_or_else(|| format!("/usr/bin/time gave no peak for {command:?}: {stderr}"))?;
    Ok(Sample { took, peak_kib })
}

/// Writes a log of `records` records to `path`; returns its size in bytes and how many records name `TARGET`.
pub(crate) fn write_log(path: &Path, records: u64) -> Result<(u64, u64), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(fail)?);
    // 2026-01-01T00:00:00Z, in milliseconds since the epoch; one record a second.
    let start_ms: i64 = 1_767_225_600_000;
    let mut prev: Option<AuditRecord> = None;
    let (mut bytes, mut naming) = (0u64, 0u64);
    for n in 0..records {
        let at = start_ms.saturating_add(i64::try_from(n).unwrap_or(i64::MAX).saturating_mul(1_000));
        let event = event(n, Timestamp::from_unix_millis(at).ok_or("a timestamp out of range")?);
        if event.shown.iter().any(|shown| shown == &shown_entry(TARGET, 1)) {
            naming += 1;
        }
        let record = AuditRecord::next_after(prev.as_ref(), &event, None).map_err(|e| e.to_string())?;
        // The line with its `\n`, as a sink appends it.
        let line = record.to_line();
        out.write_all(line.as_bytes()).map_err(fail)?;
        bytes += line.len() as u64;
        prev = Some(record);
    }
    out.flush().map_err(fail)?;
    Ok((bytes, naming))
}

/// The `n`-th record's event: 80% a `get` of one of 50,000 entries, 12% a search naming twenty, 5% a write, 3% a
/// refusal; roles in turn; every third over HTTP.
fn event(n: u64, at: Timestamp) -> AuditEvent {
    let role = ["main", "worker", "reviewer"][(n % 3) as usize];
    let entry = |k: u64| format!("project:alp:n:{}", k % 50_000);
    let kind = n % 100;
    let (operation, door, id, outcome, code, shown) = match kind {
        0..80 => {
            let id = entry(n.wrapping_mul(7_919));
            let shown = vec![shown_entry(&id, 1)];
            (AuditOperation::Get, Door::Get, id, Outcome::Allowed, None, shown)
        }
        80..92 => {
            let shown = (0..20).map(|k| shown_entry(&entry(n + k * 2_503), 1)).collect();
            (AuditOperation::Search, Door::Search, "project:alp".to_owned(), Outcome::Allowed, None, shown)
        }
        92..97 => (AuditOperation::Update, Door::Update, entry(n), Outcome::Allowed, None, Vec::new()),
        _ => (
            AuditOperation::Get,
            Door::Get,
            format!("private:main:n:{n}"),
            Outcome::Denied,
            Some("PRIVATE_MEMORY_DENIED".to_owned()),
            Vec::new(),
        ),
    };
    AuditEvent {
        timestamp: at.as_offset_date_time(),
        actor: role.to_owned(),
        operation,
        door: Some(door),
        id,
        outcome,
        code,
        grant: None,
        shown,
        via: n.is_multiple_of(3).then(|| format!("tok_{:08}", n % 7)),
    }
}

fn render(
    names: &[String],
    samples: &[Vec<Sample>],
    records: u64,
    bytes: u64,
    receipts: u64,
    generated: &str,
) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# Reading a large audit log\n\n{generated}\n");
    let _ = writeln!(
        text,
        "A log of {records} records ({bytes} bytes, {:.0} bytes per record; {receipts} records name `{TARGET}` in \
         their receipts), read by the release `alp` on a root. Each row is one command, run once untimed (the file \
         in the page cache for every command alike), then {} times in interleaved rounds. The ratio is the \
         command's time over `sha256sum`'s in the same round (lowest, median, highest of the rounds); peak memory \
         is the largest resident set `/usr/bin/time -f %M` reports over the rounds.\n",
        bytes as f64 / records.max(1) as f64,
        samples.first().map_or(0, Vec::len)
    );
    let _ = writeln!(text, "| command | median | ratio to sha256sum (low, median, high) | peak memory |");
    let _ = writeln!(text, "|---|---|---|---|");
    let baseline = &samples[0];
    for (name, runs) in names.iter().zip(samples) {
        let times: Vec<Duration> = runs.iter().map(|s| s.took).collect();
        let mut ratios: Vec<f64> =
            runs.iter().zip(baseline).map(|(a, b)| a.took.as_secs_f64() / b.took.as_secs_f64()).collect();
        ratios.sort_unstable_by(f64::total_cmp);
        let peak = runs.iter().map(|s| s.peak_kib).max().unwrap_or(0);
        let _ = writeln!(
            text,
            "| `{name}` | {:.0} ms | {:.2}×, {:.2}×, {:.2}× | {:.1} MiB |",
            ms(median(&times)),
            ratios.first().copied().unwrap_or(0.0),
            ratios[ratios.len() / 2],
            ratios.last().copied().unwrap_or(0.0),
            peak as f64 / 1024.0
        );
    }
    let _ = writeln!(
        text,
        "\nThe target: `disclosed` and `show --disclosed` within 2× of `sha256sum` with memory that does not grow with \
         the log (they read it as a stream, one line at a time); `verify` the same. `show --tail 50` reads the log \
         back from its end, only as far as its 50 records reach: its time is the page's, not the log's; with `--archive` \
         (here a directory holding no segment) the segments and the live log are read forward, every line."
    );
    text
}
