//! docs/OPERATIONS.md runs as written: every ```sh block, in order, in one bash session (so variables, functions and
//! the servers a block starts carry over to the next, as in an operator's terminal), with HOME in a temporary
//! directory and the real `alp` first on PATH. The session runs in a mount namespace of its own, where `/etc/hosts`
//! also names `memory.example.com` as 127.0.0.1 (the proxy's DNS name in the page), and `~/mcp-sdk` is a copy of the
//! virtual environment `eras.rs` makes with the official Python SDK (so the page's `python3 -m venv` and `pip
//! install` find it made, with nothing to fetch). Real components throughout: `alp serve` on 127.0.0.1:7707, nginx in the
//! foreground on 8443 with a certificate the page makes, the Python SDK and the MCP Inspector through it.
//!
//! What is not run as written, and how it is checked instead:
//! - the PostgreSQL blocks name `db.internal`: its two URLs are replaced by two databases of the test cluster (the
//!   first filled beforehand as an operator's would be); without a cluster they are skipped with a notice (and fail
//!   with `ALP_REQUIRE_POSTGRES=1`);
//! - the ```shell blocks need root and a running systemd (not in a container): the archive units the page shows in
//!   full must equal `examples/deploy/`'s files, `systemd-analyze verify` checks them, and their `ExecStart` and
//!   `ExecStartPost` run by hand with the unit's environment ([`the_archive_units_verify_and_their_commands_run`]);
//! - the Inspector block needs the npm registry (its package is cached under the target directory), and the Python
//!   block PyPI the first time: when either cannot be reached the block is skipped with a notice.
//!
//! The session needs root (for the mount namespace) and nginx: without them the test is skipped with a notice, and
//! fails when `CI=true`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::doc_blocks::{Block, anchors, fenced, repo, shell_blocks};

const DOC: &str = "docs/OPERATIONS.md";
/// The page's database, and the one it restores into (replaced by test databases).
const DB_URL: &str = "postgresql://alp@db.internal/alp";
const RESTORED_URL: &str = "postgresql://alp@db.internal/alp_restored";
/// How long the whole page may take (the Inspector's first `npx` fetches its package).
const DEADLINE: Duration = Duration::from_secs(540);

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips the test with a notice, or fails it on CI.
fn unavailable(why: &str) {
    assert!(!ci(), "CI=true and {why}");
    eprintln!("NOTICE: the docs/OPERATIONS.md session is skipped: {why}");
}

fn available(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .env("PATH", path_with_alp())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A block as run, and what it printed.
struct Ran {
    block: Block,
    stdout: String,
    stderr: String,
}

/// The session's directories: HOME, and where the blocks and their output go.
struct Session {
    home: PathBuf,
    work: PathBuf,
}

impl Session {
    /// Runs `blocks` in order in one `bash -eo pipefail`, inside a mount namespace where each `(source, target)` of
    /// `binds` is bind-mounted; returns each block with its output. A failing block, or the deadline, fails the
    /// test with that block's text and output. Whatever the blocks left running is stopped at the end.
    fn run(&self, blocks: Vec<Block>, binds: &[(PathBuf, PathBuf)], vars: &[(&str, String)]) -> Vec<Ran> {
        let mut driver = String::from("set -eo pipefail\ncd \"$HOME\"\n");
        for (at, block) in blocks.iter().enumerate() {
            let file = self.work.join(format!("{at}.sh"));
            std::fs::write(&file, &block.text).unwrap();
            let w = self.work.display();
            driver.push_str(&format!(
                "echo {at} > {w}/started\nsource {w}/{at}.sh > {w}/{at}.out 2> {w}/{at}.err\n"
            ));
        }
        driver.push_str(&format!("echo done > {}/started\n", self.work.display()));
        std::fs::write(self.work.join("driver.sh"), driver).unwrap();
        let mounts: String = binds
            .iter()
            .map(|(source, target)| format!("mount --bind '{}' '{}' && ", source.display(), target.display()))
            .collect();
        let mut child = Command::new("unshare")
            .args(["-m", "--propagation", "private", "bash", "-c"])
            .arg(format!("{mounts}exec bash '{}'", self.work.join("driver.sh").display()))
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", path_with_alp())
            .env("LANG", "C.UTF-8")
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let group = child.id();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > DEADLINE {
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        // The servers a failed block left behind, or anything still running at the deadline.
        let _ =
            Command::new("kill").args(["-KILL", "--", &format!("-{group}")]).stderr(Stdio::null()).status();
        let _ = child.wait();
        let mut driver_err = String::new();
        if let Some(mut err) = child.stderr.take() {
            use std::io::Read as _;
            let _ = err.read_to_string(&mut driver_err);
        }
        let read = |name: String| std::fs::read_to_string(self.work.join(name)).unwrap_or_default();
        let reached = read("started".to_owned());
        let ran: Vec<Ran> = blocks
            .into_iter()
            .enumerate()
            .map(|(at, block)| Ran {
                block,
                stdout: read(format!("{at}.out")),
                stderr: read(format!("{at}.err")),
            })
            .collect();
        if status.is_some_and(|s| s.success()) && reached.trim() == "done" {
            return ran;
        }
        let failed = reached.trim().parse::<usize>().ok().and_then(|at| ran.get(at));
        match failed {
            Some(ran) => panic!(
                "the block at {DOC} line {} failed ({}):\n{}\n--- stdout\n{}\n--- stderr\n{}",
                ran.block.line,
                status.map_or("past the deadline".to_owned(), |s| s.to_string()),
                ran.block.text,
                ran.stdout,
                ran.stderr
            ),
            None => panic!("the session did not start ({status:?}): {driver_err}"),
        }
    }
}

/// PATH with the `alp` under test first, and the system directories nginx lives in last.
fn path_with_alp() -> String {
    let alp = Path::new(env!("CARGO_BIN_EXE_alp")).canonicalize().unwrap();
    format!(
        "{}:{}:/usr/sbin:/sbin",
        alp.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A database of the test cluster as an operator's would be: the schema, a role, one entry and its records.
fn filled_database(url: &str, dir: &Path) {
    let agents = dir.join("pg-agents");
    for args in [
        vec!["init", "--role", "dev"],
        vec![
            "--as",
            "dev",
            "memory",
            "create",
            "project:web:db",
            "--content",
            "Postgres 16 runs in a container.",
        ],
    ] {
        let output = crate::cli::alp_command(dir)
            .arg("--store")
            .arg(url)
            .arg("--agents")
            .arg(&agents)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
}

/// Whether npm can fetch the Inspector's package (its metadata: the package itself is cached by `npx`).
fn inspector_reachable(cache: &Path) -> bool {
    Command::new("npm")
        .args(["view", "@modelcontextprotocol/inspector@2.12.0", "version"])
        .env("npm_config_cache", cache)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_shell_block_runs_as_written_in_order() {
    let root_namespace =
        Command::new("unshare").args(["-m", "true"]).output().is_ok_and(|o| o.status.success());
    if !root_namespace {
        return unavailable("`unshare -m` is not permitted (the session needs root for its own /etc/hosts)");
    }
    if !available("nginx") {
        return unavailable("nginx is not installed (apt-get install -y nginx)");
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let session = Session { home: dir.join("home"), work: dir.join("blocks") };
    std::fs::create_dir(&session.home).unwrap();
    std::fs::create_dir(&session.work).unwrap();

    let hosts = dir.join("hosts");
    let mut text = b"127.0.0.1 memory.example.com\n".to_vec();
    text.extend(std::fs::read("/etc/hosts").unwrap_or_default());
    std::fs::write(&hosts, text).unwrap();
    let binds = [(hosts, PathBuf::from("/etc/hosts"))];
    let mut skipped: Vec<&str> = Vec::new();

    let venv = crate::eras::python_sdk::venv();
    match venv {
        // A copy, which the page's `python3 -m venv` may rewrite: `eras.rs` goes on using the original meanwhile.
        Some(venv) => {
            let copied =
                Command::new("cp").arg("-a").arg(venv).arg(session.home.join("mcp-sdk")).status().unwrap();
            assert!(copied.success(), "cp -a {}", venv.display());
        }
        None => skipped.push("check_memory.py"),
    }
    let npm_cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("npm-cache");
    if !available("npx") || !inspector_reachable(&npm_cache) {
        eprintln!("NOTICE: the MCP Inspector block is skipped: npx or the npm registry cannot be reached");
        skipped.push("@modelcontextprotocol/inspector");
    }
    let databases = testkit::pg::test_database().zip(testkit::pg::test_database());
    match &databases {
        Some((db, _)) => filled_database(db.url(), &dir),
        None => skipped.push("db.internal"),
    }

    let mut blocks = shell_blocks(DOC);
    let total = blocks.len();
    blocks.retain(|block| !skipped.iter().any(|needle| block.text.contains(needle)));
    if let Some((db, restored)) = &databases {
        for block in &mut blocks {
            block.text = block.text.replace(RESTORED_URL, restored.url()).replace(DB_URL, db.url());
        }
    }
    let ran = session.run(blocks, &binds, &[("npm_config_cache", npm_cache.display().to_string())]);
    assert!(total - ran.len() <= skipped.len(), "only the blocks named were skipped");
    let block = |needle: &str| -> Option<&Ran> { ran.iter().find(|r| r.block.text.contains(needle)) };
    let home = &session.home;
    let token_id = std::fs::read_dir(home.join("memory/tokens"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".json").to_owned())
        .next()
        .unwrap();

    // The scratch server answered the first call: the entry, found as dev through the token.
    let first = block("mcp memory_search").unwrap();
    assert!(first.stdout.contains("\"isError\":false"), "{}", first.stdout);
    assert!(first.stdout.contains("\"id\":\"project:web:db\""), "{}", first.stdout);

    // A backup of the live root: one entry, its chain verifies alone and is the live log's own.
    let backup = block("store copy --to \"$BACKUP\"").unwrap();
    let lines: Vec<&str> = backup.stdout.lines().collect();
    assert_eq!(lines[0], r#"{"copied":1,"versions":1,"tokens":1,"records":3}"#, "{}", backup.stdout);
    assert_eq!(lines.iter().filter(|l| l.starts_with("audit log intact: 3 records")).count(), 2, "{lines:?}");
    let backups: Vec<PathBuf> =
        std::fs::read_dir(home.join("backups")).unwrap().map(|e| e.unwrap().path()).collect();
    let memory_backup = backups.iter().find(|p| p.to_string_lossy().contains("memory-")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(memory_backup).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::read(memory_backup.join("tokens").join(format!("{token_id}.json"))).unwrap(),
        std::fs::read(home.join("memory.before-restore/tokens").join(format!("{token_id}.json"))).unwrap(),
        "the token came along byte for byte"
    );

    // The restore: the entry is served again from the copy, the old root kept aside.
    let restore = block("mv ~/memory ~/memory.before-restore").unwrap();
    assert!(
        restore.stdout.contains("copied 1 entry (1 kept version), 1 token and 3 audit records"),
        "{}",
        restore.stdout
    );
    assert!(restore.stdout.contains("Postgres 16 runs in a container."), "{}", restore.stdout);

    // PostgreSQL: the database into a directory and back into a new database, both chains verified.
    if databases.is_some() {
        let pg = block("DB_BACKUP=").unwrap();
        assert!(
            pg.stdout.starts_with("{\"copied\":1,\"versions\":1,\"tokens\":0,\"records\":1}\n"),
            "{}",
            pg.stdout
        );
        // The database's one record (the create), verified in the directory and in the restored database.
        assert_eq!(pg.stdout.matches("audit log intact: 1 record,").count(), 2, "{}", pg.stdout);
        assert!(
            pg.stdout
                .contains("copied 1 entry (1 kept version), 0 tokens and 1 audit record to postgresql://"),
            "{}",
            pg.stdout
        );
    }

    // The archive by hand: a 0400 segment outside the root, the anchor taken from what it printed, the live log
    // continuing from it and still holding the head, each segment verifying alone, and a disclosure found across both.
    let archive = home.join("audit-archive");
    let segments: Vec<PathBuf> = std::fs::read_dir(&archive).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(segments.len(), 1, "{segments:?}");
    assert_eq!(std::fs::metadata(&segments[0]).unwrap().permissions().mode() & 0o777, 0o400);
    let later = block("alp audit verify --from \"$FROM\"").unwrap();
    assert_eq!(later.stdout.matches("continuing from record").count(), 2, "{}", later.stdout);
    assert!(later.stdout.contains(&format!("via {token_id}")), "{}", later.stdout);

    // The proxy: the entry through nginx with the Host it passes on, /metrics not served.
    let proxy = block("nginx -p ~/proxy").unwrap();
    assert!(proxy.stdout.contains("Postgres 16 runs in a container."), "{}", proxy.stdout);
    assert!(proxy.stdout.ends_with("404\n"), "{}", proxy.stdout);

    // The clients through the proxy.
    if let Some(python) = block("check_memory.py") {
        assert!(python.stdout.contains("protocol 2026-07-28\n"), "{}", python.stdout);
        assert!(python.stdout.contains("tools memory_search memory_get "), "{}", python.stdout);
        assert!(python.stdout.contains("found project:web:db 1\n"), "{}", python.stdout);
    }
    if let Some(inspector) = block("@modelcontextprotocol/inspector") {
        let answer: Value =
            serde_json::from_str(&inspector.stdout).unwrap_or_else(|e| panic!("{e}: {inspector:?}"));
        assert_eq!(answer["structuredContent"]["content"], "Postgres 16 runs in a container.", "{answer}");
    }

    // Every call above was made by dev through the one token.
    let trail = block("alp audit show --via").unwrap();
    let records: Vec<Value> = trail.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 3, "{}", trail.stdout);
    for record in &records {
        assert_eq!(
            (record["actor"].as_str(), record["via"].as_str()),
            (Some("dev"), Some(token_id.as_str()))
        );
    }
    // The check token was revoked at the end.
    let record =
        std::fs::read_to_string(home.join("memory/tokens").join(format!("{token_id}.json"))).unwrap();
    let record: Value = serde_json::from_str(&record).unwrap();
    assert!(record["revokedAt"].is_string(), "{record}");
    if ran.iter().any(|r| r.block.text.contains("check_memory.py")) {
        assert!(records.iter().any(|r| r["door"] == "search"), "the Python client's search: {records:?}");
    }
}

impl std::fmt::Debug for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}:\n--- stdout\n{}\n--- stderr\n{}", self.block.line, self.stdout, self.stderr)
    }
}

/// The unit's `Key=value` lines, in order.
fn unit_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The archive units: the page shows them in full, `systemd-analyze verify` accepts them and the server's unit with
/// the page's drop-in (with the `alp` under test at the path they name), the install block names them, and their
/// commands, run by hand with the unit's
/// environment (its directories moved under a temporary one), archive a live root and print the anchor and the head
/// that verify it.
#[test]
fn the_archive_units_verify_and_their_commands_run() {
    let deploy = repo().join("examples/deploy");
    let service = std::fs::read_to_string(deploy.join("alp-memory-archive.service")).unwrap();
    let timer = std::fs::read_to_string(deploy.join("alp-memory-archive.timer")).unwrap();
    let shown: Vec<String> = fenced(DOC, "ini").into_iter().map(|b| b.text).collect();
    assert_eq!(shown.len(), 3, "the archive units and the server's drop-in: {shown:?}");
    assert_eq!(shown[..2], [service.clone(), timer.clone()], "the page shows both units exactly as shipped");
    // The drop-in gives the server the command the page's scratch server runs.
    let drop_in = shown[2].clone();
    let command = drop_in.lines().last().unwrap().strip_prefix("ExecStart=/usr/local/bin/alp ").unwrap();
    let scratch = &shell_blocks(DOC)[0].text;
    assert!(scratch.contains(&format!("\nalp {command} 2>> ~/serve.log &\n")), "{command}\n{scratch}");
    let install =
        fenced(DOC, "shell").into_iter().find(|b| b.text.contains("alp-memory-archive.timer")).unwrap();
    assert!(install.text.starts_with(
        "install -m 0644 examples/deploy/alp-memory-archive.service examples/deploy/alp-memory-archive.timer \
         /etc/systemd/system/\n"
    ));

    let alp = Path::new(env!("CARGO_BIN_EXE_alp")).canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    if available("systemd-analyze") {
        let units = dir.join("units");
        std::fs::create_dir(&units).unwrap();
        let here_alp = |unit: &str| unit.replace("/usr/local/bin/alp", &alp.display().to_string());
        std::fs::write(units.join("alp-memory-archive.service"), here_alp(&service)).unwrap();
        std::fs::write(units.join("alp-memory-archive.timer"), &timer).unwrap();
        let server = std::fs::read_to_string(deploy.join("alp-memory.service")).unwrap();
        std::fs::write(units.join("alp-memory.service"), here_alp(&server)).unwrap();
        std::fs::create_dir(units.join("alp-memory.service.d")).unwrap();
        std::fs::write(units.join("alp-memory.service.d/allowed-host.conf"), here_alp(&drop_in)).unwrap();
        let verified = Command::new("systemd-analyze")
            .arg("verify")
            .arg(units.join("alp-memory-archive.service"))
            .arg(units.join("alp-memory-archive.timer"))
            .arg(units.join("alp-memory.service"))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&verified.stderr);
        assert!(verified.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
    } else {
        assert!(!ci(), "CI=true and systemd-analyze is missing");
        eprintln!("NOTICE: systemd-analyze is missing: the archive units are only parsed");
    }

    // The unit's environment and commands, its /var/lib under the temporary directory.
    let var_lib = dir.join("var-lib");
    let moved = |v: &str| v.replace("/var/lib/", &format!("{}/", var_lib.display()));
    let lines = unit_lines(&service);
    let value = |key: &str| -> Vec<String> {
        lines.iter().filter(|(k, _)| k == key).map(|(_, v)| moved(v)).collect()
    };
    assert_eq!(value("Type"), ["oneshot"]);
    assert_eq!(value("User"), ["alp-memory"]);
    for state in value("StateDirectory")[0].split(' ') {
        std::fs::create_dir_all(var_lib.join(state)).unwrap();
    }
    let environment: Vec<(String, String)> = value("Environment")
        .iter()
        .map(|e| e.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).unwrap())
        .collect();
    let run = |command: &str| -> String {
        let words: Vec<&str> = command.split(' ').collect();
        assert_eq!(words[0], "/usr/local/bin/alp", "{command}");
        let output = crate::cli::alp_command(&dir)
            .args(&words[1..])
            .envs(environment.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    // A live root with a few records, as the server leaves it.
    let unit_alp = "/usr/local/bin/alp";
    run(&format!("{unit_alp} init --role dev"));
    run(&format!("{unit_alp} --as dev memory create project:web:db --content x"));
    run(&format!("{unit_alp} --as dev memory get project:web:db"));

    let [start] = value("ExecStart").try_into().unwrap();
    let [post] = value("ExecStartPost").try_into().unwrap();
    let archived = run(&start);
    // Every record but the last (the get) moves.
    let segment = var_lib.join("alp-memory-archive/audit-1-1.jsonl");
    assert!(archived.starts_with(&format!("archived 1 record to `{}`", segment.display())), "{archived}");
    let anchor = archived.split("--from ").nth(1).unwrap().split('`').next().unwrap().to_owned();
    let head = run(&post);
    assert!(head.trim().starts_with("3:"), "the archive record is the head: {head}");
    let verified = run(&format!("{unit_alp} --json audit verify --from {anchor} --expect {}", head.trim()));
    let verified: Value = serde_json::from_str(&verified).unwrap();
    assert_eq!((verified["ok"].as_bool(), verified["records"].as_u64()), (Some(true), Some(2)), "{verified}");
    let alone = run(&format!("{unit_alp} --json audit verify --file {}", segment.display()));
    assert!(alone.contains("\"ok\":true"), "{alone}");
    // The next day's run moves the get, and keeps its own archive record as the head.
    let again = run(&start);
    let next = var_lib.join("alp-memory-archive/audit-2-2.jsonl");
    assert!(again.starts_with(&format!("archived 1 record to `{}`", next.display())), "{again}");
}

/// What the page says of a copy taken while the server writes: every write is answered as usual; each copy exits 0
/// with a chain that is the live log's own up to some record (its lines are the first lines of the live log, byte
/// for byte); and every entry in a copy has the record of its create in that copy's log. Three copies of a root
/// while one client writes through `alp serve` without pause.
#[test]
fn a_copy_taken_while_the_server_writes_holds_what_the_page_says() {
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::serve::{Serve, token};

    let env = crate::cli::Env::new();
    let (_, secret) = token(&env, "main", &[]);
    let server = Serve::start(&env);
    let stop = AtomicBool::new(false);
    let copies: Vec<PathBuf> = (0..3).map(|k| env.dir.path().join(format!("copy-{k}"))).collect();
    let (written, during) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut written = 0;
            while !stop.load(Ordering::Relaxed) && written < 2_000 {
                let body = serde_json::json!({
                    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": { "name": "memory_create",
                                "arguments": { "id": format!("shared:team:n{written}"), "content": "x" } },
                })
                .to_string();
                let (status, _, text) = server.post(Some(&secret), "", &body);
                assert_eq!(status, 200, "{text}");
                assert!(text.contains("\"isError\":false"), "{text}");
                written += 1;
            }
            written
        });
        // Some writes first, so that every copy has entries to read while more arrive.
        while env.audit_lines().len() < 20 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut during = Vec::new();
        for copy in &copies {
            let before = env.audit_lines().len();
            let run = env.run(&["--json", "store", "copy", "--to", copy.to_str().unwrap()], None);
            assert_eq!(run.status, 0, "{run:?}");
            during.push(env.audit_lines().len() - before);
        }
        stop.store(true, Ordering::Relaxed);
        (writer.join().unwrap(), during)
    });
    assert_eq!(server.terminate().code(), Some(0));
    eprintln!("{written} creates through the server; records written while each copy ran: {during:?}");
    assert!(during.iter().any(|&n| n > 0), "the writes went on while the copies ran: {during:?}");

    let live = std::fs::read_to_string(env.root().join("audit.jsonl")).unwrap();
    for copy in &copies {
        let log = std::fs::read_to_string(copy.join("audit.jsonl")).unwrap();
        assert!(!log.is_empty() && live.starts_with(&log), "{} is a prefix of the live log", copy.display());
        let created: std::collections::BTreeSet<String> = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["door"] == "create")
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect();
        let entries: Vec<String> = std::fs::read_dir(copy.join("shared/team"))
            .unwrap()
            .map(|e| {
                format!("shared:team:{}", e.unwrap().file_name().to_string_lossy().trim_end_matches(".md"))
            })
            .collect();
        assert!(!entries.is_empty());
        for id in &entries {
            assert!(created.contains(id), "{id} is in {} without its record", copy.display());
        }
        eprintln!("{}: {} entries, {} create records", copy.display(), entries.len(), created.len());
    }
}

/// Every relative link of the page names a file of the repository, and a section of it that exists.
#[test]
fn the_page_links_to_files_and_sections_that_exist() {
    let text = std::fs::read_to_string(repo().join(DOC)).unwrap();
    let mut links = 0;
    for (at, _) in text.match_indices("](") {
        let target = &text[at + 2..];
        let target = &target[..target.find(')').unwrap()];
        if target.starts_with("http") {
            continue;
        }
        let (file, section) = target.split_once('#').map_or((target, None), |(f, s)| (f, Some(s)));
        let path = repo().join("docs").join(file);
        let linked = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{DOC} links to {file}: {e}"));
        if let Some(section) = section {
            assert!(anchors(&linked).iter().any(|a| a == section), "no section #{section} in {file}");
        }
        links += 1;
    }
    assert!(links >= 4, "the page links to the units and the CLI reference: {links}");
}
