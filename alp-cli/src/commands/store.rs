//! `alp store …` (operator): copying a store and migrating a database schema.

use std::path::Path;

use alp_memory::MemoryError;
use serde_json::json;

use crate::Printed;
use crate::args::Cli;
use crate::output::{Progress, counted, to_json};
use crate::setup::{self, Place};

/// `alp store migrate`: an operator command (no `--as`). On a database, upgrades an older schema in place under the
/// schema's advisory lock; a schema already current, or a Markdown root (which has no schema to upgrade), prints
/// equal numbers. `{"from":N,"to":N}`.
pub(crate) fn store_migrate(cli: &Cli) -> Result<Printed, MemoryError> {
    if cli.role.is_some() {
        return Err(MemoryError::Usage(
            "`alp store migrate` takes no --as: whoever may change the store's schema migrates it".to_owned(),
        ));
    }
    let (from, to) = match setup::resolve_place(cli)? {
        Place::Root(root) => {
            setup::open_store(&root)?;
            (memory_postgres::SCHEMA_VERSION, memory_postgres::SCHEMA_VERSION)
        }
        Place::Database(url) => {
            let done = memory_postgres::migrate(&url).map_err(setup::postgres_open_error)?;
            (done.from, done.to)
        }
    };
    Ok(if cli.json {
        Printed::ok(format!("{{\"from\":{from},\"to\":{to}}}\n"))
    } else if from == to {
        Printed::people(&format!("the store is at schema version {to}: nothing to migrate"))
    } else {
        Printed::people(&format!("migrated the store from schema version {from} to {to}"))
    })
}

/// `alp store copy --to URL|DIR`: every entry of the place (live and expired, versions and timestamps kept) and its
/// audit log, into an empty target — a missing or empty directory, or a database without the schema or without
/// entries and records — then the copied chain is verified. The source log is verified first: a broken log is not
/// copied. The copy itself is [`alp_memory::copy::copy_store`].
pub(crate) fn store_copy(cli: &Cli, to: &str) -> Result<Printed, MemoryError> {
    use alp_memory::copy::{CopySource, CopyTarget, check_target, copy_store};

    let target = if to.starts_with("postgres://") || to.starts_with("postgresql://") {
        CopyTarget::Database(to)
    } else {
        CopyTarget::Root(Path::new(to))
    };
    check_target(target).map_err(copy_error)?;
    let mut bar = Progress::new(!cli.json, "entries copied");
    let report = match setup::resolve_place(cli)? {
        Place::Root(root) => {
            let store = setup::open_store(&root)?;
            let key = setup::audit_key(Some(store.root()))?;
            copy_store(CopySource::Markdown(&store), target, key.as_ref(), &mut |done, total| {
                bar.show(done, total)
            })
        }
        Place::Database(url) => {
            let store = setup::open_database(&url)?;
            let key = setup::audit_key(None)?;
            copy_store(CopySource::Postgres(&store), target, key.as_ref(), &mut |done, total| {
                bar.show(done, total)
            })
        }
    }
    .map_err(copy_error)?;
    bar.finish();
    if cli.json {
        return Ok(Printed::ok(to_json(&json!({
            "copied": report.entries,
            "versions": report.versions,
            "tokens": report.tokens,
            "records": report.audit_records,
        }))));
    }
    Ok(Printed::ok(format!(
        "copied {} ({}), {} and {} to {}; the copied audit chain verifies",
        counted(report.entries as u64, "entry", "entries"),
        counted(report.versions as u64, "kept version", "kept versions"),
        counted(report.tokens as u64, "token", "tokens"),
        counted(report.audit_records as u64, "audit record", "audit records"),
        report.target
    )))
}

/// How a failed copy reads: a target in use is `USAGE`; a log that does not verify or cannot be read or written is
/// `AUDIT_UNAVAILABLE`; a store's own failures read as they do for every command.
fn copy_error(error: alp_memory::copy::CopyError) -> MemoryError {
    use alp_memory::copy::CopyError;
    match error {
        CopyError::Store(e) => e.into(),
        CopyError::Tokens(e) => e,
        CopyError::OpenRoot { path, source } => setup::open_error(&path, source),
        CopyError::OpenDatabase(e) => setup::postgres_open_error(e),
        CopyError::Create { .. } => {
            MemoryError::Storage { id: None, storage_kind: None, message: error.to_string() }
        }
        CopyError::DirectoryNotEmpty { .. }
        | CopyError::DatabaseNotEmpty { .. }
        | CopyError::LockTimeout(_) => MemoryError::Usage(error.to_string()),
        other => MemoryError::AuditUnavailable(other.to_string()),
    }
}
