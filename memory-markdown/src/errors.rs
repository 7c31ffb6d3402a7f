//! What the system's answers mean to a caller: errno values, missed lookups, refused files, failed atomic writes and
//! walk failures, each mapped to the [`StoreError`] a door reports, naming the path below the root.

use std::os::fd::BorrowedFd;

use memory_entry::{ExistsReason, MAX_VERSION, StorageError, StorageErrorKind, StoreError};
use memory_fs::{Miss, WriteError, kind_at};
use memory_id::MemoryId;
use rustix::fs::FileType;
use rustix::io::Errno;

use crate::case::{case_error, has_casefold_flag};
use crate::entry_file::Refusal;
use crate::markdown::MarkdownStore;
use crate::path::EntryPath;
use crate::path::{ESCAPES_ROOT, SYMLINK_ESCAPE, lower};
use crate::walk::{WalkError, is_segment_name};

impl MarkdownStore {
    pub(crate) fn symlink_error(id: &MemoryId, rel: &str) -> StoreError {
        StoreError::Storage(StorageError::new(
            StorageErrorKind::SymlinkEscape,
            Some(id),
            format!("{SYMLINK_ESCAPE}: `{rel}` is or passes through a symbolic link"),
        ))
    }

    pub(crate) fn io_error(id: &MemoryId, what: &str, rel: &str, errno: Errno) -> StoreError {
        let error = std::io::Error::from(errno);
        StoreError::Storage(StorageError::new(
            StorageErrorKind::Io,
            Some(id),
            format!("cannot {what} `{rel}`: {}", lower(&error)),
        ))
    }

    pub(crate) fn miss_error(id: &MemoryId, rel: &str, miss: Miss) -> StoreError {
        match miss {
            Miss::Symlink => MarkdownStore::symlink_error(id, rel),
            Miss::Escape => StoreError::Storage(StorageError::new(
                StorageErrorKind::PathEscape,
                Some(id),
                format!("{ESCAPES_ROOT}: `{rel}`"),
            )),
            Miss::NotFound => MarkdownStore::io_error(id, "open", rel, Errno::NOENT),
            Miss::NotDirectory => MarkdownStore::io_error(id, "open", rel, Errno::NOTDIR),
            Miss::Io(errno) => MarkdownStore::io_error(id, "open", rel, errno),
        }
    }

    pub(crate) fn walk_error(name: &str, error: WalkError<StoreError>) -> StoreError {
        match error {
            WalkError::Consumer(error) => error,
            WalkError::Casefold { rel } => {
                StoreError::Storage(case_error(&format!("the directory `{rel}` has the casefold attribute")))
            }
            WalkError::Dir { rel, miss } => {
                let message = match miss {
                    Miss::Symlink => format!("{SYMLINK_ESCAPE}: `{rel}` is a symbolic link"),
                    Miss::Escape => format!("{ESCAPES_ROOT}: `{rel}`"),
                    Miss::NotFound => format!("cannot list `{rel}`: it vanished"),
                    Miss::NotDirectory => format!("cannot list `{rel}`: not a directory"),
                    Miss::Io(errno) => {
                        format!("cannot list `{rel}`: {}", lower(&std::io::Error::from(errno)))
                    }
                };
                let kind = match miss {
                    Miss::Symlink => StorageErrorKind::SymlinkEscape,
                    Miss::Escape => StorageErrorKind::PathEscape,
                    _ => StorageErrorKind::Io,
                };
                StoreError::Storage(StorageError::about(kind, Some(name), message))
            }
        }
    }

    pub(crate) fn check_casefold(dir: BorrowedFd<'_>, rel: &str) -> Result<(), StoreError> {
        if has_casefold_flag(dir) {
            return Err(StoreError::Storage(case_error(&format!(
                "the directory `{rel}` has the casefold attribute"
            ))));
        }
        Ok(())
    }

    pub(crate) fn refusal_error(id: &MemoryId, rel: &str, refusal: &Refusal) -> StoreError {
        let (kind, message) = match refusal {
            Refusal::HardLink { links } => (
                StorageErrorKind::HardLink,
                format!(
                    "{SYMLINK_ESCAPE}: `{rel}` has {links} hard links, so it may alias another role's entry, the audit \
                     log or a file outside the root; it is not read (`alp memory delete` removes this name)"
                ),
            ),
            Refusal::TooLarge { bytes, limit } => (
                StorageErrorKind::TooLarge,
                format!(
                    "`{rel}` is {bytes} bytes, over the limit of {limit} (limits.maxFileBytes); it is not read (delete \
                     it, or raise the limit)"
                ),
            ),
            Refusal::VersionOverCap { version } => (
                StorageErrorKind::VersionOverCap,
                format!(
                    "`{rel}` claims version {}, above the largest version an entry may hold ({MAX_VERSION}); fix the \
                     file's version or delete it",
                    memory_id::shown(version)
                ),
            ),
        };
        StoreError::Storage(StorageError::new(kind, Some(id), message))
    }

    /// What a failed step of an atomic write of `t`'s file means.
    pub(crate) fn write_error(t: &EntryPath<'_>, error: WriteError) -> StoreError {
        match error {
            WriteError::CreateTemp(errno) => {
                MarkdownStore::io_error(t.id, "create a temporary file in", &t.dir_rel(), errno)
            }
            WriteError::Write(errno) => MarkdownStore::io_error(t.id, "write", &t.rel(), errno),
            WriteError::Exists => StoreError::AlreadyExists {
                id: t.id.clone(),
                existing: t.id.as_str().to_owned(),
                reason: ExistsReason::SameId,
            },
            WriteError::Install(errno) => MarkdownStore::io_error(t.id, "replace", &t.rel(), errno),
            WriteError::SyncDir(errno) => MarkdownStore::io_error(t.id, "sync", &t.dir_rel(), errno),
        }
    }

    /// The error for a component of `t`'s directories, at index `index`, that exists but is not a directory.
    pub(crate) fn in_the_way(&self, t: &EntryPath<'_>, parent: BorrowedFd<'_>, index: usize) -> StoreError {
        let name = t.dirs[index];
        let rel = t.dirs[..=index].join("/");
        let is_file = matches!(kind_at(parent, name), Ok(FileType::RegularFile));
        if is_file
            && index >= t.scope_len
            && let Some(stem) = name.strip_suffix(".md").filter(|stem| is_segment_name(stem))
        {
            let segments: Vec<&str> = t.id.path_segments().collect();
            let mut holder = t.id.scope_root().as_str().to_owned();
            for segment in &segments[..index - t.scope_len] {
                holder.push(':');
                holder.push_str(segment);
            }
            holder.push(':');
            holder.push_str(stem);
            if memory_id::parse_memory_id(&holder).is_ok() {
                return StoreError::AlreadyExists {
                    id: t.id.clone(),
                    existing: holder,
                    reason: ExistsReason::FileDirectoryClash,
                };
            }
        }
        StoreError::Storage(StorageError::new(
            StorageErrorKind::Corrupt,
            Some(t.id),
            format!("`{rel}` is not a directory but the entry's path needs one there"),
        ))
    }
}
