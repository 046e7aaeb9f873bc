//! How one run ended: the one record of it ([`RunRecord`]).

use crate::classify::LineKind;
use crate::event::{Kill, Outcome};
use crate::facts::{ClaudeSessionId, ResultFacts, Tally};
use crate::rate_limit::RateLimitMonitor;

/// How far a host's kill ladder went (the supervisor's; an in-process session has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Stage {
    /// An `interrupt` control request was written to stdin (and stdin closed).
    Interrupt,
    /// SIGTERM was sent to the process group.
    Term,
    /// SIGKILL was sent to the group and every remaining descendant.
    Kill,
}

impl Stage {
    /// `interrupt`, `term` or `kill`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Interrupt => "interrupt",
            Stage::Term => "term",
            Stage::Kill => "kill",
        }
    }
}

/// How the process ended: its exit code, or the signal that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChildExit {
    /// The exit code, if it exited.
    pub code: Option<i32>,
    /// The signal number, if a signal ended it.
    pub signal: Option<i32>,
}

impl ChildExit {
    /// Its status as a shell reports it: the code, or `128 + N` for signal N.
    ///
    /// ```
    /// use watchdog_core::ChildExit;
    /// assert_eq!(ChildExit { code: Some(3), signal: None }.status(), Some(3));
    /// assert_eq!(ChildExit { code: None, signal: Some(9) }.status(), Some(137));
    /// ```
    pub fn status(self) -> Option<i32> {
        self.code.or(self.signal.map(|s| 128 + s))
    }
}

/// Stdout lines counted by kind ([`LineKind`]), each line once, and the over-long lines
/// (counted there only: a line delivered in pieces is not one of its kinds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineCounts {
    by_kind: [u64; LineKind::ALL.len()],
    overlong: u64,
}

impl LineCounts {
    /// The count of one kind.
    pub fn get(&self, kind: LineKind) -> u64 {
        self.by_kind[kind.index()]
    }
    /// Lines counted by kind, in all (the over-long ones are not among them).
    pub fn total(&self) -> u64 {
        self.by_kind.iter().sum()
    }
    /// Count one line of `kind`.
    pub fn add(&mut self, kind: LineKind) {
        self.by_kind[kind.index()] += 1;
    }
    /// Count one over-long line.
    pub fn add_overlong(&mut self) {
        self.overlong += 1;
    }
    /// Over-long lines.
    pub fn overlong(&self) -> u64 {
        self.overlong
    }
    /// Non-zero counts, in [`LineKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (LineKind, u64)> + '_ {
        LineKind::ALL
            .iter()
            .map(|&k| (k, self.get(k)))
            .filter(|&(_, n)| n > 0)
    }
    /// The process printed stream-json: a line of a known Claude Code message type.
    pub fn has_stream_json(&self) -> bool {
        self.iter()
            .any(|(k, _)| !matches!(k, LineKind::Unknown | LineKind::Unparseable))
    }
    /// Not one stdout line, whole or over-long.
    pub fn is_empty(&self) -> bool {
        self.total() == 0 && self.overlong == 0
    }
}

impl From<[u64; LineKind::ALL.len()]> for LineCounts {
    /// Counts by kind, indexed by [`LineKind::index`] (none over-long).
    fn from(by_kind: [u64; LineKind::ALL.len()]) -> Self {
        LineCounts {
            by_kind,
            overlong: 0,
        }
    }
}

/// How one run ended: the one record of it.
///
/// The observer decides most of it and hands it over at the session's end
/// ([`Registry::finish`](crate::Registry::finish)): the outcome, the watchdog's kill, Claude
/// Code's session id, the last `result`, the tally of the work and the rate-limit readings.
/// The host that ran the process adds what only it knows, each fact once: how far its kill
/// ladder went ([`RunRecord::stage`]), how the process ended ([`RunRecord::exit`]) and the
/// stdout lines it read ([`RunRecord::lines`]; the observer sees a piece of an over-long line
/// as one more keep-alive, the reader knows it is part of one line). The supervisor's report
/// and replay's verdict carry this value; `run` adds only what it did itself (a forwarded
/// signal, an output error, a recovery).
///
/// ```
/// use std::time::Instant;
/// use watchdog_core::{ChildExit, Limits, Outcome, Registry, SessionConfig};
/// let t0 = Instant::now();
/// let mut registry = Registry::new(Limits::default());
/// let id = registry.register(t0, SessionConfig::default().with_tally(true));
/// registry.observe_line(t0, id, br#"{"type":"system","subtype":"init","session_id":"s1"}"#);
/// registry.observe_line(t0, id, br#"{"type":"result","subtype":"success","is_error":false,"num_turns":3}"#);
/// let mut record = registry.finish(t0, id).unwrap();
/// record.exit = Some(ChildExit { code: Some(0), signal: None }); // what the host saw
/// assert_eq!(record.outcome, Outcome::Success);
/// assert_eq!(record.session_id.as_ref().map(|s| s.as_str()), Some("s1"));
/// assert_eq!(record.num_turns(), 3);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunRecord {
    /// How the session ended by the core's rules (a kill included).
    pub outcome: Outcome,
    /// The watchdog's kill, if it killed the session.
    pub kill: Option<Kill>,
    /// How far the host's kill ladder went, if it ran one (the host's).
    pub stage: Option<Stage>,
    /// The CLI's session id, as read from the lines ([`crate::facts`]: Claude Code's `session_id`,
    /// Codex's `thread_id`, opencode's `sessionID`).
    pub session_id: Option<ClaudeSessionId>,
    /// The facts of the last `result` line, if one came.
    pub result: Option<ResultFacts>,
    /// The tally of the work (empty unless the session kept one:
    /// [`SessionConfig::with_tally`](crate::SessionConfig::with_tally)).
    pub tally: Tally,
    /// The rate-limit readings of the registry's sessions, merged.
    pub rate_limits: RateLimitMonitor,
    /// Stdout lines by kind, as the host that read them counted them (the host's).
    pub lines: LineCounts,
    /// How the process ended, if it was seen to (the host's).
    pub exit: Option<ChildExit>,
    /// What the samples of the process tree said (the peak memory among them, the samples
    /// that failed); `None` for a session whose host does not sample its tree.
    pub tree: Option<crate::evidence::TreeFacts>,
    /// The host's receipt of the tree it stopped, at a kill or after the child left
    /// processes running (the host's; [`crate::evidence::Receipt`]).
    pub receipt: Option<crate::evidence::Receipt>,
    /// What the session still had outstanding beyond its own turn when it ended: background
    /// tasks that never reported their end, declared wakeups that never fired (a success
    /// with one is a run that ended before its scheduled work: `claude -p` drops a
    /// `CronCreate` job at exit), the host's control requests never answered.
    pub outstanding: crate::event::Outstanding,
    /// The host's messages and the session's top-level results (unsolicited ones apart), for
    /// a session that kept a tally.
    pub turns: crate::facts::Turns,
    /// The dialect its lines were read in ([`crate::Dialect`]: Claude Code's unless the
    /// host gave another or the lines chose one).
    pub dialect: crate::Dialect,
}

impl RunRecord {
    /// A record of what the observer decided; the host's fields empty.
    pub(crate) fn observed(
        outcome: Outcome,
        kill: Option<Kill>,
        session_id: Option<ClaudeSessionId>,
        result: Option<ResultFacts>,
        tally: Tally,
        rate_limits: RateLimitMonitor,
    ) -> Self {
        RunRecord {
            outcome,
            kill,
            stage: None,
            session_id,
            result,
            tally,
            rate_limits,
            lines: LineCounts::default(),
            exit: None,
            tree: None,
            receipt: None,
            outstanding: crate::event::Outstanding::default(),
            turns: crate::facts::Turns::default(),
            dialect: crate::Dialect::Claude,
        }
    }

    /// The record of a run nothing was observed of (a host without a policy, or one whose
    /// observer's end was lost): no result, no facts.
    pub fn unobserved() -> Self {
        RunRecord::observed(
            Outcome::NoResult,
            None,
            None,
            None,
            Tally::default(),
            RateLimitMonitor::new(crate::rate_limit::RateLimitConfig::default()),
        )
    }

    /// The `num_turns` a report gives: the `result`'s, else the turns the tally counted.
    pub fn num_turns(&self) -> u64 {
        self.tally.num_turns(self.result.as_ref())
    }
}
