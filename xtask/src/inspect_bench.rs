//! `cargo xtask inspect-bench [--runs N] [--quick] [--alp PATH]`: how long the real `alp inspect` takes to answer
//! each page, and `BENCHMARKS-inspect.md`.
//!
//! 1. Builds `alp` in release mode (or measures the one `--alp` names).
//! 2. The 10,000-entry `canonical` store of `cargo xtask bench` (under `target/bench-stores/`, generated once and
//!    reused; 25 projects of 400 entries), copied with its definitions and a log of its own, empty at the start:
//!    `alp --json inspect` on the copy, and its pages: the overview (every entry
//!    listed and counted, the log verified), the grants matrix, a listing of one project (its first 100 entries),
//!    an entry, and the audit trail.
//! 3. A root whose log holds 100,000 records written as the service writes them (`cargo xtask audit-bench`'s log):
//!    the overview (which verifies the whole log), the audit trail's newest page, a page in the middle (`before`),
//!    and a filtered page (`actor`, `door`).
//! 4. Each page in turn, round after round, over a fresh loopback connection per request, timed from the request to
//!    the last byte of the answer: median and p95 per page, against the 100 ms the page should answer within.
//!
//! `--quick`: 5 rounds (default 21).

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::corpus::{Shape, generate};
use crate::flags::{Alp, Runs};
use crate::measure::{Run, machine, median, ms, percentile};
use crate::root;

/// The size of the store the memory pages are timed on, and of the log the trail is timed on.
const ENTRIES: usize = 10_000;
const RECORDS: u64 = 100_000;
/// What a page should answer within.
const BUDGET: Duration = Duration::from_millis(100);

/// `cargo xtask inspect-bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A smoke run: 5 rounds
    #[arg(long)]
    quick: bool,
    /// [default: 21; with --quick 5]
    #[command(flatten)]
    runs: Runs,
    #[command(flatten)]
    alp: Alp,
}

/// A running `alp inspect`: its process and where its pages are.
struct Inspect {
    child: Child,
    addr: String,
    /// `/KEY/`.
    base: String,
}

impl Inspect {
    fn start(alp: &Path, root: &Path, agents: &Path) -> Result<Inspect, String> {
        let mut child = Command::new(alp)
            .arg("--root")
            .arg(root)
            .arg("--agents")
            .arg(agents)
            .args(["--json", "inspect"])
            .env_remove("ALP_AUDIT_KEY")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", alp.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("alp inspect has no stdout")?;
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("alp inspect printed nothing: {e}"))?;
        let printed: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("alp inspect printed {line:?}: {e}"))?;
        let url = printed["url"].as_str().ok_or_else(|| format!("no url in {line:?}"))?;
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("not an http URL: {url}"))?;
        let (addr, path) = rest.split_once('/').ok_or_else(|| format!("no path in {url}"))?;
        Ok(Inspect { child, addr: addr.to_owned(), base: format!("/{path}") })
    }

    /// One GET of `page`, timed to the answer's last byte; the answer must be 200.
    fn time(&self, page: &str) -> Result<Duration, String> {
        let started = Instant::now();
        let mut stream = TcpStream::connect(&self.addr).map_err(|e| format!("cannot connect: {e}"))?;
        write!(
            stream,
            "GET {}{page} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.base, self.addr
        )
        .map_err(|e| format!("cannot send: {e}"))?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(|e| format!("cannot read: {e}"))?;
        let took = started.elapsed();
        if !answer.starts_with(b"HTTP/1.1 200") {
            let head = String::from_utf8_lossy(&answer[..answer.len().min(300)]).into_owned();
            return Err(format!("{page}: {head}"));
        }
        Ok(took)
    }
}

impl Drop for Inspect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One page measured.
struct Row {
    what: &'static str,
    page: &'static str,
    samples: Vec<Duration>,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let run = Run::start();
    let rounds = args.runs.or(if args.quick { 5 } else { 21 });
    let alp = args.alp.binary()?;
    let store = root().join(format!("target/bench-stores/{}-4-{ENTRIES}", Shape::Canonical.name()));
    generate(&store, Shape::Canonical, 4, ENTRIES, None)?;

    // A root of its own whose log holds RECORDS records: made with `alp init`, its log then replaced.
    let trail_dir = root().join("target/bench-inspect");
    let _ = std::fs::remove_dir_all(&trail_dir);
    std::fs::create_dir_all(&trail_dir).map_err(|e| format!("cannot create {}: {e}", trail_dir.display()))?;
    let trail_root = trail_dir.join("memory");
    crate::run(
        &alp.display().to_string(),
        &[
            "--root",
            &trail_root.display().to_string(),
            "--agents",
            &trail_dir.join("agents").display().to_string(),
            "init",
            "--role",
            "main",
        ],
    )?;
    let (log_bytes, _) = crate::audit_bench::write_log(&trail_root.join("audit.jsonl"), RECORDS)?;

    // The memory pages on a copy of the store's entries and definitions, with a log of its own, empty at the start:
    // the overview verifies the log and the entry page reads its receipts, so the store's own log, which grows with
    // every benchmark run on it, would make the pages measure that history.
    let copy = trail_dir.join("store");
    crate::serve_receipts::copy_store(&store, &copy)?;
    let memory = Inspect::start(&alp, &copy.join("memory"), &copy.join("agents"))?;
    let trail = Inspect::start(&alp, &trail_root, &trail_dir.join("agents"))?;
    let mut rows = vec![
        Row { what: "overview", page: "", samples: Vec::new() },
        Row { what: "grants matrix", page: "matrix", samples: Vec::new() },
        Row {
            what: "listing (100 of project:p007)",
            page: "entries?prefix=project:p007",
            samples: Vec::new(),
        },
        Row { what: "entry", page: "entry?id=project:p007:notes:n002900", samples: Vec::new() },
        Row { what: "audit trail (the store's own log)", page: "audit", samples: Vec::new() },
        Row { what: "overview (verifies the 100,000-record log)", page: "", samples: Vec::new() },
        Row { what: "audit trail, newest 50", page: "audit", samples: Vec::new() },
        Row { what: "audit trail, 50 before seq 50,000", page: "audit?before=50000", samples: Vec::new() },
        Row {
            what: "audit trail, actor=worker door=search",
            page: "audit?actor=worker&door=search",
            samples: Vec::new(),
        },
    ];
    for round in 0..=rounds {
        for (n, row) in rows.iter_mut().enumerate() {
            let server = if n < 5 { &memory } else { &trail };
            let took = server.time(row.page)?;
            // Round 0 warms the page cache and the servers' entry caches; it is not reported.
            if round > 0 {
                row.samples.push(took);
            }
        }
        eprintln!("round {round}/{rounds}");
    }
    drop((memory, trail));
    let _ = std::fs::remove_dir_all(&trail_dir);

    let mut out = String::new();
    let _ = writeln!(out, "# `alp inspect`: how long each page takes\n");
    let _ = writeln!(out, "{}\n", run.ran().generated("inspect-bench", &machine()));
    let _ = writeln!(
        out,
        "The release `alp inspect` on loopback; each page requested in turn, round after round ({rounds} rounds after \
         one warm-up round), on a fresh connection, timed from the request to the last byte of the answer. The \
         memory pages run on a copy of the {ENTRIES}-entry `canonical` store of `cargo xtask bench` (25 projects of \
         400 entries; its definitions, and a log of its own, empty at the start); the overview lists and counts every entry and verifies the whole log, and each of the overview, \
         matrix, listing and entry pages writes its one audit record (synced) before it answers. The trail pages, \
         and the overview once more, run on a root whose log holds {RECORDS} records ({:.1} MiB), written as the \
         service writes them. The trail reads the log back from its end (memory_audit::select_last): the newest \
         page costs what the page holds, a page far back (`before`) what reading back to it costs, and a filter \
         what reading back until a page of records matches it costs.\n",
        log_bytes as f64 / f64::from(1u32 << 20)
    );
    let _ = writeln!(out, "| page | median | p95 | within {} ms |", BUDGET.as_millis());
    let _ = writeln!(out, "|---|---:|---:|---|");
    for row in &rows {
        let (p50, p95) = (median(&row.samples), percentile(&row.samples, 95));
        let within = if p95 < BUDGET {
            "yes"
        } else if p50 < BUDGET {
            "median only"
        } else {
            "no"
        };
        let _ = writeln!(out, "| {} | {:.1} ms | {:.1} ms | {within} |", row.what, ms(p50), ms(p95));
    }
    std::fs::write(root().join("BENCHMARKS-inspect.md"), out)
        .map_err(|e| format!("cannot write BENCHMARKS-inspect.md: {e}"))?;
    eprintln!("wrote BENCHMARKS-inspect.md");
    Ok(())
}
