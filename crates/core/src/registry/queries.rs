//! The read side: what a host asks of the registry between calls (a session's kill, its
//! Claude Code session id, the last `result`, its tally, a snapshot for a status display, the
//! line counts, the utilization). Nothing here changes state.

use crate::time::Instant;

use crate::classify::{LineKind, Signal};
use crate::event::{ExtendReason, Kill};
use crate::facts::{ClaudeSessionId, ResultFacts, Tally};
use crate::session::{End, Note};
use crate::SessionId;

use super::Registry;

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

impl Registry {
    /// The utilization last set.
    pub fn utilization(&self) -> Option<f64> {
        self.utilization
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

    /// The tally of the session's work, if it keeps one
    /// ([`SessionConfig::with_tally`](crate::SessionConfig::with_tally)).
    pub fn tally(&self, id: SessionId) -> Option<&Tally> {
        let slot = self.slot_of(id)?;
        self.rare_of(slot)?.watched.as_deref()?.tally.as_ref()
    }

    /// The host's messages and the session's top-level results, the unsolicited ones counted
    /// apart ([`Event::UnsolicitedResult`](crate::Event::UnsolicitedResult)), if it keeps a
    /// tally.
    pub fn turns(&self, id: SessionId) -> Option<crate::facts::Turns> {
        let slot = self.slot_of(id)?;
        let w = self.rare_of(slot)?.watched.as_deref()?;
        w.tally.as_ref().map(|_| w.turns)
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
                .phase
                .seen_line()
                .then(|| self.instant_or_epoch(s.last_line(c))),
            last_progress: self.instant_or_epoch(s.last_progress(c)),
            last_tool: self.instant_or_epoch(s.last_tool),
            last_signal: s.last_signal,
            claude_session_id: self.cli_session_of(slot).cloned(),
            settled: s.phase.is_settled(),
            paused: s.paused(),
            wrote: s.note.has(Note::Wrote),
            extension: s.extension(&p.ns, p.ns.is_high(self.utilization)),
            ended: s.end == End::Ended,
            kill: self.rare_of(slot).and_then(|r| r.kill.as_deref().cloned()),
            next_deadline: self.next_of(slot).and_then(|(t, _)| self.instant(t)),
        })
    }

    /// A live slot's rare state, if allocated.
    fn rare_of(&self, slot: u32) -> Option<&crate::session::Rare> {
        self.cold[slot as usize].rare.as_deref()
    }

    /// A live slot's CLI session id, if known.
    fn cli_session_of(&self, slot: u32) -> Option<&ClaudeSessionId> {
        self.cold[slot as usize].cli_session.as_ref()
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
