//! Policy limits: validated, plain data, with documented defaults.

use std::sync::Arc;
use std::time::Duration;

/// An invalid policy value: names the option, the allowed range and the value given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{option} must be {allowed}, got {value}")]
pub struct ConfigError {
    /// The option, e.g. `idle`.
    pub option: &'static str,
    /// The allowed range, e.g. `a duration > 0`.
    pub allowed: &'static str,
    /// The rejected value, rendered.
    pub value: String,
}

/// The liveness policy of a session.
///
/// # Default
///
/// | option | default | rule |
/// |---|---|---|
/// | `startup` | 3 min | no line at all since registration → kill `startup` |
/// | `idle` | 10 min | no progress and no keep-alive for the patience → kill `idle` |
/// | `extend_factor` | 2 | patience is `idle × extend_factor` before the first completed write tool and while utilization ≥ `high_utilization` |
/// | `high_utilization` | 0.9 | rate-limit utilization (0–1) at or above which patience is extended |
/// | `write_tools` | `Write`, `Edit`, `MultiEdit`, `NotebookEdit` | tools whose first completed call ends the pre-write extension |
/// | `no_progress` | 30 min | keep-alives but no progress for this long → kill `no_progress` |
/// | `linger` | 11 min | after a `result`, no new progress and the stream has not ended → kill `linger` |
/// | `ceiling` | none | total age → kill `ceiling` |
/// | `warn_at` | 0.8 | a `Stalling` event when the idle or no-progress clock passes this fraction |
/// | `mcp` | [`McpLimits::default`] | while an MCP tool call is outstanding, `no_progress` kills no earlier than where Claude Code itself gives up on that call, plus a margin |
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::Limits;
/// let limits = Limits::default().with_idle(Duration::from_secs(90)).unwrap();
/// assert_eq!(limits.idle(), Duration::from_secs(90));
/// assert!(Limits::default().with_extend_factor(0.5).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    startup: Duration,
    idle: Duration,
    extend_factor: f64,
    high_utilization: f64,
    write_tools: Arc<[Box<str>]>,
    no_progress: Duration,
    linger: Duration,
    ceiling: Option<Duration>,
    warn_at: f64,
    mcp: McpLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            startup: Duration::from_secs(180),
            idle: Duration::from_secs(600),
            extend_factor: 2.0,
            high_utilization: 0.9,
            write_tools: ["Write", "Edit", "MultiEdit", "NotebookEdit"]
                .into_iter()
                .map(Box::from)
                .collect(),
            no_progress: Duration::from_secs(1800),
            linger: Duration::from_secs(660),
            ceiling: None,
            warn_at: 0.8,
            mcp: McpLimits::default(),
        }
    }
}

fn positive(option: &'static str, d: Duration) -> Result<Duration, ConfigError> {
    if d.is_zero() {
        Err(ConfigError {
            option,
            allowed: "a duration > 0",
            value: format!("{d:?}"),
        })
    } else {
        Ok(d)
    }
}

/// Validate a fraction in [0, 1] (NaN is rejected).
pub(crate) fn unit(option: &'static str, x: f64) -> Result<f64, ConfigError> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(ConfigError {
            option,
            allowed: "a number in [0, 1]",
            value: format!("{x}"),
        })
    }
}

impl Limits {
    /// Base idle patience. Must be > 0.
    pub fn with_idle(mut self, d: Duration) -> Result<Self, ConfigError> {
        self.idle = positive("idle", d)?;
        Ok(self)
    }
    /// Startup limit (no line at all). Must be > 0.
    pub fn with_startup(mut self, d: Duration) -> Result<Self, ConfigError> {
        self.startup = positive("startup", d)?;
        Ok(self)
    }
    /// Patience multiplier while an extension holds. Must be a finite number ≥ 1.
    pub fn with_extend_factor(mut self, f: f64) -> Result<Self, ConfigError> {
        if !(f.is_finite() && f >= 1.0) {
            return Err(ConfigError {
                option: "extend_factor",
                allowed: "a number >= 1",
                value: format!("{f}"),
            });
        }
        self.extend_factor = f;
        Ok(self)
    }
    /// Utilization at or above which patience is extended. In [0, 1].
    pub fn with_high_utilization(mut self, u: f64) -> Result<Self, ConfigError> {
        self.high_utilization = unit("high_utilization", u)?;
        Ok(self)
    }
    /// The write tools whose first completed call ends the pre-write extension.
    pub fn with_write_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.write_tools = tools.into_iter().map(|s| Box::from(s.as_ref())).collect();
        self
    }
    /// Cap on a spell without progress, keep-alives or not. Must be > 0.
    pub fn with_no_progress(mut self, d: Duration) -> Result<Self, ConfigError> {
        self.no_progress = positive("no_progress", d)?;
        Ok(self)
    }
    /// Bounded wait after a `result`. Must be > 0.
    pub fn with_linger(mut self, d: Duration) -> Result<Self, ConfigError> {
        self.linger = positive("linger", d)?;
        Ok(self)
    }
    /// Total age limit, or `None` for no ceiling. Must be > 0 when set.
    pub fn with_ceiling(mut self, d: Option<Duration>) -> Result<Self, ConfigError> {
        self.ceiling = d.map(|d| positive("ceiling", d)).transpose()?;
        Ok(self)
    }
    /// Fraction of a limit at which a `Stalling` event is emitted. In (0, 1]; 1 disables it
    /// in effect (the warning would coincide with the kill and is not emitted).
    pub fn with_warn_at(mut self, f: f64) -> Result<Self, ConfigError> {
        if !(f > 0.0 && f <= 1.0) {
            return Err(ConfigError {
                option: "warn_at",
                allowed: "a number in (0, 1]",
                value: format!("{f}"),
            });
        }
        self.warn_at = f;
        Ok(self)
    }

    /// Where Claude Code gives up on MCP tool calls by itself (the no-progress floor while
    /// one is outstanding).
    pub fn with_mcp(mut self, mcp: McpLimits) -> Self {
        self.mcp = mcp;
        self
    }

    /// Startup limit.
    pub fn startup(&self) -> Duration {
        self.startup
    }
    /// Base idle patience.
    pub fn idle(&self) -> Duration {
        self.idle
    }
    /// Extension factor.
    pub fn extend_factor(&self) -> f64 {
        self.extend_factor
    }
    /// High-utilization threshold.
    pub fn high_utilization(&self) -> f64 {
        self.high_utilization
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
        self.no_progress
    }
    /// Linger limit.
    pub fn linger(&self) -> Duration {
        self.linger
    }
    /// Ceiling.
    pub fn ceiling(&self) -> Option<Duration> {
        self.ceiling
    }
    /// Stalling-warning fraction.
    pub fn warn_at(&self) -> f64 {
        self.warn_at
    }
    /// The MCP limits.
    pub fn mcp(&self) -> &McpLimits {
        &self.mcp
    }
    /// The extended idle patience, `idle × extend_factor` (saturates at [`Duration::MAX`]).
    pub fn extended_idle(&self) -> Duration {
        Duration::try_from_secs_f64(self.idle.as_secs_f64() * self.extend_factor)
            .unwrap_or(Duration::MAX)
    }
}

/// Claude Code's heartbeat tick: while a tool call is outstanding it prints a `tool_progress`
/// line every 30 s from the start of the call, and it checks an MCP call's idle limit on that
/// tick.
pub const HEARTBEAT_TICK: Duration = Duration::from_secs(30);

/// Claude Code's own idle limit on a stdio MCP server's call (1,800 s): with no response and no
/// progress notification for that long it aborts the call with an `is_error` tool result,
/// and the session goes on.
pub const CLAUDE_CODE_STDIO_IDLE: Duration = Duration::from_secs(1800);

/// Claude Code's own idle limit on a call to a non-stdio (HTTP, SSE, …) MCP server (300 s).
pub const CLAUDE_CODE_REMOTE_IDLE: Duration = Duration::from_secs(300);

/// Where Claude Code itself gives up on a silent MCP tool call, per server, and the margin the
/// watchdog leaves it: the MCP part of [`Limits`].
///
/// While an MCP call is outstanding (an `assistant` `tool_use` of a tool named
/// `mcp__<server>__<tool>` not yet answered by its `tool_result`, or a `tool_progress`
/// heartbeat naming such a tool), the `no_progress` kill comes no earlier than the call's start
/// plus its server's give-up time plus the margin. A server with no give-up time (Claude Code
/// never aborts its calls by itself, e.g. `CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT=0`) sets no floor.
/// The host derives the give-up times from what the child will use (see
/// [`McpLimits::claude_code_give_up`]); the core only applies them.
///
/// # Default
///
/// | option | default | meaning |
/// |---|---|---|
/// | `give_up` | 1,800 s | servers not listed: Claude Code's default idle limit for stdio servers (the longest of its defaults, so a server the host knows nothing about is not cut short) |
/// | `servers` | none | per-server give-up times |
/// | `margin` | 30 s ([`HEARTBEAT_TICK`]) | added to the give-up time; at least one heartbeat tick |
///
/// So by default a hung MCP call is killed (`no_progress`) 1,830 s after it started, 30 s after
/// Claude Code would have aborted it and carried on, never 0.3 s before as a plain 30-minute
/// no-progress limit did.
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::McpLimits;
/// let m = McpLimits::default()
///     .with_server("db", Some(Duration::from_secs(60)))
///     .unwrap();
/// assert_eq!(m.floor_for_tool("mcp__db__query"), Some(Duration::from_secs(90)));
/// assert_eq!(m.floor_for_tool("mcp__fs__read"), Some(Duration::from_secs(1830)));
/// assert_eq!(m.floor_for_tool("Bash"), None);
/// assert!(McpLimits::default().with_margin(Duration::from_secs(5)).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McpLimits {
    give_up: Option<Duration>,
    servers: Arc<[(Box<str>, Option<Duration>)]>,
    margin: Duration,
}

impl Default for McpLimits {
    fn default() -> Self {
        McpLimits {
            give_up: Some(CLAUDE_CODE_STDIO_IDLE),
            servers: Arc::new([]),
            margin: HEARTBEAT_TICK,
        }
    }
}

/// The server part of an MCP tool name `mcp__<server>__<tool>`, if `tool` is one.
///
/// ```
/// assert_eq!(watchdog_core::config::mcp_server_of("mcp__db__query"), Some("db"));
/// assert_eq!(watchdog_core::config::mcp_server_of("Bash"), None);
/// ```
pub fn mcp_server_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix("mcp__")?;
    let server = match rest.find("__") {
        Some(i) => &rest[..i],
        None => rest,
    };
    (!server.is_empty()).then_some(server)
}

impl McpLimits {
    /// The give-up time of servers not listed (`None`: Claude Code never gives up; no floor).
    /// Must be > 0 when set.
    pub fn with_give_up(mut self, d: Option<Duration>) -> Result<Self, ConfigError> {
        self.give_up = d.map(|d| positive("mcp.give_up", d)).transpose()?;
        Ok(self)
    }
    /// The give-up time of one server (replaces an earlier entry of the same name). Must be
    /// > 0 when set.
    pub fn with_server(
        mut self,
        name: impl AsRef<str>,
        d: Option<Duration>,
    ) -> Result<Self, ConfigError> {
        let d = d.map(|d| positive("mcp.servers", d)).transpose()?;
        let name = name.as_ref();
        let mut v: Vec<(Box<str>, Option<Duration>)> = self
            .servers
            .iter()
            .filter(|(n, _)| &**n != name)
            .cloned()
            .collect();
        v.push((name.into(), d));
        self.servers = v.into();
        Ok(self)
    }
    /// The margin added to a give-up time. Must be at least one [`HEARTBEAT_TICK`] (30 s):
    /// Claude Code checks its idle limit only on that tick.
    pub fn with_margin(mut self, d: Duration) -> Result<Self, ConfigError> {
        if d < HEARTBEAT_TICK {
            return Err(ConfigError {
                option: "mcp.margin",
                allowed: "a duration >= 30s",
                value: format!("{d:?}"),
            });
        }
        self.margin = d;
        Ok(self)
    }

    /// The give-up time of servers not listed.
    pub fn give_up(&self) -> Option<Duration> {
        self.give_up
    }
    /// The per-server give-up times.
    pub fn servers(&self) -> &[(Box<str>, Option<Duration>)] {
        &self.servers
    }
    /// The margin.
    pub fn margin(&self) -> Duration {
        self.margin
    }
    /// The give-up time of `server`.
    pub fn give_up_for(&self, server: &str) -> Option<Duration> {
        match self.servers.iter().find(|(n, _)| &**n == server) {
            Some((_, d)) => *d,
            None => self.give_up,
        }
    }
    /// The no-progress floor of a call to `tool`, counted from the call's start: its server's
    /// give-up time plus the margin; `None` for a tool that is not an MCP tool or whose
    /// server sets no floor.
    pub fn floor_for_tool(&self, tool: &str) -> Option<Duration> {
        let server = mcp_server_of(tool)?;
        self.give_up_for(server)
            .map(|g| g.saturating_add(self.margin))
    }

    /// Where Claude Code gives up on a silent call, counted from its start, given the limits
    /// it uses for the server: `idle` (its idle limit, checked on each [`HEARTBEAT_TICK`] from
    /// the start of the call, so the abort comes at the first tick at or after it; `None` when
    /// disabled) and `hard` (its wall-clock limit per call, exact; `None` when there is none
    /// to wait for). The earlier of the two; `None` when neither applies.
    ///
    /// ```
    /// use std::time::Duration;
    /// use watchdog_core::McpLimits;
    /// let s = Duration::from_secs;
    /// // Measured: idle 20 s → aborted on the 30 s tick; idle 1,800 s → on the 1,800 s tick.
    /// assert_eq!(McpLimits::claude_code_give_up(Some(s(20)), None), Some(s(30)));
    /// assert_eq!(McpLimits::claude_code_give_up(Some(s(1800)), None), Some(s(1800)));
    /// assert_eq!(McpLimits::claude_code_give_up(Some(s(1800)), Some(s(20))), Some(s(20)));
    /// assert_eq!(McpLimits::claude_code_give_up(None, None), None);
    /// ```
    pub fn claude_code_give_up(idle: Option<Duration>, hard: Option<Duration>) -> Option<Duration> {
        let tick = HEARTBEAT_TICK.as_nanos();
        let idle = idle.map(|d| {
            let ticks = d.as_nanos().div_ceil(tick).max(1);
            u64::try_from(ticks * tick).map_or(Duration::MAX, Duration::from_nanos)
        });
        match (idle, hard) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .filter(|d| !d.is_zero())
    }
}

/// Per-session settings: overrides of the registry's [`Limits`].
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::{Limits, SessionConfig};
/// let cfg = SessionConfig::default()
///     .with_limits(Limits::default().with_ceiling(Some(Duration::from_secs(3600))).unwrap());
/// assert!(cfg.limits().is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionConfig {
    limits: Option<Limits>,
}

impl SessionConfig {
    /// Use these limits for this session instead of the registry's.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = Some(limits);
        self
    }
    /// The overriding limits, if any.
    pub fn limits(&self) -> Option<&Limits> {
        self.limits.as_ref()
    }
}
