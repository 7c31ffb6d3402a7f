//! Group commit: concurrent appends to one sink share one lock, one write and one sync.

use std::collections::HashMap;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::{AuditError, AuditEvent, AuditRecord};

/// What the leader of a group returns: one result per event it [took](Batch::take), in order, or one error that
/// fails every event of the group.
pub type GroupOutcome = Result<Vec<Result<AuditRecord, AuditError>>, AuditError>;

/// A queue through which concurrent appends to one sink are committed together (group commit), without a thread of
/// its own.
///
/// Each caller of [`submit`](GroupCommit::submit) queues its event. If no append is under way, the caller becomes
/// the group's leader: it runs its `commit` closure, which takes the sink's lock, then [takes](Batch::take) every
/// event queued by then (its own and those of callers that arrived meanwhile), appends them all at once and makes
/// them durable, and returns one result per event. Every caller of the group, the leader included, returns only
/// once `commit` has returned, with its own result: a record is acknowledged only after it is durable, and a
/// failure of the group (an error from `commit`) fails every caller of the group. Callers that arrive while a group
/// is being committed wait, and the first of them leads the next group.
///
/// Events are taken in the order they were queued, so one caller's records keep its order.
#[derive(Debug, Default)]
pub struct GroupCommit {
    state: Mutex<State>,
    settled: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Tickets and events waiting for a leader.
    queue: Vec<(u64, AuditEvent)>,
    /// Whether a leader is committing a group.
    leading: bool,
    next_ticket: u64,
    /// Results not yet picked up by their callers.
    done: HashMap<u64, Result<AuditRecord, AuditError>>,
}

impl GroupCommit {
    /// An empty queue.
    pub fn new() -> GroupCommit {
        GroupCommit::default()
    }

    /// How many events wait for a leader.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change to the state is a push, a removal or a flag: a panic cannot leave it half-updated.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `event` as part of a group and returns its record once the group is durable; `commit` runs only if
    /// this caller leads the group (see [`GroupCommit`]).
    ///
    /// # Errors
    ///
    /// This event's error from `commit`, or the group's error (every caller of the group gets a copy of it).
    pub fn submit(
        &self,
        event: &AuditEvent,
        commit: impl FnOnce(&mut Batch<'_>) -> GroupOutcome,
    ) -> Result<AuditRecord, AuditError> {
        let ticket = {
            let mut state = self.lock();
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            state.queue.push((ticket, event.clone()));
            loop {
                if let Some(result) = state.done.remove(&ticket) {
                    return result;
                }
                if !state.leading {
                    state.leading = true;
                    break;
                }
                state = self.settled.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            ticket
        };
        let mut batch = Batch { group: self, tickets: Vec::new(), settled: false };
        let outcome = commit(&mut batch);
        batch.settle(outcome);
        drop(batch);
        let mut state = self.lock();
        match state.done.remove(&ticket) {
            Some(result) => result,
            // `settle` takes the leader's own event when `commit` took none, so this cannot happen.
            None => Err(AuditError::Io {
                path: Default::default(),
                op: "append to",
                source: io::Error::other("the group commit lost a record"),
            }),
        }
    }
}

/// The events of one group, as its leader takes them.
#[derive(Debug)]
pub struct Batch<'a> {
    group: &'a GroupCommit,
    tickets: Vec<u64>,
    settled: bool,
}

impl Batch<'_> {
    /// Takes every event queued so far (the leader's own included), in the order they were queued. Call it once
    /// the sink's lock is held, so that callers arriving while it was awaited join this group.
    pub fn take(&mut self) -> Vec<AuditEvent> {
        let queued = std::mem::take(&mut self.group.lock().queue);
        let mut events = Vec::with_capacity(queued.len());
        for (ticket, event) in queued {
            self.tickets.push(ticket);
            events.push(event);
        }
        events
    }

    /// Hands each caller of the group its result and lets the next group start.
    fn settle(&mut self, outcome: GroupOutcome) {
        if self.tickets.is_empty() {
            // `commit` failed before it took the group: the group is everyone queued now.
            self.take();
        }
        let results: Vec<Result<AuditRecord, AuditError>> = match outcome {
            Ok(results) if results.len() == self.tickets.len() => results,
            Ok(results) => {
                let error = AuditError::Io {
                    path: Default::default(),
                    op: "append to",
                    source: io::Error::other(format!(
                        "the sink returned {} results for {} records",
                        results.len(),
                        self.tickets.len()
                    )),
                };
                self.tickets.iter().map(|_| Err(error.duplicate())).collect()
            }
            Err(error) => {
                let mut results: Vec<_> =
                    self.tickets.iter().skip(1).map(|_| Err(error.duplicate())).collect();
                results.insert(0, Err(error));
                results
            }
        };
        let mut state = self.group.lock();
        for (ticket, result) in self.tickets.drain(..).zip(results) {
            state.done.insert(ticket, result);
        }
        state.leading = false;
        self.settled = true;
        drop(state);
        self.group.settled.notify_all();
    }
}

impl Drop for Batch<'_> {
    /// A leader whose `commit` panicked still fails its group and lets the next one start.
    fn drop(&mut self) {
        if !self.settled {
            self.settle(Err(AuditError::Io {
                path: Default::default(),
                op: "append to",
                source: io::Error::other("the append was interrupted"),
            }));
        }
    }
}

/// How many records a sink has made durable and with how many syncs (or commits): under concurrent appends, fewer
/// syncs than records is group commit at work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppendStats {
    /// Records appended and made durable.
    pub records: u64,
    /// Syncs (for a file, `fdatasync` calls; for a database, commits) that made them durable.
    pub syncs: u64,
}
