//! Many sessions on one timer: the deterministic deadline engine ([`Registry`]).

mod dialects;
mod holds;
mod host_side;
mod mcp_calls;
mod observe;
mod policy_table;
mod queries;
mod rate_limits;
mod seed;
mod timer;
mod tree;

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

use crate::classify::LineKind;
use crate::config::{Limits, SessionConfig};
use crate::deadline_queue::DeadlineQueue;
use crate::event::{Event, Kill, Outcome, SessionId};
use crate::facts::Tally;
use crate::record::RunRecord;
use crate::session::{Cold, End, Host, Session, Watched, NEVER};

use policy_table::PolicyTable;
pub use queries::SessionSnapshot;
use rate_limits::RateLimits;
pub use seed::Seed;
pub use tree::TreeWant;

/// The registry of supervised sessions: many sessions on one timer, the deterministic
/// deadline engine (quinn-proto style).
///
/// Time is a parameter: every call takes `now`. The caller sleeps until [`Registry::poll_timeout`],
/// calls [`Registry::handle_timeout`], then drains [`Registry::poll_event`].
///
/// # How deadlines are kept
///
/// Each session knows its next timed event (a kill, an `Extended` or a `Stalling`). A hashed
/// timer wheel with an exact near heap indexes them (`deadline_queue`). A session remembers
/// where it is filed, so a line that moves its next event later changes nothing but the
/// session (O(1)); when the wheel reaches the old instant, it asks for the session's true next
/// event and re-files it there, without waking the host. An event that moves earlier is
/// re-filed at once (O(1)); an ended or forgotten session leaves the index at once.
/// `poll_timeout` is therefore the exact next event (a rise of the utilization, which lengthens
/// patience without revisiting sessions, is the one case of an early wake-up that finds
/// nothing due), and a call with nothing due is a heap peek.
///
/// # Human waits
///
/// While a permission request is open (see the crate docs for how waits begin and end), the
/// idle and no-progress clocks stand still: their deadlines move by the paused time. The
/// ceiling keeps running, and so does the linger (a settled session is waiting on its host,
/// not on a permission prompt). The startup clock cannot be pending, since a wait begins with a
/// line.
///
/// # Waiting for the host
///
/// A session registered with [`SessionConfig::with_host_input`] (the child reads the host's
/// messages on stdin, `--input-format stream-json`, and that input is open) **waits for its
/// host** from each `result` on: the same wait as a human wait (idle and no-progress stand
/// still), and the linger does not run either. Only the ceiling does. The wait ends with the
/// host's next `user` message ([`Registry::observe_input`]: the next turn; every clock starts
/// afresh, as for progress), with new progress from the child (it went on by itself), or with
/// the end of the host's input ([`Registry::input_closed`]: the linger runs from then).
/// Control messages from the host (`control_request`, `control_response`) do not end it.
///
/// # Time
///
/// Every call that takes `now` first processes what was due at or before `now`, so a line that
/// arrives after a deadline never rescues the session, and a kill is dated at its exact
/// deadline. Instants earlier than one already seen are treated as that one (time never runs
/// backwards inside the registry). After the call, whatever its own effect made due at `now`
/// (a withdrawn extension, a first line after an exceeded no-progress cap) is processed too,
/// so `poll_timeout` is always later than the last `now`, or `None`. The one exception is a
/// registry whose host does the checking ([`Registry::checked_by_host`]): there only
/// [`Registry::handle_timeout`] fires anything, `poll_timeout` may lie in the past until
/// it is called, and every call's instant counts as given (a session's clocks are set to the
/// instants its own calls bring, whatever other sessions or checks brought before).
#[derive(Debug)]
pub struct Registry {
    limits: Limits,
    policies: PolicyTable,
    /// The session arena (hot state, one cache line per slot, the slot's generation
    /// included); a session's id is its slot and the slot's generation.
    slots: Vec<Session>,
    /// Each slot's cold state, touched only by rare events.
    cold: Vec<Cold>,
    free: Vec<u32>,
    len: usize,
    queue: DeadlineQueue,
    events: VecDeque<Event>,
    epoch: Option<Instant>,
    now: u64,
    utilization: Option<f64>,
    /// The rate-limit readings of every session's lines ([`rate_limits`]).
    rate: RateLimits,
    /// What hosts hold back: output they cannot hand on, lines they have not read yet.
    holds: holds::Holds,
    /// What the sessions that sample their process tree keep ([`tree`]).
    trees: tree::Trees,
    /// The dialects of the sessions whose host gave one ([`dialects`]).
    dialects: dialects::Dialects,
    /// Deadlines fire only in `handle_timeout` ([`Registry::checked_by_host`]).
    checked_by_host: bool,
    counts: [u64; LineKind::ALL.len()],
}

/// At most this many unanswered permission requests or write calls are remembered per session
/// (a hostile stream cannot grow a session without bound; extra ids are ignored).
const MAX_PENDING: usize = 64;

fn make_id(slot: u32, generation: u32) -> SessionId {
    SessionId::new((u64::from(generation) << 32) | u64::from(slot))
}

fn split_id(id: SessionId) -> (u32, u32) {
    let raw = id.as_u64();
    ((raw & 0xffff_ffff) as u32, (raw >> 32) as u32)
}

impl Registry {
    /// A registry whose sessions use `limits` unless their [`SessionConfig`] overrides them.
    pub fn new(limits: Limits) -> Self {
        Registry {
            policies: PolicyTable::new(&limits),
            limits,
            slots: Vec::new(),
            cold: Vec::new(),
            free: Vec::new(),
            len: 0,
            queue: DeadlineQueue::default(),
            events: VecDeque::new(),
            epoch: None,
            now: 0,
            utilization: None,
            rate: RateLimits::default(),
            holds: holds::Holds::default(),
            trees: tree::Trees::default(),
            dialects: dialects::Dialects::default(),
            checked_by_host: false,
            counts: [0; LineKind::ALL.len()],
        }
    }

    /// The registry-wide limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `now` as nanoseconds since the epoch, never earlier than an instant already seen.
    fn clock(&mut self, now: Instant) -> u64 {
        self.given(now);
        self.now
    }

    /// `now` as nanoseconds since the epoch (0 before it), as given; the latest instant seen
    /// moves to it if it is later.
    fn given(&mut self, now: Instant) -> u64 {
        let epoch = *self.epoch.get_or_insert(now);
        let t = now
            .checked_duration_since(epoch)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(NEVER - 1));
        self.now = self.now.max(t);
        t
    }

    fn instant(&self, t: u64) -> Option<Instant> {
        self.epoch?.checked_add(Duration::from_nanos(t))
    }

    fn instant_or_epoch(&self, t: u64) -> Instant {
        self.instant(t)
            .or(self.epoch)
            .expect("an instant exists once a session is registered")
    }

    /// Move the clock to `now` and process everything due until then (unless the host checks:
    /// [`Registry::checked_by_host`]). Every call leaves the queue settled, so its peek is the
    /// exact next event: with nothing due, the queue is not asked again (the call's own
    /// `run_due` settles it afterwards).
    fn advance(&mut self, now: Instant) -> u64 {
        if self.checked_by_host {
            return self.given(now);
        }
        self.check(now)
    }

    /// Move the clock to `now` and fire everything due until then, in time order (where the
    /// host checks, until `now` as given).
    fn check(&mut self, now: Instant) -> u64 {
        let t = if self.checked_by_host {
            self.given(now)
        } else {
            self.clock(now)
        };
        self.run_rate_limit_due(t);
        if self.queue.peek().is_some_and(|at| at <= t) {
            self.fire_due(t);
        }
        t
    }

    /// Every window reset due at or before `t`, each at its own instant, after the deadlines
    /// due before it.
    fn run_rate_limit_due(&mut self, t: u64) {
        while self.rate.expiry <= t {
            let e = self.rate.expiry;
            if self.queue.peek().is_some_and(|at| at <= e) {
                self.fire_due(e);
            }
            self.rate_limit_expired(e);
        }
    }

    /// Deadlines fall due only when the host checks ([`Registry::handle_timeout`]); every
    /// other call notes what it brings (a line, a boundary, a settle, a utilization) at its
    /// instant, before whatever fell due meanwhile, which then fires at the check only if it
    /// still holds. For a host whose own check is the contract: the reference package checks
    /// on its tick, and a message it was handed before its check counts
    /// (the wasm crate's `reference` preset). The host arms its timer at [`Registry::poll_timeout`], so the
    /// check still comes at the exact deadline when nothing else is going on; then the kill
    /// is dated at its deadline, as always.
    ///
    /// Such a host's instants are its caller's, as the reference package takes them: every
    /// call counts at the instant it gives, never moved to a later one the registry saw
    /// before (a session fed at an earlier instant than another session's, or than the last
    /// check, has its clocks set there; a check counts at its own instant). Instants count
    /// from `since` (an earlier one counts as `since`): give the earliest the host can pass.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Event, Limits, Registry, SessionConfig};
    /// let t0 = Instant::now();
    /// let s = Duration::from_secs;
    /// let limits = Limits::default().with_idle(s(60)).unwrap().with_extend_factor(1.0).unwrap();
    /// let mut reg = Registry::new(limits).checked_by_host(t0);
    /// let id = reg.register(t0, SessionConfig::default());
    /// reg.tool_boundary(t0, id, None);
    /// // No check at the deadline (60 s); a boundary at 90 s comes first, and counts.
    /// reg.tool_boundary(t0 + s(90), id, None);
    /// reg.handle_timeout(t0 + s(100));
    /// assert!(reg.kill(id).is_none());
    /// reg.handle_timeout(t0 + s(150));
    /// assert_eq!(reg.kill(id).unwrap().at, t0 + s(150));
    /// // A session fed at 10 s (after the check at 150 s) counts from 10 s.
    /// let late = reg.register(t0 + s(10), SessionConfig::default());
    /// reg.tool_boundary(t0 + s(10), late, None);
    /// reg.handle_timeout(t0 + s(70));
    /// assert_eq!(reg.kill(late).unwrap().at, t0 + s(70));
    /// ```
    #[must_use]
    pub fn checked_by_host(mut self, since: Instant) -> Self {
        self.checked_by_host = true;
        self.epoch = Some(since);
        self
    }

    fn slot_of(&self, id: SessionId) -> Option<u32> {
        let (slot, generation) = split_id(id);
        let s = self.slots.get(slot as usize)?;
        (s.generation == generation && s.is_live()).then_some(slot)
    }

    fn session(&self, slot: u32) -> &Session {
        &self.slots[slot as usize]
    }

    fn session_mut(&mut self, slot: u32) -> &mut Session {
        &mut self.slots[slot as usize]
    }

    /// A slot's hot and cold state.
    fn parts_mut(&mut self, slot: u32) -> (&mut Session, &mut Cold) {
        (
            &mut self.slots[slot as usize],
            &mut self.cold[slot as usize],
        )
    }

    /// Start supervising one session at `now`.
    pub fn register(&mut self, now: Instant, config: SessionConfig) -> SessionId {
        let t = self.advance(now);
        let limits = self.policies.acquire(config.limits());
        let slot = match self.free.pop() {
            Some(slot) => {
                let s = &mut self.slots[slot as usize];
                *s = Session::new(limits, t, s.generation);
                self.cold[slot as usize] = Cold::default();
                slot
            }
            None => {
                self.slots.push(Session::new(limits, t, 0));
                self.cold.push(Cold::default());
                (self.slots.len() - 1) as u32
            }
        };
        let host = &mut self.session_mut(slot).host;
        host.set(Host::InputOpen, config.host_input());
        host.set(Host::Tree, config.tree_evidence());
        host.set(
            Host::ClocksFromRegistration,
            config.clocks_from_registration(),
        );
        if config.tree_evidence() {
            self.trees.start(slot, config.busy_tools_presumed());
        }
        if let Some(dialect) = config.dialect() {
            self.session_mut(slot).host.insert(Host::Dialect);
            self.dialects.start(slot, dialect);
        }
        if config.tally() || config.expected_session().is_some() {
            let mut turns = crate::facts::Turns::default();
            // Without host input the prompt is the one message.
            if config.tally() && !config.host_input() {
                turns.message();
            }
            let watched = Watched {
                tally: config.tally().then(|| Tally::new(config.live_facts())),
                expect: config.expected_session().cloned(),
                mismatch_reported: false,
                turns,
            };
            let (s, c) = self.parts_mut(slot);
            s.host.insert(Host::Watched);
            c.rare_or_new().watched = Some(Box::new(watched));
        }
        self.len += 1;
        self.reschedule(slot);
        self.settle_queue(t);
        make_id(slot, self.session(slot).generation)
    }

    /// The stream ended (or the process exited): stop all deadlines and emit
    /// [`Event::Ended`] with the outcome, which is also returned. Idempotent: a second call
    /// returns the same outcome and emits nothing. A session killed before (even at this very
    /// instant) ends as [`Outcome::Killed`].
    pub fn end(&mut self, now: Instant, id: SessionId) -> Option<Outcome> {
        self.advance(now);
        let slot = self.slot_of(id)?;
        let (s, c) = self.parts_mut(slot);
        let outcome = s.outcome(c);
        if s.end != End::Ended {
            s.end = End::Ended;
            s.queued = NEVER;
            self.holds.forget(slot);
            self.events.push_back(Event::Ended {
                id,
                outcome: outcome.clone(),
            });
            self.queue.remove(slot);
            self.settle_queue(self.now);
        }
        Some(outcome)
    }

    /// The session's end, as one record: [`end`](Self::end) (the [`Event::Ended`] it emits
    /// included), then everything the registry read from the session's lines, in one
    /// [`RunRecord`]: the outcome, the kill, Claude Code's session id, the last `result`, the
    /// tally (empty unless kept), the rate-limit readings and what the samples of its process
    /// tree said. The host adds what only it knows
    /// (its ladder's stage, the process's exit, the lines it read). `None` for an unknown id.
    pub fn finish(&mut self, now: Instant, id: SessionId) -> Option<RunRecord> {
        let outcome = self.end(now, id)?;
        let mut record = RunRecord::observed(
            outcome,
            self.kill(id).cloned(),
            self.claude_session_id(id).cloned(),
            self.result(id).cloned(),
            self.tally(id).cloned().unwrap_or_default(),
            self.rate_limits().clone(),
        );
        record.tree = self.tree_facts(id).cloned();
        record.turns = self.turns(id).unwrap_or_default();
        if let Some(slot) = self.slot_of(id) {
            let (s, c) = (self.session(slot), &self.cold[slot as usize]);
            record.outstanding = s.outstanding(c, self.now).unwrap_or_default();
        }
        record.dialect = self.dialect(id).unwrap_or_default();
        Some(record)
    }

    /// The host stops the session's process for a reason of its own (its output failed, its
    /// reader went away, it was told to): from `now` on no deadline of the session falls due
    /// and no warning is given, so the stop stays the one reason the run ended. Lines still
    /// count (a `result` printed while it stops is its result), and [`end`](Self::end) gives
    /// the outcome they make. What was due before `now` has fired. Returns whether the
    /// session was live and not yet ended or killed; idempotent.
    pub fn stop_clocks(&mut self, now: Instant, id: SessionId) -> bool {
        self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return false;
        };
        let s = self.session_mut(slot);
        if s.is_done() {
            return false;
        }
        s.end = End::Stopping;
        s.queued = NEVER;
        self.queue.remove(slot);
        self.settle_queue(self.now);
        true
    }

    /// Forget the session. Its kill, if any, stays readable through the returned value.
    pub fn unregister(&mut self, id: SessionId) -> Option<Kill> {
        let slot = self.slot_of(id)?;
        let generation = self.session(slot).generation.wrapping_add(1);
        let s = std::mem::replace(&mut self.slots[slot as usize], Session::vacant(generation));
        let c = std::mem::take(&mut self.cold[slot as usize]);
        self.policies.release(s.limits);
        self.holds.forget(slot);
        self.trees.forget(slot);
        self.queue.remove(slot);
        self.settle_queue(self.now);
        self.len -= 1;
        if generation != u32::MAX {
            self.free.push(slot); // a slot whose generations ran out is retired
        }
        c.rare.and_then(|r| r.kill).map(|k| *k)
    }

    /// Forget every session (a "close"): nothing is due afterwards and no event of the old
    /// sessions is reported any more. Ids stay unique: new sessions never reuse an old id.
    pub fn clear(&mut self) {
        let ids: Vec<SessionId> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_live())
            .map(|(i, s)| make_id(i as u32, s.generation))
            .collect();
        for id in ids {
            self.unregister(id);
        }
        self.queue.clear();
        self.events.clear();
    }

    /// The current rate-limit utilization (highest active window), or `None` when unknown.
    /// The registry sets it itself from its sessions' `rate_limit_event` lines
    /// ([`Registry::rate_limits`]); this sets it by hand (a host with readings of its own).
    ///
    /// When it falls below a session's `high_utilization`, that session's extension is
    /// withdrawn at `now`: a session already past its base idle is killed at `now`. Such a
    /// drop revisits every session (O(n)); a rise or an unchanged side touches none.
    pub fn set_utilization(&mut self, now: Instant, utilization: Option<f64>) {
        let t = self.advance(now);
        self.set_utilization_at(t, utilization);
    }

    /// [`Registry::set_utilization`] at registry time `t` (the clock is there already).
    fn set_utilization_at(&mut self, t: u64, utilization: Option<f64>) {
        let utilization = utilization.filter(|u| !u.is_nan());
        let before = self.utilization;
        self.utilization = utilization;
        let mut dropped = Vec::new();
        for (i, e) in self.policies.entries.iter_mut().enumerate() {
            if let Some(e) = e {
                // Where the host checks, a reading may come at an instant before the last fall
                // (its instants count as given): the fall counts from there.
                let earlier = self.checked_by_host && e.drop_at > t;
                if earlier || (e.ns.is_high(before) && !e.ns.is_high(utilization)) {
                    e.drop_at = t;
                    dropped.push(i as u32);
                }
            }
        }
        if dropped.is_empty() {
            return;
        }
        for slot in 0..self.slots.len() as u32 {
            let s = &self.slots[slot as usize];
            let affected = s.is_live() && !s.is_done() && dropped.contains(&s.limits);
            if affected {
                self.reschedule(slot);
            }
        }
        // A withdrawal can make a kill due at this very instant.
        self.run_due(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_encode_slot_and_generation() {
        let id = make_id(7, 3);
        assert_eq!(split_id(id), (7, 3));
    }

    #[test]
    fn equal_overrides_share_one_policy_entry() {
        let mut r = Registry::new(Limits::default());
        let t0 = Instant::now();
        let l = Limits::default().with_idle(Duration::from_secs(5)).unwrap();
        let a = r.register(t0, SessionConfig::default().with_limits(l.clone()));
        let _b = r.register(t0, SessionConfig::default().with_limits(l));
        let _c = r.register(t0, SessionConfig::default());
        assert_eq!(r.policies.entries.len(), 2);
        r.unregister(a);
        assert_eq!(r.policies.free.len(), 0);
    }

    #[test]
    fn a_storm_or_background_task_that_is_over_keeps_no_memory() {
        let mut r = Registry::new(Limits::default());
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let id = r.register(t0, SessionConfig::default());
        let slot = split_id(id).0 as usize;
        let delta = br#"{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}"#;
        let retry = br#"{"type":"system","subtype":"api_retry","retry_delay_ms":2000,"error_status":529,"error":"overloaded"}"#;
        r.observe_line(at(0), id, delta);
        r.observe_line(at(1), id, retry);
        assert!(r.cold[slot].work().is_some_and(|w| w.storm.is_some()));
        // Progress before the back-off's end: the storm goes on.
        r.observe_line(at(2), id, delta);
        assert!(r.cold[slot].work().is_some());
        // Progress after it: the API answers again, and what the storm kept is freed.
        r.observe_line(at(4), id, delta);
        assert!(r.cold[slot].rare.is_none());
        let started =
            br#"{"type":"system","subtype":"task_started","task_id":"b1","is_backgrounded":true}"#;
        let done = br#"{"type":"system","subtype":"task_notification","task_id":"b1","status":"completed"}"#;
        r.observe_line(at(5), id, started);
        assert!(r.cold[slot].work().is_some_and(|w| w.background.len() == 1));
        r.observe_line(at(6), id, done);
        assert!(r.cold[slot].rare.is_none());
    }
}
