//! `cargo xtask bench --peers [--quick] [--sizes 850,8500] [--runs N] [--alp PATH]` (also `cargo xtask peers`): `alp mcp` against
//! the memory servers a user would otherwise pick, with one client and one workload, into `BENCHMARKS-peers.md`.
//!
//! 1. Builds `alp` in release mode (or takes the one `--alp` names) and installs the peers into `target/peers/` (once; later runs reuse them): the MCP
//!    reference memory server (`npm install --prefix target/peers/server-memory @modelcontextprotocol/server-memory`)
//!    and `basic-memory` (`python -m venv target/peers/basic-memory`, then its `pip install basic-memory`, with the
//!    newest Python 3.12 or later found, else `python3` and whatever version pip's resolver accepts). A peer that
//!    cannot be installed is reported as such, on stderr and in the report, and the others are still measured.
//! 2. For each size, starts every server over stdio on a store of its own under `target/peers/run-PID/` (removed afterwards) and drives it
//!    with rmcp's client; the tool names come from each server's `tools/list`. Each is loaded with the same notes
//!    (about 800 bytes of words, about 4% holding a query term) in its own model: `memory_create` for `alp`, an
//!    entity per note with one observation per line (`create_entities`, 100 entities a call) for server-memory,
//!    its Markdown files and its own indexer for basic-memory (`write_note` one note at a time is too slow for
//!    8,500). Then waits until every server is idle (basic-memory indexes in the background).
//! 3. Times, interleaved in the same rounds so every server sees the same machine: three warm searches, a get of an
//!    existing note (`memory_get`, `open_nodes`, `read_note`), a create (`memory_create`, `create_entities`,
//!    `write_note`), and cold starts (spawn to the first `tools/list` answer, on the loaded store). Then reads the
//!    peak resident memory (`VmHWM`) of each loaded server's process tree.
//! 4. Writes medians, 95th percentiles and each peer's ratio to `alp` (above 1: the peer is slower or larger).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::corpus::{PER_PROJECT, content};
use crate::flags::{Alp, Runs, positive};
use crate::measure::{
    Lcg, Ran, Run, cpu, cpu_ticks, first_line, median, ms, nearest_rank, proc_status, utc_now,
};
use crate::root;
use crate::setup::target_dir;

/// The searches, each timed on its own row.
const QUERIES: [&str; 3] = ["postgres", "migration", "PostgreSQL migration"];
/// `alp`'s result limit and basic-memory's page size (server-memory has neither: it answers every match).
const LIMIT: u64 = 20;
/// How long one call or one start may take before the bench gives up on that server.
const WAIT: Duration = Duration::from_secs(120);
/// server-memory entities per `create_entities` call while loading (it rewrites its whole file on every call).
const BATCH: usize = 100;

/// `cargo xtask peers` (also `cargo xtask bench --peers`).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Numbers of notes, one section each [default: 850,8500; with --quick 200]
    #[arg(long, value_name = "N,N", value_delimiter = ',', value_parser = positive::<usize>)]
    sizes: Option<Vec<usize>>,
    /// [default: 20; with --quick 5]
    #[command(flatten)]
    runs: Runs,
    /// A smoke run: 200 notes, 5 rounds, 2 cold starts
    #[arg(long)]
    quick: bool,
    #[command(flatten)]
    alp: Alp,
}

struct Options {
    sizes: Vec<usize>,
    runs: usize,
    starts: usize,
}

/// The servers measured: ours and the two peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Alp,
    ServerMemory,
    BasicMemory,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Alp => "alp mcp",
            Kind::ServerMemory => "server-memory",
            Kind::BasicMemory => "basic-memory",
        }
    }

    /// The tools this bench calls, which `tools/list` must offer.
    fn tools(self) -> [&'static str; 3] {
        match self {
            Kind::Alp => ["memory_create", "memory_search", "memory_get"],
            Kind::ServerMemory => ["create_entities", "search_nodes", "open_nodes"],
            Kind::BasicMemory => ["write_note", "search_notes", "read_note"],
        }
    }
}

/// An installed server: how to start it on a store directory.
struct Installed {
    kind: Kind,
    version: String,
    program: PathBuf,
    args: Vec<String>,
}

/// What happened when installing one peer.
enum Install {
    Ready(Installed),
    Unavailable(Kind, String),
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let o = Options {
        sizes: args.sizes.clone().unwrap_or(if args.quick { vec![200] } else { vec![850, 8_500] }),
        runs: args.runs.or(if args.quick { 5 } else { 20 }),
        starts: if args.quick { 2 } else { 3 },
    };
    let run = Run::start();
    let alp = args.alp.binary()?;
    let built = match &args.alp.alp {
        Some(path) => format!("`{}`", path.display()),
        None => "release build of this tree".to_owned(),
    };
    let cache = target_dir().join("peers");
    std::fs::create_dir_all(&cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let alp_version = Command::new(&alp)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut installs = vec![Install::Ready(Installed {
        kind: Kind::Alp,
        version: format!("{alp_version} ({built})"),
        program: alp.clone(),
        args: Vec::new(),
    })];
    installs.push(install_server_memory(&cache));
    installs.push(install_basic_memory(&cache));
    for install in &installs {
        match install {
            Install::Ready(i) => eprintln!("peers: {} {}", i.kind.name(), i.version),
            Install::Unavailable(kind, why) => {
                eprintln!("peers: {} cannot be installed here: {why}", kind.name())
            }
        }
    }
    let ready: Vec<&Installed> = installs
        .iter()
        .filter_map(|i| match i {
            Install::Ready(installed) => Some(installed),
            Install::Unavailable(..) => None,
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let mut sections = Vec::new();
    for &size in &o.sizes {
        let dir = cache.join(format!("run-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        let result = runtime.block_on(measure(&ready, &dir, size, &o));
        let _ = std::fs::remove_dir_all(&dir);
        sections.push(result?);
        // Written after every size, so that a long run interrupted at a larger size keeps the smaller ones.
        let report = render(&installs, &sections, &o, &run.ran());
        std::fs::write(root().join("BENCHMARKS-peers.md"), report)
            .map_err(|e| format!("cannot write BENCHMARKS-peers.md: {e}"))?;
        eprintln!("wrote BENCHMARKS-peers.md up to {size} notes ({:.0} s)", run.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The last lines of a log file, joined: the reason an installer gives.
fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" / ")
}

/// Runs an installer with its output in `log`; whether it succeeded.
fn install_step(program: &Path, args: &[&str], log: &Path) -> Result<bool, String> {
    eprintln!("+ {} {} (output in {})", program.display(), args.join(" "), log.display());
    let file = std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
    Ok(status.success())
}

fn install_server_memory(cache: &Path) -> Install {
    let kind = Kind::ServerMemory;
    let prefix = cache.join("server-memory");
    let package = prefix.join("node_modules/@modelcontextprotocol/server-memory");
    let version = |package: &Path| -> Option<String> {
        let text = std::fs::read_to_string(package.join("package.json")).ok()?;
        let json: Value = serde_json::from_str(&text).ok()?;
        json["version"].as_str().map(str::to_owned)
    };
    let Some(node) = first_line(Path::new("node"), &["--version"]) else {
        return Install::Unavailable(kind, "`node` is not installed".to_owned());
    };
    if version(&package).is_none() {
        let log = cache.join("server-memory-install.log");
        let args = ["install", "--prefix", &prefix.to_string_lossy(), "@modelcontextprotocol/server-memory"];
        match install_step(Path::new("npm"), &args, &log) {
            Ok(true) => {}
            Ok(false) => {
                return Install::Unavailable(kind, format!("`npm install` failed: {}", tail(&log, 3)));
            }
            Err(e) => return Install::Unavailable(kind, e),
        }
    }
    let Some(v) = version(&package) else {
        return Install::Unavailable(kind, "npm installed no package.json".to_owned());
    };
    Install::Ready(Installed {
        kind,
        version: format!("@modelcontextprotocol/server-memory {v} on node {node}"),
        program: PathBuf::from("node"),
        args: vec![package.join("dist/index.js").to_string_lossy().into_owned()],
    })
}

/// `major.minor` of a Python interpreter, when it runs.
fn python_version(python: &Path) -> Option<(u32, u32)> {
    let line = first_line(python, &["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])?;
    let (major, minor) = line.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The newest Python 3.12 or later on this machine (`ALP_BENCH_PYTHON`, `python3.13`/`python3.12` on the PATH, a
/// pyenv version), else `python3`.
fn python() -> Option<(PathBuf, (u32, u32))> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("ALP_BENCH_PYTHON") {
        candidates.push(PathBuf::from(path));
    }
    for minor in (12..=16).rev() {
        candidates.push(PathBuf::from(format!("python3.{minor}")));
    }
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pyenv")));
    if let Some(versions) = pyenv.map(|p| p.join("versions"))
        && let Ok(entries) = std::fs::read_dir(versions)
    {
        let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path().join("bin/python3")).collect();
        found.sort();
        candidates.extend(found.into_iter().rev());
    }
    let mut best: Option<(PathBuf, (u32, u32))> = None;
    for candidate in candidates {
        if let Some(version) = python_version(&candidate)
            && best.as_ref().is_none_or(|(_, v)| version > *v)
        {
            best = Some((candidate, version));
        }
    }
    match best {
        Some((path, version)) if version >= (3, 12) => Some((path, version)),
        _ => {
            let python = PathBuf::from("python3");
            python_version(&python).map(|v| (python, v))
        }
    }
}

fn install_basic_memory(cache: &Path) -> Install {
    let kind = Kind::BasicMemory;
    let venv = cache.join("basic-memory");
    let program = venv.join("bin/basic-memory");
    let pip = venv.join("bin/pip");
    let version = || {
        first_line(
            &venv.join("bin/python"),
            &["-c", "import importlib.metadata as m; print(m.version('basic-memory'))"],
        )
    };
    if !program.is_file() || version().is_none() {
        let Some((python, (major, minor))) = python() else {
            return Install::Unavailable(kind, "no `python3` on this machine".to_owned());
        };
        let log = cache.join("basic-memory-install.log");
        if venv.exists() {
            let _ = std::fs::remove_dir_all(&venv);
        }
        match install_step(&python, &["-m", "venv", &venv.to_string_lossy()], &log) {
            Ok(true) => {}
            Ok(false) => {
                return Install::Unavailable(
                    kind,
                    format!("`{} -m venv` failed: {}", python.display(), tail(&log, 2)),
                );
            }
            Err(e) => return Install::Unavailable(kind, e),
        }
        match install_step(&pip, &["install", "--disable-pip-version-check", "basic-memory"], &log) {
            Ok(true) => {}
            Ok(false) => {
                return Install::Unavailable(
                    kind,
                    format!(
                        "`pip install basic-memory` failed with Python {major}.{minor} (the newest Python here): {}",
                        tail(&log, 2)
                    ),
                );
            }
            Err(e) => return Install::Unavailable(kind, e),
        }
    }
    let Some(v) = version() else {
        return Install::Unavailable(kind, "pip installed no `basic-memory` package".to_owned());
    };
    let python = python_version(&venv.join("bin/python"))
        .map(|(a, b)| format!(" on Python {a}.{b}"))
        .unwrap_or_default();
    Install::Ready(Installed {
        kind,
        version: format!("basic-memory {v}{python}"),
        program,
        args: vec!["mcp".to_owned()],
    })
}

/// One connected server.
struct Running {
    kind: Kind,
    client: RunningService<RoleClient, ClientConfig>,
    child: tokio::process::Child,
    pid: u32,
    tools: Vec<String>,
}

/// Where a server of `kind` keeps its store under `dir`, and the home it runs in.
fn store(dir: &Path, kind: Kind) -> PathBuf {
    dir.join(match kind {
        Kind::Alp => "alp",
        Kind::ServerMemory => "server-memory",
        Kind::BasicMemory => "basic-memory",
    })
}

/// Creates the empty store a server of `kind` starts on.
fn prepare(dir: &Path, kind: Kind) -> Result<(), String> {
    let base = store(dir, kind);
    let fail = |e: std::io::Error| format!("cannot prepare {}: {e}", base.display());
    std::fs::create_dir_all(base.join("home")).map_err(fail)?;
    match kind {
        Kind::Alp => {
            std::fs::create_dir_all(base.join("memory")).map_err(fail)?;
            std::fs::create_dir_all(base.join("agents")).map_err(fail)?;
            std::fs::write(base.join("agents/bench.yaml"), crate::corpus::WRITER).map_err(fail)?;
        }
        Kind::ServerMemory => {}
        Kind::BasicMemory => {
            std::fs::create_dir_all(base.join("notes")).map_err(fail)?;
        }
    }
    Ok(())
}

/// basic-memory's settings: its project (`main`) and configuration under `base`, no update checks (they need the
/// network), no model downloads.
fn basic_memory_env(base: &Path) -> Vec<(&'static str, std::ffi::OsString)> {
    vec![
        ("BASIC_MEMORY_HOME", base.join("notes").into_os_string()),
        ("BASIC_MEMORY_CONFIG_DIR", base.join("home/.basic-memory").into_os_string()),
        ("BASIC_MEMORY_CLOUD_MODE", "false".into()),
        ("BASIC_MEMORY_AUTO_UPDATE", "false".into()),
        ("BASIC_MEMORY_CLOUD_PROMO_OPT_OUT", "true".into()),
        ("FASTMCP_CHECK_FOR_UPDATES", "off".into()),
        ("HF_HUB_OFFLINE", "1".into()),
        ("DO_NOT_TRACK", "1".into()),
    ]
}

/// Loads basic-memory the way it is built to be filled: the notes as Markdown files in its project, then its own
/// indexer (`basic-memory project index main`, which it names as the remedy for files it has not indexed yet).
/// Writing 8,500 notes one `write_note` at a time takes longer than the whole bench may.
async fn load_basic_memory(installed: &Installed, dir: &Path, notes: &[Note]) -> Result<(), String> {
    let base = store(dir, Kind::BasicMemory);
    let folder = base.join("notes/notes");
    let fail =
        |e: std::io::Error| format!("cannot write the basic-memory notes in {}: {e}", folder.display());
    std::fs::create_dir_all(&folder).map_err(fail)?;
    for note in notes {
        std::fs::write(folder.join(format!("note-{}.md", note.index)), &note.text).map_err(fail)?;
    }
    let log = std::fs::File::create(base.join("index.log")).map_err(fail)?;
    let status = tokio::process::Command::new(&installed.program)
        .args(["project", "index", "main"])
        .envs(basic_memory_env(&base))
        .env("HOME", base.join("home"))
        .current_dir(&base)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone().map_err(fail)?))
        .stderr(Stdio::from(log))
        .status()
        .await
        .map_err(|e| format!("cannot run `basic-memory project index`: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`basic-memory project index main` failed with {status}: {}",
            tail(&base.join("index.log"), 2)
        ));
    }
    Ok(())
}

fn command(installed: &Installed, dir: &Path) -> Result<tokio::process::Command, String> {
    let base = store(dir, installed.kind);
    let mut command = tokio::process::Command::new(&installed.program);
    command.env("HOME", base.join("home")).current_dir(&base);
    match installed.kind {
        Kind::Alp => {
            command
                .env_remove("ALP_MEMORY_ROOT")
                .env_remove("ALP_MEMORY_STORE")
                .env_remove("ALP_AUDIT_KEY")
                .arg("--root")
                .arg(base.join("memory"))
                .arg("--agents")
                .arg(base.join("agents"))
                .args(["--as", "bench", "mcp"]);
        }
        Kind::ServerMemory => {
            command.args(&installed.args).env("MEMORY_FILE_PATH", base.join("memory.jsonl"));
        }
        Kind::BasicMemory => {
            command.args(&installed.args).envs(basic_memory_env(&base));
        }
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(base.join("stderr.log"))
        .map_err(|e| format!("cannot open the server log in {}: {e}", base.display()))?;
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::from(log)).kill_on_drop(true);
    Ok(command)
}

/// Spawns a server and connects to it; also the time from the spawn to the answer of the first `tools/list`.
async fn start(installed: &Installed, dir: &Path) -> Result<(Running, Duration), String> {
    let name = installed.kind.name();
    let mut command = command(installed, dir)?;
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("cannot start {name}: {e}"))?;
    let pid = child.id().unwrap_or_default();
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut config =
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("xtask-peers", "0"));
    config.protocol_version = ProtocolVersion::V_2025_11_25;
    let connect = async {
        let client =
            config.serve((stdout, stdin)).await.map_err(|e| format!("{name}: initialize failed: {e}"))?;
        let tools = client.list_all_tools().await.map_err(|e| format!("{name}: tools/list failed: {e}"))?;
        Ok::<_, String>((client, tools))
    };
    let (client, tools) = tokio::time::timeout(WAIT, connect)
        .await
        .map_err(|_| format!("{name}: no tools/list answer within {} s", WAIT.as_secs()))??;
    let took = started.elapsed();
    let tools: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for needed in installed.kind.tools() {
        if !tools.iter().any(|t| t == needed) {
            return Err(format!("{name}: `{needed}` is not in its tools/list ({})", tools.join(", ")));
        }
    }
    Ok((Running { kind: installed.kind, client, child, pid, tools }, took))
}

impl Running {
    /// One `tools/call`, checked to succeed: its round trip and its text blocks, joined.
    async fn call(&self, tool: &str, args: Value) -> Result<(Duration, String), String> {
        let name = self.kind.name();
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let started = Instant::now();
        let result = tokio::time::timeout(WAIT, self.client.call_tool(params))
            .await
            .map_err(|_| format!("{name}: `{tool}` gave no answer within {} s", WAIT.as_secs()))?
            .map_err(|e| format!("{name}: `{tool}` failed: {e}"))?;
        let took = started.elapsed();
        let text: Vec<&str> =
            result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.as_str())).collect();
        let joined = text.join("\n");
        if result.is_error == Some(true) {
            let short: String = joined.chars().take(300).collect();
            return Err(format!("{name}: `{tool}` answered an error: {short}"));
        }
        Ok((took, joined))
    }

    /// A get of note `index`, checked to answer that note (a peer may answer a miss without an error).
    async fn get(&self, index: usize, note: &Note) -> Result<Duration, String> {
        let (tool, args) = get_call(self.kind, index);
        let (took, text) = self.call(tool, args).await?;
        let first: Vec<&str> =
            note.text.lines().next().unwrap_or_default().split_whitespace().take(3).collect();
        let snippet = first.join(" ");
        if !text.contains(&snippet) {
            let short: String = text.chars().take(300).collect();
            return Err(format!(
                "{}: `{tool}` of note {index} did not answer it (no `{snippet}`): {short}",
                self.kind.name()
            ));
        }
        Ok(took)
    }

    /// Closes the connection and waits for the server to exit, killing it after two seconds (basic-memory waits for
    /// its file watcher).
    async fn stop(mut self) {
        let _ = self.client.cancel().await;
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// One note of the shared workload.
struct Note {
    index: usize,
    text: String,
}

fn notes(size: usize) -> Vec<Note> {
    let mut rng = Lcg(0x5eed_0000 ^ u64::try_from(size).unwrap_or_default());
    (0..size).map(|index| Note { index, text: content(&mut rng, 4) }).collect()
}

/// The call that stores `notes` in a server of `kind` (server-memory takes a batch; the others one note).
fn create_call(kind: Kind, notes: &[Note], prefix: &str) -> (&'static str, Value) {
    match kind {
        Kind::Alp => {
            let note = &notes[0];
            let project = note.index / PER_PROJECT;
            (
                "memory_create",
                json!({ "id": format!("project:{prefix}{project:03}:notes:note-{}", note.index), "content": note.text }),
            )
        }
        Kind::ServerMemory => {
            let entities: Vec<Value> = notes
                .iter()
                .map(|note| {
                    let observations: Vec<&str> = note.text.lines().filter(|l| !l.trim().is_empty()).collect();
                    json!({ "name": format!("{prefix}note-{}", note.index), "entityType": "note", "observations": observations })
                })
                .collect();
            ("create_entities", json!({ "entities": entities }))
        }
        Kind::BasicMemory => {
            let note = &notes[0];
            (
                "write_note",
                json!({ "title": format!("{prefix}note-{}", note.index), "content": note.text, "directory": "notes" }),
            )
        }
    }
}

fn search_call(kind: Kind, query: &str) -> (&'static str, Value) {
    match kind {
        Kind::Alp => ("memory_search", json!({ "query": query, "limit": LIMIT })),
        Kind::ServerMemory => ("search_nodes", json!({ "query": query })),
        Kind::BasicMemory => {
            ("search_notes", json!({ "query": query, "page_size": LIMIT, "search_type": "text" }))
        }
    }
}

fn get_call(kind: Kind, index: usize) -> (&'static str, Value) {
    match kind {
        Kind::Alp => {
            ("memory_get", json!({ "id": format!("project:p{:03}:notes:note-{index}", index / PER_PROJECT) }))
        }
        Kind::ServerMemory => ("open_nodes", json!({ "names": [format!("note-{index}")] })),
        Kind::BasicMemory => ("read_note", json!({ "identifier": format!("notes/note-{index}") })),
    }
}

/// The rows of the report, in order.
const ROWS: usize = QUERIES.len() + 3;

fn row_name(row: usize) -> String {
    match row {
        r if r < QUERIES.len() => format!("search `{}`", QUERIES[r]),
        r if r == QUERIES.len() => "get one note".to_owned(),
        r if r == QUERIES.len() + 1 => "create one note".to_owned(),
        _ => "cold start (spawn to `tools/list`)".to_owned(),
    }
}

/// What one server gave at one size.
struct Measured {
    kind: Kind,
    tools: Vec<String>,
    load: Duration,
    samples: Vec<Vec<Duration>>,
    /// The bytes of each search's answer (its text blocks), for the first round.
    answer_bytes: Vec<usize>,
    peak_kib: Option<u64>,
}

/// One size's results: what was measured, and the servers that failed on the way.
struct Section {
    size: usize,
    measured: Vec<Measured>,
    failed: Vec<(Kind, String)>,
}

async fn measure(ready: &[&Installed], dir: &Path, size: usize, o: &Options) -> Result<Section, String> {
    let all = notes(size);
    let mut servers: Vec<(Running, &Installed, Measured)> = Vec::new();
    let mut failed = Vec::new();
    for installed in ready {
        let kind = installed.kind;
        let loaded = async {
            prepare(dir, kind)?;
            eprintln!("peers: loading {size} notes into {}", kind.name());
            let started = Instant::now();
            if kind == Kind::BasicMemory {
                load_basic_memory(installed, dir, &all).await?;
            }
            let mut load = started.elapsed();
            let (server, _) = start(installed, dir).await?;
            if kind != Kind::BasicMemory {
                let started = Instant::now();
                let step = if kind == Kind::ServerMemory { BATCH } else { 1 };
                for chunk in all.chunks(step) {
                    let (tool, args) = create_call(kind, chunk, if kind == Kind::Alp { "p" } else { "" });
                    server.call(tool, args).await?;
                }
                load = started.elapsed();
            }
            eprintln!("peers: {} loaded in {:.1} s", kind.name(), load.as_secs_f64());
            Ok::<_, String>((server, load))
        };
        match loaded.await {
            Ok((server, load)) => {
                let measured = Measured {
                    kind,
                    tools: server.tools.clone(),
                    load,
                    samples: vec![Vec::new(); ROWS],
                    answer_bytes: vec![0; QUERIES.len()],
                    peak_kib: None,
                };
                servers.push((server, installed, measured));
            }
            Err(e) => {
                eprintln!("peers: {e}");
                failed.push((kind, e));
            }
        }
    }
    // Let every server finish what it does after loading (basic-memory indexes its files in the background), so
    // that none of them takes the CPU from the others' rounds; then warm each: two rounds of each search and a get.
    for (server, _, _) in &servers {
        settle(server.pid).await;
    }
    for (server, _, _) in &servers {
        for _ in 0..2 {
            for query in QUERIES {
                let (tool, args) = search_call(server.kind, query);
                server.call(tool, args).await?;
            }
            server.get(0, &all[0]).await?;
        }
    }
    eprintln!("peers: {} rounds over {size} notes", o.runs);
    for round in 0..o.runs {
        let index = (round * 7_919 + 13) % size;
        for (server, _, measured) in &mut servers {
            let kind = server.kind;
            for (q, query) in QUERIES.iter().enumerate() {
                let (tool, args) = search_call(kind, query);
                let (took, text) = server.call(tool, args).await?;
                measured.samples[q].push(took);
                if round == 0 {
                    measured.answer_bytes[q] = text.len();
                }
            }
            measured.samples[QUERIES.len()].push(server.get(index, &all[index]).await?);
            let note = Note { index: round, text: all[index].text.clone() };
            let (tool, args) = create_call(kind, std::slice::from_ref(&note), "new");
            measured.samples[QUERIES.len() + 1].push(server.call(tool, args).await?.0);
        }
    }
    for (server, _, measured) in &mut servers {
        measured.peak_kib = peak_kib(server.pid);
    }
    let mut installed_of = Vec::new();
    let mut measured_all = Vec::new();
    for (server, installed, measured) in servers {
        server.stop().await;
        installed_of.push(installed);
        measured_all.push(measured);
    }
    // Cold starts on the loaded stores, interleaved.
    for _ in 0..o.starts {
        for (installed, measured) in installed_of.iter().zip(measured_all.iter_mut()) {
            let (server, took) = start(installed, dir).await?;
            measured.samples[ROWS - 1].push(took);
            server.stop().await;
        }
    }
    for measured in &mut measured_all {
        for list in &mut measured.samples {
            list.sort();
        }
    }
    Ok(Section { size, measured: measured_all, failed })
}

/// Waits until a process has used under 5% of a core for two seconds in a row, or five minutes have passed.
async fn settle(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut quiet = 0;
    let mut last = cpu_ticks(pid);
    while quiet < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = cpu_ticks(pid);
        match (last, now) {
            (Some(a), Some(b)) if b.saturating_sub(a) <= 5 => quiet += 1,
            (Some(_), Some(_)) => quiet = 0,
            _ => return,
        }
        last = now;
    }
}

/// The peak resident memory of a process and its descendants (the sum of their `VmHWM`), in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let mut total = proc_status(pid, "VmHWM").ok()?;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
                total += peak_kib(child).unwrap_or(0);
            }
        }
    }
    Some(total)
}

fn p95(samples: &[Duration]) -> Duration {
    nearest_rank(samples, 95)
}

fn render(installs: &[Install], sections: &[Section], o: &Options, ran: &Ran) -> String {
    let mut out = String::new();
    let date = utc_now();
    let _ = writeln!(out, "# `alp mcp` against its peers\n");
    let _ = writeln!(
        out,
        "Generated by `cargo xtask bench --peers` on {date} ({}; the whole run took {:.0} s; load average {} \
         before, {} after, on 2 cores shared with other builds). Do not edit by hand: run the command again.\n",
        cpu(),
        ran.took.as_secs_f64(),
        ran.load_before,
        ran.load_after
    );
    let _ = writeln!(
        out,
        "Each server runs over stdio, driven by one client (rmcp's), loaded with the same notes (about 800 bytes of \
         words each, about 4% holding a query term) in its own model, and measured in the same interleaved rounds: \
         {} rounds of every search, get and create, and {} cold starts on the loaded store. A ratio is the peer's \
         figure over `alp`'s (median, then 95th percentile): above 1, the peer is slower or larger. `alp` searches \
         with `limit: {LIMIT}` and basic-memory with `page_size: {LIMIT}`; server-memory has no limit and answers \
         every entity whose text holds the query as a substring, so its answers are larger (the bytes are shown). \
         Every `alp` call writes its audit record.\n",
        o.runs, o.starts
    );
    let _ = writeln!(
        out,
        "basic-memory is loaded the way it is built to be filled, as Markdown files in its project followed by its own \
         indexer (8,500 `write_note` calls, at the cost the create row shows, would outlast the whole bench); its \
         creates in the rounds are `write_note` calls. It searches with `search_type: text`: its semantic search needs SQLite \
         extension loading, which the Python build here lacks (it says so in its log, and the search is then \
         keyword-only). Its update checks are turned off (`BASIC_MEMORY_AUTO_UPDATE=false`, \
         `FASTMCP_CHECK_FOR_UPDATES=off`): they need a network this machine does not have. Its cold start is mostly \
         Python importing its dependencies; the peak memory is its process tree's.\n"
    );
    let _ = writeln!(out, "## Servers\n");
    for install in installs {
        match install {
            Install::Ready(i) => {
                let _ = writeln!(out, "- {}: {}", i.kind.name(), i.version);
            }
            Install::Unavailable(kind, why) => {
                let _ = writeln!(out, "- {}: **cannot be installed here**: {why}", kind.name());
            }
        }
    }
    let _ = writeln!(out);
    for section in sections {
        let _ = writeln!(out, "## {} notes\n", section.size);
        for (kind, why) in &section.failed {
            let _ = writeln!(out, "{} could not be measured: {why}\n", kind.name());
        }
        let Some(ours) = section.measured.iter().find(|m| m.kind == Kind::Alp) else {
            let _ = writeln!(out, "`alp mcp` could not be measured at this size.\n");
            continue;
        };
        let peers: Vec<&Measured> = section.measured.iter().filter(|m| m.kind != Kind::Alp).collect();
        let mut header = "| | `alp mcp`: median (p95) |".to_owned();
        let mut rule = "|---|---|".to_owned();
        for peer in &peers {
            let _ = write!(header, " {}: median (p95) | {} / alp |", peer.kind.name(), peer.kind.name());
            rule.push_str("---|---|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        let cell = |s: &[Duration]| format!("{:.2} ms ({:.2} ms)", ms(median(s)), ms(p95(s)));
        let ratio = |a: f64, b: f64| if b > 0.0 { format!("{:.2}×", a / b) } else { "?".to_owned() };
        let mut behind = Vec::new();
        for row in 0..ROWS {
            let mut line = format!("| {} | {} |", row_name(row), cell(&ours.samples[row]));
            for peer in &peers {
                let (p, a) = (&peer.samples[row], &ours.samples[row]);
                for (what, mine, theirs) in [("median", median(a), median(p)), ("p95", p95(a), p95(p))] {
                    if theirs <= mine {
                        behind.push(format!(
                            "{} against {} ({what}: {:.2} against {:.2} ms)",
                            row_name(row),
                            peer.kind.name(),
                            ms(theirs),
                            ms(mine)
                        ));
                    }
                }
                let _ = write!(
                    line,
                    " {} | {} ({}) |",
                    cell(p),
                    ratio(ms(median(p)), ms(median(a))),
                    ratio(ms(p95(p)), ms(p95(a)))
                );
            }
            let _ = writeln!(out, "{line}");
        }
        let kib = |m: &Measured| m.peak_kib.map(|k| k as f64 / 1024.0);
        let mut line = format!(
            "| peak resident memory (`VmHWM`) | {} |",
            kib(ours).map(|m| format!("{m:.1} MiB")).unwrap_or_else(|| "?".to_owned())
        );
        for peer in &peers {
            let _ = write!(
                line,
                " {} | {} |",
                kib(peer).map(|m| format!("{m:.1} MiB")).unwrap_or_else(|| "?".to_owned()),
                match (kib(peer), kib(ours)) {
                    (Some(p), Some(a)) => ratio(p, a),
                    _ => "?".to_owned(),
                }
            );
        }
        let _ = writeln!(out, "{line}\n");
        if behind.is_empty() {
            let _ = writeln!(out, "Every peer figure is above `alp`'s at this size.\n");
        } else {
            let _ = writeln!(out, "Where a peer is not slower than `alp`: {}.\n", behind.join("; "));
        }
        let _ = writeln!(out, "Loading the {} notes, and the size of each search's answer:\n", section.size);
        for m in &section.measured {
            let per = ms(m.load) / section.size as f64;
            let how = match m.kind {
                Kind::Alp => "one `memory_create` per note",
                Kind::ServerMemory => "`create_entities`, 100 entities a call",
                Kind::BasicMemory => "Markdown files, then `basic-memory project index main`",
            };
            let bytes: Vec<String> =
                QUERIES.iter().zip(&m.answer_bytes).map(|(q, b)| format!("`{q}` {b} bytes")).collect();
            let _ = writeln!(
                out,
                "- {}: {:.1} s ({per:.2} ms a note; {how}); answers: {}.",
                m.kind.name(),
                m.load.as_secs_f64(),
                bytes.join(", ")
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "## Tools each server lists\n");
    if let Some(section) = sections.first() {
        for m in &section.measured {
            let _ = writeln!(
                out,
                "- {}: {}",
                m.kind.name(),
                m.tools.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            );
        }
    }
    out
}
