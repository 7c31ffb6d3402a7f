//! Copying a whole store into an empty one (`alp store copy`): every entry, live and expired, with its versions and
//! timestamps, the kept versions and tombstones of deleted IDs (redactions stay redacted), the bearer tokens, and the
//! audit log line for line. Both ends may be a Markdown root or, with the `postgres` feature, a PostgreSQL database.
//!
//! The source log is verified before anything is written (a broken log is not copied), and the copied chain is
//! verified after: a copy whose log does not verify is an error.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use memory_audit::{AuditError, AuditKey, BreakReason, VerifyReport, show, verify_expecting};
use memory_entry::{MemoryEntry, StoreError, Timestamp, Version};
use memory_id::MemoryPrefix;
use memory_markdown::{CONFIG_FILE, MarkdownStore, RootOpenError, StoreConfig, StoreOptions};
use memory_store::{Expiry, Listing, MemoryStore as _};

use crate::MemoryError;
use crate::token::{TokenRecord, TokenStore};

/// The audit log of a Markdown root, directly under the root (`memory_markdown::layout`).
pub const AUDIT_FILE: &str = memory_markdown::AUDIT_FILE;

/// The store a copy reads, opened by the caller (so the caller's own rules for a missing or broken store apply).
#[derive(Debug, Clone, Copy)]
pub enum CopySource<'a> {
    /// A Markdown root; its log is [`AUDIT_FILE`] under it.
    Markdown(&'a MarkdownStore),
    /// A PostgreSQL database; its log is its audit table.
    #[cfg(feature = "postgres")]
    Postgres(&'a memory_postgres::PostgresStore),
}

/// Where a copy goes: it must be empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyTarget<'a> {
    /// A missing or empty directory: it is created (mode 0700) with a `config.yaml` holding the source's limits and
    /// lock wait.
    Root(&'a Path),
    /// A database without the schema (it is created, with the source's limits and lock wait), or with the schema
    /// and neither entries nor audit records.
    #[cfg(feature = "postgres")]
    Database(&'a str),
}

/// What a copy wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// The entries copied (live and expired; not the older versions).
    pub entries: usize,
    /// The kept versions copied: every version of every ID's history, the entries' current ones included, and the
    /// tombstones of deleted IDs.
    pub versions: usize,
    /// The bearer tokens copied (revoked ones too).
    pub tokens: usize,
    /// The audit records copied.
    pub audit_records: usize,
    /// The target as the store names itself: the root's canonical path, or the URL without its password.
    pub target: String,
}

/// Which audit log a [`CopyError::BrokenLog`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSide {
    /// The source's log: nothing was written.
    Source,
    /// The log as copied into the target.
    Copied,
}

impl LogSide {
    fn as_str(self) -> &'static str {
        match self {
            LogSide::Source => "source",
            LogSide::Copied => "copied",
        }
    }
}

/// Why a copy failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The target directory holds something (or cannot be read to tell): nothing was written.
    #[error("`{}` is not empty; store copy writes only into an empty store", path.display())]
    DirectoryNotEmpty {
        /// The directory as given.
        path: PathBuf,
    },
    /// The target database already holds entries or audit records: nothing was written.
    #[cfg(feature = "postgres")]
    #[error(
        "the database `{url}` already holds entries or audit records; store copy writes only into an empty store"
    )]
    DatabaseNotEmpty {
        /// The URL without its password.
        url: String,
    },
    /// An audit log does not verify.
    #[error("the {} audit log is broken at record {first_bad_seq} ({reason}); nothing more was copied", side.as_str())]
    BrokenLog {
        /// The source's log or the copied one.
        side: LogSide,
        /// The first record that does not verify.
        first_bad_seq: u64,
        /// Why.
        reason: BreakReason,
    },
    /// An audit log could not be read or written.
    #[error("{0}")]
    Audit(#[from] AuditError),
    /// A store could not be read or written.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The tokens could not be read or written.
    #[error("{0}")]
    Tokens(MemoryError),
    /// The target directory, its `config.yaml` or its log could not be created.
    #[error("cannot create `{}`: {source}", path.display())]
    Create {
        /// What could not be created.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// The new root could not be opened once created.
    #[error("{source}")]
    OpenRoot {
        /// The root as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: RootOpenError,
    },
    /// The target database could not be opened or given its schema.
    #[cfg(feature = "postgres")]
    #[error("{0}")]
    OpenDatabase(memory_postgres::DatabaseOpenError),
    /// The source's lock wait cannot be a database setting.
    #[error("{0}")]
    LockTimeout(String),
}

/// Everything a copy reads from its source.
struct Read {
    entries: Vec<MemoryEntry>,
    lines: Vec<String>,
    config: StoreConfig,
    versions: Vec<Version>,
    tokens: Vec<TokenRecord>,
}

impl Read {
    /// Keeps the versions as of the entries read: the versions are read after the entries, so a write in between
    /// (an update, a delete) adds a version above the entry's copied one, which the copy must not hold in its history
    /// (its entry would be older than its history). Versions of IDs without a copied entry are all kept.
    fn settle(&mut self) {
        let current = current_versions(&self.entries);
        self.versions
            .retain(|version| current.get(version.id().as_str()).is_none_or(|&at| version.version() <= at));
    }
}

/// Each entry's ID and the version it was read at.
fn current_versions(entries: &[MemoryEntry]) -> HashMap<&str, u64> {
    entries.iter().map(|entry| (entry.id.as_str(), entry.version)).collect()
}

/// Refuses a target that is not empty: for a directory, one that exists and holds anything or cannot be read
/// ([`CopyError::DirectoryNotEmpty`]). A database is checked by [`copy_store`] once it is open.
///
/// # Errors
///
/// [`CopyError::DirectoryNotEmpty`].
pub fn check_target(target: CopyTarget<'_>) -> Result<(), CopyError> {
    match target {
        CopyTarget::Root(dir) => match std::fs::read_dir(dir).map(|mut entries| entries.next().is_some()) {
            Ok(false) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Ok(true) | Err(_) => Err(CopyError::DirectoryNotEmpty { path: dir.to_owned() }),
        },
        #[cfg(feature = "postgres")]
        CopyTarget::Database(_) => Ok(()),
    }
}

/// Copies `source` into the empty `target`, the audit chains keyed with `key` (HMAC-SHA256) or not (SHA-256):
/// [`check_target`]; the source log verified; the entries, kept versions, tombstones and tokens read; the target
/// created; the entries written (calling `progress(done, total)` as they are), then the older versions, the tokens
/// and the log, which is then verified where it was copied to. The source log is read through
/// [`memory_audit::show`] (no symbolic link followed, under its shared lock), byte for byte.
///
/// # Errors
///
/// [`CopyError::DirectoryNotEmpty`] or `CopyError::DatabaseNotEmpty` (with the `postgres` feature) for a target in
/// use; [`CopyError::BrokenLog`] when a log does not verify; otherwise the error of the step that failed.
pub fn copy_store(
    source: CopySource<'_>,
    target: CopyTarget<'_>,
    key: Option<&AuditKey>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<CopyReport, CopyError> {
    check_target(target)?;
    let mut read = read_source(source, key)?;
    read.settle();
    let total = read.entries.len();
    let (versions, tokens) = (read.versions.len(), read.tokens.len());
    let audit_records = read.lines.len();
    let target = match target {
        CopyTarget::Root(dir) => write_root(dir, read, key, progress)?,
        #[cfg(feature = "postgres")]
        CopyTarget::Database(url) => write_database(url, read, key, progress)?,
    };
    Ok(CopyReport { entries: total, versions, tokens, audit_records, target })
}

fn broken(side: LogSide, report: VerifyReport) -> Result<(), CopyError> {
    match report {
        VerifyReport::Ok { .. } => Ok(()),
        VerifyReport::Broken { first_bad_seq, reason } => {
            Err(CopyError::BrokenLog { side, first_bad_seq, reason })
        }
    }
}

fn read_source(source: CopySource<'_>, key: Option<&AuditKey>) -> Result<Read, CopyError> {
    match source {
        CopySource::Markdown(store) => {
            let log = store.root().join(AUDIT_FILE);
            broken(LogSide::Source, verify_expecting(&log, key, None)?)?;
            let roots =
                ["shared", "project", "private"].iter().filter_map(|s| MemoryPrefix::parse(s).ok()).collect();
            let listing = Listing::new(roots, Timestamp::now()).with_expiry(Expiry::Any);
            let entries: Vec<_> = store.list(&listing)?.into_iter().map(|scored| scored.entry).collect();
            let mut bytes = Vec::new();
            show(&log, 1, None, &mut bytes)?;
            let text = String::from_utf8(bytes).map_err(|e| AuditError::Io {
                path: log.clone(),
                op: "read",
                source: io::Error::new(io::ErrorKind::InvalidData, e),
            })?;
            let lines = text.lines().map(str::to_owned).collect();
            // Every kept version: of each entry (its current one included) and of each deleted ID.
            let mut ids: Vec<_> = entries.iter().map(|entry| entry.id.clone()).collect();
            ids.extend(store.history_ids()?);
            ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            ids.dedup();
            let mut versions = Vec::new();
            for id in &ids {
                match store.history(id, None) {
                    Ok(kept) => versions.extend(kept.into_iter().rev()),
                    Err(StoreError::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            let tokens = store.tokens().map_err(CopyError::Tokens)?;
            Ok(Read { entries, lines, config: *store.config(), versions, tokens })
        }
        #[cfg(feature = "postgres")]
        CopySource::Postgres(store) => {
            let sink = store.audit_sink(key.cloned());
            broken(LogSide::Source, sink.verify(None)?)?;
            let entries = store.all_entries()?;
            let lines = sink.lines(1, None)?;
            let settings = store.settings();
            let versions = store.all_versions()?;
            let tokens = store.tokens().map_err(CopyError::Tokens)?;
            Ok(Read {
                entries,
                lines,
                config: StoreConfig { limits: settings.limits, lock_timeout: settings.lock_wait() },
                versions,
                tokens,
            })
        }
    }
}

fn write_root(
    dir: &Path,
    read: Read,
    key: Option<&AuditKey>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<String, CopyError> {
    use std::os::unix::fs::DirBuilderExt as _;
    fn cannot(path: &Path) -> impl FnOnce(io::Error) -> CopyError + '_ {
        move |source| CopyError::Create { path: path.to_owned(), source }
    }
    if !dir.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(cannot(dir))?;
    }
    let config_file = dir.join(CONFIG_FILE);
    write_new(&config_file, &read.config.to_yaml()).map_err(cannot(&config_file))?;
    let store = MarkdownStore::open_with(dir, StoreOptions::new().create_missing(false))
        .map_err(|source| CopyError::OpenRoot { path: dir.to_owned(), source })?;
    let total = read.entries.len();
    store.insert_exact(&read.entries, &mut |done| progress(done, total))?;
    // The entry files are the current versions; the history holds the others.
    let current = current_versions(&read.entries);
    let older: Vec<_> = read
        .versions
        .into_iter()
        .filter(|version| current.get(version.id().as_str()) != Some(&version.version()))
        .collect();
    store.insert_history_exact(&older)?;
    for token in &read.tokens {
        store.put_token(token).map_err(CopyError::Tokens)?;
    }
    let log = store.root().join(AUDIT_FILE);
    let mut text = read.lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    write_new(&log, &text).map_err(cannot(&log))?;
    broken(LogSide::Copied, verify_expecting(&log, key, None)?)?;
    Ok(store.root().display().to_string())
}

#[cfg(feature = "postgres")]
fn write_database(
    url: &str,
    read: Read,
    key: Option<&AuditKey>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<String, CopyError> {
    use memory_postgres::{DatabaseOpenError as PgOpenError, PostgresStore, Settings};
    let store = match PostgresStore::open(url) {
        Err(PgOpenError::NoSchema { .. }) => {
            let lock_timeout =
                memory_entry::Ttl::parse(&format!("{}s", read.config.lock_timeout.as_secs().max(1)))
                    .map_err(|e| CopyError::LockTimeout(e.to_string()))?;
            let settings = Settings { limits: read.config.limits, lock_timeout, ..Settings::default() };
            memory_postgres::init_with(url, &settings).map_err(CopyError::OpenDatabase)?;
            PostgresStore::open(url).map_err(CopyError::OpenDatabase)?
        }
        other => other.map_err(CopyError::OpenDatabase)?,
    };
    let sink = store.audit_sink(key.cloned());
    let (records, _) = sink.head()?;
    if !store.is_empty()? || records > 0 {
        return Err(CopyError::DatabaseNotEmpty { url: store.url().to_owned() });
    }
    let total = read.entries.len();
    store.insert_exact(&read.entries)?;
    store.insert_versions_exact(&read.versions)?;
    for token in &read.tokens {
        store.put_token(token).map_err(CopyError::Tokens)?;
    }
    progress(total, total);
    sink.append_lines(&read.lines)?;
    broken(LogSide::Copied, sink.verify(None)?)?;
    Ok(store.url().to_owned())
}

/// Writes a file that must not exist yet, mode 0600, and syncs it.
fn write_new(path: &Path, text: &str) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use memory_entry::{NewEntry, Timestamp, Version};
    use memory_id::parse_memory_id;

    use super::Read;

    /// A write between the read of the entries and the read of the versions leaves versions above an entry's
    /// copied one: the copy keeps none of them, and every version of an ID it holds no entry of.
    #[test]
    fn the_versions_are_settled_as_of_the_entries_read() {
        let at = Timestamp::parse("2026-11-30T12:00:00Z").unwrap();
        let entry = |id: &str, version: u64| {
            let mut entry = NewEntry::new(parse_memory_id(id).unwrap(), "x").into_entry(at);
            entry.version = version;
            entry
        };
        let tombstone = |id: &str, version: u64| Version::Tombstone {
            id: parse_memory_id(id).unwrap(),
            version,
            deleted_at: at,
        };
        let mut read = Read {
            entries: vec![entry("shared:a", 2), entry("shared:b", 1)],
            lines: Vec::new(),
            config: memory_markdown::StoreConfig::default(),
            versions: vec![
                Version::Entry(entry("shared:a", 1)),
                Version::Entry(entry("shared:a", 2)),
                // Written after the entries were read: an update of a, a delete of b.
                Version::Entry(entry("shared:a", 3)),
                tombstone("shared:b", 2),
                // A deleted ID: kept whole.
                Version::Entry(entry("shared:gone", 1)),
                tombstone("shared:gone", 2),
            ],
            tokens: Vec::new(),
        };
        read.settle();
        let kept: Vec<(String, u64)> =
            read.versions.iter().map(|v| (v.id().as_str().to_owned(), v.version())).collect();
        let expected = [("shared:a", 1), ("shared:a", 2), ("shared:gone", 1), ("shared:gone", 2)];
        assert_eq!(kept, expected.map(|(id, v)| (id.to_owned(), v)));
    }
}
