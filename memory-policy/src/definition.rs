//! Agent definitions: one YAML file per role, `<agents dir>/<role>.yaml`.
//!
//! ```yaml
//! role: worker            # must equal the file name
//! reportsTo: main         # optional; grants nothing
//! memory:
//!   read:  [shared, "project:alp", "private:worker"]
//!   write: ["project:alp:log:*", "private:worker"]
//! ```
//!
//! Other top-level keys (an agent definition also describes capabilities this crate does not judge) are ignored;
//! unknown keys inside `memory` are refused, so that a misspelt `reed:` is reported instead of silently granting
//! nothing.
//!
//! The agents directory decides every grant, and whoever can write a file into it may be hostile, so a definition
//! costs bounded time and memory: it must be a regular file (never a symlink, FIFO or device: the name is resolved
//! with `O_PATH | O_NOFOLLOW` on Linux, and nothing else is ever opened for reading) of at most
//! [`MAX_DEFINITION_BYTES`], and its YAML may not use aliases or nest deeper than 32 levels (refused before
//! anything is expanded).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::Deserialize;

use crate::{Actor, Grant, InvalidGrantError, InvalidRoleError, Operation, Role};

/// The file extension of agent definitions.
pub const DEFINITION_EXTENSION: &str = "yaml";

/// The largest agent definition read: 64 KiB (the longest YAML text `memory_fs::yaml` parses).
pub const MAX_DEFINITION_BYTES: u64 = memory_fs::yaml::MAX_BYTES as u64;

/// Why an agent definition could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentDefinitionProblem {
    /// No definition exists for the role.
    UnknownRole,
    /// The role name is not a valid segment, so it cannot name a definition.
    InvalidRole(InvalidRoleError),
    /// The file exists but is not something a definition may be (not a regular file, too large, not UTF-8).
    Unreadable(String),
    /// The file could not be opened or read for a reason of the system's other than its absence (too many open
    /// files, a permission error, an I/O error): nothing says the definition is broken, so this is not reported as
    /// a broken definition but as a storage failure ([`AgentDefinitionError::is_io`]). Holds the system's reason.
    Io(String),
    /// The file is not a YAML agent definition of the expected shape.
    Malformed(String),
    /// The `role:` inside the file differs from the file name.
    RoleMismatch {
        /// The role the file declares.
        declared: String,
    },
    /// A grant does not follow the grant grammar.
    InvalidGrant(InvalidGrantError),
    /// A definition that loads, but whose grant list is not laid out in a way [`edit_grant`](crate::edit_grant)
    /// changes in place (a flow list over several lines, `memory` as a flow
    /// mapping, tab characters, …). Holds which list and why; the file is left as it is.
    NotEditable(String),
}

impl AgentDefinitionProblem {
    /// A stable machine-readable reason: `unknown_role`, `invalid_role`, `unreadable`, `io`, `malformed`,
    /// `role_mismatch`, `invalid_grant` or `not_editable`.
    pub fn code(&self) -> &'static str {
        match self {
            AgentDefinitionProblem::UnknownRole => "unknown_role",
            AgentDefinitionProblem::InvalidRole(_) => "invalid_role",
            AgentDefinitionProblem::Unreadable(_) => "unreadable",
            AgentDefinitionProblem::Io(_) => "io",
            AgentDefinitionProblem::Malformed(_) => "malformed",
            AgentDefinitionProblem::RoleMismatch { .. } => "role_mismatch",
            AgentDefinitionProblem::InvalidGrant(_) => "invalid_grant",
            AgentDefinitionProblem::NotEditable(_) => "not_editable",
        }
    }
}

/// An agent definition that does not exist, does not parse, declares the wrong role or holds an invalid grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct AgentDefinitionError {
    // Boxed text, so that the error (carried by every error of the service) stays as small as before the note.
    role: Box<str>,
    file: Box<Path>,
    problem: AgentDefinitionProblem,
    /// What the caller adds to the message (where the definitions were looked for, and why there).
    note: Option<Box<str>>,
}

impl AgentDefinitionError {
    /// The error for a role that has no definition at `file` (for actor sources other than a directory).
    pub fn unknown_role(role: &str, file: &Path) -> AgentDefinitionError {
        AgentDefinitionError {
            role: role.into(),
            file: file.into(),
            problem: AgentDefinitionProblem::UnknownRole,
            note: None,
        }
    }

    /// The error of a grant that does not follow the grant grammar, given for the definition of `role` in `file`
    /// (a grant an operator asks to add): the error a definition holding it reports.
    pub fn invalid_grant(role: &str, file: &Path, error: InvalidGrantError) -> AgentDefinitionError {
        AgentDefinitionError {
            role: role.into(),
            file: file.into(),
            problem: AgentDefinitionProblem::InvalidGrant(error),
            note: None,
        }
    }

    /// The role whose definition was asked for (or that the file is named after).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The definition file in question.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The invalid grant, when the problem is one.
    pub fn grant(&self) -> Option<&str> {
        match &self.problem {
            AgentDefinitionProblem::InvalidGrant(e) => Some(e.input()),
            _ => None,
        }
    }

    /// What is wrong.
    pub fn problem(&self) -> &AgentDefinitionProblem {
        &self.problem
    }

    /// Whether the definition could not be read for a reason of the system's ([`AgentDefinitionProblem::Io`]):
    /// a storage failure, not a broken definition.
    pub fn is_io(&self) -> bool {
        matches!(self.problem, AgentDefinitionProblem::Io(_))
    }

    /// The error with `note` added to its message after a `; ` (a caller saying where it looked and why there,
    /// such as which setting chose the agents directory). The role, file and problem are unchanged.
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> AgentDefinitionError {
        self.note = Some(note.into().into_boxed_str());
        self
    }

    fn describe(&self) -> String {
        let text = self.describe_problem();
        match &self.note {
            Some(note) => format!("{text}; {note}"),
            None => text,
        }
    }

    fn describe_problem(&self) -> String {
        let file = self.file.display().to_string();
        let file = memory_id::shown(&file);
        let role = memory_id::shown(&self.role);
        match &self.problem {
            AgentDefinitionProblem::UnknownRole => {
                format!("unknown role `{role}`: no agent definition at `{file}`")
            }
            AgentDefinitionProblem::InvalidRole(e) => format!("agent definition for {e}"),
            AgentDefinitionProblem::Unreadable(why) => {
                format!("agent definition `{file}` could not be read: {why}")
            }
            AgentDefinitionProblem::Io(why) => {
                format!("cannot read agent definition `{file}`: {why}")
            }
            AgentDefinitionProblem::Malformed(why) => {
                format!("agent definition `{file}` is malformed: {why}")
            }
            AgentDefinitionProblem::RoleMismatch { declared } => format!(
                "agent definition `{file}` declares role `{}` but is named for `{role}`",
                memory_id::shown(declared)
            ),
            AgentDefinitionProblem::InvalidGrant(e) => format!("agent definition `{file}`: {e}"),
            AgentDefinitionProblem::NotEditable(why) => {
                format!("agent definition `{file}` cannot be changed in place: {why}; edit the file by hand")
            }
        }
    }
}

/// The error of an edit refused because of the layout of the `operation` list ([`crate::edit`]).
pub(crate) fn not_editable(role: &str, file: &Path, operation: Operation, why: &str) -> AgentDefinitionError {
    AgentDefinitionError {
        role: role.into(),
        file: file.into(),
        problem: AgentDefinitionProblem::NotEditable(format!("its `memory.{operation}` list: {why}")),
        note: None,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDefinition {
    role: String,
    #[serde(default)]
    reports_to: Option<String>,
    #[serde(default)]
    memory: Option<RawMemory>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    #[serde(default)]
    read: Option<Vec<String>>,
    #[serde(default)]
    write: Option<Vec<String>>,
}

/// Parses the text of `<role>.yaml`; `role` is the role the file is named for.
///
/// # Errors
///
/// [`AgentDefinitionError`] when the text is not a definition, declares another role, or holds an invalid grant.
///
/// ```
/// use std::path::Path;
/// use memory_policy::parse_agent_definition;
///
/// let yaml = "role: worker\nreportsTo: main\nmemory:\n  read: [shared]\n  write: ['private:worker']\n";
/// let worker = parse_agent_definition(yaml, "worker", Path::new("agents/worker.yaml")).unwrap();
/// assert_eq!(worker.reports_to().unwrap().as_str(), "main");
///
/// let err = parse_agent_definition("role: main\n", "worker", Path::new("agents/worker.yaml")).unwrap_err();
/// assert_eq!(err.problem().code(), "role_mismatch");
/// ```
pub fn parse_agent_definition(text: &str, role: &str, file: &Path) -> Result<Actor, AgentDefinitionError> {
    let fail = |problem| AgentDefinitionError { role: role.into(), file: file.into(), problem, note: None };
    let expected = Role::parse(role).map_err(|e| fail(AgentDefinitionProblem::InvalidRole(e)))?;
    let raw: RawDefinition = memory_fs::yaml::from_str(text).map_err(|e| {
        fail(AgentDefinitionProblem::Malformed(match e {
            memory_fs::yaml::YamlError::Parse(message) => memory_id::shown_message(&message).to_string(),
            other => other.to_string(),
        }))
    })?;
    if raw.role != expected.as_str() {
        return Err(fail(AgentDefinitionProblem::RoleMismatch { declared: raw.role }));
    }
    let reports_to = raw
        .reports_to
        .map(|r| Role::parse(&r))
        .transpose()
        .map_err(|e| fail(AgentDefinitionProblem::Malformed(format!("reportsTo: {e}"))))?;
    let memory = raw.memory.unwrap_or_default();
    let parse_all = |grants: Option<Vec<String>>| -> Result<Vec<Grant>, AgentDefinitionError> {
        grants
            .unwrap_or_default()
            .iter()
            .map(|g| Grant::parse(g).map_err(|e| fail(AgentDefinitionProblem::InvalidGrant(e))))
            .collect()
    };
    let read = parse_all(memory.read)?;
    let write = parse_all(memory.write)?;
    Ok(Actor::new(expected).with_reports_to(reports_to).with_read(read).with_write(write))
}

/// Loads `<dir>/<role>.yaml`. The role name is validated before any path is built from it.
///
/// # Errors
///
/// [`AgentDefinitionError`]: an invalid role name, no such file (`unknown_role`), an unreadable or malformed file,
/// a role mismatch or an invalid grant.
pub fn load_agent(dir: &Path, role: &str) -> Result<Actor, AgentDefinitionError> {
    let (file, text) = read_definition(dir, role)?;
    parse_agent_definition(&text, role, &file)
}

/// The file of `role` in `dir` and its text, read as [`load_agent`] reads it.
pub(crate) fn read_definition(dir: &Path, role: &str) -> Result<(PathBuf, String), AgentDefinitionError> {
    if let Err(e) = Role::parse(role) {
        return Err(AgentDefinitionError {
            role: role.into(),
            file: dir.into(),
            problem: AgentDefinitionProblem::InvalidRole(e),
            note: None,
        });
    }
    let file = dir.join(format!("{role}.{DEFINITION_EXTENSION}"));
    match crate::file::read_regular(&file, MAX_DEFINITION_BYTES) {
        Ok(text) => Ok((file, text)),
        Err(e) => Err(AgentDefinitionError {
            role: role.into(),
            problem: read_problem(&e),
            file: file.into(),
            note: None,
        }),
    }
}

/// Loads definitions as [`load_agent`] does, reading the file on every load, but parsing its text again only when
/// it differs from the text last parsed for that file: for a server that loads a caller's definition on every
/// request.
///
/// Every [`load`](Self::load) opens and reads the file, so an edited, removed or replaced definition takes effect
/// at the very next load, exactly as with [`load_agent`]; only the YAML parse of an unchanged text is saved, and the
/// result is the same [`Actor`] or the same error. It keeps, per definition file that last parsed without error,
/// its text (at most [`MAX_DEFINITION_BYTES`]) and its actor: one per role whose file an operator put in the
/// directory; a failed load forgets the file.
///
/// ```
/// use memory_policy::{DefinitionCache, Operation};
///
/// let dir = tempfile::tempdir().unwrap();
/// let file = dir.path().join("worker.yaml");
/// std::fs::write(&file, "role: worker\nmemory:\n  read: [shared]\n").unwrap();
/// let cache = DefinitionCache::new();
/// assert_eq!(cache.load(dir.path(), "worker").unwrap().grants(Operation::Read).len(), 1);
/// // An edit is seen at the next load.
/// std::fs::write(&file, "role: worker\nmemory:\n  read: [shared, 'project:alp']\n").unwrap();
/// assert_eq!(cache.load(dir.path(), "worker").unwrap().grants(Operation::Read).len(), 2);
/// std::fs::remove_file(&file).unwrap();
/// assert_eq!(cache.load(dir.path(), "worker").unwrap_err().problem().code(), "unknown_role");
/// ```
#[derive(Debug, Default)]
pub struct DefinitionCache {
    parsed: Mutex<HashMap<PathBuf, (String, Actor)>>,
}

impl DefinitionCache {
    /// An empty cache.
    pub fn new() -> DefinitionCache {
        DefinitionCache::default()
    }

    /// The definition of `role` in `dir`, as [`load_agent`] returns it.
    ///
    /// # Errors
    ///
    /// As [`load_agent`].
    pub fn load(&self, dir: &Path, role: &str) -> Result<Actor, AgentDefinitionError> {
        let (file, text) = read_definition(dir, role)?;
        // A panic while the map was held cannot leave an entry half-written: each is inserted whole.
        let parsed = || self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((known, actor)) = parsed().get(&file)
            && *known == text
        {
            return Ok(actor.clone());
        }
        match parse_agent_definition(&text, role, &file) {
            Ok(actor) => {
                parsed().insert(file, (text, actor.clone()));
                Ok(actor)
            }
            Err(e) => {
                parsed().remove(&file);
                Err(e)
            }
        }
    }
}

/// What a failed read of a definition means. The file's absence (no such file, or a path component that is not a
/// directory) is an unknown role. What the reader itself refused (a symlink, a directory, a FIFO, too large, not
/// UTF-8) is a definition that cannot be used. Every other error comes from the system (too many open files, a
/// permission error, an I/O error): it says nothing about the definition, so it is [`AgentDefinitionProblem::Io`].
fn read_problem(error: &io::Error) -> AgentDefinitionProblem {
    match (error.raw_os_error(), error.kind()) {
        (_, io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => AgentDefinitionProblem::UnknownRole,
        (Some(_), _) => AgentDefinitionProblem::Io(memory_id::shown_message(&error.to_string()).to_string()),
        (None, _) => {
            AgentDefinitionProblem::Unreadable(memory_id::shown_message(&error.to_string()).to_string())
        }
    }
}

/// The roles that have a definition in `dir`: every `<role>.yaml` whose stem is a valid role, sorted. A directory
/// that does not exist has no roles.
///
/// # Errors
///
/// [`AgentDefinitionError`] (`unreadable`) when the directory exists but cannot be listed.
pub fn list_roles(dir: &Path) -> Result<Vec<Role>, AgentDefinitionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            let problem = match e.raw_os_error() {
                Some(_) => AgentDefinitionProblem::Io(memory_id::shown_message(&e.to_string()).to_string()),
                None => {
                    AgentDefinitionProblem::Unreadable(memory_id::shown_message(&e.to_string()).to_string())
                }
            };
            return Err(AgentDefinitionError { role: "".into(), file: dir.into(), problem, note: None });
        }
    };
    let mut roles: Vec<Role> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".yaml")?;
            Role::parse(stem).ok()
        })
        .collect();
    roles.sort();
    Ok(roles)
}

/// Loads every definition in `dir`, sorted by role.
///
/// # Errors
///
/// The first [`AgentDefinitionError`] met, in role order.
pub fn load_agents(dir: &Path) -> Result<Vec<Actor>, AgentDefinitionError> {
    list_roles(dir)?.iter().map(|role| load_agent(dir, role.as_str())).collect()
}

impl fmt::Display for AgentDefinitionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io;

    use super::{AgentDefinitionProblem, read_problem};

    /// An error of the system is I/O, whatever it is; the file's absence is an unknown role; what the reader
    /// refused itself (no OS error) is a definition that cannot be used.
    #[test]
    fn read_errors_map_to_their_problem() {
        let os = |code| io::Error::from_raw_os_error(code);
        for code in
            [memory_fs::Errno::MFILE, memory_fs::Errno::NFILE, memory_fs::Errno::ACCESS, memory_fs::Errno::IO]
        {
            let problem = read_problem(&os(code.raw_os_error()));
            assert!(matches!(problem, AgentDefinitionProblem::Io(_)), "{code:?}: {problem:?}");
        }
        let emfile = read_problem(&os(memory_fs::Errno::MFILE.raw_os_error()));
        assert_eq!(emfile.code(), "io");
        assert!(
            matches!(&emfile, AgentDefinitionProblem::Io(why) if why.contains("os error 24")),
            "{emfile:?}"
        );
        for code in [memory_fs::Errno::NOENT, memory_fs::Errno::NOTDIR] {
            assert_eq!(
                read_problem(&os(code.raw_os_error())),
                AgentDefinitionProblem::UnknownRole,
                "{code:?}"
            );
        }
        for refused in [
            io::Error::new(io::ErrorKind::InvalidInput, "it is a directory, not a regular file"),
            io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8"),
        ] {
            assert!(matches!(read_problem(&refused), AgentDefinitionProblem::Unreadable(_)), "{refused}");
        }
    }
}
