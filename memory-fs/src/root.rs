//! The root handle, no-follow resolution and the regular-file open.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags, RawDir, ResolveFlags, Stat, StatVfsMountFlags};
use rustix::io::Errno;

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

/// How a regular file below the root is opened for reading, so that nothing but a regular file ever is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Opening {
    /// The name is resolved with `O_PATH | O_NOFOLLOW` (which opens no file and runs no driver), `fstat` tells what
    /// it is, and only a regular file is opened for reading, through `/proc/self/fd` (the same inode, never the
    /// name again). Everywhere the root's file system may hold device nodes.
    ProcReopen,
    /// The root's file system is mounted `nodev` (statvfs `ST_NODEV`), so the kernel refuses to open any device
    /// node there: the name is opened directly with `O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` and checked
    /// with `fstat`. A FIFO then opens without blocking and is refused like any other non-regular file; a socket
    /// or a device node cannot be opened and is refused the same way. One open instead of two.
    Direct,
}

/// Why a path below the root could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
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

/// The flags of every directory open: read-only, never following a symlink at the name.
pub(crate) const DIR_FLAGS: OFlags =
    OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC).union(OFlags::NOFOLLOW);
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// Retries a system call interrupted by a signal (`EINTR`), and up to 16 times one that asks for a retry (`EAGAIN`,
/// as `openat2` may while another thread renames).
///
/// # Errors
///
/// The call's last error.
pub fn retry<T>(mut call: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
    let mut attempts = 0;
    loop {
        match call() {
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
            other => return other,
        }
    }
}

/// A root directory, held open: every path below it is resolved from this descriptor, never by name from `/`.
///
/// Invariant: no resolution through a root handle follows a symbolic link or leaves the root, whatever the
/// components (`..`, absolute names, symlinks inside or outside) and whatever is swapped in meanwhile.
#[derive(Debug)]
pub struct RootHandle {
    fd: OwnedFd,
    resolution: Resolution,
    opening: Opening,
}

impl RootHandle {
    /// Opens the canonical root directory (a symlink as the last component is refused: canonicalise first).
    /// `force_walk` skips `openat2` even where it works. Whether the root's file system is mounted `nodev` is
    /// checked here, once, and decides the [`Opening`].
    ///
    /// # Errors
    ///
    /// The error of opening the directory, or of `openat2` other than `ENOSYS`/`EPERM` (which select the walk).
    pub fn open(canonical: &Path, force_walk: bool) -> Result<RootHandle, Errno> {
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
        let opening = match retry(|| fs::fstatvfs(&fd)) {
            Ok(vfs) if vfs.f_flag.contains(StatVfsMountFlags::NODEV) => Opening::Direct,
            // Unknown is treated as "devices possible": the safe way.
            _ => Opening::ProcReopen,
        };
        Ok(RootHandle { fd, resolution, opening })
    }

    /// Opens regular files the given way instead of the one the mount decided. [`Opening::Direct`] on a file system
    /// that allows device nodes would open a device planted below the root: for tests of both ways only (feature
    /// `testkit`).
    #[cfg(any(test, feature = "testkit"))]
    #[must_use]
    pub fn force_opening(mut self, opening: Opening) -> RootHandle {
        self.opening = opening;
        self
    }

    /// How paths below the root are resolved.
    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    /// How regular files below the root are opened for reading.
    pub fn opening(&self) -> Opening {
        self.opening
    }

    /// The root directory's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens the directory at `rel` (components below the root; empty for the root itself), following no symlink.
    ///
    /// # Errors
    ///
    /// [`Miss`]: a missing component, a file or symlink in the way, an escape, or another failure.
    pub fn open_dir(&self, rel: &[&str]) -> Result<OwnedFd, Miss> {
        if rel.iter().any(|name| *name == ".." || name.contains('/')) {
            return Err(Miss::Escape);
        }
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
    ///
    /// # Errors
    ///
    /// [`Miss`], as [`open_dir`](Self::open_dir); a name that was a directory a moment ago but not now counts as a
    /// symlink (someone is swapping it).
    pub fn step_dir(&self, dir: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, Miss> {
        if name == ".." || name.contains('/') {
            // Never a step up or several steps at once, whichever resolution is in use.
            return Err(Miss::Escape);
        }
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

    /// Opens the file `name` (one component) inside `dir` with `flags` (plus `O_NOFOLLOW | O_CLOEXEC`), never
    /// following a symlink.
    ///
    /// # Errors
    ///
    /// The system's error: `ELOOP` for a symlink, `EXDEV` for a name that would leave the root.
    pub fn open_at(
        &self,
        dir: BorrowedFd<'_>,
        name: &str,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, Errno> {
        if name == ".." || name.contains('/') {
            return Err(Errno::XDEV);
        }
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match self.resolution {
            Resolution::Openat2 => retry(|| fs::openat2(dir, name, flags, mode, RESOLVE)),
            Resolution::ComponentWalk => retry(|| fs::openat(dir, name, flags, mode)),
        }
    }
}

/// What is at a name, found without opening anything but a regular file for reading.
#[derive(Debug)]
pub enum Opened {
    /// A regular file, open for reading, with what `fstat` said of it.
    Regular {
        /// The open file.
        fd: OwnedFd,
        /// Its `fstat`.
        stat: Box<Stat>,
    },
    /// A symbolic link: never followed.
    Symlink,
    /// A directory.
    Directory,
    /// A FIFO, socket or device: never opened for reading (a FIFO would block, a device's driver would run).
    Special,
}

/// The flags of every open for reading.
const READ_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC).union(OFlags::NOCTTY);

/// Opens the regular file `name` in `dir` for reading, and nothing else, the way the root's [`Opening`] says.
///
/// With [`Opening::ProcReopen`], the regular file is reopened through `/proc/self/fd`. Only where that is not
/// possible (procfs missing or hidden) is the name opened again, with `O_NOFOLLOW | O_NONBLOCK`, and it must be the
/// same inode; only that fallback leaves a window in which a device swapped in by someone who can write the
/// directory would be opened.
///
/// # Errors
///
/// The system's error: `ENOENT` for a missing name (or one swapped between the two opens of the fallback), `ELOOP`
/// for a symlink where the resolution reports one that way, any other failure as it is.
pub fn open_regular(root: &RootHandle, dir: BorrowedFd<'_>, name: &str) -> Result<Opened, Errno> {
    match root.opening {
        Opening::Direct => open_direct(root, dir, name),
        Opening::ProcReopen => {
            let handle = root.open_at(dir, name, OFlags::PATH, Mode::empty())?;
            reopen_checked(handle, proc_reopen, |flags| root.open_at(dir, name, flags, Mode::empty()))
        }
    }
}

/// Opens the regular file at `path` for reading, and nothing else: the final component is never followed (a
/// symlink there is [`Opened::Symlink`]); earlier components are resolved as the system resolves them.
///
/// The rule of [`Opening`], decided for the file's directory: when the directory is on a mount `nodev` (statvfs
/// `ST_NODEV` of the directory, once opened), the name is opened in it directly ([`Opening::Direct`]) with
/// `openat2` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV`, so that what is opened is on that same
/// mount, where the kernel opens no device. Everywhere else, and where that open cannot be used (no `openat2`; a
/// mount at the name itself, such as a file bind-mounted into a container: `EXDEV`), [`Opening::ProcReopen`], with
/// the same fallback as [`open_regular`].
///
/// # Errors
///
/// As [`open_regular`].
pub fn open_regular_path(path: &Path) -> Result<Opened, Errno> {
    if let Some(opened) = open_in_nodev_dir(path) {
        return opened;
    }
    let handle = retry(|| fs::open(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()))?;
    reopen_checked(handle, proc_reopen, |flags| {
        retry(|| fs::open(path, flags | OFlags::NOFOLLOW, Mode::empty()))
    })
}

/// [`open_regular_path`]'s direct open, when the file's directory is on a mount `nodev`; `None` when the rule does
/// not apply (the directory cannot be opened, is not on such a mount, `openat2` is missing or filtered, or a mount
/// is at the name): the caller takes the `O_PATH` way, which also reports the errors of the path itself.
fn open_in_nodev_dir(path: &Path) -> Option<Result<Opened, Errno>> {
    let name = path.file_name()?;
    let parent = match path.parent()? {
        dir if dir.as_os_str().is_empty() => Path::new("."),
        dir => dir,
    };
    let dir =
        retry(|| fs::open(parent, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())).ok()?;
    if !retry(|| fs::fstatvfs(&dir)).ok()?.f_flag.contains(StatVfsMountFlags::NODEV) {
        return None;
    }
    let flags = READ_FLAGS | OFlags::NONBLOCK | OFlags::NOFOLLOW;
    let how = RESOLVE | ResolveFlags::NO_XDEV;
    let fd = match retry(|| fs::openat2(&dir, name, flags, Mode::empty(), how)) {
        Ok(fd) => fd,
        Err(Errno::NOSYS | Errno::PERM | Errno::XDEV) => return None,
        // With `RESOLVE_NO_SYMLINKS` on a single name, `ELOOP` is a symlink at the name.
        Err(Errno::LOOP) => return Some(Ok(Opened::Symlink)),
        Err(errno @ (Errno::NXIO | Errno::ACCESS | Errno::NODEV | Errno::OPNOTSUPP)) => {
            return Some(refused_direct(dir.as_fd(), name, errno));
        }
        Err(errno) => return Some(Err(errno)),
    };
    Some(classify(fd))
}

/// The direct open of [`Opening::Direct`]: one `openat`, then `fstat`.
fn open_direct(root: &RootHandle, dir: BorrowedFd<'_>, name: &str) -> Result<Opened, Errno> {
    let fd = match root.open_at(dir, name, READ_FLAGS | OFlags::NONBLOCK, Mode::empty()) {
        Ok(fd) => fd,
        // A socket (`ENXIO`) or a device node the mount refuses to open (`EACCES`; `ENXIO`/`ENODEV` for one with
        // no driver) is refused like any non-regular file; the same errors on anything else are what they are.
        Err(errno @ (Errno::NXIO | Errno::ACCESS | Errno::PERM | Errno::NODEV | Errno::OPNOTSUPP)) => {
            return refused_direct(dir, name, errno);
        }
        Err(errno) => return Err(errno),
    };
    classify(fd)
}

/// What a direct open of `name` in `dir` refused with `errno` means: a socket, device node or FIFO there is
/// [`Opened::Special`] (refused like any non-regular file); anything else fails with `errno`.
fn refused_direct(
    dir: BorrowedFd<'_>,
    name: impl rustix::path::Arg + Copy,
    errno: Errno,
) -> Result<Opened, Errno> {
    // `kind_at`, for a name that may not be UTF-8 (a definition's path).
    match retry(|| fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW))
        .map(|stat| FileType::from_raw_mode(stat.st_mode))
    {
        Ok(FileType::Socket | FileType::CharacterDevice | FileType::BlockDevice | FileType::Fifo) => {
            Ok(Opened::Special)
        }
        _ => Err(errno),
    }
}

/// What a file opened directly is, by `fstat`: only a regular file stays open.
fn classify(fd: OwnedFd) -> Result<Opened, Errno> {
    let stat = retry(|| fs::fstat(&fd))?;
    Ok(match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Opened::Regular { fd, stat: Box::new(stat) },
        FileType::Directory => Opened::Directory,
        FileType::Symlink => Opened::Symlink,
        _ => Opened::Special,
    })
}

/// What reopening an `O_PATH` handle through `/proc/self/fd` gave.
#[derive(Debug)]
pub(crate) enum Reopen {
    /// The file, open for reading.
    Opened(OwnedFd),
    /// `/proc/self/fd` is not there or not procfs (nothing mounted, or something mounted over it).
    Unavailable,
    /// The reopen failed.
    Failed(Errno),
}

/// Reopens `handle` for reading through a verified `/proc/self/fd`.
fn proc_reopen(handle: BorrowedFd<'_>, flags: OFlags) -> Reopen {
    let Ok(proc_fd) = rustix_linux_procfs::proc_self_fd() else { return Reopen::Unavailable };
    // The descriptor's number, formatted without allocating.
    let number = rustix::path::DecInt::from_fd(handle);
    match retry(|| fs::openat(proc_fd, number.as_c_str(), flags, Mode::empty())) {
        Ok(fd) => Reopen::Opened(fd),
        Err(errno) => Reopen::Failed(errno),
    }
}

/// Whether a failed reopen through `/proc/self/fd` may be retried by name: only when the failure says that
/// `/proc/self/fd` cannot be used here, not that something is wrong with the file or the system.
///
/// - `ENOENT`: no procfs mounted (or this descriptor's entry is not visible in it);
/// - `EACCES`, `EPERM`: procfs mounted but hidden from this process (`hidepid`, a security module, a sandbox); a
///   file the process may not read fails the same way by name, so nothing is masked.
///
/// Every other error surfaces as it is: `EMFILE`, `ENFILE` and `ENOMEM` say the process or the system is out of
/// resources (a second open by name would fail the same way or, worse, succeed later on another file), `EIO` is a
/// failing disk, and none of them says anything about procfs. A retry by name also resolves the path again, which
/// is exactly the window the reopen exists to close, so it is taken only when there is no other way.
pub(crate) fn falls_back_by_name(errno: Errno) -> bool {
    matches!(errno, Errno::NOENT | Errno::ACCESS | Errno::PERM)
}

/// The checks of [`Opening::ProcReopen`] on an `O_PATH` handle: `fstat`, then only for a regular file the reopen
/// (`reopen`), and where it cannot be used an open by name (`by_name`) that must give the same inode.
pub(crate) fn reopen_checked(
    handle: OwnedFd,
    reopen: impl FnOnce(BorrowedFd<'_>, OFlags) -> Reopen,
    by_name: impl FnOnce(OFlags) -> Result<OwnedFd, Errno>,
) -> Result<Opened, Errno> {
    let stat = retry(|| fs::fstat(&handle))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => return Ok(Opened::Symlink),
        FileType::Directory => return Ok(Opened::Directory),
        _ => return Ok(Opened::Special),
    }
    match reopen(handle.as_fd(), READ_FLAGS) {
        Reopen::Opened(fd) => return Ok(Opened::Regular { fd, stat: Box::new(stat) }),
        Reopen::Unavailable => {}
        Reopen::Failed(errno) if falls_back_by_name(errno) => {}
        Reopen::Failed(errno) => return Err(errno),
    }
    let fd = by_name(READ_FLAGS | OFlags::NONBLOCK)?;
    let again = retry(|| fs::fstat(&fd))?;
    if (again.st_dev, again.st_ino) != (stat.st_dev, stat.st_ino) {
        // Swapped between the two opens: whatever is there now was not what was checked.
        return Err(Errno::NOENT);
    }
    Ok(Opened::Regular { fd, stat: Box::new(stat) })
}

/// The type of `name` in `dir`, not following a symlink.
///
/// # Errors
///
/// The system's error of `fstatat`.
pub fn kind_at(dir: BorrowedFd<'_>, name: &str) -> Result<FileType, Errno> {
    let stat = retry(|| fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW))?;
    Ok(FileType::from_raw_mode(stat.st_mode))
}

/// The names in a directory with their types (`Unknown` resolved with `fstatat`, not following symlinks; a name
/// gone meanwhile stays `Unknown`). Names that are not UTF-8 are left out, as are `.` and `..`. Each name has room
/// for one more byte, so that a caller can end it with a NUL in place.
///
/// # Errors
///
/// The system's error of reading the directory.
pub fn read_names(dir: BorrowedFd<'_>) -> Result<Vec<(String, FileType)>, Errno> {
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

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh name that embeds nothing of the caller's: `<prefix><pid>:<counter>:<random>`.
pub fn fresh_name(prefix: &str) -> String {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let random = fnv1a64(format!("{nanos}:{count}:{}", std::process::id()).as_bytes());
    format!("{prefix}{}:{count}:{random:016x}", std::process::id())
}

/// The name of the lock file that guards `key`, one per key: `<kind>-<16 hex digits>`, from a hash that every build
/// computes alike (processes built by different compilers must agree on a lock file's name, and it names nothing of
/// `key`).
///
/// ```
/// assert_eq!(memory_fs::lock_name("scope", b"shared"), memory_fs::lock_name("scope", b"shared"));
/// assert_ne!(memory_fs::lock_name("scope", b"shared"), memory_fs::lock_name("scope", b"project:a"));
/// assert_eq!(memory_fs::lock_name("scope", b"").len(), "scope-".len() + 16);
/// ```
pub fn lock_name(kind: &str, key: &[u8]) -> String {
    format!("{kind}-{:016x}", fnv1a64(key))
}

/// The name of the lock file of `key`'s bucket, when keys share `buckets` (at most 4,096) lock files:
/// `<kind>-<3 hex digits>`, from the same stable hash as [`lock_name`].
///
/// ```
/// let name = memory_fs::bucket_lock_name("entry", b"shared:a", 4096);
/// assert!(name.starts_with("entry-") && name.len() == "entry-".len() + 3);
/// ```
pub fn bucket_lock_name(kind: &str, key: &[u8], buckets: u64) -> String {
    format!("{kind}-{:03x}", fnv1a64(key) % buckets.clamp(1, 4096))
}

/// FNV-1a, 64 bits: a stable hash for file names (std's `DefaultHasher` may change between releases, and processes
/// built by different compilers must agree on a lock file's name).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::io::Read as _;

    use super::*;

    /// Today's two copies of the regular-file open, as they decided after a failed reopen through
    /// `/proc/self/fd`: the definitions reader retried by name on any error, the store only on these three.
    fn definitions_reader_fell_back(_: Errno) -> bool {
        true
    }
    fn store_fell_back(errno: Errno) -> bool {
        matches!(errno, Errno::NOENT | Errno::ACCESS | Errno::PERM)
    }

    /// The errors that say `/proc/self/fd` cannot be used, and those that say something about the file or the
    /// system and must surface.
    const PROC_UNUSABLE: [Errno; 3] = [Errno::NOENT, Errno::ACCESS, Errno::PERM];
    const MUST_SURFACE: [Errno; 6] =
        [Errno::MFILE, Errno::NFILE, Errno::NOMEM, Errno::IO, Errno::NXIO, Errno::ROFS];

    #[test]
    fn the_fallback_rule_against_both_former_copies() {
        for errno in PROC_UNUSABLE {
            assert!(falls_back_by_name(errno), "{errno:?}");
            // Both former copies agreed here.
            assert!(definitions_reader_fell_back(errno) && store_fell_back(errno), "{errno:?}");
        }
        for errno in MUST_SURFACE {
            assert!(!falls_back_by_name(errno), "{errno:?}");
            // The store's copy already surfaced these; the definitions reader masked them and re-resolved the
            // name: the rule chosen is the store's.
            assert_eq!(falls_back_by_name(errno), store_fell_back(errno), "{errno:?}");
            assert_ne!(falls_back_by_name(errno), definitions_reader_fell_back(errno), "{errno:?}");
        }
    }

    /// Opens `name` in `dir` the `ProcReopen` way with an injected reopen result, counting the opens by name.
    fn open_with(dir: &Path, reopen: impl FnOnce() -> Reopen, by_name: &Cell<u32>) -> Result<Opened, Errno> {
        let path = dir.join("file");
        let handle =
            fs::open(&path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).unwrap();
        reopen_checked(
            handle,
            |_, _| reopen(),
            |flags| {
                by_name.set(by_name.get() + 1);
                fs::open(&path, flags | OFlags::NOFOLLOW, Mode::empty())
            },
        )
    }

    fn contents(opened: Opened) -> String {
        let Opened::Regular { fd, .. } = opened else { panic!("not a regular file: {opened:?}") };
        let mut text = String::new();
        std::fs::File::from(fd).read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn a_reopen_failing_for_the_system_surfaces_and_is_not_retried_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "text").unwrap();
        for errno in MUST_SURFACE {
            let by_name = Cell::new(0);
            let result = open_with(dir.path(), || Reopen::Failed(errno), &by_name);
            assert_eq!(result.unwrap_err(), errno);
            assert_eq!(by_name.get(), 0, "{errno:?} was retried by name");
        }
    }

    #[test]
    fn a_reopen_without_usable_procfs_falls_back_to_the_same_inode_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "text").unwrap();
        let outcomes: Vec<Box<dyn Fn() -> Reopen>> = vec![
            Box::new(|| Reopen::Unavailable),
            Box::new(|| Reopen::Failed(Errno::NOENT)),
            Box::new(|| Reopen::Failed(Errno::ACCESS)),
            Box::new(|| Reopen::Failed(Errno::PERM)),
        ];
        for reopen in outcomes {
            let by_name = Cell::new(0);
            let opened = open_with(dir.path(), reopen, &by_name).unwrap();
            assert_eq!(contents(opened), "text");
            assert_eq!(by_name.get(), 1);
        }
    }

    #[test]
    fn a_file_swapped_before_the_fallback_open_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        std::fs::write(&path, "checked").unwrap();
        let handle =
            fs::open(&path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let result = reopen_checked(
            handle,
            |_, _| Reopen::Unavailable,
            |flags| {
                // Someone replaces the file between the `fstat` and the open by name.
                std::fs::remove_file(&path).unwrap();
                std::fs::write(&path, "swapped").unwrap();
                fs::open(&path, flags | OFlags::NOFOLLOW, Mode::empty())
            },
        );
        assert_eq!(result.unwrap_err(), Errno::NOENT);
    }

    #[test]
    fn the_real_reopen_reads_the_file_and_refuses_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "text").unwrap();
        std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("dir")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("fifo").as_path(),
            FileType::Fifo,
            Mode::RUSR | Mode::WUSR,
            0,
        )
        .unwrap();
        assert_eq!(contents(open_regular_path(&dir.path().join("file")).unwrap()), "text");
        assert!(matches!(open_regular_path(&dir.path().join("link")), Ok(Opened::Symlink)));
        assert!(matches!(open_regular_path(&dir.path().join("dir")), Ok(Opened::Directory)));
        assert!(matches!(open_regular_path(&dir.path().join("fifo")), Ok(Opened::Special)));
        assert_eq!(open_regular_path(&dir.path().join("none")).unwrap_err(), Errno::NOENT);
        for opening in [Opening::ProcReopen, Opening::Direct] {
            for force_walk in [false, true] {
                let root = RootHandle::open(dir.path(), force_walk).unwrap().force_opening(opening);
                assert_eq!(root.opening(), opening);
                let at = |name| open_regular(&root, root.fd(), name);
                assert_eq!(contents(at("file").unwrap()), "text", "{opening:?}");
                assert!(matches!(at("link"), Ok(Opened::Symlink) | Err(Errno::LOOP)), "{opening:?}");
                assert!(matches!(at("dir"), Ok(Opened::Directory)), "{opening:?}");
                assert!(matches!(at("fifo"), Ok(Opened::Special)), "{opening:?}");
                assert_eq!(at("none").unwrap_err(), Errno::NOENT);
                assert_eq!(at("..").unwrap_err(), Errno::XDEV);
            }
        }
    }

    /// Which way `open_regular_path` takes: the direct open on a directory mounted `nodev`; the `O_PATH` way on
    /// a mount that allows devices, and for a name that is itself a mount point (`EXDEV`). Needs root (to mount);
    /// skipped otherwise.
    #[test]
    fn a_path_is_opened_directly_only_in_a_nodev_directory_and_never_across_a_mount() {
        use testkit::tmpfs::{Tmpfs, skipped};
        let (Some(nodev), Some(dev)) = (Tmpfs::mount("nodev"), Tmpfs::mount("dev")) else {
            return skipped("the nodev route test");
        };
        for mount in [&nodev, &dev] {
            std::fs::write(mount.path().join("file"), "text").unwrap();
        }
        let direct = open_in_nodev_dir(&nodev.path().join("file"));
        assert!(matches!(direct, Some(Ok(Opened::Regular { .. }))), "{direct:?}");
        assert!(matches!(open_in_nodev_dir(&nodev.path().join("none")), Some(Err(Errno::NOENT))));
        assert!(open_in_nodev_dir(&dev.path().join("file")).is_none(), "devices allowed: the O_PATH way");
        let bound = nodev.path().join("bound");
        std::fs::write(&bound, "").unwrap();
        let status = std::process::Command::new("mount")
            .arg("--bind")
            .arg(dev.path().join("file"))
            .arg(&bound)
            .status();
        assert!(status.unwrap().success());
        let across = open_in_nodev_dir(&bound);
        let _ = std::process::Command::new("umount").arg(&bound).status();
        assert!(across.is_none(), "a mount at the name: the O_PATH way ({across:?})");
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        // The names of lock files already on disk: a process of another build must take the same file.
        assert_eq!(lock_name("scope", b"a"), "scope-af63dc4c8601ec8c");
        assert_eq!(bucket_lock_name("entry", b"a", 4096), "entry-c8c");
        assert_eq!(bucket_lock_name("entry", b"", 4096), "entry-325");
    }
}
