//! The operator's changes to agent definitions, each on the audit chain: add a role, grant, revoke, remove.
//!
//! Each change writes one record before it touches the agents directory (actor `""`, operation `agent-add`,
//! `agent-grant`, `agent-revoke` or `agent-remove`, `id` the role, and `grant` the grants it changed as
//! `"read:<grant>"` / `"write:<grant>"`: add, the new definition's; grant and revoke, the one changed; remove, the
//! ones it had), and fails closed: no record, no change. A change that changes nothing (a grant the definition
//! holds already, a revoke of one it does not hold) and a refused one write no record. Files are written as
//! [`DefinitionWriter`] writes them (atomic, 0600, the directory locked meanwhile); grant and revoke keep every
//! other byte of the file ([`memory_policy::edit_grant`]), so hand-written definitions keep their comments and keys.
//! Definitions are read again by every call of the service, so a running server applies a change at its next call.
//!
//! ```
//! use alp_memory::agents::{self, Change, Grants};
//! use alp_memory::memory_policy::GrantEdit;
//! use alp_memory::memory_audit::{self, JsonlAuditSink};
//! use alp_memory::memory_entry::Timestamp;
//! use alp_memory::memory_policy::Operation;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let agents = dir.path().join("agents");
//! let log = JsonlAuditSink::open(&dir.path().join("audit.jsonl")).unwrap();
//! let qa = agents::add_agent(&agents, &log, "qa", None, Grants::Defaults, Timestamp::now()).unwrap();
//! assert_eq!(qa.grants(Operation::Read).len(), 3);
//! let grant = |edit| agents::change_grant(&agents, &log, "qa", edit, Operation::Write, "shared:qa", Timestamp::now());
//! assert!(matches!(grant(GrantEdit::Add).unwrap(), Change::Done(_)));
//! let again = grant(GrantEdit::Add).unwrap();
//! assert!(matches!(again, Change::Unchanged(_)), "held already: no record");
//! assert_eq!(agents::remove_agent(&agents, &log, "qa", Timestamp::now()).unwrap().len(), 7);
//! // add, grant, remove: three records.
//! assert_eq!(memory_audit::head(dir.path().join("audit.jsonl")).unwrap().0, 3);
//! ```

use std::path::Path;
use std::time::Duration;

use memory_audit::{AuditOperation, AuditSink};
use memory_entry::{StorageErrorKind, Timestamp};
use memory_policy::{
    Actor, AgentDefinitionError, DefinitionWriter, Grant, GrantEdit, Operation, Role, edit_grant,
    new_definition, parse_agent_definition,
};

use crate::MemoryError;
use crate::operator::operator_record;

/// How long a change waits for another change of the agents directory to finish.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The grants of a new definition.
#[derive(Debug, Clone, Copy)]
pub enum Grants<'a> {
    /// What `alp init --role ROLE` gives: shared memory, every project and the role's own private memory, to read
    /// and to write ([`default_grants`]).
    Defaults,
    /// Exactly these, as the operator wrote them.
    These {
        /// The read grants.
        read: &'a [String],
        /// The write grants.
        write: &'a [String],
    },
}

/// The grants `alp init --role ROLE` and [`Grants::Defaults`] give `role`: `shared`, `project:*` and
/// `private:<role>`.
pub fn default_grants(role: &Role) -> Vec<Grant> {
    ["shared".to_owned(), "project:*".to_owned(), format!("private:{role}")]
        .iter()
        .filter_map(|g| Grant::parse(g).ok())
        .collect()
}

/// What a grant or revoke did.
#[derive(Debug, Clone)]
pub enum Change {
    /// The definition changed (one record written): the definition as it now is.
    Done(Actor),
    /// It held the grant already (grant), or did not hold it (revoke): nothing written, no record.
    Unchanged(Actor),
}

/// Writes a new definition of `role` in `dir` (made when missing): `reportsTo` and the grants given. Returns the
/// definition as it now loads.
///
/// # Errors
///
/// [`MemoryError::Usage`] for an invalid role or manager name, or a grant on another role's private memory (it
/// could never take effect); [`MemoryError::AgentDefinition`] (`invalid_grant`) for a grant outside the grammar;
/// [`MemoryError::NameTaken`] when the role has a definition (no record); [`MemoryError::AuditUnavailable`]
/// (nothing written); [`MemoryError::Storage`].
pub fn add_agent(
    dir: &Path,
    audit: &dyn AuditSink,
    role: &str,
    reports_to: Option<&str>,
    grants: Grants<'_>,
    now: Timestamp,
) -> Result<Actor, MemoryError> {
    let parsed = Role::parse(role)
        .map_err(|e| MemoryError::Usage(format!("cannot define role `{}`: {e}", memory_id::shown(role))))?;
    let manager = reports_to
        .map(|r| {
            Role::parse(r).map_err(|e| {
                MemoryError::Usage(format!("--reports-to `{}` is not a role: {e}", memory_id::shown(r)))
            })
        })
        .transpose()?;
    let file = dir.join(format!("{parsed}.{}", memory_policy::DEFINITION_EXTENSION));
    let (read, write) = match grants {
        Grants::Defaults => (default_grants(&parsed), default_grants(&parsed)),
        Grants::These { read, write } => (
            checked_grants(&parsed, &file, Operation::Read, read)?,
            checked_grants(&parsed, &file, Operation::Write, write)?,
        ),
    };
    let text = new_definition(&parsed, manager.as_ref(), &read, &write);
    let writer = lock(dir)?;
    let file = writer.file(&parsed);
    if std::fs::symlink_metadata(&file).is_ok() {
        return Err(MemoryError::NameTaken {
            id: parsed.as_str().to_owned(),
            message: format!(
                "role `{parsed}` already has a definition, `{}`; change its grants with `alp agent grant` and `alp \
                 agent revoke`, or remove it first",
                file.display()
            ),
        });
    }
    let listed = [(Operation::Read, &read[..]), (Operation::Write, &write[..])]
        .into_iter()
        .flat_map(|(op, grants)| grants.iter().map(move |g| listed(op, g)))
        .collect();
    operator_record(audit, AuditOperation::AgentAdd, parsed.as_str(), Some(listed), now)?;
    let created = writer.create(&parsed, &text).map_err(|e| cannot("write", &file, &e))?;
    if !created {
        return Err(cannot("write", &file, &std::io::Error::from(std::io::ErrorKind::AlreadyExists)));
    }
    Ok(parse_agent_definition(&text, parsed.as_str(), &file)?)
}

/// Adds `grant` to `role`'s `operation` list ([`GrantEdit::Add`]) or removes every occurrence of it
/// ([`GrantEdit::Remove`]), keeping every other byte of its file; one record, `agent-grant` or `agent-revoke`.
///
/// # Errors
///
/// [`MemoryError::AgentDefinition`]: an invalid grant (`invalid_grant`), no definition (`unknown_role`), a
/// definition that does not load (its file is left as it is), a layout that cannot be changed in place
/// (`not_editable`); [`MemoryError::Usage`] for adding a grant on another role's private memory (one a file holds
/// may be removed); [`MemoryError::AuditUnavailable`] (nothing written); [`MemoryError::Storage`].
pub fn change_grant(
    dir: &Path,
    audit: &dyn AuditSink,
    role: &str,
    edit: GrantEdit,
    operation: Operation,
    grant: &str,
    now: Timestamp,
) -> Result<Change, MemoryError> {
    let file = dir.join(format!("{role}.{}", memory_policy::DEFINITION_EXTENSION));
    let grant = parsed_grant(role, &file, grant)?;
    if edit == GrantEdit::Add && grant.is_foreign_private(role) {
        return Err(foreign_private(role, operation, &grant));
    }
    let writer = lock_existing(dir, role)?;
    let text = writer.read(role)?;
    let parsed = Role::parse(role).map_err(|e| MemoryError::Usage(e.to_string()))?;
    let file = writer.file(&parsed);
    let Some(edited) = edit_grant(&text, role, &file, operation, &grant, edit)? else {
        return Ok(Change::Unchanged(parse_agent_definition(&text, role, &file)?));
    };
    let record = match edit {
        GrantEdit::Add => AuditOperation::AgentGrant,
        GrantEdit::Remove => AuditOperation::AgentRevoke,
    };
    operator_record(audit, record, role, Some(vec![listed(operation, &grant)]), now)?;
    writer.replace(&parsed, &edited).map_err(|e| cannot("write", &file, &e))?;
    Ok(Change::Done(parse_agent_definition(&edited, role, &file)?))
}

/// Removes `role`'s definition; returns the grants it had, as the record lists them.
///
/// # Errors
///
/// [`MemoryError::AgentDefinition`]: no definition, or one that does not load (left as it is);
/// [`MemoryError::AuditUnavailable`] (nothing removed); [`MemoryError::Storage`].
pub fn remove_agent(
    dir: &Path,
    audit: &dyn AuditSink,
    role: &str,
    now: Timestamp,
) -> Result<Vec<String>, MemoryError> {
    let writer = lock_existing(dir, role)?;
    let text = writer.read(role)?;
    let parsed = Role::parse(role).map_err(|e| MemoryError::Usage(e.to_string()))?;
    let file = writer.file(&parsed);
    let actor = parse_agent_definition(&text, role, &file)?;
    let had: Vec<String> = [Operation::Read, Operation::Write]
        .into_iter()
        .flat_map(|op| actor.grants(op).iter().map(move |g| listed(op, g)))
        .collect();
    operator_record(audit, AuditOperation::AgentRemove, role, Some(had.clone()), now)?;
    writer.remove(&parsed).map_err(|e| cannot("remove", &file, &e))?;
    Ok(had)
}

/// The writer of `dir`, which must exist for a change of an existing role (a missing directory holds no role: the
/// loader's `unknown_role`, and nothing is made).
fn lock_existing(dir: &Path, role: &str) -> Result<DefinitionWriter, MemoryError> {
    if !dir.is_dir() {
        memory_policy::load_agent(dir, role)?;
    }
    lock(dir)
}

fn lock(dir: &Path) -> Result<DefinitionWriter, MemoryError> {
    DefinitionWriter::lock(dir, LOCK_TIMEOUT).map_err(|e| cannot("open", dir, &e))
}

/// The grants an operator gave for a new definition: each valid, none on another role's private memory.
fn checked_grants(
    role: &Role,
    file: &Path,
    operation: Operation,
    grants: &[String],
) -> Result<Vec<Grant>, MemoryError> {
    let mut out: Vec<Grant> = Vec::new();
    for text in grants {
        let grant = parsed_grant(role.as_str(), file, text)?;
        if grant.is_foreign_private(role.as_str()) {
            return Err(foreign_private(role.as_str(), operation, &grant));
        }
        if !out.contains(&grant) {
            out.push(grant);
        }
    }
    Ok(out)
}

/// An operator's grant, refused as the definition `file` holding it would be.
fn parsed_grant(role: &str, file: &Path, text: &str) -> Result<Grant, MemoryError> {
    Grant::parse(text)
        .map_err(|e| MemoryError::AgentDefinition(AgentDefinitionError::invalid_grant(role, file, e)))
}

fn foreign_private(role: &str, operation: Operation, grant: &Grant) -> MemoryError {
    MemoryError::Usage(format!(
        "{operation} grant `{grant}` names another role's private memory and can never take effect for role `{}` \
         (only a role itself reaches its private memory); nothing changed",
        memory_id::shown(role)
    ))
}

/// A grant as the record lists it: `read:shared`, `write:private:qa`.
fn listed(operation: Operation, grant: &Grant) -> String {
    format!("{operation}:{grant}")
}

fn cannot(what: &str, path: &Path, error: &std::io::Error) -> MemoryError {
    MemoryError::Storage {
        id: None,
        storage_kind: Some(StorageErrorKind::Io),
        message: format!("cannot {what} `{}`: {error}", path.display()),
    }
}
