//! `cargo xtask serve-load [--seconds N] [--clients 1,32] [--rounds N] [--alp PATH]`: audited reads through the
//! real `alp serve` under concurrent clients, and how many fsyncs its audit log took per record (group commit at
//! work).
//!
//! 1. Builds `alp` in release mode (with `--alp`, uses the binary at `PATH` instead: to compare two builds),
//!    generates a store of 100 entries and an agent definition `bench` (as `mcp-latency` does), and makes one token
//!    per client with `alp token create` (a token has at most 8 calls in flight).
//! 2. For each client count, starts `alp --json serve --listen 127.0.0.1:0`, and that many threads, each on its own
//!    kept-alive connection with its own token, call `memory_get` (one audit record each) back to back for N
//!    seconds: the reads per second. That is done in rounds (3 unless `--rounds`), each round running every client
//!    count once in turn, so that a slow minute of a shared machine falls on every count alike: a row reports the
//!    median over the rounds, and the range of the ratios to the first count within each round.
//! 3. Then, once per client count, the same again on a server started under `strace -f --seccomp-bpf -c -e
//!    trace=fsync,fdatasync` (the filter stops the server only at those calls; attaching with `-p` would stop it at
//!    every call and slow it down several times): the fsyncs per audit record, the records counted as the lines the
//!    log grew by. Each server is stopped with SIGTERM and must exit 0.
//!    A first run with one client is thrown away (the first server's first seconds are slower).
//! 4. Prints a Markdown table, with the ratio of each row's median reads per second to the first row's.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::corpus::notes;
use crate::flags::{Alp, Seconds, positive};
use crate::measure::{median, median_rate};

const ID: &str = "project:p000:notes:note-0";

/// `cargo xtask serve-load`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// [default: 10]
    #[command(flatten)]
    seconds: Seconds,
    /// Client counts, one row each
    #[arg(long, value_name = "N,N", value_delimiter = ',', value_parser = positive::<usize>, default_value = "1,32")]
    clients: Vec<usize>,
    /// Rounds of untraced runs
    #[arg(long, value_name = "N", value_parser = positive::<usize>, default_value_t = ROUNDS)]
    rounds: usize,
    #[command(flatten)]
    alp: Alp,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    if Command::new("strace").arg("-V").stdout(Stdio::null()).status().is_err() {
        return Err("serve-load needs strace to count fsyncs (apt-get install strace)".to_owned());
    }
    let alp = args.alp.binary()?;
    let dir = std::env::temp_dir().join(format!("alp-serve-load-{}", std::process::id()));
    let result = measure(&alp, &dir, Duration::from_secs(args.seconds.or(10)), &args.clients, args.rounds);
    let _ = std::fs::remove_dir_all(&dir);
    print!("{}", result?);
    Ok(())
}

/// Rounds of untraced runs when `--rounds` is not given.
pub(crate) const ROUNDS: usize = 3;

/// Steps 1–3 in `dir` (a store of 100 entries generated there): one row per client count.
pub(crate) fn measure(
    alp: &Path,
    dir: &Path,
    duration: Duration,
    clients: &[usize],
    rounds: usize,
) -> Result<String, String> {
    Ok(render(&rows(alp, dir, duration, clients, rounds)?, duration))
}

/// The rows of the table: reads per second in each of `rounds` rounds and fsyncs per record, for each client
/// count, in one run.
pub(crate) fn rows(
    alp: &Path,
    dir: &Path,
    duration: Duration,
    clients: &[usize],
    rounds: usize,
) -> Result<Vec<Row>, String> {
    notes(dir, 100)?;
    let root = dir.join("memory");
    let agents = dir.join("agents");
    let most = clients.iter().copied().max().unwrap_or(1);
    let tokens = (0..most).map(|n| token(alp, &root, &agents, n)).collect::<Result<Vec<_>, _>>()?;
    let log = root.join("audit.jsonl");
    // A run thrown away: the first seconds of the first server are slower (cold caches), whatever it serves.
    let mut server = Server::start(alp, &root, &agents, false)?;
    let warm = warm_then_load(&server, &tokens[..1], duration);
    server.stop()?;
    warm?;
    let mut rates = vec![Vec::with_capacity(rounds); clients.len()];
    for _ in 0..rounds {
        for (&n, rates) in clients.iter().zip(&mut rates) {
            let mut server = Server::start(alp, &root, &agents, false)?;
            let plain = warm_then_load(&server, &tokens[..n], duration);
            server.stop()?;
            let (reads, took) = plain?;
            rates.push(reads as f64 / took.as_secs_f64());
        }
    }
    let mut rows = Vec::new();
    for (&n, rates) in clients.iter().zip(rates) {
        let sync_cost = append_and_sync_cost(&root)?;
        let before = lines(&log)?;
        let mut server = Server::start(alp, &root, &agents, true)?;
        let traced = warm_then_load(&server, &tokens[..n], duration);
        let syncs = server.stop()?.unwrap_or(0);
        let (traced, traced_took) = traced?;
        let records = lines(&log)? - before;
        if records < traced {
            return Err(format!("{traced} reads wrote only {records} audit records"));
        }
        rows.push(Row {
            clients: n,
            rates,
            traced_rate: traced as f64 / traced_took.as_secs_f64(),
            syncs,
            records,
            sync_cost,
        });
    }
    Ok(rows)
}

/// The median cost of appending a 200-byte line to a file in `dir` and `fdatasync`ing it (200 times; the file is
/// removed after).
fn append_and_sync_cost(dir: &Path) -> Result<Duration, String> {
    let path = dir.join(".sync-cost");
    let fail = |e: std::io::Error| format!("cannot time an append and sync in {}: {e}", dir.display());
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(fail)?;
    let line = [b'x'; 200];
    let mut samples = Vec::with_capacity(200);
    for _ in 0..200 {
        let started = Instant::now();
        file.write_all(&line).map_err(fail)?;
        file.sync_data().map_err(fail)?;
        samples.push(started.elapsed());
    }
    drop(file);
    std::fs::remove_file(&path).map_err(fail)?;
    Ok(median(&samples))
}

/// The Markdown table of `rows`: each row's median reads per second against the first row's, and the range of
/// the same ratio taken within each round.
pub(crate) fn render(rows: &[Row], duration: Duration) -> String {
    let mut out = String::new();
    let rounds = rows.first().map_or(0, |row| row.rates.len());
    let _ = writeln!(
        out,
        "`memory_get` through `alp serve` (release build, 127.0.0.1, one kept-alive connection and token per \
         client, one audit record per call), {} s per run, a fresh server per run; {rounds} rounds, each running \
         every client count once in turn: *reads/s* is the median over the rounds, *× one client* the ratio of \
         medians, *per round* the lowest and highest ratio within one round. fsyncs counted in one more run per \
         count, of the same length, on a server started under `strace -f --seccomp-bpf -c -e \
         trace=fsync,fdatasync` (only those calls stop the server). *One append + sync*: the median cost of a \
         200-byte append to a file beside the log followed by `fdatasync`, timed just before the traced run; the \
         fewer records per sync, the more one client's rate depends on it, so the gain of many clients over one \
         grows with it.\n",
        duration.as_secs()
    );
    let _ = writeln!(
        out,
        "| clients | reads/s | × one client | per round | traced run: reads/s | fsyncs | audit records | \
         fsyncs/record | one append + sync |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    let base = rows.first().map(|row| row.rates.as_slice()).unwrap_or_default();
    let base_median = median_rate(base);
    for row in rows {
        let ratios: Vec<f64> = row.rates.iter().zip(base).map(|(rate, base)| rate / base).collect();
        let (low, high) = ratios
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), &r| (low.min(r), high.max(r)));
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.2}× | {low:.2}–{high:.2}× | {:.0} | {} | {} | {:.3} | {:.3} ms |",
            row.clients,
            median_rate(&row.rates),
            median_rate(&row.rates) / base_median,
            row.traced_rate,
            row.syncs,
            row.records,
            row.syncs as f64 / row.records.max(1) as f64,
            row.sync_cost.as_secs_f64() * 1000.0
        );
    }
    out
}

/// A name no other token of a shared store holds (a token's name is unique among the tokens not revoked, and the
/// stores keep the tokens of earlier runs and sections): the run's start, in nanoseconds since the Unix epoch,
/// and a count of the tokens this run made.
fn unique() -> String {
    static STARTED: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let started = *STARTED.get_or_init(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos())
    });
    format!("{started}-{}", MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// `alp token create --role bench`, named `client-<n>-<unique>`: the token.
pub(crate) fn token(alp: &Path, root: &Path, agents: &Path, n: usize) -> Result<String, String> {
    let output = Command::new(alp)
        .arg("--root")
        .arg(root)
        .arg("--agents")
        .arg(agents)
        .args(["--json", "token", "create", "--role", "bench", "--name", &format!("client-{n}-{}", unique())])
        .env_remove("ALP_AUDIT_KEY")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", alp.display()))?;
    if !output.status.success() {
        return Err(format!("alp token create failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let created: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("alp token create printed no JSON: {e}"))?;
    created["token"].as_str().map(str::to_owned).ok_or("alp token create printed no token".to_owned())
}

pub(crate) fn lines(log: &Path) -> Result<u64, String> {
    let bytes = std::fs::read(log).map_err(|e| format!("cannot read {}: {e}", log.display()))?;
    Ok(bytes.iter().filter(|&&b| b == b'\n').count() as u64)
}

/// `tokens.len()` clients calling back to back for `duration`: how many calls were answered, in how long.
fn load(addr: &str, tokens: &[String], duration: Duration) -> Result<(u64, Duration), String> {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = tokens.iter().map(|t| Client::connect(addr, t)).collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let handles: Vec<_> = clients
        .drain(..)
        .map(|mut client| {
            let (done, stop) = (Arc::clone(&done), Arc::clone(&stop));
            std::thread::spawn(move || -> Result<(), String> {
                while !stop.load(Ordering::Relaxed) {
                    client.get()?;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let count = done.load(Ordering::Relaxed);
    let took = started.elapsed();
    for handle in handles {
        handle.join().map_err(|_| "a client thread panicked".to_owned())??;
    }
    Ok((count, took))
}

/// The MCP era a client's requests are of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// Plain JSON-RPC requests, as clients of the session era (`2025-11-25` and older) send them over HTTP.
    Session,
    /// `2026-07-28`: the version and client capabilities in each request's `_meta`, and the `MCP-Protocol-Version`,
    /// `Mcp-Method` and `Mcp-Name` headers.
    Stateless,
}

/// One kept-alive HTTP/1.1 connection and its token.
pub(crate) struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    addr: String,
    token: String,
    era: Era,
    request: Vec<u8>,
}

impl Client {
    /// A connection to `addr` whose [`Client::get`] reads one entry of the store `corpus::notes` writes.
    pub(crate) fn connect(addr: &str, token: &str) -> Result<Client, String> {
        Client::connect_for(addr, token, &format!(r#"{{"id":"{ID}"}}"#))
    }

    /// A connection to `addr` whose [`Client::get`] calls `memory_get` with `arguments` (a JSON object).
    pub(crate) fn connect_for(addr: &str, token: &str, arguments: &str) -> Result<Client, String> {
        Client::connect_in(Era::Session, addr, token, arguments)
    }

    /// [`Client::connect_for`] whose requests are of `era`.
    pub(crate) fn connect_in(era: Era, addr: &str, token: &str, arguments: &str) -> Result<Client, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let _ = stream.set_nodelay(true);
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        let request = era_request(era, addr, token, "memory_get", arguments);
        Ok(Client {
            reader: BufReader::new(stream),
            writer,
            addr: addr.to_owned(),
            token: token.to_owned(),
            era,
            request: request.into_bytes(),
        })
    }

    /// One `memory_get`; an answer that is not a successful call is an error.
    pub(crate) fn get(&mut self) -> Result<(), String> {
        let request = std::mem::take(&mut self.request);
        let answer = self.send(&request);
        self.request = request;
        answer.map(drop)
    }

    /// One call of `tool` with `arguments` (a JSON object): the body of its successful answer.
    pub(crate) fn call(&mut self, tool: &str, arguments: &str) -> Result<String, String> {
        let request = era_request(self.era, &self.addr, &self.token, tool, arguments);
        self.send(request.as_bytes())
    }

    /// Writes `request` and reads its answer; an answer that is not a successful call is an error.
    fn send(&mut self, request: &[u8]) -> Result<String, String> {
        self.writer.write_all(request).map_err(|e| format!("the server's connection failed: {e}"))?;
        let (status, body) = read_answer(&mut self.reader)?;
        if !status.starts_with("HTTP/1.1 200")
            || !body.contains("\"result\"")
            || body.contains("\"isError\":true")
        {
            return Err(format!("a call failed: {} {body}", status.trim_end()));
        }
        Ok(body)
    }
}

/// One HTTP answer read from `reader`: its status line (trimmed) and its body (of its `Content-Length`).
pub(crate) fn read_answer(reader: &mut impl BufRead) -> Result<(String, String), String> {
    let fail = |e: std::io::Error| format!("the server's connection failed: {e}");
    let mut status = String::new();
    if reader.read_line(&mut status).map_err(fail)? == 0 {
        return Err("the server closed the connection".to_owned());
    }
    let mut length = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).map_err(fail)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length = length.ok_or(format!("an answer without Content-Length: {}", status.trim_end()))?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(fail)?;
    Ok((status.trim_end().to_owned(), String::from_utf8_lossy(&body).into_owned()))
}

/// A `tools/call` of `tool` with `arguments` as one HTTP/1.1 POST to `/mcp`.
pub(crate) fn request(addr: &str, token: &str, tool: &str, arguments: &str) -> String {
    post(
        addr,
        token,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        ),
    )
}

/// [`request`] in `era`: in the stateless one, with the protocol version and client capabilities in `_meta` and
/// the headers that name the version, the method and the tool.
pub(crate) fn era_request(era: Era, addr: &str, token: &str, tool: &str, arguments: &str) -> String {
    match era {
        Era::Session => request(addr, token, tool, arguments),
        Era::Stateless => post_with(
            addr,
            token,
            &format!("MCP-Protocol-Version: {STATELESS}\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n"),
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{STATELESS}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
            ),
        ),
    }
}

/// The protocol revision of [`Era::Stateless`].
const STATELESS: &str = "2026-07-28";

/// `body` as one HTTP/1.1 POST to `/mcp` with `token`.
pub(crate) fn post(addr: &str, token: &str, body: &str) -> String {
    post_with(addr, token, "", body)
}

/// [`post`] with `headers` (each line ending in CRLF) added.
fn post_with(addr: &str, token: &str, headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nAuthorization: Bearer {token}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// One row of the table.
pub(crate) struct Row {
    /// Clients, each on its own connection with its own token.
    pub(crate) clients: usize,
    /// Reads per second, untraced, in each round.
    pub(crate) rates: Vec<f64>,
    /// Reads per second under strace.
    pub(crate) traced_rate: f64,
    /// fsync and fdatasync calls in the traced run.
    pub(crate) syncs: u64,
    /// Audit records the traced run appended.
    pub(crate) records: u64,
    /// What one durable append cost beside the log just before this row's traced run: the median of 200 appends
    /// of a 200-byte line, each followed by `fdatasync`. Group commit pays off in proportion to it.
    pub(crate) sync_cost: Duration,
}

/// A few calls on four connections (the page cache, the server's first calls), then the load.
fn warm_then_load(server: &Server, tokens: &[String], duration: Duration) -> Result<(u64, Duration), String> {
    for token in tokens.iter().take(4) {
        let mut client = Client::connect(&server.addr, token)?;
        for _ in 0..10 {
            client.get()?;
        }
    }
    load(&server.addr, tokens, duration)
}

/// `alp --json serve --listen 127.0.0.1:0`, alone or under `strace -f --seccomp-bpf -c` counting fsync and
/// fdatasync calls.
pub(crate) struct Server {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    strace: Option<PathBuf>,
}

impl Server {
    /// The server's process ID (untraced servers only: under strace, strace's).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn start(alp: &Path, root: &Path, agents: &Path, traced: bool) -> Result<Server, String> {
        Server::start_with(alp, root, agents, traced, &[])
    }

    /// [`Server::start`] with `serve_args` after `serve --listen 127.0.0.1:0` (`--max-concurrency 1`).
    pub(crate) fn start_with(
        alp: &Path,
        root: &Path,
        agents: &Path,
        traced: bool,
        serve_args: &[&str],
    ) -> Result<Server, String> {
        let out = std::env::temp_dir().join(format!("alp-serve-load-strace-{}", std::process::id()));
        let mut command = if traced {
            let mut c = Command::new("strace");
            c.args(["-f", "--seccomp-bpf", "-c", "-e", "trace=fsync,fdatasync", "-o"]).arg(&out).arg(alp);
            c
        } else {
            Command::new(alp)
        };
        let mut child = command
            .arg("--root")
            .arg(root)
            .arg("--agents")
            .arg(agents)
            .args(["--json", "serve", "--listen", "127.0.0.1:0"])
            .args(serve_args)
            .env_remove("ALP_AUDIT_KEY")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start alp serve: {e}"))?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let listening: serde_json::Value = match serde_json::from_str(&line) {
            Ok(value) => value,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("alp serve printed no listening line ({e}): {line:?}"));
            }
        };
        let url = listening["listening"][0].as_str().unwrap_or_default();
        let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        Ok(Server { child, addr, strace: traced.then_some(out) })
    }

    /// SIGTERM to the server (under strace: to strace's child), a graceful exit; under strace, the fsync and
    /// fdatasync calls it counted.
    pub(crate) fn stop(&mut self) -> Result<Option<u64>, String> {
        let pid = match &self.strace {
            None => Some(rustix::process::Pid::from_child(&self.child)),
            Some(_) => {
                let children =
                    std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.child.id()))
                        .unwrap_or_default();
                children
                    .split_whitespace()
                    .next()
                    .and_then(|p| p.parse().ok())
                    .and_then(rustix::process::Pid::from_raw)
            }
        };
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let status = self.child.wait().map_err(|e| format!("cannot wait for alp serve: {e}"))?;
        if !status.success() {
            return Err(format!("alp serve did not exit cleanly on SIGTERM: {status}"));
        }
        let Some(out) = &self.strace else { return Ok(None) };
        let summary = std::fs::read_to_string(out).map_err(|e| format!("strace wrote no summary: {e}"))?;
        let _ = std::fs::remove_file(out);
        // "% time  seconds  usecs/call  calls  errors  syscall": calls is the fourth column.
        let mut calls = 0;
        for line in summary.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if matches!(words.last(), Some(&("fsync" | "fdatasync"))) {
                calls += words.get(3).and_then(|w| w.parse::<u64>().ok()).unwrap_or(0);
            }
        }
        Ok(Some(calls))
    }
}
