//! `cargo xtask pg-bench [--quick] [--sizes 10000,100000] [--runs N] [--search-runs N]`: the PostgreSQL store
//! against the Markdown store (`docs/POSTGRESQL.md`), through the service users call, written to
//! `BENCHMARKS-postgres.md`.
//!
//! 1. `cargo xtask` builds xtask in debug mode, so a debug build only runs `cargo run --release -p xtask --
//!    pg-bench --in-process …` and the measurement itself runs optimised. (Not a criterion bench: one under
//!    `benches/` would run, with its 110,000-entry population, in every `cargo bench --workspace`, and criterion's
//!    one-closure sampling fits neither variants timed in turn over several stores nor an 8-client run.)
//! 2. Starts a throwaway cluster ([`testkit::pg::Cluster`], a Unix socket only) with the durability settings the
//!    test cluster turns off (`fsync`, `synchronous_commit`, `full_page_writes` on), since the Markdown store and
//!    the JSONL audit log sync every write.
//! 3. For each size (10,000 and 100,000 entries; `--quick`: 1,000 and 10,000), a pair of stores: a database with
//!    its schema ([`memory_postgres::init`]) filled by [`PostgresStore::insert_exact`] in transactions of 1,000
//!    rows then `VACUUM ANALYZE`, and a Markdown root filled with the files [`render_entry_file`] writes, written
//!    directly then `sync`, with a JSONL log. Entries are `project:pNNN:notes:nNNNNN`, 400 per project, about 800
//!    bytes of words; every 25th holds the rare term, 20 hold the needle term whatever the size, and about 99% hold
//!    the common term. Every pair stays open to the end, so that sizes are compared in the same minutes as stores:
//!    the disk's sync latency, which every write waits for, drifts several-fold with the host's load.
//! 4. Times get, update (a compare-and-swap of the content), create and search (limit 20) for the rare, needle
//!    and common terms, each call through the service (policy, one audit record: [`PostgresStore::audit_sink`] or
//!    [`JsonlAuditSink`]) and as the bare store call: all sizes, stores and layers of an operation in turn, in a
//!    rotating order. Before each group of calls, one `fdatasync` is timed, for the report.
//! 5. Compare-and-swap throughput: 1 and 8 clients that read one of 8 shared entries and update it at the version
//!    read, retrying on a conflict; and 8 clients on entries of their own. Three rounds, each running every size
//!    and store in an order that rotates; the median round is reported. Clients are threads, each with its own
//!    service, store handle, connections and audit sink: the locks that order them (PostgreSQL's row versions and
//!    advisory locks, the `flock`s the Markdown store and the JSONL log take on a fresh open file each time) treat
//!    threads as they treat processes, so processes would add only their start-up.
//! 6. Prints the tables and writes them to `BENCHMARKS-postgres.md` (`--quick`, a smoke run of 1,000 and 10,000
//!    entries and fewer runs: `target/BENCHMARKS-postgres-quick.md`).

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use alp_memory::memory_audit::{AuditSink, JsonlAuditSink};
use alp_memory::memory_entry::{MemoryEntry, NewEntry, Patch, Timestamp};
use alp_memory::memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use alp_memory::memory_markdown::{MarkdownStore, MemoryPathMapper, render_entry_file};
use alp_memory::memory_policy::{Actor, Grant, GrantPolicy, Operation, PolicyEngine, Role, SubtreeDecision};
use alp_memory::memory_store::{Expiry, Listing, MemoryStore, Scored};
use alp_memory::{
    CreateRequest, FieldInput, MemoryError, MemoryService, SearchRequest, StaticActors, UpdateRequest,
};
use memory_postgres::{PostgresAuditSink, PostgresStore};
use testkit::pg::{Cluster, ClusterOptions};

use crate::corpus::PER_PROJECT;
use crate::flags::{Runs, positive};
use crate::measure::{machine_memory_kernel, median, percentile, ratio, utc_now};
use crate::root;

const ROLE: &str = "bench";
const CONTENT_BYTES: usize = 800;
const LIMIT: usize = 20;
/// In every 25th entry (4%).
const RARE: &str = "postgres";
/// In 20 entries whatever the size: what an index should find in constant time.
const NEEDLE: &str = "zanzibar";
/// A vocabulary word: in about 99% of the entries.
const COMMON: &str = "memory";
const WORDS: &[&str] = &[
    "agent", "memory", "policy", "grant", "role", "entry", "version", "audit", "context", "budget",
    "storage", "atomic", "rename", "lock", "worker", "review", "decision", "deploy", "cache", "index",
    "release", "schema", "tenant", "backup", "Cơ", "sở", "dữ", "liệu", "người", "dùng",
];
/// The entries the concurrent clients fight over.
const SHARED: usize = 8;
/// Rows per `insert_exact` transaction.
const CHUNK: usize = 1000;
/// Later lines of `postgresql.conf` win: undo the test cluster's trade of durability for speed.
const DURABLE: [&str; 3] = ["fsync = on", "synchronous_commit = on", "full_page_writes = on"];
const DATABASE: &str = "alp_bench";

type PgService = MemoryService<PostgresStore, PostgresAuditSink, GrantPolicy, StaticActors>;
type MdService = MemoryService<MarkdownStore, JsonlAuditSink, GrantPolicy, StaticActors>;
type Call<'a> = Box<dyn FnMut(usize) -> Result<(), String> + 'a>;

struct Options {
    sizes: Vec<usize>,
    runs: usize,
    search_runs: usize,
    clients: usize,
    per_client: usize,
    rounds: usize,
    quick: bool,
}

/// `cargo xtask pg-bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A smoke run: 1,000 and 10,000 entries, fewer runs, written to `target/BENCHMARKS-postgres-quick.md`
    #[arg(long)]
    quick: bool,
    /// Store sizes, at least 1000 [default: 10000,100000; with --quick 1000,10000]
    #[arg(long, value_name = "N,N", value_delimiter = ',', value_parser = positive::<usize>)]
    sizes: Option<Vec<usize>>,
    /// Timed calls of each single operation [default: 200; with --quick 30]
    #[command(flatten)]
    runs: Runs,
    /// Timed calls of each search [default: 20; with --quick 5]
    #[arg(long, value_name = "N", value_parser = positive::<usize>)]
    search_runs: Option<usize>,
    /// Measure in this process (a debug build runs the release build with this flag)
    #[arg(long, hide = true)]
    in_process: bool,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let quick = args.quick;
    let mut sizes =
        args.sizes.clone().unwrap_or(if quick { vec![1_000, 10_000] } else { vec![10_000, 100_000] });
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.first().is_none_or(|&smallest| smallest < 1000) {
        return Err("pg-bench: --sizes at least 1000".to_owned());
    }
    let o = Options {
        sizes,
        runs: args.runs.or(if quick { 30 } else { 200 }),
        search_runs: args.search_runs.unwrap_or(if quick { 5 } else { 20 }),
        clients: 8,
        per_client: if quick { 10 } else { 50 },
        rounds: if quick { 1 } else { 3 },
        quick,
    };
    if cfg!(debug_assertions) && !args.in_process {
        // The flags as given, after `xtask pg-bench`.
        let given: Vec<String> = std::env::args().skip(2).collect();
        let mut cargo = vec!["run", "--release", "--package", "xtask", "--", "pg-bench", "--in-process"];
        cargo.extend(given.iter().map(String::as_str));
        return crate::run("cargo", &cargo);
    }
    measure(&o)
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fail<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn measure(o: &Options) -> Result<(), String> {
    let started = Instant::now();
    let options = ClusterOptions {
        extra_conf: DURABLE.iter().map(|line| (*line).to_owned()).collect(),
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start_with(&options).map_err(fail("cannot start a PostgreSQL cluster"))?;
    let mut admin = testkit::pg::parse_config(cluster.url())
        .and_then(|config| config.connect(postgres::NoTls))
        .map_err(fail("cannot connect to the cluster"))?;
    let server: String =
        admin.query_one("SHOW server_version", &[]).map_err(fail("reading the server's version"))?.get(0);
    let dir = TempDir(std::env::temp_dir().join(format!("alp-pg-bench-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).map_err(fail("cannot create the temporary directory"))?;

    let mut report = Report { server, quick: o.quick, rounds: o.rounds, ..Report::default() };
    // One pair of stores per size, all alive at once, so that every comparison between sizes is measured in the
    // same minutes as the one between stores.
    let mut benches = Vec::new();
    for &size in &o.sizes {
        let database = format!("{DATABASE}_{size}");
        admin.batch_execute(&format!("CREATE DATABASE {database}")).map_err(fail("creating a database"))?;
        let url = testkit::pg::with_dbname(cluster.url(), &database);
        memory_postgres::init(&url).map_err(fail("creating the schema"))?;
        let md_root = dir.0.join(format!("memory-{size}"));
        let bench = Bench::open(size, &url, &md_root, &dir.0.join(format!("audit-{size}.jsonl")))?;
        report.population.push(bench.populate()?);
        // While both stores hold exactly the same entries, timestamps included.
        bench.check_same_order()?;
        bench.create_cas_entries(o.clients)?;
        benches.push(bench);
    }
    for op in [Op::Get, Op::Update, Op::Create] {
        report.sync.push((op.name().to_owned(), sync_latency(&dir.0)?));
        report.calls.extend(point_calls(&benches, op, o.runs)?);
    }
    for term in [RARE, NEEDLE, COMMON] {
        report.sync.push((format!("search `{term}`"), sync_latency(&dir.0)?));
        report.searches.extend(search(&benches, term, o.search_runs)?);
    }
    for (clients, shared) in [(1, true), (o.clients, true), (o.clients, false)] {
        let entries = if shared { "shared" } else { "own" };
        report.sync.push((format!("{clients} client(s), {entries}"), sync_latency(&dir.0)?));
        report.throughput.extend(throughput(&benches, clients, shared, o)?);
    }
    report.took = started.elapsed();
    let text = report.render();
    print!("{text}");
    let file = if o.quick {
        crate_target_dir().join("BENCHMARKS-postgres-quick.md")
    } else {
        root().join("BENCHMARKS-postgres.md")
    };
    std::fs::write(&file, text).map_err(fail("cannot write the report"))?;
    eprintln!("wrote {}", file.display());
    drop(benches);
    drop(cluster);
    Ok(())
}

/// Where cargo builds: `CARGO_TARGET_DIR` when it is set, else `target/` in the workspace.
fn crate_target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

fn actor() -> Result<Actor, String> {
    let role = Role::parse(ROLE).map_err(fail("role"))?;
    let grant = Grant::parse("project:*").map_err(fail("grant"))?;
    Ok(Actor::new(role).with_read([grant.clone()]).with_write([grant]))
}

fn pg_service(url: &str) -> Result<PgService, String> {
    let store = PostgresStore::open(url).map_err(fail("cannot open the PostgreSQL store"))?;
    let sink = store.audit_sink(None);
    Ok(MemoryService::new(store, sink, GrantPolicy, StaticActors::new([actor()?])))
}

fn md_service(root: &Path, audit_log: &Path) -> Result<MdService, String> {
    let store = MarkdownStore::open(root).map_err(fail("cannot open the Markdown store"))?;
    let sink = JsonlAuditSink::open(audit_log).map_err(fail("cannot open the audit log"))?;
    Ok(MemoryService::new(store, sink, GrantPolicy, StaticActors::new([actor()?])))
}

fn id(text: &str) -> Result<MemoryId, String> {
    parse_memory_id(text).map_err(fail("id"))
}

fn entry_id(i: usize) -> String {
    format!("project:p{:03}:notes:n{i:05}", i / PER_PROJECT)
}

/// A create of call `i` of `layer` (`a` through the service, `b` the bare store): new projects, so the
/// per-project limit holds.
fn create_id(layer: char, i: usize) -> String {
    format!("project:c{layer}{:03}:notes:n{i:05}", i / PER_PROJECT)
}

fn cas_id(shared: bool, n: usize) -> String {
    if shared { format!("project:cas:notes:s{n}") } else { format!("project:cas:notes:d{n}") }
}

/// splitmix64: the same pseudo-random sequence on every run.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn index(x: u64, below: usize) -> usize {
    usize::try_from(x % u64::try_from(below.max(1)).unwrap_or(1)).unwrap_or(0)
}

/// Which populated entry call `i` of a stream touches.
fn pick(i: usize, stream: u64, size: usize) -> usize {
    index(mix(mix(stream) ^ i as u64), size)
}

/// About 800 bytes of vocabulary words.
fn words(seed: u64) -> String {
    let mut state = mix(seed);
    let mut text = String::with_capacity(CONTENT_BYTES + 16);
    while text.len() < CONTENT_BYTES {
        state = mix(state);
        text.push_str(WORDS[index(state, WORDS.len())]);
        text.push(' ');
    }
    text
}

/// Entry `i`'s content (`salt` 0 when populated, another on each update), holding its rare and needle terms.
fn content(i: usize, salt: u64) -> String {
    let mut text = words(mix(i as u64) ^ salt);
    if i % 25 == 7 {
        text.push_str(RARE);
        text.push(' ');
    }
    if i % 50 == 3 && i < 1000 {
        text.push_str(NEEDLE);
        text.push(' ');
    }
    text
}

/// The versions of the populated entries in each store, as the single-client calls leave them.
struct Versions {
    pg: Vec<Cell<u64>>,
    md: Vec<Cell<u64>>,
}

impl Versions {
    fn new(size: usize) -> Versions {
        Versions {
            pg: (0..size).map(|_| Cell::new(1)).collect(),
            md: (0..size).map(|_| Cell::new(1)).collect(),
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Stats {
    median: Duration,
    p90: Duration,
}

impl Stats {
    fn of(samples: &[Duration]) -> Stats {
        Stats { median: median(samples), p90: percentile(samples, 90) }
    }

    fn per_second(&self) -> f64 {
        if self.median.is_zero() { 0.0 } else { 1.0 / self.median.as_secs_f64() }
    }
}

/// One operation at one size, in one layer: both stores.
struct CallRow {
    op: &'static str,
    layer: &'static str,
    size: usize,
    runs: usize,
    pg: Stats,
    md: Stats,
}

/// One search term at one size: through the service, and the bare listing.
struct SearchRow {
    term: &'static str,
    size: usize,
    runs: usize,
    matching: i64,
    plan: &'static str,
    service: CallRow,
    bare: CallRow,
}

struct Population {
    size: usize,
    pg_insert: Duration,
    pg_vacuum: Duration,
    md_write: Duration,
}

struct ThroughputRow {
    size: usize,
    store: &'static str,
    clients: usize,
    shared: bool,
    updates: usize,
    conflicts: usize,
    elapsed: Duration,
}

impl ThroughputRow {
    fn per_second(&self) -> f64 {
        self.updates as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Untimed calls of each variant before the timed ones.
const WARMUP: usize = 5;

/// Runs every call once per run, all of them in turn, starting each run with the next one (so no variant always
/// goes first), after `warmup` untimed rounds; returns each call's samples.
fn interleave(runs: usize, warmup: usize, calls: &mut [Call<'_>]) -> Result<Vec<Vec<Duration>>, String> {
    for w in 0..warmup {
        for call in calls.iter_mut() {
            call(runs + w)?;
        }
    }
    let n = calls.len();
    let mut samples = vec![Vec::with_capacity(runs); n];
    for i in 0..runs {
        for k in 0..n {
            let v = (i + k) % n;
            let started = Instant::now();
            calls[v](i)?;
            samples[v].push(started.elapsed());
        }
    }
    Ok(samples)
}

/// The samples of four calls per bench (PostgreSQL and Markdown through the service, then both bare) as two rows
/// per bench: (service, store).
fn rows(
    op: &'static str,
    benches: &[Bench],
    runs: usize,
    samples: Vec<Vec<Duration>>,
) -> Vec<(CallRow, CallRow)> {
    let mut stats = samples.iter().map(|s| Stats::of(s));
    let mut next = || stats.next().unwrap_or_default();
    benches
        .iter()
        .map(|b| {
            let (pg, md, pg_bare, md_bare) = (next(), next(), next(), next());
            (
                CallRow { op, layer: "service", size: b.size, runs, pg, md },
                CallRow { op, layer: "store", size: b.size, runs, pg: pg_bare, md: md_bare },
            )
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Op {
    Get,
    Update,
    Create,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Update => "update",
            Op::Create => "create",
        }
    }
}

fn update_request(n: usize, version: u64, text: &str) -> UpdateRequest {
    UpdateRequest {
        id: entry_id(n),
        expected_version: version,
        content: Some(text.to_owned()),
        fields: FieldInput::new(),
        clear: Vec::new(),
    }
}

/// Times `op` on every bench, both stores, through the service and bare, all interleaved.
fn point_calls(benches: &[Bench], op: Op, runs: usize) -> Result<Vec<CallRow>, String> {
    let now = Timestamp::now;
    let total = runs + WARMUP;
    // Contents are made before the clock starts; an update keeps its entry's rare and needle terms.
    let update_texts = |b: &Bench, stream: u64| -> Vec<(usize, String)> {
        (0..total)
            .map(|i| {
                let n = pick(i, stream, b.size);
                (n, content(n, mix(b.size as u64 ^ stream ^ i as u64)))
            })
            .collect()
    };
    let texts: Vec<[Vec<(usize, String)>; 2]> = match op {
        Op::Update => benches.iter().map(|b| [update_texts(b, 3), update_texts(b, 4)]).collect(),
        Op::Create => benches
            .iter()
            .map(|b| {
                let texts =
                    |layer: u64| (0..total).map(move |i| (i, words(mix(b.size as u64 ^ layer ^ i as u64))));
                [texts(5).collect(), texts(6).collect()]
            })
            .collect(),
        Op::Get => Vec::new(),
    };
    let mut calls: Vec<Call<'_>> = Vec::new();
    let name = op.name();
    eprintln!("{name}");
    for (k, b) in benches.iter().enumerate() {
        let (pg, md) = (&b.pg, &b.md);
        match op {
            Op::Get => {
                let get_id = move |stream: u64, i: usize| entry_id(pick(i, stream, b.size));
                calls.push(Box::new(move |i| pg.get(ROLE, &get_id(1, i)).map(drop).map_err(fail("get"))));
                calls.push(Box::new(move |i| md.get(ROLE, &get_id(1, i)).map(drop).map_err(fail("get"))));
                calls.push(Box::new(move |i| {
                    pg.store().get(&id(&get_id(2, i))?, now()).map(drop).map_err(fail("get"))
                }));
                calls.push(Box::new(move |i| {
                    md.store().get(&id(&get_id(2, i))?, now()).map(drop).map_err(fail("get"))
                }));
            }
            Op::Update => {
                let [service, bare] = &texts[k];
                let versions = &b.versions;
                calls.push(Box::new(move |i| {
                    let (n, text) = &service[i];
                    let entry = pg
                        .update(ROLE, update_request(*n, versions.pg[*n].get(), text))
                        .map_err(fail("update"))?;
                    versions.pg[*n].set(entry.version());
                    Ok(())
                }));
                calls.push(Box::new(move |i| {
                    let (n, text) = &service[i];
                    let entry = md
                        .update(ROLE, update_request(*n, versions.md[*n].get(), text))
                        .map_err(fail("update"))?;
                    versions.md[*n].set(entry.version());
                    Ok(())
                }));
                calls.push(Box::new(move |i| {
                    let (n, text) = &bare[i];
                    let patch = Patch::content_only(text.as_str());
                    let entry = pg
                        .store()
                        .update(&id(&entry_id(*n))?, versions.pg[*n].get(), &patch, now())
                        .map_err(fail("update"))?;
                    versions.pg[*n].set(entry.version);
                    Ok(())
                }));
                calls.push(Box::new(move |i| {
                    let (n, text) = &bare[i];
                    let patch = Patch::content_only(text.as_str());
                    let entry = md
                        .store()
                        .update(&id(&entry_id(*n))?, versions.md[*n].get(), &patch, now())
                        .map_err(fail("update"))?;
                    versions.md[*n].set(entry.version);
                    Ok(())
                }));
            }
            Op::Create => {
                let [service, bare] = &texts[k];
                let request = move |i: usize| CreateRequest {
                    id: create_id('a', i),
                    content: service[i].1.clone(),
                    fields: FieldInput::new(),
                };
                let new = move |i: usize| {
                    Ok::<_, String>(NewEntry::new(id(&create_id('b', i))?, bare[i].1.clone()))
                };
                calls.push(Box::new(move |i| pg.create(ROLE, request(i)).map(drop).map_err(fail("create"))));
                calls.push(Box::new(move |i| md.create(ROLE, request(i)).map(drop).map_err(fail("create"))));
                calls.push(Box::new(move |i| {
                    pg.store().create(new(i)?, now()).map(drop).map_err(fail("create"))
                }));
                calls.push(Box::new(move |i| {
                    md.store().create(new(i)?, now()).map(drop).map_err(fail("create"))
                }));
            }
        }
    }
    let samples = interleave(runs, WARMUP, &mut calls)?;
    drop(calls);
    Ok(rows(name, benches, runs, samples).into_iter().flat_map(|(service, bare)| [service, bare]).collect())
}

/// A search for `term` on every bench, both stores, through the service (limit 20) and as the bare store's
/// listing ranked and cut to the limit as the service does, all interleaved.
fn search(benches: &[Bench], term: &'static str, runs: usize) -> Result<Vec<SearchRow>, String> {
    eprintln!("search `{term}`");
    fn best<S: MemoryStore>(store: &S, listing: &Listing) -> Result<(), String> {
        let mut found = store.list(listing).map_err(fail("list"))?;
        found.sort_by(Scored::cmp_rank);
        found.truncate(LIMIT);
        Ok(())
    }
    let request = SearchRequest { query: term.into(), limit: Some(LIMIT), ..SearchRequest::default() };
    let request = &request;
    let mut calls: Vec<Call<'_>> = Vec::new();
    for b in benches {
        let (pg, md) = (&b.pg, &b.md);
        let listing = move || {
            Listing::new(b.roots.clone(), Timestamp::now())
                .with_query(term)
                .with_expiry(Expiry::Live)
                .with_limit(Some(LIMIT))
        };
        calls.push(Box::new(move |_| pg.search(ROLE, request).map(drop).map_err(fail("search"))));
        calls.push(Box::new(move |_| md.search(ROLE, request).map(drop).map_err(fail("search"))));
        calls.push(Box::new(move |_| best(pg.store(), &listing())));
        calls.push(Box::new(move |_| best(md.store(), &listing())));
    }
    let samples = interleave(runs, 1, &mut calls)?;
    drop(calls);
    benches
        .iter()
        .zip(rows("search", benches, runs, samples))
        .map(|(b, (service, bare))| {
            let mut sql = b.sql.borrow_mut();
            Ok(SearchRow {
                term,
                size: b.size,
                runs,
                matching: count_matches(&mut sql, term)?,
                plan: candidate_plan(&mut sql, term)?,
                service,
                bare,
            })
        })
        .collect()
}

/// Compare-and-swap throughput with `clients` clients on every bench and store: `rounds` rounds, each running
/// them all in an order that rotates from round to round; the median round of each is kept.
fn throughput(
    benches: &[Bench],
    clients: usize,
    shared: bool,
    o: &Options,
) -> Result<Vec<ThroughputRow>, String> {
    eprintln!("{clients} client(s), {} entries", if shared { "shared" } else { "own" });
    let per_client = if clients == 1 { o.per_client * 2 } else { o.per_client };
    let runs: Vec<(&Bench, bool)> = benches.iter().flat_map(|b| [(b, true), (b, false)]).collect();
    let mut results: Vec<Vec<(usize, usize, Duration)>> = vec![Vec::new(); runs.len()];
    for round in 0..o.rounds {
        for k in 0..runs.len() {
            let at = (round + k) % runs.len();
            let (b, postgres) = runs[at];
            let (url, md_root, audit_log) = (b.url.as_str(), b.md_root.as_path(), b.audit_log.as_path());
            let result = if postgres {
                cas_clients(&|| pg_service(url), clients, per_client, shared)?
            } else {
                cas_clients(&|| md_service(md_root, audit_log), clients, per_client, shared)?
            };
            results[at].push(result);
        }
    }
    Ok(runs
        .iter()
        .zip(results)
        .map(|(&(b, postgres), mut rounds)| {
            rounds.sort_by_key(|(_, _, elapsed)| *elapsed);
            let (updates, conflicts, elapsed) = rounds.get(rounds.len() / 2).copied().unwrap_or_default();
            let store = if postgres { "PostgreSQL" } else { "Markdown" };
            ThroughputRow { size: b.size, store, clients, shared, updates, conflicts, elapsed }
        })
        .collect())
}

/// A pair of stores of one size: a PostgreSQL database and a Markdown root with its JSONL log.
struct Bench {
    size: usize,
    url: String,
    md_root: PathBuf,
    audit_log: PathBuf,
    pg: PgService,
    md: MdService,
    /// A plain connection, for `VACUUM ANALYZE` and for counting matches.
    sql: RefCell<postgres::Client>,
    roots: Vec<MemoryPrefix>,
    versions: Versions,
    /// `updated_at` of the populated entries counts from here.
    base_millis: i64,
}

impl Bench {
    fn open(size: usize, url: &str, md_root: &Path, audit_log: &Path) -> Result<Bench, String> {
        let roots = match GrantPolicy.authorize_subtree(&actor()?, Operation::Read, None) {
            SubtreeDecision::Allow { roots } => roots,
            SubtreeDecision::Deny(code) => return Err(format!("the bench role may not read: {code:?}")),
        };
        let sql = testkit::pg::parse_config(url)
            .and_then(|config| config.connect(postgres::NoTls))
            .map_err(fail("cannot connect to the database"))?;
        Ok(Bench {
            size,
            url: url.to_owned(),
            md_root: md_root.to_owned(),
            audit_log: audit_log.to_owned(),
            pg: pg_service(url)?,
            md: md_service(md_root, audit_log)?,
            sql: RefCell::new(sql),
            roots,
            versions: Versions::new(size),
            base_millis: Timestamp::now().unix_millis() - 3_600_000,
        })
    }

    fn create_cas_entries(&self, clients: usize) -> Result<(), String> {
        let ids = (0..SHARED).map(|n| cas_id(true, n)).chain((0..clients).map(|n| cas_id(false, n)));
        for id in ids {
            let request = CreateRequest { id, content: words(7), fields: FieldInput::new() };
            self.pg.create(ROLE, request.clone()).map_err(fail("create"))?;
            self.md.create(ROLE, request).map_err(fail("create"))?;
        }
        Ok(())
    }

    fn populated_entry(&self, i: usize) -> Result<MemoryEntry, String> {
        let at =
            Timestamp::from_unix_millis(self.base_millis + i as i64).ok_or("a timestamp out of range")?;
        Ok(NewEntry::new(id(&entry_id(i))?, content(i, 0)).into_entry(at))
    }

    /// Fills both stores with the entries `0..size`.
    fn populate(&self) -> Result<Population, String> {
        let size = self.size;
        eprintln!("populating {size} entries");
        let started = Instant::now();
        let mut at = 0;
        while at < size {
            let end = (at + CHUNK).min(size);
            let entries = (at..end).map(|i| self.populated_entry(i)).collect::<Result<Vec<_>, _>>()?;
            self.pg.store().insert_exact(&entries).map_err(fail("inserting entries"))?;
            at = end;
            if at.is_multiple_of(10_000) {
                eprintln!("  PostgreSQL: {at} ({:.0} s)", started.elapsed().as_secs_f64());
            }
        }
        let pg_insert = started.elapsed();
        let started = Instant::now();
        self.sql.borrow_mut().batch_execute("VACUUM ANALYZE alp_memories").map_err(fail("VACUUM ANALYZE"))?;
        let pg_vacuum = started.elapsed();

        let started = Instant::now();
        for i in 0..size {
            let entry = self.populated_entry(i)?;
            let path = self.md_root.join(MemoryPathMapper::relative_path(&entry.id));
            if i.is_multiple_of(PER_PROJECT)
                && let Some(parent) = path.parent()
            {
                std::fs::create_dir_all(parent).map_err(fail("cannot create a directory"))?;
            }
            std::fs::write(&path, render_entry_file(&entry)).map_err(fail("cannot write an entry"))?;
            if (i + 1).is_multiple_of(10_000) {
                eprintln!("  Markdown: {} ({:.0} s)", i + 1, started.elapsed().as_secs_f64());
            }
        }
        rustix::fs::sync();
        let md_write = started.elapsed();
        eprintln!(
            "populated {size}: PostgreSQL {:.1} s + VACUUM ANALYZE {:.1} s, Markdown {:.1} s",
            pg_insert.as_secs_f64(),
            pg_vacuum.as_secs_f64(),
            md_write.as_secs_f64()
        );
        Ok(Population { size, pg_insert, pg_vacuum, md_write })
    }

    /// Both stores rank the same entries alike (a sanity check, before the timed calls change them).
    fn check_same_order(&self) -> Result<(), String> {
        for term in [RARE, NEEDLE, COMMON] {
            let request =
                SearchRequest { query: term.into(), limit: Some(LIMIT), ..SearchRequest::default() };
            let ids =
                |found: Vec<Scored>| found.into_iter().map(|s| s.entry.id.as_str().to_owned()).collect();
            let pg: Vec<String> = ids(self.pg.search(ROLE, &request).map_err(fail("search"))?.entries);
            let md: Vec<String> = ids(self.md.search(ROLE, &request).map_err(fail("search"))?.entries);
            if pg != md {
                return Err(format!("the stores rank `{term}` differently:\n  {pg:?}\n  {md:?}"));
            }
            if pg.len() != LIMIT {
                return Err(format!("`{term}` found {} entries, not {LIMIT}", pg.len()));
            }
        }
        Ok(())
    }
}

/// `clients` threads, each with its own service (store handle, connections, audit sink), each making `per_client`
/// successful compare-and-swap updates (read, then update at the version read; a conflict is counted and
/// retried). Returns the successful updates, the conflicts and the wall time from the common start.
fn cas_clients<S: MemoryStore, A: AuditSink>(
    open: &(dyn Fn() -> Result<MemoryService<S, A, GrantPolicy, StaticActors>, String> + Sync),
    clients: usize,
    per_client: usize,
    shared: bool,
) -> Result<(usize, usize, Duration), String> {
    let barrier = Barrier::new(clients + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let barrier = &barrier;
                scope.spawn(move || -> Result<usize, String> {
                    let service = open();
                    barrier.wait();
                    let service = service?;
                    let text = words(1000 + c as u64);
                    let mut state = mix(c as u64);
                    let (mut done, mut conflicts) = (0, 0);
                    while done < per_client {
                        state = mix(state);
                        let target = cas_id(shared, if shared { index(state, SHARED) } else { c });
                        let entry = service.get(ROLE, &target).map_err(fail("get"))?;
                        let request = UpdateRequest {
                            id: target,
                            expected_version: entry.version,
                            content: Some(format!("{text}{c} {done}")),
                            fields: FieldInput::new(),
                            clear: Vec::new(),
                        };
                        match service.update(ROLE, request) {
                            Ok(_) => done += 1,
                            Err(MemoryError::VersionConflict { .. }) => conflicts += 1,
                            Err(e) => return Err(format!("update: {e}")),
                        }
                    }
                    Ok(conflicts)
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let mut conflicts = 0;
        for handle in handles {
            conflicts += handle.join().map_err(|_| "a client thread panicked".to_owned())??;
        }
        Ok((clients * per_client, conflicts, started.elapsed()))
    })
}

/// How long one `fdatasync` of a small append takes in `dir` (where both stores keep their data).
fn sync_latency(dir: &Path) -> Result<Stats, String> {
    use std::io::Write as _;
    let path = dir.join("sync-probe");
    let mut file = std::fs::File::create(&path).map_err(fail("cannot create the sync probe"))?;
    let mut samples = Vec::new();
    for _ in 0..30 {
        file.write_all(&[b'x'; 128]).map_err(fail("cannot write the sync probe"))?;
        let started = Instant::now();
        file.sync_data().map_err(fail("cannot sync the sync probe"))?;
        samples.push(started.elapsed());
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    Ok(Stats::of(&samples))
}

/// The commit measured, with `+ uncommitted changes` when the work tree differs from it.
fn revision() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match (git(&["rev-parse", "--short", "HEAD"]), git(&["status", "--porcelain", "--untracked-files=no"])) {
        (Some(commit), Some(changes)) if !changes.is_empty() => format!("{commit} + uncommitted changes"),
        (Some(commit), _) => commit,
        (None, _) => "an unknown commit".to_owned(),
    }
}

fn count_matches(sql: &mut postgres::Client, term: &str) -> Result<i64, String> {
    let row = sql
        .query_one("SELECT count(*) FROM alp_memories WHERE folded LIKE $1", &[&format!("%{term}%")])
        .map_err(fail("counting matches"))?;
    Ok(row.get(0))
}

/// How the server finds a term's candidates (the store's query, without its parameters of expiry and size): the
/// trigram index, or a scan of the table.
fn candidate_plan(sql: &mut postgres::Client, term: &str) -> Result<&'static str, String> {
    let rows = sql
        .query(
            "EXPLAIN SELECT id FROM alp_memories WHERE (id = 'project' OR (id >= 'project:' AND id < 'project;')) \
             AND folded LIKE $1",
            &[&format!("%{term}%")],
        )
        .map_err(fail("EXPLAIN"))?;
    let plan: Vec<String> = rows.iter().map(|row| row.get::<_, String>(0)).collect();
    Ok(if plan.iter().any(|line| line.contains("alp_memories_folded_trgm")) {
        "trigram index"
    } else if plan.iter().any(|line| line.contains("Seq Scan")) {
        "table scan"
    } else {
        "ID index"
    })
}

fn fmt(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.0} µs", ns / 1e3)
    }
}

fn rate(per_second: f64) -> String {
    if per_second >= 100.0 { format!("{per_second:.0}") } else { format!("{per_second:.1}") }
}

/// The single-call table.
fn calls_table(rows: &[CallRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| operation | entries | layer | runs | PostgreSQL median | p90 | ops/s | Markdown median | p90 | ops/s | \
         PostgreSQL ÷ Markdown |"
    );
    let _ = writeln!(out, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
            row.op,
            row.size,
            row.layer,
            row.runs,
            fmt(row.pg.median),
            fmt(row.pg.p90),
            rate(row.pg.per_second()),
            fmt(row.md.median),
            fmt(row.md.p90),
            rate(row.md.per_second()),
            ratio(row.pg.median, row.md.median),
        );
    }
    out
}

/// The search table: the service's median, p90 and rate, and the bare listing's median.
fn search_table(rows: &[SearchRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| term | entries | matching | PostgreSQL plan | runs | PostgreSQL median | p90 | ops/s | bare | \
         Markdown median | p90 | ops/s | bare | PostgreSQL ÷ Markdown |"
    );
    let _ = writeln!(out, "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in rows {
        let (service, bare) = (&row.service, &row.bare);
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
            row.term,
            row.size,
            row.matching,
            row.plan,
            row.runs,
            fmt(service.pg.median),
            fmt(service.pg.p90),
            rate(service.pg.per_second()),
            fmt(bare.pg.median),
            fmt(service.md.median),
            fmt(service.md.p90),
            rate(service.md.per_second()),
            fmt(bare.md.median),
            ratio(service.pg.median, service.md.median),
        );
    }
    out
}

#[derive(Default)]
struct Report {
    server: String,
    /// Rounds of each throughput measurement.
    rounds: usize,
    /// One `fdatasync` on the disk holding both stores, before each group of calls (named).
    sync: Vec<(String, Stats)>,
    quick: bool,
    calls: Vec<CallRow>,
    searches: Vec<SearchRow>,
    population: Vec<Population>,
    throughput: Vec<ThroughputRow>,
    took: Duration,
}

impl Report {
    fn render(&self) -> String {
        let date = utc_now();
        let mut out = String::new();
        let _ = writeln!(out, "# PostgreSQL against the Markdown store\n");
        let _ = writeln!(
            out,
            "Generated by `cargo xtask pg-bench{}` on {date} at {} ({}; PostgreSQL {} over a Unix socket; the whole \
             run took {:.0} s). Do not edit by hand: run the command again. Both stores are timed in the same run, in \
             turn, on a shared machine whose other work adds noise: compare medians, and distrust differences under \
             about 20%. Every write in either store waits for the disk, whose sync latency drifts with the host's \
             load (several-fold between runs, and within one): the median of one `fdatasync` of a small append, \
             measured before each group of calls, was {}.\n",
            if self.quick { " --quick" } else { "" },
            revision(),
            machine_memory_kernel(),
            self.server,
            self.took.as_secs_f64(),
            self.sync
                .iter()
                .map(|(group, sync)| format!("{} before {group}", fmt(sync.median)))
                .collect::<Vec<_>>()
                .join(", "),
        );
        let _ = writeln!(
            out,
            "Each size has its own pair of stores (a database and a Markdown root with its JSONL log), all filled \
             before the first timed call, so that the sizes are timed in the same minutes as the stores. Both stores \
             of a pair hold the same entries: `project:pNNN:notes:nNNNNN`, 400 per project, about 800 bytes of words \
             each; every 25th holds `{RARE}`, 20 hold `{NEEDLE}` whatever the size, and about 99% hold `{COMMON}`. \
             PostgreSQL runs with `fsync`, `synchronous_commit` and `full_page_writes` on (every commit reaches the \
             disk), as the Markdown store syncs each file and the JSONL audit log each record. The Markdown store \
             runs without its entry cache (what each `alp` command gets; `alp mcp` may turn it on).\n"
        );
        let _ = writeln!(out, "## Single calls\n");
        let _ = writeln!(
            out,
            "One client, one call at a time; the variants of an operation (each size, each store, through the \
             service and bare) take turns, each run starting with the next. ops/s is 1 ÷ median; a ratio under 1 \
             means PostgreSQL is faster.\n\n\
             - **get**: a random populated entry. **update**: a random populated entry's content replaced (about 800 \
             bytes), a compare-and-swap at the version last written. **create**: a new entry in a project that was \
             not populated (PostgreSQL: the create rules' queries under the scope root's advisory lock, then the \
             insert, one transaction; Markdown: under the scope root's lock file, the same rules over the directory, \
             then the file written and synced).\n\
             - **service**: `MemoryService` as `alp` calls it: the ID parsed, the policy, one audit record \
             (PostgreSQL: a row appended under an advisory lock in its own transaction; Markdown: a JSONL line \
             appended and synced), then the store. **store**: the bare `MemoryStore` call, no policy and no audit.\n\
             - Searches are in the next section.\n"
        );
        let _ = writeln!(out, "{}", calls_table(&self.calls));
        let _ = writeln!(out, "## Search\n");
        let _ = writeln!(
            out,
            "Through the service, limit {LIMIT}; \"bare\" is the median of the store's listing alone, ranked and cut \
             to {LIMIT}. \"matching\" counts the entries holding the term. PostgreSQL asks the server only for \
             candidates (entries holding a query term in the folded column; the plan column says whether the server \
             used the `pg_trgm` index or scanned the table for them), then decodes, scores and ranks them in Rust; \
             the Markdown store reads and scores every file of the granted subtrees, and parses only the best.\n"
        );
        let _ = write!(out, "{}", search_table(&self.searches));
        self.growth(&mut out);
        self.throughput(&mut out);
        self.population(&mut out);
        out
    }

    /// How each search's median grows from the smallest size to the largest.
    fn growth(&self, out: &mut String) {
        let sizes = || self.searches.iter().map(|r| r.size);
        let (Some(small), Some(large)) = (sizes().min(), sizes().max()) else { return };
        if small == large {
            return;
        }
        let _ = writeln!(
            out,
            "\n### Growth from {small} to {large} entries ({}× the entries)\n\n\
             The service's median at {large} entries ÷ at {small}; \"matching\" is the same ratio of matching \
             entries.\n",
            large / small
        );
        let _ = writeln!(out, "| term | matching | PostgreSQL | Markdown |");
        let _ = writeln!(out, "|---|--:|--:|--:|");
        for term in [RARE, NEEDLE, COMMON] {
            let find = |size: usize| self.searches.iter().find(|r| r.size == size && r.term == term);
            if let (Some(a), Some(b)) = (find(small), find(large)) {
                let _ = writeln!(
                    out,
                    "| `{term}` | {:.1}× | {:.1}× | {:.1}× |",
                    b.matching as f64 / (a.matching as f64).max(1.0),
                    ratio(b.service.pg.median, a.service.pg.median),
                    ratio(b.service.md.median, a.service.md.median)
                );
            }
        }
    }

    fn throughput(&self, out: &mut String) {
        let _ = writeln!(out, "\n## Concurrent compare-and-swap updates\n");
        let _ = writeln!(
            out,
            "Each client is a thread with its own service: its own store handle (PostgreSQL: its own connections; \
             Markdown: its own root handle, locks taken per call) and audit sink. A client reads an entry through \
             the service, then updates its content at the version read; a version conflict is counted and the \
             client reads again. \"shared\": every client picks one of {SHARED} shared entries at random; \"own\": \
             each client updates an entry of its own (no conflicts; the ceiling of parallel writes). Updates/s counts \
             successful updates (each one get and one update, two audit records) over the wall time of the slowest \
             client; the median of {} rounds, each running every size and store in an order that rotates. In both \
             stores an audit record is appended under one lock held until the record is durable (PostgreSQL: a \
             transaction advisory lock, released when the commit has flushed; JSONL: an exclusive `flock`, released \
             after `fdatasync`), so records are written one at a time however many clients there are.\n",
            self.rounds
        );
        let _ = writeln!(
            out,
            "| entries | store | clients | entries updated | updates | conflicts | wall | updates/s |"
        );
        let _ = writeln!(out, "|--:|---|--:|---|--:|--:|--:|--:|");
        for row in &self.throughput {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                row.size,
                row.store,
                row.clients,
                if row.shared { format!("{SHARED} shared") } else { "own".to_owned() },
                row.updates,
                row.conflicts,
                fmt(row.elapsed),
                rate(row.per_second())
            );
        }
    }

    fn population(&self, out: &mut String) {
        let _ = writeln!(out, "\n## Populating\n");
        let _ = writeln!(
            out,
            "Not a user-facing path: how the stores were filled. PostgreSQL: `PostgresStore::insert_exact` (what \
             `alp store copy` uses) in transactions of {CHUNK} rows, each row folded and indexed, then `VACUUM \
             ANALYZE`. Markdown: each file `render_entry_file` writes, written directly (no lock, no fsync per \
             file), then one `sync`.\n"
        );
        let _ = writeln!(out, "| entries | PostgreSQL insert | VACUUM ANALYZE | Markdown files |");
        let _ = writeln!(out, "|--:|--:|--:|--:|");
        for p in &self.population {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                p.size,
                fmt(p.pg_insert),
                fmt(p.pg_vacuum),
                fmt(p.md_write)
            );
        }
    }
}
