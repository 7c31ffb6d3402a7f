//! A throwaway PostgreSQL cluster for tests, and a database of its own for each test.
//!
//! **The cluster** ([`Cluster`], std only): `initdb` into a fresh 0700 temporary directory, listening only on a Unix
//! socket inside that directory (no TCP), `trust` authentication, `pg_trgm` created in `template1` so every new
//! database has it, started with `pg_ctl`. The binaries are found on `PATH` or under
//! `/usr/lib/postgresql/<version>/bin` ([`find_bin_dir`]; `ALP_PG_BIN_DIR` overrides). `initdb` and the server refuse
//! to run as root, so when the process runs as root they run as the `postgres` user (`ALP_PG_USER` overrides),
//! through `CommandExt::uid/gid`, and the directory is chowned to it.
//!
//! A cluster never outlives its owner, whichever way the owner ends:
//! 1. [`Cluster::stop`] and `Drop` (a normal end, a failed test, a panic that unwinds): `pg_ctl stop -m immediate`,
//!    then the directory is removed;
//! 2. a *watchdog* (`sh`, in its own process group, running as the cluster's user) blocks reading a pipe whose only
//!    write end this process holds; when this process exits for any reason, even `SIGKILL` or `panic = "abort"`, the
//!    pipe reaches EOF and the watchdog runs `pg_ctl stop -m immediate` and removes the directory;
//! 3. the server and the watchdog are outside the terminal's foreground process group (pg_ctl `setsid`s the
//!    postmaster), so a Ctrl-C reaches the tests but not them: whoever owns the cluster stops it cleanly.
//!
//! **A database per test** ([`test_database`]): a fresh database on the cluster named by
//! `ALP_TEST_DATABASE_URL` (which `cargo xtask test` sets), dropped when the guard drops. Without the variable the
//! test is skipped with a notice on stderr; with `ALP_REQUIRE_POSTGRES=1` (CI) a missing or unusable cluster fails
//! the test instead.
//!
//! ```no_run
//! # fn example() {
//! let Some(db) = testkit::pg::test_database() else { return }; // skipped, with a notice
//! let mut client = db.connect().unwrap();
//! client.batch_execute("CREATE TABLE t (x int)").unwrap();
//! # }
//! ```

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The variable naming a running cluster's admin URL (set by `cargo xtask test`, or by hand).
pub const URL_VAR: &str = "ALP_TEST_DATABASE_URL";

/// When this variable is `1`, a missing or unusable cluster fails a test instead of skipping it (CI sets it).
pub const REQUIRE_VAR: &str = "ALP_REQUIRE_POSTGRES";

/// Longest path to the socket *file* (`<dir>/.s.PGSQL.<port>`) that fits `sockaddr_un.sun_path` (108 bytes with NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Whether `ALP_REQUIRE_POSTGRES=1`.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// The admin URL in `ALP_TEST_DATABASE_URL`, when it is set and not empty.
pub fn admin_url() -> Option<String> {
    std::env::var(URL_VAR).ok().filter(|url| !url.is_empty())
}

/// Prints, once per process, that PostgreSQL tests are skipped and why. Written straight to the stderr handle: the
/// test harness's capture covers only `print!`/`eprint!`, so the notice shows in a plain `cargo test` run.
pub fn skip_notice(why: &str) {
    static PRINTED: AtomicBool = AtomicBool::new(false);
    if !PRINTED.swap(true, Ordering::Relaxed) {
        let _ = writeln!(
            io::stderr(),
            "note: {why}; skipping the PostgreSQL tests (run `cargo xtask test` to include them)"
        );
    }
}

/// How the server is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// `-m fast`: roll back open transactions, disconnect clients, checkpoint.
    Fast,
    /// `-m immediate`: no checkpoint (crash recovery on the next start): what a crash or power loss looks like.
    Immediate,
}

/// Options for [`Cluster::start_with`].
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Parent of the temporary directory (default: `std::env::temp_dir()`, or `/tmp` when the socket path would not
    /// fit).
    pub parent: Option<PathBuf>,
    /// Extra `postgresql.conf` lines.
    pub extra_conf: Vec<String>,
    /// Extensions created in `template1`, so every `CREATE DATABASE` inherits them (default: `pg_trgm`).
    pub template_extensions: Vec<String>,
    /// Keep the directory (data and `server.log`) after stopping, for debugging (default: `ALP_PG_KEEP` is set).
    pub keep: bool,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            parent: None,
            extra_conf: Vec::new(),
            template_extensions: vec!["pg_trgm".to_owned()],
            keep: std::env::var_os("ALP_PG_KEEP").is_some(),
        }
    }
}

/// A running throwaway cluster. Dropping it stops the server and removes its directory.
#[derive(Debug)]
pub struct Cluster {
    bin_dir: PathBuf,
    base: PathBuf,
    data: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    run_as: Option<(u32, u32)>,
    watchdog: Option<(Child, ChildStdin)>,
    running: bool,
    keep: bool,
    url: String,
}

impl Cluster {
    /// Creates and starts a cluster with the default options.
    ///
    /// # Errors
    ///
    /// When the binaries are missing ([`find_bin_dir`]), `initdb` or `pg_ctl` fail, or the directory cannot be made.
    pub fn start() -> io::Result<Cluster> {
        Cluster::start_with(&ClusterOptions::default())
    }

    /// Creates and starts a cluster.
    ///
    /// # Errors
    ///
    /// As [`Cluster::start`].
    pub fn start_with(options: &ClusterOptions) -> io::Result<Cluster> {
        let bin_dir = find_bin_dir()?;
        let run_as = if effective_uid()? == 0 { Some(lookup_user(&pg_user())?) } else { None };
        let port = 5432;
        let base = make_base_dir(options.parent.as_deref(), port)?;
        let mut cluster = Cluster {
            data: base.join("data"),
            socket_dir: base.join("sock"),
            url: String::new(),
            bin_dir,
            base,
            port,
            run_as,
            watchdog: None,
            running: false,
            keep: options.keep,
        };
        // From here on, Drop cleans up whatever exists.
        cluster.init(options)?;
        Ok(cluster)
    }

    fn init(&mut self, options: &ClusterOptions) -> io::Result<()> {
        fs::create_dir(&self.socket_dir)?;
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(&self.base, Some(uid), Some(gid))?;
            std::os::unix::fs::chown(&self.socket_dir, Some(uid), Some(gid))?;
        }
        self.watchdog = Some(self.spawn_watchdog()?);

        let initdb = self
            .command("initdb")
            .arg("-D")
            .arg(&self.data)
            .args(["-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"])
            .output()?;
        check_output("initdb", &initdb)?;

        let mut conf = fs::OpenOptions::new().append(true).open(self.data.join("postgresql.conf"))?;
        let mut lines = vec![
            "listen_addresses = ''".to_owned(),
            format!("unix_socket_directories = '{}'", conf_quote(&self.socket_dir)),
            format!("port = {}", self.port),
            // A throwaway cluster: durability is irrelevant, speed is not.
            "fsync = off".to_owned(),
            "synchronous_commit = off".to_owned(),
            "full_page_writes = off".to_owned(),
            "max_connections = 200".to_owned(),
            "shared_buffers = 128MB".to_owned(),
        ];
        lines.extend(options.extra_conf.iter().cloned());
        writeln!(conf, "\n# alp-memory test cluster\n{}", lines.join("\n"))?;
        drop(conf);

        self.pg_ctl_start()?;
        self.url = format!(
            "postgresql://postgres@{}:{}/postgres?connect_timeout=5",
            percent_encode(self.socket_dir.as_os_str()),
            self.port
        );
        for ext in &options.template_extensions {
            self.psql("template1", &format!("CREATE EXTENSION IF NOT EXISTS {}", quote_ident(ext)))?;
        }
        Ok(())
    }

    /// The admin URL: `postgresql://postgres@%2Ftmp%2F…%2Fsock:5432/postgres?connect_timeout=5` (the socket
    /// directory percent-encoded as the host).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The directory holding the server's socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The data directory (`server.log` lives beside it).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// Whether the server is running (as far as this handle knows).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Stops the server; does nothing when it is stopped. The directory stays until drop.
    ///
    /// # Errors
    ///
    /// When `pg_ctl stop` fails.
    pub fn stop(&mut self, mode: StopMode) -> io::Result<()> {
        if !self.running {
            return Ok(());
        }
        let m = match mode {
            StopMode::Fast => "fast",
            StopMode::Immediate => "immediate",
        };
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", m, "-w", "-t", "30", "stop"])
            .output()?;
        check_output("pg_ctl stop", &out)?;
        self.running = false;
        Ok(())
    }

    /// Starts the server again on the same data directory (after [`Cluster::stop`]); does nothing when it runs.
    ///
    /// # Errors
    ///
    /// When `pg_ctl start` fails (its message then holds `server.log`).
    pub fn restart(&mut self) -> io::Result<()> {
        if self.running {
            return Ok(());
        }
        self.pg_ctl_start()
    }

    fn pg_ctl_start(&mut self) -> io::Result<()> {
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.base.join("server.log"))
            .args(["-w", "-t", "60", "start"])
            // The postmaster inherits this group: a terminal Ctrl-C must not kill it behind its owner's back.
            .process_group(0)
            .output()?;
        if let Err(e) = check_output("pg_ctl start", &out) {
            let log = fs::read_to_string(self.base.join("server.log")).unwrap_or_default();
            return Err(io::Error::other(format!("{e}\nserver.log:\n{log}")));
        }
        self.running = true;
        Ok(())
    }

    /// Runs one SQL command with `psql` (setup, before any Rust client exists).
    fn psql(&self, db: &str, sql: &str) -> io::Result<()> {
        let psql = self.bin_dir.join("psql");
        let psql = if psql.exists() { psql } else { PathBuf::from("psql") };
        let out = Command::new(psql)
            .arg("-X")
            .args(["-v", "ON_ERROR_STOP=1", "-q", "-h"])
            .arg(&self.socket_dir)
            .args(["-p", &self.port.to_string(), "-U", "postgres", "-d", db, "-c", sql])
            .stdin(Stdio::null())
            .output()?;
        check_output("psql", &out)
    }

    /// A `Command` for a PostgreSQL binary, run as the cluster's user.
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir.join(program));
        // initdb and the server change directories; the caller's may not be readable by the postgres user.
        cmd.current_dir(&self.base).env("LC_ALL", "C.UTF-8").env_remove("PGDATA").stdin(Stdio::null());
        if let Some((uid, gid)) = self.run_as {
            // std drops supplementary groups (setgroups(0)) when root sets a uid.
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    /// `sh` that blocks on a pipe only this process can write to, and cleans up at EOF (this process is gone,
    /// however that happened).
    fn spawn_watchdog(&self) -> io::Result<(Child, ChildStdin)> {
        let script = r#"cat >/dev/null 2>&1
if [ -f "$1/postmaster.pid" ]; then "$0" -D "$1" -m immediate -w -t 30 stop >/dev/null 2>&1; fi
[ -n "$3" ] || rm -rf "$2""#;
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(script)
            .arg(self.bin_dir.join("pg_ctl"))
            .arg(&self.data)
            .arg(&self.base)
            .arg(if self.keep { "keep" } else { "" })
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: the terminal's Ctrl-C must not kill the watchdog before it has done its job.
            .process_group(0);
        if let Some((uid, gid)) = self.run_as {
            cmd.uid(uid).gid(gid);
        }
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take().ok_or_else(|| io::Error::other("the watchdog has no stdin"))?;
        Ok((child, stdin))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Immediate: the data is thrown away, so the shutdown checkpoint would be wasted time.
        if self.running && self.stop(StopMode::Immediate).is_err() {
            let _ = self.stop(StopMode::Fast);
        }
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin); // EOF: the watchdog finds no postmaster.pid and removes the directory
            let _ = child.wait();
        }
        if !self.keep {
            let _ = fs::remove_dir_all(&self.base);
        }
    }
}

/// A private cluster for a test that must stop and restart its server, with `extra_conf` lines in its
/// `postgresql.conf` (the defaults trade durability for speed: `synchronous_commit = on` makes a commit survive
/// the server's crash). Started under the same rules as [`test_database`]: only when PostgreSQL tests are wanted
/// (`ALP_TEST_DATABASE_URL` is set, as under `cargo xtask test`, or `ALP_REQUIRE_POSTGRES=1`); otherwise `None`,
/// with the notice.
///
/// # Panics
///
/// When the cluster cannot be started although PostgreSQL tests are wanted: that is a broken setup.
pub fn private_cluster(extra_conf: &[&str]) -> Option<Cluster> {
    if admin_url().is_none() && !required() {
        skip_notice(&format!("{URL_VAR} is not set"));
        return None;
    }
    let options = ClusterOptions {
        extra_conf: extra_conf.iter().map(|line| (*line).to_owned()).collect(),
        ..ClusterOptions::default()
    };
    match Cluster::start_with(&options) {
        Ok(cluster) => Some(cluster),
        Err(e) => panic!("cannot start a private PostgreSQL cluster: {e}"),
    }
}

fn check_output(what: &str, out: &std::process::Output) -> io::Result<()> {
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

/// The directory of the server binaries: `ALP_PG_BIN_DIR`, else the directory of `initdb` found on `PATH`
/// (symlinks resolved, so `pg_ctl` and `postgres` come from the same installation), else the newest
/// `/usr/lib/postgresql/<N>/bin`.
///
/// # Errors
///
/// [`io::ErrorKind::NotFound`] naming the package to install.
pub fn find_bin_dir() -> io::Result<PathBuf> {
    let has_tools = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("ALP_PG_BIN_DIR") {
        let dir = PathBuf::from(dir);
        return if has_tools(&dir) {
            Ok(dir)
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("ALP_PG_BIN_DIR={} has no initdb and pg_ctl", dir.display()),
            ))
        };
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let initdb = dir.join("initdb");
            if initdb.is_file() {
                if let Some(real) =
                    fs::canonicalize(&initdb).ok().and_then(|p| p.parent().map(Path::to_path_buf))
                    && has_tools(&real)
                {
                    return Ok(real);
                }
                if has_tools(&dir) {
                    return Ok(dir);
                }
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has_tools(&bin).then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin; install \
             them (Debian: apt-get install postgresql) or set ALP_PG_BIN_DIR",
        )
    })
}

fn pg_user() -> String {
    std::env::var("ALP_PG_USER").unwrap_or_else(|_| "postgres".to_owned())
}

/// The effective uid without libc: `/proc/self` belongs to the process's effective uid.
fn effective_uid() -> io::Result<u32> {
    match fs::metadata("/proc/self") {
        Ok(m) => Ok(m.uid()),
        Err(_) => id(&["-u"]),
    }
}

/// (uid, gid) of a user, through `id` so that NSS is honoured.
fn lookup_user(user: &str) -> io::Result<(u32, u32)> {
    let uid = id(&["-u", user]).map_err(|e| {
        io::Error::other(format!("running as root, the cluster runs as user `{user}`, which is missing: {e}"))
    })?;
    Ok((uid, id(&["-g", user])?))
}

fn id(args: &[&str]) -> io::Result<u32> {
    let out = Command::new("id").args(args).output()?;
    check_output("id", &out)?;
    String::from_utf8_lossy(&out.stdout).trim().parse().map_err(io::Error::other)
}

/// Creates `<parent>/alp-pg-<pid>-<n>-<rand>` (mode 0700), choosing `/tmp` when the socket path would not fit.
fn make_base_dir(parent: Option<&Path>, port: u16) -> io::Result<PathBuf> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let mut parent = parent.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    let name = |n: u32| {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        format!("alp-pg-{}-{n}-{:x}", std::process::id(), nanos & 0xfffff)
    };
    let socket_len =
        |p: &Path| p.join(name(0)).join("sock").join(format!(".s.PGSQL.{port}")).as_os_str().len();
    if socket_len(&parent) > MAX_SOCKET_PATH {
        parent = PathBuf::from("/tmp");
    }
    if socket_len(&parent) > MAX_SOCKET_PATH {
        return Err(io::Error::other("the socket path is too long even under /tmp"));
    }
    let started = Instant::now();
    loop {
        let dir = parent.join(name(COUNTER.fetch_add(1, Ordering::Relaxed)));
        match fs::create_dir(&dir) {
            Ok(()) => {
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
                return Ok(dir);
            }
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists && started.elapsed() < Duration::from_secs(1) => {
            }
            Err(e) => return Err(e),
        }
    }
}

/// Quotes a path for a single-quoted `postgresql.conf` value.
fn conf_quote(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "\\\\").replace('\'', "''")
}

/// Percent-encodes everything but RFC 3986 unreserved characters (so `/` becomes `%2F`): a socket directory as the
/// host of a URL.
pub fn percent_encode(s: &OsStr) -> String {
    let mut out = String::new();
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `"name"` with embedded quotes doubled: an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Replaces the database of a URL (`scheme://authority/DB?params`), or appends `dbname='…'` to a key-value string.
pub fn with_dbname(url: &str, db: &str) -> String {
    let Some(rest_at) = url.find("://").map(|i| i + 3) else {
        return format!("{url} dbname='{}'", db.replace('\\', "\\\\").replace('\'', "\\'"));
    };
    let (head, query) = match url[rest_at..].find('?') {
        Some(q) => url.split_at(rest_at + q),
        None => (url, ""),
    };
    let authority_end = head[rest_at..].find('/').map_or(head.len(), |i| rest_at + i);
    format!("{}/{}{}", &head[..authority_end], percent_encode(db.as_ref()), query)
}

/// Appends `key=value` to the parameters of a URL (`?` or `&`), or ` key=value` to a key-value string.
pub fn with_param(url: &str, key: &str, value: &str) -> String {
    if !url.contains("://") {
        return format!("{url} {key}={value}");
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{key}={value}")
}

/// The process ids of the server backends serving connections named `application` (`application_name`), found
/// through a connection of its own to `url`.
///
/// # Errors
///
/// When `url` cannot be reached.
pub fn backend_pids(url: &str, application: &str) -> Result<Vec<i32>, postgres::Error> {
    let mut client = parse_config(url)?.connect(postgres::NoTls)?;
    let rows = client.query(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() ORDER BY pid",
        &[&application],
    )?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// A server process stopped with `SIGSTOP` (a backend that stops answering), continued with `SIGCONT` when the
/// guard drops, so a failing test never leaves it stopped.
#[derive(Debug)]
pub struct Stopped {
    pid: i32,
}

impl Stopped {
    /// Stops process `pid`.
    ///
    /// # Errors
    ///
    /// When `kill -STOP` fails.
    pub fn new(pid: i32) -> io::Result<Stopped> {
        signal("STOP", pid)?;
        Ok(Stopped { pid })
    }

    /// The stopped process.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Continues the process now.
    pub fn resume(self) {}
}

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Err(e) = signal("CONT", self.pid) {
            eprintln!("cannot continue process {}: {e}", self.pid);
        }
    }
}

/// Sends `SIG<name>` to `pid` with `kill(1)`.
fn signal(name: &str, pid: i32) -> io::Result<()> {
    let status = Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status()?;
    if status.success() { Ok(()) } else { Err(io::Error::other(format!("kill -{name} {pid}: {status}"))) }
}

pub use database::{TestDb, parse_config, test_database};

mod database {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::{URL_VAR, admin_url, quote_ident, required, skip_notice, with_dbname};

    /// A fresh database, dropped (`WITH (FORCE)`, best effort) when the guard drops; `ALP_TEST_KEEP_DB=1` keeps it.
    #[derive(Debug)]
    pub struct TestDb {
        admin: postgres::Config,
        config: postgres::Config,
        url: String,
        name: String,
    }

    impl TestDb {
        /// The database's URL (the admin URL with its database replaced).
        pub fn url(&self) -> &str {
            &self.url
        }

        /// The database's name.
        pub fn name(&self) -> &str {
            &self.name
        }

        /// The parsed configuration (connect timeout 5 s unless the URL says otherwise).
        pub fn config(&self) -> &postgres::Config {
            &self.config
        }

        /// A new connection to this database.
        ///
        /// # Errors
        ///
        /// When the server cannot be reached.
        pub fn connect(&self) -> Result<postgres::Client, postgres::Error> {
            self.config.connect(postgres::NoTls)
        }
    }

    impl Drop for TestDb {
        fn drop(&mut self) {
            if std::env::var_os("ALP_TEST_KEEP_DB").is_some() {
                return;
            }
            if let Ok(mut admin) = self.admin.connect(postgres::NoTls) {
                let _ = admin.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    quote_ident(&self.name)
                ));
            }
        }
    }

    /// A fresh, uniquely named database on the cluster in `ALP_TEST_DATABASE_URL` (created from `template1`, so it
    /// has `pg_trgm` when the cluster came from [`Cluster`](super::Cluster)).
    ///
    /// Without the variable: prints a notice once and returns `None`.
    ///
    /// # Panics
    ///
    /// Without the variable when `ALP_REQUIRE_POSTGRES=1`, and whenever the variable is set but the database cannot
    /// be created (a bad URL, a server that is down): that is a broken setup, not a reason to skip.
    pub fn test_database() -> Option<TestDb> {
        let Some(admin_url) = admin_url() else {
            if required() {
                panic!(
                    "{URL_VAR} is not set but ALP_REQUIRE_POSTGRES=1: run the tests through `cargo xtask test`"
                );
            }
            skip_notice(&format!("{URL_VAR} is not set"));
            return None;
        };
        match create(&admin_url) {
            Ok(db) => Some(db),
            Err(e) => panic!("{URL_VAR} is set but no test database can be created on it: {e}"),
        }
    }

    /// Parses a URL or key-value string, with a connect timeout of 5 s unless it names one.
    ///
    /// # Errors
    ///
    /// When `url` does not parse.
    pub fn parse_config(url: &str) -> Result<postgres::Config, postgres::Error> {
        let mut config: postgres::Config = url.parse()?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(5));
        }
        Ok(config)
    }

    fn create(admin_url: &str) -> Result<TestDb, Box<dyn std::error::Error>> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let admin = parse_config(admin_url)?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        // The thread is named after the test under libtest: a leftover database says where it came from. An
        // identifier holds at most 63 bytes.
        let thread = std::thread::current()
            .name()
            .unwrap_or("t")
            .rsplit("::")
            .next()
            .unwrap_or("t")
            .to_ascii_lowercase();
        let slug: String =
            thread.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).take(30).collect();
        let name = format!(
            "alp_t_{}_{}_{:05x}_{slug}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            nanos & 0xfffff
        );
        let mut client = admin.connect(postgres::NoTls)?;
        client.batch_execute(&format!("CREATE DATABASE {}", quote_ident(&name)))?;
        let mut config = admin.clone();
        config.dbname(&name);
        Ok(TestDb { url: with_dbname(admin_url, &name), admin, config, name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_dbname_replaces_the_database_and_keeps_the_parameters() {
        for (url, expected) in [
            ("postgresql://u@%2Ftmp%2Fs:5432/postgres?x=1", "postgresql://u@%2Ftmp%2Fs:5432/d?x=1"),
            ("postgresql://u@%2Ftmp%2Fs", "postgresql://u@%2Ftmp%2Fs/d"),
            ("postgresql:///postgres?host=/tmp/s", "postgresql:///d?host=/tmp/s"),
            ("host=/tmp/s user=postgres", "host=/tmp/s user=postgres dbname='d'"),
        ] {
            assert_eq!(with_dbname(url, "d"), expected, "{url}");
        }
    }

    #[test]
    fn percent_encode_leaves_only_unreserved_characters() {
        assert_eq!(percent_encode(OsStr::new("/tmp/a b:c")), "%2Ftmp%2Fa%20b%3Ac");
    }
}
