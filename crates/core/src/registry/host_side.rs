//! The host side: what the host wrote to the child's stdin (a permission answer, the next
//! turn, the end of its input) and what it tells the registry itself (a tool boundary from a
//! hook, time it held the child back, a settle).

use std::time::Duration;

use crate::time::Instant;

use crate::classify::Signal;
use crate::event::{Event, SessionId};
use crate::session::{Host, Phase, Side};
use crate::view::LineView;

use super::holds::Hold;
use super::observe::{answer, wrote};
use super::Registry;

impl Registry {
    /// Feed one line the host wrote to the child's stdin: a `control_response` that answers a
    /// permission request ends that human wait; a `user` message while the session waits for
    /// its host starts the next turn (every clock afresh, as for progress); the host's own
    /// `control_request` (not `initialize`) waits for its answer, bounded by
    /// [`Limits::control_timeout`](crate::Limits::control_timeout), until Claude Code's
    /// `control_response` or the host's `control_cancel_request`. Host lines are not otherwise
    /// signs of the child's life. A session that keeps a tally counts the host's top-level
    /// `user` messages (each asks for one `result`: [`Event::UnsolicitedResult`]).
    pub fn observe_input(&mut self, now: Instant, id: SessionId, line: &LineView<'_>) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        if self.session(slot).is_done() {
            return;
        }
        let kind = line.kind();
        if kind.as_deref() == Some("user") && line.parent_tool_use_id().is_none() {
            self.count_host_message(slot);
        }
        let (s, c) = self.parts_mut(slot);
        let was_paused = s.paused();
        match kind.as_deref() {
            Some("control_response") => {
                let Some(rid) = line.request_id() else {
                    return;
                };
                answer(s, c, &rid);
            }
            Some("control_request") => {
                let (Some(rid), Some(sub)) = (line.request_id(), line.request_subtype()) else {
                    return;
                };
                s.note_asked(c, &rid, &sub, t);
            }
            Some("control_cancel_request") => {
                let Some(rid) = line.request_id() else {
                    return;
                };
                s.note_answer(c, &rid, true, t);
            }
            // The host's next turn: while it waits for it, or while its background tasks run
            // after the result (the host need not wait for them).
            Some("user")
                if s.phase == Phase::WaitingForHost
                    || (s.phase.is_settled()
                        && s.side.has(Side::Background)
                        && s.host.has(Host::InputOpen)) =>
            {
                s.note_progress(t);
                s.drop_past_retry(c);
            }
            _ => return,
        }
        s.end_wait_if_clear(c, t, was_paused);
        self.reschedule(slot);
        self.run_due(t);
    }

    /// A top-level `user` message of the host: one more `result` asked for (a session that
    /// keeps a tally counts it).
    fn count_host_message(&mut self, slot: u32) {
        if !self.session(slot).host.has(Host::Watched) {
            return;
        }
        let watched = self.cold[slot as usize]
            .rare_mut()
            .and_then(|r| r.watched.as_deref_mut())
            .filter(|w| w.tally.is_some());
        if let Some(w) = watched {
            w.turns.message();
        }
    }

    /// The host's input to the child ended (its stdin closed): a session waiting for its host
    /// lingers from `now`; one mid-turn lingers from its next `result`, as any session does.
    /// No effect on a session registered without [`SessionConfig::with_host_input`].
    ///
    /// [`SessionConfig::with_host_input`]: crate::SessionConfig::with_host_input
    pub fn input_closed(&mut self, now: Instant, id: SessionId) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        let (s, c) = self.parts_mut(slot);
        if s.is_done() || !s.host.has(Host::InputOpen) {
            return;
        }
        s.host.remove(Host::InputOpen);
        if s.phase == Phase::WaitingForHost {
            let was_paused = s.paused();
            s.settle(t);
            s.end_wait_if_clear(c, t, was_paused);
        }
        self.reschedule(slot);
        self.run_due(t);
    }

    /// A tool boundary reported by a hook: `Some(name)` for a completed tool (a write tool ends
    /// the pre-write extension), `None` for a boundary that is not a completed call. Either
    /// counts as progress.
    pub fn tool_boundary(&mut self, now: Instant, id: SessionId, tool: Option<&str>) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        if self.session(slot).is_done() {
            return;
        }
        let is_write = {
            let limits = &self.policies.get(self.session(slot).limits).limits;
            tool.is_some_and(|name| limits.is_write_tool(name))
        };
        let (s, c) = self.parts_mut(slot);
        s.last_signal = Some(Signal::Progress);
        s.note_progress(t);
        s.drop_past_retry(c);
        s.last_tool = t;
        if is_write {
            wrote(s, c);
        }
        self.reschedule(slot);
        self.run_due(t);
    }

    /// The last `paused` before `now` does not count toward the idle and no-progress clocks
    /// of `id`: the host could not take the child's output (a slow reader downstream), so the
    /// child's silence was the host's doing. The startup and ceiling clocks are not paused. No
    /// effect on an ended session, nor while a human wait is open (it pauses the same clocks).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Limits, Registry, SessionConfig};
    /// let t0 = Instant::now();
    /// let idle = Duration::from_secs(60);
    /// let mut reg = Registry::new(Limits::default().with_idle(idle).unwrap().with_extend_factor(1.0).unwrap());
    /// let id = reg.register(t0, SessionConfig::default());
    /// reg.observe_line(t0, id, br#"{"type":"assistant","message":{"content":[]}}"#);
    /// // 50 s later: the output was blocked for the last 40 s.
    /// reg.pause_clocks(t0 + Duration::from_secs(50), id, Duration::from_secs(40));
    /// let killed = |reg: &mut Registry| {
    ///     std::iter::from_fn(|| reg.poll_event()).any(|e| matches!(e, watchdog_core::Event::Killed(_)))
    /// };
    /// reg.handle_timeout(t0 + Duration::from_secs(99));
    /// assert!(!killed(&mut reg), "60 s of patience, 40 s of them paused");
    /// reg.handle_timeout(t0 + Duration::from_secs(100));
    /// assert!(killed(&mut reg));
    /// ```
    pub fn pause_clocks(&mut self, now: Instant, id: SessionId, paused: Duration) {
        let t = self.clock(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        if self.session(slot).is_done() {
            return;
        }
        let b = t.saturating_sub(u64::try_from(paused.as_nanos()).unwrap_or(u64::MAX));
        let (s, c) = self.parts_mut(slot);
        s.pause_clocks(c, b, t);
        self.reschedule(slot);
        self.run_due(t);
    }

    /// Whether the host can hand the session's output on. While `blocked` (its reader waits
    /// for room downstream: a slow reader), the child waits on its pipe because of the host,
    /// not because it hangs: the idle and no-progress deadlines, and their warnings, do not
    /// fall due, and when the block ends the time it lasted does not count toward those
    /// clocks (as with [`pause_clocks`](Self::pause_clocks)). The startup, linger and ceiling
    /// deadlines keep running. The same rule whoever drives the timer. Repeating a state
    /// changes nothing; no effect on an ended session. A block is no kill of its own here:
    /// how long the host's reader may take nothing is the host's rule, measured where it
    /// writes ([`reader_wait`](crate::reader_wait)).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Event, Limits, Registry, SessionConfig};
    /// let t0 = Instant::now();
    /// let s = Duration::from_secs;
    /// let limits = Limits::default().with_idle(s(60)).unwrap().with_extend_factor(1.0).unwrap();
    /// let mut reg = Registry::new(limits);
    /// let id = reg.register(t0, SessionConfig::default());
    /// reg.observe_line(t0, id, br#"{"type":"assistant","message":{"content":[]}}"#);
    /// let killed = |reg: &mut Registry| {
    ///     std::iter::from_fn(|| reg.poll_event()).any(|e| matches!(e, Event::Killed(_)))
    /// };
    /// reg.output_blocked(t0 + s(10), id, true);
    /// reg.handle_timeout(t0 + s(300));
    /// assert!(!killed(&mut reg), "nothing falls due while the host holds the output");
    /// reg.output_blocked(t0 + s(300), id, false);
    /// // 10 s of the 60 s were used before the block: the kill comes 50 s after it ends.
    /// reg.handle_timeout(t0 + s(349));
    /// assert!(!killed(&mut reg));
    /// reg.handle_timeout(t0 + s(350));
    /// assert!(killed(&mut reg));
    /// ```
    pub fn output_blocked(&mut self, now: Instant, id: SessionId, blocked: bool) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        match self.set_hold(slot, Hold::Output, blocked, t) {
            None => return,
            Some(Some(began)) => {
                let (s, c) = self.parts_mut(slot);
                s.pause_clocks(c, began, t);
            }
            Some(None) => {}
        }
        self.reschedule(slot);
        self.run_due(t);
    }

    /// Whether the host may still hold unread lines of the session: its reader was woken for
    /// them and has not read them yet (after the host was stopped, say by Ctrl-Z, the lines
    /// the child printed meanwhile wait in the pipe while deadlines are overdue). While
    /// `pending`, a deadline of the session that falls due waits for them, at most
    /// [`INPUT_HOLD`](crate::config::INPUT_HOLD) past the later of its instant and
    /// the host's word; the lines, fed with [`observe_waited`](Self::observe_waited), count
    /// before it, and when the host says `false` it fires at once if it still holds, dated at
    /// its own instant. The fact applies to what is due at `now` itself: a host tells it
    /// before [`handle_timeout`](Self::handle_timeout). Unknown or ended sessions are ignored.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Event, KillKind, Limits, Registry, SessionConfig};
    /// let t0 = Instant::now();
    /// let ms = Duration::from_millis;
    /// let limits = Limits::default().with_idle(ms(1000)).unwrap().with_extend_factor(1.0).unwrap();
    /// let mut reg = Registry::new(limits);
    /// let id = reg.register(t0, SessionConfig::default());
    /// reg.observe_line(t0, id, br#"{"type":"assistant","message":{"content":[]}}"#);
    /// let kills = |reg: &mut Registry| {
    ///     std::iter::from_fn(|| reg.poll_event())
    ///         .filter_map(|e| match e { Event::Killed(k) => Some(k), _ => None })
    ///         .collect::<Vec<_>>()
    /// };
    /// // The host wakes 5 s late: its reader was woken for lines, its timer too.
    /// reg.input_pending(t0 + ms(5000), id, true);
    /// reg.handle_timeout(t0 + ms(5000));
    /// assert!(kills(&mut reg).is_empty(), "the idle kill waits for the lines");
    /// // What the reader read holds no line: the kill lands, dated at its deadline.
    /// reg.input_pending(t0 + ms(5001), id, false);
    /// let k = kills(&mut reg);
    /// assert_eq!((k[0].kind, k[0].at), (KillKind::Idle, t0 + ms(1000)));
    /// ```
    pub fn input_pending(&mut self, now: Instant, id: SessionId, pending: bool) {
        let t = self.clock(now);
        if let Some(slot) = self.slot_of(id) {
            if self.set_hold(slot, Hold::Input, pending, t).is_some() {
                self.reschedule(slot);
            }
        }
        self.run_due(t);
    }

    /// `slot` holds `hold` from `t` on, or no longer (`on`): its flag and the side table.
    /// `None` when nothing changed (an ended session, or already so); else, for a hold that
    /// ended, when it began. The caller refiles the session's deadlines.
    fn set_hold(&mut self, slot: u32, hold: Hold, on: bool, t: u64) -> Option<Option<u64>> {
        let s = self.session_mut(slot);
        if s.is_done() || s.host.has(hold.member()) == on {
            return None;
        }
        s.host.set(hold.member(), on);
        if on {
            self.holds.begin(slot, hold, t);
            Some(None)
        } else {
            Some(self.holds.end(slot, hold))
        }
    }

    /// The child has started: a message of it came that the host's own contract does not
    /// count as a sign of life (the reference package ignores most message types, yet any
    /// message at all proves the child started). Ends the startup clock and changes no other
    /// (a session that was not registered with
    /// [`SessionConfig::with_clocks_from_registration`](crate::SessionConfig::with_clocks_from_registration)
    /// counts its idle and no-progress clocks from registration from then on). No effect once
    /// a line was seen, or on an ended session.
    pub fn note_started(&mut self, now: Instant, id: SessionId) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        let no_progress = self.policies.get(self.session(slot).limits).ns.no_progress;
        let (s, c) = self.parts_mut(slot);
        if s.is_done() || s.phase.seen_line() {
            return;
        }
        s.first_line_floor(c, t, no_progress);
        s.saw_line();
        self.reschedule(slot);
        self.run_due(t);
    }

    /// Settle the session by hand, as a `result` would (the last result is unchanged).
    pub fn settle(&mut self, now: Instant, id: SessionId) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        let s = self.session_mut(slot);
        if s.is_done() || s.phase.is_settled() {
            return;
        }
        s.settle(t);
        let (s, c) = self.parts_mut(slot);
        s.begin_host_wait(c, t);
        self.events.push_back(Event::Settled { id });
        self.reschedule(slot);
        self.run_due(t);
    }
}
