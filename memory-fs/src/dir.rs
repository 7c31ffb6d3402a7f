//! Making a directory below a root.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self, FileType, Mode};
use rustix::io::Errno;

use crate::root::{DIR_FLAGS, retry};
use crate::{DIR_MODE, Miss, RootHandle};

/// The directory [`make_dir`] opened, and whether it made it.
#[derive(Debug)]
pub enum MadeDir {
    /// Made by this call, with mode 0700.
    Created(OwnedFd),
    /// Already there (whatever its mode).
    Existed(OwnedFd),
}

impl MadeDir {
    /// The directory's handle.
    pub fn into_fd(self) -> OwnedFd {
        match self {
            MadeDir::Created(fd) | MadeDir::Existed(fd) => fd,
        }
    }
}

/// Which step of [`make_dir`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MakeDirError {
    /// Creating the directory, with the system's error (never `EEXIST`: an existing name is opened).
    Create(Errno),
    /// Opening what is at the name, as [`RootHandle::step_dir`] reports it: a symlink or a file in the way, the
    /// name gone again, or another failure.
    Open(Miss),
    /// Setting the new directory's mode to 0700 (the directory is left in place).
    SetMode(Errno),
}

/// Makes the directory `name` (one component) in `dir` (below `root`) with mode 0700 unless something is at the
/// name already, and opens the directory at the name without following a symlink ([`RootHandle::step_dir`]).
///
/// A directory this call made is `fchmod`ed to exactly 0700 through its handle, so neither the umask nor a default
/// ACL decides its mode; one that was there already is opened as it is.
///
/// # Errors
///
/// [`MakeDirError`], saying which step failed; a name that is `..` or holds a `/` is
/// [`MakeDirError::Open`]`(`[`Miss::Escape`]`)` and nothing is created.
pub fn make_dir(root: &RootHandle, dir: BorrowedFd<'_>, name: &str) -> Result<MadeDir, MakeDirError> {
    if name == ".." || name.contains('/') {
        return Err(MakeDirError::Open(Miss::Escape));
    }
    let created = match retry(|| fs::mkdirat(dir, name, DIR_MODE)) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(errno) => return Err(MakeDirError::Create(errno)),
    };
    let fd = root.step_dir(dir, name).map_err(MakeDirError::Open)?;
    if !created {
        return Ok(MadeDir::Existed(fd));
    }
    retry(|| fs::fchmod(&fd, DIR_MODE)).map_err(MakeDirError::SetMode)?;
    Ok(MadeDir::Created(fd))
}

/// Makes the directory at `path` and every missing parent, as `mkdir -p` does, each directory it makes with mode
/// exactly 0700 (`fchmod`ed through its handle, as [`make_dir`] does); an existing directory is left as it is.
/// For a root named by its operator, before a [`RootHandle`] holds it: the components of `path` are resolved as the
/// system resolves them (a symlink among the existing parents is followed), only the directories made are opened
/// without following one.
///
/// # Errors
///
/// The system's error of making, opening or setting the mode of a directory; `EEXIST` when something other than a
/// directory is at `path`.
pub fn make_dir_all(path: &Path) -> Result<(), Errno> {
    match retry(|| fs::mkdir(path, DIR_MODE)) {
        Ok(()) => {}
        Err(Errno::NOENT) => {
            match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => make_dir_all(parent)?,
                _ => return Err(Errno::NOENT),
            }
            match retry(|| fs::mkdir(path, DIR_MODE)) {
                Ok(()) => {}
                Err(Errno::EXIST) => return existing_dir(path),
                Err(errno) => return Err(errno),
            }
        }
        Err(Errno::EXIST) => return existing_dir(path),
        Err(errno) => return Err(errno),
    }
    let fd = retry(|| fs::open(path, DIR_FLAGS, Mode::empty()))?;
    retry(|| fs::fchmod(&fd, DIR_MODE))
}

/// `Ok` when `path` is a directory (made by someone else meanwhile, or there all along), else `EEXIST`.
fn existing_dir(path: &Path) -> Result<(), Errno> {
    match retry(|| fs::stat(path)) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => Ok(()),
        _ => Err(Errno::EXIST),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Path;
    use std::process::Command;

    use super::*;

    const CHILD_DIR: &str = "MEMORY_FS_MAKE_DIR_IN";

    /// Not a test of its own: makes `made` in the directory the parent test names, under the umask it was started
    /// with, and does nothing unless started by that test.
    #[test]
    fn make_dir_child() {
        let Ok(dir) = std::env::var(CHILD_DIR) else { return };
        let root = RootHandle::open(Path::new(&dir), false).unwrap();
        assert!(matches!(make_dir(&root, root.fd(), "made"), Ok(MadeDir::Created(_))));
        assert!(matches!(make_dir(&root, root.fd(), "made"), Ok(MadeDir::Existed(_))));
        make_dir_all(&Path::new(&dir).join("deep/er")).unwrap();
        make_dir_all(&Path::new(&dir).join("deep/er")).unwrap();
    }

    /// The modes of `made`, `deep` and `deep/er` when [`make_dir_child`] runs under `umask`.
    fn modes_under(umask: &str) -> [u32; 3] {
        let tmp = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        // The umask is the process's: set in a child, so that no other test of this binary runs under it.
        let status = Command::new("sh")
            .args([
                "-c",
                "umask \"$1\" && exec \"$2\" --exact dir::tests::make_dir_child --test-threads=1",
                "sh",
            ])
            .arg(umask)
            .arg(&exe)
            .env(CHILD_DIR, tmp.path())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "umask {umask}");
        let mode = |rel: &str| std::fs::metadata(tmp.path().join(rel)).unwrap().permissions().mode() & 0o7777;
        [mode("made"), mode("deep"), mode("deep/er")]
    }

    #[test]
    fn a_made_directory_is_0700_whatever_the_umask() {
        // `mkdir` alone would leave 0500 and 0400 under 0277 and 0377 (its owner could not make anything in it), and
        // 0700 under the others.
        for umask in ["0277", "0377", "0077", "0022", "0"] {
            assert_eq!(modes_under(umask), [0o700; 3], "umask {umask}");
        }
    }

    #[test]
    fn an_existing_directory_is_opened_as_it_is_and_nothing_else_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("there")).unwrap();
        std::fs::set_permissions(tmp.path().join("there"), std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(tmp.path().join("file"), "").unwrap();
        std::os::unix::fs::symlink("there", tmp.path().join("link")).unwrap();
        for force_walk in [false, true] {
            let root = RootHandle::open(tmp.path(), force_walk).unwrap();
            assert!(matches!(make_dir(&root, root.fd(), "there"), Ok(MadeDir::Existed(_))));
            let mode = std::fs::metadata(tmp.path().join("there")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o750);
            assert_eq!(
                make_dir(&root, root.fd(), "file").unwrap_err(),
                MakeDirError::Open(Miss::NotDirectory)
            );
            assert_eq!(make_dir(&root, root.fd(), "link").unwrap_err(), MakeDirError::Open(Miss::Symlink));
            assert_eq!(make_dir(&root, root.fd(), "..").unwrap_err(), MakeDirError::Open(Miss::Escape));
            assert_eq!(make_dir(&root, root.fd(), "a/b").unwrap_err(), MakeDirError::Open(Miss::Escape));
            assert!(!tmp.path().join("a").exists());
        }
    }

    #[test]
    fn make_dir_all_leaves_an_existing_directory_as_it_is_and_refuses_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let there = tmp.path().join("there");
        std::fs::create_dir(&there).unwrap();
        std::fs::set_permissions(&there, std::fs::Permissions::from_mode(0o750)).unwrap();
        make_dir_all(&there).unwrap();
        make_dir_all(&there.join("sub")).unwrap();
        assert_eq!(std::fs::metadata(&there).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(std::fs::metadata(there.join("sub")).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::write(tmp.path().join("file"), "").unwrap();
        assert_eq!(make_dir_all(&tmp.path().join("file")), Err(Errno::EXIST));
        assert_eq!(make_dir_all(&tmp.path().join("file/sub")), Err(Errno::NOTDIR));
    }
}
