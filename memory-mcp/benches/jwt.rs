//! The JWT check of `alp serve`'s OAuth front with the issuer's keys cached: [`peek`] then [`KeySet::verify`], as
//! the front runs them for every request that carries a JWT, once per algorithm accepted (RS256 with a 2048-bit
//! key, ES256, EdDSA). The contract is at most 50 µs per check.
//!
//! `cargo bench -p memory-mcp --bench jwt`

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmarks fail loudly")]
#![allow(missing_docs, reason = "criterion generates the entry point")]

use criterion::{Criterion, criterion_group, criterion_main};
use memory_mcp::oauth::{Expected, Issuer, KeySet, peek};
use testkit::oauth::{ISSUER, JWKS, NOW, RESOURCE, claims, sign};

fn jwt_check(c: &mut Criterion) {
    let keys = KeySet::parse(JWKS.as_bytes()).unwrap();
    let issuer = Issuer::parse(ISSUER).unwrap();
    let expect = Expected { resource: RESOURCE, role_claim: "alp_role" };
    let mut group = c.benchmark_group("jwt_check");
    for alg in ["RS256", "ES256", "EdDSA"] {
        let token = sign(alg, &claims());
        group.bench_function(alg, |b| {
            b.iter(|| {
                let peeked = peek(std::hint::black_box(&token)).unwrap();
                keys.verify(&token, &peeked, &issuer, &expect, NOW).unwrap()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, jwt_check);
criterion_main!(benches);
