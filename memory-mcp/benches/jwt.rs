//! The JWT check of `alp serve`'s OAuth front with the issuer's keys cached: [`peek`] then [`KeySet::verify`], as
//! the front runs them for every request that carries a JWT, once per algorithm accepted (RS256 with a 2048-bit
//! key, ES256, EdDSA). The contract is at most 50 µs per check.
//!
//! Each algorithm twice: `first/<alg>`, a token the key set has not seen (its signature verified), and
//! `again/<alg>`, the same token checked again, as a client sends it with every request until it expires (the set
//! remembers the tokens it accepted, and checks only their times again).
//!
//! Two groups: `jwt_check` in wall time, as criterion measures by default, and `jwt_check_cpu` in the benchmark
//! thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which a machine busy with other work does not inflate by the time
//! the thread waits for a core.
//!
//! `cargo bench -p memory-mcp --bench jwt`

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmarks fail loudly")]
#![allow(missing_docs, reason = "criterion generates the entry point")]

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use memory_mcp::oauth::{Expected, Issuer, KeySet, peek};
use testkit::oauth::{ISSUER, JWKS, NOW, RESOURCE, claims, sign};

/// The calling thread's CPU time, in nanoseconds.
struct ThreadCpuTime;

fn thread_cpu_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (now.tv_sec as u64) * 1_000_000_000 + now.tv_nsec as u64
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }

    fn end(&self, started: u64) -> u64 {
        thread_cpu_ns().saturating_sub(started)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        // Nanoseconds, formatted as durations like wall time.
        WallTime.formatter()
    }
}

fn checks<M: Measurement>(c: &mut Criterion<M>, group: &str) {
    let keys = KeySet::parse(JWKS.as_bytes()).unwrap();
    let issuer = Issuer::parse(ISSUER).unwrap();
    let expect = Expected { resource: RESOURCE, role_claim: "alp_role" };
    let mut group = c.benchmark_group(group);
    for alg in ["RS256", "ES256", "EdDSA"] {
        let token = sign(alg, &claims());
        // A token the set has not seen: each check on a set of its own, parsed outside the time measured.
        group.bench_function(format!("first/{alg}"), |b| {
            b.iter_batched_ref(
                || KeySet::parse(JWKS.as_bytes()).unwrap(),
                |fresh| {
                    let peeked = peek(std::hint::black_box(&token)).unwrap();
                    fresh.verify(&token, &peeked, &issuer, &expect, NOW).unwrap()
                },
                BatchSize::SmallInput,
            );
        });
        // The same token again, as a client sends it with every request: from the set's memory.
        keys.verify(&token, &peek(&token).unwrap(), &issuer, &expect, NOW).unwrap();
        group.bench_function(format!("again/{alg}"), |b| {
            b.iter(|| {
                let peeked = peek(std::hint::black_box(&token)).unwrap();
                keys.verify(&token, &peeked, &issuer, &expect, NOW).unwrap()
            });
        });
    }
    group.finish();
}

fn jwt_check(c: &mut Criterion) {
    checks(c, "jwt_check");
}

fn jwt_check_cpu(c: &mut Criterion<ThreadCpuTime>) {
    checks(c, "jwt_check_cpu");
}

criterion_group!(benches, jwt_check);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = jwt_check_cpu
}
criterion_main!(benches, cpu);
