//! Group commit: concurrent appends to one sink share one lock, one write and one sync.

use std::collections::HashMap;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

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
///
/// A waiting caller sleeps until it is woken for itself: when its group settles, or when it is the first one
/// queued as a group settles (to lead the next). Only those, never every waiter: with many callers, waking them all
/// at every group would cost more than the appends.
///
/// A leader that follows a group of two or more events, while events are still arriving, waits a little before
/// it takes its group, so that more callers join it (as PostgreSQL's `commit_delay` does): at most as long as the
/// previous group's commit took (and never more than 2 ms), no longer once the queue holds twice the previous group,
/// and not at all, or no longer, once no event has arrived for half that time. A caller alone (whose previous group
/// held one event) never waits, and neither does a leader whose callers are all queued already: the wait only turns
/// a stream of arrivals, which would each start a sync of their own, into fewer, larger groups.
#[derive(Debug, Default)]
pub struct GroupCommit {
    state: Mutex<State>,
    /// Signalled on each arrival while a leader is gathering its group.
    arrived: Condvar,
    /// The longest a leader waits for its group to grow, when not [`MAX_GATHER`] (a test's).
    gather_cap: Option<Duration>,
}

#[derive(Debug, Default)]
struct State {
    /// Events waiting for a leader, with their tickets and the threads to wake for them.
    queue: Vec<Queued>,
    /// Whether a leader is committing a group.
    leading: bool,
    next_ticket: u64,
    /// Results not yet picked up by their callers.
    done: HashMap<u64, Result<AuditRecord, AuditError>>,
    /// How many events the previous group held, and how long its commit took (from its take to its settling).
    previous: Option<(usize, Duration)>,
    /// When the last event was queued.
    last_arrival: Option<Instant>,
    /// Whether a leader waits for arrivals ([`GroupCommit::arrived`] is signalled only then).
    gathering: bool,
}

/// An event waiting for a leader.
#[derive(Debug)]
struct Queued {
    ticket: u64,
    event: AuditEvent,
    /// The caller's thread, woken when the event's group settles (or, first in the queue, to lead the next).
    caller: Thread,
}

/// The longest a leader waits for its group to grow.
const MAX_GATHER: Duration = Duration::from_millis(2);

/// How much longer a leader waits for more events before it takes its group, `None` when it takes it now.
///
/// `queued` events wait; the previous group held `previous` events and its commit took `commit`; the leader has
/// waited `waited` so far, and the last event arrived `quiet` ago. The leader waits only after a group of two or
/// more; at most `commit` (capped at `cap`: [`MAX_GATHER`], but in tests) in all; only until the queue holds twice
/// the previous group; and only while events keep arriving: not once none has come for half of the wait it may make.
pub(crate) fn gathering(
    queued: usize,
    previous: Option<(usize, Duration)>,
    waited: Duration,
    quiet: Duration,
    cap: Duration,
) -> Option<Duration> {
    let (size, commit) = previous?;
    if size < 2 || queued >= size.saturating_mul(2) {
        return None;
    }
    let patience = commit.min(cap);
    let gap = patience / 2;
    if waited >= patience || quiet >= gap {
        return None;
    }
    Some((patience - waited).min(gap - quiet))
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
            state.queue.push(Queued { ticket, event: event.clone(), caller: std::thread::current() });
            state.last_arrival = Some(Instant::now());
            if state.gathering {
                self.arrived.notify_one();
            }
            loop {
                if let Some(result) = state.done.remove(&ticket) {
                    return result;
                }
                if !state.leading {
                    state.leading = true;
                    break;
                }
                // Woken by the settling of this event's group, or to lead the next one; a wake-up that comes
                // between this unlock and the park is kept (`unpark` before `park` makes it return at once), and
                // one that comes for nothing only loops once more.
                drop(state);
                std::thread::park();
                state = self.lock();
            }
            ticket
        };
        let mut batch = Batch { group: self, tickets: Vec::new(), settled: false, taken_at: None };
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
    /// The tickets taken, with their callers' threads.
    tickets: Vec<(u64, Thread)>,
    settled: bool,
    /// When the leader took the group: the start of its commit.
    taken_at: Option<Instant>,
}

impl Batch<'_> {
    /// Takes every event queued so far (the leader's own included), in the order they were queued. Call it once
    /// the sink's lock is held, so that callers arriving while it was awaited join this group.
    ///
    /// While events keep arriving after a group of two or more, it first waits a little for more of them to join
    /// (see [`GroupCommit`]).
    pub fn take(&mut self) -> Vec<AuditEvent> {
        let mut state = self.group.lock();
        let started = Instant::now();
        loop {
            let now = Instant::now();
            let quiet = state.last_arrival.map_or(Duration::MAX, |at| now.saturating_duration_since(at));
            let cap = self.group.gather_cap.unwrap_or(MAX_GATHER);
            let Some(wait) = gathering(state.queue.len(), state.previous, now - started, quiet, cap) else {
                break;
            };
            state.gathering = true;
            state = self.group.arrived.wait_timeout(state, wait).unwrap_or_else(PoisonError::into_inner).0;
        }
        state.gathering = false;
        let queued = std::mem::take(&mut state.queue);
        drop(state);
        self.taken_at = Some(Instant::now());
        let mut events = Vec::with_capacity(queued.len());
        for Queued { ticket, event, caller } in queued {
            self.tickets.push((ticket, caller));
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
        if let Some(taken_at) = self.taken_at {
            state.previous = Some((self.tickets.len(), taken_at.elapsed()));
        }
        let mut wake: Vec<Thread> = Vec::with_capacity(self.tickets.len() + 1);
        for ((ticket, caller), result) in self.tickets.drain(..).zip(results) {
            state.done.insert(ticket, result);
            wake.push(caller);
        }
        state.leading = false;
        // The first caller queued meanwhile leads the next group (unless a newcomer takes the lead first, whose
        // group then holds it).
        if let Some(next) = state.queue.first() {
            wake.push(next.caller.clone());
        }
        self.settled = true;
        drop(state);
        let me = std::thread::current().id();
        for caller in wake {
            // The leader is awake: a token left for it would only make its next wait return at once.
            if caller.id() != me {
                caller.unpark();
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_leader_after_a_lone_event_or_no_group_takes_at_once() {
        assert_eq!(gathering(0, None, Duration::ZERO, Duration::ZERO, MAX_GATHER), None);
        assert_eq!(gathering(1, Some((1, MS)), Duration::ZERO, Duration::ZERO, MAX_GATHER), None);
        assert_eq!(gathering(1, Some((0, MS)), Duration::ZERO, Duration::ZERO, MAX_GATHER), None);
    }

    #[test]
    fn a_leader_after_a_group_waits_while_events_arrive() {
        let prev = Some((4, MS));
        // Just arrived: wait up to half the commit time (the quiet gap), then check again.
        assert_eq!(gathering(3, prev, Duration::ZERO, Duration::ZERO, MAX_GATHER), Some(MS / 2));
        // The gap left bounds the wait.
        assert_eq!(gathering(3, prev, Duration::ZERO, MS / 4, MAX_GATHER), Some(MS / 4));
        // So does the patience left.
        assert_eq!(gathering(3, prev, MS * 9 / 10, Duration::ZERO, MAX_GATHER), Some(MS / 10));
    }

    #[test]
    fn a_leader_stops_waiting_at_twice_the_previous_group_at_its_patience_or_after_a_quiet_gap() {
        let prev = Some((4, MS));
        assert_eq!(
            gathering(8, prev, Duration::ZERO, Duration::ZERO, MAX_GATHER),
            None,
            "twice the previous group"
        );
        assert_eq!(gathering(9, prev, Duration::ZERO, Duration::ZERO, MAX_GATHER), None);
        assert_eq!(
            gathering(3, prev, MS, Duration::ZERO, MAX_GATHER),
            None,
            "waited as long as the previous commit"
        );
        assert_eq!(
            gathering(3, prev, Duration::ZERO, MS / 2, MAX_GATHER),
            None,
            "nothing arrived for half of it"
        );
        assert_eq!(
            gathering(3, prev, Duration::ZERO, Duration::MAX, MAX_GATHER),
            None,
            "nothing ever arrived"
        );
    }

    #[test]
    fn the_wait_is_capped_whatever_the_previous_commit_took() {
        let slow = Some((4, Duration::from_secs(5)));
        assert_eq!(gathering(1, slow, Duration::ZERO, Duration::ZERO, MAX_GATHER), Some(MAX_GATHER / 2));
        assert_eq!(gathering(1, slow, MAX_GATHER, Duration::ZERO, MAX_GATHER), None);
        assert_eq!(
            gathering(1, Some((usize::MAX, MS)), Duration::ZERO, Duration::ZERO, MAX_GATHER),
            Some(MS / 2)
        );
    }

    /// Many callers, each woken only for itself: every one gets the result its own event was given (the commit
    /// answers each event with its own ID), none is lost or answered twice, and groups form.
    #[test]
    fn each_of_many_callers_gets_its_own_result_and_none_is_left_waiting() {
        const CALLERS: usize = 48;
        const EACH: usize = 200;
        let group = GroupCommit::new();
        let groups = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for caller in 0..CALLERS {
                let (group, groups) = (&group, &groups);
                scope.spawn(move || {
                    for n in 0..EACH {
                        let id = format!("{caller}:{n}");
                        let event = AuditEvent {
                            timestamp: time::macros::datetime!(2026-12-02 00:00 UTC),
                            actor: "worker".into(),
                            operation: crate::AuditOperation::Get,
                            door: None,
                            id: id.clone(),
                            outcome: crate::Outcome::Allowed,
                            code: None,
                            grant: None,
                            shown: Vec::new(),
                            via: None,
                        };
                        let result = group.submit(&event, |batch| {
                            groups.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let taken = batch.take();
                            Ok(taken
                                .iter()
                                .map(|event| {
                                    Err(AuditError::Io {
                                        path: Default::default(),
                                        op: "append to",
                                        source: io::Error::other(event.id.clone()),
                                    })
                                })
                                .collect())
                        });
                        match result {
                            Err(AuditError::Io { source, .. }) => assert_eq!(source.to_string(), id),
                            other => panic!("{id}: {other:?}"),
                        }
                    }
                });
            }
        });
        let state = group.lock();
        assert!(state.queue.is_empty() && state.done.is_empty() && !state.leading);
        let groups = groups.into_inner();
        assert!(groups < CALLERS * EACH, "{groups} groups for {} events: none was shared", CALLERS * EACH);
    }

    /// Callers that keep arriving while a leader gathers join its group: with a previous group of two and events
    /// arriving faster than the quiet gap, one commit takes them all.
    #[test]
    fn callers_arriving_while_a_leader_gathers_join_its_group() {
        let group = GroupCommit::new();
        let event = AuditEvent {
            timestamp: time::macros::datetime!(2026-12-02 00:00 UTC),
            actor: "worker".into(),
            operation: crate::AuditOperation::Get,
            door: None,
            id: String::new(),
            outcome: crate::Outcome::Allowed,
            code: None,
            grant: None,
            shown: Vec::new(),
            via: None,
        };
        // A previous group of two whose commit took long, and a cap of a minute: the leader waits for arrivals up
        // to half a minute, far longer than this thread may be kept from running.
        let group = GroupCommit { gather_cap: Some(Duration::from_secs(60)), ..group };
        group.lock().previous = Some((2, Duration::from_secs(60)));
        let sizes = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            let leader = scope.spawn(|| {
                group.submit(&event, |batch| {
                    let taken = batch.take();
                    sizes.lock().unwrap().push(taken.len());
                    Ok(taken
                        .iter()
                        .map(|_| {
                            Err(AuditError::Io {
                                path: Default::default(),
                                op: "append to",
                                source: io::Error::other("not appended"),
                            })
                        })
                        .collect())
                })
            });
            // Once the leader gathers, three more arrive at once, under the lock it waits to take again: it then
            // finds twice the previous group queued and takes them all, however long this thread took to get here.
            loop {
                let mut state = group.lock();
                if state.gathering {
                    for _ in 0..3 {
                        let ticket = state.next_ticket;
                        state.next_ticket += 1;
                        state.queue.push(Queued {
                            ticket,
                            event: event.clone(),
                            caller: std::thread::current(),
                        });
                    }
                    state.last_arrival = Some(Instant::now());
                    group.arrived.notify_one();
                    break;
                }
                drop(state);
                assert!(!leader.is_finished(), "the leader took its group without gathering");
                std::thread::yield_now();
            }
            leader.join().unwrap().unwrap_err();
        });
        assert_eq!(*sizes.lock().unwrap(), vec![4], "the group reached twice the previous one and was taken");
        assert_eq!(group.lock().previous.map(|(size, _)| size), Some(4));
    }
}
