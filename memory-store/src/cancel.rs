//! [`Cancel`]: how a caller that gave up on a call tells the store to stop reading.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use memory_entry::{StorageError, StorageErrorKind, StoreError};

/// A flag the caller of a listing raises when it no longer wants the answer (an MCP `notifications/cancelled`,
/// the end of the server's input, a closed connection). A store checks it before each file or row it reads
/// ([`Listing::check_cancelled`](crate::Listing::check_cancelled)) and, once it is raised, stops with
/// [`Cancel::error`]: nothing more is read, and the service writes nothing more.
///
/// Clones share the flag: the caller keeps one and hands the other to the call, which may run on another thread.
/// [`Cancel::never`] (the default) is a flag nobody can raise; it costs nothing to check.
///
/// ```
/// use memory_store::Cancel;
///
/// let cancel = Cancel::new();
/// let call = cancel.clone();
/// assert!(call.check().is_ok());
/// cancel.cancel();
/// assert!(call.check().is_err());
/// assert_eq!(call.check().unwrap_err().to_string(), Cancel::error().to_string());
/// assert!(Cancel::never().check().is_ok());
/// ```
#[derive(Clone, Default)]
pub struct Cancel(Option<Arc<Flag>>);

struct Flag {
    raised: AtomicBool,
    /// Checks left before the flag raises itself; `u64::MAX` for never (see [`Cancel::after_checks`]).
    left: AtomicU64,
}

impl Cancel {
    /// A flag that is not raised yet.
    pub fn new() -> Cancel {
        Cancel(Some(Arc::new(Flag { raised: AtomicBool::new(false), left: AtomicU64::new(u64::MAX) })))
    }

    /// A flag nobody can raise: for calls whose caller waits for the answer whatever it costs.
    pub fn never() -> Cancel {
        Cancel(None)
    }

    /// A flag that raises itself at its `checks + 1`-th check: a store's own tests use it to prove that a listing
    /// checks before each file or row and stops at the next one.
    #[cfg(feature = "testkit")]
    pub fn after_checks(checks: u64) -> Cancel {
        Cancel(Some(Arc::new(Flag { raised: AtomicBool::new(false), left: AtomicU64::new(checks) })))
    }

    /// Raises the flag: every clone sees it at its next check.
    pub fn cancel(&self) {
        if let Some(flag) = &self.0 {
            flag.raised.store(true, Ordering::Release);
        }
    }

    /// Whether the flag is raised.
    pub(crate) fn is_cancelled(&self) -> bool {
        let Some(flag) = &self.0 else { return false };
        if flag.raised.load(Ordering::Acquire) {
            return true;
        }
        if flag.left.load(Ordering::Relaxed) == u64::MAX {
            return false;
        }
        // A flag counting down (tests only): this check spends one; the one after the last raises it.
        let spent = flag.left.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |left| left.checked_sub(1));
        if spent.is_err() {
            flag.raised.store(true, Ordering::Release);
            return true;
        }
        false
    }

    /// `Ok` while the flag is down; once it is raised, [`Cancel::error`].
    ///
    /// # Errors
    ///
    /// [`Cancel::error`] when the flag is raised.
    pub fn check(&self) -> Result<(), StoreError> {
        if self.is_cancelled() { Err(Cancel::error()) } else { Ok(()) }
    }

    /// The error of a call stopped because its caller gave up: a [`StoreError::Storage`] of kind
    /// [`StorageErrorKind::Cancelled`].
    pub fn error() -> StoreError {
        StoreError::Storage(StorageError::about(
            StorageErrorKind::Cancelled,
            None,
            "the call was cancelled by its caller; it stopped reading and wrote nothing more",
        ))
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Cancel::never()"),
            Some(flag) => {
                f.debug_struct("Cancel").field("raised", &flag.raised.load(Ordering::Relaxed)).finish()
            }
        }
    }
}

/// Two flags are equal when they are the same flag (or both [`Cancel::never`]), so requests that carry one still
/// compare by what they ask.
impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Cancel {}
