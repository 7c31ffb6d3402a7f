//! `cargo xtask mcp-latency [--runs N] [--entries N] [--alp PATH]`: what a warm MCP server saves over a process per
//! call.
//!
//! 1. Builds `alp` in release mode (with `--alp`, uses the binary at `PATH` instead: to compare two builds).
//! 2. Generates a store of 10,000 entries (by default) in a temporary directory, written directly as files, and
//!    an agent definition `bench` that reads every project.
//! 3. Starts `alp --as bench mcp` once and speaks newline-delimited JSON-RPC to it (initialize, then `tools/call`).
//! 4. Times, interleaved in one run, N round trips of `memory_get` and of `memory_search` over the whole store in the
//!    warm server, and the same calls as `alp --json memory get` / `alp --json memory search` processes; each call
//!    writes its audit record, in both forms; and, when ripgrep is installed, `rg -i -c` over the same files in the
//!    same rounds. Prints medians, 90th percentiles, the CLI/MCP ratio and both searches against ripgrep.
//! 5. Times a repeated search: rounds of one ripgrep run, then five `memory_search` calls in a row; and then N
//!    `memory_search` calls back to back, with nothing between them. The two show the range: after ripgrep's run,
//!    or any pause, the next calls find the CPU caches cold and take longer (mostly in the kernel).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::corpus::notes;
use crate::flags::{Alp, Runs, positive};
use crate::measure::{median, ms, percentile};
const QUERY: &str = "postgres migration";
const LIMIT: usize = 20;

/// `cargo xtask mcp-latency`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// [default: 40]
    #[command(flatten)]
    runs: Runs,
    /// Entries in the store
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = positive::<usize>)]
    entries: usize,
    #[command(flatten)]
    alp: Alp,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    print!("{}", report(&args.alp.binary()?, args.entries, args.runs.or(40))?);
    Ok(())
}

/// Steps 2–5 with the `alp` at `alp`, in a temporary directory removed afterwards: the results as Markdown.
pub(crate) fn report(alp: &Path, entries: usize, runs: usize) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("alp-mcp-latency-{}", std::process::id()));
    let result = measure(alp, &dir, entries, runs);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn measure(alp: &Path, dir: &Path, entries: usize, runs: usize) -> Result<String, String> {
    let started = Instant::now();
    notes(dir, entries)?;
    eprintln!("generated {entries} entries in {:.1} s", started.elapsed().as_secs_f64());
    let root = dir.join("memory");
    let agents = dir.join("agents");
    let id = "project:p000:notes:note-0";
    let mut server = Server::start(alp, &root, &agents)?;
    let get = format!(r#""name":"memory_get","arguments":{{"id":"{id}"}}"#);
    let search = format!(r#""name":"memory_search","arguments":{{"query":"{QUERY}","limit":{LIMIT}}}"#);
    let limit = LIMIT.to_string();
    let mut terms: Vec<&str> = vec!["memory", "search", "--limit", &limit, "--"];
    terms.extend(QUERY.split(' '));
    let cli = |args: &[&str]| cli_call(alp, &root, &agents, args);
    // Warm both: the page cache, the server's first call.
    for _ in 0..3 {
        server.call(&get)?;
        server.call(&search)?;
        cli(&["memory", "get", id])?;
        cli(&terms)?;
    }
    // ripgrep over the same files, when it is installed: the yardstick of the speed goals in BENCHMARKS.md.
    let ripgrep = || -> Option<Duration> {
        let mut c = Command::new("rg");
        c.args(["-i", "-c"]);
        for term in QUERY.split(' ') {
            c.args(["-e", term]);
        }
        c.arg(root.join("projects")).stdout(Stdio::null()).stderr(Stdio::null());
        let started = Instant::now();
        c.status().ok().filter(|status| status.success()).map(|_| started.elapsed())
    };
    let with_ripgrep = ripgrep().is_some();
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for _ in 0..runs {
        samples[0].push(server.call(&get)?);
        samples[1].push(cli(&["memory", "get", id])?);
        samples[2].push(server.call(&search)?);
        samples[3].push(cli(&terms)?);
        if with_ripgrep && let Some(took) = ripgrep() {
            samples[4].push(took);
        }
    }
    // A repeated search, as an agent asking again would: rounds of one ripgrep run, then five searches in a row.
    let mut repeated: [Vec<Duration>; 3] = Default::default();
    if with_ripgrep {
        for _ in 0..runs.div_ceil(5) {
            if let Some(took) = ripgrep() {
                repeated[0].push(took);
            }
            for _ in 0..5 {
                repeated[1].push(server.call(&search)?);
            }
        }
        for _ in 0..runs {
            repeated[2].push(server.call(&search)?);
        }
    }
    let status = server.stop()?;
    if !status {
        return Err("the MCP server did not exit cleanly at the end of its input".to_owned());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{runs} interleaved round trips each, {entries} entries, `alp` release build, one audit record per call"
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| call | MCP, warm server: median (p90) | CLI process: median (p90) | CLI / MCP (medians) |"
    );
    let _ = writeln!(out, "|---|---|---|---|");
    for (name, mcp, cli) in [
        ("`memory_get`", &samples[0], &samples[1]),
        (
            &*format!("`memory_search` ({entries} entries, `{QUERY}`, limit {LIMIT})"),
            &samples[2],
            &samples[3],
        ),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {:.3} ms ({:.3} ms) | {:.3} ms ({:.3} ms) | {:.1}× |",
            ms(median(mcp)),
            ms(p90(mcp)),
            ms(median(cli)),
            ms(p90(cli)),
            ms(median(cli)) / ms(median(mcp)).max(1e-9)
        );
    }
    if samples[4].is_empty() {
        let _ = writeln!(out, "\nripgrep is not installed: no comparison with it.");
    } else {
        let rg = median(&samples[4]);
        let _ = writeln!(
            out,
            "\n`rg -i -c -e {}` over the same files, same rounds: {:.3} ms ({:.3} ms). The warm server's \
             `memory_search` took {:.2}× ripgrep's time, a CLI search {:.2}×.",
            QUERY.replace(' ', " -e "),
            ms(rg),
            ms(p90(&samples[4])),
            ms(median(&samples[2])) / ms(rg).max(1e-9),
            ms(median(&samples[3])) / ms(rg).max(1e-9),
        );
    }
    if !repeated[0].is_empty() {
        let rg = median(&repeated[0]);
        let _ = writeln!(
            out,
            "\nRepeated: rounds of one ripgrep run then five `memory_search` calls in a row ({} calls): the search \
             {:.3} ms ({:.3} ms), ripgrep {:.3} ms: **{:.2}×** ripgrep's time.",
            repeated[1].len(),
            ms(median(&repeated[1])),
            ms(p90(&repeated[1])),
            ms(rg),
            ms(median(&repeated[1])) / ms(rg).max(1e-9),
        );
        let _ = writeln!(
            out,
            "\nBack to back: {} `memory_search` calls with nothing between them: {:.3} ms ({:.3} ms): **{:.2}×** the \
             ripgrep time above.",
            repeated[2].len(),
            ms(median(&repeated[2])),
            ms(p90(&repeated[2])),
            ms(median(&repeated[2])) / ms(rg).max(1e-9),
        );
    }
    Ok(out)
}

fn p90(samples: &[Duration]) -> Duration {
    percentile(samples, 90)
}

/// One `alp --json --as bench ARGS…` process, timed from spawn to exit.
fn cli_call(alp: &Path, root: &Path, agents: &Path, args: &[&str]) -> Result<Duration, String> {
    let started = Instant::now();
    let output = Command::new(alp)
        .arg("--root")
        .arg(root)
        .arg("--agents")
        .arg(agents)
        .args(["--json", "--as", "bench"])
        .args(args)
        .env_remove("ALP_AUDIT_KEY")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run alp: {e}"))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(format!(
            "`alp {}` failed with {}: {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(elapsed)
}

/// `alp --as bench mcp`, spoken to line by line.
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    pub(crate) fn start(alp: &Path, root: &Path, agents: &Path) -> Result<Server, String> {
        let mut child = Command::new(alp)
            .arg("--root")
            .arg(root)
            .arg("--agents")
            .arg(agents)
            .args(["--as", "bench", "mcp"])
            .env_remove("ALP_AUDIT_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start alp mcp: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut server = Server { child, stdin: Some(stdin), stdout, next_id: 1 };
        server.send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"xtask","version":"0"}}}"#,
        )?;
        let reply = server.reply(0)?;
        if !reply.contains(r#""protocolVersion":"2025-11-25""#) {
            return Err(format!("unexpected initialize answer: {reply}"));
        }
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok(server)
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to alp mcp: {e}"))
    }

    /// The next line answering request `id` (anything else, a notification, is skipped).
    fn reply(&mut self, id: u64) -> Result<String, String> {
        let marker = format!(r#""id":{id},"#);
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).map_err(|e| format!("cannot read alp mcp: {e}"))?;
            if read == 0 {
                return Err("alp mcp closed its output".to_owned());
            }
            if line.contains(&marker) {
                return Ok(line);
            }
        }
    }

    /// One `tools/call` round trip: written, answered, checked to be a success.
    pub(crate) fn call(&mut self, params: &str) -> Result<Duration, String> {
        let id = self.next_id;
        self.next_id += 1;
        let started = Instant::now();
        self.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{params}}}}}"#))?;
        let reply = self.reply(id)?;
        let elapsed = started.elapsed();
        if !reply.contains(r#""isError":false"#) {
            return Err(format!("tools/call {params} failed: {reply}"));
        }
        Ok(elapsed)
    }

    /// Closes the server's input and waits for it; whether it exited with status 0.
    pub(crate) fn stop(mut self) -> Result<bool, String> {
        drop(self.stdin.take());
        self.child.wait().map(|status| status.success()).map_err(|e| format!("cannot wait for alp mcp: {e}"))
    }
}
