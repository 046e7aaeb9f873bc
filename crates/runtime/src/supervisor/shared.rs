//! State shared by the readers, the stdin writer, the handles and the watching task: the
//! child's session on its policy cell ([`Policy`]), the counters, and the time the output
//! waited for the caller.
//!
//! Every call into the policy is made under this state's lock, then the cell's: the order is
//! always this one (the cell delivers events outside its lock, into channels only).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use watchdog_core::facts::Activity;
use watchdog_core::{classify, rate_limit::RateLimitMonitor, Class, LineView, RunRecord};

use super::lines::LineMeta;
use super::policy::Policy;
use super::report::LineCounts;
use crate::clock;
use crate::watchdog::InputMarker;

/// State shared by the readers, the stdin writer, the handles and the watching task.
pub(crate) struct Shared {
    state: Mutex<State>,
    /// The stdout reader's marker ([`Policy::input`]), outside the lock: the reader's waker
    /// uses it.
    input: Option<InputMarker>,
    /// How far the run is ([`RunPhase`]), for a caller that cannot take the output for now.
    phase: tokio::sync::watch::Sender<RunPhase>,
}

/// How far a supervised child's run is: what a caller that cannot take the child's output
/// for now (its own reader stopped) still needs to know, without reading that output first
/// ([`SupervisorHandle::phase`](super::SupervisorHandle::phase)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunPhase {
    /// The child runs.
    Running,
    /// The kill ladder runs (a kill was decided or asked for): the run ends within the
    /// ladder's graces.
    Stopping,
    /// The child exited by itself.
    Exited,
}

pub(crate) struct State {
    /// The session, until it ended (`None` without a policy).
    policy: Option<Policy>,
    pub(crate) counts: LineCounts,
    pub(crate) stdout_lines: u64,
    pub(crate) stderr_lines: u64,
    /// Calls of the stdout hook that panicked.
    pub(crate) hook_panics: u64,
    /// An over-long stdout line is being read (a piece that continues was seen).
    in_long: bool,
    /// Readers waiting for the caller to take output (a slow reader downstream).
    blocked_readers: u32,
    /// Since when the output is blocked (while `blocked_readers > 0`).
    blocked_since: Instant,
    /// Time the output was blocked, in all.
    pub(crate) blocked_total: Duration,
}

impl Shared {
    /// Shared state for a child with this policy (`None`: supervise only).
    pub(crate) fn new(policy: Option<Policy>) -> Self {
        Shared {
            input: policy.as_ref().map(|p| p.input().clone()),
            phase: tokio::sync::watch::Sender::new(RunPhase::Running),
            state: Mutex::new(State {
                policy,
                counts: LineCounts::default(),
                stdout_lines: 0,
                stderr_lines: 0,
                hook_panics: 0,
                in_long: false,
                blocked_readers: 0,
                blocked_since: clock::now(),
                blocked_total: Duration::ZERO,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's phase from now on (the first end it reaches stays).
    pub(crate) fn set_phase(&self, phase: RunPhase) {
        self.phase.send_if_modified(|p| {
            let changed = *p == RunPhase::Running && phase != RunPhase::Running;
            if changed {
                *p = phase;
            }
            changed
        });
    }

    /// A receiver of the run's phase.
    pub(crate) fn phase(&self) -> tokio::sync::watch::Receiver<RunPhase> {
        self.phase.subscribe()
    }

    /// How the stdout reader tells the policy it may hold unread lines (`None` without one).
    pub(crate) fn input(&self) -> Option<&InputMarker> {
        self.input.as_ref()
    }

    /// Feed stdout lines that were read together, under one lock and one clock reading
    /// (`now`): fills in each line's class and flags. `views` holds each line's view (`None`
    /// for a piece or a line that did not parse), parsed before the lock was taken. The events
    /// they cause reach the output before this returns. Returns the index in stdout of the
    /// first line and the number of over-long lines that began among them.
    pub(crate) fn observe_stdout(
        &self,
        now: Instant,
        lines: &mut [LineMeta],
        views: &[Option<LineView<'_>>],
    ) -> (u64, usize) {
        let mut st = self.lock();
        let st = &mut *st;
        // Waited: a line read late (the host was stopped or busy) counts before the deadlines
        // that came due meanwhile, as if read in time. A piece (not parsed, however huge) or an
        // unparseable line (an empty one too) is a keep-alive. One call into the policy for
        // the lines read together: one lock of its cell, one delivery of their events.
        match &st.policy {
            Some(p) => p.with(|reg, id, _| {
                for (m, view) in lines.iter_mut().zip(views) {
                    m.class = reg.observe_waited(now, id, view.as_ref());
                }
            }),
            None => {
                for (m, view) in lines.iter_mut().zip(views) {
                    m.class = view.as_ref().map_or(Class::UNPARSEABLE, classify);
                }
            }
        }
        let first = st.stdout_lines;
        let mut overlong = 0;
        for (m, view) in lines.iter_mut().zip(views) {
            st.stdout_lines += 1;
            if m.piece {
                if m.continues && !st.in_long {
                    overlong += 1;
                }
                st.in_long = m.continues;
            }
            if let Some(view) = view {
                m.top_level = view.parent_tool_use_id().is_none();
            }
            // An over-long line is counted once, as over-long, not once per piece.
            if !m.piece {
                st.counts.add(m.class.kind);
            }
        }
        for _ in 0..overlong {
            st.counts.add_overlong();
        }
        (first, overlong)
    }

    /// Run `f` on the policy at the call's instant; `None` without one (or once it ended).
    fn with<R>(
        &self,
        f: impl FnOnce(&mut watchdog_core::Registry, watchdog_core::SessionId, Instant) -> R,
    ) -> Option<R> {
        self.lock().policy.as_ref().map(|p| p.with(f))
    }

    /// Count calls of the stdout hook that panicked.
    pub(crate) fn hook_panicked(&self, n: u64) {
        self.lock().hook_panics += n;
    }

    pub(crate) fn observe_stderr(&self) {
        self.lock().stderr_lines += 1;
    }

    /// Report a line written to the child's stdin.
    pub(crate) fn observe_input(&self, bytes: &[u8]) {
        let Ok(view) = LineView::parse(bytes) else {
            return;
        };
        self.with(|reg, id, now| reg.observe_input(now, id, &view));
    }

    /// Report that the child's stdin was closed (the host's input ended).
    pub(crate) fn input_closed(&self) {
        self.with(|reg, id, now| reg.input_closed(now, id));
    }

    /// The current activity of the session's tally, if it keeps one (for a status display:
    /// only the activity is copied, not the tally).
    pub(crate) fn activity(&self) -> Option<Activity> {
        self.with(|reg, id, _| reg.tally(id).map(|t| t.activity().clone()))
            .flatten()
    }

    /// A copy of the policy's rate-limit readings (for a status display).
    pub(crate) fn rate_limits(&self) -> Option<RateLimitMonitor> {
        self.with(|reg, _, _| reg.rate_limits().clone())
    }

    pub(crate) fn set_utilization(&self, utilization: Option<f64>) {
        self.with(|reg, _, now| reg.set_utilization(now, utilization));
    }

    /// The child is being stopped on request (not by a deadline): no deadline of its policy
    /// falls due from now on ([`Registry::stop_clocks`](watchdog_core::Registry::stop_clocks)).
    pub(crate) fn stop_clocks(&self) {
        self.with(|reg, id, now| reg.stop_clocks(now, id));
    }

    /// End the session: the policy's record of it ([`Registry::finish`]; `None` without a
    /// policy); the events the end causes reach the output before this returns. The session
    /// then leaves its cell (a shared watchdog no longer counts it).
    ///
    /// [`Registry::finish`]: watchdog_core::Registry::finish
    pub(crate) fn end(&self) -> Option<RunRecord> {
        let mut st = self.lock();
        let record = st
            .policy
            .as_ref()
            .and_then(|p| p.with(|reg, id, now| reg.finish(now, id)));
        st.policy = None;
        record
    }

    /// What the policy wants sampled of the child's process tree now (`None`: nothing, or
    /// no policy).
    pub(crate) fn tree_want(&self) -> Option<watchdog_core::TreeWant> {
        self.with(|reg, id, _| reg.tree_want(id)).flatten()
    }

    /// A sample of the child's process tree, read at `at`, for the policy's rules.
    pub(crate) fn observe_tree(&self, at: Instant, sample: &watchdog_core::evidence::TreeSample) {
        self.with(|reg, id, _| reg.observe_tree(at, id, sample));
    }

    /// A reader has to wait for the caller to take output: from `now` on, the idle and
    /// no-progress clocks stand still (the child waits on its pipe because of the host).
    pub(crate) fn output_blocked(&self, now: Instant) {
        let mut st = self.lock();
        st.blocked_readers += 1;
        if st.blocked_readers == 1 {
            st.blocked_since = now;
            if let Some(p) = &st.policy {
                p.with(|reg, id, _| reg.output_blocked(now, id, true));
            }
        }
    }

    /// A reader that waited got room at `now`.
    pub(crate) fn output_unblocked(&self, now: Instant) {
        let mut st = self.lock();
        if st.blocked_readers == 0 {
            return;
        }
        st.blocked_readers -= 1;
        if st.blocked_readers == 0 {
            let blocked = now.saturating_duration_since(st.blocked_since);
            st.blocked_total += blocked;
            if let Some(p) = &st.policy {
                p.with(|reg, id, _| reg.output_blocked(now, id, false));
            }
        }
    }
}
