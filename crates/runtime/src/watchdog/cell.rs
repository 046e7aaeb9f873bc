//! The policy cell a [`Watchdog`](super::Watchdog) and its sessions share: the registry under
//! one lock, each session's runtime side (token, kill, event stream, and for a supervised
//! child the sink its supervisor reads), the facts hosts hand it between calls (lines a reader
//! may hold unread), and the delivery of the events every call causes (callbacks, then
//! cancellation, then the supervisor's sink, then subscribers).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;
use watchdog_core::{Event, Kill, Registry, SessionId};

use super::config::{CallbackError, WatchdogConfig};
use crate::clock;
use crate::metrics::Counters;

/// Where a supervised child's events go, in the order the cell delivers them (the supervisor's
/// output and its watching task); called outside the lock.
pub(crate) type Sink = Box<dyn Fn(&Event) + Send + Sync>;

/// One registered session's runtime side.
pub(crate) struct Slot {
    pub(crate) token: CancellationToken,
    pub(crate) kill: OnceLock<Kill>,
    pub(crate) events: broadcast::Sender<Event>,
    /// A supervised child's sink ([`Sink`]).
    pub(crate) sink: Option<Sink>,
}

/// The registry and the sessions' runtime sides, under one lock.
pub(crate) struct State {
    pub(crate) reg: Registry,
    pub(crate) slots: HashMap<SessionId, Arc<Slot>>,
    /// The deadline the timer task sleeps until.
    pub(crate) armed: Option<Instant>,
}

/// The cell: state, the timer's wake-up, and the callbacks.
pub(crate) struct Inner {
    pub(crate) state: Mutex<State>,
    pub(crate) notify: Notify,
    pub(crate) config: WatchdogConfig,
    pub(crate) counters: Counters,
    /// Sessions whose "input pending" fact changed since the last call, each with the flag
    /// that holds the fact now ([`InputMarker`]): applied at the start of the next call, the
    /// timer's included, under the lock.
    pub(crate) input: Mutex<Vec<(SessionId, Arc<AtomicBool>)>>,
    /// `input` holds something: a call looks at the list only then (most calls are of hosts
    /// with no reader at all).
    pub(crate) input_queued: AtomicBool,
}

/// Tells the cell whether the host may hold unread lines of one session
/// ([`Registry::input_pending`](watchdog_core::Registry::input_pending)) without taking the
/// registry's lock: cheap enough for a waker. The cell applies the flag's value as of its next
/// call (the timer's before a deadline acts), so marks in any order end in the flag's state.
#[derive(Clone)]
pub(crate) struct InputMarker {
    pub(crate) inner: Arc<Inner>,
    pub(crate) id: SessionId,
    pub(crate) pending: Arc<AtomicBool>,
}

impl InputMarker {
    /// Set the fact; returns whether it changed (a change is queued for the next call).
    pub(crate) fn set(&self, pending: bool) -> bool {
        let changed = self.pending.swap(pending, Ordering::SeqCst) != pending;
        if changed {
            lock_input(&self.inner).push((self.id, self.pending.clone()));
            self.inner.input_queued.store(true, Ordering::Release);
        }
        changed
    }

    /// Apply what is queued now (a call that does nothing else); the events it causes (a
    /// deadline the lines did not rescue) are delivered.
    pub(crate) fn apply(&self) {
        self.inner.op(|_, _| ());
    }
}

fn lock_input(inner: &Inner) -> MutexGuard<'_, Vec<(SessionId, Arc<AtomicBool>)>> {
    inner.input.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` on the registry at `now` (after the queued host facts), then deliver the events
    /// it produced (outside the lock), and wake the timer if the next deadline moved earlier.
    pub(crate) fn op<R>(&self, f: impl FnOnce(&mut State, Instant) -> R) -> R {
        let now = clock::now();
        let (r, batch) = {
            let mut st = self.lock();
            let changed = match self.input_queued.swap(false, Ordering::Acquire) {
                true => std::mem::take(&mut *lock_input(self)),
                false => Vec::new(),
            };
            for (id, pending) in changed {
                st.reg
                    .input_pending(now, id, pending.load(Ordering::SeqCst));
            }
            let r = f(&mut st, now);
            let mut batch = Vec::new();
            while let Some(ev) = st.reg.poll_event() {
                let slot = st.slots.get(&ev.id()).cloned();
                if let (Event::Killed(k), Some(slot)) = (&ev, &slot) {
                    let _ = slot.kill.set(k.clone());
                }
                batch.push((ev, slot));
            }
            let next = st.reg.poll_timeout();
            if clock::earlier(next, st.armed) {
                st.armed = next;
                self.notify.notify_one();
            }
            (r, batch)
        };
        for (ev, slot) in batch {
            self.dispatch(ev, slot);
        }
        r
    }

    /// Counted, then callback, then cancellation, then the event to subscribers.
    fn dispatch(&self, ev: Event, slot: Option<Arc<Slot>>) {
        self.counters.record(&ev, clock::now);
        let c = &self.config;
        match &ev {
            Event::Killed(k) => {
                if let Some(f) = &c.on_kill {
                    self.guard("on_kill", k.id, || f(k));
                }
                if let Some(slot) = &slot {
                    slot.token.cancel();
                }
            }
            Event::Extended { id, reason } => {
                if let Some(f) = &c.on_extend {
                    self.guard("on_extend", *id, || f(*id, *reason));
                }
            }
            Event::Stalling {
                id,
                clock,
                remaining,
            } => {
                if let Some(f) = &c.on_stalling {
                    self.guard("on_stalling", *id, || f(*id, *clock, *remaining));
                }
            }
            // Settles, ends, and kinds a newer core may add: to subscribers only.
            _ => {}
        }
        if let Some(slot) = slot {
            if let Some(sink) = &slot.sink {
                sink(&ev);
            }
            let _ = slot.events.send(ev);
        }
    }

    fn guard(&self, callback: &'static str, session: SessionId, f: impl FnOnce()) {
        let Err(payload) = catch_unwind(AssertUnwindSafe(f)) else {
            return;
        };
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".into());
        if let Some(on_error) = &self.config.on_error {
            let err = CallbackError {
                callback,
                session,
                message,
            };
            let _ = catch_unwind(AssertUnwindSafe(|| on_error(&err)));
        }
    }
}
