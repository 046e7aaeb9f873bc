//! The reference package's contract as a preset of the one observer.
//!
//! The npm package `agent-sdk-watchdog` keeps the API and the verdicts of the reference
//! TypeScript package (0.2.0) it is named after: what `handle.observe(message)` counts, the
//! idle patience and its two extensions, the per-registration hard ceiling, the settled rule.
//! Those are not a second policy engine: they are the [`Registry`] with
//!
//! - [`limits`]: the reference's defaults (idle 10 min, extend factor 2, high utilization 0.9,
//!   write tools `Write` and `Edit`), with our startup, linger and no-progress rules and the
//!   stalling warnings [`OFF`] (a host turns each on with its own value);
//! - [`session`]: the idle and no-progress clocks run from registration (the reference counts
//!   registering as a tool boundary; the startup clock, when on, still waits for the first
//!   message), and the per-registration ceiling;
//! - [`verdict`]: the reference's pure `evaluateWatchdog()`, the registry's own deadlines
//!   asked of a query's last instants;
//! - [`OBSERVE_TABLE`]: which messages `observe()` counts, and as what. The host looks a
//!   message's `type` and `subtype` up in it and feeds the row's [`Class`] through
//!   [`Registry::observe_class`](watchdog_core::Registry::observe_class); a `result` is fed as a line
//!   (its facts decide the outcome); a message the table ignores ends only the startup wait
//!   ([`Registry::note_started`](watchdog_core::Registry::note_started)). Ours beyond the reference:
//!   background tasks and API back-offs are fed as lines ([`Effect::Line`]), so the rules for
//!   them are the registry's here too.
//!
//! The host's check is the reference's tick ([`Registry::checked_by_host`](watchdog_core::Registry::checked_by_host)):
//! a message handed over before the check counts, as it does for the reference. The deliberate
//! difference: the host arms its timer at the registry's exact next deadline, so the check (and
//! the kill, dated at its deadline) comes then, not up to a tick later.

use std::time::Duration;

use watchdog_core::config::{NonZeroFraction, PositiveDuration};
use watchdog_core::Instant;
use watchdog_core::{Class, LineKind, Signal};
use watchdog_core::{Event, ExtendReason, KillKind, Limits, Registry, Seed, SessionConfig};

/// A rule that is off: a limit no session ever reaches.
pub const OFF: Duration = Duration::MAX;

/// The reference's `tickMs` default: its shared timer checks every query this often (ours
/// is armed at the next deadline, and at most this far away).
pub const TICK: Duration = Duration::from_secs(30);

/// The reference's `toolHeartbeats` default: a `tool_progress` frame counts as work.
pub const TOOL_HEARTBEATS: bool = true;

/// The reference's write tools (`writeTools`): the first completed call of one ends the
/// pre-write extension.
pub const WRITE_TOOLS: [&str; 2] = ["Write", "Edit"];

/// The reference's defaults, with every rule it does not have off.
///
/// ```
/// use std::time::Duration;
/// use watchdog_wasm::reference;
/// let l = reference::limits();
/// assert_eq!(l.idle(), Duration::from_secs(600));
/// assert_eq!((l.extend_factor(), l.high_utilization()), (2.0, 0.9));
/// assert_eq!(l.write_tools().len(), 2);
/// assert_eq!((l.startup(), l.linger(), l.no_progress()), (reference::OFF, reference::OFF, reference::OFF));
/// ```
pub fn limits() -> Limits {
    let off = PositiveDuration::new(OFF).expect("OFF is above zero");
    let mut l = Limits::default();
    l.set_write_tools(WRITE_TOOLS)
        .set_startup(off)
        .set_linger(off)
        .set_no_progress(off)
        // A warning at the kill itself is never given: the reference has no stalling warning.
        .set_warn_at(NonZeroFraction::new(1.0).expect("1 is in (0, 1]"));
    l
}

/// A registration: `limits` with this registration's hard ceiling, its clocks running from
/// registration.
pub fn session(limits: Limits, ceiling: Option<Duration>) -> SessionConfig {
    // A ceiling of zero (the reference never validates it) kills at once: the shortest one.
    let ceiling = ceiling.map(|c| c.max(Duration::from_nanos(1)));
    let limits = limits
        .with_ceiling(ceiling)
        .expect("a ceiling above zero is valid");
    SessionConfig::default()
        .with_limits(limits)
        .with_clocks_from_registration(true)
}

/// What a host knows of one query at an instant: its last instants (none later than the
/// instant it is judged at; an instant before `started` counts from where it is).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    /// When it was registered.
    pub started: Instant,
    /// Its hard ceiling, from `started` (`None`: none).
    pub ceiling: Option<Duration>,
    /// The last tool boundary (registration counts as one).
    pub last_tool: Instant,
    /// The last sign of life of any kind.
    pub last_activity: Instant,
    /// The last work (a tool boundary, a stream frame), for the no-progress rule.
    pub last_work: Instant,
    /// A write tool completed: the pre-write extension is over.
    pub written: bool,
    /// Settled by a `result`, and when (only the ceiling and the linger apply).
    pub settled: Option<Instant>,
    /// A message was seen (the startup rule applies until then).
    pub seen: bool,
}

/// The verdict of a [`Timeline`] at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to do.
    Ok,
    /// Past the base patience, and this extension holds.
    Extend(ExtendReason),
    /// Kill, for this reason (the first of its deadlines to fall due).
    Kill(KillKind),
}

/// The reference's `evaluateWatchdog(timeline, now, utilization, limits)`: what the registry
/// with `limits` decides for a query with these last instants at `now`, the utilization
/// holding throughout. Boundaries are inclusive; the ceiling wins ties.
///
/// ```
/// use std::time::{Duration, Instant};
/// use watchdog_wasm::reference::{self, Timeline, Verdict};
/// use watchdog_core::{ExtendReason, KillKind};
/// let t0 = Instant::now();
/// let min = |m: u64| Duration::from_secs(60 * m);
/// let lane = Timeline {
///     started: t0, ceiling: Some(min(70)), last_tool: t0, last_activity: t0, last_work: t0,
///     written: false, settled: None, seen: true,
/// };
/// let l = reference::limits();
/// let v = |t: &Timeline, m, u| reference::verdict(&l, t, t0 + min(m), u);
/// assert_eq!(v(&lane, 15, Some(0.3)), Verdict::Extend(ExtendReason::PreWrite));
/// assert_eq!(v(&lane, 21, None), Verdict::Kill(KillKind::Idle));
/// let busy = Timeline { written: true, last_activity: t0 + min(71) - Duration::from_secs(5), ..lane };
/// assert_eq!(v(&busy, 71, None), Verdict::Kill(KillKind::Ceiling));
/// ```
pub fn verdict(limits: &Limits, t: &Timeline, now: Instant, utilization: Option<f64>) -> Verdict {
    let instants = [t.last_tool, t.last_activity, t.last_work];
    let base = instants
        .into_iter()
        .chain(t.settled)
        .fold(t.started, Instant::min);
    // Registered at the earliest instant; the ceiling still counts from `started`.
    let ceiling = t.ceiling.map(|c| c + (t.started - base));
    let mut reg = Registry::new(limits.clone());
    let id = reg.register(base, session(limits.clone(), ceiling));
    reg.set_utilization(base, utilization);
    let last_progress = if t.seen {
        t.last_work.max(t.last_tool)
    } else {
        base
    };
    reg.seed(
        id,
        &Seed {
            last_line: if t.seen {
                t.last_activity.max(last_progress)
            } else {
                base
            },
            last_progress,
            last_tool: t.last_tool,
            wrote: t.written,
            settled_at: t.settled,
            seen: t.seen,
        },
    );
    reg.handle_timeout(now);
    let mut verdict = Verdict::Ok;
    while let Some(event) = reg.poll_event() {
        match event {
            Event::Killed(kill) => return Verdict::Kill(kill.kind),
            Event::Extended { reason, .. } => verdict = Verdict::Extend(reason),
            _ => {}
        }
    }
    verdict
}

/// What one message does under the reference's `observe()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Effect {
    /// Nothing (it still proves the child started).
    None,
    /// A `result`: settle, clocks untouched.
    Settle,
    /// A sign of life: moves the idle clock, does not un-settle.
    Alive,
    /// Work: un-settles and moves the clocks.
    Work,
    /// Work when the host counts tool heartbeats (`toolHeartbeats`, on by default), else
    /// nothing.
    HeartbeatWork,
    /// Ours: a message the registry reads whole (fed as a line, its own classification and
    /// facts): background work outstanding after a `result` (the session is working, not
    /// settled in all but name) and an announced API back-off (not a hang). The reference
    /// ignores these messages, and so would miss what they say.
    Line,
}

impl Effect {
    /// The effect's number in the table handed to JavaScript.
    pub fn code(self) -> u8 {
        match self {
            Effect::None => 0,
            Effect::Settle => 1,
            Effect::Alive => 2,
            Effect::Work => 3,
            Effect::HeartbeatWork => 4,
            Effect::Line => 5,
        }
    }
}

/// One row of [`OBSERVE_TABLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The message's `type`.
    pub kind: &'static str,
    /// Its `subtype`; `None` matches any.
    pub subtype: Option<&'static str>,
    /// What it does.
    pub effect: Effect,
    /// What it is, for the line counts.
    pub line: LineKind,
    /// The top-level fields the core reads from it, for a message it reads whole
    /// ([`Effect::Line`], and a `result`'s facts at the query's end): the host hands over
    /// these and no others ([`Row::head`] and each field's JSON).
    pub fields: &'static [&'static str],
    /// For an [`Effect::Line`] row: when the core reads the message (otherwise it is ignored,
    /// as the reference ignores it).
    pub read: Read,
    /// For an [`Effect::Line`] row: reading it may add background work to the query.
    pub adds: bool,
}

/// When the core reads a message of an [`Effect::Line`] row whole. A message it does not read
/// is ignored, as the reference ignores every such message: it brings nothing the core keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Always: it changes what the query waits on (an announced back-off, the set of
    /// background tasks).
    Always,
    /// When this field is `true` (a task started in the background: it joins the query's
    /// background work); else only when [`Read::IfAdded`] holds.
    IfTrue(&'static str),
    /// Once a message of the query that may add background work ([`Row::adds`]) was read: a
    /// task's end is news only then.
    IfAdded,
}

impl Read {
    /// The rule's number in the table handed to JavaScript: 0 always, 1 if the field is
    /// `true` (or as 2), 2 once background work may have been added.
    pub fn code(self) -> u8 {
        match self {
            Read::Always => 0,
            Read::IfTrue(_) => 1,
            Read::IfAdded => 2,
        }
    }

    /// The field of [`Read::IfTrue`].
    pub fn field(self) -> Option<&'static str> {
        match self {
            Read::IfTrue(f) => Some(f),
            _ => None,
        }
    }
}

/// What the registry reads of a background task's line (`system/task_*`,
/// `system/background_tasks_changed`): its task and status, and whether it runs in the
/// background (and not as Claude Code's own ambient work).
const TASK_FIELDS: &[&str] = &[
    "task_id",
    "status",
    "patch",
    "is_backgrounded",
    "ambient",
    "tasks",
];

/// What the registry reads of a background task's progress: which task it is (its own
/// deadline restarts) and the call it belongs to.
const TASK_PROGRESS_FIELDS: &[&str] = &["task_id", "status", "tool_use_id"];

/// What the registry reads of an announced back-off (`system/api_retry`) for what this API
/// reports: the announced delay (its status and error are a kill's evidence, which a kill of
/// this API does not carry).
const RETRY_FIELDS: &[&str] = &["retry_delay_ms"];

/// What a query's outcome reads of its last `result` ([`ResultFacts::of_line`](watchdog_core::facts::ResultFacts::of_line)).
pub const RESULT_FIELDS: &[&str] = &[
    "subtype",
    "is_error",
    "stop_reason",
    "terminal_reason",
    "api_error",
    "api_error_status",
    "num_turns",
    "total_cost_usd",
];

/// The reference's `observe()` (0.2.0): a message matching no row does nothing. Rows with a
/// subtype are tried before a row of the same `type` without one.
pub const OBSERVE_TABLE: &[Row] = &[
    Row {
        kind: "result",
        subtype: None,
        effect: Effect::Settle,
        line: LineKind::Result,
        fields: RESULT_FIELDS,
        read: Read::Always,
        adds: false,
    },
    Row {
        kind: "rate_limit_event",
        subtype: None,
        effect: Effect::Alive,
        line: LineKind::RateLimit,
        fields: &[],
        read: Read::Always,
        adds: false,
    },
    // Every stream frame, `ping` and `message_start` included, subagents' too.
    Row {
        kind: "stream_event",
        subtype: None,
        effect: Effect::Work,
        line: LineKind::StreamEvent,
        fields: &[],
        read: Read::Always,
        adds: false,
    },
    Row {
        kind: "system",
        subtype: Some("thinking_tokens"),
        effect: Effect::Work,
        line: LineKind::System,
        fields: &[],
        read: Read::Always,
        adds: false,
    },
    // The reference counts a tool heartbeat as work (its docs call it a heartbeat).
    Row {
        kind: "tool_progress",
        subtype: None,
        effect: Effect::HeartbeatWork,
        line: LineKind::ToolProgress,
        fields: &[],
        read: Read::Always,
        adds: false,
    },
    // Ours, read whole when they bring what the core keeps: background tasks (the core's
    // background work) and announced back-offs.
    Row {
        kind: "system",
        subtype: Some("background_tasks_changed"),
        effect: Effect::Line,
        line: LineKind::System,
        fields: TASK_FIELDS,
        read: Read::Always,
        adds: true,
    },
    Row {
        kind: "system",
        subtype: Some("task_started"),
        effect: Effect::Line,
        line: LineKind::System,
        fields: TASK_FIELDS,
        read: Read::IfTrue("is_backgrounded"),
        adds: true,
    },
    Row {
        kind: "system",
        subtype: Some("task_updated"),
        effect: Effect::Line,
        line: LineKind::System,
        fields: TASK_FIELDS,
        read: Read::Always,
        adds: true,
    },
    Row {
        kind: "system",
        subtype: Some("task_notification"),
        effect: Effect::Line,
        line: LineKind::System,
        fields: TASK_FIELDS,
        read: Read::IfAdded,
        adds: false,
    },
    // A background task's progress: a sign of its own life (its own deadline).
    Row {
        kind: "system",
        subtype: Some("task_progress"),
        effect: Effect::Line,
        line: LineKind::System,
        fields: TASK_PROGRESS_FIELDS,
        read: Read::IfAdded,
        adds: false,
    },
    Row {
        kind: "system",
        subtype: Some("api_retry"),
        effect: Effect::Line,
        line: LineKind::ApiRetry,
        fields: RETRY_FIELDS,
        read: Read::Always,
        adds: false,
    },
];

/// The row of a message with this `type` and `subtype`, if any.
///
/// ```
/// use watchdog_wasm::reference::{row, Effect};
/// assert_eq!(row("stream_event", None).unwrap().effect, Effect::Work);
/// assert_eq!(row("system", Some("thinking_tokens")).unwrap().effect, Effect::Work);
/// assert!(row("system", Some("init")).is_none());
/// assert!(row("assistant", None).is_none());
/// ```
pub fn row(kind: &str, subtype: Option<&str>) -> Option<&'static Row> {
    let exact = OBSERVE_TABLE
        .iter()
        .find(|r| r.kind == kind && r.subtype.is_some() && r.subtype == subtype);
    exact.or_else(|| {
        OBSERVE_TABLE
            .iter()
            .find(|r| r.kind == kind && r.subtype.is_none())
    })
}

impl Row {
    /// What the row does for a host with `tool_heartbeats` as set: [`Effect::HeartbeatWork`]
    /// is work or nothing; every other effect is itself.
    pub fn effect_for(&self, tool_heartbeats: bool) -> Effect {
        match self.effect {
            Effect::HeartbeatWork if tool_heartbeats => Effect::Work,
            Effect::HeartbeatWork => Effect::None,
            other => other,
        }
    }

    /// The start of the JSON object a host hands over for this row's message: its `type` and
    /// `subtype`, without the closing brace; the host adds `,"<field>":<json>` for each of
    /// [`Row::fields`] the message has, then `}`.
    ///
    /// ```
    /// use watchdog_wasm::reference::row;
    /// let r = row("system", Some("api_retry")).unwrap();
    /// assert_eq!(r.head(), r#"{"type":"system","subtype":"api_retry""#);
    /// ```
    pub fn head(&self) -> String {
        let mut head = format!("{{\"type\":{}", serde_json::Value::from(self.kind));
        if let Some(sub) = self.subtype {
            head.push_str(&format!(",\"subtype\":{}", serde_json::Value::from(sub)));
        }
        head
    }

    /// The class the row feeds ([`Registry::observe_class`](watchdog_core::Registry::observe_class)),
    /// or `None` when it feeds nothing: an ignored message, a heartbeat with
    /// `tool_heartbeats` off, a message the registry reads whole ([`Effect::Line`]). A
    /// `result` is a settle (its facts are the host's to keep for the outcome).
    pub fn class(&self, tool_heartbeats: bool) -> Option<Class> {
        let signal = match self.effect {
            Effect::None | Effect::Line => return None,
            Effect::HeartbeatWork if !tool_heartbeats => return None,
            Effect::Settle => Signal::Settle,
            Effect::Alive => Signal::KeepAlive,
            Effect::Work | Effect::HeartbeatWork => Signal::Progress,
        };
        Some(Class {
            signal,
            kind: self.line,
        })
    }
}

/// Whether the reference's check at `now` finds the ceiling due: `now - started >=
/// ceiling`, in the host's numbers as given (its first rule, so it names a kill whatever
/// else fell due before the check). A `NaN` anywhere: never.
pub fn ceiling_due(started: f64, ceiling: f64, now: f64) -> bool {
    now - started >= ceiling
}

/// The reference's name of a kill: `watchdog_idle` and `hard_ceiling` for its two rules, ours
/// ([`KillKind::as_str`]) for the rest.
pub fn kill_name(kind: KillKind) -> &'static str {
    match kind {
        KillKind::Idle => "watchdog_idle",
        KillKind::Ceiling => "hard_ceiling",
        other => other.as_str(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_effect_feeds_its_signal() {
        let class = |k, s| row(k, s).and_then(|r| r.class(true)).map(|c| c.signal);
        assert_eq!(class("result", Some("success")), Some(Signal::Settle));
        assert_eq!(class("rate_limit_event", None), Some(Signal::KeepAlive));
        assert_eq!(class("stream_event", None), Some(Signal::Progress));
        assert_eq!(class("tool_progress", None), Some(Signal::Progress));
        assert_eq!(
            row("tool_progress", None).unwrap().class(false),
            None,
            "toolHeartbeats off"
        );
        assert_eq!(class("system", Some("init")), None);
        assert_eq!(class("user", None), None);
        assert_eq!(kill_name(KillKind::Idle), "watchdog_idle");
        assert_eq!(kill_name(KillKind::Ceiling), "hard_ceiling");
        assert_eq!(kill_name(KillKind::NoProgress), "no_progress");
    }

    #[test]
    fn a_ceiling_of_zero_is_the_shortest_one() {
        let s = session(limits(), Some(Duration::ZERO));
        assert_eq!(s.limits().unwrap().ceiling(), Some(Duration::from_nanos(1)));
        assert!(s.clocks_from_registration());
    }
}
