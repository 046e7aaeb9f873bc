//! The line side: what a stdout line, a stdin line or a tool boundary changes in a session.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

use crate::classify::{classify, Class, LineKind, Signal};
use crate::config::Limits;
use crate::dialect::{self, Written};
use crate::event::{Event, SessionId};
use crate::facts::{ClaudeSessionId, LiveNews, ResultFacts};
use crate::session::{
    id_hash, is_task_line, Cold, Host, LastResult, Note, Phase, Retry, Session, Side, WaitTool,
};
use crate::view::{ContentBlock, LineView};

use super::mcp_calls::{begin_mcp, end_mcp, read_heartbeat};
use super::{make_id, Registry, MAX_PENDING};

impl Registry {
    /// Feed one parsed stdout line of session `id`; returns its class. Unknown ids are ignored
    /// (the class is still returned). Lines of an ended or killed session change nothing.
    pub fn observe(&mut self, now: Instant, id: SessionId, line: &LineView<'_>) -> Class {
        // Find the session first: its cache line (a likely miss among many sessions) then loads
        // while the line is classified.
        let slot = self.slot_of(id);
        let class = classify(line);
        self.feed(now, slot, Some(line), class, false)
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
        self.feed(now, slot, line, class, true)
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

    /// Feed one message the host classified itself, by a contract of its own (the in-process
    /// Node API keeps the reference package's: the wasm crate's `reference` preset). It counts
    /// as a line of that class with no content: its signal moves the clocks, its kind is
    /// counted, but no tool id, result or session id is read from it (feed a line for those).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::{Class, Event, LineKind, Limits, Registry, SessionConfig, Signal};
    /// let t0 = Instant::now();
    /// let s = Duration::from_secs;
    /// let limits = Limits::default().with_idle(s(60)).unwrap().with_extend_factor(1.0).unwrap();
    /// let mut reg = Registry::new(limits);
    /// let id = reg.register(t0, SessionConfig::default());
    /// let frame = Class { signal: Signal::Progress, kind: LineKind::StreamEvent };
    /// reg.observe_class(t0 + s(50), id, frame);
    /// reg.handle_timeout(t0 + s(109));
    /// assert!(reg.kill(id).is_none(), "the frame at 50 s moved the idle clock");
    /// reg.handle_timeout(t0 + s(110));
    /// assert_eq!(reg.kill(id).unwrap().at, t0 + s(110));
    /// ```
    pub fn observe_class(&mut self, now: Instant, id: SessionId, class: Class) {
        let slot = self.slot_of(id);
        self.feed(now, slot, None, class, false);
    }

    /// `slot`: the session's slot, from [`Registry::slot_of`] (running due events does not
    /// change which slots are live). `class`: the line's Claude Code class; a session given a
    /// dialect reads it in its own ([`Registry::dialect_class`]). `waited`: the line counts
    /// before what is due at `now` ([`Registry::observe_waited`]). The line is read once,
    /// here: for the deadlines, then for what a watched session keeps (its tally, its expected
    /// id) and for the rate limits. Returns the line's class.
    pub(super) fn feed(
        &mut self,
        now: Instant,
        slot: Option<u32>,
        line: Option<&LineView<'_>>,
        class: Class,
        waited: bool,
    ) -> Class {
        let class = match (slot, line) {
            (Some(slot), Some(view)) if self.session(slot).host.has(Host::Dialect) => {
                self.dialect_class(slot, view, class)
            }
            _ => class,
        };
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
            return class;
        };
        let id = make_id(slot, self.session(slot).generation);
        // The queue was settled with nothing due at `t`; unless this line changed it (or it
        // waited past something due, which runs now), it still is.
        let changed = !self.session(slot).is_done() && self.feed_policy(slot, id, t, line, class);
        if changed || due_after {
            self.run_due(t);
        }
        if self.session(slot).host.has(Host::Watched) {
            self.watch_line(slot, id, line, class);
        }
        if let (LineKind::RateLimit, Some(view)) = (class.kind, line) {
            let t = self.now;
            self.note_rate_limit(t, id, view);
        }
        // A line that waited past a window's reset (nothing else brings the reset now).
        let t = self.now;
        self.run_rate_limit_due(t);
        class
    }

    /// What a watched session keeps: its tally sees every line (those printed while it is
    /// stopped too), with what it reports when the session asked for live facts
    /// (`facts::live`), and its first top-level `system/init` with another id than
    /// the expected one is reported.
    fn watch_line(&mut self, slot: u32, id: SessionId, line: Option<&LineView<'_>>, class: Class) {
        let (epoch, t) = (self.epoch, self.now);
        let s = &self.slots[slot as usize];
        let Cold {
            rare, cli_session, ..
        } = &mut self.cold[slot as usize];
        let Some(r) = rare.as_deref_mut() else {
            return;
        };
        let Some(w) = r.watched.as_deref_mut() else {
            return;
        };
        match (&mut w.tally, epoch) {
            (Some(tally), Some(epoch)) if tally.is_live() => {
                // What only the registry knows, for the live facts (crate::facts::live).
                let cx = crate::facts::LineContext {
                    now: epoch + Duration::from_nanos(t),
                    epoch,
                    waiting_on_person: s.paused(),
                    mcp_calls: &r.mcp_calls,
                    session: cli_session.as_ref(),
                };
                let news = tally.observe_in(line, class, &cx);
                queue_news(&mut self.events, id, news);
            }
            (Some(tally), _) => tally.observe(line, class),
            (None, _) => {}
        }
        let Some(view) = line else { return };
        if class.kind == LineKind::Result
            && view.parent_tool_use_id().is_none()
            && w.tally.is_some()
            && w.turns.result()
        {
            self.events.push_back(Event::UnsolicitedResult {
                id,
                results: w.turns.results,
                messages: w.turns.messages,
            });
        }
        let init = class.kind == LineKind::System
            && view.parent_tool_use_id().is_none()
            && view.subtype().as_deref() == Some("init");
        let Some(expected) = w.expect.as_ref().filter(|_| init && !w.mismatch_reported) else {
            return;
        };
        let got = ClaudeSessionId::of_line(view);
        if got.as_ref() != Some(expected) {
            w.mismatch_reported = true;
            let expected = expected.clone();
            self.events
                .push_back(Event::SessionMismatch { id, expected, got });
        }
    }

    /// What the line at `t` does to the deadlines of the live session `id` (in `slot`).
    /// Returns whether its deadline queue changed (what is due then runs).
    fn feed_policy(
        &mut self,
        slot: u32,
        id: SessionId,
        t: u64,
        line: Option<&LineView<'_>>,
        class: Class,
    ) -> bool {
        let policy = self.session(slot).limits;
        let mut settled_now = false;
        let wall = self.rate.wall_at(t);
        {
            let entry = self.policies.get(policy);
            let limits = &entry.limits;
            let s = &mut self.slots[slot as usize];
            let c = &mut self.cold[slot as usize];
            s.first_line_floor(c, t, entry.ns.no_progress);
            let was_paused = s.paused();
            s.last_signal = Some(class.signal);
            match class.signal {
                // After its result, the session's background tasks work on: their lines keep
                // it settled (its own turn is over); with none left outstanding (the lines
                // that report a task's end), the waiting rules start again from them.
                Signal::Progress if s.phase.is_settled() && line.is_some_and(is_task_line) => {
                    s.note_background_progress(t);
                    if !s.side.has(Side::Background) {
                        s.settled_at = t;
                    }
                }
                Signal::Progress => s.note_progress(t),
                Signal::KeepAlive | Signal::HumanWait | Signal::Settle => s.note_line(t),
            }
            s.drop_past_retry(c);
            let mut background_ended = false;
            if let Some(view) = line {
                read_session_id(s, c, view, class.kind);
                if s.side.has(Side::Background) {
                    // A background task's own line: a sign of its life.
                    s.note_task_line(c, view, t);
                }
                match class.kind {
                    LineKind::Assistant | LineKind::User => {
                        read_tools(s, c, view, limits, t, wall);
                    }
                    LineKind::ToolProgress => read_heartbeat(s, c, view, limits.mcp(), t),
                    LineKind::ApiRetry => s.note_retry(c, t, Retry::of_line(view)),
                    LineKind::System => {
                        if let Some(sub) = view.subtype() {
                            background_ended = s.read_background(c, &sub, view, t);
                            read_system_rest(s, c, &sub, view, t);
                        }
                    }
                    LineKind::ControlResponse if s.host.has(Host::Asked) => {
                        if let Some(rid) = view.request_id() {
                            s.note_answer(c, &rid, true, t);
                        }
                    }
                    LineKind::Unknown if s.side.has(Side::Waits) => {
                        read_lifecycle(s, c, view, t);
                    }
                    LineKind::SessionState => match view.state().as_deref() {
                        Some("requires_action") => s.note.insert(Note::RequiresAction),
                        Some("running" | "idle") if !s.has_pending_requests() => {
                            s.note.remove(Note::RequiresAction);
                        }
                        _ => {}
                    },
                    LineKind::ControlRequest if class.signal == Signal::HumanWait => {
                        match view.request_id() {
                            Some(rid) => {
                                let r = c.rare_or_new();
                                if r.pending_requests.len() < MAX_PENDING {
                                    r.pending_requests.push(rid.into());
                                }
                                s.sync_requests(r);
                            }
                            None => s.note.insert(Note::RequiresAction),
                        }
                    }
                    LineKind::ControlCancel => {
                        if let Some(rid) = view.request_id() {
                            answer(s, c, &rid);
                        }
                    }
                    // opencode's `done` after its last step: that step said how the turn went.
                    LineKind::Done if s.last_result != LastResult::None => {}
                    // A `result`, or another dialect's end of a turn (Codex's, opencode's last
                    // step or error).
                    kind if class.signal == Signal::Settle => {
                        read_result(s, c, ResultFacts::of_end(view, kind));
                    }
                    LineKind::ItemStarted | LineKind::ItemCompleted | LineKind::ToolUse => {
                        read_dialect_tool(s, c, view, class.kind, limits, t);
                    }
                    _ => {}
                }
            }
            if class.signal == Signal::HumanWait {
                s.begin_wait(c, t, was_paused);
            }
            // Background work began: the session no longer waits for its host (progress
            // un-settled it already).
            if s.phase == Phase::WaitingForHost && s.side.has(Side::Background) {
                s.phase = Phase::Settled;
            }
            s.end_wait_if_clear(c, t, was_paused);
            if class.signal == Signal::Settle && !s.phase.is_settled() {
                s.settle(t);
                settled_now = true;
            } else if background_ended && s.phase.is_settled() {
                // The last background task ended after the result: the waiting rules apply
                // from now.
                s.settled_at = t;
            }
            s.begin_host_wait(c, t);
        }
        if let (true, Some(view)) = (self.session(slot).host.has(Host::Tree), line) {
            self.note_tree_line(slot, view, class, t);
        }
        if settled_now {
            self.events.push_back(Event::Settled { id });
        }
        self.reschedule(slot)
    }
}

/// The CLI's session id ([`crate::facts`]): the first valid one seen, replaced by each line
/// that names the session afresh (Claude Code's `system/init`, Codex's `thread.started`).
/// Once it is known, only such lines are read again.
fn read_session_id(s: &mut Session, c: &mut Cold, view: &LineView<'_>, kind: LineKind) {
    let init = dialect::names_session(view, kind);
    if s.side.has(Side::CliSession) && !init {
        return;
    }
    if let Some(sid) = ClaudeSessionId::of_dialect_line(view, kind) {
        if c.cli_session.as_ref() != Some(&sid) {
            s.side.insert(Side::CliSession);
            c.cli_session = Some(sid);
        }
    }
}

/// What else a `system` line of subtype `sub` at `t` says: a hook runs from its
/// `hook_started` to its `hook_response`; a top-level `init` (a turn begins) fires the
/// declared wakeups due by then; a `control_request_progress` restarts the clock of the host's
/// request it names.
fn read_system_rest(s: &mut Session, c: &mut Cold, sub: &str, view: &LineView<'_>, t: u64) {
    match sub {
        "hook_started" => s.read_hook(c, sub, view, t),
        "hook_response" if s.side.has(Side::Waits) => s.read_hook(c, sub, view, t),
        "init" if s.side.has(Side::Waits) && view.parent_tool_use_id().is_none() => {
            s.read_wakeup_fired(c, t, false);
        }
        "control_request_progress" if s.host.has(Host::Asked) => {
            if let Some(rid) = view.member("request_id").and_then(|f| f.as_str()) {
                s.note_answer(c, &rid, false, t);
            }
        }
        _ => {}
    }
}

/// A top-level `command_lifecycle` line with `state: "started"` at `t`: Claude Code starts a
/// turn it scheduled itself (a wakeup, a cron job): the wakeup due first fired.
fn read_lifecycle(s: &mut Session, c: &mut Cold, view: &LineView<'_>, t: u64) {
    let started = view.kind().as_deref() == Some("command_lifecycle")
        && view.parent_tool_use_id().is_none()
        && view.state().as_deref() == Some("started");
    if started {
        s.read_wakeup_fired(c, t, true);
    }
}

/// The first write landed: the pre-write extension ends.
pub(super) fn wrote(s: &mut Session, c: &mut Cold) {
    s.note.insert(Note::Wrote);
    if let Some(r) = c.rare_mut() {
        r.pending_writes = Vec::new();
        c.compact();
    }
}

/// A permission request was answered (or cancelled).
pub(super) fn answer(s: &mut Session, c: &mut Cold, rid: &str) {
    let Some(r) = c.rare_mut() else {
        return;
    };
    let before = r.pending_requests.len();
    r.pending_requests.retain(|p| &**p != rid);
    let cleared = before > 0 && r.pending_requests.is_empty();
    s.sync_requests(r);
    if cleared {
        s.note.remove(Note::RequiresAction);
    }
    c.compact();
}

/// Tool boundaries and write completion from `assistant` / `user` content blocks, and the
/// top-level calls that declare a wait and their results (`wall`: the wall clock at `t`, if
/// the registry's is anchored).
fn read_tools(
    s: &mut Session,
    c: &mut Cold,
    view: &LineView<'_>,
    limits: &Limits,
    t: u64,
    wall: Option<u64>,
) {
    let mut removed = false;
    view.for_each_block(|b| match b {
        ContentBlock::ToolUse { id, name } => {
            s.last_tool = t;
            if crate::mcp::is_mcp_tool(&name) {
                begin_mcp(s, c, &id, &name, t, limits.mcp());
            } else if WaitTool::of_name(&name).is_some() && view.parent_tool_use_id().is_none() {
                s.note_wait_call(c, &id, &name);
            }
            if !s.note.has(Note::Wrote) && limits.is_write_tool(&name) {
                let pending = &mut c.rare_or_new().pending_writes;
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
            if s.side.has(Side::Mcp) {
                removed |= end_mcp(s, c, &tool_use_id);
            }
            if s.side.has(Side::Waits) {
                s.read_wait_result(c, view, &tool_use_id, is_error, t, wall);
            }
            if s.note.has(Note::Wrote) {
                return;
            }
            let Some(r) = c.rare_mut() else {
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
        c.compact();
    }
}

/// A tool call of another dialect began or ended (Codex's items, opencode's `tool_use`): a
/// tool boundary; a completed write (a Codex `file_change`, an opencode call of a write tool,
/// its name compared without case) ends the pre-write extension.
fn read_dialect_tool(
    s: &mut Session,
    c: &mut Cold,
    view: &LineView<'_>,
    kind: LineKind,
    limits: &Limits,
    t: u64,
) {
    let (edge, written) = dialect::tool_facts(view, kind);
    if kind == LineKind::ToolUse || edge.is_some() {
        s.last_tool = t;
    }
    if s.note.has(Note::Wrote) {
        return;
    }
    let wrote_now = match written {
        Some(Written::Files) => true,
        Some(Written::Tool(name)) => limits
            .write_tools()
            .iter()
            .any(|w| w.eq_ignore_ascii_case(&name)),
        None => false,
    };
    if wrote_now {
        wrote(s, c);
    }
}

/// Remember the last `result`'s verdict (`facts`: a Claude Code `result`'s, or another
/// dialect's end of a turn).
fn read_result(s: &mut Session, c: &mut Cold, facts: ResultFacts) {
    // The turn is over: no MCP call is outstanding any more.
    if let Some(r) = c.rare_mut() {
        r.mcp_calls = Vec::new();
        s.sync_mcp(r);
        c.compact();
    }
    s.last_result = if facts.is_error_result() {
        LastResult::Error
    } else if facts.stopped_mid_task() {
        LastResult::Incomplete
    } else {
        LastResult::Success
    };
    c.rare_or_new().result = Some(Box::new(facts));
}

/// Queue what a live session's line made news of: its session id, the MCP calls outstanding,
/// and the spell it ended, added to the queue's last event when that is the same session's
/// [`Event::QuietSpells`] not yet polled (the lines of one batch share one event).
fn queue_news(events: &mut VecDeque<Event>, id: SessionId, news: LiveNews) {
    if let Some(session) = news.session {
        events.push_back(Event::SessionIdentified { id, session });
    }
    if let Some(spell) = news.spell {
        match events.back_mut() {
            Some(Event::QuietSpells { id: last, spells }) if *last == id => spells.push(spell),
            _ => {
                // Room for the spells of a typical batch: a batch costs one allocation.
                let mut spells = Vec::with_capacity(16);
                spells.push(spell);
                events.push_back(Event::QuietSpells { id, spells });
            }
        }
    }
    if let Some(calls) = news.mcp {
        events.push_back(Event::McpCalls { id, calls });
    }
}
