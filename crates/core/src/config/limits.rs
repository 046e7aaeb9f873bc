//! The liveness policy of a session ([`Limits`]), named from the crate root.

use std::sync::Arc;
use std::time::Duration;

use super::{
    defaults, format_duration, valid, ByteSize, ConfigError, Factor, Fraction, HumanDuration,
    IntoValid, McpLimits, NonZeroFraction, PositiveDuration, MAX_DURATION,
};

/// The liveness policy of a session.
///
/// # Default
///
/// | option | default | rule |
/// |---|---|---|
/// | `startup` | 3m | no line at all since registration → kill `startup` |
/// | `idle` | 10m | no progress and no keep-alive for the patience → kill `idle` |
/// | `extend_factor` | 2 | patience is `idle × extend_factor` before the first completed write tool and while utilization ≥ `high_utilization` |
/// | `high_utilization` | 0.9 | rate-limit utilization (0–1) at or above which patience is extended |
/// | `write_tools` | `Write`, `Edit`, `MultiEdit`, `NotebookEdit` | tools whose first completed call ends the pre-write extension |
/// | `no_progress` | 30m | keep-alives but no progress for this long → kill `no_progress` |
/// | `linger` | 11m | after a `result`, no new progress and the stream has not ended → kill `linger` |
/// | `ceiling` | none | total age → kill `ceiling` |
/// | `warn_at` | 0.8 | a `Stalling` event when the idle or no-progress clock passes this fraction |
/// | `output_blocked` | 30m | the host's reader took no byte for this long while output waited for it → the host stops the session, `output_blocked` ([`reader_wait`](crate::reader_wait); `None`: never) |
/// | `max_backoff` | 2h | the most an announced API back-off storm (`system/api_retry`) holds the idle and no-progress clocks |
/// | `busy_cap` | 2h | while a tool call is outstanding and its processes are busy (CPU or socket bytes above the noise floor), no progress is no hang, for at most this long after the last progress (0: never) |
/// | `max_rss` | none | the process tree's memory above this for 5 s → kill `memory` |
/// | `task_silence` | none (the idle patience) | a background task that printed nothing of its own for this long is silent: a notice; while any outstanding task is not yet silent the idle kill waits, and an idle kill with tasks outstanding is `task_silent` |
/// | `control_timeout` | 2m | the host's control request (not `initialize`) unanswered for this long → kill `unanswered` (`None`: never) |
/// | `mcp` | [`McpLimits::default`] | while an MCP tool call is outstanding, `no_progress` kills no earlier than where Claude Code itself gives up on that call, plus a margin |
///
/// Every row, checked against `Limits::default()`:
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::{Limits, McpLimits};
/// let min = |m: u64| Duration::from_secs(m * 60);
/// let d = Limits::default();
/// assert_eq!(d.startup(), min(3));
/// assert_eq!(d.idle(), min(10));
/// assert_eq!(d.extend_factor(), 2.0);
/// assert_eq!(d.high_utilization(), 0.9);
/// assert_eq!(&*d.write_tools().join(","), "Write,Edit,MultiEdit,NotebookEdit");
/// assert_eq!(d.no_progress(), min(30));
/// assert_eq!(d.linger(), min(11));
/// assert_eq!(d.ceiling(), None);
/// assert_eq!(d.warn_at(), 0.8);
/// assert_eq!(d.output_blocked(), Some(min(30)));
/// assert_eq!(d.max_backoff(), min(120));
/// assert_eq!(d.busy_cap(), min(120));
/// assert_eq!(d.max_rss(), None);
/// assert_eq!(d.task_silence(), None);
/// assert_eq!(d.control_timeout(), Some(min(2)));
/// assert_eq!(d.mcp(), &McpLimits::default());
/// ```
///
/// Setting an option checks its rule (the types of [`config`](crate::config):
/// [`PositiveDuration`], [`Factor`], [`Fraction`], [`NonZeroFraction`]); a setter takes the
/// raw value or a value of that type:
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::config::PositiveDuration;
/// use watchdog_core::Limits;
/// let limits = Limits::default().with_idle(Duration::from_secs(90)).unwrap();
/// assert_eq!(limits.idle(), Duration::from_secs(90));
/// let idle: PositiveDuration = "90s".parse().unwrap();
/// assert_eq!(Limits::default().with_idle(idle).unwrap(), limits);
/// assert!(Limits::default().with_extend_factor(0.5).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    startup: PositiveDuration,
    idle: PositiveDuration,
    extend_factor: Factor,
    high_utilization: Fraction,
    write_tools: Arc<[Box<str>]>,
    no_progress: PositiveDuration,
    linger: PositiveDuration,
    ceiling: Option<PositiveDuration>,
    warn_at: NonZeroFraction,
    output_blocked: Option<PositiveDuration>,
    max_backoff: PositiveDuration,
    busy_cap: Duration,
    max_rss: Option<ByteSize>,
    task_silence: Option<PositiveDuration>,
    control_timeout: Option<PositiveDuration>,
    mcp: McpLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            startup: defaults::STARTUP,
            idle: defaults::IDLE,
            extend_factor: defaults::EXTEND_FACTOR,
            high_utilization: defaults::HIGH_UTILIZATION,
            write_tools: defaults::WRITE_TOOLS.into_iter().map(Box::from).collect(),
            no_progress: defaults::NO_PROGRESS,
            linger: defaults::LINGER,
            ceiling: defaults::CEILING,
            warn_at: defaults::WARN_AT,
            output_blocked: defaults::OUTPUT_BLOCKED,
            max_backoff: defaults::MAX_BACKOFF,
            busy_cap: defaults::BUSY_CAP,
            max_rss: defaults::MAX_RSS,
            task_silence: defaults::TASK_SILENCE,
            control_timeout: defaults::CONTROL_TIMEOUT,
            mcp: McpLimits::default(),
        }
    }
}

impl Limits {
    /// Base idle patience. Must be > 0 ([`PositiveDuration`]).
    pub fn with_idle(mut self, d: impl IntoValid<PositiveDuration>) -> Result<Self, ConfigError> {
        self.set_idle(valid("idle", d)?);
        Ok(self)
    }
    /// Startup limit (no line at all). Must be > 0 ([`PositiveDuration`]).
    pub fn with_startup(
        mut self,
        d: impl IntoValid<PositiveDuration>,
    ) -> Result<Self, ConfigError> {
        self.set_startup(valid("startup", d)?);
        Ok(self)
    }
    /// Patience multiplier while an extension holds. Must be a finite number ≥ 1 ([`Factor`]).
    pub fn with_extend_factor(mut self, f: impl IntoValid<Factor>) -> Result<Self, ConfigError> {
        self.set_extend_factor(valid("extend_factor", f)?);
        Ok(self)
    }
    /// Utilization at or above which patience is extended. In [0, 1] ([`Fraction`]).
    pub fn with_high_utilization(
        mut self,
        u: impl IntoValid<Fraction>,
    ) -> Result<Self, ConfigError> {
        self.set_high_utilization(valid("high_utilization", u)?);
        Ok(self)
    }
    /// The write tools whose first completed call ends the pre-write extension.
    pub fn with_write_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.set_write_tools(tools);
        self
    }
    /// Cap on a spell without progress, keep-alives or not. Must be > 0
    /// ([`PositiveDuration`]).
    pub fn with_no_progress(
        mut self,
        d: impl IntoValid<PositiveDuration>,
    ) -> Result<Self, ConfigError> {
        self.set_no_progress(valid("no_progress", d)?);
        Ok(self)
    }
    /// Bounded wait after a `result`. Must be > 0 ([`PositiveDuration`]).
    pub fn with_linger(mut self, d: impl IntoValid<PositiveDuration>) -> Result<Self, ConfigError> {
        self.set_linger(valid("linger", d)?);
        Ok(self)
    }
    /// Total age limit, or `None` for no ceiling. Must be > 0 when set ([`PositiveDuration`]).
    pub fn with_ceiling(mut self, d: Option<Duration>) -> Result<Self, ConfigError> {
        self.set_ceiling(valid("ceiling", d)?);
        Ok(self)
    }
    /// Fraction of a limit at which a `Stalling` event is emitted. In (0, 1]
    /// ([`NonZeroFraction`]); 1 disables it in effect (the warning would coincide with the
    /// kill and is not emitted).
    pub fn with_warn_at(mut self, f: impl IntoValid<NonZeroFraction>) -> Result<Self, ConfigError> {
        self.set_warn_at(valid("warn_at", f)?);
        Ok(self)
    }

    /// The bound on continuous blocked output ([`Limits::output_blocked`]); zero turns it off.
    pub fn with_output_blocked(mut self, d: Duration) -> Self {
        self.set_output_blocked(PositiveDuration::new(d).ok());
        self
    }
    /// The most an announced back-off storm holds the idle and no-progress clocks. Must be > 0
    /// ([`PositiveDuration`]).
    pub fn with_max_backoff(
        mut self,
        d: impl IntoValid<PositiveDuration>,
    ) -> Result<Self, ConfigError> {
        self.set_max_backoff(valid("max_backoff", d)?);
        Ok(self)
    }
    /// How long a busy tool may hold the no-progress kill after the last progress
    /// ([`Limits::busy_cap`]); zero: evidence never holds it. At most [`MAX_DURATION`].
    pub fn with_busy_cap(mut self, d: Duration) -> Result<Self, ConfigError> {
        if d > MAX_DURATION {
            return Err(ConfigError {
                option: "busy_cap",
                allowed: "a duration >= 0, at most 365d",
                value: format_duration(d),
            });
        }
        self.set_busy_cap(HumanDuration(d));
        Ok(self)
    }
    /// The memory guard ([`Limits::max_rss`]): `None` turns it off; a size must be > 0
    /// ([`ByteSize`]).
    pub fn with_max_rss(
        mut self,
        bytes: impl IntoValid<Option<ByteSize>>,
    ) -> Result<Self, ConfigError> {
        self.set_max_rss(valid("max_rss", bytes)?);
        Ok(self)
    }

    /// A background task's own deadline ([`Limits::task_silence`]); `None`: the idle
    /// patience in force. Must be > 0 when set ([`PositiveDuration`]).
    pub fn with_task_silence(mut self, d: Option<Duration>) -> Result<Self, ConfigError> {
        self.set_task_silence(valid("task_silence", d)?);
        Ok(self)
    }
    /// The bound on the host's unanswered control requests ([`Limits::control_timeout`]);
    /// zero turns it off.
    pub fn with_control_timeout(mut self, d: Duration) -> Self {
        self.set_control_timeout(PositiveDuration::new(d).ok());
        self
    }

    /// Where Claude Code gives up on MCP tool calls by itself (the no-progress floor while
    /// one is outstanding).
    pub fn with_mcp(mut self, mcp: McpLimits) -> Self {
        self.mcp = mcp;
        self
    }
}

/// The infallible setters: each takes its option's validated type, so there is nothing left
/// to reject ([`Limits::with_idle`] and the others check a raw value first).
///
/// ```
/// use watchdog_core::config::{Factor, PositiveDuration};
/// use watchdog_core::Limits;
/// let mut limits = Limits::default();
/// limits
///     .set_idle("90s".parse::<PositiveDuration>().unwrap())
///     .set_extend_factor(Factor::new(3.0).unwrap())
///     .set_ceiling(None);
/// assert_eq!(limits.idle().as_secs(), 90);
/// assert_eq!(limits.extend_factor(), 3.0);
/// ```
impl Limits {
    /// Base idle patience.
    pub fn set_idle(&mut self, d: PositiveDuration) -> &mut Self {
        self.idle = d;
        self
    }
    /// Startup limit (no line at all).
    pub fn set_startup(&mut self, d: PositiveDuration) -> &mut Self {
        self.startup = d;
        self
    }
    /// Patience multiplier while an extension holds.
    pub fn set_extend_factor(&mut self, f: Factor) -> &mut Self {
        self.extend_factor = f;
        self
    }
    /// Utilization at or above which patience is extended.
    pub fn set_high_utilization(&mut self, u: Fraction) -> &mut Self {
        self.high_utilization = u;
        self
    }
    /// The write tools whose first completed call ends the pre-write extension.
    pub fn set_write_tools<I, S>(&mut self, tools: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.write_tools = tools.into_iter().map(|s| Box::from(s.as_ref())).collect();
        self
    }
    /// Cap on a spell without progress, keep-alives or not.
    pub fn set_no_progress(&mut self, d: PositiveDuration) -> &mut Self {
        self.no_progress = d;
        self
    }
    /// Bounded wait after a `result`.
    pub fn set_linger(&mut self, d: PositiveDuration) -> &mut Self {
        self.linger = d;
        self
    }
    /// Total age limit, or `None` for no ceiling.
    pub fn set_ceiling(&mut self, d: Option<PositiveDuration>) -> &mut Self {
        self.ceiling = d;
        self
    }
    /// Fraction of a limit at which a `Stalling` event is emitted.
    pub fn set_warn_at(&mut self, f: NonZeroFraction) -> &mut Self {
        self.warn_at = f;
        self
    }
    /// The bound on continuous blocked output, or `None` for none.
    pub fn set_output_blocked(&mut self, d: Option<PositiveDuration>) -> &mut Self {
        self.output_blocked = d;
        self
    }
    /// The most an announced back-off storm holds the idle and no-progress clocks.
    pub fn set_max_backoff(&mut self, d: PositiveDuration) -> &mut Self {
        self.max_backoff = d;
        self
    }
    /// How long a busy tool may hold the no-progress kill after the last progress (zero:
    /// never).
    pub fn set_busy_cap(&mut self, d: HumanDuration) -> &mut Self {
        self.busy_cap = d.get();
        self
    }
    /// The memory guard, or `None` for none.
    pub fn set_max_rss(&mut self, bytes: Option<ByteSize>) -> &mut Self {
        self.max_rss = bytes;
        self
    }
    /// A background task's own deadline, or `None` for the idle patience in force.
    pub fn set_task_silence(&mut self, d: Option<PositiveDuration>) -> &mut Self {
        self.task_silence = d;
        self
    }
    /// The bound on the host's unanswered control requests, or `None` for none.
    pub fn set_control_timeout(&mut self, d: Option<PositiveDuration>) -> &mut Self {
        self.control_timeout = d;
        self
    }
    /// Where Claude Code gives up on MCP tool calls by itself.
    pub fn set_mcp(&mut self, mcp: McpLimits) -> &mut Self {
        self.mcp = mcp;
        self
    }
}

impl Limits {
    /// Startup limit.
    pub fn startup(&self) -> Duration {
        self.startup.get()
    }
    /// Base idle patience.
    pub fn idle(&self) -> Duration {
        self.idle.get()
    }
    /// Extension factor.
    pub fn extend_factor(&self) -> f64 {
        self.extend_factor.get()
    }
    /// High-utilization threshold.
    pub fn high_utilization(&self) -> f64 {
        self.high_utilization.get()
    }
    /// Write tools.
    pub fn write_tools(&self) -> &[Box<str>] {
        &self.write_tools
    }
    /// Whether `tool` is a write tool.
    pub fn is_write_tool(&self, tool: &str) -> bool {
        self.write_tools.iter().any(|t| &**t == tool)
    }
    /// No-progress cap.
    pub fn no_progress(&self) -> Duration {
        self.no_progress.get()
    }
    /// Linger limit.
    pub fn linger(&self) -> Duration {
        self.linger.get()
    }
    /// Ceiling.
    pub fn ceiling(&self) -> Option<Duration> {
        self.ceiling.map(PositiveDuration::get)
    }
    /// Stalling-warning fraction.
    pub fn warn_at(&self) -> f64 {
        self.warn_at.get()
    }
    /// The bound on blocked output: when the host's reader has taken no byte for this long
    /// while output waited for it (time the host itself did not run left out), the host stops
    /// the session, `output_blocked`. The host applies it where it writes, with the one rule
    /// of [`ReaderWait`](crate::reader_wait::ReaderWait); the registry's own deadlines never
    /// do. `None`: never.
    pub fn output_blocked(&self) -> Option<Duration> {
        self.output_blocked.map(PositiveDuration::get)
    }
    /// The most an announced back-off storm (`system/api_retry` lines with no progress after
    /// their delay) holds the idle and no-progress clocks, counted from its first retry.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff.get()
    }
    /// How long a busy tool may hold the no-progress kill: while a tool call is outstanding
    /// and its processes are busy (their CPU time advancing beyond the noise floor, or bytes
    /// moving on their TCP connections, as the host's samples of the process tree say:
    /// [`Registry::observe_tree`](crate::Registry::observe_tree)), no progress is no hang, up
    /// to this long after the last progress. Zero: evidence never holds the kill.
    pub fn busy_cap(&self) -> Duration {
        self.busy_cap
    }
    /// The memory guard: when the process tree's resident memory stays above this many bytes
    /// for 5 s, the session is killed `memory`. `None`: no guard.
    pub fn max_rss(&self) -> Option<u64> {
        self.max_rss.map(ByteSize::get)
    }
    /// A background task's own deadline: a task (a background subagent, shell or monitor)
    /// that printed nothing of its own (its `system/task_*` lines, the lines of its
    /// `parent_tool_use_id`) for this long is silent, counted from its last sign of life,
    /// never from its start, and for a monitor not before its declared expiry. A silent task
    /// is noticed ([`Event::TaskSilent`](crate::Event::TaskSilent)); while any outstanding
    /// task is not yet silent the idle kill waits, and an idle kill with tasks outstanding is
    /// [`KillKind::TaskSilent`](crate::KillKind::TaskSilent). `None`: the idle patience in
    /// force (the extended one while an extension holds).
    pub fn task_silence(&self) -> Option<Duration> {
        self.task_silence.map(PositiveDuration::get)
    }
    /// The bound on a control request of the host (read from the child's stdin: an
    /// `interrupt`, `get_context_usage`, `set_permission_mode`, …; not `initialize`, which
    /// the SDKs bound themselves) that Claude Code does not answer (`control_response` with its
    /// `request_id`): past it the session is killed
    /// [`KillKind::Unanswered`](crate::KillKind::Unanswered). A
    /// `system/control_request_progress` for the request restarts its clock, and the host's
    /// own `control_cancel_request` ends it. `None`: never.
    pub fn control_timeout(&self) -> Option<Duration> {
        self.control_timeout.map(PositiveDuration::get)
    }
    /// The MCP limits.
    pub fn mcp(&self) -> &McpLimits {
        &self.mcp
    }
    /// The extended idle patience, `idle × extend_factor` (saturates at [`Duration::MAX`]).
    pub fn extended_idle(&self) -> Duration {
        Duration::try_from_secs_f64(self.idle().as_secs_f64() * self.extend_factor())
            .unwrap_or(Duration::MAX)
    }
}
