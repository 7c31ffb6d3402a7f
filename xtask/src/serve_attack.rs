//! `cargo xtask serve-attack [--seconds N] [--connections N] [--creates N] [--alp PATH]`: the hardened HTTP front
//! of the real release `alp serve` under three attacks, on 127.0.0.1, and the section "Attacks on the HTTP front"
//! of `BENCHMARKS-serve.md` (replaced in place; `cargo xtask serve-bench` keeps it when it rewrites the file).
//!
//! 1. Unauthenticated bodies: `--connections` (200) connections without a token each send the headers of a POST
//!    with `Content-Length: 4000000` and then 1 MB of its body, and stall. The server's `VmRSS` and `VmHWM`
//!    (`/proc/PID/status`) and its socket descriptors (`/proc/PID/fd`) before, once every connection has sent
//!    (*during*), and 5 s later; whether each connection read a `401` and then its close.
//! 2. A neighbour's latency under a flood: another token's `memory_get`, calls back to back on one kept-alive
//!    connection for `--seconds` (10): p50 and p99 quiet, then while one token sends 4 MiB `ping` bodies from 8
//!    connections back to back, of two kinds: one long string in `params`, and `params` holding an array of about
//!    two million small numbers (refused with `400`: more than 65,536 JSON values). The server's peak `VmRSS` during
//!    each (sampled every 10 ms; `VmHWM` reset through `/proc/PID/clear_refs` before each).
//! 3. Callers that leave: a server with `--max-concurrency 1`, one token sends `--creates` (40) `memory_create`
//!    calls, each on a new connection closed as soon as the request is written. The server's `Threads` sampled
//!    every millisecond (peak against the idle server), and the creates that ran (`"operation":"create"` records
//!    in the audit log).
//!
//! Every loop is bounded; each server is stopped with SIGTERM and must exit 0.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::corpus::{NOTE, notes, writable_notes};
use crate::flags::{Alp, Seconds, positive};
use crate::measure::{Ran, Run, cpu, cpu_ticks, ms, proc_status, quantile};
use crate::root;
use crate::serve_load::{Client, Server, post, read_answer, request, token};

/// The heading of the section this command writes.
pub(crate) const HEADING: &str = "## Attacks on the HTTP front";
/// The largest body the server accepts (`memory_mcp::http::MAX_BODY_BYTES`): the flood's bodies are this long.
const FLOOD_BODY: usize = 4 * 1024 * 1024;
/// The connections that flood.
const FLOODERS: usize = 8;
/// What the unauthenticated connections declare, and what each sends of it.
const DECLARED: usize = 4_000_000;
const SENT: usize = 1_000_000;

/// `cargo xtask serve-attack`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// [default: 10]
    #[command(flatten)]
    seconds: Seconds,
    /// Unauthenticated connections that stall (at most 250)
    #[arg(long, value_name = "N", value_parser = positive::<usize>, default_value_t = 200)]
    connections: usize,
    /// `memory_create` calls whose callers leave (at most 1,000)
    #[arg(long, value_name = "N", value_parser = positive::<usize>, default_value_t = 40)]
    creates: usize,
    #[command(flatten)]
    alp: Alp,
}

struct Options {
    seconds: u64,
    connections: usize,
    creates: usize,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let o = Options {
        seconds: args.seconds.or(10),
        connections: args.connections.min(250),
        creates: args.creates.min(1_000),
    };
    let run = Run::start();
    let alp = args.alp.binary()?;
    let dir = std::env::temp_dir().join(format!("alp-serve-attack-{}", std::process::id()));
    let result = (|| {
        let stalls = stalled_bodies(&alp, &dir.join("stall"), o.connections)?;
        eprintln!("{stalls:?}");
        let floods = floods(&alp, &dir.join("flood"), Duration::from_secs(o.seconds))?;
        eprintln!("{floods:?}");
        let leavers = leavers(&alp, &dir.join("leave"), o.creates)?;
        eprintln!("{leavers:?}");
        Ok::<_, String>((stalls, floods, leavers))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    let (stalls, floods, leavers) = result?;
    let report =
        Report { stalls: &stalls, floods: &floods, leavers: &leavers, seconds: o.seconds, ran: run.ran() };
    let path = root().join("BENCHMARKS-serve.md");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let section = report.render();
    let new = match self::section(&old) {
        Some(found) => old.replacen(found, &section, 1),
        None if old.is_empty() => section,
        None => format!("{}\n\n{section}", old.trim_end()),
    };
    std::fs::write(&path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("wrote the section \"{}\" of BENCHMARKS-serve.md", &HEADING[3..]);
    Ok(())
}

/// The section this command writes, within `text` (a whole `BENCHMARKS-serve.md`): from its heading to the next
/// heading of the same level, or to the end.
pub(crate) fn section(text: &str) -> Option<&str> {
    crate::measure::section(text, HEADING)
}

/// What the server holds at one moment.
#[derive(Debug, Clone, Copy)]
struct Held {
    rss_kib: u64,
    hwm_kib: u64,
    sockets: usize,
}

fn held(pid: u32) -> Result<Held, String> {
    let sockets = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map_err(|e| format!("cannot list the server's descriptors: {e}"))?
        .filter_map(Result::ok)
        .filter(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|to| to.to_string_lossy().starts_with("socket:"))
        })
        .count();
    Ok(Held { rss_kib: proc_status(pid, "VmRSS")?, hwm_kib: proc_status(pid, "VmHWM")?, sockets })
}

#[derive(Debug)]
struct Stalls {
    connections: usize,
    before: Held,
    during: Held,
    later: Held,
    /// Body bytes the connections managed to write, in all.
    written: u64,
    /// Connections that read a `401`, and that then saw the server close (end of stream or a reset).
    unauthorized: usize,
    closed: usize,
    /// Closes seen as a reset rather than an end of stream.
    resets: usize,
    /// The statuses read, by their line (a connection that read none: `none`).
    statuses: BTreeMap<String, usize>,
}

/// One unauthenticated connection: the headers and `SENT` bytes of a `DECLARED`-byte body (as much as the server
/// takes within 3 s), `sent` raised, then what it reads within 10 s. The connection stays open (stalled) until the
/// caller drops it.
fn stall(addr: &str, sent: &AtomicUsize) -> (Option<TcpStream>, u64, String, Option<bool>) {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        sent.fetch_add(1, Ordering::SeqCst);
        return (None, 0, "cannot connect".to_owned(), None);
    };
    let _ = stream.set_write_timeout(Some(Duration::from_secs(3)));
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let headers = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nContent-Length: {DECLARED}\r\n\r\n"
    );
    let mut written = 0u64;
    if stream.write_all(headers.as_bytes()).is_ok() {
        let chunk = [b' '; 64 * 1024];
        while (written as usize) < SENT {
            let n = (SENT - written as usize).min(chunk.len());
            match stream.write(&chunk[..n]) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n as u64,
            }
        }
    }
    sent.fetch_add(1, Ordering::SeqCst);
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // `Some(false)`: an end of stream; `Some(true)`: a reset; `None`: still open after 10 s.
    let closed = loop {
        match stream.read(&mut buf) {
            Ok(0) => break Some(false),
            Ok(n) => answer.extend_from_slice(&buf[..n.min(65_536 - answer.len().min(65_536))]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break Some(true),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break None,
        }
    };
    let status = String::from_utf8_lossy(&answer).lines().next().map_or("none".to_owned(), str::to_owned);
    (Some(stream), written, status, closed)
}

fn stalled_bodies(alp: &Path, dir: &Path, connections: usize) -> Result<Stalls, String> {
    notes(dir, 100)?;
    let mut server = Server::start(alp, &dir.join("memory"), &dir.join("agents"), false)?;
    let result = (|| {
        std::thread::sleep(Duration::from_millis(300));
        let pid = server.pid();
        let before = held(pid)?;
        let sent = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..connections)
            .map(|_| {
                let (addr, sent) = (server.addr.clone(), Arc::clone(&sent));
                std::thread::spawn(move || stall(&addr, &sent))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while sent.load(Ordering::SeqCst) < connections && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let during = held(pid)?;
        let measured = Instant::now();
        let mut kept = Vec::new();
        let mut stalls = Stalls {
            connections,
            before,
            during,
            later: during,
            written: 0,
            unauthorized: 0,
            closed: 0,
            resets: 0,
            statuses: BTreeMap::new(),
        };
        for handle in handles {
            let (stream, written, status, closed) =
                handle.join().map_err(|_| "a connection's thread panicked".to_owned())?;
            kept.push(stream);
            stalls.written += written;
            stalls.unauthorized += usize::from(status.starts_with("HTTP/1.1 401"));
            stalls.closed += usize::from(closed.is_some());
            stalls.resets += usize::from(closed == Some(true));
            *stalls.statuses.entry(status).or_default() += 1;
        }
        std::thread::sleep(Duration::from_secs(5).saturating_sub(measured.elapsed()));
        stalls.later = held(pid)?;
        drop(kept);
        Ok(stalls)
    })();
    server.stop()?;
    result
}

/// A ping of exactly `FLOOD_BODY` bytes: one long string in `params`, or (`numbers`) an array of small numbers.
fn flood_body(numbers: bool) -> String {
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"#;
    let mut body = String::with_capacity(FLOOD_BODY);
    body.push_str(head);
    if numbers {
        let room = FLOOD_BODY - head.len() - "[0]}}".len();
        body.push('[');
        if room % 2 == 1 {
            body.push(' ');
        }
        for _ in 0..room / 2 {
            body.push_str("0,");
        }
        body.push_str("0]}}");
    } else {
        let room = FLOOD_BODY - head.len() - "\"\"}}".len();
        body.push('"');
        body.extend(std::iter::repeat_n('x', room));
        body.push_str("\"}}");
    }
    debug_assert_eq!(body.len(), FLOOD_BODY);
    body
}

#[derive(Debug)]
struct Latency {
    calls: usize,
    p50: Duration,
    p99: Duration,
}

#[derive(Debug)]
struct Flood {
    kind: &'static str,
    latency: Latency,
    /// Requests answered, by status line; and connection failures (reconnected).
    statuses: BTreeMap<String, u64>,
    failures: u64,
    /// The server's `VmRSS` before the flood, its peak sampled during it, and its `VmHWM` after it (reset before).
    rss_before_kib: u64,
    rss_peak_kib: u64,
    hwm_kib: u64,
    /// Bytes of flood bodies sent in all.
    bytes: u64,
    /// The server's CPU time (user + system) over the flood's wall time: 2.0 is both cores.
    cpu_share: f64,
}

#[derive(Debug)]
struct Floods {
    quiet: Latency,
    quiet_rss_kib: u64,
    floods: Vec<Flood>,
}

/// `memory_get` back to back on `client` for `duration`.
fn gets(client: &mut Client, duration: Duration) -> Result<Latency, String> {
    let mut samples = Vec::new();
    let started = Instant::now();
    while started.elapsed() < duration {
        let call = Instant::now();
        client.get()?;
        samples.push(call.elapsed());
    }
    Ok(Latency { calls: samples.len(), p50: quantile(&samples, 0.5), p99: quantile(&samples, 0.99) })
}

/// Samples `/proc/PID/status` `NAME` every `every` until dropped: the largest value seen.
struct Peak {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<u64>>,
}

impl Peak {
    fn start(pid: u32, name: &'static str, every: Duration) -> Peak {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                peak = peak.max(proc_status(pid, name).unwrap_or(0));
                std::thread::sleep(every);
            }
            peak
        });
        Peak { stop, handle: Some(handle) }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().and_then(|h| h.join().ok()).unwrap_or(0)
    }
}

fn floods(alp: &Path, dir: &Path, duration: Duration) -> Result<Floods, String> {
    notes(dir, 100)?;
    let (memory, agents) = (dir.join("memory"), dir.join("agents"));
    let victim = token(alp, &memory, &agents, 0)?;
    let flooder = token(alp, &memory, &agents, 1)?;
    let mut server = Server::start(alp, &memory, &agents, false)?;
    let result = (|| {
        let pid = server.pid();
        let mut client = Client::connect(&server.addr, &victim)?;
        gets(&mut client, Duration::from_secs(1))?;
        let quiet = gets(&mut client, duration)?;
        let quiet_rss_kib = proc_status(pid, "VmRSS")?;
        eprintln!("quiet: get p50 {:.3} ms, p99 {:.3} ms", ms(quiet.p50), ms(quiet.p99));
        let mut floods = Vec::new();
        for (kind, numbers) in [("one 4 MiB string", false), ("4 MiB array of small numbers", true)] {
            let request: Arc<Vec<u8>> =
                Arc::new(post(&server.addr, &flooder, &flood_body(numbers)).into_bytes());
            let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
            let rss_before_kib = proc_status(pid, "VmRSS")?;
            let (cpu_before, wall) =
                (cpu_ticks(pid).ok_or("cannot read the server's /proc stat")?, Instant::now());
            let peak = Peak::start(pid, "VmRSS", Duration::from_millis(10));
            let stop = Arc::new(AtomicBool::new(false));
            let statuses = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
            let (failures, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
            let handles: Vec<_> = (0..FLOODERS)
                .map(|_| {
                    let (addr, request, stop) =
                        (server.addr.clone(), Arc::clone(&request), Arc::clone(&stop));
                    let (statuses, failures, bytes) =
                        (Arc::clone(&statuses), Arc::clone(&failures), Arc::clone(&bytes));
                    std::thread::spawn(move || flood(&addr, &request, &stop, &statuses, &failures, &bytes))
                })
                .collect();
            // The flood under way before the neighbour's calls are timed.
            std::thread::sleep(Duration::from_millis(500));
            let latency = gets(&mut client, duration);
            stop.store(true, Ordering::Relaxed);
            for handle in handles {
                let _ = handle.join();
            }
            let rss_peak_kib = peak.finish();
            let cpu_share = (cpu_ticks(pid).ok_or("cannot read the server's /proc stat")? - cpu_before)
                as f64
                / 100.0
                / wall.elapsed().as_secs_f64();
            let latency = latency?;
            let hwm_kib = proc_status(pid, "VmHWM")?;
            let statuses = std::mem::take(&mut *statuses.lock().map_err(|_| "a poisoned lock".to_owned())?);
            eprintln!(
                "flood {kind}: get p50 {:.3} ms, p99 {:.3} ms; {statuses:?}; RSS peak {rss_peak_kib} KiB",
                ms(latency.p50),
                ms(latency.p99)
            );
            floods.push(Flood {
                kind,
                latency,
                statuses,
                failures: failures.load(Ordering::Relaxed),
                rss_before_kib,
                rss_peak_kib,
                hwm_kib,
                bytes: bytes.load(Ordering::Relaxed),
                cpu_share,
            });
        }
        Ok(Floods { quiet, quiet_rss_kib, floods })
    })();
    server.stop()?;
    result
}

/// One flooding connection: `request` sent and its answer read, back to back, until `stop`; a connection that
/// fails or is closed is opened again (at most 1,000 times).
fn flood(
    addr: &str,
    request: &[u8],
    stop: &AtomicBool,
    statuses: &Mutex<BTreeMap<String, u64>>,
    failures: &AtomicU64,
    bytes: &AtomicU64,
) {
    let mut reconnects = 0;
    while !stop.load(Ordering::Relaxed) && reconnects < 1_000 {
        reconnects += 1;
        let Ok(stream) = TcpStream::connect(addr) else {
            failures.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(40)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(40)));
        let Ok(mut writer) = stream.try_clone() else { continue };
        let mut reader = BufReader::new(stream);
        while !stop.load(Ordering::Relaxed) {
            if writer.write_all(request).is_err() {
                failures.fetch_add(1, Ordering::Relaxed);
                break;
            }
            bytes.fetch_add(request.len() as u64, Ordering::Relaxed);
            match read_answer(&mut reader) {
                Ok((status, _)) => {
                    if let Ok(mut statuses) = statuses.lock() {
                        *statuses.entry(status).or_default() += 1;
                    }
                }
                Err(_) => {
                    failures.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
}

#[derive(Debug)]
struct Leavers {
    sent: usize,
    threads_idle: u64,
    threads_peak: u64,
    threads_after: u64,
    /// Audit records of `create` (allowed and refused), and of those the allowed.
    creates: u64,
    allowed: u64,
    /// From the first request written to the last audit record seen.
    took: Duration,
}

fn create_records(log: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let creates = text.lines().filter(|l| l.contains(r#""operation":"create""#));
    creates.fold((0, 0), |(all, allowed), l| {
        (all + 1, allowed + u64::from(l.contains(r#""outcome":"allowed""#)))
    })
}

fn leavers(alp: &Path, dir: &Path, creates: usize) -> Result<Leavers, String> {
    writable_notes(dir, 100)?;
    let (memory, agents) = (dir.join("memory"), dir.join("agents"));
    let token = token(alp, &memory, &agents, 0)?;
    let log = memory.join("audit.jsonl");
    let mut server = Server::start_with(alp, &memory, &agents, false, &["--max-concurrency", "1"])?;
    let result = (|| {
        let pid = server.pid();
        std::thread::sleep(Duration::from_millis(500));
        let threads_idle = proc_status(pid, "Threads")?;
        let peak = Peak::start(pid, "Threads", Duration::from_millis(1));
        let started = Instant::now();
        let content = NOTE;
        for i in 0..creates {
            let arguments = format!(r#"{{"id":"project:w:notes:left-{i}","content":"{content} {i}"}}"#);
            let request = request(&server.addr, &token, "memory_create", &arguments);
            let mut stream =
                TcpStream::connect(&server.addr).map_err(|e| format!("cannot connect to the server: {e}"))?;
            stream.write_all(request.as_bytes()).map_err(|e| format!("cannot send a create: {e}"))?;
            drop(stream);
        }
        // Until no record has been added for 6 s (a call waits at most 5 s for its slot), at most 60 s.
        let (mut seen, mut last_change) = (create_records(&log), Instant::now());
        let mut took = started.elapsed();
        while last_change.elapsed() < Duration::from_secs(6) && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(100));
            let now = create_records(&log);
            if now != seen {
                seen = now;
                last_change = Instant::now();
                took = started.elapsed();
            }
        }
        let threads_peak = peak.finish();
        let threads_after = proc_status(pid, "Threads")?;
        Ok(Leavers {
            sent: creates,
            threads_idle,
            threads_peak,
            threads_after,
            creates: seen.0,
            allowed: seen.1,
            took,
        })
    })();
    server.stop()?;
    result
}

struct Report<'a> {
    stalls: &'a Stalls,
    floods: &'a Floods,
    leavers: &'a Leavers,
    seconds: u64,
    ran: Ran,
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

impl Report<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{HEADING}\n");
        let _ = writeln!(
            out,
            "{} (`cargo xtask serve-bench` keeps this section when it rewrites the rest of the file). Each attack \
             runs against a fresh release `alp serve --listen 127.0.0.1:0` (default `--max-connections` 256) on a \
             store of 100 entries, from raw HTTP/1.1 sockets on 127.0.0.1; memory and threads are read from the \
             server's `/proc/PID/status` (`VmRSS`, `VmHWM`, `Threads`), open connections as its socket descriptors \
             in `/proc/PID/fd` (the listener included).\n",
            self.ran.generated("serve-attack", &cpu())
        );
        self.stalls(&mut out);
        self.floods(&mut out);
        self.leavers(&mut out);
        out
    }

    fn stalls(&self, out: &mut String) {
        let s = self.stalls;
        let _ = writeln!(out, "### Bodies without a token\n");
        let _ = writeln!(
            out,
            "{} connections at once, none with a token, each sends the headers of a `POST /mcp` with \
             `Content-Length: {DECLARED}`, then up to {SENT} bytes of that body (3 s write timeout), then stalls, \
             reading. *During*: once every connection has sent; *5 s later*: 5 s after that, the client sockets \
             still open. The connections wrote {:.1} MB of body in all ({:.1} KB each on average: what the kernel \
             buffers accepted before the server closed them).\n",
            s.connections,
            s.written as f64 / 1e6,
            s.written as f64 / 1e3 / s.connections.max(1) as f64
        );
        let _ = writeln!(out, "| | VmRSS | VmHWM | socket fds |\n|---|---:|---:|---:|");
        for (name, h) in [("before", s.before), ("during", s.during), ("5 s later", s.later)] {
            let _ = writeln!(
                out,
                "| {name} | {:.1} MiB | {:.1} MiB | {} |",
                mib(h.rss_kib),
                mib(h.hwm_kib),
                h.sockets
            );
        }
        let statuses: Vec<String> = s.statuses.iter().map(|(k, v)| format!("{v} × `{k}`")).collect();
        let _ = writeln!(
            out,
            "\n**{} of {} read a `401`, {} saw the connection closed** ({} as a reset, {} as an end of stream). Statuses \
             read: {}. The body bytes the server never read sat in the kernel's socket buffers until it closed \
             the connections, not in its memory.\n",
            s.unauthorized,
            s.connections,
            s.closed,
            s.resets,
            s.closed - s.resets,
            statuses.join(", ")
        );
    }

    fn floods(&self, out: &mut String) {
        let f = self.floods;
        let _ = writeln!(out, "### A neighbour's `memory_get` under a flood of 4 MiB bodies\n");
        let _ = writeln!(
            out,
            "Token A calls `memory_get` back to back on one kept-alive connection for {} s, first with nothing \
             else running (*quiet*), then while token B sends {FLOOD_BODY}-byte `ping` requests from {FLOODERS} \
             connections, each request sent as soon as the last is answered (the flood runs 0.5 s before A's calls \
             are timed, and stops when they end). Two bodies: `params` holding one string of 4 MiB, and `params` \
             holding an array of about two million `0`s (more than the 65,536 JSON values a message may hold, so \
             refused with `400` before rmcp parses it). The flooding client runs on the same 2 cores as the server. \
             Peak VmRSS: sampled every 10 ms during the flood; VmHWM: the kernel's peak, reset (`clear_refs`) just \
             before the flood. Goal: A's p50 within 2× its quiet p50.\n",
            self.seconds
        );
        let _ = writeln!(
            out,
            "| load | A's calls | A's p50 | A's p99 | p50 / quiet p50 | B's answers | B's MB sent | server CPU | VmRSS \
             before → peak (VmHWM) |\n|---|---:|---:|---:|---:|---|---:|---:|---:|"
        );
        let _ = writeln!(
            out,
            "| quiet | {} | {:.3} ms | {:.3} ms | 1.00× | — | — | — | {:.1} MiB |",
            f.quiet.calls,
            ms(f.quiet.p50),
            ms(f.quiet.p99),
            mib(f.quiet_rss_kib)
        );
        for flood in &f.floods {
            let mut answers: Vec<String> =
                flood.statuses.iter().map(|(k, v)| format!("{v} × `{k}`")).collect();
            if flood.failures > 0 {
                answers.push(format!("{} connection failures", flood.failures));
            }
            let ratio = flood.latency.p50.as_secs_f64() / f.quiet.p50.as_secs_f64().max(1e-9);
            let _ = writeln!(
                out,
                "| {} | {} | {:.3} ms | {:.3} ms | **{ratio:.2}×** | {} | {:.0} | {:.2} cores | {:.1} → {:.1} MiB \
                 ({:.1} MiB) |",
                flood.kind,
                flood.latency.calls,
                ms(flood.latency.p50),
                ms(flood.latency.p99),
                answers.join(", "),
                flood.bytes as f64 / 1e6,
                flood.cpu_share,
                mib(flood.rss_before_kib),
                mib(flood.rss_peak_kib),
                mib(flood.hwm_kib)
            );
        }
        let worst = f.floods.iter().map(|fl| fl.latency.p50.as_secs_f64()).fold(0.0, f64::max);
        let within = worst <= 2.0 * f.quiet.p50.as_secs_f64();
        let _ = writeln!(
            out,
            "\n**Goal {}**: the worst flood's p50 is {:.1}× the quiet p50. *Server CPU*: the server's user + system \
             time over the flood's wall time, from `/proc/PID/stat` (2 cores in all, shared with the flooding \
             client's 8 threads and A). What keeps A's calls going: B's bodies are over 64 KiB, so B's requests \
             are read, parsed and answered one at a time (its token's one slot for long bodies; the others wait for \
             it); the message's shape is read on the blocking pool, and the server's two or more runtime workers \
             keep serving A while one is busy with B's message. The ratio moves by about a quarter from run to run \
             on this shared machine (1.5× to 2.0× in four runs of the same build).\n",
            if within { "met" } else { "not met" },
            worst / f.quiet.p50.as_secs_f64().max(1e-9)
        );
    }

    fn leavers(&self, out: &mut String) {
        let l = self.leavers;
        let extra = l.threads_peak.saturating_sub(l.threads_idle);
        let _ = writeln!(out, "### Callers that leave, with `--max-concurrency 1`\n");
        let _ = writeln!(
            out,
            "One token sends {} `memory_create` calls (each a new entry), each on a new connection closed as soon \
             as its request is written. The server's `Threads` sampled every millisecond from just before the \
             first request until no audit record had been added for 6 s: each call's blocking work runs on a \
             thread of the blocking pool, so the threads beyond the idle server's are an upper bound of the \
             blocking work running at once. Goal: calls in flight at most 1 + 8 (one slot, and the token's 8 requests in flight, held \
             until their work ends).\n",
            l.sent
        );
        let _ = writeln!(
            out,
            "| creates sent | threads, idle | threads, peak | peak − idle | threads after | create records (allowed) \
             | last record after |\n|---:|---:|---:|---:|---:|---:|---:|"
        );
        let _ = writeln!(
            out,
            "| {} | {} | {} | **{extra}** | {} | {} ({}) | {:.2} s |",
            l.sent,
            l.threads_idle,
            l.threads_peak,
            l.threads_after,
            l.creates,
            l.allowed,
            l.took.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "\n**Goal {}**: {} of the {} creates ran (each one that runs writes one audit record, allowed or \
             refused), so the calls ever in flight were at most {}. The threads count more than calls: the server's \
             runtime has its worker threads, and each request's token check also runs on the blocking pool (the \
             records are files), so {} requests arriving together start blocking threads for their token checks \
             too, up to the pool's bound (`--max-concurrency` + 16); idle blocking threads stay 10 s, hence \
             *threads after*.\n",
            if l.creates <= 9 { "met" } else { "not met" },
            l.creates,
            l.sent,
            l.creates,
            l.sent
        );
    }
}
