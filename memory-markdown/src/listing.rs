//! `MemoryStore::list` for the Markdown store: walk the granted subtrees, read and score every entry file in
//! parallel, and keep what the listing asks for.
//!
//! The walk hands files over in chunks as it finds them, so reading starts with the first directory; the files left
//! when it ends go to a tail that every thread takes from, in chunks that shrink as it empties. When the entry cache
//! held nearly every file of the last listing (most files then cost one `fstat`), the walk keeps the files of up
//! to [`WALK_FIRST_DIRS`] directories until it ends instead, and hands over only those found past them. Each worker
//! thread reuses one read buffer and one folding buffer for every file, and does the work of a file in the order
//! that lets it stop soonest:
//!
//! 1. the file is opened and read as every read does ([`read_file`]: never a symlink, a FIFO or a device; a
//!    second link or a size over the limit is refused before reading);
//! 2. the content is found (the frontmatter is skipped, not parsed) and scored against the query; a file that holds
//!    no term is done, and so is one that scores lower than the last of the best `limit` selected so far (the score
//!    ranks first, so its frontmatter could not change that);
//! 3. the frontmatter is read, and the entry must pass the expiry and the filters;
//! 4. with a limit, an entry that ranks below as many entries as the limit is done;
//! 5. only then is the entry built (its content copied out of the buffer, its unknown frontmatter keys turned into
//!    values).
//!
//! A frontmatter `version` over the cap makes the store refuse a file (see [`Refusal`]); since step 2 skips the
//! frontmatter of files it rules out, such a file is reported (a warning) only when it could be in the result.
//!
//! Before each file, a worker checks the listing's cancellation flag; once the caller has given up, every worker
//! stops at its next file and the listing fails with the cancellation error.
//!
//! With an [entry cache](crate::StoreOptions::entry_cache), a file whose metadata still matches its cached stamp
//! costs one `fstat` of the file the entry holds open (or one `fstatat` by name, when the entry holds none or its
//! directory changed: see [`crate::cache`]) and a search of its cached folded text; the others take the path above,
//! and those that have settled are read whole and cached.
//!
//! [`read_file`]: crate::entry_file::read_file

use std::collections::BinaryHeap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use memory_entry::{MemoryEntry, StorageError, StorageErrorKind, StoreError};
use memory_fs::RootHandle;
use memory_id::MemoryId;
use memory_ranker::{FoldBuffer, Ranked};
use memory_store::{Listing, Scored};
use rustix::fs::Stat;

use crate::cache::{Cached, EntryCache, Stamp, State};
use crate::entry_file::{ReadMode, ReadOutcome, Refusal, mtime, read_file_held, version_refusal};
use crate::format::{decode_content, read_front, split};
use crate::walk::{FileRef, Leftovers, Listed, NameSource, WalkError, WalkRoot, walk_with};

/// Files handed to a worker at once, at most.
const CHUNK: usize = 256;

/// A thread takes at most this share of the files left in the tail at once: `1 / (TAIL_SHARE × threads)` of them
/// (guided scheduling). The chunks shrink as the tail does, so the threads finish at about the same time, whichever
/// started late or runs slower.
const TAIL_SHARE: usize = 2;

/// Fewer files than this are read on the calling thread (starting threads would cost more than they save).
const PARALLEL_FROM: usize = 96;

/// Everything a worker needs to read files for one listing.
pub(crate) struct Context<'a> {
    pub(crate) root: &'a RootHandle,
    pub(crate) listing: &'a Listing,
    pub(crate) max_bytes: u64,
    pub(crate) cache: Option<&'a EntryCache>,
    pub(crate) generation: u64,
}

/// What a worker selects: every entry, or the best `limit` in rank order.
enum Selection {
    All(Vec<Scored>),
    Best { limit: usize, heap: BinaryHeap<LastFirst> },
}

/// A scored entry ordered so that a max-heap's top is the one that ranks last.
struct LastFirst(Scored);

impl PartialEq for LastFirst {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for LastFirst {}

impl PartialOrd for LastFirst {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LastFirst {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp_rank(&other.0)
    }
}

impl Selection {
    fn new(limit: Option<usize>) -> Selection {
        match limit {
            Some(limit) => Selection::Best { limit, heap: BinaryHeap::with_capacity(limit.min(1024) + 1) },
            None => Selection::All(Vec::new()),
        }
    }

    /// Whether no entry with this score could be selected, whatever its fields: the best `limit` are already
    /// selected and the last of them scores higher (the score ranks first, so the rest of the entry cannot change
    /// that). Decided before the frontmatter is read.
    fn rules_out(&self, score: usize) -> bool {
        match self {
            Selection::All(_) => false,
            Selection::Best { limit, heap } => {
                *limit == 0 || (heap.len() >= *limit && heap.peek().is_some_and(|last| score < last.0.score))
            }
        }
    }

    /// Whether an entry with this score would be selected (compared without its content: IDs differ, so the content
    /// never decides).
    fn wants(&self, score: usize, entry: &MemoryEntry) -> bool {
        match self {
            Selection::All(_) => true,
            Selection::Best { limit, heap } => {
                heap.len() < *limit
                    || heap.peek().is_some_and(|last| {
                        Ranked::new(entry, score).cmp_rank(&Ranked::new(&last.0.entry, last.0.score)).is_lt()
                    })
            }
        }
    }

    fn push(&mut self, scored: Scored) {
        match self {
            Selection::All(entries) => entries.push(scored),
            Selection::Best { limit, heap } => {
                if heap.len() >= *limit {
                    heap.pop();
                }
                if *limit > 0 {
                    heap.push(LastFirst(scored));
                }
            }
        }
    }

    fn into_vec(self) -> Vec<Scored> {
        match self {
            Selection::All(entries) => entries,
            Selection::Best { heap, .. } => heap.into_iter().map(|last| last.0).collect(),
        }
    }
}

/// One thread's reading state, reused for every file it reads.
struct Worker<'a> {
    cx: &'a Context<'a>,
    buffer: Vec<u8>,
    fold: FoldBuffer,
    selection: Selection,
    fresh: Vec<Cached>,
    /// Files read from disk (not taken from the cache).
    read: usize,
}

impl<'a> Worker<'a> {
    fn new(cx: &'a Context<'a>) -> Worker<'a> {
        Worker {
            cx,
            buffer: Vec::new(),
            fold: FoldBuffer::new(),
            selection: Selection::new(cx.listing.limit()),
            fresh: Vec::new(),
            read: 0,
        }
    }

    /// Reads a chunk of files (holding the cache's read lock, if any, for the chunk).
    fn chunk(&mut self, files: Vec<FileRef>) -> Result<(), StoreError> {
        match self.cx.cache {
            Some(cache) => {
                let state = cache.read();
                for file in files {
                    self.file(file, Some(&state))?;
                }
            }
            None => {
                for file in files {
                    self.file(file, None)?;
                }
            }
        }
        Ok(())
    }

    fn file(&mut self, file: FileRef, cached: Option<&State>) -> Result<(), StoreError> {
        // A caller that gave up is not served any further: this file and the rest are left unread.
        self.cx.listing.check_cancelled()?;
        if let Some(state) = cached
            && let Some(hit) = state.get(file.id().as_str())
            && hit.unchanged(file.dir_settled(), file.dir_fd(), file.c_name())
        {
            hit.touch(self.cx.generation);
            self.consider_cached(hit);
            return Ok(());
        }
        let listing = self.cx.listing;
        let Some((stat, handle)) = self.open_and_read(&file)? else { return Ok(()) };
        self.read += 1;
        let mtime = mtime(&stat);
        let (frontmatter, content) = split(&self.buffer);
        let (content, _lossy) = decode_content(content);
        let now = listing.now().unix_nanos();
        if let Some(cache) = self.cx.cache
            && let Some(stamp) = Stamp::of(&stat).filter(|stamp| stamp.settled_at(now))
        {
            // Read whole, folded and cached, whether or not it matches this listing.
            let (front, _, unknown) = read_front(frontmatter);
            if let Some(refusal) = version_refusal(front.version_over_cap.as_ref()) {
                refused(file.id(), &refusal);
                return Ok(());
            }
            let mut entry = front.into_entry(file.id().clone(), content.into_owned(), mtime);
            entry.extra = unknown.into_extra();
            let folded = self.fold.fold_entry(entry.id.as_str(), &entry.content).to_owned();
            let cached = Cached::new(stamp, entry, folded, cache.hold(handle), file.dir_settled());
            self.consider_cached(&cached);
            self.fresh.push(cached);
            return Ok(());
        }
        let Some(score) = listing.score_text(file.id().as_str(), &content, &mut self.fold) else {
            return Ok(());
        };
        if self.selection.rules_out(score) {
            return Ok(());
        }
        let (front, _, unknown) = read_front(frontmatter);
        if let Some(refusal) = version_refusal(front.version_over_cap.as_ref()) {
            refused(file.id(), &refusal);
            return Ok(());
        }
        let mut entry = front.into_entry(file.id().clone(), String::new(), mtime);
        if !listing.admits(&entry) || !self.selection.wants(score, &entry) {
            return Ok(());
        }
        entry.content = content.into_owned();
        entry.extra = unknown.into_extra();
        self.selection.push(Scored { entry, score });
        Ok(())
    }

    /// Scores a cached entry and keeps a copy if the listing wants it.
    fn consider_cached(&mut self, cached: &Cached) {
        let listing = self.cx.listing;
        let Some(score) = listing.score_folded_with(&cached.folded, &cached.trigrams) else { return };
        if listing.admits(&cached.entry) && self.selection.wants(score, &cached.entry) {
            self.selection.push(Scored { entry: cached.entry.clone(), score });
        }
    }

    /// Reads the file as every read does ([`read_file`]) into the buffer; `None` when it is not read as an entry
    /// (each case logged as every listing logs it: [`skipped`]).
    ///
    /// [`read_file`]: crate::entry_file::read_file
    fn open_and_read(&mut self, file: &FileRef) -> Result<Option<(Stat, OwnedFd)>, StoreError> {
        let mode = ReadMode::Full { max_bytes: self.cx.max_bytes };
        match read_file_held(self.cx.root, file.dir_fd(), file.name(), mode, &mut self.buffer) {
            Ok(ReadOutcome::Entry(read)) => Ok(Some(read)),
            Ok(other) => {
                skipped(file.id(), &other);
                Ok(None)
            }
            Err(errno) => Err(StoreError::Storage(StorageError::new(
                StorageErrorKind::Io,
                Some(file.id()),
                format!(
                    "cannot read `{}`: {}",
                    file.name(),
                    crate::path::lower(&std::io::Error::from(errno))
                ),
            ))),
        }
    }
}

/// What a listing does with a file it does not read as an entry: it skips it, with a warning for those a person
/// should look at (a refused file, a FIFO, socket or device) and a debug line for a symlink.
pub(crate) fn skipped<E>(id: &MemoryId, outcome: &ReadOutcome<E>) {
    match outcome {
        ReadOutcome::Refused(refusal) => refused(id, refusal),
        ReadOutcome::Special => tracing::warn!(id = %id, "listing skips a FIFO, socket or device"),
        ReadOutcome::Symlink => tracing::debug!(id = %id, "listing skips a symbolic link"),
        ReadOutcome::Entry(_) | ReadOutcome::Missing | ReadOutcome::Directory => {}
    }
}

fn refused(id: &MemoryId, refusal: &Refusal) {
    tracing::warn!(id = %id, refusal = ?refusal, "listing skips a file it will not read as an entry");
}

/// Lists the entry files under `roots` as `cx.listing` asks: in parallel over `threads` threads when there are
/// many (the calling thread walks, then reads too), each entry scored once. Unsorted; with a limit, the best of
/// each thread ([`Listing::finish`] makes the answer of them).
pub(crate) fn list_walked(
    cx: &Context<'_>,
    roots: &[WalkRoot],
    threads: usize,
) -> Result<Vec<Scored>, WalkError<StoreError>> {
    let mut inline = Worker::new(cx);
    let mut pending: Vec<FileRef> = Vec::new();
    // Few chunks in flight: each holds its directories open.
    let (sender, receiver) = sync_channel::<Vec<FileRef>>(threads.max(1));
    let receiver = Mutex::new(receiver);
    let receiver = &receiver;
    // The files left when the walk ends, which every thread takes from until none is left.
    let tail = Tail { files: Mutex::new(Vec::new()), threads };
    let tail = &tail;
    let sender = Some(sender);
    let now = cx.listing.now().unix_nanos();
    // When the cache held nearly every file the last listing found, the walk lists names the cache holds and most
    // files are checked with one `fstat` each: the walk is quick, and no file is handed over before it ends. The
    // helpers, started during the walk, wait for its end and are woken once, then share every file through the
    // tail. Handed a chunk at a time, a helper slept and was woken for each chunk, and was measured to be woken on
    // the walker's CPU, the two then taking turns on one CPU while the other idled (a served search 7% slower).
    // When files are read from disk (no cache, a cache not yet filled, or more files than its budget), they are
    // read while the walk goes on (walking first measured 13% slower over 100,000 entries, 70,000 of them read).
    // Each file holds its directory open until it is read, so a walk that goes first stops holding files back
    // past WALK_FIRST_DIRS directories: from there on they are handed over as they are found, as when reading
    // from disk (a store of many small directories would otherwise hold every one open at once).
    let walk_first = cx.cache.is_some_and(EntryCache::mostly_cached);
    let mut held_dirs = 0;
    let mut found = 0;
    let cached_names = |dir: BorrowedFd<'_>, prefix: &str| match cx.cache {
        Some(cache) => cache.dir_names(dir, prefix, now),
        None => Listed::read(dir, prefix).map(Arc::new),
    };
    let names: Option<NameSource<'_>> = cx.cache.is_some().then_some(&cached_names);
    let parts = std::thread::scope(|scope| -> Result<Vec<Done>, WalkError<StoreError>> {
        // Owned here, so that a panic on this thread drops it as it unwinds: the helpers waiting for chunks then see
        // the channel closed and end, and the scope can join them instead of waiting for them for ever.
        let mut sender = sender;
        let mut handles = Vec::new();
        // The calling thread is the last worker, once the walk is over.
        let start = || {
            let helpers =
                (1..threads).map(|_| scope.spawn(move || work(cx, receiver, tail))).collect::<Vec<_>>();
            // A new thread may be queued on this thread's CPU, and run only once this one stops, even with another
            // CPU idle. Yielding lets it run to where it waits for files; the wake-up that hands it files then
            // places it as wake-ups are placed, on an idle CPU if there is one.
            std::thread::yield_now();
            helpers
        };
        let walked = walk_with(cx.root, roots, Leftovers::Leave, names, &mut |files: Vec<FileRef>| {
            // The walk too stops once the caller gave up, not only the workers.
            cx.listing.check_cancelled()?;
            found += files.len();
            if walk_first {
                held_dirs += dirs_of(&files);
            }
            pending.extend(files);
            if threads <= 1 {
                return inline.chunk(std::mem::take(&mut pending));
            }
            if handles.is_empty() {
                if pending.len() < 2 * CHUNK {
                    return Ok(());
                }
                handles = start();
            }
            if walk_first && held_dirs <= WALK_FIRST_DIRS {
                return Ok(());
            }
            match &sender {
                Some(sender) => hand_over(sender, &mut pending, &mut inline),
                None => Ok(()),
            }
        });
        if walked.is_ok() && threads > 1 && pending.len() >= PARALLEL_FROM && handles.is_empty() {
            // Every file is known: the threads share them from the start, and none waits for a chunk.
            tail.add(std::mem::take(&mut pending));
            drop(sender.take());
            handles = start();
        }
        let mut out = Vec::new();
        let mut failure = None;
        if !handles.is_empty() {
            if walked.is_ok() {
                tail.add(std::mem::take(&mut pending));
            }
            drop(sender.take());
            if walked.is_ok() {
                match work(cx, receiver, tail) {
                    Ok(done) => out.push(done),
                    Err(error) => failure = Some(error),
                }
            }
        }
        drop(sender.take());
        for handle in handles {
            match handle.join() {
                Ok(Ok(done)) => out.push(done),
                Ok(Err(error)) => failure = failure.or(Some(error)),
                Err(_) => {
                    failure = failure.or(Some(StoreError::Storage(StorageError::about(
                        StorageErrorKind::Io,
                        None,
                        "a listing thread panicked",
                    ))));
                }
            }
        }
        walked?;
        match failure {
            Some(error) => Err(WalkError::Consumer(error)),
            None => Ok(out),
        }
    })?;
    inline.chunk(pending).map_err(WalkError::Consumer)?;
    let mut out = inline.selection.into_vec();
    let mut fresh = inline.fresh;
    let mut read = inline.read;
    for (selection, more, also_read) in parts {
        out.extend(selection.into_vec());
        fresh.extend(more);
        read += also_read;
    }
    if let Some(cache) = cx.cache {
        cache.insert(cx.generation, fresh);
        cache.note_reads(read, found);
    }
    Ok(out)
}

type Done = (Selection, Vec<Cached>, usize);

/// A chunk holds files of at most this many directories (each file holds its directory open until it is read).
const CHUNK_DIRS: usize = 32;

/// The most directories whose files a listing that walks first keeps before it hands any over: about what the
/// chunks in flight hold when files are handed over as they are found.
const WALK_FIRST_DIRS: usize = 4 * CHUNK_DIRS;

/// How many directories `files` span (a directory's files are found together).
fn dirs_of(files: &[FileRef]) -> usize {
    files.iter().enumerate().filter(|(i, file)| *i == 0 || !Arc::ptr_eq(&files[i - 1].dir, &file.dir)).count()
}

/// Sends `pending` to the workers in chunks of [`CHUNK`] files (fewer when they span [`CHUNK_DIRS`] directories),
/// leaving fewer than [`CHUNK`] files of fewer directories behind. A chunk the workers have no room for is read by
/// `inline`, on the calling thread: it never waits for them.
fn hand_over(
    sender: &SyncSender<Vec<FileRef>>,
    pending: &mut Vec<FileRef>,
    inline: &mut Worker<'_>,
) -> Result<(), StoreError> {
    loop {
        let mut dirs = 0;
        let mut len = 0;
        for (i, file) in pending.iter().enumerate().take(CHUNK) {
            if i == 0 || !Arc::ptr_eq(&pending[i - 1].dir, &file.dir) {
                dirs += 1;
                if dirs > CHUNK_DIRS {
                    break;
                }
            }
            len = i + 1;
        }
        let full = len == CHUNK || dirs > CHUNK_DIRS;
        if !full {
            return Ok(());
        }
        let rest = pending.split_off(len);
        let chunk = std::mem::replace(pending, rest);
        match sender.try_send(chunk) {
            Ok(()) => {}
            Err(TrySendError::Full(chunk) | TrySendError::Disconnected(chunk)) => inline.chunk(chunk)?,
        }
    }
}

/// The files left when the walk ends, shared by the threads.
struct Tail {
    files: Mutex<Vec<FileRef>>,
    threads: usize,
}

impl Tail {
    /// Replaces the files left (with none, after a failure: the other threads then stop at their next chunk).
    fn put(&self, files: Vec<FileRef>) {
        *self.files.lock().unwrap_or_else(PoisonError::into_inner) = files;
    }

    /// Adds files to those left.
    fn add(&self, mut files: Vec<FileRef>) {
        self.files.lock().unwrap_or_else(PoisonError::into_inner).append(&mut files);
    }

    /// The next files to read: `1 / (TAIL_SHARE × threads)` of those left (at least one, at most [`CHUNK`]); empty
    /// once none is left.
    fn take(&self) -> Vec<FileRef> {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let size = files.len().div_ceil(TAIL_SHARE * self.threads.max(1)).min(CHUNK);
        let rest = files.len() - size;
        files.split_off(rest)
    }
}

/// A worker thread: reads the chunks it receives until the walk is over, then takes from the tail until it is
/// empty.
fn work(cx: &Context<'_>, receiver: &Mutex<Receiver<Vec<FileRef>>>, tail: &Tail) -> Result<Done, StoreError> {
    let mut worker = Worker::new(cx);
    let mut failure = None;
    loop {
        let next = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(files) = next else { break };
        // After a failure the rest is received and dropped, so that the queue empties.
        if failure.is_none()
            && let Err(error) = worker.chunk(files)
        {
            failure = Some(error);
        }
    }
    while failure.is_none() {
        let files = tail.take();
        if files.is_empty() {
            break;
        }
        if let Err(error) = worker.chunk(files) {
            failure = Some(error);
        }
    }
    if failure.is_some() {
        // The listing fails: whatever is left in the tail goes unread.
        tail.put(Vec::new());
    }
    match failure {
        Some(error) => Err(error),
        None => Ok((worker.selection, worker.fresh, worker.read)),
    }
}
