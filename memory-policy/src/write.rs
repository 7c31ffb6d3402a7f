//! Writing definitions: an operator's changes to the agents directory, under the rules its readers hold it to.
//!
//! Every file is written atomically and durably (a fresh 0600 temporary file, synced, renamed over the name, the
//! directory synced: `memory_fs::write_atomic`), so a loader sees the old definition or the new one, never a part;
//! a definition is read only as [`load_agent`](crate::load_agent) reads it (a regular file, no symlink, at most
//! [`MAX_DEFINITION_BYTES`](crate::MAX_DEFINITION_BYTES)); and the directory is locked (`flock` on its own handle)
//! while a change reads and writes it, so two operators' changes to one role never lose one of them.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memory_fs::{Install, LockFailure, RootHandle, WriteError, remove_durably, write_atomic};

use crate::definition::read_definition;
use crate::{AgentDefinitionError, DEFINITION_EXTENSION, Role};

/// The agents directory, open and locked against other writers for as long as this value lives.
///
/// ```
/// use memory_policy::{DefinitionWriter, Role, load_agent};
///
/// let dir = tempfile::tempdir().unwrap();
/// let agents = dir.path().join("agents");
/// let writer = DefinitionWriter::lock(&agents, std::time::Duration::from_secs(5)).unwrap();
/// let qa = Role::parse("qa").unwrap();
/// assert!(writer.create(&qa, "role: qa\n").unwrap());
/// assert!(!writer.create(&qa, "role: qa\n").unwrap(), "never overwrites");
/// assert_eq!(writer.read("qa").unwrap(), "role: qa\n");
/// assert!(load_agent(&agents, "qa").is_ok());
/// writer.remove(&qa).unwrap();
/// assert_eq!(load_agent(&agents, "qa").unwrap_err().problem().code(), "unknown_role");
/// ```
#[derive(Debug)]
pub struct DefinitionWriter {
    path: PathBuf,
    handle: RootHandle,
}

impl DefinitionWriter {
    /// Opens the directory `dir` (made 0700, with its missing parents, when it does not exist) and locks it,
    /// waiting at most `timeout` for another writer to finish.
    ///
    /// # Errors
    ///
    /// The system's error of making, opening or locking the directory; `WouldBlock` when another writer held it for
    /// the whole `timeout`.
    pub fn lock(dir: &Path, timeout: Duration) -> io::Result<DefinitionWriter> {
        if std::fs::symlink_metadata(dir).is_err() {
            memory_fs::make_dir_all(dir).map_err(io::Error::from)?;
        }
        let path = dir.canonicalize()?;
        let handle = RootHandle::open(&path, false).map_err(io::Error::from)?;
        memory_fs::flock_within(handle.fd(), true, timeout).map_err(|failure| match failure {
            LockFailure::Busy => io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("another change held the agents directory for {} s", timeout.as_secs()),
            ),
            LockFailure::Io(errno) => io::Error::from(errno),
        })?;
        Ok(DefinitionWriter { path, handle })
    }

    /// The directory, canonical.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file of `role`'s definition.
    pub fn file(&self, role: &Role) -> PathBuf {
        self.path.join(file_name(role))
    }

    /// The text of `role`'s definition, read as [`load_agent`](crate::load_agent) reads it.
    ///
    /// # Errors
    ///
    /// As [`load_agent`](crate::load_agent) before it parses: an invalid role, no definition (`unknown_role`), a
    /// file that is not a regular file, too large or not UTF-8, or a failure of the system's.
    pub fn read(&self, role: &str) -> Result<String, AgentDefinitionError> {
        read_definition(&self.path, role).map(|(_, text)| text)
    }

    /// Writes `text` as `role`'s new definition; `false` (and nothing written) when something is at its name.
    ///
    /// # Errors
    ///
    /// The system's error of a step of the write; the directory is then as it was.
    pub fn create(&self, role: &Role, text: &str) -> io::Result<bool> {
        match write_atomic(
            &self.handle,
            self.handle.fd(),
            &file_name(role),
            text.as_bytes(),
            Install::NoReplace,
        ) {
            Ok(()) => Ok(true),
            Err(WriteError::Exists) => Ok(false),
            Err(other) => Err(write_error(other)),
        }
    }

    /// Replaces `role`'s definition with `text` (whatever was at the name is replaced, never followed).
    ///
    /// # Errors
    ///
    /// The system's error of a step of the write; the old definition is then in place.
    pub fn replace(&self, role: &Role, text: &str) -> io::Result<()> {
        write_atomic(&self.handle, self.handle.fd(), &file_name(role), text.as_bytes(), Install::Replace)
            .map_err(write_error)
    }

    /// Removes `role`'s definition.
    ///
    /// # Errors
    ///
    /// The system's error (`NotFound` when there is none).
    pub fn remove(&self, role: &Role) -> io::Result<()> {
        remove_durably(self.handle.fd(), &file_name(role)).map_err(io::Error::from)
    }
}

fn file_name(role: &Role) -> String {
    format!("{role}.{DEFINITION_EXTENSION}")
}

fn write_error(error: WriteError) -> io::Error {
    match error {
        WriteError::CreateTemp(errno)
        | WriteError::Write(errno)
        | WriteError::Install(errno)
        | WriteError::SyncDir(errno) => io::Error::from(errno),
        WriteError::Exists => io::Error::from(io::ErrorKind::AlreadyExists),
    }
}
