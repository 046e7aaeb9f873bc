//! What the registry reports: kills, extensions, stalling warnings, settles and ends.

use std::time::Duration;

use crate::time::Instant;

use crate::classify::Signal;
use crate::facts::ResultFacts;

/// Identifies one registered session. Ids are never reused within a registry (the slot and a
/// generation are encoded in it); only [`Registry::register`](crate::Registry::register)
/// makes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(u64);

impl SessionId {
    pub(crate) const fn new(raw: u64) -> Self {
        SessionId(raw)
    }

    /// The id as a number (for logs and maps; it cannot be turned back into an id).
    pub const fn as_u64(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// Why a session was killed. When several deadlines fall on the same instant, the kind
/// reported is the first of this list in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum KillKind {
    /// Total age reached the ceiling. Checked first; wins over everything.
    Ceiling,
    /// No line at all since the session was registered.
    Startup,
    /// A `result` came, then nothing new, and the stream never ended.
    Linger,
    /// No progress and no keep-alive for the idle patience.
    Idle,
    /// Keep-alives kept coming but no progress for the no-progress cap.
    NoProgress,
    /// The host's reader took no byte for the output-blocked bound while output waited for
    /// it ([`reader_wait`](crate::reader_wait)): a stop the host decides where it writes,
    /// never one of the registry's deadlines.
    OutputBlocked,
    /// The process tree's resident memory stayed above the memory guard
    /// ([`Limits::max_rss`](crate::Limits::max_rss)).
    Memory,
    /// No line for the idle patience while background tasks were outstanding, each of them
    /// silent past its own deadline ([`Limits::task_silence`](crate::Limits::task_silence)):
    /// the session waited on a task that will not report back (its notification was lost, or
    /// it died without one). Its receipt names the tasks ([`Kill::outstanding`]).
    TaskSilent,
    /// After its `result`, a wakeup the session declared (`ScheduleWakeup`, a `CronCreate`
    /// job) was due and did not fire within the idle patience: a bounded wait that came to
    /// nothing ([`Kill::outstanding`] names it).
    WakeupMissed,
    /// The host's control request (an `interrupt`, `get_context_usage`,
    /// `set_permission_mode`, …) went unanswered for
    /// [`Limits::control_timeout`](crate::Limits::control_timeout): an SDK host would wait
    /// for ever ([`Kill::outstanding`] names the request).
    Unanswered,
}

impl KillKind {
    /// Every kind, in declaration order (the order ties are broken in).
    pub const ALL: [KillKind; 10] = [
        KillKind::Ceiling,
        KillKind::Startup,
        KillKind::Linger,
        KillKind::Idle,
        KillKind::NoProgress,
        KillKind::OutputBlocked,
        KillKind::Memory,
        KillKind::TaskSilent,
        KillKind::WakeupMissed,
        KillKind::Unanswered,
    ];

    /// Snake-case name: `ceiling`, `startup`, `linger`, `idle`, `no_progress`,
    /// `output_blocked`, `memory`, `task_silent`, `wakeup_missed`, `unanswered`.
    pub fn as_str(self) -> &'static str {
        match self {
            KillKind::Ceiling => "ceiling",
            KillKind::Startup => "startup",
            KillKind::Linger => "linger",
            KillKind::Idle => "idle",
            KillKind::NoProgress => "no_progress",
            KillKind::OutputBlocked => "output_blocked",
            KillKind::Memory => "memory",
            KillKind::TaskSilent => "task_silent",
            KillKind::WakeupMissed => "wakeup_missed",
            KillKind::Unanswered => "unanswered",
        }
    }
}

impl std::fmt::Display for KillKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why idle patience was extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExtendReason {
    /// Rate-limit utilization is at or above `high_utilization` (wins when both hold).
    HighUtilization,
    /// No write tool has completed yet: reading and planning are quiet.
    PreWrite,
}

impl ExtendReason {
    /// Snake-case name: `high_utilization` or `pre_write`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtendReason::HighUtilization => "high_utilization",
            ExtendReason::PreWrite => "pre_write",
        }
    }
}

/// Which clock is running out in a [`Event::Stalling`] warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StallClock {
    /// The idle clock (no line at all).
    Idle,
    /// The no-progress clock (keep-alives only).
    NoProgress,
}

impl StallClock {
    /// Both clocks, in report order.
    pub const ALL: [StallClock; 2] = [StallClock::Idle, StallClock::NoProgress];

    /// Snake-case name: `idle`, `no_progress` (the metrics' and telemetry's `clock` label).
    pub fn as_str(self) -> &'static str {
        match self {
            StallClock::Idle => "idle",
            StallClock::NoProgress => "no_progress",
        }
    }
}

/// A kill decision with the facts that explain it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Kill {
    /// The killed session.
    pub id: SessionId,
    /// Why.
    pub kind: KillKind,
    /// The instant of the kill (exactly the deadline).
    pub at: Instant,
    /// Age of the session at the kill.
    pub elapsed: Duration,
    /// Time since the last progress line (or since registration).
    pub since_progress: Duration,
    /// Time since the last keep-alive or progress line (or since registration).
    pub since_keepalive: Duration,
    /// Time since the last tool boundary (tool_use, tool_result or `tool_boundary`), or since
    /// registration.
    pub since_tool: Duration,
    /// The signal of the last line seen, if any.
    pub last_signal: Option<Signal>,
    /// The utilization known at the kill.
    pub utilization: Option<f64>,
    /// The extension that held at the kill, if any.
    pub extension: Option<ExtendReason>,
    /// The MCP tool call outstanding at the kill (the longest outstanding one), if any: what
    /// hung.
    pub mcp_call: Option<McpCall>,
    /// How long the host had been unable to hand the session's output on, when it was at the
    /// kill (a reader that stopped reading).
    pub output_blocked: Option<Duration>,
    /// The announced API retries (`system/api_retry`) under way at the kill, if any: the API
    /// was failing (overloaded, rate limited), not the session.
    pub backoff: Option<Box<Backoff>>,
    /// What the process tree said, for a session whose host samples it
    /// ([`Registry::observe_tree`](crate::Registry::observe_tree)): the tool outstanding,
    /// the process the kill names, whether a busy tool held the kill, the memory.
    pub tree: Option<Box<crate::evidence::TreeEvidence>>,
    /// What the session had outstanding beyond its own turn at the kill, if anything: its
    /// background tasks, the wakeups it declared, the host's unanswered control requests.
    pub outstanding: Option<Box<Outstanding>>,
}

impl Kill {
    /// A kill of session `id` for `kind` at `at` with no other facts (zero durations, nothing
    /// outstanding): for a host that states a kill itself (a test, a replayed record); set the
    /// facts it knows on the value.
    pub fn new(id: SessionId, kind: KillKind, at: Instant) -> Kill {
        Kill {
            id,
            kind,
            at,
            elapsed: Duration::ZERO,
            since_progress: Duration::ZERO,
            since_keepalive: Duration::ZERO,
            since_tool: Duration::ZERO,
            last_signal: None,
            utilization: None,
            extension: None,
            mcp_call: None,
            output_blocked: None,
            backoff: None,
            tree: None,
            outstanding: None,
        }
    }
}

/// What a session had outstanding beyond its own turn: its background tasks, the wakeups it
/// declared, the host's control requests not yet answered. At a kill ([`Kill::outstanding`])
/// and at the end of a run ([`RunRecord::outstanding`](crate::RunRecord::outstanding)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outstanding {
    /// The background tasks not yet ended, the one silent longest first.
    pub tasks: Vec<TaskNote>,
    /// The declared wakeups not yet fired, the one due first first.
    pub wakeups: Vec<WakeupNote>,
    /// The host's control requests not yet answered, the oldest first.
    pub requests: Vec<RequestNote>,
}

impl Outstanding {
    /// Nothing outstanding.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.wakeups.is_empty() && self.requests.is_empty()
    }
}

/// One background task (a subagent, a background shell, a monitor) as it stood.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskNote {
    /// Its `task_id` (a subagent's agent id).
    pub task_id: String,
    /// Its `description`, if one was printed.
    pub description: Option<String>,
    /// Its `task_type` (`local_agent`, `local_bash`, …), if printed.
    pub task_type: Option<String>,
    /// How long since its last sign of life (its start, its own lines, its progress).
    pub silent: Duration,
    /// How long until a monitor's declared expiry, when one lay ahead (`None`: none).
    pub expires_in: Option<Duration>,
}

/// Which tool declared a wakeup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WakeupTool {
    /// `ScheduleWakeup` (the dynamic `/loop`'s next tick).
    ScheduleWakeup,
    /// `CronCreate` (its next fire time; a recurring job counts until its first fire).
    CronCreate,
}

impl WakeupTool {
    /// The tool's name, as the model calls it.
    pub fn as_str(self) -> &'static str {
        match self {
            WakeupTool::ScheduleWakeup => "ScheduleWakeup",
            WakeupTool::CronCreate => "CronCreate",
        }
    }
}

/// One declared wakeup as it stood.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WakeupNote {
    /// The tool that declared it.
    pub tool: WakeupTool,
    /// Its `tool_use` id.
    pub tool_use_id: String,
    /// How far past its due time it was (zero while still ahead).
    pub overdue: Duration,
    /// How long until it was due (zero once due).
    pub due_in: Duration,
}

/// One of the host's control requests as it stood.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestNote {
    /// Its `request_id`.
    pub request_id: String,
    /// Its `request.subtype` (`interrupt`, `get_context_usage`, …; empty when missing).
    pub subtype: String,
    /// How long it had waited for its answer.
    pub waited: Duration,
}

/// Announced API retries (`system/api_retry`) with no progress after their back-off: a storm
/// the session waits out, as it was at a kill.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backoff {
    /// Retries announced in this storm.
    pub attempts: u32,
    /// The last one's HTTP status (`error_status`: 529 overloaded, 429 rate limited), if any.
    pub status: Option<u16>,
    /// The last one's `error` (`overloaded`, `rate_limit`, …), if any.
    pub error: Option<String>,
    /// The last announced delay (`retry_delay_ms`).
    pub last_delay: Duration,
    /// How long the storm had lasted (from its first announcement).
    pub lasted: Duration,
}

/// An MCP tool call that was outstanding at a kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpCall {
    /// The tool, e.g. `mcp__db__query`.
    pub tool: String,
    /// How long it had been outstanding (from its `tool_use`, or as its heartbeats said).
    pub outstanding: Duration,
}

use crate::facts::OutstandingMcp;

/// How a session ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The last `result` was a success.
    Success,
    /// The last `result` was an error (`is_error: true` or a non-success subtype): its facts
    /// (note: `subtype` is `success` for API errors).
    ErrorResult(Box<ResultFacts>),
    /// The watchdog killed it.
    Killed {
        /// Why.
        kind: KillKind,
    },
    /// The stream ended without a `result`.
    NoResult,
    /// A success `result` with `stop_reason: "tool_use"`: exited mid-task.
    Incomplete,
}

impl Outcome {
    /// Which outcome it is, without its facts.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Success => OutcomeKind::Success,
            Outcome::ErrorResult { .. } => OutcomeKind::ErrorResult,
            Outcome::Killed { .. } => OutcomeKind::Killed,
            Outcome::NoResult => OutcomeKind::NoResult,
            Outcome::Incomplete => OutcomeKind::Incomplete,
        }
    }

    /// Snake-case name ([`OutcomeKind::as_str`]).
    pub fn as_str(&self) -> &'static str {
        self.kind().as_str()
    }
}

/// Which [`Outcome`] a session had: the project's one outcome vocabulary (the summary's
/// `outcome`, the metrics' `outcome` label, the telemetry back-fill's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum OutcomeKind {
    /// [`Outcome::Success`].
    Success,
    /// [`Outcome::ErrorResult`].
    ErrorResult,
    /// [`Outcome::Killed`].
    Killed,
    /// [`Outcome::NoResult`].
    NoResult,
    /// [`Outcome::Incomplete`].
    Incomplete,
}

impl OutcomeKind {
    /// Every outcome, in report order.
    pub const ALL: [OutcomeKind; 5] = [
        OutcomeKind::Success,
        OutcomeKind::ErrorResult,
        OutcomeKind::Killed,
        OutcomeKind::NoResult,
        OutcomeKind::Incomplete,
    ];

    /// Snake-case name: `success`, `error_result`, `killed`, `no_result`, `incomplete`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Success => "success",
            OutcomeKind::ErrorResult => "error_result",
            OutcomeKind::Killed => "killed",
            OutcomeKind::NoResult => "no_result",
            OutcomeKind::Incomplete => "incomplete",
        }
    }
}

/// Something the registry reports through [`crate::Registry::poll_event`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A session must be stopped. Reported once per session.
    Killed(Kill),
    /// Idle patience was extended past the base idle limit (once per quiet spell).
    Extended {
        /// The session.
        id: SessionId,
        /// Why.
        reason: ExtendReason,
    },
    /// A clock passed `warn_at` of its limit (once per quiet spell and clock).
    Stalling {
        /// The session.
        id: SessionId,
        /// Which clock.
        clock: StallClock,
        /// Time left before the kill, as of the warning.
        remaining: Duration,
    },
    /// A `result` (or [`crate::Registry::settle`]) settled the session.
    Settled {
        /// The session.
        id: SessionId,
    },
    /// The session ended: emitted once, by [`crate::Registry::end`] (stream closed or process
    /// exited). A session killed before has the outcome [`Outcome::Killed`].
    Ended {
        /// The session.
        id: SessionId,
        /// How.
        outcome: Outcome,
    },
    /// A `rate_limit_event` line of the session changed the registry's rate-limit reading in a
    /// way worth saying (a warning, a rejection, credits required, a recovery): each once, as
    /// the [`RateLimitMonitor`](crate::rate_limit::RateLimitMonitor) decides.
    RateLimit {
        /// The session whose line it was.
        id: SessionId,
        /// What changed.
        event: crate::rate_limit::RateLimitEvent,
    },
    /// A top-level `system/init` named another Claude Code session than the one the session
    /// must be ([`SessionConfig::with_expected_session`](crate::SessionConfig::with_expected_session)).
    /// Reported once per session; the host decides what follows.
    SessionMismatch {
        /// The session.
        id: SessionId,
        /// The id it must have.
        expected: crate::facts::ClaudeSessionId,
        /// The id the `init` carried (`None`: no valid one).
        got: Option<crate::facts::ClaudeSessionId>,
    },
    /// Quiet spells that lines of the session ended (see [`crate::facts`]), in order:
    /// those of the lines read together come in one event. Only for a session registered with
    /// [`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts).
    QuietSpells {
        /// The session.
        id: SessionId,
        /// The spells, oldest first.
        spells: Vec<crate::facts::QuietSpell>,
    },
    /// The MCP calls the session has outstanding changed: all of them now (empty: none).
    /// Only for a session registered with
    /// [`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts).
    McpCalls {
        /// The session.
        id: SessionId,
        /// Every call outstanding now, each with when it started.
        calls: Vec<OutstandingMcp>,
    },
    /// Claude Code's session id became known, or a `system/init` changed it (the rule:
    /// [`crate::facts`]). Only for a session registered with
    /// [`SessionConfig::with_live_facts`](crate::SessionConfig::with_live_facts).
    SessionIdentified {
        /// The session.
        id: SessionId,
        /// Its Claude Code session id.
        session: crate::facts::ClaudeSessionId,
    },
    /// A background task printed nothing of its own for its deadline
    /// ([`Limits::task_silence`](crate::Limits::task_silence)): a notice, once per silence.
    /// The session goes on while anything else of it moves; when it falls silent too, it is
    /// killed [`KillKind::TaskSilent`].
    TaskSilent {
        /// The session.
        id: SessionId,
        /// The task, as it stood.
        task: TaskNote,
    },
    /// A top-level `result` came that no message of the host asked for: more results than
    /// the host's `user` messages (one prompt for a session without host input). Claude Code
    /// took a turn by itself (a wakeup, a monitor's event, a background task's notification,
    /// a Stop hook): an SDK host that pairs one result with each message reads it as the
    /// answer to its next one. Only for a session that keeps a tally
    /// ([`SessionConfig::with_tally`](crate::SessionConfig::with_tally)).
    UnsolicitedResult {
        /// The session.
        id: SessionId,
        /// Top-level results so far, this one included.
        results: u32,
        /// The host's messages so far (the prompt counts as one without host input).
        messages: u32,
    },
}

impl Event {
    /// The session the event is about.
    pub fn id(&self) -> SessionId {
        match self {
            Event::Killed(k) => k.id,
            Event::Extended { id, .. }
            | Event::Stalling { id, .. }
            | Event::Settled { id }
            | Event::Ended { id, .. }
            | Event::RateLimit { id, .. }
            | Event::SessionMismatch { id, .. }
            | Event::QuietSpells { id, .. }
            | Event::McpCalls { id, .. }
            | Event::SessionIdentified { id, .. }
            | Event::TaskSilent { id, .. }
            | Event::UnsolicitedResult { id, .. } => *id,
        }
    }
}

impl ResultFacts {
    /// The outcome of a session whose last `result` these are and that was not killed:
    /// [`Outcome::ErrorResult`], [`Outcome::Incomplete`] or [`Outcome::Success`] (what
    /// [`Registry::end`](crate::Registry::end) reports; the Node API's ends use it). Here,
    /// with the outcomes, so the facts need not know them.
    pub fn into_outcome(self) -> Outcome {
        if self.is_error_result() {
            Outcome::ErrorResult(Box::new(self))
        } else if self.stopped_mid_task() {
            Outcome::Incomplete
        } else {
            Outcome::Success
        }
    }
}
