//! The driver: one timer task for every in-process session, callbacks, cancellation.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, Notify};
use tokio_util::sync::{CancellationToken, DropGuard};
use watchdog_core::{
    Event, ExtendReason, Kill, Limits, Registry, SessionConfig, SessionId, StallClock,
};

use crate::clock;
use crate::session::Session;

type KillFn = dyn Fn(&Kill) + Send + Sync;
type ExtendFn = dyn Fn(SessionId, ExtendReason) + Send + Sync;
type StallFn = dyn Fn(SessionId, StallClock, Duration) + Send + Sync;
type ErrorFn = dyn Fn(&CallbackError) + Send + Sync;

/// A callback panicked; reported through [`WatchdogConfig::on_error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("watchdog callback {callback} panicked for session {}: {message}", session.0)]
pub struct CallbackError {
    /// `on_kill`, `on_extend` or `on_stalling`.
    pub callback: &'static str,
    /// The session the event was about.
    pub session: SessionId,
    /// The panic message, when it was a string.
    pub message: String,
}

/// The policy limits and the callbacks of a [`Watchdog`].
///
/// Callbacks run on the thread that produced the event (usually the timer task), without the
/// watchdog's lock held; keep them short. A panicking callback is caught and reported to
/// `on_error`; it never stops the timer or skips a cancellation.
#[derive(Clone, Default)]
pub struct WatchdogConfig {
    limits: Limits,
    on_kill: Option<Arc<KillFn>>,
    on_extend: Option<Arc<ExtendFn>>,
    on_stalling: Option<Arc<StallFn>>,
    on_error: Option<Arc<ErrorFn>>,
}

impl std::fmt::Debug for WatchdogConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchdogConfig")
            .field("limits", &self.limits)
            .field("on_kill", &self.on_kill.is_some())
            .field("on_extend", &self.on_extend.is_some())
            .field("on_stalling", &self.on_stalling.is_some())
            .field("on_error", &self.on_error.is_some())
            .finish()
    }
}

impl WatchdogConfig {
    /// Sessions use `limits` unless their [`SessionConfig`] overrides them.
    pub fn new(limits: Limits) -> Self {
        WatchdogConfig {
            limits,
            ..Default::default()
        }
    }
    /// Called when a session is killed: after the kill is recorded, before its token is
    /// cancelled.
    pub fn on_kill(mut self, f: impl Fn(&Kill) + Send + Sync + 'static) -> Self {
        self.on_kill = Some(Arc::new(f));
        self
    }
    /// Called when a session's idle patience is extended.
    pub fn on_extend(
        mut self,
        f: impl Fn(SessionId, ExtendReason) + Send + Sync + 'static,
    ) -> Self {
        self.on_extend = Some(Arc::new(f));
        self
    }
    /// Called when a session's clock passes the warning fraction (time left given).
    pub fn on_stalling(
        mut self,
        f: impl Fn(SessionId, StallClock, Duration) + Send + Sync + 'static,
    ) -> Self {
        self.on_stalling = Some(Arc::new(f));
        self
    }
    /// Called when another callback panicked.
    pub fn on_error(mut self, f: impl Fn(&CallbackError) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

/// One registered session's runtime side.
pub(crate) struct Slot {
    pub(crate) token: CancellationToken,
    pub(crate) kill: OnceLock<Kill>,
    pub(crate) events: broadcast::Sender<Event>,
}

pub(crate) struct State {
    pub(crate) reg: Registry,
    pub(crate) slots: HashMap<SessionId, Arc<Slot>>,
    armed: Option<Instant>,
}

pub(crate) struct Inner {
    state: Mutex<State>,
    notify: Notify,
    config: WatchdogConfig,
}

impl Inner {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` on the registry at `now`, then deliver the events it produced (outside the
    /// lock), and wake the timer if the next deadline moved earlier.
    pub(crate) fn op<R>(&self, f: impl FnOnce(&mut State, Instant) -> R) -> R {
        let now = clock::now();
        let (r, batch) = {
            let mut st = self.lock();
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

    /// Callback, then cancellation, then the event to subscribers.
    fn dispatch(&self, ev: Event, slot: Option<Arc<Slot>>) {
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
            Event::Settled { .. } | Event::Ended { .. } => {}
        }
        if let Some(slot) = slot {
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

/// Supervises any number of in-process sessions on one timer task.
///
/// Cloning is cheap; the timer task ends when the last clone is dropped (sessions still
/// alive then keep observing but are no longer killed).
#[derive(Clone)]
pub struct Watchdog {
    inner: Arc<Inner>,
    _alive: Arc<DropGuard>,
}

impl std::fmt::Debug for Watchdog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchdog")
            .field("sessions", &self.len())
            .finish_non_exhaustive()
    }
}

impl Watchdog {
    /// Start the watchdog and its timer task.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (like `tokio::spawn`).
    pub fn new(config: WatchdogConfig) -> Self {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                reg: Registry::new(config.limits.clone()),
                slots: HashMap::new(),
                armed: None,
            }),
            notify: Notify::new(),
            config,
        });
        let shutdown = CancellationToken::new();
        tokio::spawn(timer(inner.clone(), shutdown.clone()));
        Watchdog {
            inner,
            _alive: Arc::new(shutdown.drop_guard()),
        }
    }

    /// Start supervising a session now.
    pub fn register(&self, config: SessionConfig) -> Session {
        let slot = Arc::new(Slot {
            token: CancellationToken::new(),
            kill: OnceLock::new(),
            events: broadcast::channel(64).0,
        });
        let id = self.inner.op(|st, now| {
            let id = st.reg.register(now, config);
            st.slots.insert(id, slot.clone());
            id
        });
        Session::new(id, self.inner.clone(), slot)
    }

    /// The current rate-limit utilization (0–1, highest window), or `None` when unknown.
    pub fn set_utilization(&self, utilization: Option<f64>) {
        self.inner
            .op(|st, now| st.reg.set_utilization(now, utilization));
    }

    /// Number of registered sessions.
    pub fn len(&self) -> usize {
        self.inner.lock().slots.len()
    }

    /// Whether no session is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Sleep until the next deadline (one `Sleep`, reset in place), handle it, repeat.
async fn timer(inner: Arc<Inner>, shutdown: CancellationToken) {
    let sleep = tokio::time::sleep_until(clock::far_future());
    tokio::pin!(sleep);
    loop {
        let deadline = {
            let mut st = inner.lock();
            st.armed = st.reg.poll_timeout();
            st.armed
        };
        if let Some(d) = deadline {
            sleep.as_mut().reset(clock::to_tokio(d));
        }
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = inner.notify.notified() => {}
            () = &mut sleep, if deadline.is_some() => {
                inner.op(|st, now| st.reg.handle_timeout(now));
            }
        }
    }
}
