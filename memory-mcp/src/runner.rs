//! One tool call on tokio's blocking pool, the way both transports run it: the service blocks on files, rows and
//! locks, so it never runs on the executor's threads, and a call whose caller gives up stops at the store's next
//! file or row.

use std::future::Future;

use alp_memory::MemoryError;
use alp_memory::memory_store::Cancel;
use rmcp::model::CallToolResult;

use crate::tools::error_result;

/// Runs `work` on the blocking pool with the call's cancel flag, raised when `abandoned` completes (the transport's
/// sign that the caller gave up: a `notifications/cancelled`, the end of the input, a closed connection) or when
/// this future is dropped before the call ends. A call that panics or cannot be started is a `STORAGE_ERROR`
/// result saying it did not complete.
pub(crate) async fn run(
    abandoned: impl Future<Output = ()> + Send + 'static,
    work: impl FnOnce(&Cancel) -> CallToolResult + Send + 'static,
) -> CallToolResult {
    let cancel = Cancel::new();
    let guard = RaiseOnDrop(Some(cancel.clone()));
    let raise = cancel.clone();
    let watcher = tokio::spawn(async move {
        abandoned.await;
        raise.cancel();
    });
    let call = tokio::task::spawn_blocking(move || work(&cancel)).await;
    watcher.abort();
    guard.disarm();
    call.unwrap_or_else(|e| {
        error_result(
            &MemoryError::Storage {
                id: None,
                storage_kind: None,
                message: format!("the tool call did not complete: {e}"),
            },
            None,
        )
    })
}

/// Raises its flag when dropped while armed: the future that holds it was dropped before its call ended.
struct RaiseOnDrop(Option<Cancel>);

impl RaiseOnDrop {
    /// The call ended: nothing to raise.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
    }
}
