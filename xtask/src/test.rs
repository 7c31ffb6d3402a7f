//! `cargo xtask test [-- ARGS…]`: the test suite with a real PostgreSQL.
//!
//! A test binary has no global teardown, so the cluster lives here, around the whole run: start a throwaway cluster
//! (`testkit::pg::Cluster`), run `cargo test --workspace ARGS…` with `ALP_TEST_DATABASE_URL` naming it, stop it,
//! exit with the tests' status. Ctrl-C, SIGTERM and SIGHUP are caught: forwarded to `cargo test` (SIGKILL after a
//! grace period), then the cluster is stopped; a `SIGKILL` of this process is covered by the cluster's watchdog.
//!
//! - `ALP_TEST_DATABASE_URL` already set: the tests just run against that cluster.
//! - No PostgreSQL server binaries: with `ALP_REQUIRE_POSTGRES=1` this fails, naming what to install; otherwise the
//!   tests run without a cluster and the PostgreSQL ones skip with a notice.
//! - ARGS are passed to `cargo test` as they are; `--workspace` is added unless they choose packages (`-p`).
//! - After the per-crate blocks, one overall line adds up every `test result:` line: `N passed, M failed` (and
//!   `, K skipped` when tests were ignored, as the PostgreSQL ones are without a cluster).

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
use testkit::pg::{Cluster, REQUIRE_VAR, StopMode, URL_VAR, find_bin_dir, required};

/// The last signal received (0: none). A signal only sets this; the loop below acts on it.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// How long `cargo test` gets to end after a forwarded signal before it is killed.
const GRACE: Duration = Duration::from_secs(10);

/// Runs the tests; the exit code is theirs (128 + N when they or this process ended by signal N).
pub(crate) fn run(args: &[String]) -> ExitCode {
    match run_tests(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("xtask test: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_tests(args: &[String]) -> Result<ExitCode, String> {
    let args = match args.split_first() {
        Some((first, rest)) if first == "--" => rest,
        _ => args,
    };
    // Registered before anything can be left behind; a signal only sets the flag.
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(sig, &SIGNAL, sig as usize)
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }

    if testkit::pg::admin_url().is_some() {
        eprintln!("xtask test: {URL_VAR} is set; running the tests against that cluster");
        return wait_for(cargo_test(args, None)?);
    }
    if let Err(e) = find_bin_dir() {
        if required() {
            return Err(format!("{REQUIRE_VAR}=1 but PostgreSQL cannot run here: {e}"));
        }
        eprintln!("xtask test: {e}; running the tests without PostgreSQL (they skip)");
        return wait_for(cargo_test(args, None)?);
    }

    let started = Instant::now();
    let mut cluster = match Cluster::start() {
        Ok(cluster) => cluster,
        Err(_) if interrupted().is_some() => return Ok(ExitCode::from(130)),
        Err(e) => return Err(format!("cannot start a PostgreSQL cluster: {e}")),
    };
    eprintln!("xtask test: PostgreSQL up in {:.1} s at {}", started.elapsed().as_secs_f64(), cluster.url());
    if interrupted().is_some() {
        return Ok(ExitCode::from(130)); // interrupted while starting; dropping the cluster stops it
    }
    let result = cargo_test(args, Some(cluster.url())).and_then(wait_for);
    let stopping = Instant::now();
    match cluster.stop(StopMode::Immediate) {
        Ok(()) => {
            eprintln!("xtask test: PostgreSQL stopped in {:.1} s", stopping.elapsed().as_secs_f64());
        }
        Err(e) => eprintln!("xtask test: stopping PostgreSQL: {e}"),
    }
    drop(cluster);
    result
}

fn interrupted() -> Option<usize> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&sig| sig != 0)
}

/// Whether the arguments choose packages themselves (then `--workspace` would override them).
fn chooses_packages(args: &[String]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|a| {
        a == "-p" || a == "--package" || a.starts_with("--package=") || (a.starts_with("-p") && a.len() > 2)
    })
}

/// Starts `cargo test` in the workspace root.
fn cargo_test(args: &[String], url: Option<&str>) -> Result<std::process::Child, String> {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.arg("test").current_dir(crate::root());
    if !chooses_packages(args) {
        command.arg("--workspace");
    }
    command.args(args).stdout(std::process::Stdio::piped());
    if let Some(url) = url {
        command.env(URL_VAR, url);
    }
    eprintln!(
        "+ {}cargo test{} {}",
        url.map(|_| format!("{URL_VAR}=… ")).unwrap_or_default(),
        if chooses_packages(args) { "" } else { " --workspace" },
        args.join(" ")
    );
    command.spawn().map_err(|e| format!("cannot run cargo test: {e}"))
}

/// Waits for `cargo test`, forwarding the first signal this process gets (a terminal's Ctrl-C already reached it,
/// being in the same process group; a supervisor's SIGTERM reached only us), and killing it after [`GRACE`].
fn wait_for(mut child: std::process::Child) -> Result<ExitCode, String> {
    // The tests' stdout passes through line by line, counted on the way.
    let reader = child.stdout.take().map(|stdout| {
        std::thread::spawn(move || {
            use std::io::{BufRead as _, Write as _};
            let mut totals = Totals::default();
            let mut out = std::io::stdout().lock();
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                totals.add(&line);
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
            totals
        })
    });
    let mut forwarded: Option<Instant> = None;
    let status: ExitStatus = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for cargo test: {e}")),
        }
        match (interrupted(), forwarded) {
            (Some(sig), None) => {
                let signal = match i32::try_from(sig) {
                    Ok(SIGINT) => Signal::INT,
                    Ok(SIGHUP) => Signal::HUP,
                    _ => Signal::TERM,
                };
                let _ = kill_process(Pid::from_child(&child), signal);
                eprintln!("xtask test: signal {sig}: stopping the tests, then PostgreSQL");
                forwarded = Some(Instant::now());
            }
            (Some(_), Some(at)) if at.elapsed() > GRACE => {
                let _ = child.kill();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(totals) = reader.and_then(|reader| reader.join().ok()) {
        println!("{}", totals.summary());
    }
    let code = match (status.code(), interrupted()) {
        (Some(code), None) => u8::try_from(code).unwrap_or(1),
        (Some(_), Some(sig)) => signal_code(sig),
        (None, _) => status.signal().map_or(1, |sig| signal_code(usize::try_from(sig).unwrap_or(1))),
    };
    Ok(ExitCode::from(code))
}

/// The tests counted over every `test result:` line of a `cargo test` run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Totals {
    passed: u64,
    failed: u64,
    /// Ignored tests (`#[ignore]`, or skipped at run time by marking them so).
    skipped: u64,
}

impl Totals {
    /// Adds a line of `cargo test`'s output when it is a `test result:` line
    /// (`test result: ok. 8 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s`).
    fn add(&mut self, line: &str) {
        let Some(rest) = line.trim_start().strip_prefix("test result: ") else { return };
        let Some((_, counts)) = rest.split_once(". ") else { return };
        for part in counts.split(';') {
            let Some((number, word)) = part.trim().split_once(' ') else { continue };
            let Ok(number) = number.parse::<u64>() else { continue };
            match word {
                "passed" => self.passed += number,
                "failed" => self.failed += number,
                "ignored" => self.skipped += number,
                _ => {}
            }
        }
    }

    /// `N passed, M failed`, with `, K skipped` when any were.
    fn summary(&self) -> String {
        let mut text = format!("{} passed, {} failed", self.passed, self.failed);
        if self.skipped > 0 {
            text.push_str(&format!(", {} skipped", self.skipped));
        }
        text
    }
}

/// 128 + the signal number, as shells report a death by signal.
fn signal_code(sig: usize) -> u8 {
    u8::try_from(128 + sig.min(127)).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_selection_is_recognised_before_the_test_binary_arguments() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(chooses_packages(&args(&["-p", "memory-postgres"])));
        assert!(chooses_packages(&args(&["-pmemory-postgres"])));
        assert!(chooses_packages(&args(&["--package=memory-postgres", "--", "--nocapture"])));
        assert!(!chooses_packages(&args(&["--release", "--", "-p"])));
        assert!(!chooses_packages(&args(&[])));
    }

    #[test]
    fn test_result_lines_add_up_to_one_overall_line() {
        let mut totals = Totals::default();
        for line in [
            "running 8 tests",
            "test budget::tests::fits ... ok",
            "test result: ok. 8 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            "   Doc-tests memory_context",
            "test result: FAILED. 3 passed; 2 failed; 1 ignored; 0 measured; 4 filtered out; finished in 1.20s",
            "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
            "test something_named_test result: ok. 99 passed",
        ] {
            totals.add(line);
        }
        assert_eq!(totals, Totals { passed: 11, failed: 2, skipped: 1 });
        assert_eq!(totals.summary(), "11 passed, 2 failed, 1 skipped");
        assert_eq!(Totals { passed: 712, failed: 0, skipped: 0 }.summary(), "712 passed, 0 failed");
    }
}
