//! Per-session state and its next deadline (crate-private).
//!
//! Times are `u64` nanoseconds since the registry's epoch; [`NEVER`] means "no such instant".
//! Everything here is pure: the registry feeds lines and asks [`Session::next_due`] for the
//! earliest timed event.

use std::time::Duration;

use crate::classify::Signal;
use crate::config::Limits;
use crate::event::{ExtendReason, Kill, KillKind, Outcome, StallClock};
use crate::facts::{ClaudeSessionId, ResultFacts};

/// "No such instant".
pub(crate) const NEVER: u64 = u64::MAX;

/// A duration in saturating nanoseconds.
pub(crate) fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(NEVER)
}

/// `fraction × d` in nanoseconds, saturating; used for `warn_at`.
pub(crate) fn frac_ns(d: u64, fraction: f64) -> u64 {
    let x = d as f64 * fraction;
    if x >= u64::MAX as f64 {
        NEVER
    } else {
        x as u64
    }
}

/// A [`Limits`] converted once to nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct LimitsNs {
    pub startup: u64,
    pub idle: u64,
    pub extended: u64,
    pub no_progress: u64,
    pub linger: u64,
    pub ceiling: u64,
    /// `warn_at` × `idle`, × `extended` and × `no_progress`, precomputed.
    pub warn_idle: u64,
    pub warn_extended: u64,
    pub warn_no_progress: u64,
    pub high_utilization: f64,
}

impl LimitsNs {
    pub(crate) fn new(l: &Limits) -> Self {
        let idle = dur_ns(l.idle());
        let extended = dur_ns(l.extended_idle()).max(idle);
        let no_progress = dur_ns(l.no_progress());
        LimitsNs {
            startup: dur_ns(l.startup()),
            idle,
            extended,
            no_progress,
            linger: dur_ns(l.linger()),
            ceiling: l.ceiling().map_or(NEVER, dur_ns),
            warn_idle: frac_ns(idle, l.warn_at()),
            warn_extended: frac_ns(extended, l.warn_at()),
            warn_no_progress: frac_ns(no_progress, l.warn_at()),
            high_utilization: l.high_utilization(),
        }
    }

    /// Whether `utilization` is at or above this policy's threshold.
    pub(crate) fn is_high(&self, utilization: Option<f64>) -> bool {
        utilization.is_some_and(|u| u >= self.high_utilization)
    }
}

/// Session flags (bits of [`Session::flags`]).
pub(crate) mod flag {
    /// At least one line (or tool boundary) was seen.
    pub const FIRST_LINE: u32 = 1 << 0;
    /// A `result` (or `settle`) came and no progress since.
    pub const SETTLED: u32 = 1 << 1;
    /// The first write tool completed.
    pub const WROTE: u32 = 1 << 2;
    /// `session_state_changed: requires_action` (or an id-less permission request) is open.
    pub const STATE_WAIT: u32 = 1 << 3;
    /// `Extended` was reported in this quiet spell.
    pub const EXT_NOTED: u32 = 1 << 4;
    /// `Stalling{Idle}` was reported in this quiet spell.
    pub const STALL_IDLE: u32 = 1 << 5;
    /// `Stalling{NoProgress}` was reported in this spell without progress.
    pub const STALL_NP: u32 = 1 << 6;
    /// The stream ended (`end`).
    pub const ENDED: u32 = 1 << 7;
    /// The session was killed.
    pub const KILLED: u32 = 1 << 8;
    /// The slot holds a registered session.
    pub const LIVE: u32 = 1 << 9;
    /// [`Cold::rare`](super::Cold::rare) is allocated.
    pub const RARE: u32 = 1 << 10;
    /// [`Cold::cli_session`](super::Cold::cli_session) is known.
    pub const CLI_SID: u32 = 1 << 11;
    /// A permission request is unanswered (`Rare::pending_requests` is not empty).
    pub const REQUESTS: u32 = 1 << 12;
    /// [`Cold::retry_end`](super::Cold::retry_end) may lie after the idle anchor (otherwise
    /// it is irrelevant and reads as 0).
    pub const RETRY: u32 = 1 << 13;
    /// A pause moved the idle anchor: the last line is
    /// [`Cold::pause_or_line`](super::Cold::pause_or_line) (otherwise it is the idle anchor).
    pub const LINE_MOVED: u32 = 1 << 14;
    /// The no-progress anchor was moved (a pause, or the first-line floor): the last progress
    /// is [`Cold::last_progress`](super::Cold::last_progress) (otherwise it is the anchor).
    pub const PROGRESS_MOVED: u32 = 1 << 15;
    /// Filed in the deadline queue's near heap, and the next event moved later since (the
    /// queue re-files the entry when it reaches the heap's top).
    pub const RAISED: u32 = 1 << 16;
    /// An MCP tool call is outstanding (`Rare::mcp_calls` is not empty).
    pub const MCP: u32 = 1 << 17;
    /// The child reads its host's messages on stdin and that input is still open.
    pub const HOST_INPUT: u32 = 1 << 18;
    /// Waiting for the host: settled by a `result` while `HOST_INPUT`, and no `user` message
    /// from the host since. A wait like a human wait (the idle and no-progress clocks stand
    /// still), which also holds the linger.
    pub const HOST_WAIT: u32 = 1 << 19;
    /// The host is stopping the process for a reason of its own (`Registry::stop_clocks`): no
    /// deadline falls due any more; lines still count.
    pub const STOPPING: u32 = 1 << 20;
    /// The session keeps a tally or must be an expected Claude Code session
    /// (`Rare::watched`).
    pub const WATCHED: u32 = 1 << 21;
    /// The host cannot hand the session's output on (`Registry::output_blocked`): the idle
    /// and no-progress deadlines and their warnings do not fall due.
    pub const OUTPUT_BLOCKED: u32 = 1 << 22;
    /// The host may hold unread lines of the session (`Registry::input_pending`): a deadline
    /// that falls due waits for them, at most [`INPUT_HOLD`](crate::config::defaults::INPUT_HOLD).
    pub const INPUT_PENDING: u32 = 1 << 23;
}

/// The last `result` of a session, compactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LastResult {
    None,
    Success,
    Incomplete,
    /// An error result (its facts in [`Rare::result`]).
    Error,
}

/// A cheap hash of a `tool_use` id (word-wise multiply-rotate), to find it among pending ids.
pub(crate) fn id_hash(id: &str) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut h = id.len() as u64;
    let mut chunks = id.as_bytes().chunks_exact(8);
    for w in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(K);
    }
    let mut b = [0u8; 8];
    b[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    (h.rotate_left(5) ^ u64::from_le_bytes(b)).wrapping_mul(K)
}

/// An outstanding MCP tool call.
#[derive(Debug)]
pub(crate) struct PendingMcp {
    /// [`id_hash`] of `id`.
    pub hash: u64,
    /// The `tool_use` id.
    pub id: Box<str>,
    /// The tool, `mcp__<server>__<tool>`.
    pub tool: Box<str>,
    /// When the call started.
    pub started: u64,
    /// The no-progress kill comes no earlier than this (0: no floor).
    pub floor: u64,
}

/// State that most sessions never need, boxed on first use.
#[derive(Debug, Default)]
pub(crate) struct Rare {
    /// `tool_use` ids of write tools not yet answered (only before the first write), each
    /// with its [`id_hash`]: a `tool_result` compares hashes, not boxed strings, so looking
    /// for its id does not chase one pointer per pending write.
    pub pending_writes: Vec<(u64, Box<str>)>,
    /// Open permission requests (`can_use_tool`) by `request_id`.
    pub pending_requests: Vec<Box<str>>,
    /// The facts of the last `result` (kept for every result: they are what the host reports).
    pub result: Option<Box<ResultFacts>>,
    /// The kill, once killed.
    pub kill: Option<Box<Kill>>,
    /// Outstanding MCP tool calls (at most `MAX_PENDING`).
    pub mcp_calls: Vec<PendingMcp>,
    /// What a session registered with a tally or an expected session id keeps (`WATCHED`).
    pub watched: Option<Box<Watched>>,
}

/// What a session keeps beyond its deadlines when its host asked for it
/// ([`SessionConfig::with_tally`](crate::SessionConfig::with_tally),
/// [`SessionConfig::with_expected_session`](crate::SessionConfig::with_expected_session)).
#[derive(Debug, Default)]
pub(crate) struct Watched {
    /// The tally of its work, if kept.
    pub tally: Option<crate::facts::Tally>,
    /// The Claude Code session it must be, if any.
    pub expect: Option<ClaudeSessionId>,
    /// A mismatch was reported (once).
    pub mismatch_reported: bool,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.mcp_calls.is_empty()
            && self.pending_writes.is_empty()
            && self.pending_requests.is_empty()
            && self.result.is_none()
            && self.kill.is_none()
            && self.watched.is_none()
    }
}

/// A timed event of one session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Due {
    Kill(KillKind),
    Extended(ExtendReason),
    /// A clock passed `warn_at`; the second field is that clock's kill instant.
    Stalling(StallClock, u64),
}

/// One session slot's hot state: everything an ordinary line reads or writes, in one cache
/// line (the slot's generation included, so finding the session costs no other access).
/// The rest is in [`Cold`], touched only by rare events (pauses, retries, permission requests,
/// the CLI session id, results, kills). Flags say when a cold field
/// matters, so an ordinary line never reads it.
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub(crate) struct Session {
    /// Registration instant.
    pub started: u64,
    /// Idle clock anchor: the last line, moved forward by human-wait pauses.
    pub idle_anchor: u64,
    /// No-progress clock anchor: the last progress, moved forward by pauses.
    pub progress_anchor: u64,
    /// The last tool boundary.
    pub last_tool: u64,
    /// When the session settled (valid while `SETTLED`).
    pub settled_at: u64,
    /// Where the registry's deadline queue has this session filed (never after its next
    /// event), or [`NEVER`]: a later deadline needs no queue work.
    pub queued: u64,
    /// Index into the registry's limits table.
    pub limits: u32,
    /// The slot's generation (outlives the session: it makes ids unique).
    pub generation: u32,
    pub flags: u32,
    pub last_signal: Option<Signal>,
    pub last_result: LastResult,
}

/// One session slot's cold state (see [`Session`]).
#[derive(Debug, Default)]
pub(crate) struct Cold {
    /// While a human wait is open: when it began. Otherwise, while `LINE_MOVED`: the last line,
    /// real time. (One word serves both: a wait begins only with a line, which clears
    /// `LINE_MOVED`, and only its end sets it.)
    pub pause_or_line: u64,
    /// The last progress, real time (valid while `PROGRESS_MOVED`).
    pub last_progress: u64,
    /// End of the last announced `api_retry` back-off (moved by pauses; valid while `RETRY`).
    pub retry_end: u64,
    /// Claude Code's session id, read from the lines (`CLI_SID`; see [`crate::facts`]).
    pub cli_session: Option<ClaudeSessionId>,
    /// State that most sessions never need (`RARE`).
    pub rare: Option<Box<Rare>>,
}

/// Moves an anchor by the paused time that lies after it: a pause over `[b, e)`.
fn shift(x: u64, b: u64, e: u64) -> u64 {
    if x >= e {
        x
    } else if x <= b {
        x.saturating_add(e - b)
    } else {
        e
    }
}

impl Session {
    pub(crate) fn new(limits: u32, now: u64, generation: u32) -> Self {
        Session {
            started: now,
            idle_anchor: now,
            progress_anchor: now,
            last_tool: now,
            settled_at: 0,
            queued: NEVER,
            limits,
            generation,
            flags: flag::LIVE,
            last_signal: None,
            last_result: LastResult::None,
        }
    }

    /// An empty slot of this generation.
    pub(crate) fn vacant(generation: u32) -> Self {
        Session {
            flags: 0,
            ..Session::new(0, 0, generation)
        }
    }

    pub(crate) fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// The slot holds a registered session.
    pub(crate) fn is_live(&self) -> bool {
        self.has(flag::LIVE)
    }

    /// Ended or killed: no more deadlines, lines are ignored.
    pub(crate) fn is_done(&self) -> bool {
        self.has(flag::ENDED | flag::KILLED)
    }

    /// The rare state, allocated on first use.
    pub(crate) fn rare<'c>(&mut self, c: &'c mut Cold) -> &'c mut Rare {
        self.flags |= flag::RARE;
        c.rare.get_or_insert_with(Box::default)
    }

    /// The rare state, if allocated.
    pub(crate) fn rare_mut<'c>(&self, c: &'c mut Cold) -> Option<&'c mut Rare> {
        if self.has(flag::RARE) {
            c.rare.as_deref_mut()
        } else {
            None
        }
    }

    /// Free the rare state once nothing in it is needed any more.
    pub(crate) fn compact(&mut self, c: &mut Cold) {
        if !self.has(flag::RARE) {
            return;
        }
        let unneeded = match &c.rare {
            Some(r) => r.is_empty(),
            None => true,
        };
        if unneeded {
            c.rare = None;
            self.flags &= !flag::RARE;
        }
    }

    /// Note whether a permission request is unanswered (after `pending_requests` changed).
    pub(crate) fn sync_requests(&mut self, r: &Rare) {
        if r.pending_requests.is_empty() {
            self.flags &= !flag::REQUESTS;
        } else {
            self.flags |= flag::REQUESTS;
        }
    }

    /// Note whether an MCP call is outstanding (after `mcp_calls` changed).
    pub(crate) fn sync_mcp(&mut self, r: &Rare) {
        if r.mcp_calls.is_empty() {
            self.flags &= !flag::MCP;
        } else {
            self.flags |= flag::MCP;
        }
    }

    /// The no-progress floor set by outstanding MCP calls (the latest of theirs), or 0.
    pub(crate) fn mcp_floor(&self, c: &Cold) -> u64 {
        if !self.has(flag::MCP) {
            return 0;
        }
        self.rare_ref(c).map_or(0, |r| {
            r.mcp_calls.iter().map(|m| m.floor).max().unwrap_or(0)
        })
    }

    /// The longest outstanding MCP call, if any.
    pub(crate) fn oldest_mcp<'c>(&self, c: &'c Cold) -> Option<&'c PendingMcp> {
        if !self.has(flag::MCP) {
            return None;
        }
        self.rare_ref(c)?.mcp_calls.iter().min_by_key(|m| m.started)
    }

    fn rare_ref<'c>(&self, c: &'c Cold) -> Option<&'c Rare> {
        c.rare.as_deref().filter(|_| self.has(flag::RARE))
    }

    /// Whether a permission request is unanswered.
    pub(crate) fn has_pending_requests(&self) -> bool {
        self.has(flag::REQUESTS)
    }

    /// The last line, real time.
    pub(crate) fn last_line(&self, c: &Cold) -> u64 {
        if self.has(flag::LINE_MOVED) {
            c.pause_or_line
        } else {
            self.idle_anchor
        }
    }

    /// The last progress, real time.
    pub(crate) fn last_progress(&self, c: &Cold) -> u64 {
        if self.has(flag::PROGRESS_MOVED) {
            c.last_progress
        } else {
            self.progress_anchor
        }
    }

    /// The end of the last announced back-off, or 0 when it cannot matter any more.
    pub(crate) fn retry_end(&self, c: &Cold) -> u64 {
        if self.has(flag::RETRY) {
            c.retry_end
        } else {
            0
        }
    }

    /// Forget a back-off the idle anchor has passed (it can never matter again: both move
    /// together under pauses, and a new back-off ends after the line that announces it).
    pub(crate) fn drop_past_retry(&mut self, c: &Cold) {
        if self.has(flag::RETRY) && self.idle_anchor >= c.retry_end {
            self.flags &= !flag::RETRY;
        }
    }

    /// Move the idle anchor, keeping the real last line.
    fn move_idle_anchor(&mut self, c: &mut Cold, to: u64) {
        if !self.has(flag::LINE_MOVED) {
            c.pause_or_line = self.idle_anchor;
            self.flags |= flag::LINE_MOVED;
        }
        self.idle_anchor = to;
    }

    /// Move the no-progress anchor, keeping the real last progress.
    fn move_progress_anchor(&mut self, c: &mut Cold, to: u64) {
        if !self.has(flag::PROGRESS_MOVED) {
            c.last_progress = self.progress_anchor;
            self.flags |= flag::PROGRESS_MOVED;
        }
        self.progress_anchor = to;
    }

    /// Whether a wait is open: a human wait, or waiting for the host's next message.
    pub(crate) fn paused(&self) -> bool {
        self.has(flag::STATE_WAIT | flag::HOST_WAIT) || self.has_pending_requests()
    }

    /// Settled with the host's input open: the session now waits for its host. Its pause
    /// begins at `now` like a human wait's; after a settle by hand that follows an output
    /// pause (the real last line kept in `pause_or_line`), that earlier instant stays, which
    /// changes nothing: the wait ends with fresh clocks (the host's message, new progress) or
    /// settled (the end of input), where only the linger and the ceiling count.
    pub(crate) fn begin_host_wait(&mut self, c: &mut Cold, now: u64) {
        if self.has(flag::SETTLED) && self.has(flag::HOST_INPUT) && !self.has(flag::HOST_WAIT) {
            let was_paused = self.paused();
            self.flags |= flag::HOST_WAIT;
            if !was_paused && !self.has(flag::LINE_MOVED) {
                c.pause_or_line = now;
            }
        }
    }

    /// The extension of idle patience that holds now, if any. With `extend_factor` 1 there is
    /// never one: patience is the same either way.
    pub(crate) fn extension(&self, l: &LimitsNs, high: bool) -> Option<ExtendReason> {
        if l.extended <= l.idle {
            None
        } else if high {
            Some(ExtendReason::HighUtilization)
        } else if !self.has(flag::WROTE) {
            Some(ExtendReason::PreWrite)
        } else {
            None
        }
    }

    /// Before the first line only startup and the ceiling apply. The no-progress clock runs
    /// from registration, but a cap it passed before it applied kills no earlier than the
    /// first line (only possible when `no_progress` is shorter than `startup`).
    pub(crate) fn first_line_floor(&mut self, c: &mut Cold, now: u64, no_progress: u64) {
        if !self.has(flag::FIRST_LINE) {
            let floor = now.saturating_sub(no_progress);
            if floor > self.progress_anchor {
                self.move_progress_anchor(c, floor);
            }
        }
    }

    /// Any line (or boundary): a sign of life; starts a new idle spell.
    pub(crate) fn note_line(&mut self, now: u64) {
        self.flags |= flag::FIRST_LINE;
        self.flags &= !(flag::EXT_NOTED | flag::STALL_IDLE | flag::LINE_MOVED);
        self.idle_anchor = now;
    }

    /// Progress: also starts a new no-progress spell and un-settles.
    pub(crate) fn note_progress(&mut self, now: u64) {
        self.note_line(now);
        self.flags &= !(flag::STALL_NP | flag::SETTLED | flag::PROGRESS_MOVED);
        self.progress_anchor = now;
    }

    /// An announced back-off: the idle kill cannot come before `now + delay + patience`.
    pub(crate) fn note_retry(&mut self, c: &mut Cold, now: u64, delay: u64) {
        c.retry_end = self.retry_end(c).max(now.saturating_add(delay));
        self.flags |= flag::RETRY;
    }

    /// Begin a human wait (if none is open) at `now`.
    pub(crate) fn begin_wait(&self, c: &mut Cold, now: u64, was_paused: bool) {
        if !was_paused {
            debug_assert!(!self.has(flag::LINE_MOVED), "a wait begins with a line");
            c.pause_or_line = now;
        }
    }

    /// If a wait was open and none is now, end the pause: the idle and no-progress clocks
    /// move by the paused time.
    pub(crate) fn end_wait_if_clear(&mut self, c: &mut Cold, now: u64, was_paused: bool) {
        if was_paused && !self.paused() {
            let b = c.pause_or_line;
            self.shift_clocks(c, b, now.max(b));
        }
    }

    /// Time in `[b, e)` does not count toward the idle and no-progress clocks (the host could
    /// not take the output). No effect while a human wait is open: its own pause covers the
    /// same clocks, and ends by shifting them.
    pub(crate) fn pause_clocks(&mut self, c: &mut Cold, b: u64, e: u64) {
        if !self.paused() && b < e {
            self.shift_clocks(c, b, e);
        }
    }

    fn shift_clocks(&mut self, c: &mut Cold, b: u64, e: u64) {
        self.move_idle_anchor(c, shift(self.idle_anchor, b, e));
        self.move_progress_anchor(c, shift(self.progress_anchor, b, e));
        if self.has(flag::RETRY) && c.retry_end != 0 {
            c.retry_end = shift(c.retry_end, b, e);
        }
    }

    /// The earliest timed event of this session, with its instant.
    ///
    /// `high`: the utilization is at or above this session's threshold; `drop_at`: the last
    /// instant the utilization fell below it (an extension withdrawn then kills no earlier
    /// than then).
    /// `retry_end`: [`Session::retry_end`]; `mcp_floor`: [`Session::mcp_floor`] (the
    /// no-progress kill comes no earlier).
    pub(crate) fn next_due(
        &self,
        l: &LimitsNs,
        high: bool,
        drop_at: u64,
        retry_end: u64,
        mcp_floor: u64,
    ) -> Option<(u64, Due)> {
        if self.is_done() || self.has(flag::STOPPING) {
            return None;
        }
        let mut kill = (self.started.saturating_add(l.ceiling), KillKind::Ceiling);
        let mut take = |t: u64, k: KillKind| {
            if (t, k) < kill {
                kill = (t, k);
            }
        };
        if !self.has(flag::FIRST_LINE) {
            take(self.started.saturating_add(l.startup), KillKind::Startup);
        } else if self.has(flag::SETTLED) {
            // Waiting for the host's next message is not a hang: no linger until its input ends.
            if !self.has(flag::HOST_WAIT) {
                take(self.settled_at.saturating_add(l.linger), KillKind::Linger);
            }
        } else if !self.paused() && !self.has(flag::OUTPUT_BLOCKED) {
            let ext = self.extension(l, high);
            let (patience, warn_after) = if ext.is_some() {
                (l.extended, l.warn_extended)
            } else {
                (l.idle, l.warn_idle)
            };
            let base = self.idle_anchor.max(retry_end);
            let idle_kill = base.saturating_add(patience).max(drop_at);
            let np_kill = self
                .progress_anchor
                .saturating_add(l.no_progress)
                .max(mcp_floor);
            take(idle_kill, KillKind::Idle);
            take(np_kill, KillKind::NoProgress);
            let kill_t = kill.0;
            let mut warn: Option<(u64, Due)> = None;
            let mut offer = |t: u64, d: Due| {
                let earlier = match warn {
                    Some((w, _)) => t < w,
                    None => true,
                };
                if t < kill_t && earlier {
                    warn = Some((t, d));
                }
            };
            if let Some(reason) = ext {
                if !self.has(flag::EXT_NOTED) {
                    offer(base.saturating_add(l.idle), Due::Extended(reason));
                }
            }
            if !self.has(flag::STALL_IDLE) {
                let t = base.saturating_add(warn_after).max(drop_at);
                offer(t, Due::Stalling(StallClock::Idle, idle_kill));
            }
            if !self.has(flag::STALL_NP) {
                let t = self.progress_anchor.saturating_add(l.warn_no_progress);
                offer(t, Due::Stalling(StallClock::NoProgress, np_kill));
            }
            if warn.is_some() {
                return warn;
            }
        }
        (kill.0 != NEVER).then_some((kill.0, Due::Kill(kill.1)))
    }

    /// The terminal outcome as of now.
    pub(crate) fn outcome(&self, c: &Cold) -> Outcome {
        let rare = c.rare.as_deref().filter(|_| self.has(flag::RARE));
        if let Some(k) = rare.and_then(|r| r.kill.as_ref()) {
            return Outcome::Killed { kind: k.kind };
        }
        match self.last_result {
            LastResult::None => Outcome::NoResult,
            LastResult::Success => Outcome::Success,
            LastResult::Incomplete => Outcome::Incomplete,
            LastResult::Error => {
                Outcome::ErrorResult(rare.and_then(|r| r.result.clone()).unwrap_or_default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_moves_anchors_by_the_paused_time_after_them() {
        assert_eq!(shift(10, 20, 50), 40);
        assert_eq!(shift(30, 20, 50), 50);
        assert_eq!(shift(60, 20, 50), 60);
    }

    #[test]
    fn a_session_is_small() {
        assert_eq!(std::mem::size_of::<Session>(), 64);
        assert!(
            std::mem::size_of::<Cold>() <= 48,
            "{}",
            std::mem::size_of::<Cold>()
        );
        // Boxed, and only for sessions that need it: 64 bytes plus the MCP calls' vector and
        // the pointer to what a watched session keeps.
        assert!(
            std::mem::size_of::<Rare>() <= 96,
            "{}",
            std::mem::size_of::<Rare>()
        );
    }
}
