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
    use std::os::fd::{AsFd as _, OwnedFd};
    use std::path::{Path, PathBuf};

    use rustix::fs::{Mode, OFlags};

    use super::*;

    /// Directories `a` (holding `one`, "one") and `b` (holding `taken`, "taken"), and their handles.
    struct TwoDirs {
        _tmp: tempfile::TempDir,
        a: PathBuf,
        b: PathBuf,
        a_fd: OwnedFd,
        b_fd: OwnedFd,
    }

    fn two_dirs() -> TwoDirs {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("one"), "one").unwrap();
        std::fs::write(b.join("taken"), "taken").unwrap();
        let open = |path: &Path| {
            fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap()
        };
        let (a_fd, b_fd) = (open(&a), open(&b));
        TwoDirs { _tmp: tmp, a, b, a_fd, b_fd }
    }

    type Move = fn(BorrowedFd<'_>, &str, BorrowedFd<'_>, &str) -> Result<(), Errno>;

    /// Every way of moving without replacing: both fallbacks (unused where `RENAME_NOREPLACE` works), and the link
    /// fallback itself.
    const NO_REPLACE: [(&str, Move); 3] = [
        ("rename_noreplace, Link", |f, from, t, to| rename_noreplace(f, from, t, to, Fallback::Link)),
        ("rename_noreplace, Refuse", |f, from, t, to| rename_noreplace(f, from, t, to, Fallback::Refuse)),
        ("link_then_unlink", link_then_unlink),
    ];

    #[test]
    fn a_move_without_replacing_refuses_an_existing_target_and_crosses_directories() {
        for (way, move_) in NO_REPLACE {
            let d = two_dirs();
            assert_eq!(move_(d.a_fd.as_fd(), "one", d.b_fd.as_fd(), "taken"), Err(Errno::EXIST), "{way}");
            assert_eq!(std::fs::read_to_string(d.b.join("taken")).unwrap(), "taken", "{way}");
            assert_eq!(std::fs::read_to_string(d.a.join("one")).unwrap(), "one", "{way}");
            move_(d.a_fd.as_fd(), "one", d.b_fd.as_fd(), "moved").unwrap();
            assert!(!d.a.join("one").exists(), "{way}");
            assert_eq!(std::fs::read_to_string(d.b.join("moved")).unwrap(), "one", "{way}");
            // Within one directory too.
            move_(d.b_fd.as_fd(), "moved", d.b_fd.as_fd(), "again").unwrap();
            assert_eq!(std::fs::read_to_string(d.b.join("again")).unwrap(), "one", "{way}");
        }
    }

    #[test]
    fn a_replacing_move_crosses_directories() {
        let d = two_dirs();
        rename_replace(d.a_fd.as_fd(), "one", d.b_fd.as_fd(), "taken").unwrap();
        assert!(!d.a.join("one").exists());
        assert_eq!(std::fs::read_to_string(d.b.join("taken")).unwrap(), "one");
    }
}
