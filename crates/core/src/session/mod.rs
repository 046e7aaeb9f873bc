//! Per-session state and its next deadline (crate-private).
//!
//! Times are `u64` nanoseconds since the registry's epoch; [`NEVER`] means "no such instant".
//! Everything here is pure: the registry feeds lines and asks [`Session::next_due`] for the
//! earliest timed event. One job a file: here the state (a hot cache line, the cold part, the
//! rare part) and what reads it; `limits`: a policy in nanoseconds; `clocks`: what a line, a
//! wait or a pause does to the idle and no-progress anchors; `deadlines`: when each deadline
//! falls due (the idle deadline, its patience and extension, the no-progress cap and its MCP
//! floor, startup, linger, ceiling, the output-blocked bound, the warnings); `work`: what a
//! session waits on that is not a hang (announced back-offs, and the parts of their own:
//! `tasks`, background tasks and each one's clock; `wakeups`, the wakeups it declared;
//! `hooks`, Claude Code's hooks while they run; `asked`, the host's control requests waiting
//! for their answers).

mod asked;
mod clocks;
mod deadlines;
mod extension;
mod hooks;
mod limits;
mod state;
mod tasks;
pub(crate) mod tree;
mod wakeups;
mod work;

pub(crate) use crate::facts::PendingMcp;
pub(crate) use deadlines::{Due, HostDue};
pub(crate) use limits::LimitsNs;
pub(crate) use state::{End, Host, Note, Phase, Said, Set, Side};
pub(crate) use tasks::is_task_line;
pub(crate) use wakeups::WaitTool;
pub(crate) use work::{Retry, Work, WorkDue};

use std::time::Duration;

use crate::classify::Signal;
use crate::event::{Kill, Outcome, Outstanding};
use crate::facts::{ClaudeSessionId, ResultFacts};

/// "No such instant".
pub(crate) const NEVER: u64 = u64::MAX;

/// Milliseconds (a line's number) in saturating nanoseconds.
pub(crate) fn ms_to_ns(ms: f64) -> u64 {
    let ns = ms * 1e6;
    if ns >= u64::MAX as f64 {
        NEVER
    } else {
        ns as u64
    }
}

/// A duration in saturating nanoseconds.
pub(crate) fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(NEVER)
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
    /// What a session registered with a tally or an expected session id keeps ([`Host::Watched`]).
    pub watched: Option<Box<Watched>>,
    /// What the session waits on that is not a hang: an announced back-off storm
    /// ([`Side::Retry`]), background tasks ([`Side::Background`]); allocated on first use,
    /// freed when both are over.
    pub work: Option<Box<Work>>,
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
    /// The host's messages and the top-level results (with a tally only).
    pub turns: crate::facts::Turns,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.mcp_calls.is_empty()
            && self.pending_writes.is_empty()
            && self.pending_requests.is_empty()
            && self.result.is_none()
            && self.kill.is_none()
            && self.watched.is_none()
            && self.work.is_none()
    }
}

/// One session slot's hot state: everything an ordinary line reads or writes, in one cache
/// line (the slot's generation included, so finding the session costs no other access).
/// The rest is in [`Cold`], touched only by rare events (pauses, retries, permission requests,
/// the CLI session id, results, kills): [`Side`] says when a cold field matters, so an
/// ordinary line never reads it.
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
    /// When the session settled (valid while [`Phase::is_settled`]).
    pub settled_at: u64,
    /// Where the registry's deadline queue has this session filed (never after its next
    /// event), or [`NEVER`]: a later deadline needs no queue work.
    pub queued: u64,
    /// Index into the registry's limits table.
    pub limits: u32,
    /// The slot's generation (outlives the session: it makes ids unique).
    pub generation: u32,
    pub phase: Phase,
    pub end: End,
    /// What it was told in its current quiet spell.
    pub said: Set<Said>,
    /// What its host asked for or says of it.
    pub host: Set<Host>,
    /// Which of its cold fields are worth a look.
    pub side: Set<Side>,
    pub note: Set<Note>,
    pub last_signal: Option<Signal>,
    pub last_result: LastResult,
}

/// One session slot's cold state (see [`Session`]).
#[derive(Debug, Default)]
pub(crate) struct Cold {
    /// While a human wait is open: when it began. Otherwise, while [`Side::LineMoved`]: the
    /// last line, real time. (One word serves both: a wait begins only with a line, which
    /// clears `LineMoved`, and only its end sets it.)
    pub pause_or_line: u64,
    /// The last progress, real time (valid while [`Side::ProgressMoved`]).
    pub last_progress: u64,
    /// Claude Code's session id, read from the lines ([`Side::CliSession`]; see
    /// [`crate::facts`]).
    pub cli_session: Option<ClaudeSessionId>,
    /// State that most sessions never need.
    pub rare: Option<Box<Rare>>,
}

impl Cold {
    /// The rare state, allocated on first use.
    pub(crate) fn rare_or_new(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The rare state, if allocated.
    pub(crate) fn rare_mut(&mut self) -> Option<&mut Rare> {
        self.rare.as_deref_mut()
    }

    /// Free the rare state once nothing in it is needed any more.
    pub(crate) fn compact(&mut self) {
        if self.rare.as_deref().is_some_and(Rare::is_empty) {
            self.rare = None;
        }
    }

    /// What the session waits on that is not a hang, if any.
    pub(crate) fn work(&self) -> Option<&Work> {
        self.rare.as_deref()?.work.as_deref()
    }

    /// What the session waits on that is not a hang, if any, to change.
    pub(crate) fn work_mut(&mut self) -> Option<&mut Work> {
        self.rare.as_deref_mut()?.work.as_deref_mut()
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
            phase: Phase::Starting,
            end: End::Open,
            said: Set::EMPTY,
            host: Set::EMPTY,
            side: Set::EMPTY,
            note: Set::EMPTY,
            last_signal: None,
            last_result: LastResult::None,
        }
    }

    /// An empty slot of this generation.
    pub(crate) fn vacant(generation: u32) -> Self {
        Session {
            phase: Phase::Vacant,
            ..Session::new(0, 0, generation)
        }
    }

    /// The slot holds a registered session.
    pub(crate) fn is_live(&self) -> bool {
        self.phase != Phase::Vacant
    }

    /// Ended or killed: no more deadlines, lines are ignored.
    pub(crate) fn is_done(&self) -> bool {
        self.end.is_done()
    }

    /// A line (or its equivalent) was seen: a session that was starting works.
    pub(crate) fn saw_line(&mut self) {
        if self.phase == Phase::Starting {
            self.phase = Phase::Working;
        }
    }

    /// Settled at `now` (by a `result`, or by hand).
    pub(crate) fn settle(&mut self, now: u64) {
        self.phase = Phase::Settled;
        self.settled_at = now;
    }

    /// Note whether a permission request is unanswered (after `pending_requests` changed).
    pub(crate) fn sync_requests(&mut self, r: &Rare) {
        self.side
            .set(Side::Requests, !r.pending_requests.is_empty());
    }

    /// Note whether an MCP call is outstanding (after `mcp_calls` changed).
    pub(crate) fn sync_mcp(&mut self, r: &Rare) {
        self.side.set(Side::Mcp, !r.mcp_calls.is_empty());
    }

    /// The no-progress floor set by outstanding MCP calls (the latest of theirs), or 0.
    pub(crate) fn mcp_floor(&self, c: &Cold) -> u64 {
        if !self.side.has(Side::Mcp) {
            return 0;
        }
        c.rare.as_deref().map_or(0, |r| {
            r.mcp_calls.iter().map(|m| m.floor).max().unwrap_or(0)
        })
    }

    /// The longest outstanding MCP call, if any.
    pub(crate) fn oldest_mcp<'c>(&self, c: &'c Cold) -> Option<&'c PendingMcp> {
        if !self.side.has(Side::Mcp) {
            return None;
        }
        c.rare
            .as_deref()?
            .mcp_calls
            .iter()
            .min_by_key(|m| m.started)
    }

    /// Whether a permission request is unanswered.
    pub(crate) fn has_pending_requests(&self) -> bool {
        self.side.has(Side::Requests)
    }

    /// The last line, real time.
    pub(crate) fn last_line(&self, c: &Cold) -> u64 {
        if self.side.has(Side::LineMoved) {
            c.pause_or_line
        } else {
            self.idle_anchor
        }
    }

    /// The last progress, real time.
    pub(crate) fn last_progress(&self, c: &Cold) -> u64 {
        if self.side.has(Side::ProgressMoved) {
            c.last_progress
        } else {
            self.progress_anchor
        }
    }

    /// The end of the announced back-off storm as the clocks count it, or 0 when none is
    /// under way: the last announced end, but at most `max_backoff` after the storm began.
    pub(crate) fn retry_end(&self, c: &Cold, max_backoff: u64) -> u64 {
        if !self.side.has(Side::Retry) {
            return 0;
        }
        c.work()
            .and_then(|w| w.storm.as_ref())
            .map_or(0, |st| st.end.min(st.since.saturating_add(max_backoff)))
    }

    /// What the session's outstanding work adds to its deadlines: its background tasks'
    /// anchors, its declared wakeups' due times, its host's requests.
    pub(crate) fn work_due(&self, c: &Cold) -> WorkDue {
        if !self.side.has(Side::Background)
            && !self.side.has(Side::Waits)
            && !self.host.has(Host::Asked)
        {
            return WorkDue::NONE;
        }
        let tasks = self.task_anchors(c);
        let (latest, unnoticed) = tasks.unwrap_or((0, NEVER));
        WorkDue {
            tasks: tasks.is_some(),
            task_latest: latest,
            task_unnoticed: unnoticed,
            wakeup: self.wakeup_due(c),
            asked: self.asked_since(c),
            hook_floor: self.hook_floor(c),
        }
    }

    /// What the session has outstanding beyond its own turn at `at`, if anything.
    pub(crate) fn outstanding(&self, c: &Cold, at: u64) -> Option<Outstanding> {
        let o = Outstanding {
            tasks: self.task_notes(c, at),
            wakeups: self.wakeup_notes(c, at),
            requests: self.request_notes(c, at),
        };
        (!o.is_empty()).then_some(o)
    }

    /// The terminal outcome as of now.
    pub(crate) fn outcome(&self, c: &Cold) -> Outcome {
        let rare = c.rare.as_deref();
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
    fn a_session_is_small() {
        assert_eq!(std::mem::size_of::<Session>(), 64);
        // Every session has one: the registry's bytes a session after an hour of traffic
        // (BENCHMARKS.md, ≤ 256 B) count it with the slack of its vector.
        assert!(
            std::mem::size_of::<Cold>() <= 40,
            "{}",
            std::mem::size_of::<Cold>()
        );
        // Boxed, and only for sessions that need it: 64 bytes plus the MCP calls' vector and
        // the pointers to what a watched session keeps and to its work.
        assert!(
            std::mem::size_of::<Rare>() <= 104,
            "{}",
            std::mem::size_of::<Rare>()
        );
    }
}
