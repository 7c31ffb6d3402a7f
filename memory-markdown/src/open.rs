//! Opening a memory root: created or refused when missing, canonicalised and held open, checked for case folding,
//! and its `config.yaml` read through the held handle.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memory_entry::{Limits, StorageError, StorageErrorKind};
use memory_fs::{Opened, RootHandle, make_dir_all, open_regular};
use rustix::io::Errno;

use crate::cache::EntryCache;
use crate::case::{self, CaseProbe, has_casefold_flag};
use crate::markdown::MarkdownStore;
use crate::options::{StoreOptions, default_cache_handles};
use crate::path::lower;
use crate::{CONFIG_FILE, ConfigError, StoreConfig};

/// Why a store could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RootOpenError {
    /// The root does not exist, and the options say not to create it.
    #[error("the memory root `{}` does not exist; create it with `alp init`", .0.display())]
    Missing(PathBuf),
    /// The root exists but is not a directory.
    #[error("the memory root `{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// `config.yaml` cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The root cannot be created, opened or used (it folds case, …).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl MarkdownStore {
    /// Opens the store at `root`, creating the root (0700, with any missing parents) if it does not exist, and
    /// reading its settings from `<root>/config.yaml` (defaults when the file is absent).
    ///
    /// # Errors
    ///
    /// [`RootOpenError`]: the root cannot be created or opened, is not a directory, folds case
    /// ([`StorageErrorKind::CaseInsensitive`]), or `config.yaml` cannot be used ([`RootOpenError::Config`]).
    pub fn open(root: impl AsRef<Path>) -> Result<MarkdownStore, RootOpenError> {
        MarkdownStore::open_with(root, StoreOptions::new())
    }

    /// Opens the store at `root` with explicit limits; `config.yaml` is not read.
    ///
    /// # Errors
    ///
    /// As [`open`](MarkdownStore::open), without the configuration errors.
    pub fn open_with_limits(root: impl AsRef<Path>, limits: Limits) -> Result<MarkdownStore, RootOpenError> {
        MarkdownStore::open_with(root, StoreOptions::new().limits(limits))
    }

    /// Opens the store at `root` with `options`.
    ///
    /// # Errors
    ///
    /// As [`open`](MarkdownStore::open); [`RootOpenError::Missing`] for a missing root when it is not to be created.
    pub fn open_with(root: impl AsRef<Path>, options: StoreOptions) -> Result<MarkdownStore, RootOpenError> {
        let given = root.as_ref();
        let root_error = |what: &str, e: &dyn std::fmt::Display| {
            StorageError::about(
                StorageErrorKind::Io,
                None,
                format!("cannot {what} the memory root `{}`: {}", given.display(), lower(e)),
            )
        };
        match given.metadata() {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(RootOpenError::NotADirectory(given.to_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !options.create_missing => {
                return Err(RootOpenError::Missing(given.to_owned()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                make_dir_all(given).map_err(|errno| root_error("create", &std::io::Error::from(errno)))?;
            }
            Err(e) => return Err(root_error("open", &e).into()),
        }
        let root_path = given.canonicalize().map_err(|e| root_error("resolve", &e))?;
        let root =
            RootHandle::open(&root_path, options.force_component_walk).map_err(|e| root_error("open", &e))?;
        #[cfg(feature = "testkit")]
        let root = match options.force_opening {
            Some(opening) => root.force_opening(opening),
            None => root,
        };
        let casefold = has_casefold_flag(root.fd());
        let probe = case::probe_case(&root).unwrap_or(CaseProbe::Unknown);
        case::case_verdict(probe, casefold, &root_path)?;
        let config = match options.config {
            Some(config) => config,
            None => read_config(&root, &root_path.join(CONFIG_FILE))?,
        };
        Ok(MarkdownStore {
            root_path,
            root,
            config,
            locks: OnceLock::new(),
            threads: OnceLock::new(),
            force_link_fallback: options.force_link_fallback,
            cache: options.entry_cache.map(|bytes| {
                EntryCache::new(bytes, options.entry_cache_handles.unwrap_or_else(default_cache_handles))
            }),
        })
    }
}

/// Reads `<root>/config.yaml` (`path`) through the root handle: a regular file of at most 64 KiB, never a symlink,
/// never anything else opened for reading; absent → defaults. A file that is there but cannot be opened or read for
/// a reason of the system's (too many open files, a permission error, an I/O error) says nothing about the
/// settings: it is a storage failure ([`StorageErrorKind::Io`]) naming the file and the reason, not a broken
/// `config.yaml`.
fn read_config(root: &RootHandle, path: &Path) -> Result<StoreConfig, RootOpenError> {
    let bad = |why: &str| RootOpenError::Config(ConfigError::file_problem(why).in_file(path));
    let io = |error: &std::io::Error| {
        RootOpenError::Storage(StorageError::about(
            StorageErrorKind::Io,
            None,
            format!("cannot read `{}`: {}", path.display(), lower(error)),
        ))
    };
    let too_large = || bad(&format!("it is larger than {} KiB", CONFIG_MAX_BYTES / 1024));
    let (fd, size) = match open_regular(root, root.fd(), CONFIG_FILE) {
        Ok(Opened::Regular { fd, stat })
            if u64::try_from(stat.st_size).unwrap_or(u64::MAX) <= CONFIG_MAX_BYTES =>
        {
            (fd, u64::try_from(stat.st_size).unwrap_or(0))
        }
        Ok(Opened::Regular { .. }) => return Err(too_large()),
        Ok(Opened::Symlink) | Err(Errno::LOOP) => return Err(bad("it is a symbolic link")),
        Ok(Opened::Directory | Opened::Special) => return Err(bad("it is not a regular file")),
        Err(Errno::NOENT) => return Ok(StoreConfig::default()),
        Err(errno) => return Err(io(&std::io::Error::from(errno))),
    };
    let mut bytes = Vec::new();
    if !memory_fs::read_bounded(File::from(fd), size, CONFIG_MAX_BYTES, &mut bytes).map_err(|e| io(&e))? {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|_| bad("it is not UTF-8"))?;
    StoreConfig::from_yaml(&text).map_err(|e| RootOpenError::Config(e.in_file(path)))
}

/// The largest `config.yaml` read.
const CONFIG_MAX_BYTES: u64 = 64 * 1024;
