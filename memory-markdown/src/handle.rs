//! Race-free file access below the memory root: everything is resolved from a held directory handle, one component
//! at a time, never following a symbolic link.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{
    self, AtFlags, FileType, FlockOperation, Mode, OFlags, RawDir, RenameFlags, ResolveFlags, Stat,
};
use rustix::io::Errno;

use memory_entry::{StorageError, StorageErrorKind};

/// How paths below the root are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resolution {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: the kernel refuses any symlink and any escape.
    Openat2,
    /// `openat` with `O_NOFOLLOW | O_DIRECTORY`, one component at a time, from the root handle: the fallback when
    /// `openat2` is missing (`ENOSYS`, Linux before 5.6) or filtered (`EPERM`, some container sandboxes).
    ComponentWalk,
}

/// Why a path below the root could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    /// A component does not exist.
    NotFound,
    /// A component is not a directory (a file where a directory was expected).
    NotDirectory,
    /// A component is a symbolic link.
    Symlink,
    /// The path would leave the root (never for valid components).
    Escape,
    /// Any other failure.
    Io(Errno),
}

impl Miss {
    fn from_errno(errno: Errno) -> Miss {
        match errno {
            Errno::NOENT => Miss::NotFound,
            Errno::NOTDIR => Miss::NotDirectory,
            Errno::LOOP => Miss::Symlink,
            Errno::XDEV => Miss::Escape,
            other => Miss::Io(other),
        }
    }
}

const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC).union(OFlags::NOFOLLOW);
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);
/// Files are created 0600, directories 0700.
pub(crate) const FILE_MODE: Mode = Mode::RUSR.union(Mode::WUSR);
pub(crate) const DIR_MODE: Mode = Mode::RWXU;

/// Retries a system call interrupted by a signal (and `openat2`'s `EAGAIN`, which asks for a retry).
fn retry<T>(mut call: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
    let mut attempts = 0;
    loop {
        match call() {
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
            other => return other,
        }
    }
}

/// The canonical memory root, held open.
#[derive(Debug)]
pub(crate) struct RootHandle {
    fd: OwnedFd,
    resolution: Resolution,
}

impl RootHandle {
    /// Opens the canonical root directory. `force_walk` skips `openat2` even where it works.
    pub(crate) fn open(canonical: &Path, force_walk: bool) -> Result<RootHandle, Errno> {
        let fd = retry(|| fs::open(canonical, DIR_FLAGS, Mode::empty()))?;
        let resolution = if force_walk {
            Resolution::ComponentWalk
        } else {
            match retry(|| fs::openat2(&fd, c".", DIR_FLAGS, Mode::empty(), RESOLVE)) {
                Ok(_) => Resolution::Openat2,
                Err(Errno::NOSYS | Errno::PERM) => Resolution::ComponentWalk,
                Err(other) => return Err(other),
            }
        };
        Ok(RootHandle { fd, resolution })
    }

    pub(crate) fn resolution(&self) -> Resolution {
        self.resolution
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens the directory at `rel` (components below the root; empty for the root itself).
    pub(crate) fn open_dir(&self, rel: &[&str]) -> Result<OwnedFd, Miss> {
        if rel.is_empty() {
            return retry(|| fs::openat(&self.fd, c".", DIR_FLAGS, Mode::empty())).map_err(Miss::from_errno);
        }
        if self.resolution == Resolution::Openat2 {
            let path = rel.join("/");
            match retry(|| fs::openat2(&self.fd, path.as_str(), DIR_FLAGS, Mode::empty(), RESOLVE)) {
                Ok(fd) => return Ok(fd),
                // `ENOTDIR` does not say whether a file or a symlink was in the way: the walk below tells.
                Err(Errno::NOTDIR) => {}
                Err(other) => return Err(Miss::from_errno(other)),
            }
        }
        let mut current = self.step_dir(self.fd(), rel[0])?;
        for name in &rel[1..] {
            current = self.step_dir(current.as_fd(), name)?;
        }
        Ok(current)
    }

    /// Opens the directory `name` (one component) inside `dir`, without following a symlink.
    pub(crate) fn step_dir(&self, dir: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, Miss> {
        let opened = match self.resolution {
            Resolution::Openat2 => retry(|| fs::openat2(dir, name, DIR_FLAGS, Mode::empty(), RESOLVE)),
            Resolution::ComponentWalk => retry(|| fs::openat(dir, name, DIR_FLAGS, Mode::empty())),
        };
        match opened {
            Ok(fd) => Ok(fd),
            // `O_DIRECTORY | O_NOFOLLOW` on a symlink is `ENOTDIR`, not `ELOOP`. A directory seen now was
            // something else a moment ago: someone is swapping it, most likely with a symlink, so it counts as one.
            Err(Errno::NOTDIR) => match kind_at(dir, name) {
                Ok(FileType::Symlink | FileType::Directory) => Err(Miss::Symlink),
                Err(Errno::NOENT) => Err(Miss::NotFound),
                _ => Err(Miss::NotDirectory),
            },
            Err(other) => Err(Miss::from_errno(other)),
        }
    }

    /// Opens the file `name` (one component) inside `dir`, never following a symlink (`ELOOP` if it is one).
    pub(crate) fn open_at(
        &self,
        dir: BorrowedFd<'_>,
        name: &str,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, Errno> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match self.resolution {
            Resolution::Openat2 => retry(|| fs::openat2(dir, name, flags, mode, RESOLVE)),
            Resolution::ComponentWalk => retry(|| fs::openat(dir, name, flags, mode)),
        }
    }
}

/// What is at a name below the root, found without opening anything but a regular file.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file, open for reading, with what `fstat` said of it.
    Regular { fd: OwnedFd, stat: Box<Stat> },
    /// A symbolic link: never followed.
    Symlink,
    /// A directory.
    Directory,
    /// A FIFO, socket or device: never opened for reading (a FIFO would block, a device's driver would run).
    Special,
}

/// Opens the regular file `name` in `dir` for reading, and nothing else: the name is resolved with
/// `O_PATH | O_NOFOLLOW` (which opens no file and runs no driver), `fstat` tells what it is, and only a regular
/// file is opened for reading, through `/proc/self/fd` (the same inode, never the name again). Where procfs is
/// not available, the name is opened again with `O_NOFOLLOW | O_NONBLOCK` and must be the same inode; only that
/// fallback leaves a window in which a device swapped in by someone who can write the directory would be opened.
pub(crate) fn open_regular(root: &RootHandle, dir: BorrowedFd<'_>, name: &str) -> Result<Opened, Errno> {
    let handle = root.open_at(dir, name, OFlags::PATH, Mode::empty())?;
    let stat = retry(|| fs::fstat(&handle))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => return Ok(Opened::Symlink),
        FileType::Directory => return Ok(Opened::Directory),
        _ => return Ok(Opened::Special),
    }
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    if let Ok(proc_fd) = rustix_linux_procfs::proc_self_fd() {
        // The descriptor's number, formatted without allocating.
        let number = rustix::path::DecInt::from_fd(&handle);
        match retry(|| fs::openat(proc_fd, number.as_c_str(), flags, Mode::empty())) {
            Ok(fd) => return Ok(Opened::Regular { fd, stat: Box::new(stat) }),
            Err(Errno::NOENT | Errno::ACCESS | Errno::PERM) => {}
            Err(other) => return Err(other),
        }
    }
    let fd = root.open_at(dir, name, flags | OFlags::NONBLOCK, Mode::empty())?;
    let again = retry(|| fs::fstat(&fd))?;
    if (again.st_dev, again.st_ino) != (stat.st_dev, stat.st_ino) {
        // Swapped between the two opens: whatever is there now was not what was checked.
        return Err(Errno::NOENT);
    }
    Ok(Opened::Regular { fd, stat: Box::new(stat) })
}

/// Whether the second link of a file with two links is one of the store's own temporary files in the same
/// directory: a create on a kernel without `RENAME_NOREPLACE` links the temporary file to the entry's name and then
/// unlinks it, and a crash between the two leaves both names. Such a file is the store's own entry, not an alias.
pub(crate) fn is_own_leftover_link(dir: BorrowedFd<'_>, stat: &Stat) -> bool {
    if stat.st_nlink != 2 {
        return false;
    }
    // A fresh handle on the same directory: `dir` may have been read to its end already (a listing's walk).
    let Ok(fresh) = retry(|| fs::openat(dir, c".", DIR_FLAGS, Mode::empty())) else { return false };
    let dir = fresh.as_fd();
    let Ok(names) = read_names(dir) else { return false };
    names.iter().any(|(name, kind)| {
        *kind == FileType::RegularFile
            && name.starts_with(TEMP_PREFIX)
            && retry(|| fs::statat(dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW))
                .is_ok_and(|other| (other.st_dev, other.st_ino) == (stat.st_dev, stat.st_ino))
    })
}

/// The type of `name` in `dir`, not following a symlink.
pub(crate) fn kind_at(dir: BorrowedFd<'_>, name: &str) -> Result<FileType, Errno> {
    let stat = retry(|| fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW))?;
    Ok(FileType::from_raw_mode(stat.st_mode))
}

/// The names in a directory with their types (`Unknown` resolved with `fstatat`, not following symlinks). Names
/// that are not UTF-8 cannot be IDs and are left out, as are `.` and `..`.
pub(crate) fn read_names(dir: BorrowedFd<'_>) -> Result<Vec<(String, FileType)>, Errno> {
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 32 * 1024];
    let mut iter = RawDir::new(dir, &mut buf);
    let mut names = Vec::new();
    while let Some(entry) = iter.next() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        let name: &CStr = entry.file_name();
        let Ok(name) = name.to_str() else { continue };
        if name == "." || name == ".." {
            continue;
        }
        // One byte more, so that a listing can end an entry file's name with a NUL in place.
        let mut owned = String::with_capacity(name.len() + 1);
        owned.push_str(name);
        names.push((owned, entry.file_type()));
    }
    for (name, kind) in &mut names {
        if *kind == FileType::Unknown {
            *kind = match kind_at(dir, name) {
                Ok(found) => found,
                Err(Errno::NOENT) => FileType::Unknown,
                Err(e) => return Err(e),
            };
        }
    }
    Ok(names)
}

/// Temporary files start with this: a dot, and a `:` that no segment holds, so a temporary name never clashes
/// with an entry's file or directory and never ends in `.md`.
pub(crate) const TEMP_PREFIX: &str = ".tmp:";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh name that embeds no segment: `<prefix><pid>:<counter>:<random>`.
fn fresh_name(prefix: &str) -> String {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let random = fnv1a64(format!("{nanos}:{count}:{}", std::process::id()).as_bytes());
    format!("{prefix}{}:{count}:{random:016x}", std::process::id())
}

/// Creates a 0600 temporary file in `dir` with `O_CREAT | O_EXCL | O_NOFOLLOW`.
pub(crate) fn create_temp(root: &RootHandle, dir: BorrowedFd<'_>) -> Result<(OwnedFd, String), Errno> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
    let mut attempts = 0;
    loop {
        let name = fresh_name(TEMP_PREFIX);
        match root.open_at(dir, &name, flags, FILE_MODE) {
            Ok(fd) => {
                // The umask may have taken bits away; the mode is exactly 0600 either way.
                if let Err(e) = fs::fchmod(&fd, FILE_MODE) {
                    let _ = fs::unlinkat(dir, name.as_str(), AtFlags::empty());
                    return Err(e);
                }
                return Ok((fd, name));
            }
            Err(Errno::EXIST) if attempts < 16 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Moves `from` over `to` in `dir` without replacing an existing `to` (`EEXIST` if it exists). Uses
/// `RENAME_NOREPLACE`, or `link` + `unlink` where the file system does not offer it (or when `force_link` asks for
/// the fallback, in tests). A crash between the link and the unlink leaves the entry with a second name, a
/// temporary file: [`is_own_leftover_link`] recognises it, and the next create in the scope root removes it.
pub(crate) fn rename_noreplace(
    dir: BorrowedFd<'_>,
    from: &str,
    to: &str,
    force_link: bool,
) -> Result<(), Errno> {
    let renamed = if force_link {
        Err(Errno::NOSYS)
    } else {
        retry(|| fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE))
    };
    match renamed {
        Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
            retry(|| fs::linkat(dir, from, dir, to, AtFlags::empty()))?;
            let _ = fs::unlinkat(dir, from, AtFlags::empty());
            Ok(())
        }
        other => other,
    }
}

/// Moves `from` over `to` in `dir`, replacing it atomically.
pub(crate) fn rename_replace(dir: BorrowedFd<'_>, from: &str, to: &str) -> Result<(), Errno> {
    retry(|| fs::renameat(dir, from, dir, to))
}

/// `fsync` on a file or directory.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    retry(|| fs::fsync(fd))
}

/// An `flock` held on a lock file until dropped (the kernel also drops it when the process dies).
#[derive(Debug)]
pub(crate) struct LockGuard {
    _fd: OwnedFd,
}

/// Why a lock was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockFailure {
    /// Someone else held it for the whole timeout.
    Busy,
    /// The lock file could not be opened or locked.
    Io(Errno),
}

/// Takes an `flock` on `name` in `dir`, creating the file (0600) if needed, waiting at most `timeout`. Each call
/// opens its own file description, so the lock also excludes other threads of this process.
pub(crate) fn lock_file(
    root: &RootHandle,
    dir: BorrowedFd<'_>,
    name: &str,
    exclusive: bool,
    timeout: Duration,
) -> Result<LockGuard, LockFailure> {
    let fd = root.open_at(dir, name, OFlags::RDWR | OFlags::CREATE, FILE_MODE).map_err(LockFailure::Io)?;
    flock_within(fd.as_fd(), exclusive, timeout)?;
    Ok(LockGuard { _fd: fd })
}

/// `flock` with a bounded wait: a non-blocking attempt, then retries with pauses growing from 100 µs to 10 ms until
/// `timeout` has passed. An uncontended lock costs one system call.
fn flock_within(fd: BorrowedFd<'_>, exclusive: bool, timeout: Duration) -> Result<(), LockFailure> {
    let operation = if exclusive {
        FlockOperation::NonBlockingLockExclusive
    } else {
        FlockOperation::NonBlockingLockShared
    };
    let start = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match fs::flock(fd, operation) {
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

/// FNV-1a, 64 bits: a stable hash for lock file names (std's `DefaultHasher` may change between releases, and
/// processes built by different compilers must agree on the name).
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `FS_CASEFOLD_FL` from `linux/fs.h`: the directory looks names up case-insensitively (ext4, f2fs, tmpfs).
const FS_CASEFOLD_FL: u32 = 0x4000_0000;

/// Whether `dir` has the casefold attribute. File systems without inode flags say no.
pub(crate) fn has_casefold_flag(dir: BorrowedFd<'_>) -> bool {
    fs::ioctl_getflags(dir).is_ok_and(|flags| flags.bits() & FS_CASEFOLD_FL != 0)
}

/// What looking a name up in another case showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseProbe {
    /// The other case is another file, or nothing.
    Sensitive,
    /// The other case found the same file.
    Insensitive,
    /// No name could be tried (an empty root that cannot be written).
    Unknown,
}

/// Looks a name of the root up with its ASCII case swapped: an existing name when one has letters, else a probe
/// file created for the purpose (and removed).
pub(crate) fn probe_case(root: &RootHandle) -> Result<CaseProbe, Errno> {
    let dir = root.fd();
    let names: Vec<String> = read_names(dir)?.into_iter().map(|(name, _)| name).collect();
    let identity = |name: &str| {
        retry(|| fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)).map(|stat| (stat.st_dev, stat.st_ino))
    };
    if let Some(probe) = probe_existing(&names, identity) {
        return probe;
    }
    let name = fresh_name(".case-probe:");
    match root.open_at(dir, &name, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, FILE_MODE) {
        Ok(_) => {}
        Err(Errno::ROFS | Errno::ACCESS | Errno::PERM) => return Ok(CaseProbe::Unknown),
        Err(e) => return Err(e),
    }
    let probe = probe_existing(std::slice::from_ref(&name), identity);
    let _ = fs::unlinkat(dir, name.as_str(), AtFlags::empty());
    probe.unwrap_or(Ok(CaseProbe::Unknown))
}

/// The detection logic: takes the first of `names` that has ASCII letters and whose other case is not listed too,
/// and compares the identity (device, inode) `identity` gives for both cases. `None` when no name qualifies.
fn probe_existing<I: PartialEq>(
    names: &[String],
    identity: impl Fn(&str) -> Result<I, Errno>,
) -> Option<Result<CaseProbe, Errno>> {
    for name in names {
        let swapped = swap_case(name);
        if swapped == *name || names.contains(&swapped) {
            continue;
        }
        let Ok(original) = identity(name) else { continue };
        return Some(match identity(&swapped) {
            Ok(other) if other == original => Ok(CaseProbe::Insensitive),
            Ok(_) | Err(Errno::NOENT) => Ok(CaseProbe::Sensitive),
            Err(e) => Err(e),
        });
    }
    None
}

fn swap_case(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
        .collect()
}

/// The decision on a root: refused when names fold case, by the volume or by the casefold attribute.
pub(crate) fn case_verdict(probe: CaseProbe, casefold_flag: bool, root: &Path) -> Result<(), StorageError> {
    if casefold_flag {
        return Err(case_error(&format!("the memory root `{}` has the casefold attribute", root.display())));
    }
    match probe {
        CaseProbe::Insensitive => Err(case_error(&format!(
            "the memory root `{}` is on a case-insensitive file system",
            root.display()
        ))),
        CaseProbe::Sensitive | CaseProbe::Unknown => Ok(()),
    }
}

/// The error for a directory whose names fold case.
pub(crate) fn case_error(what: &str) -> StorageError {
    StorageError::about(
        StorageErrorKind::CaseInsensitive,
        None,
        format!("{what}: IDs that differ only in case would alias one file; use a case-sensitive directory"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_verdict_refuses_folding() {
        let root = Path::new("/mem");
        assert!(case_verdict(CaseProbe::Sensitive, false, root).is_ok());
        assert!(case_verdict(CaseProbe::Unknown, false, root).is_ok());
        let err = case_verdict(CaseProbe::Insensitive, false, root).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::CaseInsensitive);
        assert_eq!(
            err.to_string(),
            "the memory root `/mem` is on a case-insensitive file system: IDs that differ only in case would alias \
             one file; use a case-sensitive directory"
        );
        let err = case_verdict(CaseProbe::Sensitive, true, root).unwrap_err();
        assert_eq!(err.kind(), StorageErrorKind::CaseInsensitive);
        assert!(err.to_string().contains("casefold attribute"));
    }

    #[test]
    fn probe_on_this_file_system_is_case_sensitive() {
        let dir = tempfile::tempdir().unwrap();
        let root = RootHandle::open(&dir.path().canonicalize().unwrap(), false).unwrap();
        // Empty root: a probe file is created and removed.
        assert_eq!(probe_case(&root).unwrap(), CaseProbe::Sensitive);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A name in the root is looked up in the other case.
        std::fs::create_dir(dir.path().join("shared")).unwrap();
        assert_eq!(probe_case(&root).unwrap(), CaseProbe::Sensitive);
        assert!(!has_casefold_flag(root.fd()));
    }

    #[test]
    fn detection_logic_with_injected_lookups() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // A folding volume: every case of a name is the same file.
        let folding = |name: &str| Ok::<_, Errno>(name.to_ascii_lowercase());
        assert_eq!(probe_existing(&names(&["shared"]), folding), Some(Ok(CaseProbe::Insensitive)));
        // A case-sensitive volume: the other case does not exist.
        let strict = |name: &str| if name == "shared" { Ok(1) } else { Err(Errno::NOENT) };
        assert_eq!(probe_existing(&names(&["shared"]), strict), Some(Ok(CaseProbe::Sensitive)));
        // Both cases listed (only possible when case-sensitive), or no letters: no verdict from that name.
        assert_eq!(probe_existing(&names(&["a", "A", "123", ".-"]), folding), None);
        assert_eq!(probe_existing(&names(&["a", "A", "b"]), folding), Some(Ok(CaseProbe::Insensitive)));
        assert_eq!(probe_existing(&names(&[]), folding), None);
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"shared"), fnv1a64(b"shared"));
    }
}
