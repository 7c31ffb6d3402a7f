//! `PostgresAuditSink`: the hash-chained audit log in a table, one exact JSONL line per record.

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memory_audit::{
    AppendStats, AuditError, AuditEvent, AuditKey, AuditRecord, AuditSink, Batch, ExpectedHead, GENESIS_HASH,
    GroupCommit, GroupOutcome, VerifyReport, verify_reader_expecting,
};

use crate::db::Db;
use crate::error::audit_error;
use crate::pool::{AsClient, Cached};
use crate::{DatabaseOpenError, PostgresStore};

/// How many lines one read of the log fetches.
const PAGE: i64 = 1000;

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
        const LAST: &str = "SELECT seq, line FROM alp_audit ORDER BY seq DESC LIMIT 1";
        let row = c.query_opt(LAST, &[]).map_err(self.db_error("read", "reading the last audit record"))?;
        let Some(row) = row else { return Ok(None) };
        let (seq, line): (i64, String) = (row.get(0), row.get(1));
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
        const LINES: &str = "SELECT seq, line FROM alp_audit WHERE seq >= $1 ORDER BY seq LIMIT $2";
        let mut conn = self.db.conn().map_err(self.error("read"))?;
        let mut session = conn.session();
        let mut next = i64::try_from(since).unwrap_or(i64::MAX);
        let mut shown = 0u64;
        loop {
            let left = limit.map_or(PAGE, |limit| i64::try_from(limit - shown).unwrap_or(PAGE).min(PAGE));
            if left == 0 {
                return Ok(shown);
            }
            let rows = session
                .query(LINES, &[&next, &left])
                .map_err(self.db_error("read", "reading the audit log"))?;
            if rows.is_empty() {
                return Ok(shown);
            }
            for row in &rows {
                let (seq, line): (i64, String) = (row.get(0), row.get(1));
                f(seq, &line)?;
                shown += 1;
                next = seq.saturating_add(1);
            }
        }
    }

    /// Walks the whole chain, with this sink's key, as `alp audit verify` does (and against a kept head with
    /// `expect`): the lines are read a page at a time and fed to [`verify_reader_expecting`].
    ///
    /// # Errors
    ///
    /// [`AuditError`] when the database fails.
    pub fn verify(&self, expect: Option<&ExpectedHead>) -> Result<VerifyReport, AuditError> {
        let reader = LogReader { sink: self, next: 1, buffer: Vec::new(), at: 0, failed: None };
        let mut reader = reader;
        let report = verify_reader_expecting(&mut reader, self.key.as_ref(), expect);
        if let Some(error) = reader.failed.take() {
            return Err(error);
        }
        report.map_err(|e| audit_error(self.db.url(), "read", e.to_string()))
    }

    /// Appends `lines` exactly as given (with or without a final `\n` each) in one transaction under the audit
    /// lock: what `alp store copy` writes. Each must be a record in canonical form continuing the chain (its `seq`
    /// one more than the last, its `prevHash` the last one's `hash`); the hashes themselves are checked by
    /// [`verify`](Self::verify) afterwards. Returns how many were appended. Nothing is appended unless all are.
    ///
    /// # Errors
    ///
    /// [`AuditError`] naming the first line that does not continue the chain, or a database failure.
    pub fn append_lines(&self, lines: &[String]) -> Result<u64, AuditError> {
        const INSERT: &str = "INSERT INTO alp_audit (seq, line) VALUES ($1, $2)";
        let mut conn = self.db.conn().map_err(self.error("append to"))?;
        let mut tx = conn.transaction().map_err(self.db_error("append to", "starting a transaction"))?;
        self.db.lock_audit(&mut tx).map_err(self.error("lock"))?;
        let mut last = self.last(&mut tx)?.map(|record| (record.seq(), record.hash().to_owned()));
        for line in lines {
            let line = line.strip_suffix('\n').unwrap_or(line);
            let record = AuditRecord::from_line(line.as_bytes()).map_err(|detail| {
                audit_error(self.db.url(), "append to", format!("a line to append is not a record: {detail}"))
            })?;
            let (seq, hash) = last.clone().unwrap_or_else(|| (0, GENESIS_HASH.to_owned()));
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
            let stored_seq = i64::try_from(record.seq())
                .map_err(|_| audit_error(self.db.url(), "append to", "the log is full"))?;
            tx.execute(INSERT, &[&stored_seq, &line])
                .map_err(self.db_error("append to", "appending a record"))?;
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
        const INSERT: &str = "INSERT INTO alp_audit (seq, line) VALUES ($1, $2)";
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
            let line = line.strip_suffix('\n').unwrap_or(&line);
            let seq = i64::try_from(record.seq())
                .map_err(|_| audit_error(self.db.url(), "append to", "the log is full"))?;
            tx.execute(INSERT, &[&seq, &line]).map_err(self.db_error("append to", "appending a record"))?;
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
    next: u64,
    buffer: Vec<u8>,
    at: usize,
    /// The database error that ended the stream (kept, so the caller reports it rather than an I/O error).
    failed: Option<AuditError>,
}

impl Read for LogReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buffer.len() {
            self.buffer.clear();
            self.at = 0;
            let mut last = None;
            self.sink
                .each_line(self.next, Some(PAGE as u64), |seq, line| {
                    self.buffer.extend_from_slice(line.as_bytes());
                    self.buffer.push(b'\n');
                    last = Some(seq);
                    Ok(())
                })
                .map_err(|e| {
                    let message = e.to_string();
                    self.failed = Some(e);
                    io::Error::other(message)
                })?;
            if let Some(seq) = last {
                self.next = u64::try_from(seq).unwrap_or(u64::MAX).saturating_add(1);
            }
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
