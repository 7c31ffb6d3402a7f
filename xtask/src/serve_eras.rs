//! The section "Protocol eras" of `BENCHMARKS-serve.md`, which `cargo xtask serve-bench` measures: what a call
//! costs when it comes in the stateless `2026-07-28` era against the same call in the session era.
//!
//! 1. One release server (this tree's, or `--alp`) on a copy of the 10,000-entry `canonical` store, and three
//!    kept-alive connections with one token: *session*, whose requests are plain JSON-RPC as clients of
//!    `2025-11-25` and older send them; *stateless*, whose requests carry the version and client capabilities in
//!    `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers; and *session′*, the session
//!    era again (the A/A comparison).
//! 2. Rounds of `memory_search` (limit 20) then rounds of `memory_get`, the connections taking turns call by call
//!    in each of the six orders in turn, as the receipts' comparison does.
//! 3. Medians and p95 of every call, and stateless / session and session′ / session per round.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::corpus::TERMS;
use crate::measure::{Ran, Run, machine, median, ms, quantile, utc_now};
use crate::serve_load::{Client, Era, Server, token};
use crate::serve_receipts::{
    Comparison, GET_ID, GETS, LIMIT, SEARCHES, Samples, all, copy_store, searches_then_gets, this_tree,
    thousands,
};

/// The heading of the section.
pub(crate) const HEADING: &str = "## Protocol eras";

/// Measures and renders the section with `alp` on a copy of `store` (the `canonical` store of `size` entries)
/// made in a temporary directory, removed after. `label` names a binary given by path.
pub(crate) fn section(
    alp: &Path,
    label: Option<&str>,
    store: &Path,
    size: usize,
    rounds: usize,
) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("alp-serve-eras-{}", std::process::id()));
    let run = Run::start();
    let measured = measure(alp, store, &dir, rounds);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(render(alp, label, &measured?, size, rounds, &run.ran()))
}

struct Measured {
    search: Samples,
    get: Samples,
}

fn measure(alp: &Path, store: &Path, dir: &Path, rounds: usize) -> Result<Measured, String> {
    copy_store(store, dir)?;
    let (memory, agents) = (dir.join("memory"), dir.join("agents"));
    let token = token(alp, &memory, &agents, 0)?;
    let mut server = Server::start(alp, &memory, &agents, false)?;
    let get = format!(r#"{{"id":"{GET_ID}"}}"#);
    let result = (|| {
        let connect = |era| Client::connect_in(era, &server.addr, &token, &get);
        let mut clients = [connect(Era::Session)?, connect(Era::Stateless)?, connect(Era::Session)?];
        let (search, get) = searches_then_gets(&mut clients, rounds)?;
        Ok::<_, String>(Measured { search, get })
    })();
    let stopped = server.stop();
    let measured = result?;
    stopped?;
    for (name, samples) in [("searches", &measured.search), ("gets", &measured.get)] {
        let (modern, aa) = compared(samples);
        eprintln!(
            "eras: {name}: stateless/session per round {}, session′/session {}",
            modern.spread(),
            aa.spread()
        );
    }
    Ok(measured)
}

fn render(alp: &Path, label: Option<&str>, m: &Measured, size: usize, rounds: usize, ran: &Ran) -> String {
    let command: Vec<String> = std::env::args().skip(1).collect();
    let built = match label {
        Some(_) => format!("the `alp` at `{}`", alp.display()),
        None => format!("this tree's release `alp` ({})", this_tree()),
    };
    let mut out = String::new();
    let _ = writeln!(out, "{HEADING}\n");
    let _ = writeln!(
        out,
        "Measured by `cargo xtask {}` on {} ({}; this part took {:.0} s; load average {} before it and {} after \
         it, on a machine shared with other builds). What a call costs in MCP's stateless era (`2026-07-28`) \
         against the same call in the session era, on one server: {built}, on a copy of the {}-entry `canonical` \
         store.\n",
        command.join(" "),
        utc_now(),
        machine(),
        ran.took.as_secs_f64(),
        ran.load_before,
        ran.load_after,
        thousands(size),
    );
    let _ = writeln!(
        out,
        "Three kept-alive connections with one token: *session*, plain JSON-RPC requests as clients of \
         `2025-11-25` and older send them; *stateless*, each request with `_meta` naming `2026-07-28` and the \
         client's capabilities, and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers the server \
         checks against the body; and *session′*, the session era again (the A/A comparison). {rounds} rounds of \
         {SEARCHES} `memory_search` calls per connection (`{} {}`, limit {LIMIT}), then {rounds} rounds of {GETS} \
         `memory_get` calls (`{GET_ID}`); in each, the connections take turns call by call, through the six orders \
         in turn. Every call appends its audit record and syncs it before it is answered.\n",
        TERMS[0], TERMS[1],
    );
    let _ = writeln!(
        out,
        "| call | session: median (p95) | stateless: median (p95) | session′: median (p95) | stateless / session \
         per round | 95% interval | session′ / session per round (A/A) | 95% interval |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|"
    );
    let calls = [("`memory_search`", &m.search), ("`memory_get`", &m.get)];
    let cell = |side: &[Vec<Duration>]| {
        let all = all(side);
        format!("{:.3} ms ({:.3} ms)", ms(median(&all)), ms(quantile(&all, 0.95)))
    };
    for (name, samples) in calls {
        let (modern, aa) = compared(samples);
        let ((low, high), (aa_low, aa_high)) = (modern.interval(), aa.interval());
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {low:.3} to {high:.3} | {} | {aa_low:.3} to {aa_high:.3} |",
            cell(&samples[0]),
            cell(&samples[1]),
            cell(&samples[2]),
            modern.spread(),
            aa.spread(),
        );
    }
    let _ = writeln!(
        out,
        "\n*Per round*: the ratio of two connections' medians within each round, lowest, median, highest; *95% \
         interval*: the distribution-free interval of the median per-round ratio. Target: a stateless call costs \
         no more than a session one. Judged by a sign test on the rounds: **not met** when stateless was the \
         slower in so many rounds that two connections equally fast would be so lopsided less than once in 40 \
         runs (binomial, one-sided), **met** otherwise.\n"
    );
    for (name, samples) in calls {
        let (modern, aa) = compared(samples);
        let ((low, high), (aa_low, aa_high)) = (modern.interval(), aa.interval());
        let _ = writeln!(
            out,
            "- {name}: stateless / session {:.3} per round ({low:.3} to {high:.3}), stateless slower in {} of \
             {rounds} rounds; A/A {:.3} ({aa_low:.3} to {aa_high:.3}). Target {}.",
            modern.middle(),
            modern.slower,
            aa.middle(),
            if lopsided(modern.slower, rounds) {
                format!(
                    "**not met**: the stateless call is the slower by about {:.1}%",
                    (modern.middle() - 1.0) * 100.0
                )
            } else {
                "**met**".to_owned()
            },
        );
    }
    out.push('\n');
    out
}

/// Stateless against session, and session′ against session (A/A).
fn compared(samples: &Samples) -> (Comparison, Comparison) {
    (Comparison::of(&samples[0], &samples[1]), Comparison::of(&samples[0], &samples[2]))
}

/// Whether `slower` rounds of `rounds` are too many for two connections equally fast: the chance of at least that
/// many of `rounds` fair coin flips is under 1/40.
fn lopsided(slower: usize, rounds: usize) -> bool {
    // P(X >= slower) for X ~ Binomial(rounds, 1/2), summed in floating point (rounds is a few dozen at most).
    let mut choose = 1.0_f64;
    let mut tail = 0.0_f64;
    for k in 0..=rounds {
        if k > 0 {
            choose = choose * (rounds - k + 1) as f64 / k as f64;
        }
        if k >= slower {
            tail += choose;
        }
    }
    tail / 2f64.powi(i32::try_from(rounds).unwrap_or(i32::MAX)) < 1.0 / 40.0
}

#[cfg(test)]
mod tests {
    use super::lopsided;

    #[test]
    fn a_sign_test_at_one_in_forty() {
        // 11 rounds: P(X >= 9) = 67/2048 = 0.033, P(X >= 10) = 12/2048 = 0.006.
        assert!(!lopsided(9, 11));
        assert!(lopsided(10, 11));
        // 21 rounds: P(X >= 15) = 0.039, P(X >= 16) = 0.013.
        assert!(!lopsided(15, 21));
        assert!(lopsided(16, 21));
        assert!(!lopsided(0, 7));
    }
}
