//! Many sessions on one timer: the deterministic deadline engine (quinn-proto style).
//!
//! Time is a parameter: every call takes `now`. The caller sleeps until [`Registry::poll_timeout`],
//! calls [`Registry::handle_timeout`], then drains [`Registry::poll_event`].
//!
//! # How deadlines are kept
//!
//! Each session knows its next timed event (a kill, an `Extended` or a `Stalling`). A hashed
//! timer wheel with an exact near heap indexes them (`deadline_queue`). A session remembers
//! where it is filed, so a line that moves its next event later changes nothing but the
//! session (O(1)); when the wheel reaches the old instant, it asks for the session's true next
//! event and re-files it there, without waking the host. An event that moves earlier is
//! re-filed at once (O(1)); an ended or forgotten session leaves the index at once.
//! `poll_timeout` is therefore the exact next event (a rise of the utilization, which lengthens
//! patience without revisiting sessions, is the one case of an early wake-up that finds
//! nothing due), and a call with nothing due is a heap peek.
//!
//! # Human waits
//!
//! While a permission request is open (see the crate docs for how waits begin and end), the
//! idle and no-progress clocks stand still: their deadlines move by the paused time. The
//! ceiling keeps running, and so does the linger (a settled session is waiting on its host,
//! not on a permission prompt). The startup clock cannot be pending, since a wait begins with a
//! line.
//!
//! # Time
//!
//! Every call that takes `now` first processes what was due at or before `now`, so a line that
//! arrives after a deadline never rescues the session, and a kill is dated at its exact
//! deadline. Instants earlier than one already seen are treated as that one (time never runs
//! backwards inside the registry). After the call, whatever its own effect made due at `now`
//! (a withdrawn extension, a first line after an exceeded no-progress cap) is processed too,
//! so `poll_timeout` is always later than the last `now`, or `None`.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::classify::{classify, Class, LineKind, Signal};
use crate::config::{Limits, McpLimits, SessionConfig};
use crate::deadline_queue::{DeadlineQueue, Slots};
use crate::event::{Event, ExtendReason, Kill, KillKind, McpCall, Outcome, SessionId};
use crate::facts::{ClaudeSessionId, ResultFacts};
use crate::session::{
    dur_ns, flag, id_hash, Cold, Due, LastResult, LimitsNs, PendingMcp, Session, NEVER,
};
use crate::view::{ContentBlock, LineView};

/// A hashable identity of a [`Limits`], to share one table entry between equal policies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct LimitsKey {
    durations: [Duration; 4],
    ceiling: Option<Duration>,
    floats: [u64; 3],
    write_tools: Vec<Box<str>>,
    mcp: McpLimits,
}

impl LimitsKey {
    fn new(l: &Limits) -> Self {
        LimitsKey {
            durations: [l.startup(), l.idle(), l.no_progress(), l.linger()],
            ceiling: l.ceiling(),
            floats: [
                l.extend_factor().to_bits(),
                l.high_utilization().to_bits(),
                l.warn_at().to_bits(),
            ],
            write_tools: l.write_tools().to_vec(),
            mcp: l.mcp().clone(),
        }
    }
}

/// One deduplicated policy.
#[derive(Debug)]
struct PolicyEntry {
    limits: Limits,
    ns: LimitsNs,
    /// The last instant the utilization fell below this policy's threshold.
    drop_at: u64,
    /// Sessions using it (the registry's own entry is never freed).
    refs: u32,
}

/// Policies shared by sessions, deduplicated; a session stores an index.
#[derive(Debug)]
struct PolicyTable {
    entries: Vec<Option<PolicyEntry>>,
    index: HashMap<LimitsKey, u32>,
    free: Vec<u32>,
}

impl PolicyTable {
    fn new(limits: &Limits) -> Self {
        let mut index = HashMap::new();
        index.insert(LimitsKey::new(limits), 0);
        PolicyTable {
            entries: vec![Some(PolicyEntry {
                limits: limits.clone(),
                ns: LimitsNs::new(limits),
                drop_at: 0,
                refs: 1,
            })],
            index,
            free: Vec::new(),
        }
    }

    fn get(&self, i: u32) -> &PolicyEntry {
        // Invariant: a live session's index is a live entry; entry 0 always exists.
        match self.entries.get(i as usize) {
            Some(Some(e)) => e,
            _ => self.entries[0].as_ref().expect("entry 0 is permanent"),
        }
    }

    fn acquire(&mut self, limits: Option<&Limits>) -> u32 {
        let Some(limits) = limits else {
            if let Some(Some(e)) = self.entries.get_mut(0) {
                e.refs = e.refs.saturating_add(1);
            }
            return 0;
        };
        let key = LimitsKey::new(limits);
        if let Some(&i) = self.index.get(&key) {
            if let Some(Some(e)) = self.entries.get_mut(i as usize) {
                e.refs = e.refs.saturating_add(1);
            }
            return i;
        }
        let entry = PolicyEntry {
            limits: limits.clone(),
            ns: LimitsNs::new(limits),
            drop_at: 0,
            refs: 1,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = Some(entry);
                i
            }
            None => {
                self.entries.push(Some(entry));
                (self.entries.len() - 1) as u32
            }
        };
        self.index.insert(key, i);
        i
    }

    fn release(&mut self, i: u32) {
        let Some(Some(e)) = self.entries.get_mut(i as usize) else {
            return;
        };
        e.refs = e.refs.saturating_sub(1);
        if e.refs == 0 && i != 0 {
            let key = LimitsKey::new(&e.limits);
            self.index.remove(&key);
            self.entries[i as usize] = None;
            self.free.push(i);
        }
    }
}

/// What the deadline queue asks about sessions while it settles.
struct Filing<'r> {
    slots: &'r mut [Session],
    cold: &'r [Cold],
    policies: &'r PolicyTable,
    utilization: Option<f64>,
}

impl Slots for Filing<'_> {
    fn due(&mut self, slot: u32) -> u64 {
        let Some(s) = self.slots.get_mut(slot as usize).filter(|s| s.is_live()) else {
            return NEVER;
        };
        let p = self.policies.get(s.limits);
        let c = &self.cold[slot as usize];
        let t = s
            .next_due(
                &p.ns,
                p.ns.is_high(self.utilization),
                p.drop_at,
                s.retry_end(c),
                s.mcp_floor(c),
            )
            .map_or(NEVER, |(t, _)| t);
        s.queued = t;
        s.flags &= !flag::RAISED;
        t
    }

    fn raised(&self, slot: u32) -> bool {
        self.slots
            .get(slot as usize)
            .is_some_and(|s| s.has(flag::RAISED))
    }
}

/// A read-only view of one session's state, for status displays.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSnapshot {
    /// When the session was registered.
    pub started: Instant,
    /// The last line of any kind, if any.
    pub last_line: Option<Instant>,
    /// The last progress (or the registration instant).
    pub last_progress: Instant,
    /// The last tool boundary (or the registration instant).
    pub last_tool: Instant,
    /// The signal of the last line.
    pub last_signal: Option<Signal>,
    /// Claude Code's session id ([`Registry::claude_session_id`]).
    pub claude_session_id: Option<ClaudeSessionId>,
    /// Settled by a `result` and no progress since.
    pub settled: bool,
    /// A human wait is open (idle and no-progress clocks paused).
    pub paused: bool,
    /// The first write tool completed.
    pub wrote: bool,
    /// The idle extension that holds now, if any.
    pub extension: Option<ExtendReason>,
    /// The stream ended.
    pub ended: bool,
    /// The kill, if killed.
    pub kill: Option<Kill>,
    /// The session's next timed event (kill or warning), if any.
    pub next_deadline: Option<Instant>,
}

/// The registry of supervised sessions.
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

fn ms_to_ns(ms: f64) -> u64 {
    let ns = ms * 1e6;
    if ns >= u64::MAX as f64 {
        NEVER
    } else {
        ns as u64
    }
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
            counts: [0; LineKind::ALL.len()],
        }
    }

    /// The registry-wide limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// `now` as nanoseconds since the epoch, never earlier than an instant already seen.
    fn clock(&mut self, now: Instant) -> u64 {
        let epoch = *self.epoch.get_or_insert(now);
        let t = now
            .checked_duration_since(epoch)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(NEVER - 1));
        self.now = self.now.max(t);
        self.now
    }

    fn instant(&self, t: u64) -> Option<Instant> {
        self.epoch?.checked_add(Duration::from_nanos(t))
    }

    fn instant_or_epoch(&self, t: u64) -> Instant {
        self.instant(t)
            .or(self.epoch)
            .expect("an instant exists once a session is registered")
    }

    /// Move the clock to `now` and process everything due until then. Every call leaves the
    /// queue settled, so its peek is the exact next event: with nothing due, the queue is not
    /// asked again (the call's own `run_due` settles it afterwards).
    fn advance(&mut self, now: Instant) -> u64 {
        let t = self.clock(now);
        if self.queue.peek().is_some_and(|at| at <= t) {
            self.run_due(t);
        }
        t
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

    fn next_of(&self, slot: u32) -> Option<(u64, Due)> {
        let s = self.session(slot);
        let p = self.policies.get(s.limits);
        let c = &self.cold[slot as usize];
        s.next_due(
            &p.ns,
            p.ns.is_high(self.utilization),
            p.drop_at,
            s.retry_end(c),
            s.mcp_floor(c),
        )
    }

    /// Note the session's next event in the deadline queue. A later event than where the
    /// session is filed needs no queue work (the queue asks again when it gets there); if the
    /// entry is in the queue's near heap, the session is marked `RAISED` (in its own cache
    /// line, not the queue's), and the queue re-files it when it reaches the heap's top.
    ///
    /// Returns whether the queue may need settling (false: neither the queue nor the mark
    /// the queue reads changed).
    fn reschedule(&mut self, slot: u32) -> bool {
        let t = self.next_of(slot).map_or(NEVER, |(t, _)| t);
        let horizon = self.queue.horizon();
        let s = self.session_mut(slot);
        if s.queued != NEVER && t >= s.queued {
            if t > s.queued && s.queued < horizon && !s.has(flag::RAISED) {
                s.flags |= flag::RAISED;
                return true;
            }
            return false;
        }
        s.queued = t;
        s.flags &= !flag::RAISED;
        self.queue.set(slot, t);
        true
    }

    /// Let the deadline queue re-file what it reached (see `DeadlineQueue::settle`).
    fn settle_queue(&mut self, now: u64) {
        let Registry {
            queue,
            slots,
            cold,
            policies,
            utilization,
            ..
        } = self;
        queue.settle(
            now,
            &mut Filing {
                slots,
                cold,
                policies,
                utilization: *utilization,
            },
        );
    }

    /// Fire every event due at or before `t`, in time order; leaves the queue settled.
    fn run_due(&mut self, t: u64) {
        loop {
            self.settle_queue(t);
            let Some(slot) = self.queue.pop_due(t) else {
                break;
            };
            let Some(s) = self.slots.get_mut(slot as usize).filter(|s| s.is_live()) else {
                continue;
            };
            s.queued = NEVER;
            s.flags &= !flag::RAISED;
            if let Some((due_at, due)) = self.next_of(slot) {
                if due_at <= t {
                    self.fire(slot, due_at, due);
                }
            }
            self.reschedule(slot);
        }
    }

    fn fire(&mut self, slot: u32, at: u64, due: Due) {
        let id = make_id(slot, self.session(slot).generation);
        match due {
            Due::Extended(reason) => {
                self.session_mut(slot).flags |= flag::EXT_NOTED;
                self.events.push_back(Event::Extended { id, reason });
            }
            Due::Stalling(clock, kill_at) => {
                let f = match clock {
                    crate::event::StallClock::Idle => flag::STALL_IDLE,
                    crate::event::StallClock::NoProgress => flag::STALL_NP,
                };
                self.session_mut(slot).flags |= f;
                self.events.push_back(Event::Stalling {
                    id,
                    clock,
                    remaining: Duration::from_nanos(kill_at.saturating_sub(at)),
                });
            }
            Due::Kill(kind) => {
                let kill = self.build_kill(slot, at, kind);
                let (s, c) = self.parts_mut(slot);
                s.flags |= flag::KILLED;
                s.rare(c).kill = Some(Box::new(kill.clone()));
                self.events.push_back(Event::Killed(kill));
            }
        }
    }

    fn build_kill(&self, slot: u32, at: u64, kind: KillKind) -> Kill {
        let s = self.session(slot);
        let c = &self.cold[slot as usize];
        let p = self.policies.get(s.limits);
        let since = |x: u64| Duration::from_nanos(at.saturating_sub(x));
        Kill {
            id: make_id(slot, s.generation),
            kind,
            at: self.instant_or_epoch(at),
            elapsed: since(s.started),
            since_progress: since(s.last_progress(c)),
            since_keepalive: since(s.last_line(c)),
            since_tool: since(s.last_tool),
            last_signal: s.last_signal,
            utilization: self.utilization,
            extension: s.extension(&p.ns, p.ns.is_high(self.utilization)),
            mcp_call: s.oldest_mcp(c).map(|m| McpCall {
                tool: m.tool.to_string(),
                outstanding: since(m.started),
            }),
        }
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
        self.len += 1;
        self.reschedule(slot);
        self.settle_queue(t);
        make_id(slot, self.session(slot).generation)
    }

    /// Feed one parsed stdout line of session `id`; returns its class. Unknown ids are ignored
    /// (the class is still returned). Lines of an ended or killed session change nothing.
    pub fn observe(&mut self, now: Instant, id: SessionId, line: &LineView<'_>) -> Class {
        // Find the session first: its cache line (a likely miss among many sessions) then loads
        // while the line is classified.
        let slot = self.slot_of(id);
        let class = classify(line);
        self.feed(now, slot, Some(line), class, false);
        class
    }

    /// Feed a stdout line (`None`: an unparseable line or a piece of an over-long one) that
    /// was already waiting to be read while deadlines came due (the host was stopped, say by
    /// Ctrl-Z, or busy): it counts **before** the deadlines due at `now`, which then fire only
    /// if they still hold. Otherwise the same as [`Registry::observe`]; when nothing is due at
    /// `now` the two are identical.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Event, Limits, LineView, Registry, SessionConfig};
    /// let t0 = Instant::now();
    /// let mut reg = Registry::new(Limits::default().with_idle(Duration::from_secs(60)).unwrap());
    /// let id = reg.register(t0, SessionConfig::default());
    /// let line = LineView::parse(br#"{"type":"assistant","message":{"content":[]}}"#).unwrap();
    /// reg.observe(t0, id, &line);
    /// // The host wakes 5 minutes late and finds a line waiting: the idle kill does not land.
    /// reg.observe_waited(t0 + Duration::from_secs(300), id, Some(&line));
    /// assert!(!std::iter::from_fn(|| reg.poll_event()).any(|e| matches!(e, Event::Killed(_))));
    /// ```
    pub fn observe_waited(
        &mut self,
        now: Instant,
        id: SessionId,
        line: Option<&LineView<'_>>,
    ) -> Class {
        let slot = self.slot_of(id);
        let class = line.map_or(Class::UNPARSEABLE, classify);
        self.feed(now, slot, line, class, true);
        class
    }

    /// Parse and feed one raw stdout line; an unparseable line counts as a keep-alive.
    pub fn observe_line(&mut self, now: Instant, id: SessionId, line: &[u8]) -> Class {
        match LineView::parse(line) {
            Ok(view) => self.observe(now, id, &view),
            Err(_) => {
                let slot = self.slot_of(id);
                self.feed(now, slot, None, Class::UNPARSEABLE, false);
                Class::UNPARSEABLE
            }
        }
    }

    /// `slot`: the session's slot, from [`Registry::slot_of`] (running due events does not
    /// change which slots are live). `waited`: the line counts before what is due at `now`
    /// ([`Registry::observe_waited`]).
    fn feed(
        &mut self,
        now: Instant,
        slot: Option<u32>,
        line: Option<&LineView<'_>>,
        class: Class,
        waited: bool,
    ) {
        self.counts[class.kind.index()] += 1;
        // A line that waited is noted before what came due at `now`; nothing due: as plain.
        let (t, due_after) = if waited {
            let t = self.clock(now);
            (t, self.queue.peek().is_some_and(|at| at <= t))
        } else {
            (self.advance(now), false)
        };
        let Some(slot) = slot else {
            if due_after {
                self.run_due(t);
            }
            return;
        };
        let id = make_id(slot, self.session(slot).generation);
        if self.session(slot).is_done() {
            if due_after {
                self.run_due(t);
            }
            return;
        }
        let policy = self.session(slot).limits;
        let mut settled_now = false;
        {
            let entry = self.policies.get(policy);
            let limits = &entry.limits;
            let s = &mut self.slots[slot as usize];
            let c = &mut self.cold[slot as usize];
            s.first_line_floor(c, t, entry.ns.no_progress);
            let was_paused = s.paused();
            s.last_signal = Some(class.signal);
            match class.signal {
                Signal::Progress => s.note_progress(t),
                Signal::KeepAlive | Signal::HumanWait | Signal::Settle => s.note_line(t),
            }
            s.drop_past_retry(c);
            if let Some(view) = line {
                read_session_id(s, c, view, class.kind);
                match class.kind {
                    LineKind::Assistant | LineKind::User => read_tools(s, c, view, limits, t),
                    LineKind::ToolProgress => read_heartbeat(s, c, view, limits.mcp(), t),
                    LineKind::ApiRetry => {
                        if let Some(ms) = view.retry_delay_ms() {
                            s.note_retry(c, t, ms_to_ns(ms));
                        }
                    }
                    LineKind::SessionState => match view.state().as_deref() {
                        Some("requires_action") => s.flags |= flag::STATE_WAIT,
                        Some("running" | "idle") if !s.has_pending_requests() => {
                            s.flags &= !flag::STATE_WAIT;
                        }
                        _ => {}
                    },
                    LineKind::ControlRequest if class.signal == Signal::HumanWait => {
                        match view.request_id() {
                            Some(rid) => {
                                let r = s.rare(c);
                                if r.pending_requests.len() < MAX_PENDING {
                                    r.pending_requests.push(rid.into());
                                }
                                s.sync_requests(r);
                            }
                            None => s.flags |= flag::STATE_WAIT,
                        }
                    }
                    LineKind::ControlCancel => {
                        if let Some(rid) = view.request_id() {
                            answer(s, c, &rid);
                        }
                    }
                    LineKind::Result => read_result(s, c, view),
                    _ => {}
                }
            }
            if class.signal == Signal::HumanWait {
                s.begin_wait(c, t, was_paused);
            }
            s.end_wait_if_clear(c, t, was_paused);
            if class.signal == Signal::Settle && !s.has(flag::SETTLED) {
                s.flags |= flag::SETTLED;
                s.settled_at = t;
                settled_now = true;
            }
        }
        if settled_now {
            self.events.push_back(Event::Settled { id });
        }
        // The queue was settled with nothing due at `t`; unless this line changed it (or it
        // waited past something due, which runs now), it still is.
        if self.reschedule(slot) || due_after {
            self.run_due(t);
        }
    }

    /// Feed one line the host wrote to the child's stdin (a `control_response` that answers a
    /// permission request ends that human wait). Host lines are not signs of the child's life.
    pub fn observe_input(&mut self, now: Instant, id: SessionId, line: &LineView<'_>) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        if self.session(slot).is_done() || line.kind().as_deref() != Some("control_response") {
            return;
        }
        let Some(rid) = line.request_id() else {
            return;
        };
        let (s, c) = self.parts_mut(slot);
        let was_paused = s.paused();
        answer(s, c, &rid);
        s.end_wait_if_clear(c, t, was_paused);
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

    /// Settle the session by hand, as a `result` would (the last result is unchanged).
    pub fn settle(&mut self, now: Instant, id: SessionId) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        let s = self.session_mut(slot);
        if s.is_done() || s.has(flag::SETTLED) {
            return;
        }
        s.flags |= flag::SETTLED | flag::FIRST_LINE;
        s.settled_at = t;
        self.events.push_back(Event::Settled { id });
        self.reschedule(slot);
        self.run_due(t);
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
        if !s.has(flag::ENDED) {
            s.flags |= flag::ENDED;
            s.queued = NEVER;
            self.events.push_back(Event::Ended {
                id,
                outcome: outcome.clone(),
            });
            self.queue.remove(slot);
            self.settle_queue(self.now);
        }
        Some(outcome)
    }

    /// Forget the session. Its kill, if any, stays readable through the returned value.
    pub fn unregister(&mut self, id: SessionId) -> Option<Kill> {
        let slot = self.slot_of(id)?;
        let generation = self.session(slot).generation.wrapping_add(1);
        let s = std::mem::replace(&mut self.slots[slot as usize], Session::vacant(generation));
        let c = std::mem::take(&mut self.cold[slot as usize]);
        self.policies.release(s.limits);
        self.queue.remove(slot);
        self.settle_queue(self.now);
        self.len -= 1;
        if generation != u32::MAX {
            self.free.push(slot); // a slot whose generations ran out is retired
        }
        c.rare
            .filter(|_| s.has(flag::RARE))
            .and_then(|r| r.kill)
            .map(|k| *k)
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
    ///
    /// When it falls below a session's `high_utilization`, that session's extension is
    /// withdrawn at `now`: a session already past its base idle is killed at `now`. Such a
    /// drop revisits every session (O(n)); a rise or an unchanged side touches none.
    pub fn set_utilization(&mut self, now: Instant, utilization: Option<f64>) {
        let t = self.advance(now);
        let utilization = utilization.filter(|u| !u.is_nan());
        let before = self.utilization;
        self.utilization = utilization;
        let mut dropped = Vec::new();
        for (i, e) in self.policies.entries.iter_mut().enumerate() {
            if let Some(e) = e {
                if e.ns.is_high(before) && !e.ns.is_high(utilization) {
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

    /// The utilization last set.
    pub fn utilization(&self) -> Option<f64> {
        self.utilization
    }

    /// The earliest instant at which [`Registry::handle_timeout`] has work, if any. It may be
    /// early (a wake-up that finds nothing due is a cheap no-op); it is never later than a
    /// deadline. After `handle_timeout(now)` it is later than `now`, or `None`.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.instant(self.queue.peek()?)
    }

    /// Process every deadline due at or before `now`. Cheap when nothing is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next pending event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The kill of a session, if it was killed.
    pub fn kill(&self, id: SessionId) -> Option<&Kill> {
        let slot = self.slot_of(id)?;
        self.rare_of(slot)?.kill.as_deref()
    }

    /// Claude Code's session id, read from the session's lines: the last `system/init`'s,
    /// else the first valid one seen (the rule and why: [`crate::facts`]).
    pub fn claude_session_id(&self, id: SessionId) -> Option<&ClaudeSessionId> {
        let slot = self.slot_of(id)?;
        self.cli_session_of(slot)
    }

    /// The facts of the session's last `result` line, if one came.
    pub fn result(&self, id: SessionId) -> Option<&ResultFacts> {
        let slot = self.slot_of(id)?;
        self.rare_of(slot)?.result.as_deref()
    }

    /// A read-only snapshot of one session.
    pub fn snapshot(&self, id: SessionId) -> Option<SessionSnapshot> {
        let slot = self.slot_of(id)?;
        let s = self.session(slot);
        let c = &self.cold[slot as usize];
        let p = self.policies.get(s.limits);
        Some(SessionSnapshot {
            started: self.instant_or_epoch(s.started),
            last_line: s
                .has(flag::FIRST_LINE)
                .then(|| self.instant_or_epoch(s.last_line(c))),
            last_progress: self.instant_or_epoch(s.last_progress(c)),
            last_tool: self.instant_or_epoch(s.last_tool),
            last_signal: s.last_signal,
            claude_session_id: self.cli_session_of(slot).cloned(),
            settled: s.has(flag::SETTLED),
            paused: s.paused(),
            wrote: s.has(flag::WROTE),
            extension: s.extension(&p.ns, p.ns.is_high(self.utilization)),
            ended: s.has(flag::ENDED),
            kill: self.rare_of(slot).and_then(|r| r.kill.as_deref().cloned()),
            next_deadline: self.next_of(slot).and_then(|(t, _)| self.instant(t)),
        })
    }

    /// A live slot's rare state, if allocated.
    fn rare_of(&self, slot: u32) -> Option<&crate::session::Rare> {
        let s = self.session(slot);
        self.cold[slot as usize]
            .rare
            .as_deref()
            .filter(|_| s.has(flag::RARE))
    }

    /// A live slot's CLI session id, if known.
    fn cli_session_of(&self, slot: u32) -> Option<&ClaudeSessionId> {
        let s = self.session(slot);
        self.cold[slot as usize]
            .cli_session
            .as_ref()
            .filter(|_| s.has(flag::CLI_SID))
    }

    /// How many lines of each [`LineKind`] were observed (all sessions), indexed by
    /// [`LineKind::index`].
    pub fn line_counts(&self) -> &[u64; LineKind::ALL.len()] {
        &self.counts
    }

    /// Number of registered sessions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no session is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Claude Code's session id ([`crate::facts`]): the first valid one seen, replaced by each
/// `system/init`'s. Once it is known, only `system` lines (the kind of an `init`) are read
/// again.
fn read_session_id(s: &mut Session, c: &mut Cold, view: &LineView<'_>, kind: LineKind) {
    let init = kind == LineKind::System && view.subtype().as_deref() == Some("init");
    if s.has(flag::CLI_SID) && !init {
        return;
    }
    if let Some(sid) = ClaudeSessionId::of_line(view) {
        if c.cli_session.as_ref() != Some(&sid) {
            s.flags |= flag::CLI_SID;
            c.cli_session = Some(sid);
        }
    }
}

/// The first write landed: the pre-write extension ends.
fn wrote(s: &mut Session, c: &mut Cold) {
    s.flags |= flag::WROTE;
    if let Some(r) = s.rare_mut(c) {
        r.pending_writes = Vec::new();
        s.compact(c);
    }
}

/// A permission request was answered (or cancelled).
fn answer(s: &mut Session, c: &mut Cold, rid: &str) {
    let Some(r) = s.rare_mut(c) else {
        return;
    };
    let before = r.pending_requests.len();
    r.pending_requests.retain(|p| &**p != rid);
    let cleared = before > 0 && r.pending_requests.is_empty();
    s.sync_requests(r);
    if cleared {
        s.flags &= !flag::STATE_WAIT;
    }
    s.compact(c);
}

/// Tool boundaries and write completion from `assistant` / `user` content blocks.
fn read_tools(s: &mut Session, c: &mut Cold, view: &LineView<'_>, limits: &Limits, t: u64) {
    let mut removed = false;
    view.for_each_block(|b| match b {
        ContentBlock::ToolUse { id, name } => {
            s.last_tool = t;
            if name.starts_with("mcp__") {
                begin_mcp(s, c, &id, &name, t, limits.mcp());
            }
            if !s.has(flag::WROTE) && limits.is_write_tool(&name) {
                let pending = &mut s.rare(c).pending_writes;
                if pending.len() < MAX_PENDING {
                    pending.push((id_hash(&id), id.into()));
                }
            }
        }
        ContentBlock::ToolResult {
            tool_use_id,
            is_error,
        } => {
            s.last_tool = t;
            if s.has(flag::MCP) {
                removed |= end_mcp(s, c, &tool_use_id);
            }
            if s.has(flag::WROTE) {
                return;
            }
            let Some(r) = s.rare_mut(c) else {
                return;
            };
            let h = id_hash(&tool_use_id);
            let found = r
                .pending_writes
                .iter()
                .position(|(ph, p)| *ph == h && **p == *tool_use_id);
            if let Some(i) = found {
                r.pending_writes.swap_remove(i);
                removed = true;
                if !is_error {
                    wrote(s, c);
                }
            }
        }
        ContentBlock::Other => {}
    });
    if removed {
        s.compact(c);
    }
}

/// An MCP tool call began at `t` (a `tool_use`, or a heartbeat of a call not seen before).
fn begin_mcp(s: &mut Session, c: &mut Cold, id: &str, tool: &str, t: u64, mcp: &McpLimits) {
    let hash = id_hash(id);
    let r = s.rare(c);
    let known = r.mcp_calls.iter().any(|m| m.hash == hash && &*m.id == id);
    if !known && r.mcp_calls.len() < MAX_PENDING {
        let floor = mcp
            .floor_for_tool(tool)
            .map_or(0, |d| t.saturating_add(dur_ns(d)));
        r.mcp_calls.push(PendingMcp {
            hash,
            id: id.into(),
            tool: tool.into(),
            started: t,
            floor,
        });
    }
    s.sync_mcp(r);
}

/// A `tool_result` for `id`: the MCP call of that id, if any, is over. Returns whether one
/// was removed.
fn end_mcp(s: &mut Session, c: &mut Cold, id: &str) -> bool {
    let Some(r) = s.rare_mut(c) else {
        return false;
    };
    let h = id_hash(id);
    let Some(i) = r.mcp_calls.iter().position(|m| m.hash == h && &*m.id == id) else {
        return false;
    };
    r.mcp_calls.swap_remove(i);
    s.sync_mcp(r);
    true
}

/// A `tool_progress` heartbeat: one naming an MCP tool proves its call outstanding since
/// `elapsed_time_seconds` ago (`parent_tool_use_id` is the call's id; the line's own
/// `tool_use_id` is made up).
fn read_heartbeat(s: &mut Session, c: &mut Cold, view: &LineView<'_>, mcp: &McpLimits, t: u64) {
    let Some(tool) = view.tool_name().filter(|n| n.starts_with("mcp__")) else {
        return;
    };
    let Some(id) = view.parent_tool_use_id() else {
        return;
    };
    if s.has(flag::MCP) {
        if let Some(r) = s.rare_mut(c) {
            let h = id_hash(&id);
            if r.mcp_calls.iter().any(|m| m.hash == h && *m.id == *id) {
                return;
            }
        }
    }
    let elapsed = view.elapsed_time_seconds().map_or(0, |e| {
        let ns = e * 1e9;
        if ns >= u64::MAX as f64 {
            NEVER
        } else {
            ns as u64
        }
    });
    begin_mcp(s, c, &id, &tool, t.saturating_sub(elapsed), mcp);
}

/// Remember the last `result`'s verdict.
fn read_result(s: &mut Session, c: &mut Cold, view: &LineView<'_>) {
    // The turn is over: no MCP call is outstanding any more.
    if let Some(r) = s.rare_mut(c) {
        r.mcp_calls = Vec::new();
        s.sync_mcp(r);
        s.compact(c);
    }
    let facts = ResultFacts::of_line(view);
    s.last_result = if facts.is_error_result() {
        LastResult::Error
    } else if facts.stopped_mid_task() {
        LastResult::Incomplete
    } else {
        LastResult::Success
    };
    s.rare(c).result = Some(Box::new(facts));
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
}
