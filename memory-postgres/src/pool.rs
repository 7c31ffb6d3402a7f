//! A small blocking connection pool: idle connections in a `Mutex<Vec<_>>`, at most [`MAX_CONNECTIONS`] open, a
//! bounded wait for a free one, every connect bounded by a deadline, dead connections dropped.
//!
//! Why not r2d2: it opens `min_idle` connections eagerly (failing only after its own 30 s timeout when the server
//! is down), runs three maintenance threads per pool, tests every checkout with a round trip, and brings a second
//! `parking_lot` tree; what this crate needs is a few dozen lines.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Row, Statement, Transaction};

use crate::error::{Failure, describe, is_connection_lost};
use crate::url::Target;

/// The most connections one store (or sink) holds open. The CLI uses one; an MCP server or a threaded embedder a few.
pub(crate) const MAX_CONNECTIONS: usize = 8;

/// Connects within `deadline`. `connect_timeout` bounds only the socket's `connect()`: over a Unix socket that
/// returns at once and the startup handshake could then wait for a stopped server forever. So the connect runs on
/// a helper thread; on timeout the thread is left to finish (and drop its connection) whenever the server answers
/// or goes away.
pub(crate) fn connect(
    target: &Target,
    config: &postgres::Config,
    deadline: Duration,
) -> Result<Client, String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let config = config.clone();
    std::thread::Builder::new()
        .name("alp-pg-connect".into())
        .spawn(move || {
            let _ = sender.send(config.connect(NoTls));
        })
        .map_err(|e| format!("cannot start a thread to connect: {e}"))?;
    match receiver.recv_timeout(deadline) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(target.scrub(&describe(&e))),
        Err(_) => Err(format!("no answer within {} s (connect timeout)", deadline.as_secs_f64())),
    }
}

/// One connection and the statements prepared on it.
pub(crate) struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl Conn {
    pub(crate) fn new(client: Client) -> Conn {
        Conn { client, statements: HashMap::new() }
    }

    /// Queries outside a transaction.
    pub(crate) fn session(&mut self) -> Cached<'_, &mut Client> {
        Cached { client: &mut self.client, statements: &mut self.statements }
    }

    /// A transaction (rolled back when dropped without [`Cached::commit`]).
    pub(crate) fn transaction(&mut self) -> Result<Cached<'_, Transaction<'_>>, postgres::Error> {
        let tx = self.client.transaction()?;
        Ok(Cached { client: tx, statements: &mut self.statements })
    }

    /// A read-only transaction on one snapshot.
    pub(crate) fn snapshot(&mut self) -> Result<Cached<'_, Transaction<'_>>, postgres::Error> {
        let tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        Ok(Cached { client: tx, statements: &mut self.statements })
    }

    /// Whether the connection still works, without a round trip: an idle synchronous client never reads its
    /// socket, so a server's goodbye (a restart, a terminated backend) is only seen when the socket is polled.
    fn is_alive(&mut self) -> bool {
        if self.client.is_closed() {
            return false;
        }
        let mut notifications = self.client.notifications();
        let mut pending = notifications.iter();
        loop {
            match pending.next() {
                Ok(Some(_)) => {} // nothing LISTENs; drain
                Ok(None) => break,
                Err(_) => return false,
            }
        }
        drop(pending);
        drop(notifications);
        !self.client.is_closed()
    }
}

/// A client (a session or a transaction) whose fixed statements are prepared once per connection.
pub(crate) struct Cached<'a, C> {
    client: C,
    statements: &'a mut HashMap<&'static str, Statement>,
}

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

/// A session (`&mut Client`) or a transaction: what [`Cached`] runs statements on.
pub(crate) trait AsClient {
    /// The client type.
    type Client: GenericClient;
    /// The client.
    fn client(&mut self) -> &mut Self::Client;
}

impl AsClient for &mut Client {
    type Client = Client;
    fn client(&mut self) -> &mut Client {
        self
    }
}

impl<'t> AsClient for Transaction<'t> {
    type Client = Transaction<'t>;
    fn client(&mut self) -> &mut Transaction<'t> {
        self
    }
}

impl<C: AsClient> Cached<'_, C> {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.client().prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Rows of a fixed statement.
    pub(crate) fn query(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.client().query(&statement, params)
    }

    /// The one row of a fixed statement, if any.
    pub(crate) fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.client().query_opt(&statement, params)
    }

    /// The one row of a fixed statement.
    pub(crate) fn query_one(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.client().query_one(&statement, params)
    }

    /// Runs a fixed statement; the number of rows it changed.
    pub(crate) fn execute(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.client().execute(&statement, params)
    }

    /// Rows of a statement built for this call (not prepared: planned with its actual values, each time).
    pub(crate) fn query_built(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.client.client().query(sql, params)
    }
}

impl Cached<'_, Transaction<'_>> {
    /// Commits the transaction.
    pub(crate) fn commit(self) -> Result<(), postgres::Error> {
        self.client.commit()
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
    config: postgres::Config,
    connect_timeout: Duration,
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

impl Pool {
    /// A pool for `config`, holding `first` (already set up) as its first idle connection. A caller waits at most
    /// `wait` for a free connection.
    pub(crate) fn new(
        target: Target,
        config: postgres::Config,
        connect_timeout: Duration,
        wait: Duration,
        first: Conn,
    ) -> Pool {
        Pool {
            target,
            config,
            connect_timeout,
            wait,
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
    pub(crate) fn failure(&self, e: &postgres::Error, what: &str) -> Failure {
        let detail = self.scrub(&describe(e));
        let kind = if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
            crate::error::FailureKind::LockTimeout
        } else {
            crate::error::FailureKind::Backend
        };
        let message = if is_connection_lost(e) {
            format!("lost the connection to the database `{}` while {what}: {detail}", self.url())
        } else if e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED) {
            format!("the database `{}` did not finish {what} within statementTimeout: {detail}", self.url())
        } else {
            format!("the database `{}` failed while {what}: {detail}", self.url())
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
                return match connect(&self.target, &self.config, self.connect_timeout) {
                    Ok(client) => Ok(Pooled { pool: self, conn: Some(Conn::new(client)) }),
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

/// A checked-out connection; back to the pool on drop, unless it broke.
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        match self.conn.take() {
            Some(conn) if !conn.client.is_closed() => {
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
