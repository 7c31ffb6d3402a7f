//! Moving a name, within a directory or from one directory to another: over what is there, or never over it.

use std::os::fd::BorrowedFd;

use rustix::fs::{self, AtFlags, RenameFlags};
use rustix::io::Errno;

use crate::root::retry;

/// What [`rename_noreplace`] does where the kernel or the file system offers no `RENAME_NOREPLACE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// `link` the file to the new name (which fails with `EEXIST` when something is there), then `unlink` the old
    /// name. Not atomic: for an instant the file has both names, and a crash between the two steps leaves both
    /// (when the old name is a temporary file of the same directory, [`is_own_leftover_link`] recognises it).
    ///
    /// [`is_own_leftover_link`]: crate::is_own_leftover_link
    Link,
    /// None: the call fails with `ENOSYS`, nothing is moved, and the caller moves the file its own way.
    Refuse,
}

/// Moves `from` in `from_dir` to `to` in `to_dir` (the same directory or another one on the same mount), never over
/// anything at `to`: `renameat2` with `RENAME_NOREPLACE`, one atomic step. Where the kernel (before Linux 3.15) or
/// the file system does not offer it (`EINVAL`, `ENOSYS`, `ENOTSUP`), `fallback` says what is done instead.
///
/// # Errors
///
/// The system's error: `EEXIST` when something is at `to`, `EXDEV` when the two directories are on different
/// mounts, `ENOSYS` with [`Fallback::Refuse`] where `RENAME_NOREPLACE` is not offered.
pub fn rename_noreplace(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
    fallback: Fallback,
) -> Result<(), Errno> {
    match retry(|| fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE)) {
        Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => match fallback {
            Fallback::Link => link_then_unlink(from_dir, from, to_dir, to),
            Fallback::Refuse => Err(Errno::NOSYS),
        },
        other => other,
    }
}

/// [`Fallback::Link`]: `link`, then `unlink` of the old name (whose failure leaves a second name, which is not an
/// error of the move).
pub(crate) fn link_then_unlink(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> Result<(), Errno> {
    retry(|| fs::linkat(from_dir, from, to_dir, to, AtFlags::empty()))?;
    let _ = fs::unlinkat(from_dir, from, AtFlags::empty());
    Ok(())
}

/// Moves `from` in `from_dir` to `to` in `to_dir` (the same directory or another one on the same mount), replacing
/// whatever file is at `to` atomically (`renameat`).
///
/// # Errors
///
/// The system's error of `renameat`: `EXDEV` when the two directories are on different mounts.
pub fn rename_replace(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> Result<(), Errno> {
    retry(|| fs::renameat(from_dir, from, to_dir, to))
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd as _;

    use rustix::fs::{Mode, OFlags};

    use super::*;

    fn open_dir(path: &std::path::Path) -> std::os::fd::OwnedFd {
        fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap()
    }

    #[test]
    fn a_move_without_replacing_refuses_an_existing_target_and_crosses_directories() {
        for fallback in [Fallback::Link, Fallback::Refuse] {
            let tmp = tempfile::tempdir().unwrap();
            let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
            std::fs::create_dir(&a).unwrap();
            std::fs::create_dir(&b).unwrap();
            std::fs::write(a.join("one"), "one").unwrap();
            std::fs::write(b.join("taken"), "taken").unwrap();
            let (a_fd, b_fd) = (open_dir(&a), open_dir(&b));
            assert_eq!(
                rename_noreplace(a_fd.as_fd(), "one", b_fd.as_fd(), "taken", fallback),
                Err(Errno::EXIST)
            );
            assert_eq!(std::fs::read_to_string(b.join("taken")).unwrap(), "taken");
            assert_eq!(std::fs::read_to_string(a.join("one")).unwrap(), "one");
            rename_noreplace(a_fd.as_fd(), "one", b_fd.as_fd(), "moved", fallback).unwrap();
            assert!(!a.join("one").exists());
            assert_eq!(std::fs::read_to_string(b.join("moved")).unwrap(), "one");
            // Within one directory too.
            rename_noreplace(b_fd.as_fd(), "moved", b_fd.as_fd(), "again", fallback).unwrap();
            assert_eq!(std::fs::read_to_string(b.join("again")).unwrap(), "one");
        }
    }

    #[test]
    fn the_link_fallback_refuses_an_existing_target_and_crosses_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("one"), "one").unwrap();
        std::fs::write(b.join("taken"), "taken").unwrap();
        let (a_fd, b_fd) = (open_dir(&a), open_dir(&b));
        assert_eq!(link_then_unlink(a_fd.as_fd(), "one", b_fd.as_fd(), "taken"), Err(Errno::EXIST));
        assert_eq!(std::fs::read_to_string(b.join("taken")).unwrap(), "taken");
        link_then_unlink(a_fd.as_fd(), "one", b_fd.as_fd(), "moved").unwrap();
        assert!(!a.join("one").exists());
        assert_eq!(std::fs::read_to_string(b.join("moved")).unwrap(), "one");
    }

    #[test]
    fn a_replacing_move_crosses_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("one"), "new").unwrap();
        std::fs::write(b.join("taken"), "old").unwrap();
        rename_replace(open_dir(&a).as_fd(), "one", open_dir(&b).as_fd(), "taken").unwrap();
        assert!(!a.join("one").exists());
        assert_eq!(std::fs::read_to_string(b.join("taken")).unwrap(), "new");
    }
}
