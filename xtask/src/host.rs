//! What the benchmark reports say about the machine and the moment they were measured.

use std::process::Command;

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
