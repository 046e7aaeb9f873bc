//! [`Watchdog`]: one timer task for every session, in-process or supervised.

mod cell;
mod config;
mod session;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, Notify};
use tokio_util::sync::{CancellationToken, DropGuard};
use watchdog_core::{Registry, SessionConfig};

pub(crate) use cell::{Inner, InputMarker, Sink, Slot};
pub use config::{CallbackError, WatchdogConfig};

use crate::clock;
use crate::metrics::Metrics;
use cell::State;
pub use session::Session;

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
        Watchdog::anchored(config, clock::now(), clock::wall_ms())
    }

    /// [`Watchdog::new`], its registry's wall clock anchored at `wall_ms` at `at` (a
    /// supervisor's private cell: the instant and wall time its capture records).
    pub(crate) fn anchored(config: WatchdogConfig, at: std::time::Instant, wall_ms: u64) -> Self {
        let mut reg = Registry::new(config.limits.clone());
        // Rate-limit windows reset at wall times: anchor the wall clock to the one clock.
        reg.set_wall_clock(at, wall_ms);
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                reg,
                slots: HashMap::new(),
                armed: None,
            }),
            notify: Notify::new(),
            config,
            counters: Default::default(),
            input: Mutex::new(Vec::new()),
            input_queued: AtomicBool::new(false),
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
        self.register_with(config, None, None)
    }

    /// Register a supervised child's session: its clocks start at `at` (its spawn; an instant
    /// the registry has passed already counts as the registry's now), and every event of it
    /// also goes to `sink`, in order.
    pub(crate) fn register_supervised(
        &self,
        config: SessionConfig,
        at: std::time::Instant,
        sink: Sink,
    ) -> Session {
        self.register_with(config, Some(at), Some(sink))
    }

    fn register_with(
        &self,
        config: SessionConfig,
        at: Option<std::time::Instant>,
        sink: Option<Sink>,
    ) -> Session {
        let slot = Arc::new(Slot {
            token: CancellationToken::new(),
            kill: OnceLock::new(),
            events: broadcast::channel(64).0,
            sink,
        });
        let id = self.inner.op(|st, now| {
            let id = st.reg.register(at.unwrap_or(now), config);
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

    /// What this watchdog counted since it started, and its gauges now: a cheap snapshot
    /// (one brief lock, a few atomic loads), plain data to read or render for Prometheus.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agent_sdk_watchdog::{Watchdog, WatchdogConfig};
    /// use watchdog_core::{KillKind, Limits, SessionConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let limits = Limits::default().with_startup(Duration::from_secs(30)).unwrap();
    /// let watchdog = Watchdog::new(WatchdogConfig::new(limits));
    /// let session = watchdog.register(SessionConfig::default());
    /// session.killed().await; // no line within 30 s (virtual time here)
    /// session.end();
    /// drop(session);
    ///
    /// let metrics = watchdog.metrics();
    /// assert_eq!(metrics.kills(KillKind::Startup), 1);
    /// assert_eq!(metrics.ended("killed"), 1);
    /// assert_eq!(metrics.sessions(), 0);
    /// let text = metrics.render_prometheus();
    /// assert!(text.contains(
    ///     r#"agent_watchdog_kill_count_total{kill_kind="startup",agent_watchdog_source="run"} 1"#
    /// ));
    /// # }
    /// ```
    pub fn metrics(&self) -> Metrics {
        let (sessions, utilization) = {
            let st = self.inner.lock();
            (st.slots.len(), st.reg.utilization())
        };
        self.inner.counters.snapshot(sessions, utilization)
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

/// A timer that wakes this much past its deadline was held back: the host process was stopped
/// (Ctrl-Z, a debugger, a frozen cgroup) or starved. Before its deadline acts, the runtime's I/O
/// gets a turn ([`IO_TURN`]). Late on both clocks: tokio's (past the deadline) and the real one
/// (longer than it planned to sleep), so a paused test clock that jumps past a deadline, or a
/// test that is slow in real time while its clock stands, is not "late". Well above the
/// lateness of a loaded host (p99 about 2 ms for 2,000 sessions on 2 busy cores, BENCHMARKS.md
/// "kill latency"): a turn for every slightly late timer made that p99 4.6 ms.
const LATE_WAKE: Duration = Duration::from_millis(50);

/// The wait that gives the runtime's I/O a turn. After a stop (Ctrl-Z, then `fg`) the first
/// poll of the I/O driver fails (`epoll_wait` returns `EINTR` after `SIGCONT`) and the
/// timers of that turn run first: without a second turn a reader could not mark the lines
/// that waited unread ([`Registry::input_pending`](watchdog_core::Registry::input_pending))
/// before an overdue deadline acts.
const IO_TURN: Duration = Duration::from_millis(1);

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
        // The sleep as planned, and when it began on the real clock.
        let planned = deadline.map(|d| d.saturating_duration_since(clock::now()));
        let slept_since = std::time::Instant::now();
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = inner.notify.notified() => {}
            () = &mut sleep, if deadline.is_some() => {
                let past_deadline = deadline.map_or(Duration::ZERO, |d| clock::now().saturating_duration_since(d));
                let overslept = slept_since.elapsed().saturating_sub(planned.unwrap_or_default());
                if past_deadline >= LATE_WAKE && overslept >= LATE_WAKE {
                    tokio::time::sleep(IO_TURN).await;
                }
                inner.op(|st, now| st.reg.handle_timeout(now));
            }
        }
    }
}
