//! [`McpLimits`], the MCP part of [`Limits`]: the floor an MCP call sets on the no-progress
//! kill, built from what Claude Code will do ([`McpSetup`], the facts of
//! [`mcp`](crate::mcp)).

use std::sync::Arc;
use std::time::Duration;

use super::{defaults, format_duration, valid, ConfigError, Limits, PositiveDuration};
use crate::mcp::{mcp_server_of, HEARTBEAT_TICK};
use crate::mcp::{McpSetup, STARTUP_VAR};

/// Where Claude Code itself gives up on a silent MCP tool call, per server, and the margin the
/// watchdog leaves it: the MCP part of [`Limits`].
///
/// While an MCP call is outstanding (an `assistant` `tool_use` of a tool named
/// `mcp__<server>__<tool>` not yet answered by its `tool_result`, or a `tool_progress`
/// heartbeat naming such a tool), the `no_progress` kill comes no earlier than the call's start
/// plus its server's give-up time plus the margin. A server with no give-up time (Claude Code
/// never aborts its calls by itself, e.g. `CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT=0`) sets no floor.
/// The give-up times come from what the child will use ([`McpLimits::from_setup`]; the rule
/// is [`mcp`](crate::mcp)).
///
/// # Default
///
/// | option | default | meaning |
/// |---|---|---|
/// | `give_up` | 30m | servers not listed: Claude Code's default idle limit for stdio servers (the longest of its defaults, so a server the host knows nothing about is not cut short) |
/// | `servers` | none | per-server give-up times |
/// | `margin` | 30s (Claude Code's heartbeat tick) | added to the give-up time; at least one heartbeat tick |
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
    /// The margin added to a give-up time. Must be at least one heartbeat tick (30 s):
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

    /// The MCP limits of a child that will use `setup`: each server's give-up time as Claude
    /// Code applies it, the stdio default for servers the command line does not name.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use std::path::Path;
    /// use std::time::Duration;
    /// use watchdog_core::mcp::McpSetup;
    /// use watchdog_core::McpLimits;
    /// let env = BTreeMap::from([("MCP_TOOL_TIMEOUT".to_owned(), "20000".to_owned())]);
    /// let setup = McpSetup::read(&["claude".to_owned()], &env, Path::new("/"), |_| Err(String::new()));
    /// let m = McpLimits::from_setup(&setup);
    /// assert_eq!(m.floor_for_tool("mcp__db__q"), Some(Duration::from_secs(50)));
    /// ```
    pub fn from_setup(setup: &McpSetup) -> McpLimits {
        let mut m = McpLimits::default();
        if let Ok(x) = m.clone().with_give_up(setup.default_give_up()) {
            m = x;
        }
        for (name, give_up) in setup.server_give_ups() {
            if let Ok(x) = m.clone().with_server(name, give_up) {
                m = x;
            }
        }
        m
    }
}

impl Limits {
    /// These limits with the MCP limits of a child that will use `setup` and, when a stuck
    /// server could hold the first line back past the startup limit
    /// ([`McpSetup::startup_hold`] plus one heartbeat tick, 30 s), a startup limit that leaves it
    /// room, with the sentence that says so (for the run to say once).
    pub fn with_mcp_setup(self, setup: &McpSetup) -> (Limits, Option<String>) {
        let mut limits = self.with_mcp(McpLimits::from_setup(setup));
        let mut note = None;
        if let Some(hold) = setup.startup_hold() {
            let needed = hold.saturating_add(HEARTBEAT_TICK);
            if needed > limits.startup() {
                let before = limits.startup();
                if let Ok(l) = limits.clone().with_startup(needed) {
                    limits = l;
                    let why = match setup.env.get(STARTUP_VAR) {
                        Some(v) => format!("{STARTUP_VAR}={v}"),
                        None => format!("{STARTUP_VAR} (unset: 30s)"),
                    };
                    note = Some(format!(
                        "{why} lets an MCP server that never answers hold the first line back \
                         for up to {}; startup extended from {} to {} for this run",
                        format_duration(hold),
                        format_duration(before),
                        format_duration(needed)
                    ));
                }
            }
        }
        (limits, note)
    }
}
