//! `PostgresAuditSink`: the hash-chained audit log in a table, one exact JSONL line per record.

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memory_audit::{
    AppendStats, ArchiveError, ArchiveReport, AuditError, AuditEvent, AuditKey, AuditRecord, AuditSink,
    Batch, ExpectedHead, GENESIS_HASH, GroupCommit, GroupOutcome, LogSource, MAX_LINE_BYTES, SegmentWriter,
    VerifyOptions, VerifyReport, archive_event, verify_reader_with,
};
use memory_entry::Timestamp;

use crate::db::Db;
use crate::error::audit_error;
use crate::pool::{AsClient, Cached, Tx};
use crate::{DatabaseOpenError, PostgresStore};

/// How many lines one read of the log fetches at most.
const PAGE: i64 = 1000;

/// How many bytes of lines one read of the log fetches at most, beyond its first line: lines may be up to
/// [`MAX_LINE_BYTES`] long, and a page of a thousand of them would not be.
const PAGE_BYTES: i64 = 8 * 1024 * 1024;

/// The longest line read, as the database counts it.
const MAX_LINE: i32 = MAX_LINE_BYTES as i32;

/// Appends one record: its line, the line's `door` and `shown` as columns (copies for queries in SQL; the line is
/// what the chain covers).
const INSERT: &str = "INSERT INTO alp_audit (seq, line, door, shown) VALUES ($1, $2, $3, $4)";

/// The audit log in the database (`docs/POSTGRESQL.md`; the records of `docs/CLI.md`, "Audit log"): the table
/// `alp_audit` holds each record's `seq` and its exact JSONL line ([`AuditRecord::to_line`] without the `\n`), so the
/// log read back ([`lines`](Self::lines), [`show`](Self::show)) is byte for byte what a JSONL sink writes and verifies
/// with the JSONL verifier.
///
/// Each [`record`](AuditSink::record) is one transaction under an advisory lock: read the last line, seal the next
/// record after it ([`AuditRecord::next_after`]), insert it, commit; it returns only once the commit is durable.
/// Writers on any host therefore extend one chain, without gaps or forks. Concurrent records through one sink (and
/// its clones) are committed together ([`GroupCommit`]): the records queued while one transaction runs go into the
/// next, one transaction and one durable commit for all of them; each call still returns only once its own record is
/// committed, and a failed transaction fails every call of its group. With a key ([`AuditKey`]), the chain is
/// HMAC-SHA256 like the JSONL sink's.
///
/// Every failure is an [`AuditError`] (`Io`, naming the URL without its password where a file sink names its
/// path): the service then fails closed.
#[derive(Debug, Clone)]
pub struct PostgresAuditSink {
    db: Arc<Db>,
    key: Option<AuditKey>,
    group: Arc<GroupCommit>,
    counts: Arc<Counts>,
}

/// What [`PostgresAuditSink::stats`] reports.
#[derive(Debug, Default)]
struct Counts {
    records: AtomicU64,
    commits: AtomicU64,
}

impl PostgresAuditSink {
    /// Opens the database at `url` as [`PostgresStore::open`] does; with `key`, an HMAC-SHA256 chain. To share
    /// connections with a store, use [`PostgresStore::audit_sink`].
    ///
    /// # Errors
    ///
    /// As [`PostgresStore::open`].
    pub fn open(url: &str, key: Option<AuditKey>) -> Result<PostgresAuditSink, DatabaseOpenError> {
        Ok(PostgresStore::open(url)?.audit_sink(key))
    }

    pub(crate) fn from_db(db: Arc<Db>, key: Option<AuditKey>) -> PostgresAuditSink {
        PostgresAuditSink { db, key, group: Arc::default(), counts: Arc::default() }
    }

    /// The URL, without its password.
    pub fn url(&self) -> &str {
        self.db.url()
    }

    fn error(&self, op: &'static str) -> impl Fn(crate::error::Failure) -> AuditError + '_ {
        move |failure| failure.into_audit(self.db.url(), op)
    }

    fn db_error(
        &self,
        op: &'static str,
        what: &'static str,
    ) -> impl Fn(crate::error::DbError) -> AuditError + '_ {
        move |e| self.db.pool.failure(&e, what).into_audit(self.db.url(), op)
    }

    /// The last record's `seq` and `hash` (0 and [`GENESIS_HASH`] for an empty log), as `alp audit head` prints
    /// them. Reads only the last record; it does not verify the chain.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the database fails or the last line is not a record.
    pub fn head(&self) -> Result<(u64, String), AuditError> {
        let mut conn = self.db.conn().map_err(self.error("read"))?;
        Ok(match self.last(&mut conn.session())? {
            Some(record) => (record.seq(), record.hash().to_owned()),
            None => (0, GENESIS_HASH.to_owned()),
        })
    }

    /// The last record, if any.
    fn last<C: AsClient>(&self, c: &mut Cached<'_, C>) -> Result<Option<AuditRecord>, AuditError> {
        const LAST: &str = "SELECT seq, CASE WHEN octet_length(line) <= $1 THEN line END \
            FROM alp_audit ORDER BY seq DESC LIMIT 1";
        let row = c
            .query_opt(LAST, &[&MAX_LINE])
            .map_err(self.db_error("read", "reading the last audit record"))?;
        let Some(row) = row else { return Ok(None) };
        let (seq, line): (i64, Option<String>) = (row.get(0), row.get(1));
        let line = line.ok_or_else(|| self.too_long(seq))?;
        let record = AuditRecord::from_line(line.as_bytes()).map_err(|detail| {
            audit_error(
                self.db.url(),
                "read",
                format!("the last record (seq {seq}) is not a record: {detail}"),
            )
        })?;
        if i64::try_from(record.seq()).ok() != Some(seq) {
            return Err(audit_error(
                self.db.url(),
                "read",
                format!("the last record is stored at seq {seq} but says seq {}", record.seq()),
            ));
        }
        Ok(Some(record))
    }

    /// The stored lines (without `\n`) of the records with `seq` at least `since`, at most `limit` of them, in
    /// order. Lines are not verified.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the database fails.
    pub fn lines(&self, since: u64, limit: Option<u64>) -> Result<Vec<String>, AuditError> {
        let mut lines = Vec::new();
        self.each_line(since, limit, |_, line| {
            lines.push(line.to_owned());
            Ok(())
        })?;
        Ok(lines)
    }

    /// Writes the records with `seq` at least `since`, at most `limit` of them, to `out`, one line each ending in
    /// `\n`, byte for byte as a JSONL sink holds them (`alp audit show`); returns how many.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the database fails or `out` cannot be written.
    pub fn show(&self, since: u64, limit: Option<u64>, out: &mut dyn io::Write) -> Result<u64, AuditError> {
        self.each_line(since, limit, |_, line| {
            out.write_all(line.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .map_err(|e| audit_error(self.db.url(), "print", e.to_string()))
        })
    }

    /// Calls `f` with each `seq` and line from `since` on, at most `limit`, fetched a page at a time; returns how
    /// many.
    fn each_line(
        &self,
        since: u64,
        limit: Option<u64>,
        mut f: impl FnMut(i64, &str) -> Result<(), AuditError>,
    ) -> Result<u64, AuditError> {
        let mut next = i64::try_from(since).unwrap_or(i64::MAX);
        let mut shown = 0u64;
        loop {
            let left = limit.map_or(PAGE, |limit| i64::try_from(limit - shown).unwrap_or(PAGE).min(PAGE));
            if left == 0 {
                return Ok(shown);
            }
            let page = self.page(next, i64::MAX, left)?;
            let Some(&(seq, _)) = page.last() else { return Ok(shown) };
            for (seq, line) in &page {
                f(*seq, line)?;
                shown += 1;
            }
            next = seq.saturating_add(1);
        }
    }

    /// The records with `seq` from `next` and below `until`, in order: at most `rows` of them, and no more lines
    /// than fit in [`PAGE_BYTES`] (but at least one). A line longer than [`MAX_LINE_BYTES`] is an error, before it
    /// is fetched.
    fn page(&self, next: i64, until: i64, rows: i64) -> Result<Vec<(i64, String)>, AuditError> {
        const PAGE_SQL: &str = "SELECT seq, CASE WHEN len <= $4 THEN line END FROM ( \
                SELECT seq, line, len, sum(len) OVER (ORDER BY seq) - len AS before FROM ( \
                    SELECT seq, line, octet_length(line) AS len FROM alp_audit \
                    WHERE seq >= $1 AND seq < $2 ORDER BY seq LIMIT $3 \
                ) AS rows \
            ) AS sized WHERE before < $5 ORDER BY seq";
        let mut conn = self.db.conn().map_err(self.error("read"))?;
        let rows = conn
            .session()
            .query(PAGE_SQL, &[&next, &until, &rows, &MAX_LINE, &PAGE_BYTES])
            .map_err(self.db_error("read", "reading the audit log"))?;
        rows.iter()
            .map(|row| {
                let (seq, line): (i64, Option<String>) = (row.get(0), row.get(1));
                Ok((seq, line.ok_or_else(|| self.too_long(seq))?))
            })
            .collect()
    }

    fn too_long(&self, seq: i64) -> AuditError {
        audit_error(
            self.db.url(),
            "read",
            format!("the record at seq {seq} is longer than {MAX_LINE_BYTES} bytes; run `alp audit verify`"),
        )
    }

    /// The log as a source for [`select`](memory_audit::select) and [`disclosed`](memory_audit::disclosed)
    /// (`alp audit show` and `disclosed`): its lines read a page at a time. The first page is read now, so that
    /// sources listed after this one (an archive directory's segments) already hold whatever an archive moves out
    /// of the table meanwhile; an archive that removes rows not yet read makes the reading fail rather than skip
    /// them.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the first page cannot be read.
    pub fn source(&self) -> Result<LogSource<'_>, AuditError> {
        let mut reader = LogReader::new(self);
        reader.fill()?;
        Ok(LogSource::new(self.db.url().to_owned(), reader))
    }

    /// Walks the whole chain, with this sink's key, as `alp audit verify` does (and against a kept head with
    /// `expect`): the lines are read a page at a time and fed to [`verify_reader_with`].
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the database fails.
    pub fn verify(&self, expect: Option<&ExpectedHead>) -> Result<VerifyReport, AuditError> {
        self.verify_with(&VerifyOptions::new().expecting(expect.cloned()))
    }

    /// [`verify`](Self::verify) with the checks of `options`: a kept head, an anchor the log must continue from
    /// (`alp audit verify --from`). A log whose oldest records were archived verifies from its first record.
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the database fails.
    pub fn verify_with(&self, options: &VerifyOptions) -> Result<VerifyReport, AuditError> {
        let mut reader = LogReader::new(self);
        let report = verify_reader_with(&mut reader, self.key.as_ref(), options);
        if let Some(error) = reader.failed.take() {
            return Err(error);
        }
        report.map_err(|e| audit_error(self.db.url(), "read", e.to_string()))
    }

    /// Appends `lines` exactly as given (with or without a final `\n` each) in one transaction under the audit
    /// lock: what `alp store copy` writes. Each must be a record in canonical form continuing the chain (its `seq`
    /// one more than the last, its `prevHash` the last one's `hash`; into an empty table, the first may continue
    /// from a record archived elsewhere); the hashes themselves are checked by [`verify`](Self::verify)
    /// afterwards. Returns how many were appended. Nothing is appended unless all are.
    ///
    /// # Errors
    ///
    /// [`AuditError`] naming the first line that does not continue the chain, or a database failure.
    pub fn append_lines(&self, lines: &[String]) -> Result<u64, AuditError> {
        let mut conn = self.db.conn().map_err(self.error("append to"))?;
        let mut tx = conn.transaction().map_err(self.db_error("append to", "starting a transaction"))?;
        self.db.lock_audit(&mut tx).map_err(self.error("lock"))?;
        let mut last = self.last(&mut tx)?.map(|record| (record.seq(), record.hash().to_owned()));
        for line in lines {
            let line = line.strip_suffix('\n').unwrap_or(line);
            let record = AuditRecord::from_line(line.as_bytes()).map_err(|detail| {
                audit_error(self.db.url(), "append to", format!("a line to append is not a record: {detail}"))
            })?;
            // Into an empty table, the first line may continue from a record archived elsewhere.
            let (seq, hash) = last.clone().unwrap_or_else(|| {
                let (seq, hash) = record.follows();
                (seq, hash.to_owned())
            });
            if record.seq() != seq + 1 || record.prev_hash() != hash {
                return Err(audit_error(
                    self.db.url(),
                    "append to",
                    format!(
                        "record {} does not continue the chain, which ends at seq {seq} with hash {hash}",
                        record.seq()
                    ),
                ));
            }
            self.insert(&mut tx, &record, line)?;
            last = Some((record.seq(), record.hash().to_owned()));
        }
        tx.commit().map_err(self.db_error("append to", "committing the records"))?;
        Ok(lines.len() as u64)
    }
}

impl PostgresAuditSink {
    /// How many records this sink has committed, and in how many transactions: fewer commits than records when
    /// concurrent appends were grouped. Counts only this sink's (and its clones') appends.
    pub fn stats(&self) -> AppendStats {
        AppendStats {
            records: self.counts.records.load(Ordering::Relaxed),
            syncs: self.counts.commits.load(Ordering::Relaxed),
        }
    }

    /// A group's append, by its leader: one transaction under the audit lock holding every event queued by the time
    /// the lock is held, each sealed after the one before it.
    fn append_group(&self, batch: &mut Batch<'_>) -> GroupOutcome {
        let mut conn = self.db.conn().map_err(self.error("append to"))?;
        let mut tx = conn.transaction().map_err(self.db_error("append to", "starting a transaction"))?;
        self.db.lock_audit(&mut tx).map_err(self.error("lock"))?;
        let mut last = self.last(&mut tx)?;
        let events = batch.take();
        let mut results = Vec::with_capacity(events.len());
        let mut sealed = 0u64;
        for event in &events {
            // An event that cannot be a record fails alone; the chain goes on from the previous record.
            let record = match AuditRecord::next_after(last.as_ref(), event, self.key.as_ref()) {
                Ok(record) => record,
                Err(e) => {
                    results.push(Err(e));
                    continue;
                }
            };
            let line = record.to_line();
            self.insert(&mut tx, &record, line.strip_suffix('\n').unwrap_or(&line))?;
            last = Some(record.clone());
            results.push(Ok(record));
            sealed += 1;
        }
        if sealed == 0 {
            return Ok(results);
        }
        self.counts.commits.fetch_add(1, Ordering::Relaxed);
        tx.commit().map_err(self.db_error("append to", "committing a record"))?;
        self.counts.records.fetch_add(sealed, Ordering::Relaxed);
        Ok(results)
    }
}

impl PostgresAuditSink {
    /// Inserts `record`, whose stored line is `line` (without its `\n`).
    fn insert(&self, tx: &mut Cached<'_, Tx>, record: &AuditRecord, line: &str) -> Result<(), AuditError> {
        let seq = i64::try_from(record.seq())
            .map_err(|_| audit_error(self.db.url(), "append to", "the log is full"))?;
        let door = record.door().map(|door| door.as_str());
        let shown: Option<Vec<&str>> =
            (!record.shown().is_empty()).then(|| record.shown().iter().map(String::as_str).collect());
        tx.execute(INSERT, &[&seq, &line, &door, &shown])
            .map_err(self.db_error("append to", "appending a record"))?;
        Ok(())
    }

    /// Moves the records with `seq` < `before` (default: all but the last) out of the table into `dir` as
    /// `audit-<first>-<last>.jsonl` (`alp audit archive --to DIR`), as [`memory_audit::archive`] does for a file:
    /// the segment is written, verified (under this sink's key) and synced first, by a [`SegmentWriter`] (under
    /// the directory's lock); then one transaction under the audit lock checks that those rows are still the ones
    /// written, appends the `archive` record (actor `""`, `id` the segment's name, at `at`) and deletes them.
    /// Appends go on while the segment is written. Nothing to archive (an empty table, a table of one record by
    /// default, a `before` at or below the first record) is a report of 0 records, and nothing is written.
    ///
    /// A crash before the commit leaves every row (their copy in the segment too, which an archive run again
    /// finds and keeps); the commit removes them and records it at once.
    ///
    /// # Errors
    ///
    /// [`ArchiveError`]: the database or the directory cannot be used, the log is broken, `before` is past its
    /// end, the segment's name holds other bytes, or the rows changed meanwhile (another archive).
    pub fn archive(
        &self,
        dir: &Path,
        before: Option<u64>,
        at: Timestamp,
    ) -> Result<ArchiveReport, ArchiveError> {
        let at = at.as_offset_date_time();
        // The record can be made (its time is one a record holds) before anything is written.
        AuditRecord::next_after(None, &archive_event(at, "audit-1-1.jsonl"), self.key.as_ref())?;
        let url = self.db.url();
        let mut writer = SegmentWriter::create(dir, url, self.key.as_ref())?;
        let (last_seq, _) = self.head()?;
        let before = match before {
            Some(before) if before > last_seq + 1 => {
                return Err(ArchiveError::PastTheEnd { before, next: last_seq + 1 });
            }
            Some(before) => before,
            None => last_seq,
        };
        let until = i64::try_from(before).unwrap_or(i64::MAX);
        let mut next = 1i64;
        let mut last_line = String::new();
        loop {
            let page = self.page(next, until, PAGE)?;
            let Some(&(seq, _)) = page.last() else { break };
            for (_, line) in &page {
                writer.push(line.as_bytes())?;
                last_line.clone_from(line);
            }
            next = seq.saturating_add(1);
        }
        let Some(segment) = writer.install()? else {
            // Nothing before `before`: the log continues from where its first record says.
            let from = match self.page(1, i64::MAX, 1)?.first() {
                None => (0, GENESIS_HASH.to_owned()),
                Some((_, line)) => {
                    let first = AuditRecord::from_line(line.as_bytes()).map_err(|detail| {
                        audit_error(url, "read", format!("the first record is not a record: {detail}"))
                    })?;
                    let (seq, hash) = first.follows();
                    (seq, hash.to_owned())
                }
            };
            return Ok(ArchiveReport { archived: 0, file: None, from });
        };
        let archived = writer.records();
        let (last, last_hash) =
            writer.last().ok_or_else(|| audit_error(url, "read", "no record was archived"))?;
        let replaced = || ArchiveError::Replaced { log: url.to_owned(), segment: segment.path().to_owned() };

        const ARCHIVED: &str = "SELECT count(*), min(seq), max(seq) FROM alp_audit WHERE seq < $1";
        const LINE_AT: &str = "SELECT line FROM alp_audit WHERE seq = $1";
        const DELETE: &str = "DELETE FROM alp_audit WHERE seq < $1";
        let mut conn = self.db.conn().map_err(self.error("append to"))?;
        let mut tx = conn.transaction().map_err(self.db_error("append to", "starting a transaction"))?;
        self.db.lock_audit(&mut tx).map_err(self.error("lock"))?;
        let first = i64::try_from(segment.first()).unwrap_or(i64::MAX);
        let end = i64::try_from(last).unwrap_or(i64::MAX);
        let row =
            tx.query_one(ARCHIVED, &[&until]).map_err(self.db_error("read", "counting the archived rows"))?;
        let (count, min, max): (i64, Option<i64>, Option<i64>) = (row.get(0), row.get(1), row.get(2));
        if u64::try_from(count).ok() != Some(archived) || min != Some(first) || max != Some(end) {
            return Err(replaced());
        }
        let row =
            tx.query_opt(LINE_AT, &[&end]).map_err(self.db_error("read", "reading the last archived row"))?;
        if row.map(|row| row.get::<_, String>(0)) != Some(last_line) {
            return Err(replaced());
        }
        let head = self.last(&mut tx)?;
        let record =
            AuditRecord::next_after(head.as_ref(), &archive_event(at, &segment.name()), self.key.as_ref())?;
        let line = record.to_line();
        self.insert(&mut tx, &record, line.strip_suffix('\n').unwrap_or(&line))?;
        tx.execute(DELETE, &[&until]).map_err(self.db_error("append to", "deleting the archived rows"))?;
        tx.commit().map_err(self.db_error("append to", "committing the archive"))?;
        Ok(ArchiveReport { archived, file: Some(segment.path().to_owned()), from: (last, last_hash) })
    }
}

impl AuditSink for PostgresAuditSink {
    /// Appends `event` with every other record being appended through this sink (or a clone of it) at the same
    /// time, in one transaction (group commit): see [`PostgresAuditSink`].
    fn record(&self, event: &AuditEvent) -> Result<AuditRecord, AuditError> {
        self.group.submit(event, |batch| self.append_group(batch))
    }

    /// The database answers, the schema is there, this user may append, and the last record reads: everything a
    /// record needs but the write.
    fn check_ready(&self) -> Result<(), AuditError> {
        const READY: &str = "SELECT has_table_privilege('alp_audit', 'INSERT')";
        let mut conn = self.db.conn().map_err(self.error("open"))?;
        let mut session = conn.session();
        let may_append: bool =
            session.query_one(READY, &[]).map_err(self.db_error("open", "checking the audit log"))?.get(0);
        if !may_append {
            return Err(audit_error(self.db.url(), "open", "this database user may not append to alp_audit"));
        }
        self.last(&mut session).map(|_| ())
    }
}

/// The log as one stream of JSONL bytes, read from the database a page at a time.
struct LogReader<'s> {
    sink: &'s PostgresAuditSink,
    /// The `seq` the next page starts at; `None` before the first page.
    next: Option<i64>,
    buffer: Vec<u8>,
    at: usize,
    /// The database error that ended the stream (kept, so the caller reports it rather than an I/O error).
    failed: Option<AuditError>,
}

impl<'s> LogReader<'s> {
    fn new(sink: &'s PostgresAuditSink) -> LogReader<'s> {
        LogReader { sink, next: None, buffer: Vec::new(), at: 0, failed: None }
    }

    /// Reads the next page into the buffer. Records follow each other: a page that does not start where the last
    /// ended means rows were archived while the log was read, and reading it is an error rather than a gap.
    fn fill(&mut self) -> Result<(), AuditError> {
        self.buffer.clear();
        self.at = 0;
        let page = self.sink.page(self.next.unwrap_or(1), i64::MAX, PAGE)?;
        if let (Some(next), Some(&(seq, _))) = (self.next, page.first())
            && seq != next
        {
            return Err(audit_error(
                self.sink.db.url(),
                "read",
                format!(
                    "the log holds no record {next} any more (it was archived while it was read); read it again"
                ),
            ));
        }
        for (_, line) in &page {
            self.buffer.extend_from_slice(line.as_bytes());
            self.buffer.push(b'\n');
        }
        if let Some(&(seq, _)) = page.last() {
            self.next = Some(seq.saturating_add(1));
        } else if self.next.is_none() {
            self.next = Some(1);
        }
        Ok(())
    }
}

impl Read for LogReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buffer.len() {
            self.fill().map_err(|e| {
                let message = e.to_string();
                self.failed = Some(e);
                io::Error::other(message)
            })?;
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
