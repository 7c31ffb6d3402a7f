//! `alp audit …`: the audit log, shown and verified.

use std::io::Write;

use alp_memory::MemoryError;
use alp_memory::memory_audit::{VerifyReport, verify_expecting};
use serde_json::json;

use crate::Printed;
use crate::args::{AuditCommand, Cli};
use crate::output::{ShownLines, Terminal, counted, to_json};
use crate::setup::{self, AUDIT_FILE, Place};

/// What a record of `alp audit show` means, for people (on stderr, so stdout stays the records as stored): the
/// outcome of the authorization, written before the store is touched.
pub(crate) const AUDIT_SHOW_NOTE: &str = "note: each record is the authorization outcome of one call, written before \
    the store is touched: `allowed` means the policy let the call through, not that it succeeded (an update that \
    loses a race is recorded `allowed`, then fails with VERSION_CONFLICT and changes nothing)";

/// `alp audit …`: the place's log (the root must exist, the database must hold the schema), or a saved one with
/// `verify --file`.
pub(crate) fn audit(cli: &Cli, command: &AuditCommand) -> Result<Printed, MemoryError> {
    let unavailable = |e: &dyn std::fmt::Display| MemoryError::AuditUnavailable(e.to_string());
    if let AuditCommand::Verify { expect, file: Some(file) } = command {
        // A saved log: no root needed; the key, when set, is the one it was written with.
        let report = verify_expecting(file, setup::audit_key(None)?.as_ref(), expect.as_ref())
            .map_err(|e| unavailable(&e))?;
        return Ok(verify_output(cli, &report));
    }
    match setup::resolve_place(cli)? {
        Place::Root(root) => {
            let log = setup::open_store(&root)?.root().join(AUDIT_FILE);
            match command {
                AuditCommand::Verify { expect, .. } => {
                    let key = setup::audit_key(log.parent())?;
                    let report =
                        verify_expecting(&log, key.as_ref(), expect.as_ref()).map_err(|e| unavailable(&e))?;
                    Ok(verify_output(cli, &report))
                }
                AuditCommand::Head => {
                    let (seq, hash) = alp_memory::memory_audit::head(log).map_err(|e| unavailable(&e))?;
                    Ok(head_output(cli, seq, &hash))
                }
                AuditCommand::Show { since, limit } => {
                    show_note(cli);
                    let mut stdout = ShownLines::new(std::io::stdout().lock(), Terminal::stdout());
                    alp_memory::memory_audit::show(log, *since, *limit, &mut stdout)
                        .map_err(|e| unavailable(&e))?;
                    stdout.flush().map_err(|e| MemoryError::Usage(format!("cannot write to stdout: {e}")))?;
                    Ok(Printed::ok(String::new()))
                }
            }
        }
        Place::Database(url) => {
            let sink = setup::open_database(&url)?.audit_sink(setup::audit_key(None)?);
            match command {
                AuditCommand::Verify { expect, .. } => {
                    let report = sink.verify(expect.as_ref()).map_err(|e| unavailable(&e))?;
                    Ok(verify_output(cli, &report))
                }
                AuditCommand::Head => {
                    let (seq, hash) = sink.head().map_err(|e| unavailable(&e))?;
                    Ok(head_output(cli, seq, &hash))
                }
                AuditCommand::Show { since, limit } => {
                    show_note(cli);
                    let mut stdout = ShownLines::new(std::io::stdout().lock(), Terminal::stdout());
                    sink.show(*since, *limit, &mut stdout).map_err(|e| unavailable(&e))?;
                    stdout.flush().map_err(|e| MemoryError::Usage(format!("cannot write to stdout: {e}")))?;
                    Ok(Printed::ok(String::new()))
                }
            }
        }
    }
}

fn show_note(cli: &Cli) {
    if !cli.json {
        eprintln!("{AUDIT_SHOW_NOTE}");
    }
}

fn head_output(cli: &Cli, seq: u64, hash: &str) -> Printed {
    Printed::ok(if cli.json {
        to_json(&json!({ "seq": seq, "hash": hash }))
    } else {
        format!("{seq}:{hash}")
    })
}

fn verify_output(cli: &Cli, report: &VerifyReport) -> Printed {
    match report {
        VerifyReport::Ok { records, last_hash, from: (from_seq, from_hash) } => Printed::ok(if cli.json {
            to_json(&json!({
                "ok": true,
                "records": records,
                "lastHash": last_hash,
                "from": { "seq": from_seq, "hash": from_hash },
            }))
        } else if *from_seq == 0 {
            format!("audit log intact: {}, last hash {last_hash}", counted(*records, "record", "records"))
        } else {
            format!(
                "audit log intact: {} continuing from record {from_seq} ({from_hash}), last hash {last_hash}",
                counted(*records, "record", "records")
            )
        }),
        VerifyReport::Broken { first_bad_seq, reason } => Printed::with_status(
            if cli.json {
                to_json(&json!({ "ok": false, "firstBadSeq": first_bad_seq, "reason": reason.code() }))
            } else {
                format!("audit log broken at record {first_bad_seq}: {reason}")
            },
            1,
        ),
    }
}
