//! The section "Receipts" of `BENCHMARKS-serve.md`, which `cargo xtask serve-bench` measures unless `--no-old`:
//! what a read's receipt costs, against the `alp` of a revision before receipts (`--old-commit`, default
//! [`DEFAULT_OLD`]).
//!
//! Since fd58e80 every allowed read appends its one audit record after reading, naming the door and every
//! `<id>@<version>` the answer held (`shown`); before, the record was appended before the read and named neither.
//!
//! 1. Three copies of the 10,000-entry `canonical` store (its entries and its role definition; no audit log, token
//!    or lock an earlier run left), each with a token its own server's binary made (`alp token create`), and three
//!    servers: the old `alp`, this tree's, and the old `alp` again (the A/A comparison: what the same binary
//!    measures against itself in the same rounds is the run-to-run noise).
//! 2. One kept-alive connection each, and rounds of `memory_search` (`postgres migration`, limit 20) then rounds of
//!    `memory_get` of one entry, the servers taking turns call by call in each of the six orders in turn, so that a
//!    slow moment of a shared machine falls on all three and none always follows the same other.
//! 3. Medians and p95 of every call, the ratio of medians new / old and old′ / old, and the spread of the same
//!    ratio taken within each round (of the round's medians): lowest, median, highest.
//! 4. The bytes of each allowed search and get record in each log, and of each field the new records have that the
//!    old ones lack.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::corpus::TERMS;
use crate::measure::{Ran, Run, machine, median, median_interval, median_rate, ms, quantile, ratio, utc_now};
use crate::root;
use crate::serve_load::{Client, Server, token};

/// The last revision before receipts (fd58e80 added them).
pub(crate) const DEFAULT_OLD: &str = "9592246";
/// The heading of the section.
pub(crate) const HEADING: &str = "## Receipts";
/// What each read may cost more with receipts than without.
const TARGET: f64 = 1.05;
/// The limit of every search: its record names this many entries.
pub(crate) const LIMIT: usize = 20;
/// Calls per server in a round: a search takes about 15 ms, a get about 1 ms.
pub(crate) const SEARCHES: usize = 20;
pub(crate) const GETS: usize = 200;
/// The entry every get reads.
pub(crate) const GET_ID: &str = "project:p000:notes:n000000";

/// The builds compared.
pub(crate) struct Builds<'a> {
    /// This tree's release `alp`, or the one `--alp` names (and its path as given).
    pub(crate) new: &'a Path,
    pub(crate) new_label: Option<&'a str>,
    /// The older `alp`, and how the report names it (a revision or a path).
    pub(crate) old: &'a Path,
    pub(crate) old_label: &'a str,
}

/// Measures and renders the section, on copies of `store` (the `canonical` store of `size` entries, generated)
/// made in a temporary directory, removed after.
pub(crate) fn section(
    builds: &Builds<'_>,
    store: &Path,
    size: usize,
    rounds: usize,
) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("alp-serve-receipts-{}", std::process::id()));
    let run = Run::start();
    let measured = measure(builds, store, &dir, rounds);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(render(builds, &measured?, size, rounds, &run.ran()))
}

/// One server of the comparison.
struct Side {
    label: &'static str,
    alp: PathBuf,
    dir: PathBuf,
}

/// Samples of one call: `[server][round]`, in the order old, new, old′.
pub(crate) type Samples = Vec<Vec<Vec<Duration>>>;

struct Measured {
    search: Samples,
    get: Samples,
    /// What the allowed records of each server weigh, in the order of the samples.
    records: Vec<Logged>,
}

/// What one server's log holds of each call.
struct Logged {
    search: Records,
    get: Records,
}

fn measure(builds: &Builds<'_>, store: &Path, dir: &Path, rounds: usize) -> Result<Measured, String> {
    let sides = [
        Side { label: "old", alp: builds.old.to_path_buf(), dir: dir.join("old") },
        Side { label: "new", alp: builds.new.to_path_buf(), dir: dir.join("new") },
        Side { label: "old′", alp: builds.old.to_path_buf(), dir: dir.join("old-again") },
    ];
    let mut servers = Vec::new();
    let get = format!(r#"{{"id":"{GET_ID}"}}"#);
    let started = (|| {
        let mut tokens = Vec::new();
        for side in &sides {
            copy_store(store, &side.dir)?;
            let (memory, agents) = (side.dir.join("memory"), side.dir.join("agents"));
            tokens.push(token(&side.alp, &memory, &agents, 0)?);
            servers.push(Server::start(&side.alp, &memory, &agents, false)?);
        }
        let [a, b, c] = [0, 1, 2].map(|i| Client::connect_for(&servers[i].addr, &tokens[i], &get));
        Ok::<_, String>([a?, b?, c?])
    })();
    let result = started.and_then(|mut clients| {
        let (search, get) = searches_then_gets(&mut clients, rounds)?;
        eprintln!("receipts: searches {}", summary(&search));
        eprintln!("receipts: gets {}", summary(&get));
        Ok((search, get))
    });
    let mut stopped = Ok(());
    for server in &mut servers {
        if let Err(e) = server.stop() {
            stopped = Err(e);
        }
    }
    let (search, get) = result?;
    stopped?;
    let records = sides
        .iter()
        .map(|side| {
            let log = side.dir.join("memory/audit.jsonl");
            let logged = Logged { search: records(&log, "search")?, get: records(&log, "get")? };
            eprintln!(
                "receipts: {} records: search {:.1} B, get {:.1} B",
                side.label, logged.search.mean_bytes, logged.get.mean_bytes
            );
            Ok(logged)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Measured { search, get, records })
}

/// The calls both comparisons time on three clients: after an untimed warm-up (the first search fills a server's
/// entry cache), `rounds` rounds of [`SEARCHES`] `memory_search` calls each, then `rounds` rounds of [`GETS`]
/// `memory_get` calls each, the clients taking turns call by call ([`alternate`]).
pub(crate) fn searches_then_gets(
    clients: &mut [Client; 3],
    rounds: usize,
) -> Result<(Samples, Samples), String> {
    let search = format!(r#"{{"query":"{} {}","limit":{LIMIT}}}"#, TERMS[0], TERMS[1]);
    let searching = |client: &mut Client| client.call("memory_search", &search).map(drop);
    for client in clients.iter_mut() {
        for _ in 0..5 {
            searching(client)?;
        }
        for _ in 0..50 {
            client.get()?;
        }
    }
    let search = alternate(clients, rounds, SEARCHES, searching)?;
    let get = alternate(clients, rounds, GETS, Client::get)?;
    Ok((search, get))
}

/// The orders in which the three servers take their turns: every one, so that each server is first, second and
/// third, and follows each of the others, equally often (in one fixed cycle a server always follows the same
/// other, and in trials of one binary against itself the second place measured 2% slower than the first).
const ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0], [1, 0, 2], [0, 2, 1]];

/// `per_round` calls of `call` on each of the three clients in each of `rounds` rounds, the clients taking turns
/// call by call in each of [`ORDERS`] in turn: the samples, `[client][round]`.
fn alternate(
    clients: &mut [Client; 3],
    rounds: usize,
    per_round: usize,
    call: impl Fn(&mut Client) -> Result<(), String>,
) -> Result<Samples, String> {
    let mut samples: Samples = vec![Vec::with_capacity(rounds); clients.len()];
    for round in 0..rounds {
        let mut this = vec![Vec::with_capacity(per_round); clients.len()];
        for turn in 0..per_round {
            for index in ORDERS[(round + turn) % ORDERS.len()] {
                let started = Instant::now();
                call(&mut clients[index])?;
                this[index].push(started.elapsed());
            }
        }
        for (client, taken) in samples.iter_mut().zip(this) {
            client.push(taken);
        }
    }
    Ok(samples)
}

/// Every sample of one server.
pub(crate) fn all(rounds: &[Vec<Duration>]) -> Vec<Duration> {
    rounds.iter().flatten().copied().collect()
}

/// `other` against `base`, both measured in the same rounds.
pub(crate) struct Comparison {
    /// The ratio of the medians of every call.
    pub(crate) overall: f64,
    /// The ratio of each round's medians, sorted.
    pub(crate) per_round: Vec<f64>,
    /// The rounds in which `other`'s median was the higher.
    pub(crate) slower: usize,
}

impl Comparison {
    pub(crate) fn of(base: &[Vec<Duration>], other: &[Vec<Duration>]) -> Comparison {
        let mut per_round: Vec<f64> =
            base.iter().zip(other).map(|(b, o)| ratio(median(o), median(b))).collect();
        per_round.sort_unstable_by(f64::total_cmp);
        Comparison {
            overall: ratio(median(&all(other)), median(&all(base))),
            slower: per_round.iter().filter(|&&r| r > 1.0).count(),
            per_round,
        }
    }

    pub(crate) fn low(&self) -> f64 {
        self.per_round.first().copied().unwrap_or(0.0)
    }

    pub(crate) fn high(&self) -> f64 {
        self.per_round.last().copied().unwrap_or(0.0)
    }

    pub(crate) fn middle(&self) -> f64 {
        median_rate(&self.per_round)
    }

    /// The interval of at least 95% confidence of [`Comparison::middle`].
    pub(crate) fn interval(&self) -> (f64, f64) {
        median_interval(&self.per_round)
    }

    pub(crate) fn spread(&self) -> String {
        format!("{:.3}, {:.3}, {:.3}", self.low(), self.middle(), self.high())
    }
}

/// Whether a cost is at most [`TARGET`], as far as the interval of the median per-round ratio can tell.
fn verdict((low, high): (f64, f64)) -> &'static str {
    if high <= TARGET {
        "**met**"
    } else if low > TARGET {
        "**not met**"
    } else {
        "**not resolved** by this run (its interval reaches past the target)"
    }
}

fn summary(samples: &Samples) -> String {
    let new = Comparison::of(&samples[0], &samples[1]);
    let aa = Comparison::of(&samples[0], &samples[2]);
    format!(
        "old {:.3} ms, new {:.3} ms, old′ {:.3} ms; new/old {:.3} (per round {}), old′/old {:.3} (per round {})",
        ms(median(&all(&samples[0]))),
        ms(median(&all(&samples[1]))),
        ms(median(&all(&samples[2]))),
        new.overall,
        new.spread(),
        aa.overall,
        aa.spread()
    )
}

/// What the allowed records of one operation in one log weigh.
#[derive(Default)]
struct Records {
    count: usize,
    /// Bytes per line, its newline included: what the log grows by.
    mean_bytes: f64,
    /// Entries named in `shown`, per record.
    mean_shown: f64,
    /// Per field, the bytes of `"name":value,` per record that has it, and how many have it.
    fields: BTreeMap<String, (f64, usize)>,
}

/// The allowed records of `operation` in the log at `path`.
fn records(path: &Path, operation: &str) -> Result<Records, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut found = Records::default();
    let (mut bytes, mut shown) = (0usize, 0usize);
    let mut fields: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("a line of {} that is not JSON ({e}): {line}", path.display()))?;
        if record["operation"] != operation || record["outcome"] != "allowed" {
            continue;
        }
        found.count += 1;
        bytes += line.len() + 1;
        shown += record["shown"].as_array().map_or(0, Vec::len);
        for (name, value) in record.as_object().into_iter().flatten() {
            let field = format!("\"{name}\":{value},").len();
            let entry = fields.entry(name.clone()).or_default();
            entry.0 += field;
            entry.1 += 1;
        }
    }
    if found.count == 0 {
        return Err(format!("{} holds no allowed {operation} record", path.display()));
    }
    let count = found.count as f64;
    found.mean_bytes = bytes as f64 / count;
    found.mean_shown = shown as f64 / count;
    found.fields = fields.into_iter().map(|(name, (b, n))| (name, (b as f64 / n as f64, n))).collect();
    Ok(found)
}

/// Copies a bench store's entries (`memory/projects`) and role definitions (`agents`) to `to`, without its audit
/// log: a copy whose log is its own, empty at the start, so that what is measured on it does not read or append
/// after the records every earlier run left in the store's log.
pub(crate) fn copy_store(store: &Path, to: &Path) -> Result<(), String> {
    copy_tree(&store.join("memory/projects"), &to.join("memory/projects"))?;
    copy_tree(&store.join("agents"), &to.join("agents"))
}

/// Copies the directories and regular files under `from` to `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot copy {} to {}: {e}", from.display(), to.display());
    std::fs::create_dir_all(to).map_err(fail)?;
    for entry in std::fs::read_dir(from).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        let kind = entry.file_type().map_err(fail)?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(fail)?;
        }
    }
    Ok(())
}

/// The output of `git` with `args` in the workspace, without its final newline (empty when it fails).
fn git(args: &[&str]) -> String {
    Command::new("git")
        .args(args)
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_owned())
        .unwrap_or_default()
}

/// This tree: `HEAD abc1234`, and where it has changes not committed outside `xtask/` and the Markdown, if any
/// (work in progress, which the release build holds too): `HEAD abc1234 with uncommitted changes in memory-mcp/`.
pub(crate) fn this_tree() -> String {
    let head = format!("HEAD {}", git(&["rev-parse", "--short", "HEAD"]));
    let status = git(&["status", "--porcelain", "--", ".", ":!xtask", ":!*.md"]);
    // `XY path` or `XY from -> to`: a file at the root by name, any other by its top directory.
    let mut places: Vec<String> = status
        .lines()
        .filter_map(|line| line.get(3..))
        .map(|path| path.rsplit(" -> ").next().unwrap_or(path))
        .map(|path| path.split_once('/').map_or(format!("`{path}`"), |(dir, _)| format!("`{dir}/`")))
        .collect();
    places.sort_unstable();
    places.dedup();
    if places.is_empty() {
        return head;
    }
    format!("{head}, with uncommitted changes in {}", places.join(", "))
}

/// `10000` as `10,000`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The commits between the old build and this tree, when the old one is a revision.
fn between(old_label: &str) -> Option<usize> {
    git(&["rev-list", "--count", &format!("{old_label}..HEAD")]).parse().ok()
}

fn render(builds: &Builds<'_>, m: &Measured, size: usize, rounds: usize, ran: &Ran) -> String {
    let old = builds.old_label;
    let command: Vec<String> = std::env::args().skip(1).collect();
    let mut out = String::new();
    let _ = writeln!(out, "{HEADING}\n");
    let _ = writeln!(
        out,
        "Measured by `cargo xtask {}` on {} ({}; this part took {:.0} s; load average {} before it and {} after \
         it, on a machine shared with other builds). What a read's receipt costs: since fd58e80 every allowed \
         read appends its one audit record after reading, naming the door and every `<id>@<version>` the answer \
         held (`shown`); before, the record was appended before the read and named neither.\n",
        command.join(" "),
        utc_now(),
        machine(),
        ran.took.as_secs_f64(),
        ran.load_before,
        ran.load_after,
    );
    let (new, between) = match builds.new_label {
        Some(path) => (format!("the `alp` at `{path}`"), None),
        None => (format!("this tree's ({})", this_tree()), between(old)),
    };
    let between = match between {
        Some(n) => format!(" *New / old* covers the {n} commits between the two, not receipts alone."),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "Three release servers, each on its own copy of the {}-entry `canonical` store (its entries and role \
         definition; its own audit log, empty at the start; a token made by its own binary's `alp token create`): \
         *old*, the `alp` of {old}; *new*, {new}; and *old′*, the old `alp` again, the A/A comparison.{between} One \
         kept-alive connection each. {rounds} rounds of {SEARCHES} `memory_search` calls per server \
         (`{} {}`, limit {LIMIT}: {LIMIT} results), then {rounds} rounds of {GETS} `memory_get` calls per server \
         (`{GET_ID}`); in each, the servers take turns call by call (old, new, old′, then new, old′, old, …), going \
         through the six orders in turn, so that each is first, second and third, and follows each of the others, \
         equally often. Every call appends its record and syncs it before it is \
         answered. Medians and p95 of every call of each server.\n",
        thousands(size),
        TERMS[0],
        TERMS[1],
    );
    let _ = writeln!(
        out,
        "| call | old: median (p95) | new: median (p95) | old′: median (p95) | new / old per round | 95% interval \
         | all calls | old′ / old per round (A/A) | 95% interval | all calls |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let calls = [("`memory_search`", &m.search), ("`memory_get`", &m.get)];
    for (name, samples) in calls {
        let cell = |side: &[Vec<Duration>]| {
            let all = all(side);
            format!("{:.3} ms ({:.3} ms)", ms(median(&all)), ms(quantile(&all, 0.95)))
        };
        let new = Comparison::of(&samples[0], &samples[1]);
        let aa = Comparison::of(&samples[0], &samples[2]);
        let ((new_low, new_high), (aa_low, aa_high)) = (new.interval(), aa.interval());
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {:.3}, **{:.3}**, {:.3} | {new_low:.3} to {new_high:.3} | {:.3} | {} | \
             {aa_low:.3} to {aa_high:.3} | {:.3} |",
            cell(&samples[0]),
            cell(&samples[1]),
            cell(&samples[2]),
            new.low(),
            new.middle(),
            new.high(),
            new.overall,
            aa.spread(),
            aa.overall
        );
    }
    let _ = writeln!(
        out,
        "\n*Per round*: the ratio of two servers' medians within each round, lowest, **median**, highest; *95% \
         interval*: the distribution-free interval of the median per-round ratio (between the k-th lowest and \
         k-th highest ratio, k from the binomial distribution; at least 95% confidence); *all calls*: the ratio of \
         the medians of every call. The two servers' calls alternate within each round, so a slow stretch of the \
         shared machine falls on both: the median per-round ratio is the figure judged.\n"
    );
    let _ = writeln!(
        out,
        "How noise is judged: old′ runs the same binary as old, on its own copy, in the same rounds, so old′ / old \
         is what this machine measures between two identical servers, each server's lasting offset included (its \
         copy's files, its memory layout). The per-round A/A ratios show how far one round can stray; new / old is \
         **within the noise** when its interval overlaps the A/A interval (the run cannot tell new from old), and \
         *outside it* otherwise. Target: receipts cost at most {:.0}%, on both calls: **met** when new / old's \
         interval ends at or below {TARGET:.2}, **not met** when it starts above, *not resolved* otherwise.\n",
        (TARGET - 1.0) * 100.0
    );
    for (name, samples) in calls {
        let new = Comparison::of(&samples[0], &samples[1]);
        let aa = Comparison::of(&samples[0], &samples[2]);
        let ((new_low, new_high), (aa_low, aa_high)) = (new.interval(), aa.interval());
        let inside = new_low <= aa_high && aa_low <= new_high;
        let _ = writeln!(
            out,
            "- {name}: new / old {:.3} per round ({new_low:.3} to {new_high:.3}; {:.3} over all calls), new slower \
             in {} of {rounds} rounds. A/A {:.3} ({aa_low:.3} to {aa_high:.3}; one round {:.3} to {:.3}), old′ \
             slower in {} of {rounds}. **{}**; target {}.",
            new.middle(),
            new.overall,
            new.slower,
            aa.middle(),
            aa.low(),
            aa.high(),
            aa.slower,
            if inside { "Within the noise" } else { "Outside the noise" },
            verdict(new.interval())
        );
    }
    let _ = writeln!(
        out,
        "\nOne run's A/A cannot show how the machine's state moves the search's figure, and it does. Measured by \
         hand on 2026-12-05: old and new spend the same CPU on a search (3.3 to 3.6 ms in user mode and 8.3 to 8.9 \
         ms in the kernel, over the listing's two threads, under `perf stat`); what differs is where the kernel \
         runs those two threads. This machine's kernel (6.18, with a `sched_vcpu_pack` setting of 15) put a thread \
         woken by another on the waker's CPU, so the two took turns on one CPU while the other idled, until the \
         periodic balancer moved one. Until c1fb699 a listing's helper slept and was woken for every chunk of \
         files the walk handed over, and a served search's helper lived 6.04 ms against old's 5.56 ms (perf's \
         sched events, 300 searches each), the whole of new's extra time; since, a listing whose files the cache \
         holds walks first and wakes its helper once. By hand, new / old then measured 0.93 to 0.99 with two \
         servers (old and new) and 1.02 to 1.12 with three, as here (the A/A 0.95 to 1.00); this part measured \
         1.04 to 1.12 in six runs of that tree on 2026-12-05 (1.07 the middle), against 1.10 and 1.13 in the two \
         runs before it that day. Later that day, on a machine otherwise idle (load average about 1), four runs \
         measured 1.021, 0.955, 1.030 and 1.031 (intervals from 0.930 to 1.098, one ending at 1.026; new slower in \
         6 to 14 of 21 rounds, old′ in 11 to 15), each within the A/A's noise: there, the runs cannot tell new \
         from old. What the receipt itself costs: \
         its bytes, 6.5 µs a record (20 entries in `shown` against none, appended by the sink to a log on tmpfs: \
         13.7 µs against 7.4 µs), and the order the read must keep (read, then the durable record, then the \
         answer), whose sync comes after the search instead of before: 0.28 ms at the median against 0.23 ms \
         (perf's syscall events). This part runs first in `serve-bench`, before the other parts load the \
         machine.\n"
    );
    records_table(&mut out, m, old);
    out
}

fn records_table(out: &mut String, m: &Measured, old: &str) {
    let _ = writeln!(out, "### Bytes per audit record\n");
    let _ = writeln!(
        out,
        "Read back from the logs the old and new servers wrote above: the allowed records of each call, each line \
         with its newline (what the log grows by per call). *Fields new records add*: the mean bytes of each \
         `\"name\":value,` the new records hold and the old ({old}) do not.\n"
    );
    let _ = writeln!(
        out,
        "| record | old: records, bytes each | new: records, bytes each | new − old | entries in `shown` | fields \
         new records add |\n|---|---:|---:|---:|---:|---|"
    );
    let (old_log, new_log) = (&m.records[0], &m.records[1]);
    let rows = [
        (format!("`memory_search`, limit {LIMIT}"), &old_log.search, &new_log.search),
        ("`memory_get`".to_owned(), &old_log.get, &new_log.get),
    ];
    for (name, old, new) in rows {
        let added: Vec<String> = new
            .fields
            .iter()
            .filter(|(field, _)| !old.fields.contains_key(*field))
            .map(|(field, (bytes, n))| {
                let share = if *n == new.count { String::new() } else { format!(" in {n} of {}", new.count) };
                format!("`{field}` {bytes:.1} B{share}")
            })
            .collect();
        let _ = writeln!(
            out,
            "| {name} | {}, {:.1} B | {}, {:.1} B | **{:+.1} B** ({:.2}×) | {:.1} | {} |",
            old.count,
            old.mean_bytes,
            new.count,
            new.mean_bytes,
            new.mean_bytes - old.mean_bytes,
            new.mean_bytes / old.mean_bytes.max(1.0),
            new.mean_shown,
            if added.is_empty() { "none".to_owned() } else { added.join(", ") }
        );
    }
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Comparison, thousands};

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn per_round_ratios_pair_the_medians_of_each_round() {
        let base = vec![ms(&[10, 10, 30]), ms(&[20, 20, 20])];
        let other = vec![ms(&[11, 11, 11]), ms(&[18, 18, 90])];
        let c = Comparison::of(&base, &other);
        assert_eq!(c.per_round.iter().map(|r| (r * 100.0).round()).collect::<Vec<_>>(), [90.0, 110.0]);
        assert_eq!(c.slower, 1);
        assert!((c.middle() - 1.0).abs() < 1e-9);
        assert_eq!(c.interval(), (c.low(), c.high()));
        // Over all calls: the median of 11, 11, 11, 18, 18, 90 (the upper middle) against that of 10, 10, 20, ….
        assert!((c.overall - 18.0 / 20.0).abs() < 1e-9);
    }

    #[test]
    fn thousands_are_separated() {
        for (n, text) in
            [(0, "0"), (999, "999"), (1_000, "1,000"), (10_000, "10,000"), (1_234_567, "1,234,567")]
        {
            assert_eq!(thousands(n), text);
        }
    }
}
