//! How a store is opened: [`StoreOptions`], the settings, the creation of a missing root, the path resolution and
//! the entry cache, each with its default.

use memory_entry::Limits;
#[cfg(feature = "testkit")]
use memory_fs::Opening;

use crate::StoreConfig;

/// The descriptors the entry cache may hold by default ([`StoreOptions::entry_cache_handles`]): three quarters of
/// what the soft `RLIMIT_NOFILE` leaves above 1,024, so that the process keeps at least 1,024 for everything else
/// (connections, listings, the audit log).
pub(crate) fn default_cache_handles() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let limit = limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    limit.saturating_sub(1024) / 4 * 3
}

/// Options for [`MarkdownStore::open_with`](crate::MarkdownStore::open_with).
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub(crate) config: Option<StoreConfig>,
    pub(crate) create_missing: bool,
    pub(crate) force_component_walk: bool,
    pub(crate) force_link_fallback: bool,
    #[cfg(feature = "testkit")]
    pub(crate) force_opening: Option<Opening>,
    pub(crate) entry_cache: Option<usize>,
    pub(crate) entry_cache_handles: Option<usize>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            config: None,
            create_missing: true,
            force_component_walk: false,
            force_link_fallback: false,
            #[cfg(feature = "testkit")]
            force_opening: None,
            entry_cache: None,
            entry_cache_handles: None,
        }
    }
}

impl StoreOptions {
    /// The defaults: settings from `<root>/config.yaml`, a missing root created, `openat2` where the kernel offers
    /// it.
    pub fn new() -> StoreOptions {
        StoreOptions::default()
    }

    /// Whether a missing root is created (0700, with any missing parents; the default) or refused with
    /// [`RootOpenError::Missing`](crate::RootOpenError::Missing), leaving no trace (what a command line wants for a
    /// mistyped root).
    #[must_use]
    pub fn create_missing(mut self, create: bool) -> StoreOptions {
        self.create_missing = create;
        self
    }

    /// Enforce these limits (and the default lock timeout) instead of reading `<root>/config.yaml`.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> StoreOptions {
        self.config = Some(StoreConfig { limits, ..self.config.unwrap_or_default() });
        self
    }

    /// Use these settings instead of reading `<root>/config.yaml`.
    #[must_use]
    pub fn config(mut self, config: StoreConfig) -> StoreOptions {
        self.config = Some(config);
        self
    }

    /// Open entry files the given way instead of the one the root's mount decides ([`Opening::Direct`] on a root
    /// mounted `nodev`, [`Opening::ProcReopen`] elsewhere), for tests of both ways. [`Opening::Direct`] on a file
    /// system that allows device nodes would open a device node planted below the root: never outside tests
    /// (feature `testkit`).
    #[cfg(feature = "testkit")]
    #[must_use]
    pub fn force_opening(mut self, opening: Opening) -> StoreOptions {
        self.force_opening = Some(opening);
        self
    }

    /// Install a created entry with `link` + `unlink` instead of `RENAME_NOREPLACE`, as on kernels without it (for
    /// tests of that fallback; feature `testkit`).
    #[cfg(feature = "testkit")]
    #[must_use]
    pub fn force_link_fallback(mut self, force: bool) -> StoreOptions {
        self.force_link_fallback = force;
        self
    }

    /// Keep the entries listings read in memory, up to `bytes`, and reuse them while their files are unchanged: for
    /// a long-running process (`alp mcp`), where a repeated search then costs one `fstat` per file (of the file the
    /// entry holds open, [`StoreOptions::entry_cache_handles`]; else one `fstatat` by name) instead of opening,
    /// reading, parsing and folding it. Off by default (a command that lists once gains nothing).
    ///
    /// Never stale: a cached entry is used only while its file has the same device, inode, size, link count,
    /// modification and status-change times (to the nanosecond) as when it was read, checked on every listing; a
    /// file changed within a second before a listing began is not cached, so that a second change in the same
    /// clock tick cannot go unseen. Bounded: each entry is counted as its content, its folded text, its ID twice
    /// and its unknown frontmatter keys, plus [`ENTRY_OVERHEAD_BYTES`](crate::ENTRY_OVERHEAD_BYTES) (about 2 KB for
    /// a note of 800 bytes); entries not used by the latest listing make room first, and what does not fit is not
    /// cached. [`MarkdownStore::cache_stats`](crate::MarkdownStore::cache_stats) says how full it is.
    ///
    /// ```
    /// use memory_markdown::{MarkdownStore, StoreOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = MarkdownStore::open_with(dir.path(), StoreOptions::new().entry_cache(64 << 20)).unwrap();
    /// assert_eq!(store.cache_stats().map(|stats| stats.entries), Some(0));
    /// ```
    #[must_use]
    pub fn entry_cache(mut self, bytes: usize) -> StoreOptions {
        self.entry_cache = Some(bytes);
        self
    }

    /// At most `handles` entries of the [entry cache](StoreOptions::entry_cache) hold their file open. An entry
    /// that holds its file is checked with one `fstat` of it while its directory is unchanged, instead of a lookup
    /// of its name (most of the cost of a repeated search); the others are checked by name. Each is a file
    /// descriptor of the process, and keeps its file's inode (a file deleted or replaced meanwhile stays allocated
    /// until the entry leaves the cache). By default, three quarters of what the soft `RLIMIT_NOFILE` leaves above
    /// 1,024 descriptors (none when the limit is 1,024 or lower); 0 holds none.
    ///
    /// ```
    /// use memory_markdown::{MarkdownStore, StoreOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = StoreOptions::new().entry_cache(1 << 20).entry_cache_handles(100);
    /// let store = MarkdownStore::open_with(dir.path(), options).unwrap();
    /// assert_eq!(store.cache_stats().map(|stats| stats.max_handles), Some(100));
    /// ```
    #[must_use]
    pub fn entry_cache_handles(mut self, handles: usize) -> StoreOptions {
        self.entry_cache_handles = Some(handles);
        self
    }

    /// Resolve paths with the `O_NOFOLLOW | O_DIRECTORY` component walk even where `openat2` works (for tests of
    /// the fallback, and for kernels whose `openat2` misbehaves).
    #[must_use]
    pub fn force_component_walk(mut self, force: bool) -> StoreOptions {
        self.force_component_walk = force;
        self
    }
}
