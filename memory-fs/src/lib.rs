//! Race-free file primitives of ALP memory, written once for every crate that opens a file below a memory root or
//! in a definitions directory: the held root handle and directory handles, no-follow resolution, the regular-file
//! open, bounded reads, the bounded `flock` wait, directory creation, moves, the atomic durable write and the
//! leftover-link rule.
//!
//! # Invariants
//!
//! - **Nothing below a root is followed.** Every path below a [`RootHandle`] is resolved from the held root
//!   descriptor, one component at a time or by `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, and no
//!   symbolic link is ever followed, not even one that stays inside the root; `..` and absolute names never leave
//!   it. A checked path cannot be swapped for a symlink between check and use, because there is no second lookup
//!   by name.
//! - **Only regular files are opened for reading.** [`open_regular`] never runs a device driver's open and never
//!   blocks on a FIFO: it resolves with `O_PATH | O_NOFOLLOW`, checks with `fstat`, and reopens only a regular file
//!   through `/proc/self/fd` ([`Opening::ProcReopen`]); on a root mounted `nodev`, where the kernel itself refuses
//!   to open a device node, it opens the name directly with `O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY` and
//!   checks with `fstat` ([`Opening::Direct`]). [`open_regular_path`], for a file named by a path outside any root
//!   (an agent definition), decides the same by the mount of the file's directory, and opens directly only what is
//!   on that mount (`RESOLVE_NO_XDEV`: a file or device bind-mounted at the name takes the `O_PATH` way).
//! - **Reads are bounded.** [`read_bounded`] never reads more than one byte past its limit, whatever the file
//!   claims or grows to.
//! - **Lock waits are bounded.** [`flock_within`] gives up after its timeout instead of hanging.
//! - **Writes are atomic and durable.** [`write_atomic`] writes a fresh 0600 temporary file (`O_CREAT | O_EXCL |
//!   O_NOFOLLOW`), syncs it, renames it over the target (or next to it without replacing, `RENAME_NOREPLACE`) and
//!   syncs the directory: `kill -9` at any instant leaves the old file or the new one, never a partial one, and a
//!   crash between the link and the unlink of the fallback for kernels without `RENAME_NOREPLACE` leaves a second
//!   name that [`is_own_leftover_link`] recognises as the writer's own. [`Staged`] is the same write step by step,
//!   for a writer that makes several files of one directory durable with one sync of the directory.
//! - **Made directories are 0700.** [`make_dir`] and [`make_dir_all`] `fchmod` a directory they made through its
//!   handle, so the umask does not decide its mode (`dir.rs`, `a_made_directory_is_0700_whatever_the_umask`, under
//!   five umasks).
//! - **A move never replaces by accident.** [`rename_noreplace`] (within a directory or across two) is
//!   `RENAME_NOREPLACE`, and its one fallback where that is not offered ([`Fallback`]) is written here only
//!   (`rename.rs`'s tests).
//!
//! Errors are the system's own numbers ([`Errno`]) or small enums ([`Miss`], [`LockFailure`], [`WriteError`],
//! [`MakeDirError`]): each caller maps them to its own error type and wording.
//!
//! Everything that resolves below a root is Linux only (`openat2`, `O_PATH`, `/proc/self/fd`, `renameat2`); the
//! bounded read is portable, the bounded lock wait and the modes ([`FILE_MODE`], [`DIR_MODE`]) need a Unix, and
//! the `yaml` feature's `yaml` module is portable, so crates that build on every platform can depend on this one.

#[cfg(target_os = "linux")]
mod atomic;
#[cfg(target_os = "linux")]
mod dir;
#[cfg(unix)]
mod lock;
#[cfg(unix)]
mod mode;
mod read;
#[cfg(target_os = "linux")]
mod rename;
#[cfg(target_os = "linux")]
mod root;
#[cfg(feature = "yaml")]
pub mod yaml;

#[cfg(target_os = "linux")]
pub use atomic::{
    Install, Staged, TEMP_PREFIX, WriteError, create_temp, is_own_leftover_link, remove_durably, sync,
    write_atomic,
};
#[cfg(target_os = "linux")]
pub use dir::{MadeDir, MakeDirError, make_dir, make_dir_all};
#[cfg(target_os = "linux")]
pub use lock::lock_file;
#[cfg(unix)]
pub use lock::{LockFailure, LockGuard, flock_within};
#[cfg(unix)]
pub use mode::{DIR_MODE, FILE_MODE};
pub use read::read_bounded;
#[cfg(target_os = "linux")]
pub use rename::{Fallback, rename_noreplace, rename_replace};
#[cfg(target_os = "linux")]
pub use root::{
    Miss, Opened, Opening, Resolution, RootHandle, bucket_lock_name, fresh_name, kind_at, lock_name,
    open_regular, open_regular_path, read_names, retry,
};
/// The system's error numbers, as every function of this crate reports them.
#[cfg(unix)]
pub use rustix::io::Errno;
