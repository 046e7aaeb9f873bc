//! Claude Code's MCP facts the policy applies: its heartbeat tick, where it gives up on a
//! silent MCP tool call, the `mcp__` naming of MCP tools, and [`McpLimits`], the MCP part of
//! [`Limits`](super::Limits).

use std::sync::Arc;
use std::time::Duration;

use super::{defaults, valid, ConfigError, PositiveDuration};

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
/// watchdog leaves it: the MCP part of [`Limits`](super::Limits).
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
/// | `give_up` | 30m | servers not listed: Claude Code's default idle limit for stdio servers (the longest of its defaults, so a server the host knows nothing about is not cut short) |
/// | `servers` | none | per-server give-up times |
/// | `margin` | 30s ([`HEARTBEAT_TICK`]) | added to the give-up time; at least one heartbeat tick |
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
///
/// // Every row of the table, checked against the default:
/// let d = McpLimits::default();
/// assert_eq!(d.give_up(), Some(Duration::from_secs(30 * 60)));
/// assert!(d.servers().is_empty());
/// assert_eq!(d.margin(), Duration::from_secs(30));
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
            give_up: defaults::MCP_GIVE_UP.map(PositiveDuration::get),
            servers: Arc::new([]),
            margin: defaults::MCP_MARGIN,
        }
    }
}

/// Claude Code names the tools of MCP servers `mcp__<server>__<tool>`: this prefix is the one
/// rule the watchdog uses to tell an MCP call from a built-in tool ([`is_mcp_tool`]).
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// Whether Claude Code's tool name `tool` is an MCP server's tool (`mcp__…`).
///
/// ```
/// assert!(watchdog_core::config::is_mcp_tool("mcp__db__query"));
/// assert!(!watchdog_core::config::is_mcp_tool("Bash"));
/// ```
pub fn is_mcp_tool(tool: &str) -> bool {
    tool.starts_with(MCP_TOOL_PREFIX)
}

/// The server part of an MCP tool name `mcp__<server>__<tool>`, if `tool` is one.
///
/// ```
/// assert_eq!(watchdog_core::config::mcp_server_of("mcp__db__query"), Some("db"));
/// assert_eq!(watchdog_core::config::mcp_server_of("Bash"), None);
/// ```
pub fn mcp_server_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(MCP_TOOL_PREFIX)?;
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
        self.give_up =
            valid::<Option<PositiveDuration>>("mcp.give_up", d)?.map(PositiveDuration::get);
        Ok(self)
    }
    /// The give-up time of one server (replaces an earlier entry of the same name). Must be
    /// > 0 when set.
    pub fn with_server(
        mut self,
        name: impl AsRef<str>,
        d: Option<Duration>,
    ) -> Result<Self, ConfigError> {
        let d = valid::<Option<PositiveDuration>>("mcp.servers", d)?.map(PositiveDuration::get);
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
