//! Test machinery shared by the workspace's tests, written once: a throwaway PostgreSQL cluster and per-test
//! databases ([`pg`]). Not published; used only as a dev-dependency (and by `xtask`).

pub mod pg;
