//! What every benchmark shares: ranks of timed samples, the deterministic generator, the machine and the moment a
//! report was measured on, what `/proc` says about a server, and the sentence every report opens with.
//!
//! The rank rules are the ones the published reports were measured with; each says which reports use it, so that a
//! figure in a report can be traced to one function here.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Milliseconds, for the reports.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `a` over `b` (a `b` of zero counts as a nanosecond).
pub(crate) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn sorted(samples: &[Duration]) -> Vec<Duration> {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted
}

/// The median of `samples` (the upper of the middle two for an even count; zero for none): [`percentile`] 50.
pub(crate) fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 50)
}

/// The sample at index `len × percent / 100` of `samples` sorted (the last one at most; zero for none): the p90
/// of `bench`, `mcp-latency` and `pg-bench`.
pub(crate) fn percentile(samples: &[Duration], percent: usize) -> Duration {
    let sorted = sorted(samples);
    let index = (sorted.len() * percent / 100).min(sorted.len().saturating_sub(1));
    sorted.get(index).copied().unwrap_or_default()
}

/// The nearest-rank percentile: the smallest sample with at least `percent`% of `samples` at or below it (zero for
/// none): the p95 of `bench --peers`.
pub(crate) fn nearest_rank(samples: &[Duration], percent: usize) -> Duration {
    let sorted = sorted(samples);
    let rank = (sorted.len() * percent).div_ceil(100).max(1) - 1;
    sorted.get(rank.min(sorted.len().saturating_sub(1))).copied().unwrap_or_default()
}

/// The sample at index `(len − 1) × share`, rounded, of `samples` sorted (0.5 is the [`median`]; zero for none):
/// the p90, p95 and p99 of `serve-bench` and `serve-attack`.
pub(crate) fn quantile(samples: &[Duration], share: f64) -> Duration {
    let sorted = sorted(samples);
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * share).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// The median of rates (the mean of the middle two for an even count; 0 for none): `serve-load`'s reads per second.
pub(crate) fn median_rate(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The distribution-free interval of at least 95% confidence for the median of `values`: their `k`-th lowest and
/// `k`-th highest, with `k` the largest rank such that fewer than `k` of `n` fair coin flips come up heads with
/// probability at most 2.5% (for 21 values the 6th and the 16th, 97.3%; for 8 values or fewer, the lowest and
/// the highest). The receipts of `serve-bench` bound their median per-round ratios with it.
pub(crate) fn median_interval(values: &[f64]) -> (f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    // P(X <= j) for X ~ Binomial(n, 1/2), term by term in logarithms (2^-n underflows past a thousand values).
    let (mut ln_term, mut below, mut k) = (-(n as f64) * std::f64::consts::LN_2, 0.0, 1);
    for j in 0..n / 2 {
        below += ln_term.exp();
        if below > 0.025 {
            break;
        }
        k = j + 1;
        ln_term += ((n - j) as f64 / (j + 1) as f64).ln();
    }
    (sorted[k - 1], sorted[n - k])
}

/// Runs `command` to its end, its output discarded: how long it took. ripgrep's exit status 1 (nothing matched)
/// counts as success; any other failure is an error.
pub(crate) fn time(command: &mut Command) -> Result<Duration, String> {
    let start = Instant::now();
    let status = command.stdout(Stdio::null()).stderr(Stdio::null()).status().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    if status.success() || status.code() == Some(1) {
        Ok(elapsed)
    } else {
        Err(format!("{command:?} failed: {status}"))
    }
}

/// Times `commands` in the same rounds (after one untimed run of each), each round starting with a different
/// command so that none always follows the same one: the median of each, in order.
pub(crate) fn interleaved(
    commands: &[Box<dyn Fn() -> Command + '_>],
    runs: usize,
) -> Result<Vec<Duration>, String> {
    for command in commands {
        time(&mut command())?;
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); commands.len()];
    for round in 0..runs.max(1) {
        for k in 0..commands.len() {
            let index = (round + k) % commands.len();
            samples[index].push(time(&mut commands[index]())?);
        }
    }
    Ok(samples.iter().map(|s| median(s)).collect())
}

/// A deterministic generator (a 64-bit LCG), so every run measures the same stores.
#[derive(Debug)]
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    /// The next 31 bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// A number below `n` (below 1 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// One of `words`.
    pub(crate) fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        let len = u64::try_from(words.len()).unwrap_or(1);
        words[usize::try_from(self.below(len)).unwrap_or(0)]
    }
}

/// The CPU model and the number of cores available to this process: `Intel(R) Xeon(R) …, 2 cores`.
pub(crate) fn cpu() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{model}, {cores} cores")
}

/// The first line a program prints on its standard output for `args`, trimmed, when it runs and succeeds (its
/// standard error when the output is empty).
pub(crate) fn first_line(program: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).stdin(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = if output.stdout.is_empty() { output.stderr } else { output.stdout };
    String::from_utf8_lossy(&text).lines().next().map(|l| l.trim().to_owned())
}

/// The machine for a report that times `alp` against ripgrep: [`cpu`], then rustc's and ripgrep's versions.
pub(crate) fn machine() -> String {
    let version = |program: &str| first_line(Path::new(program), &["--version"]);
    format!(
        "{}; {}; {}",
        cpu(),
        version("rustc").unwrap_or_else(|| "rustc ?".into()),
        version("rg").unwrap_or_else(|| "ripgrep ?".into())
    )
}

/// The machine for a report of stores that sync to disk: [`cpu`], the memory, the kernel.
pub(crate) fn machine_memory_kernel() -> String {
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let kb: u64 =
                t.lines().find(|l| l.starts_with("MemTotal:"))?.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{} GiB RAM", kb / (1024 * 1024)))
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{}, {memory}, Linux {}", cpu(), kernel.trim())
}

/// The current time, `2026-12-01 01:05 UTC` (empty when `date` cannot run).
pub(crate) fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// `/proc/loadavg`'s three averages, `5.71 6.02 6.40` (`?` when it cannot be read).
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".to_owned())
}

/// How many dentries the kernel caches now (the first field of `/proc/sys/fs/dentry-state`; `?` when it cannot be
/// read). Every `stat` of a file looks its name up in that cache's hash table, whose chains grow with it: with
/// hundreds of thousands cached, the lookup is most of a warm search's time.
pub(crate) fn dentries() -> String {
    std::fs::read_to_string("/proc/sys/fs/dentry-state")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// The CPU time a process has used (user and system, in clock ticks: hundredths of a second on Linux), from
/// `/proc/PID/stat`; `None` when it cannot be read.
pub(crate) fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's `(name)`, which may hold spaces, the fields from the third on: utime and stime are the
    // 12th and 13th of those.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// The number a line `NAME:` of `/proc/PID/status` starts with (`VmRSS` and `VmHWM` in KiB, `Threads`).
pub(crate) fn proc_status(pid: u32, name: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read the server's /proc status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no {name} in the server's /proc status"))
}

/// The section of a report `text` that opens with the level-2 `heading` (`## …`): from the heading to the next
/// heading of the same level, or to the end. For a report several commands write parts of.
pub(crate) fn section<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let start = if text.starts_with(heading) { 0 } else { text.find(&format!("\n{heading}"))? + 1 };
    let rest = &text[start..];
    let end = rest[heading.len()..].find("\n## ").map_or(rest.len(), |at| heading.len() + at + 1);
    Some(&rest[..end])
}

/// A run being measured: when it started and the load average then.
#[derive(Debug)]
pub(crate) struct Run {
    started: Instant,
    load_before: String,
}

/// A run measured: how long it took and the load average before and after it.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) took: Duration,
    pub(crate) load_before: String,
    pub(crate) load_after: String,
}

impl Run {
    /// Starts the clock and reads the load average.
    pub(crate) fn start() -> Run {
        Run { started: Instant::now(), load_before: load_average() }
    }

    /// The time since [`Run::start`].
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The run so far, with the load average now.
    pub(crate) fn ran(&self) -> Ran {
        Ran { took: self.elapsed(), load_before: self.load_before.clone(), load_after: load_average() }
    }
}

impl Ran {
    /// The opening a report shares with the others, without its final period: "Generated by `cargo xtask
    /// COMMAND` on DATE (MACHINE; the whole run took N s; load average … before the run and … after it, on a
    /// machine shared with other builds). Do not edit by hand: run the command again".
    pub(crate) fn generated(&self, command: &str, machine: &str) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "Generated by `cargo xtask {command}` on {} ({machine}; the whole run took {:.0} s; load average {} before \
             the run and {} after it, on a machine shared with other builds). Do not edit by hand: run the command \
             again",
            utc_now(),
            self.took.as_secs_f64(),
            self.load_before,
            self.load_after
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::median_interval;

    #[test]
    fn the_median_interval_takes_the_ranks_of_a_fair_coin() {
        let ranks = |n: usize| median_interval(&(1..=n).rev().map(|i| i as f64).collect::<Vec<_>>());
        // (n, k-th lowest, k-th highest)
        for (n, low, high) in [(0, 0.0, 0.0), (1, 1.0, 1.0), (8, 1.0, 8.0), (9, 2.0, 8.0), (21, 6.0, 16.0)] {
            assert_eq!(ranks(n), (low, high), "{n} values");
        }
        // Past a thousand values: about the median ± 1.96 √n / 2.
        let (low, high) = ranks(2_000);
        assert!((955.0..=957.0).contains(&low) && (1_044.0..=1_046.0).contains(&high), "{low} {high}");
    }
}
