//! What Claude Code does about MCP servers by itself, read from how it was started.
//!
//! The rule (Claude Code 2.1.332; see `testdata/mcp/README.md`):
//!
//! - A call to a server is aborted by Claude Code itself when it sent no response or progress
//!   for the server's idle limit: `CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT` (ms; `0` disables it),
//!   else 1,800 s for stdio servers and 300 s for the others (none for IDE transports),
//!   raised to the server's `"timeout"` when that is longer, and checked on the 30 s heartbeat
//!   tick. A hard per-call limit also applies: the server's `"timeout"` (ms, at least 1,000),
//!   else `MCP_TOOL_TIMEOUT` (ms). Claude Code's own default hard limit (1e8 ms, 27.8 h) is
//!   not waited for, nor is a call whose idle limit is disabled and which has no hard limit:
//!   such calls have no give-up time.
//! - Servers come from `--mcp-config` (files, or inline JSON); servers the command line does
//!   not name (settings files, `.mcp.json`) get the stdio default, the longest, or
//!   `CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT` when set.
//! - Startup: a server that never answers `initialize` holds `system/init` back for up to
//!   `MCP_TIMEOUT` (ms; 30 s when unset or not a positive number).
//! - Its tools are named `mcp__<server>__<tool>` ([`mcp_tool_parts`]).
//!
//! The policy's side of it (the floor a call sets, the startup limit that leaves room) is
//! [`McpLimits`](crate::McpLimits), built from an [`McpSetup`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// Claude Code's heartbeat tick: while a tool call is outstanding it prints a `tool_progress`
/// line every 30 s from the start of the call, and it checks an MCP call's idle limit on that
/// tick.
pub(crate) const HEARTBEAT_TICK: Duration = Duration::from_secs(30);

/// Claude Code's own idle limit on a stdio MCP server's call (1,800 s): with no response and no
/// progress notification for that long it aborts the call with an `is_error` tool result,
/// and the session goes on.
pub(crate) const STDIO_IDLE: Duration = Duration::from_secs(1800);

/// Claude Code's own idle limit on a call to a non-stdio (HTTP, SSE, …) MCP server (300 s).
pub(crate) const REMOTE_IDLE: Duration = Duration::from_secs(300);

/// How long a server that never answers `initialize` holds `system/init` back when
/// [`STARTUP_VAR`] is unset or not a positive number (30 s).
pub(crate) const DEFAULT_STARTUP_HOLD: Duration = Duration::from_secs(30);

/// Claude Code's idle limit on a call (ms; `0` disables).
pub(crate) const IDLE_VAR: &str = "CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT";
/// Claude Code's hard limit on a call (ms).
pub(crate) const TOOL_VAR: &str = "MCP_TOOL_TIMEOUT";
/// Claude Code's limit on a server's startup (ms).
pub(crate) const STARTUP_VAR: &str = "MCP_TIMEOUT";
/// The variables that change the MCP rule.
pub const VARS: [&str; 3] = [IDLE_VAR, TOOL_VAR, STARTUP_VAR];

const STDIO_IDLE_MS: u64 = STDIO_IDLE.as_millis() as u64;
const REMOTE_IDLE_MS: u64 = REMOTE_IDLE.as_millis() as u64;
/// Claude Code clamps every limit to a 32-bit timer.
const MAX_TIMER_MS: u64 = 2_147_483_647;
/// Claude Code's own default hard limit on a call (1e8 ms), never waited for.
const DEFAULT_HARD_MS: u64 = 100_000_000;

/// Claude Code names the tools of MCP servers `mcp__<server>__<tool>`: this prefix is the one
/// rule the watchdog uses to tell an MCP call from a built-in tool ([`is_mcp_tool`]).
pub(crate) const MCP_TOOL_PREFIX: &str = "mcp__";

/// Whether Claude Code's tool name `tool` is an MCP server's tool (`mcp__…`).
///
/// ```
/// assert!(watchdog_core::mcp::is_mcp_tool("mcp__db__query"));
/// assert!(!watchdog_core::mcp::is_mcp_tool("Bash"));
/// ```
pub fn is_mcp_tool(tool: &str) -> bool {
    tool.starts_with(MCP_TOOL_PREFIX)
}

/// An MCP tool name `mcp__<server>__<tool>` split into its server and tool (the tool may
/// contain `__` itself); `None` for another name, or one without both parts.
///
/// ```
/// use watchdog_core::mcp::mcp_tool_parts;
/// assert_eq!(mcp_tool_parts("mcp__db__query"), Some(("db", "query")));
/// assert_eq!(mcp_tool_parts("mcp__db__a__b"), Some(("db", "a__b")));
/// assert_eq!(mcp_tool_parts("mcp__db"), None);
/// assert_eq!(mcp_tool_parts("Bash"), None);
/// ```
pub fn mcp_tool_parts(tool: &str) -> Option<(&str, &str)> {
    tool.strip_prefix(MCP_TOOL_PREFIX)?
        .split_once("__")
        .filter(|(server, _)| !server.is_empty())
}

/// The server part of an MCP tool name `mcp__<server>__<tool>` (or `mcp__<server>`), if
/// `tool` is one.
pub(crate) fn mcp_server_of(tool: &str) -> Option<&str> {
    if let Some((server, _)) = mcp_tool_parts(tool) {
        return Some(server);
    }
    let rest = tool.strip_prefix(MCP_TOOL_PREFIX)?;
    (!rest.is_empty() && !rest.contains("__")).then_some(rest)
}

/// Where Claude Code gives up on a silent call, counted from its start, given the limits it
/// uses for the server: `idle` (its idle limit, checked on each heartbeat tick, 30 s, from the
/// start of the call, so the abort comes at the first tick at or after it; `None` when
/// disabled) and `hard` (its wall-clock limit per call, exact; `None` when there is none to
/// wait for). The earlier of the two; `None` when neither applies.
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::mcp::give_up;
/// let s = Duration::from_secs;
/// // Measured: idle 20 s → aborted on the 30 s tick; idle 1,800 s → on the 1,800 s tick.
/// assert_eq!(give_up(Some(s(20)), None), Some(s(30)));
/// assert_eq!(give_up(Some(s(1800)), None), Some(s(1800)));
/// assert_eq!(give_up(Some(s(1800)), Some(s(20))), Some(s(20)));
/// assert_eq!(give_up(None, None), None);
/// ```
pub fn give_up(idle: Option<Duration>, hard: Option<Duration>) -> Option<Duration> {
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

/// One server named by an MCP config on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The server's name (the `<server>` of `mcp__<server>__<tool>`).
    pub name: String,
    /// Its transport: `stdio` (also when absent), `http`, `sse`, `ws`, `sse-ide`, `ws-ide`, …
    pub transport: String,
    /// Its `"timeout"` (ms), if any.
    pub timeout_ms: Option<u64>,
}

/// What a child's Claude Code will use for MCP: the variables of its environment, the servers
/// of its `--mcp-config` arguments, and what could not be read ([`McpSetup::read`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpSetup {
    /// The MCP variables of the child's environment (only [`VARS`]).
    pub env: BTreeMap<String, String>,
    /// The servers of the `--mcp-config` arguments that could be read.
    pub servers: Vec<McpServer>,
    /// Whether the command line has `--mcp-config` at all.
    pub has_config: bool,
    /// Problems reading the configs (an unreadable file, bad JSON), for one warning each.
    pub problems: Vec<String>,
}

/// A millisecond value as Claude Code reads it: decimal digits (surrounding blanks allowed).
fn parse_ms(v: &str) -> Option<u64> {
    let v = v.trim();
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse::<u64>().ok())
        .flatten()
}

impl McpSetup {
    /// Read from how a child was started: its command line (`argv`, the program first), its
    /// environment and its working directory; the config files `--mcp-config` names are read
    /// with `read` (the path joined to `cwd`; `Err` is the problem to report).
    pub fn read(
        argv: &[String],
        env: &BTreeMap<String, String>,
        cwd: &Path,
        mut read: impl FnMut(&Path) -> Result<String, String>,
    ) -> Self {
        let mut out = McpSetup {
            env: env
                .iter()
                .filter(|(k, _)| VARS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            ..McpSetup::default()
        };
        for config in mcp_config_args(argv) {
            out.has_config = true;
            let text = if config.trim_start().starts_with('{') {
                config.to_owned()
            } else {
                match read(&cwd.join(config)) {
                    Ok(t) => t,
                    Err(problem) => {
                        out.problems.push(problem);
                        continue;
                    }
                }
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(v) => out.servers.extend(servers_of(&v)),
                Err(e) => out
                    .problems
                    .push(format!("cannot parse the MCP config {config}: {e}")),
            }
        }
        out
    }

    fn var(&self, k: &str) -> Option<u64> {
        self.env.get(k).and_then(|v| parse_ms(v))
    }

    /// Claude Code's hard limit on a call to a server with this `"timeout"` (ms), or `None`
    /// when only its own default (1e8 ms) applies.
    fn hard_ms(&self, server_timeout: Option<u64>) -> Option<u64> {
        server_timeout
            .filter(|t| *t >= 1000)
            .or(self.var(TOOL_VAR).filter(|t| *t >= 1))
            .map(|t| t.clamp(1000, MAX_TIMER_MS))
    }

    /// Where Claude Code gives up on a silent call to a server of `transport` with this
    /// `"timeout"`, from the call's start.
    fn give_up(&self, transport: &str, server_timeout: Option<u64>) -> Option<Duration> {
        let hard = self.hard_ms(server_timeout);
        let idle = if matches!(transport, "sse-ide" | "ws-ide") {
            None
        } else {
            let h = self.var(IDLE_VAR).unwrap_or(if transport == "stdio" {
                STDIO_IDLE_MS
            } else {
                REMOTE_IDLE_MS
            });
            (h > 0).then(|| {
                let g = server_timeout.filter(|t| *t >= 1000).unwrap_or(0);
                h.max(g)
                    .max(1000)
                    .min(hard.unwrap_or(DEFAULT_HARD_MS).min(MAX_TIMER_MS))
            })
        };
        give_up(
            idle.map(Duration::from_millis),
            hard.map(Duration::from_millis),
        )
    }

    /// Where Claude Code gives up on a call to a server the command line does not name: the
    /// stdio default, the longest (their transport is unknown).
    pub fn default_give_up(&self) -> Option<Duration> {
        self.give_up("stdio", None)
    }

    /// Where Claude Code gives up on a call to each named server, in the order of the command
    /// line (a later entry of the same name wins).
    pub fn server_give_ups(&self) -> impl Iterator<Item = (&str, Option<Duration>)> + '_ {
        self.servers
            .iter()
            .map(|s| (s.name.as_str(), self.give_up(&s.transport, s.timeout_ms)))
    }

    /// Where Claude Code gives up on a call to `server`.
    pub fn give_up_for(&self, server: &str) -> Option<Duration> {
        match self.server_give_ups().filter(|(n, _)| *n == server).last() {
            Some((_, g)) => g,
            None => self.default_give_up(),
        }
    }

    /// The longest a stuck server may hold `system/init` back: `MCP_TIMEOUT`, or its 30 s
    /// default; `None` when no MCP server is known to be configured (no `--mcp-config`, and
    /// `MCP_TIMEOUT` unset).
    pub fn startup_hold(&self) -> Option<Duration> {
        let set = self.env.contains_key(STARTUP_VAR);
        if !(set || self.has_config) {
            return None;
        }
        Some(
            self.var(STARTUP_VAR)
                .filter(|t| *t > 0)
                .map_or(DEFAULT_STARTUP_HOLD, Duration::from_millis),
        )
    }
}

/// The values of every `--mcp-config` on the command line: `--mcp-config=X`, or the
/// arguments after `--mcp-config` up to the next one that starts with `-`.
fn mcp_config_args(argv: &[String]) -> Vec<&str> {
    let args = argv.get(1..).unwrap_or_default();
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            break;
        }
        if let Some(v) = a.strip_prefix("--mcp-config=") {
            out.push(v);
        } else if a == "--mcp-config" {
            while let Some(v) = args.get(i + 1).filter(|v| !v.starts_with('-')) {
                out.push(v.as_str());
                i += 1;
            }
        }
        i += 1;
    }
    out
}

/// The servers of one MCP config (`{"mcpServers": {name: {…}}}`).
fn servers_of(v: &Value) -> Vec<McpServer> {
    let Some(map) = v.get("mcpServers").and_then(Value::as_object) else {
        return Vec::new();
    };
    map.iter()
        .map(|(name, s)| McpServer {
            name: name.clone(),
            transport: s
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("stdio")
                .to_owned(),
            timeout_ms: s.get("timeout").and_then(|t| {
                t.as_u64()
                    .or_else(|| t.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, McpLimits};

    #[test]
    fn the_server_of_a_tool_name() {
        assert_eq!(mcp_server_of("mcp__db__query"), Some("db"));
        assert_eq!(mcp_server_of("Bash"), None);
    }

    fn s(x: u64) -> Duration {
        Duration::from_secs(x)
    }

    /// The setup of `claude argv…` with `env`; every config file is unreadable.
    fn child(env: &[(&str, &str)], argv: &[&str]) -> McpSetup {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        McpSetup::read(&argv, &env, Path::new("/nonexistent"), |p| {
            Err(format!("cannot read the MCP config {}", p.display()))
        })
    }

    #[test]
    fn defaults_are_claude_codes() {
        let c = child(&[], &["claude", "-p", "x"]);
        let m = McpLimits::from_setup(&c);
        assert_eq!(m.give_up(), Some(s(1800)));
        assert_eq!(m.floor_for_tool("mcp__db__q"), Some(s(1830)));
        assert_eq!(c.startup_hold(), None);
        let (l, note) = Limits::default().with_mcp_setup(&c);
        assert_eq!(l.startup(), s(180));
        assert_eq!(note, None);
    }

    #[test]
    fn the_environment_moves_or_removes_the_floor() {
        let give_up = |c: &McpSetup| McpLimits::from_setup(c).give_up();
        // Measured: idle 20000 → aborted on the 30 s tick.
        let c = child(&[(IDLE_VAR, "20000")], &["claude"]);
        assert_eq!(give_up(&c), Some(s(30)));
        // 0 disables the idle limit; no hard limit set: no floor.
        let c = child(&[(IDLE_VAR, "0"), (TOOL_VAR, "0")], &["claude"]);
        assert_eq!(give_up(&c), None);
        // A hard limit alone: exact.
        let c = child(&[(IDLE_VAR, "0"), (TOOL_VAR, "20000")], &["claude"]);
        assert_eq!(give_up(&c), Some(s(20)));
        // The hard limit wins when earlier than the idle one.
        let c = child(&[(TOOL_VAR, "45000")], &["claude"]);
        assert_eq!(give_up(&c), Some(s(45)));
        // Garbage is ignored, as by Claude Code.
        let c = child(&[(IDLE_VAR, "soon")], &["claude"]);
        assert_eq!(give_up(&c), Some(s(1800)));
    }

    #[test]
    fn per_server_timeouts_and_transports_from_an_inline_config() {
        let config = r#"{"mcpServers":{
            "db":{"command":"db-server","timeout":120000},
            "web":{"type":"http","url":"http://x"},
            "ide":{"type":"ws-ide","url":"ws://x"},
            "tiny":{"command":"t","timeout":500}}}"#;
        let c = child(&[], &["claude", "--mcp-config", config, "-p", "x"]);
        assert!(c.has_config && c.problems.is_empty(), "{c:?}");
        let m = McpLimits::from_setup(&c);
        // "timeout" is a hard limit per call, and raises the idle limit: 120 s.
        assert_eq!(m.give_up_for("db"), Some(s(120)));
        assert_eq!(m.give_up_for("web"), Some(s(300)));
        assert_eq!(m.give_up_for("ide"), None);
        // Under 1,000 ms the timeout is ignored.
        assert_eq!(m.give_up_for("tiny"), Some(s(1800)));
        assert_eq!(m.give_up_for("other"), Some(s(1800)));
        // The setup answers the same, server by server.
        for server in ["db", "web", "ide", "tiny", "other"] {
            assert_eq!(c.give_up_for(server), m.give_up_for(server), "{server}");
        }
    }

    #[test]
    fn startup_leaves_room_for_mcp_timeout() {
        let c = child(&[(STARTUP_VAR, "60000")], &["claude"]);
        let limits = Limits::default().with_startup(s(20)).unwrap();
        let (l, note) = limits.with_mcp_setup(&c);
        assert_eq!(l.startup(), s(90));
        let note = note.expect("a note");
        assert!(
            note.contains("MCP_TIMEOUT=60000") && note.contains("1m30s"),
            "{note}"
        );
        // Already long enough: unchanged, nothing said.
        let (l, note) = Limits::default().with_mcp_setup(&c);
        assert_eq!((l.startup(), note), (s(180), None));
        // A config but no MCP_TIMEOUT: its 30 s default.
        let c = child(&[], &["claude", "--mcp-config", "{}"]);
        let (l, _) = Limits::default()
            .with_startup(s(10))
            .unwrap()
            .with_mcp_setup(&c);
        assert_eq!(l.startup(), s(60));
    }

    /// Config files are read through the host's reader, at the working directory; inline
    /// JSON is never handed to it; what the reader refuses is one problem each.
    #[test]
    fn config_files_go_through_the_reader_relative_to_the_working_directory() {
        let argv: Vec<String> = [
            "claude",
            "--mcp-config=mcp.json",
            "not-a-config.json",
            "--mcp-config",
            "/abs/other.json",
            r#"{"mcpServers":{"inline":{"timeout":90000}}}"#,
            "bad.json",
            "-p",
            "x",
            "--",
            "--mcp-config=after-the-separator.json",
        ]
        .map(str::to_owned)
        .to_vec();
        let mut asked = Vec::new();
        let setup = McpSetup::read(&argv, &BTreeMap::new(), Path::new("/work/dir"), |p| {
            asked.push(p.to_path_buf());
            match p.file_name().and_then(|n| n.to_str()) {
                Some("mcp.json") => Ok(r#"{"mcpServers":{"probe":{"timeout":60000}}}"#.into()),
                Some("bad.json") => Ok("{not json".into()),
                _ => Err(format!("cannot read the MCP config {}", p.display())),
            }
        });
        assert_eq!(
            asked,
            [
                Path::new("/work/dir/mcp.json"),
                Path::new("/abs/other.json"),
                Path::new("/work/dir/bad.json")
            ]
        );
        assert_eq!(setup.give_up_for("probe"), Some(s(60)));
        assert_eq!(setup.give_up_for("inline"), Some(s(90)));
        assert_eq!(setup.problems.len(), 2, "{:?}", setup.problems);
        assert!(setup.problems[0].contains("/abs/other.json"));
        assert!(setup.problems[1].starts_with("cannot parse the MCP config bad.json"));
    }

    /// Only the MCP variables are kept, from whatever environment the host hands over.
    #[test]
    fn only_the_mcp_variables_are_kept() {
        let env: BTreeMap<String, String> = [IDLE_VAR, STARTUP_VAR, "HOME", "PATH"]
            .iter()
            .map(|k| ((*k).to_owned(), format!("{k}-value")))
            .collect();
        let setup = McpSetup::read(&["claude".to_owned()], &env, Path::new("/"), |_| {
            Err(String::new())
        });
        let keys: Vec<&str> = setup.env.keys().map(String::as_str).collect();
        assert_eq!(keys, [IDLE_VAR, STARTUP_VAR]);
    }

    /// The naming rule, one reading for the policy (the server) and telemetry (both parts).
    #[test]
    fn mcp_tool_names_split_into_server_and_tool() {
        assert_eq!(mcp_tool_parts("mcp__db__query"), Some(("db", "query")));
        assert_eq!(mcp_tool_parts("mcp__db__a__b"), Some(("db", "a__b")));
        assert_eq!(mcp_server_of("mcp__db__query"), Some("db"));
        assert_eq!(mcp_server_of("mcp__db"), Some("db"));
        assert_eq!(mcp_tool_parts("mcp____x"), None);
        assert_eq!(mcp_server_of("mcp____x"), None);
        assert_eq!(mcp_server_of("mcp__"), None);
        assert!(is_mcp_tool("mcp__db__query") && !is_mcp_tool("Bash"));
        assert_eq!(
            (mcp_server_of("Bash"), mcp_tool_parts("Bash")),
            (None, None)
        );
    }
}
