//! What the child's Claude Code will do about MCP servers by itself, read from its environment
//! and command line, as the core's policy data ([`McpLimits`]) and a startup floor.
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
//!   such calls set no floor.
//! - Servers come from `--mcp-config` (files, read when readable, or inline JSON); servers the
//!   command line does not name (settings files, `.mcp.json`) get the stdio default, the
//!   longest, or `CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT` when set.
//! - Startup: a server that never answers `initialize` holds `system/init` back for up to
//!   `MCP_TIMEOUT` (ms; 30 s when unset or not a positive number). When an MCP server may be
//!   configured (`--mcp-config` given, or `MCP_TIMEOUT` set) and `MCP_TIMEOUT` plus 30 s is
//!   longer than the startup limit, startup is extended to that for the run, and the run says
//!   so once.
//!
//! Only the three variables above are read, and only they are recorded in a capture's `start`
//! record (never the rest of the environment).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use watchdog_core::config::{CLAUDE_CODE_REMOTE_IDLE, CLAUDE_CODE_STDIO_IDLE};
use watchdog_core::{Limits, McpLimits, HEARTBEAT_TICK};

use watchdog_core::config::format_duration;

/// Claude Code's idle limit on a call (ms; `0` disables).
pub const IDLE_VAR: &str = "CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT";
/// Claude Code's hard limit on a call (ms).
pub const TOOL_VAR: &str = "MCP_TOOL_TIMEOUT";
/// Claude Code's limit on a server's startup (ms).
pub const STARTUP_VAR: &str = "MCP_TIMEOUT";
/// The variables that change the MCP rule.
pub const VARS: [&str; 3] = [IDLE_VAR, TOOL_VAR, STARTUP_VAR];

const STDIO_IDLE_MS: u64 = CLAUDE_CODE_STDIO_IDLE.as_millis() as u64;
const REMOTE_IDLE_MS: u64 = CLAUDE_CODE_REMOTE_IDLE.as_millis() as u64;
const DEFAULT_STARTUP_MS: u64 = 30_000;
/// Claude Code clamps every limit to a 32-bit timer.
const MAX_TIMER_MS: u64 = 2_147_483_647;

/// One server named by an MCP config on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The server's name (the `<server>` of `mcp__<server>__<tool>`).
    pub name: String,
    /// Its transport: `stdio` (also when absent), `http`, `sse`, `ws`, `sse-ide`, `ws-ide`, …
    pub transport: String,
    /// Its `"timeout"` (ms), if any.
    pub timeout_ms: Option<u64>,
}

/// What the child's Claude Code will use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildMcp {
    /// The MCP variables of the child's environment (only [`VARS`]).
    pub env: BTreeMap<String, String>,
    /// The servers of the `--mcp-config` arguments that could be read.
    pub servers: Vec<Server>,
    /// Whether the command line has `--mcp-config` at all.
    pub has_config: bool,
    /// Problems reading the configs (an unreadable file, bad JSON), for one warning each.
    pub problems: Vec<String>,
}

/// An MCP config larger than this is not read (its servers get the default limits).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A millisecond value as Claude Code reads it: decimal digits (surrounding blanks allowed).
fn parse_ms(v: &str) -> Option<u64> {
    let v = v.trim();
    (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse::<u64>().ok())
        .flatten()
}

impl ChildMcp {
    /// Read it from the child's environment (`env(name)`), command line (`argv`, the program
    /// first) and working directory (relative config paths).
    pub fn read(env: impl Fn(&str) -> Option<String>, argv: &[OsString], cwd: &Path) -> Self {
        let mut out = ChildMcp::default();
        for k in VARS {
            if let Some(v) = env(k) {
                out.env.insert(k.to_owned(), v);
            }
        }
        for config in mcp_config_args(argv) {
            out.has_config = true;
            let text = if config.trim_start().starts_with('{') {
                config.clone()
            } else {
                let path = cwd.join(&config);
                // Only a regular file is read: a pipe (`--mcp-config <(…)`, `/dev/fd/N`) or a
                // FIFO is claude's to read (we would drain it, or block before the spawn).
                match agent_sdk_watchdog::read_regular(&path, MAX_CONFIG_BYTES, true) {
                    Ok(t) => String::from_utf8_lossy(&t).into_owned(),
                    Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                        out.problems.push(format!(
                            "the MCP config {e}: not read, left for claude alone"
                        ));
                        continue;
                    }
                    Err(e) => {
                        out.problems.push(format!(
                            "cannot read the MCP config {}: {e}",
                            path.display()
                        ));
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

    /// From a capture's `start` record: its recorded environment and command line (configs
    /// are read relative to the current directory, when still readable).
    pub fn from_start(env: &BTreeMap<String, String>, argv: &[String]) -> Self {
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        ChildMcp::read(|k| env.get(k).cloned(), &argv, &cwd)
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
                    .min(hard.unwrap_or(100_000_000).min(MAX_TIMER_MS))
            })
        };
        McpLimits::claude_code_give_up(
            idle.map(Duration::from_millis),
            hard.map(Duration::from_millis),
        )
    }

    /// The core's MCP limits for this child.
    pub fn mcp_limits(&self) -> McpLimits {
        let mut m = McpLimits::default();
        // Unnamed servers: the stdio default, the longest (their transport is unknown).
        if let Ok(x) = m.clone().with_give_up(self.give_up("stdio", None)) {
            m = x;
        }
        for s in &self.servers {
            if let Ok(x) = m
                .clone()
                .with_server(&s.name, self.give_up(&s.transport, s.timeout_ms))
            {
                m = x;
            }
        }
        m
    }

    /// The longest a stuck server may hold `system/init` back: `MCP_TIMEOUT`, or its 30 s
    /// default; `None` when no MCP server is known to be configured.
    pub fn startup_hold(&self) -> Option<Duration> {
        let set = self.env.contains_key(STARTUP_VAR);
        if !(set || self.has_config) {
            return None;
        }
        let ms = self
            .var(STARTUP_VAR)
            .filter(|t| *t > 0)
            .unwrap_or(DEFAULT_STARTUP_MS);
        Some(Duration::from_millis(ms))
    }

    /// `limits` with this child's MCP limits and, when a stuck server could hold the first
    /// line back past the startup limit, a startup limit that leaves it room (with the
    /// message saying so).
    pub fn apply(&self, limits: Limits) -> (Limits, Option<String>) {
        let mut limits = limits.with_mcp(self.mcp_limits());
        let mut note = None;
        if let Some(hold) = self.startup_hold() {
            let needed = hold.saturating_add(HEARTBEAT_TICK);
            if needed > limits.startup() {
                let before = limits.startup();
                if let Ok(l) = limits.clone().with_startup(needed) {
                    limits = l;
                    let why = match self.env.get(STARTUP_VAR) {
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

/// The values of every `--mcp-config` on the command line: `--mcp-config=X`, or the
/// arguments after `--mcp-config` up to the next one that starts with `-`.
fn mcp_config_args(argv: &[OsString]) -> Vec<String> {
    let args: Vec<String> = argv
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            break;
        }
        if let Some(v) = a.strip_prefix("--mcp-config=") {
            out.push(v.to_owned());
        } else if a == "--mcp-config" {
            while let Some(v) = args.get(i + 1).filter(|v| !v.starts_with('-')) {
                out.push(v.clone());
                i += 1;
            }
        }
        i += 1;
    }
    out
}

/// The servers of one MCP config (`{"mcpServers": {name: {…}}}`).
fn servers_of(v: &Value) -> Vec<Server> {
    let Some(map) = v.get("mcpServers").and_then(Value::as_object) else {
        return Vec::new();
    };
    map.iter()
        .map(|(name, s)| Server {
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

/// The child's environment as `run` will give it: `env` when set, else ours.
pub fn child_env(env: Option<&[(OsString, OsString)]>) -> impl Fn(&str) -> Option<String> + '_ {
    move |k: &str| match env {
        Some(env) => env
            .iter()
            .find(|(ek, _)| ek == k)
            .map(|(_, v)| v.to_string_lossy().into_owned()),
        None => std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()),
    }
}

/// The MCP variables of the child's environment, for the capture's `start` record.
pub fn recorded_env(env: Option<&[(OsString, OsString)]>) -> BTreeMap<String, String> {
    let get = child_env(env);
    VARS.iter()
        .filter_map(|k| Some(((*k).to_owned(), get(k)?)))
        .collect()
}

/// `limits` with the MCP rule applied for a recorded run: the environment of the capture's
/// `start` record (Claude Code's defaults without one).
pub fn for_capture(limits: Limits, entries: &[watchdog_core::capture::Entry]) -> Limits {
    let start = entries.iter().find_map(|e| match &e.record {
        watchdog_core::capture::Record::Start { argv, env, .. } => Some((argv, env)),
        _ => None,
    });
    let child = match start {
        Some((argv, env)) => ChildMcp::from_start(env, argv),
        None => ChildMcp::default(),
    };
    child.apply(limits).0
}

/// `limits` with the MCP rule applied for a capture whose `start` record says `start`;
/// unchanged without one (the defaults already hold).
pub fn for_start<'l>(
    limits: &'l Limits,
    start: Option<&watchdog_core::capture::StartFacts>,
) -> std::borrow::Cow<'l, Limits> {
    let Some(start) = start else {
        return std::borrow::Cow::Borrowed(limits);
    };
    std::borrow::Cow::Owned(
        ChildMcp::from_start(&start.env, &start.argv)
            .apply(limits.clone())
            .0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> Duration {
        Duration::from_secs(x)
    }

    fn child(env: &[(&str, &str)], argv: &[&str]) -> ChildMcp {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
        ChildMcp::read(|k| env.get(k).cloned(), &argv, Path::new("/nonexistent"))
    }

    #[test]
    fn defaults_are_claude_codes() {
        let c = child(&[], &["claude", "-p", "x"]);
        let m = c.mcp_limits();
        assert_eq!(m.give_up(), Some(s(1800)));
        assert_eq!(m.floor_for_tool("mcp__db__q"), Some(s(1830)));
        assert_eq!(c.startup_hold(), None);
        let (l, note) = c.apply(Limits::default());
        assert_eq!(l.startup(), s(180));
        assert_eq!(note, None);
    }

    #[test]
    fn the_environment_moves_or_removes_the_floor() {
        // Measured: idle 20000 → aborted on the 30 s tick.
        let c = child(&[(IDLE_VAR, "20000")], &["claude"]);
        assert_eq!(c.mcp_limits().give_up(), Some(s(30)));
        // 0 disables the idle limit; no hard limit set: no floor.
        let c = child(&[(IDLE_VAR, "0"), (TOOL_VAR, "0")], &["claude"]);
        assert_eq!(c.mcp_limits().give_up(), None);
        // A hard limit alone: exact.
        let c = child(&[(IDLE_VAR, "0"), (TOOL_VAR, "20000")], &["claude"]);
        assert_eq!(c.mcp_limits().give_up(), Some(s(20)));
        // The hard limit wins when earlier than the idle one.
        let c = child(&[(TOOL_VAR, "45000")], &["claude"]);
        assert_eq!(c.mcp_limits().give_up(), Some(s(45)));
        // Garbage is ignored, as by Claude Code.
        let c = child(&[(IDLE_VAR, "soon")], &["claude"]);
        assert_eq!(c.mcp_limits().give_up(), Some(s(1800)));
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
        let m = c.mcp_limits();
        // "timeout" is a hard limit per call, and raises the idle limit: 120 s.
        assert_eq!(m.give_up_for("db"), Some(s(120)));
        assert_eq!(m.give_up_for("web"), Some(s(300)));
        assert_eq!(m.give_up_for("ide"), None);
        // Under 1,000 ms the timeout is ignored.
        assert_eq!(m.give_up_for("tiny"), Some(s(1800)));
        assert_eq!(m.give_up_for("other"), Some(s(1800)));
    }

    /// Issue 28 (5): a config that is a pipe (`--mcp-config <(…)`: `/dev/fd/N`), a FIFO with no
    /// writer, a device or a directory is never opened: nothing drained, nothing blocks.
    #[test]
    fn only_regular_config_files_are_read_and_pipes_are_left_for_claude() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let (mut reader, mut writer) = std::io::pipe().unwrap();
        let config = br#"{"mcpServers":{"probe":{"command":"p","timeout":60000}}}"#;
        writer.write_all(config).unwrap();
        drop(writer);
        let fd = reader.as_raw_fd();
        for path in [
            format!("/dev/fd/{fd}"),
            format!("/proc/self/fd/{fd}"),
            fifo.display().to_string(),
            "/dev/zero".to_owned(),
            dir.path().display().to_string(),
        ] {
            let argv: Vec<OsString> = ["claude", "--mcp-config", &path]
                .iter()
                .map(OsString::from)
                .collect();
            let c = ChildMcp::read(|_| None, &argv, dir.path());
            assert!(c.has_config, "{path}");
            assert_eq!(c.problems.len(), 1, "{path}: {:?}", c.problems);
            assert!(
                c.problems[0].contains("not a regular file") && c.problems[0].contains("claude"),
                "{path}: {:?}",
                c.problems
            );
        }
        let mut left = Vec::new();
        reader.read_to_end(&mut left).unwrap();
        assert_eq!(left, config, "the pipe was not drained");
    }

    #[test]
    fn config_files_are_read_relative_to_the_childs_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mcp.json"),
            r#"{"mcpServers":{"probe":{"command":"p","timeout":60000}}}"#,
        )
        .unwrap();
        let argv: Vec<OsString> = ["claude", "--mcp-config=mcp.json", "missing.json"]
            .iter()
            .map(OsString::from)
            .collect();
        let c = ChildMcp::read(|_| None, &argv, dir.path());
        assert_eq!(c.mcp_limits().give_up_for("probe"), Some(s(60)));
        let argv: Vec<OsString> = ["claude", "--mcp-config", "missing.json", "bad"]
            .iter()
            .map(OsString::from)
            .collect();
        let c = ChildMcp::read(|_| None, &argv, dir.path());
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        assert!(c.has_config);
    }

    #[test]
    fn startup_leaves_room_for_mcp_timeout() {
        let c = child(&[(STARTUP_VAR, "60000")], &["claude"]);
        let limits = Limits::default().with_startup(s(20)).unwrap();
        let (l, note) = c.apply(limits);
        assert_eq!(l.startup(), s(90));
        let note = note.expect("a note");
        assert!(
            note.contains("MCP_TIMEOUT=60000") && note.contains("1m30s"),
            "{note}"
        );
        // Already long enough: unchanged, nothing said.
        let (l, note) = c.apply(Limits::default());
        assert_eq!((l.startup(), note), (s(180), None));
        // A config but no MCP_TIMEOUT: its 30 s default.
        let c = child(&[], &["claude", "--mcp-config", "{}"]);
        let (l, _) = c.apply(Limits::default().with_startup(s(10)).unwrap());
        assert_eq!(l.startup(), s(60));
    }
}
