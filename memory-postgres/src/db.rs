//! An open database: its pool, its settings, and the locks every writer takes.

use tokio_postgres::types::ToSql;

use crate::error::Failure;
use crate::pool::{Bounds, Cached, Pool, Pooled, Tx};
use crate::schema::{advisory_key, check, first_connection, session_options};
use crate::url::Target;
use crate::{DatabaseOpenError, Settings};

/// Namespace of the per-scope-root advisory locks.
const SCOPE_LOCK: &str = "alp-memory/scope-root";
/// Namespace of the audit log's advisory lock.
const AUDIT_LOCK: &str = "alp-memory/audit";

/// A database opened and checked: the store and the audit sink share one.
#[derive(Debug)]
pub(crate) struct Db {
    pub(crate) pool: Pool,
    pub(crate) settings: Settings,
}

impl Db {
    /// Connects (bounded by the URL's `connect_timeout`, else 5 s), checks the schema, reads the settings, and
    /// bounds every later statement by `statementTimeout` and every lock wait by `lockTimeout`.
    pub(crate) fn open(url: &str) -> Result<Db, DatabaseOpenError> {
        let target = Target::parse(url)?;
        let mut conn = first_connection(&target)?;
        let settings = check(&mut conn, &target)?;
        let session = [
            ("statement_timeout", settings.statement_wait()),
            ("lock_timeout", settings.lock_wait()),
            // A client stopped inside a transaction (it cannot be killed cleanly by its host) must not hold a
            // scope-root lock for ever: the server ends its session instead.
            ("idle_in_transaction_session_timeout", settings.statement_wait()),
        ];
        let millis = |d: std::time::Duration| format!("{}ms", d.as_millis().max(1));
        conn.session()
            .execute(
                "SELECT set_config('statement_timeout', $1, false), set_config('lock_timeout', $2, false), \
                 set_config('idle_in_transaction_session_timeout', $3, false)",
                &[&millis(session[0].1), &millis(session[1].1), &millis(session[2].1)],
            )
            .map_err(|e| DatabaseOpenError::Backend {
                url: target.shown.clone(),
                reason: target.scrub(&e.to_string()),
            })?;
        let mut config = target.config.clone();
        config.options(session_options(target.config.get_options(), &session));
        config.connect_timeout(settings.connect_wait());
        // Each round trip is bounded on this side too, by the same statementTimeout: a server that stops answering
        // (a stopped backend, a silent peer) fails the call instead of holding it.
        let bounds = Bounds {
            connect: settings.connect_wait(),
            statement: settings.statement_wait(),
            wait: settings.lock_wait(),
        };
        let pool = Pool::new(target, config, &bounds, conn);
        Ok(Db { pool, settings })
    }

    /// The URL without its password.
    pub(crate) fn url(&self) -> &str {
        self.pool.url()
    }

    /// A connection from the pool.
    pub(crate) fn conn(&self) -> Result<Pooled<'_>, Failure> {
        self.pool.get()
    }

    /// Takes the advisory locks of these scope roots in the transaction, in one fixed order (by key), each wait
    /// bounded by `lockTimeout`; released at commit or rollback.
    pub(crate) fn lock_scope_roots(&self, tx: &mut Cached<'_, Tx>, roots: &[&str]) -> Result<(), Failure> {
        let mut keys: Vec<(i64, &str)> =
            roots.iter().map(|root| (advisory_key(SCOPE_LOCK, root), *root)).collect();
        keys.sort_unstable();
        keys.dedup_by_key(|(key, _)| *key);
        for (key, root) in keys {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key]).map_err(|e| {
                let mut failure = self.pool.failure(&e, &format!("locking scope root `{root}`"));
                if failure.kind == crate::error::FailureKind::LockTimeout {
                    failure.message = format!(
                        "the lock of scope root `{root}` is busy: another writer held it for more than {} \
                         (lockTimeout); try again",
                        self.settings.lock_timeout
                    );
                }
                failure
            })?;
        }
        Ok(())
    }

    /// Takes the audit log's advisory lock in the transaction.
    pub(crate) fn lock_audit(&self, tx: &mut Cached<'_, Tx>) -> Result<(), Failure> {
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&advisory_key(AUDIT_LOCK, "")]).map_err(|e| {
            let mut failure = self.pool.failure(&e, "locking the audit log");
            if failure.kind == crate::error::FailureKind::LockTimeout {
                failure.message = format!(
                    "the audit log lock is busy: another writer held it for more than {} (lockTimeout)",
                    self.settings.lock_timeout
                );
            }
            failure
        })?;
        Ok(())
    }
}

/// Parameters for a statement built at run time, kept alive while it runs.
#[derive(Default)]
pub(crate) struct Built {
    pub(crate) sql: String,
    values: Vec<Box<dyn ToSql + Sync>>,
}

impl Built {
    /// Adds a parameter; returns its placeholder (`$n`).
    pub(crate) fn param(&mut self, value: impl ToSql + Sync + 'static) -> String {
        self.values.push(Box::new(value));
        format!("${}", self.values.len())
    }

    /// The parameters, as the client takes them.
    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values.iter().map(|value| &**value as &(dyn ToSql + Sync)).collect()
    }
}
