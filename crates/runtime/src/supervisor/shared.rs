//! State shared by the stdout reader, the stdin writer and the watching task: the policy
//! registry of this one session, the counters, and the wake-up for the watching task.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::sync::{mpsc, Notify};
use watchdog_core::{classify, Class, Event, LineView, Outcome, Registry, SessionId};

use super::{LineCounts, Output};
use crate::clock;

/// State shared by the readers, the stdin writer and the watching task.
pub(crate) struct Shared {
    state: Mutex<State>,
    pub(crate) notify: Notify,
}

pub(crate) struct State {
    policy: Option<(Registry, SessionId)>,
    armed: Option<Instant>,
    pub(crate) counts: LineCounts,
    pub(crate) session_id: Option<String>,
    pub(crate) stdout_lines: u64,
    pub(crate) stderr_lines: u64,
    pub(crate) overlong_lines: u64,
}

impl Shared {
    /// Shared state for a session registered (when `policy` is set) in its own registry.
    pub(crate) fn new(policy: Option<(Registry, SessionId)>) -> Self {
        Shared {
            state: Mutex::new(State {
                policy,
                armed: None,
                counts: LineCounts::default(),
                session_id: None,
                stdout_lines: 0,
                stderr_lines: 0,
                overlong_lines: 0,
            }),
            notify: Notify::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wake the watching task if the next deadline moved earlier.
    fn rearm(&self, st: &mut State) {
        if let Some((reg, _)) = &st.policy {
            let next = reg.poll_timeout();
            if clock::earlier(next, st.armed) {
                st.armed = next;
                self.notify.notify_one();
            }
        }
    }

    /// Feed one stdout line (or a piece of an over-long one, a keep-alive).
    pub(crate) fn observe_stdout(&self, bytes: &[u8], piece: bool) -> Vec<Event> {
        let now = clock::now();
        let mut st = self.lock();
        st.stdout_lines += 1;
        let class = match (piece, LineView::parse(bytes)) {
            (false, Ok(view)) => {
                if st.session_id.is_none() {
                    st.session_id = view.session_id().map(|s| s.into_owned());
                }
                match &mut st.policy {
                    Some((reg, id)) => reg.observe(now, *id, &view),
                    None => classify(&view),
                }
            }
            _ => match &mut st.policy {
                // An empty line is unparseable: a keep-alive, without parsing a huge piece.
                Some((reg, id)) => reg.observe_line(now, *id, if piece { b"" } else { bytes }),
                None => Class::UNPARSEABLE,
            },
        };
        st.counts.add(class.kind);
        let events = drain(&mut st);
        self.rearm(&mut st);
        events
    }

    pub(crate) fn observe_stderr(&self) {
        self.lock().stderr_lines += 1;
    }

    pub(crate) fn overlong(&self) {
        self.lock().overlong_lines += 1;
    }

    /// Report a line written to the child's stdin.
    pub(crate) fn observe_input(&self, bytes: &[u8]) {
        let Ok(view) = LineView::parse(bytes) else {
            return;
        };
        let now = clock::now();
        let mut st = self.lock();
        if let Some((reg, id)) = &mut st.policy {
            reg.observe_input(now, *id, &view);
        }
        self.rearm(&mut st);
        // The call may have fired what was due: the watching task delivers those events.
        self.notify.notify_one();
    }

    /// Events queued by calls made outside the watching task.
    pub(crate) fn events(&self) -> Vec<Event> {
        drain(&mut self.lock())
    }

    /// The next deadline; the watching task sleeps until it.
    pub(crate) fn arm(&self) -> Option<Instant> {
        let mut st = self.lock();
        st.armed = st.policy.as_ref().and_then(|(reg, _)| reg.poll_timeout());
        st.armed
    }

    pub(crate) fn set_utilization(&self, utilization: Option<f64>) -> Vec<Event> {
        let now = clock::now();
        let mut st = self.lock();
        if let Some((reg, _)) = &mut st.policy {
            reg.set_utilization(now, utilization);
        }
        drain(&mut st)
    }

    pub(crate) fn timeout(&self) -> Vec<Event> {
        let now = clock::now();
        let mut st = self.lock();
        if let Some((reg, _)) = &mut st.policy {
            reg.handle_timeout(now);
        }
        drain(&mut st)
    }

    pub(crate) fn end(&self) -> (Option<Outcome>, Vec<Event>) {
        let now = clock::now();
        let mut st = self.lock();
        let outcome = match &mut st.policy {
            Some((reg, id)) => reg.end(now, *id),
            None => None,
        };
        (outcome, drain(&mut st))
    }
}

fn drain(st: &mut State) -> Vec<Event> {
    let mut events = Vec::new();
    if let Some((reg, _)) = &mut st.policy {
        while let Some(ev) = reg.poll_event() {
            events.push(ev);
        }
    }
    events
}

/// Deliver events; returns the kill among them, if any.
pub(crate) fn dispatch(
    out: &mpsc::UnboundedSender<Output>,
    events: Vec<Event>,
) -> Option<watchdog_core::Kill> {
    let mut kill = None;
    for ev in events {
        if let Event::Killed(k) = &ev {
            kill.get_or_insert_with(|| k.clone());
        }
        let _ = out.send(Output::Event(ev));
    }
    kill
}
