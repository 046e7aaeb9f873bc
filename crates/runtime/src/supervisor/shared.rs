//! State shared by the stdout reader, the stdin writer and the watching task: the policy
//! registry of this one session, the counters, and the wake-up for the watching task.

use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Notify};
use watchdog_core::facts::{Activity, Tally};
use watchdog_core::{
    classify, Class, ClaudeSessionId, Event, LineView, Outcome, RateLimitMonitor, ResultFacts,
};

use super::lines::LineMeta;
use super::policy::Policy;
use super::{Batch, LineCounts, Output};
use crate::clock;

/// What the policy knew of a session when it ended ([`Shared::end`]).
#[derive(Default)]
pub(crate) struct Ended {
    pub(crate) outcome: Option<Outcome>,
    pub(crate) session_id: Option<ClaudeSessionId>,
    pub(crate) result: Option<ResultFacts>,
    pub(crate) tally: Option<Tally>,
    pub(crate) rate_limits: Option<RateLimitMonitor>,
}

/// State shared by the readers, the stdin writer and the watching task.
pub(crate) struct Shared {
    state: Mutex<State>,
    pub(crate) notify: Notify,
    /// The stdout reader read bytes it has not yet fed to the policy.
    pub(crate) reading: AtomicBool,
}

pub(crate) struct State {
    pub(crate) policy: Policy,
    armed: Option<Instant>,
    pub(crate) counts: LineCounts,
    pub(crate) stdout_lines: u64,
    pub(crate) stderr_lines: u64,
    pub(crate) overlong_lines: u64,
    /// Calls of the stdout hook that panicked.
    pub(crate) hook_panics: u64,
    /// An over-long stdout line is being read (a piece that continues was seen).
    in_long: bool,
    /// Readers waiting for the caller to take output (a slow reader downstream).
    blocked_readers: u32,
    /// Since when the output was blocked, up to which the pause was applied.
    blocked_since: Instant,
    /// Time the output was blocked, in all.
    pub(crate) blocked_total: Duration,
}

impl Shared {
    /// Shared state for a child with this policy cell.
    pub(crate) fn new(policy: Policy) -> Self {
        Shared {
            state: Mutex::new(State {
                policy,
                armed: None,
                counts: LineCounts::default(),
                stdout_lines: 0,
                stderr_lines: 0,
                overlong_lines: 0,
                hook_panics: 0,
                in_long: false,
                blocked_readers: 0,
                blocked_since: clock::now(),
                blocked_total: Duration::ZERO,
            }),
            notify: Notify::new(),
            reading: AtomicBool::new(false),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wake the watching task if the next deadline moved earlier.
    fn rearm(&self, st: &mut State) {
        let next = st.policy.poll_timeout();
        if clock::earlier(next, st.armed) {
            st.armed = next;
            self.notify.notify_one();
        }
    }

    /// Feed stdout lines that were read together, under one lock and one clock reading
    /// (`now`): fills in each line's class and flags. `views` holds each line's view (`None`
    /// for a piece or a line that did not parse), parsed before the lock was taken. Appends
    /// the events they caused to `events`; returns the index in stdout of the first line and
    /// the number of over-long lines that began among them.
    pub(crate) fn observe_stdout(
        &self,
        now: Instant,
        lines: &mut [LineMeta],
        views: &[Option<LineView<'_>>],
        events: &mut Vec<Event>,
    ) -> (u64, usize) {
        let mut st = self.lock();
        let st = &mut *st;
        settle_pause(st, now);
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
            m.class = match view {
                Some(view) => {
                    m.top_level = view.parent_tool_use_id().is_none();
                    // Waited: a line read late (the host was stopped or busy) counts before
                    // the deadlines that came due meanwhile, as if read in time.
                    st.policy
                        .with(now, |reg, id, now| reg.observe_waited(now, id, Some(view)))
                        .unwrap_or_else(|| classify(view))
                }
                // A piece (not parsed, however huge) or an unparseable line (an empty one
                // too): a keep-alive.
                None => st
                    .policy
                    .with(now, |reg, id, now| reg.observe_waited(now, id, None))
                    .unwrap_or(Class::UNPARSEABLE),
            };
            // An over-long line is counted once, in `overlong_lines`, not once per piece.
            if !m.piece {
                st.counts.add(m.class.kind);
            }
        }
        st.overlong_lines += overlong as u64;
        events.extend(drain(st));
        self.rearm(st);
        (first, overlong)
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
        let now = clock::now();
        let mut st = self.lock();
        settle_pause(&mut st, now);
        st.policy
            .with(now, |reg, id, now| reg.observe_input(now, id, &view));
        self.rearm(&mut st);
        // The call may have fired what was due: the watching task delivers those events.
        self.notify.notify_one();
    }

    /// Report that the child's stdin was closed (the host's input ended).
    pub(crate) fn input_closed(&self) {
        let now = clock::now();
        let mut st = self.lock();
        settle_pause(&mut st, now);
        st.policy
            .with(now, |reg, id, now| reg.input_closed(now, id));
        self.rearm(&mut st);
        self.notify.notify_one();
    }

    /// The current activity of the session's tally, if it keeps one (for a status display:
    /// only the activity is copied, not the tally).
    pub(crate) fn activity(&self) -> Option<Activity> {
        let now = clock::now();
        let mut st = self.lock();
        st.policy
            .with(now, |reg, id, _| {
                reg.tally(id).map(|t| t.activity().clone())
            })
            .flatten()
    }

    /// A copy of the policy's rate-limit readings (for a status display).
    pub(crate) fn rate_limits(&self) -> Option<RateLimitMonitor> {
        let now = clock::now();
        let mut st = self.lock();
        st.policy.with(now, |reg, _, _| reg.rate_limits().clone())
    }

    /// Events queued by calls made outside the watching task.
    pub(crate) fn events(&self) -> Vec<Event> {
        drain(&mut self.lock())
    }

    /// The next deadline; the watching task sleeps until it.
    pub(crate) fn arm(&self) -> Option<Instant> {
        let mut st = self.lock();
        st.armed = st.policy.poll_timeout();
        st.armed
    }

    pub(crate) fn set_utilization(&self, utilization: Option<f64>) -> Vec<Event> {
        let now = clock::now();
        let mut st = self.lock();
        settle_pause(&mut st, now);
        st.policy
            .with(now, |reg, _, now| reg.set_utilization(now, utilization));
        drain(&mut st)
    }

    pub(crate) fn timeout(&self) -> Vec<Event> {
        let now = clock::now();
        let mut st = self.lock();
        settle_pause(&mut st, now);
        if let Policy::Own(reg, _) = &mut st.policy {
            reg.handle_timeout(now);
        }
        drain(&mut st)
    }

    /// The child is being stopped on request (not by a deadline): no deadline of its policy
    /// falls due from now on ([`Registry::stop_clocks`](watchdog_core::Registry::stop_clocks)).
    pub(crate) fn stop_clocks(&self) -> Vec<Event> {
        let now = clock::now();
        let mut st = self.lock();
        settle_pause(&mut st, now);
        st.policy.with(now, |reg, id, now| reg.stop_clocks(now, id));
        drain(&mut st)
    }

    /// End the session: its outcome and the facts the policy read from its lines (all `None`
    /// without a policy), and the events the end caused.
    pub(crate) fn end(&self) -> (Ended, Vec<Event>) {
        let now = clock::now();
        let mut st = self.lock();
        settle_pause(&mut st, now);
        let ended = st
            .policy
            .with(now, |reg, id, now| Ended {
                outcome: reg.end(now, id),
                session_id: reg.claude_session_id(id).cloned(),
                result: reg.result(id).cloned(),
                tally: reg.tally(id).cloned(),
                rate_limits: Some(reg.rate_limits().clone()),
            })
            .unwrap_or_default();
        let events = drain(&mut st);
        // A session on a shared watchdog leaves it now, before the report goes out.
        if matches!(st.policy, Policy::Shared(_)) {
            st.policy = Policy::None;
        }
        (ended, events)
    }
}

impl Shared {
    /// A reader has to wait for the caller to take output: from `now` on, the idle and
    /// no-progress clocks are paused (the child waits on its pipe because of the host).
    pub(crate) fn output_blocked(&self, now: Instant) {
        let mut st = self.lock();
        settle_pause(&mut st, now);
        st.blocked_readers += 1;
        if st.blocked_readers == 1 {
            st.blocked_since = now;
        }
    }

    /// A reader that waited got room at `now`.
    pub(crate) fn output_unblocked(&self, now: Instant) {
        let mut st = self.lock();
        settle_pause(&mut st, now);
        st.blocked_readers = st.blocked_readers.saturating_sub(1);
    }

    /// Whether a reader waits for the caller.
    pub(crate) fn is_output_blocked(&self) -> bool {
        self.lock().blocked_readers > 0
    }

    /// Apply the output pause so far (a shared watchdog's timer does not ask first).
    pub(crate) fn settle_pause(&self) {
        settle_pause(&mut self.lock(), clock::now());
    }
}

/// Apply the output pause up to `now`: the time since it was last applied does not count
/// toward the idle and no-progress clocks. Every call that lets the policy see time pass
/// applies it first, so no deadline fires for time the host held the child back.
fn settle_pause(st: &mut State, now: Instant) {
    if st.blocked_readers == 0 {
        return;
    }
    let paused = now.saturating_duration_since(st.blocked_since);
    st.blocked_since = now;
    st.blocked_total += paused;
    st.policy
        .with(now, |reg, id, now| reg.pause_clocks(now, id, paused));
}

fn drain(st: &mut State) -> Vec<Event> {
    st.policy.drain()
}

/// Deliver events; returns the kill among them, if any.
pub(crate) fn dispatch(
    out: &mpsc::UnboundedSender<Batch>,
    events: Vec<Event>,
) -> Option<watchdog_core::Kill> {
    let mut kill = None;
    for ev in events {
        if let Event::Killed(k) = &ev {
            kill.get_or_insert_with(|| k.clone());
        }
        let _ = out.send(Batch::Output(Output::Event(ev)));
    }
    kill
}
