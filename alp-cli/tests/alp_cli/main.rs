//! The real `alp` binary end to end: every command, JSON shape, error object and exit status of `docs/CLI.md`, and
//! the attack findings as a hostile agent would try them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests fail loudly")]
#![allow(missing_docs, unreachable_pub, reason = "test support code")]

mod adapter_output;
mod audit;
mod bounds;
mod cli;
mod doc_blocks;
mod eras;
mod existence;
mod fence;
mod hardening;
mod history;
mod inspect;
mod io_errors;
mod isolation;
mod mcp;
mod newcomer;
mod oauth;
mod onboarding;
mod operations;
mod operator;
mod postgres;
mod python;
mod readme;
mod receipts;
mod replicas;
mod serve;
mod serve_front;
mod write_door;
