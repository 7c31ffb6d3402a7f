//! Connections with a client-side deadline on every round trip, and a small blocking pool of them: idle
//! connections in a `Mutex<Vec<_>>`, at most [`MAX_CONNECTIONS`] open, a bounded wait for a free one, dead or
//! timed-out connections dropped, never reused.
//!
//! Each connection is a `tokio-postgres` client and its connection, driven on a current-thread runtime of its own
//! (what the synchronous `postgres` crate does inside, without a way to give up). Every round trip runs under
//! `tokio::time::timeout`: a server that stops answering (a stopped backend, a half-open socket, a peer that
//! completed the handshake and went silent) fails the call at the deadline instead of blocking it for ever; the
//! server's own `statement_timeout` is the same bound seen from the other side. Nothing here blocks when dropped,
//! so a store may be dropped anywhere, inside an async runtime too.
//!
//! Why not r2d2: it opens `min_idle` connections eagerly (failing only after its own 30 s timeout when the server
//! is down), runs three maintenance threads per pool, tests every checkout with a round trip, and brings a second
//! `parking_lot` tree; what this crate needs is a few dozen lines.

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::pin::{Pin, pin};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, NoTls, Row, Socket, Statement};

use crate::error::{DbError, Failure, describe, is_connection_lost};
use crate::url::Target;

/// The most connections one store (or sink) holds open. The CLI uses one; an MCP server or a threaded embedder a few.
pub(crate) const MAX_CONNECTIONS: usize = 8;

/// The most bind parameters one statement may carry: the protocol counts them in 16 bits. Every statement this crate
/// builds stays at or below it (a listing with more roots or terms than fit is split, see `PostgresStore::list`),
/// and [`Cached::query_built`] refuses more rather than sending them.
pub(crate) const MAX_BIND_PARAMS: usize = u16::MAX as usize;

type PgConnection = tokio_postgres::Connection<Socket, NoTlsStream>;

/// A current-thread runtime that never blocks when dropped (it is shut down in the background), so a connection may
/// be dropped inside another runtime.
struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    fn new() -> Result<Runtime, String> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|runtime| Runtime(Some(runtime)))
            .map_err(|e| format!("cannot start the client's runtime: {e}"))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Connects within `deadline` (the socket's connect and the whole startup handshake: over a Unix socket the connect
/// returns at once, and a stopped server or a silent peer would then hold the handshake for ever). Later round trips
/// on the connection are bounded by `bound`.
pub(crate) fn connect(
    target: &Target,
    config: &tokio_postgres::Config,
    deadline: Duration,
    bound: Duration,
) -> Result<Conn, String> {
    let runtime = Runtime::new()?;
    let Some(rt) = runtime.0.as_ref() else { return Err("the client's runtime is gone".to_owned()) };
    match rt.block_on(async { tokio::time::timeout(deadline, config.connect(NoTls)).await }) {
        Ok(Ok((client, connection))) => Ok(Conn {
            client,
            statements: HashMap::new(),
            link: Link { connection: Box::pin(connection), runtime, bound, broken: false },
        }),
        Ok(Err(e)) => Err(target.scrub(&describe(&e))),
        Err(_) => Err(format!("no answer within {} s (connect timeout)", deadline.as_secs_f64())),
    }
}

/// What ended a round trip early.
enum Ended {
    /// The request failed.
    Call(tokio_postgres::Error),
    /// The connection failed (`Some`) or closed (`None`) before the answer came.
    Connection(Option<tokio_postgres::Error>),
}

/// The connection's I/O, the runtime that drives it, and the deadline of each round trip. Declared in drop order:
/// the socket goes before its runtime.
struct Link {
    connection: Pin<Box<PgConnection>>,
    runtime: Runtime,
    /// How long one round trip may wait for the server.
    bound: Duration,
    /// Timed out, lost or closed: never used again.
    broken: bool,
}

impl Link {
    /// Runs `future` (a request of the client) while driving the connection, for at most the bound. A timeout, a
    /// lost connection or a client-side error breaks the link; an error the server answered with does not.
    fn run<T>(
        &mut self,
        future: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, DbError> {
        if self.broken {
            return Err(DbError::Closed);
        }
        let Some(runtime) = self.runtime.0.as_ref() else { return Err(DbError::Closed) };
        let connection = &mut self.connection;
        let mut future = pin!(future);
        let driven = std::future::poll_fn(|cx| {
            let mut ended = None;
            loop {
                match connection.as_mut().poll_message(cx) {
                    Poll::Ready(Some(Ok(AsyncMessage::Notice(notice)))) => {
                        tracing::debug!(notice = %notice, "a notice from the database");
                    }
                    Poll::Ready(Some(Ok(_))) => {} // nothing LISTENs
                    Poll::Ready(Some(Err(e))) => {
                        ended = Some(Some(e));
                        break;
                    }
                    Poll::Ready(None) => {
                        ended = Some(None);
                        break;
                    }
                    Poll::Pending => break,
                }
            }
            if let Poll::Ready(result) = future.as_mut().poll(cx) {
                return Poll::Ready(result.map_err(Ended::Call));
            }
            match ended {
                Some(why) => Poll::Ready(Err(Ended::Connection(why))),
                None => Poll::Pending,
            }
        });
        let bound = self.bound;
        match runtime.block_on(async { tokio::time::timeout(bound, driven).await }) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(Ended::Call(e))) => {
                if e.as_db_error().is_none() || is_connection_lost(&e) {
                    self.broken = true;
                }
                Err(DbError::Pg(e))
            }
            Ok(Err(Ended::Connection(why))) => {
                self.broken = true;
                Err(why.map_or(DbError::Closed, DbError::Pg))
            }
            Err(_) => {
                self.broken = true;
                Err(DbError::NoAnswer(bound))
            }
        }
    }

    /// Whether the connection still works, without a round trip: reads what the server sent while the connection was
    /// idle (a goodbye from a restart or a terminated backend is only seen when the socket is read).
    fn is_alive(&mut self) -> bool {
        if self.broken {
            return false;
        }
        let Some(runtime) = self.runtime.0.as_ref() else { return false };
        let connection = &mut self.connection;
        let ended = runtime.block_on(async {
            // Lets the runtime read the socket's pending events first.
            tokio::task::yield_now().await;
            std::future::poll_fn(|cx| {
                loop {
                    match connection.as_mut().poll_message(cx) {
                        Poll::Ready(Some(Ok(_))) => {}
                        Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(true),
                        Poll::Pending => return Poll::Ready(false),
                    }
                }
            })
            .await
        });
        if ended {
            self.broken = true;
        }
        !self.broken
    }
}

/// One connection and the statements prepared on it.
pub(crate) struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    link: Link,
}

/// A session outside a transaction (a [`Cached`] kind).
pub(crate) enum Session {}

/// A transaction (a [`Cached`] kind), rolled back when dropped without [`Cached::commit`].
pub(crate) enum Tx {}

/// What a [`Cached`] runs on: [`Session`] or [`Tx`].
pub(crate) trait AsClient {}

impl AsClient for Session {}
impl AsClient for Tx {}

impl Conn {
    /// Bounds each later round trip by `bound` (`statementTimeout`, once the settings are read).
    pub(crate) fn set_bound(&mut self, bound: Duration) {
        self.link.bound = bound;
    }

    /// Queries outside a transaction.
    pub(crate) fn session(&mut self) -> Cached<'_, Session> {
        Cached { conn: self, open: false, kind: PhantomData }
    }

    /// A transaction (rolled back when dropped without [`Cached::commit`]).
    pub(crate) fn transaction(&mut self) -> Result<Cached<'_, Tx>, DbError> {
        self.batch("BEGIN")?;
        Ok(Cached { conn: self, open: true, kind: PhantomData })
    }

    /// A read-only transaction on one snapshot.
    pub(crate) fn snapshot(&mut self) -> Result<Cached<'_, Tx>, DbError> {
        self.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        Ok(Cached { conn: self, open: true, kind: PhantomData })
    }

    /// Runs SQL without parameters (the simple protocol).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        let Conn { client, link, .. } = self;
        link.run(client.batch_execute(sql))
    }

    /// Marks the connection unfit for use: it is closed instead of going back to the pool (its session ends, with
    /// whatever session state it held).
    pub(crate) fn discard(&mut self) {
        self.link.broken = true;
    }

    /// Whether the connection is still fit for use: not timed out, lost or closed.
    fn is_usable(&self) -> bool {
        !self.link.broken && !self.client.is_closed()
    }

    fn is_alive(&mut self) -> bool {
        self.link.is_alive() && !self.client.is_closed()
    }
}

/// A session or a transaction on one connection, whose fixed statements are prepared once per connection.
pub(crate) struct Cached<'a, K> {
    conn: &'a mut Conn,
    /// A transaction not yet committed or rolled back.
    open: bool,
    kind: PhantomData<K>,
}

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

impl<K> Drop for Cached<'_, K> {
    fn drop(&mut self) {
        if self.open {
            // A failed rollback breaks the link, and the connection is dropped with it.
            let _ = self.conn.batch("ROLLBACK");
        }
    }
}

impl<K> Cached<'_, K> {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, DbError> {
        if let Some(statement) = self.conn.statements.get(sql) {
            return Ok(statement.clone());
        }
        let Conn { client, link, statements } = &mut *self.conn;
        let statement = link.run(client.prepare(sql))?;
        statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Rows of a fixed statement.
    pub(crate) fn query(&mut self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>, DbError> {
        let statement = self.statement(sql)?;
        let Conn { client, link, .. } = &mut *self.conn;
        link.run(client.query(&statement, params))
    }

    /// The one row of a fixed statement, if any.
    pub(crate) fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, DbError> {
        let statement = self.statement(sql)?;
        let Conn { client, link, .. } = &mut *self.conn;
        link.run(client.query_opt(&statement, params))
    }

    /// The one row of a fixed statement.
    pub(crate) fn query_one(&mut self, sql: &'static str, params: Params<'_>) -> Result<Row, DbError> {
        let statement = self.statement(sql)?;
        let Conn { client, link, .. } = &mut *self.conn;
        link.run(client.query_one(&statement, params))
    }

    /// Runs a fixed statement; the number of rows it changed.
    pub(crate) fn execute(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64, DbError> {
        let statement = self.statement(sql)?;
        let Conn { client, link, .. } = &mut *self.conn;
        link.run(client.execute(&statement, params))
    }

    /// Rows of a statement built for this call (not prepared: planned with its actual values, each time). More than
    /// [`MAX_BIND_PARAMS`] parameters are refused before anything is sent.
    pub(crate) fn query_built(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, DbError> {
        if params.len() > MAX_BIND_PARAMS {
            return Err(DbError::TooManyParams(params.len()));
        }
        let Conn { client, link, .. } = &mut *self.conn;
        link.run(client.query(sql, params))
    }

    /// Runs SQL without parameters (the simple protocol).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.batch(sql)
    }
}

impl Cached<'_, Tx> {
    /// Commits the transaction.
    pub(crate) fn commit(mut self) -> Result<(), DbError> {
        self.open = false;
        self.conn.batch("COMMIT")
    }
}

struct State {
    idle: Vec<Conn>,
    /// Idle, checked out, or being opened.
    open: usize,
}

/// The pool.
pub(crate) struct Pool {
    target: Target,
    /// The target's configuration with the session settings as startup options.
    config: tokio_postgres::Config,
    connect_timeout: Duration,
    statement_timeout: Duration,
    wait: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Pool")
            .field("url", &self.target.shown)
            .field("open", &state.open)
            .field("idle", &state.idle.len())
            .finish()
    }
}

/// How long a connection may take to open, each round trip to answer, and a caller to wait for a free connection.
pub(crate) struct Bounds {
    pub(crate) connect: Duration,
    pub(crate) statement: Duration,
    pub(crate) wait: Duration,
}

impl Pool {
    /// A pool for `config`, holding `first` (already set up) as its first idle connection.
    pub(crate) fn new(
        target: Target,
        config: tokio_postgres::Config,
        bounds: &Bounds,
        mut first: Conn,
    ) -> Pool {
        first.set_bound(bounds.statement);
        Pool {
            target,
            config,
            connect_timeout: bounds.connect,
            statement_timeout: bounds.statement,
            wait: bounds.wait,
            state: Mutex::new(State { idle: vec![first], open: 1 }),
            freed: Condvar::new(),
        }
    }

    /// The URL without its password.
    pub(crate) fn url(&self) -> &str {
        &self.target.shown
    }

    /// A message with the URL's secrets replaced.
    pub(crate) fn scrub(&self, message: &str) -> String {
        self.target.scrub(message)
    }

    /// Describes a client error, scrubbed, as a [`Failure`].
    pub(crate) fn failure(&self, e: &DbError, what: &str) -> Failure {
        let url = self.url();
        let e = match e {
            DbError::Pg(e) => e,
            DbError::NoAnswer(bound) => {
                return Failure::backend(format!(
                    "the database `{url}` did not answer within {} s (statementTimeout) while {what}; the \
                     connection was closed",
                    bound.as_secs_f64()
                ));
            }
            DbError::Closed => {
                return Failure::backend(format!(
                    "lost the connection to the database `{url}` while {what}: the connection is closed"
                ));
            }
            DbError::TooManyParams(n) => {
                return Failure::backend(format!(
                    "a statement for {what} would bind {n} parameters, more than the {MAX_BIND_PARAMS} the \
                     database protocol allows; nothing was sent to `{url}`"
                ));
            }
        };
        let detail = self.scrub(&describe(e));
        let kind = if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
            crate::error::FailureKind::LockTimeout
        } else {
            crate::error::FailureKind::Backend
        };
        let message = if is_connection_lost(e) {
            format!("lost the connection to the database `{url}` while {what}: {detail}")
        } else if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) {
            format!("the database `{url}` did not finish {what} within statementTimeout: {detail}")
        } else {
            format!("the database `{url}` failed while {what}: {detail}")
        };
        Failure { kind, message }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the lock is held; a poisoned lock still holds a consistent list.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle connection that still works, a new one while fewer than [`MAX_CONNECTIONS`] are open, or one freed
    /// within the wait.
    pub(crate) fn get(&self) -> Result<Pooled<'_>, Failure> {
        let deadline = Instant::now() + self.wait;
        let mut state = self.lock();
        loop {
            while let Some(mut conn) = state.idle.pop() {
                if conn.is_alive() {
                    return Ok(Pooled { pool: self, conn: Some(conn) });
                }
                state.open -= 1; // died while idle: dropped here, replaced below
            }
            if state.open < MAX_CONNECTIONS {
                state.open += 1;
                drop(state); // connect without holding the lock
                return match connect(&self.target, &self.config, self.connect_timeout, self.statement_timeout)
                {
                    Ok(conn) => Ok(Pooled { pool: self, conn: Some(conn) }),
                    Err(reason) => {
                        self.release_slot();
                        Err(Failure::backend(format!("cannot reach the database `{}`: {reason}", self.url())))
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Failure::backend(format!(
                    "all {MAX_CONNECTIONS} connections to the database `{}` stayed busy for {} s",
                    self.url(),
                    self.wait.as_secs_f64()
                )));
            }
            state = self.freed.wait_timeout(state, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
    }

    fn release_slot(&self) {
        let mut state = self.lock();
        state.open = state.open.saturating_sub(1);
        drop(state);
        self.freed.notify_one();
    }
}

/// A checked-out connection; back to the pool on drop, unless it broke (then it is closed).
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        match self.conn.take() {
            Some(conn) if conn.is_usable() => {
                self.pool.lock().idle.push(conn);
                self.pool.freed.notify_one();
            }
            _ => self.pool.release_slot(),
        }
    }
}

impl Deref for Pooled<'_> {
    type Target = Conn;

    #[expect(clippy::expect_used, reason = "the connection is taken only in drop")]
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("a pooled connection is present until dropped")
    }
}

impl DerefMut for Pooled<'_> {
    #[expect(clippy::expect_used, reason = "the connection is taken only in drop")]
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("a pooled connection is present until dropped")
    }
}
