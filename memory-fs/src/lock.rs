//! Bounded `flock` waits.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;
use rustix::io::Errno;

/// Why a lock was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockFailure {
    /// Someone else held it for the whole timeout.
    Busy,
    /// The lock file could not be opened or locked.
    Io(Errno),
}

/// An `flock` held on a lock file until dropped (the kernel also drops it when the process dies).
#[derive(Debug)]
pub struct LockGuard {
    _fd: OwnedFd,
}

/// `flock` (exclusive or shared) on `fd` with a bounded wait: a non-blocking attempt, then retries with pauses
/// growing from 100 µs to 10 ms until `timeout` has passed. An uncontended lock costs one system call; a wait never
/// outlasts `timeout` by more than one pause. `flock` locks belong to open file descriptions, so two descriptors
/// opened separately exclude each other even within one process.
///
/// # Errors
///
/// [`LockFailure::Busy`] when the lock stayed held for `timeout`; [`LockFailure::Io`] for any other failure.
pub fn flock_within(fd: BorrowedFd<'_>, exclusive: bool, timeout: Duration) -> Result<(), LockFailure> {
    let operation = if exclusive {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    let start = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match rustix::fs::flock(fd, operation) {
            Ok(()) => return Ok(()),
            Err(Errno::INTR) => {}
            Err(Errno::WOULDBLOCK) => {
                let waited = start.elapsed();
                if waited >= timeout {
                    return Err(LockFailure::Busy);
                }
                std::thread::sleep(pause.min(timeout - waited));
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(other) => return Err(LockFailure::Io(other)),
        }
    }
}

/// Takes an `flock` on `name` in `dir` (below `root`, never following a symlink), creating the file (0600) if
/// needed, waiting at most `timeout`. Each call opens its own file description, so the lock also excludes other
/// threads of this process. Lock files are never deleted: a lock on a file that a rename replaces would be lost.
///
/// # Errors
///
/// As [`flock_within`]; opening the lock file is [`LockFailure::Io`].
#[cfg(target_os = "linux")]
pub fn lock_file(
    root: &crate::RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    exclusive: bool,
    timeout: Duration,
) -> Result<LockGuard, LockFailure> {
    use rustix::fs::OFlags;
    use std::os::fd::AsFd as _;
    let fd =
        root.open_at(dir, name, OFlags::RDWR | OFlags::CREATE, crate::FILE_MODE).map_err(LockFailure::Io)?;
    flock_within(fd.as_fd(), exclusive, timeout)?;
    Ok(LockGuard { _fd: fd })
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd as _;

    use super::*;

    #[test]
    fn a_held_lock_is_busy_for_another_description_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = std::fs::File::create(&path).unwrap();
        let second = std::fs::File::open(&path).unwrap();
        flock_within(first.as_fd(), true, Duration::ZERO).unwrap();
        assert_eq!(flock_within(second.as_fd(), false, Duration::from_millis(20)), Err(LockFailure::Busy));
        drop(first);
        // Not `Duration::ZERO`: a test of this binary that starts a child process may fork while `first` is open,
        // and the child holds the description (and so the lock) until its exec closes it.
        assert_eq!(flock_within(second.as_fd(), false, Duration::from_secs(5)), Ok(()));
    }
}
