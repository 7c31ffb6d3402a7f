//! The entry cache of a long-running process (an MCP server): parsed entries and their folded text, kept between
//! listings and validated on every use by the file's metadata, so that a repeated search costs one `fstat` (or
//! `fstatat`) per file instead of opening, reading, parsing and folding it again.
//!
//! # Never stale
//!
//! A cached entry is used only while the file at its name has the *stamp* it had when it was read: the same
//! device, inode, size, link count (one), modification and status-change times to the nanosecond, and is a regular
//! file. The stamp is taken (`fstat` on the file's handle: the `O_PATH` one, or the file opened directly on a root
//! mounted `nodev`) before the file is read, so a change made during the read leaves a stamp that no longer
//! matches. Every write through the store, an editor saving in place, a
//! `rename` over the name, `touch` or a `chmod` changes the status-change time (ctime), which no one but the kernel
//! sets. The one gap is the clock's granularity: two changes within one tick of the file system's clock may leave
//! the same times. So, as git does with its racily clean index entries, a file whose ctime is within
//! [`RACY_WINDOW_NANOS`] of the listing's instant (or later) is not cached: any later change happens after the
//! listing began, so it gets a ctime past the window, and differs from the stamp. This assumes the file system's
//! times come from this machine's clock (a local file system).
//!
//! The names in a directory are kept the same way, with the directory's stamp: adding, removing or renaming a name
//! changes the directory's modification and status-change times, so a listing whose directory has the same stamp
//! has the same names (and each file is still checked on its own). The IDs of its entry files are kept with the
//! names, built once, and used only while the directory is walked under the prefix they were built with.
//!
//! # One lookup per file, or none
//!
//! Checking a stamp by name costs a lookup of the name in the kernel's dentry cache, most of a warm search. So a
//! cached entry also holds its file open (the descriptor it was read through) and, while the name is known to
//! still lead to that file, checks the stamp on the descriptor (`fstat`) instead. The name is known to lead there
//! while its directory keeps a settled stamp: the entry is *bound* to the serial of the directory listing
//! ([`Listed::settled`](crate::walk::Listed)) that was walked when the file was opened, or when a check by name
//! found the same file there. A listing carries a serial only when the directory's stamp had settled (by the rule
//! above) and is handed out only while the directory has that stamp, and every name added, removed or renamed in a
//! directory changes its stamp; so a listing with the same serial has every name bound to the same file as when the
//! entry was bound. A file opened after its directory changed was bound to a serial no later listing carries (the
//! directory's stamp never returns to an earlier one), and is checked by name again.
//!
//! Descriptors are bounded too, by [`EntryCache::new`]'s `max_handles` (by default a share of `RLIMIT_NOFILE`),
//! counted from the moment a listing keeps a descriptor for an entry it will cache ([`EntryCache::hold`]) to the
//! moment that entry is dropped, so that a listing of more files than the budget never holds more: past it,
//! entries are cached without one and checked by name. A descriptor keeps its file's inode: a file
//! another process deletes or replaces stays allocated until its entry leaves the cache, as its text stays in
//! this process's memory until then.
//!
//! # Bounded
//!
//! The cache holds at most its byte budget. An entry costs its content, its folded text, its ID twice (the entry's
//! and the map's key), the unknown frontmatter keys, and a fixed [`ENTRY_OVERHEAD_BYTES`] of bookkeeping: for a
//! note of about 800 bytes of ASCII text, about 2 KB. When an insertion would pass the budget, the entries the
//! current listing did not use are dropped first; if that is not enough, the rest of the new entries are not
//! cached.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

use memory_entry::MemoryEntry;
use memory_ranker::Trigrams;
use rustix::fs::{FileType, Stat};
use rustix::io::Errno;
use serde_json::Value;

use crate::walk::Listed;

/// A file changed within this long before a listing's instant is not cached (see the module docs).
pub(crate) const RACY_WINDOW_NANOS: i128 = 1_000_000_000;

/// The fixed cost counted for each cached entry besides its text: the map's slot and the
/// structures that hold the entry (an estimate of what the allocator hands out).
pub const ENTRY_OVERHEAD_BYTES: usize = 656;

/// What identifies a file's contents without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    nlink: u64,
    mtime: i128,
    ctime: i128,
}

impl Stamp {
    /// The stamp of a regular file with one link; `None` for anything the listing must look at more closely.
    pub(crate) fn of(stat: &Stat) -> Option<Stamp> {
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink != 1 {
            return None;
        }
        Some(Stamp::from_stat(stat))
    }

    /// The stamp of whatever `stat` describes: a directory (its link count varies with its subdirectories; it is
    /// part of the stamp), or a file [`Stamp::of`] has checked.
    fn from_stat(stat: &Stat) -> Stamp {
        Stamp {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size,
            nlink: stat.st_nlink,
            mtime: nanos(stat.st_mtime, stat.st_mtime_nsec),
            ctime: nanos(stat.st_ctime, stat.st_ctime_nsec),
        }
    }

    /// Whether a file with this stamp may be cached when listed at `now` (nanoseconds since the epoch).
    pub(crate) fn settled_at(&self, now: i128) -> bool {
        self.ctime < now - RACY_WINDOW_NANOS
    }
}

fn nanos(secs: i64, nsec: impl TryInto<i64>) -> i128 {
    i128::from(secs) * 1_000_000_000 + i128::from(nsec.try_into().unwrap_or(0))
}

/// One cached file: the entry as read (every field, the whole content) and its folded `id + "\n" + content`.
#[derive(Debug)]
pub(crate) struct Cached {
    pub(crate) stamp: Stamp,
    pub(crate) entry: MemoryEntry,
    pub(crate) folded: String,
    /// The folded text's runs of three bytes: terms it cannot hold are not searched for.
    pub(crate) trigrams: Trigrams,
    cost: usize,
    last_used: AtomicU64,
    /// The file the entry was read from, held open (see "One lookup per file, or none").
    handle: Option<Held>,
    /// The serial of the settled directory listing under which the name is known to lead to `handle`; 0 for none.
    bound: AtomicU64,
}

impl Cached {
    /// The entry read from the file `handle` (whose status gave `stamp`), found under the directory listing
    /// `bound` (its serial, when the directory had settled).
    pub(crate) fn new(
        stamp: Stamp,
        entry: MemoryEntry,
        folded: String,
        handle: Option<Held>,
        bound: Option<NonZeroU64>,
    ) -> Cached {
        let extra: usize = entry.extra.iter().map(|(key, value)| key.len() + value_cost(value)).sum();
        let cost =
            entry.content.len() + folded.len() + 2 * entry.id.as_str().len() + extra + ENTRY_OVERHEAD_BYTES;
        let trigrams = Trigrams::of(&folded);
        Cached {
            stamp,
            entry,
            folded,
            trigrams,
            cost,
            last_used: AtomicU64::new(0),
            handle,
            bound: AtomicU64::new(bound.map_or(0, NonZeroU64::get)),
        }
    }

    /// Marks the entry as used by the listing of `generation`.
    pub(crate) fn touch(&self, generation: u64) {
        self.last_used.store(generation, Ordering::Relaxed);
    }

    /// Whether the file at the entry's name still has the entry's stamp, as a listing that found the name in a
    /// directory listed under `dir` (a settled listing's serial, if any) tells: checked on the held file when the
    /// entry is bound to `dir`, else by `name` in `dir_fd` (and, when that finds the same file, bound to `dir`).
    pub(crate) fn unchanged(
        &self,
        dir: Option<NonZeroU64>,
        dir_fd: BorrowedFd<'_>,
        name: &std::ffi::CStr,
    ) -> bool {
        if let (Some(serial), Some(held)) = (dir, &self.handle)
            && self.bound.load(Ordering::Relaxed) == serial.get()
        {
            return rustix::fs::fstat(&held.fd).ok().and_then(|stat| Stamp::of(&stat)) == Some(self.stamp);
        }
        let same = rustix::fs::statat(dir_fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .and_then(|stat| Stamp::of(&stat))
            == Some(self.stamp);
        // The stamp holds the device and inode: the name leads to the held file, under this listing.
        if same && let Some(serial) = dir {
            self.bound.store(serial.get(), Ordering::Relaxed);
        }
        same
    }
}

/// A descriptor an entry holds, counted against the cache's budget of descriptors until it is closed.
#[derive(Debug)]
pub(crate) struct Held {
    fd: OwnedFd,
    count: Arc<AtomicUsize>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A rough size of a JSON value held in memory.
fn value_cost(value: &Value) -> usize {
    match value {
        Value::String(text) => 32 + text.len(),
        Value::Array(items) => 32 + items.iter().map(value_cost).sum::<usize>(),
        Value::Object(map) => {
            32 + map.iter().map(|(key, value)| key.len() + value_cost(value)).sum::<usize>()
        }
        _ => 32,
    }
}

/// The cache: entries by ID, the bytes they cost, and the budget; and the names of directories.
#[derive(Debug)]
pub(crate) struct EntryCache {
    budget: usize,
    max_handles: usize,
    /// Descriptors held, by cached entries and by entries a listing has read but not yet cached ([`Held`]).
    handles: Arc<AtomicUsize>,
    state: RwLock<State>,
    generation: AtomicU64,
    dirs: Mutex<Dirs>,
    /// Whether the last listing read more than an eighth of its files from disk (true until one read fewer).
    reading: AtomicBool,
}

/// Directory listings by (device, inode), with the stamp they were read under.
#[derive(Debug, Default)]
struct Dirs {
    map: HashMap<(u64, u64), (Stamp, Arc<Listed>)>,
    bytes: usize,
    /// The last serial given to a settled listing.
    serial: u64,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Boxed, so that the table's slots stay small and a lookup touches few cache lines.
    map: HashMap<String, Box<Cached>>,
    bytes: usize,
}

impl State {
    /// The cached entry for `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&Cached> {
        self.map.get(id).map(|cached| &**cached)
    }
}

/// How full the cache is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Entries held.
    pub entries: usize,
    /// Bytes they are counted as (see [`StoreOptions::entry_cache`](crate::StoreOptions::entry_cache)).
    pub bytes: usize,
    /// The budget.
    pub budget: usize,
    /// Entries holding their file open, so that a listing checks them without looking their names up.
    pub handles: usize,
    /// The most that may (see [`StoreOptions::entry_cache_handles`](crate::StoreOptions::entry_cache_handles)).
    pub max_handles: usize,
}

impl EntryCache {
    /// A cache of at most `budget` bytes, whose entries hold at most `max_handles` files open.
    pub(crate) fn new(budget: usize, max_handles: usize) -> EntryCache {
        EntryCache {
            budget,
            max_handles,
            handles: Arc::new(AtomicUsize::new(0)),
            state: RwLock::new(State::default()),
            generation: AtomicU64::new(0),
            dirs: Mutex::new(Dirs::default()),
            reading: AtomicBool::new(true),
        }
    }

    /// `fd`, to be held by an entry about to be cached, if the budget of descriptors has room for it; `None` (and
    /// `fd` closed) otherwise.
    pub(crate) fn hold(&self, fd: OwnedFd) -> Option<Held> {
        let max = self.max_handles;
        self.handles
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1))
            .ok()?;
        Some(Held { fd, count: Arc::clone(&self.handles) })
    }

    /// Notes how many of the `walked` files a listing found it read from disk rather than took from the cache.
    pub(crate) fn note_reads(&self, read: usize, walked: usize) {
        self.reading.store(read.saturating_mul(8) > walked, Ordering::Relaxed);
    }

    /// Whether the last listing took at least seven in eight of its files from the cache.
    pub(crate) fn mostly_cached(&self) -> bool {
        !self.reading.load(Ordering::Relaxed)
    }

    /// A new listing's generation (entries it uses are marked with it).
    pub(crate) fn next_generation(&self) -> u64 {
        self.generation.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The entries, for reading while a listing runs (many listings may read at once).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds what a listing read, replacing older entries of the same IDs, within the budget.
    pub(crate) fn insert(&self, generation: u64, fresh: Vec<Cached>) {
        if fresh.is_empty() {
            return;
        }
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let mut evicted = false;
        for cached in fresh {
            let id = cached.entry.id.as_str().to_owned();
            if let Some(old) = state.map.remove(&id) {
                state.bytes -= old.cost;
            }
            if state.bytes + cached.cost > self.budget && !evicted {
                // Drop what this listing did not use, once; entries it used are the likeliest to be used again.
                state.map.retain(|_, kept| kept.last_used.load(Ordering::Relaxed) >= generation);
                state.bytes = state.map.values().map(|kept| kept.cost).sum();
                evicted = true;
            }
            if state.bytes + cached.cost > self.budget {
                continue;
            }
            cached.touch(generation);
            state.bytes += cached.cost;
            state.map.insert(id, Box::new(cached));
        }
    }

    /// The names in the open directory `dir`, whose entries' IDs start with `prefix` (see [`Listed`]): kept from an
    /// earlier listing while the directory has the same stamp (taken before the names are read); read, and kept if
    /// the directory has settled by `now` (nanoseconds since the epoch), otherwise. Listings are bounded by an eighth
    /// of the budget, counted in the entries' bytes.
    pub(crate) fn dir_names(
        &self,
        dir: BorrowedFd<'_>,
        prefix: &str,
        now: i128,
    ) -> Result<Arc<Listed>, Errno> {
        let stamp = Stamp::from_stat(&rustix::fs::fstat(dir)?);
        let key = (stamp.dev, stamp.ino);
        let dirs = self.dirs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((kept, listed)) = dirs.map.get(&key)
            && *kept == stamp
        {
            if listed.prefix() == prefix {
                return Ok(Arc::clone(listed));
            }
            // The same directory met at another place below the root (it was moved, or is walked twice): its
            // names hold, its IDs do not.
            return Ok(Arc::new(listed.under(prefix)));
        }
        drop(dirs);
        let listed = Listed::read(dir, prefix)?;
        if stamp.settled_at(now) {
            let mut dirs = self.dirs.lock().unwrap_or_else(PoisonError::into_inner);
            dirs.serial += 1;
            let serial = NonZeroU64::new(dirs.serial).unwrap_or(NonZeroU64::MIN);
            let listed = Arc::new(listed.settled_as(serial));
            let cost = listed.cost();
            if let Some((_, old)) = dirs.map.remove(&key) {
                dirs.bytes -= old.cost();
            }
            if dirs.bytes + cost > self.budget / 8 {
                dirs.map.clear();
                dirs.bytes = 0;
            }
            if cost <= self.budget / 8 {
                dirs.bytes += cost;
                dirs.map.insert(key, (stamp, Arc::clone(&listed)));
            }
            return Ok(listed);
        }
        Ok(Arc::new(listed))
    }

    /// How full the cache is.
    pub(crate) fn stats(&self) -> CacheStats {
        let state = self.read();
        CacheStats {
            entries: state.map.len(),
            bytes: state.bytes,
            budget: self.budget,
            handles: self.handles.load(Ordering::Relaxed),
            max_handles: self.max_handles,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed cost counted per entry covers what each entry holds besides its text: the boxed record, the
    /// table's slot and its control byte, and the allocator's headers of the five allocations (box, content,
    /// folded text, ID, key).
    #[test]
    fn the_overhead_counted_covers_the_structures() {
        let held = std::mem::size_of::<Cached>() + std::mem::size_of::<(String, Box<Cached>)>() + 1 + 5 * 16;
        assert!(ENTRY_OVERHEAD_BYTES >= held, "{held} bytes held per entry");
        assert!(ENTRY_OVERHEAD_BYTES < held + 128, "{held} bytes held per entry: the estimate is too high");
    }

    /// A kept listing answers for the place it was read at: the same directory asked for under another prefix (with
    /// an unchanged stamp, as a bind mount would show it) gets IDs under that prefix.
    #[test]
    fn a_kept_listing_is_used_only_under_its_own_prefix() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("note.md"), "text").unwrap();
        std::fs::write(dir.path().join("a:b.md"), "text").unwrap();
        std::fs::write(dir.path().join("readme.txt"), "text").unwrap();
        let cache = EntryCache::new(1 << 20, 16);
        let later = nanos(i64::MAX / 2_000_000_000, 0i64);
        let fd = std::fs::File::open(dir.path()).unwrap();
        let ids = |prefix: &str| {
            let listed = cache.dir_names(fd.as_fd(), prefix, later).unwrap();
            assert_eq!(listed.prefix(), prefix);
            listed.ids().map(|id| id.as_str().to_owned()).collect::<Vec<_>>()
        };
        assert_eq!(ids("shared"), ["shared:note"]);
        assert_eq!(cache.dirs.lock().unwrap().map.len(), 1, "settled by `later`: kept");
        assert_eq!(ids("shared"), ["shared:note"]);
        assert_eq!(ids("project:x"), ["project:x:note"]);
        assert_eq!(ids("shared"), ["shared:note"]);
    }

    /// The budget of descriptors counts those held by entries not yet cached: a listing of more files than the
    /// budget holds no more than it, and a descriptor counts until its entry is dropped.
    #[test]
    fn descriptors_are_counted_from_the_hold_to_the_drop() {
        let dir = tempfile::tempdir().unwrap();
        let cache = EntryCache::new(1 << 20, 2);
        let open = || OwnedFd::from(std::fs::File::open(dir.path()).unwrap());
        let first = cache.hold(open());
        let second = cache.hold(open());
        assert!(first.is_some() && second.is_some());
        assert!(cache.hold(open()).is_none(), "the budget is reached before anything is cached");
        assert_eq!(cache.stats().handles, 2);
        drop(first);
        assert_eq!(cache.stats().handles, 1);
        let third = cache.hold(open());
        assert!(third.is_some());
        assert_eq!(cache.stats().handles, 2);
        drop((second, third));
        assert_eq!(cache.stats().handles, 0);
    }

    /// A listing read under a settled stamp carries a serial, the same for as long as the directory keeps that
    /// stamp (under any prefix), and a new one once a name changes; an unsettled listing carries none.
    #[test]
    fn a_settled_listing_keeps_its_serial_until_the_directory_changes() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("note.md"), "text").unwrap();
        let cache = EntryCache::new(1 << 20, 16);
        let later = nanos(i64::MAX / 2_000_000_000, 0i64);
        let fd = std::fs::File::open(dir.path()).unwrap();
        let serial = |prefix: &str, now: i128| cache.dir_names(fd.as_fd(), prefix, now).unwrap().settled();
        assert_eq!(serial("shared", 0), None, "not settled at the epoch");
        let first = serial("shared", later);
        assert!(first.is_some());
        assert_eq!(serial("shared", later), first);
        assert_eq!(serial("project:x", later), first, "the same directory state under another prefix");
        std::fs::write(dir.path().join("other.md"), "text").unwrap();
        let second = serial("shared", later);
        assert!(second.is_some() && second != first, "{first:?} {second:?}");
        assert_eq!(serial("shared", later), second);
    }
}
