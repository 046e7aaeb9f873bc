//! The defaults of the policy, in one place: the `Default` impls of [`Limits`](super::Limits),
//! [`McpLimits`](super::McpLimits), [`Recovery`](crate::recovery::Recovery) and
//! [`RateLimitConfig`](crate::rate_limit::RateLimitConfig) read these constants, and the
//! `# Default` tables of their docs are checked against those impls. A host reads a default
//! through the typed value (`Limits::default().idle()`, `Recovery::default().max_wait()`);
//! public here are only the bounds a host applies itself, which no typed value carries.

use std::time::Duration;

use super::{ByteSize, Factor, Fraction, NonZeroFraction, PositiveDuration};
use crate::mcp::{HEARTBEAT_TICK, STDIO_IDLE};

const fn minutes(m: u64) -> PositiveDuration {
    PositiveDuration::new_const(Duration::from_secs(m * 60))
}

/// The longest line a host hands on in one piece, and the longest a capture's reader
/// buffers: 64 MiB. A host that reads a child's output or a file line by line caps its
/// buffer here (longer lines are passed on in pieces, or counted and dropped).
pub const MAX_LINE: usize = 64 << 20;
/// How long past its instant a deadline waits for lines its host may still hold unread
/// ([`Registry::input_pending`](crate::Registry::input_pending)): 200 ms.
pub const INPUT_HOLD: Duration = Duration::from_millis(200);

/// [`Limits::startup`](super::Limits::startup): 3 min.
pub(crate) const STARTUP: PositiveDuration = minutes(3);
/// [`Limits::idle`](super::Limits::idle): 10 min.
pub(crate) const IDLE: PositiveDuration = minutes(10);
/// [`Limits::extend_factor`](super::Limits::extend_factor): 2.
pub(crate) const EXTEND_FACTOR: Factor = Factor::new_const(2.0);
/// [`Limits::high_utilization`](super::Limits::high_utilization): 0.9.
pub(crate) const HIGH_UTILIZATION: Fraction = Fraction::new_const(0.9);
/// [`Limits::write_tools`](super::Limits::write_tools).
pub(crate) const WRITE_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];
/// [`Limits::no_progress`](super::Limits::no_progress): 30 min.
pub(crate) const NO_PROGRESS: PositiveDuration = minutes(30);
/// [`Limits::linger`](super::Limits::linger): 11 min.
pub(crate) const LINGER: PositiveDuration = minutes(11);
/// [`Limits::ceiling`](super::Limits::ceiling): none.
pub(crate) const CEILING: Option<PositiveDuration> = None;
/// [`Limits::warn_at`](super::Limits::warn_at): 0.8.
pub(crate) const WARN_AT: NonZeroFraction = NonZeroFraction::new_const(0.8);
/// [`Limits::output_blocked`](super::Limits::output_blocked): 30 min.
pub(crate) const OUTPUT_BLOCKED: Option<PositiveDuration> = Some(minutes(30));
/// [`Limits::max_backoff`](super::Limits::max_backoff): 2 h.
pub(crate) const MAX_BACKOFF: PositiveDuration = minutes(2 * 60);
/// [`Limits::busy_cap`](super::Limits::busy_cap): 2 h.
pub(crate) const BUSY_CAP: Duration = Duration::from_secs(2 * 3600);
/// [`Limits::task_silence`](super::Limits::task_silence): none, the idle patience in force.
pub(crate) const TASK_SILENCE: Option<PositiveDuration> = None;
/// [`Limits::control_timeout`](super::Limits::control_timeout): 2 min (Claude Code 2.1.332
/// answers every host control request within milliseconds, mid-turn included).
pub(crate) const CONTROL_TIMEOUT: Option<PositiveDuration> = Some(minutes(2));
/// [`Limits::max_rss`](super::Limits::max_rss): none.
pub(crate) const MAX_RSS: Option<ByteSize> = None;
/// How long the tree's memory stays above [`Limits::max_rss`](super::Limits::max_rss)
/// before the kill `memory`: 5 s.
pub(crate) const MEMORY_HOLD: Duration = Duration::from_secs(5);
/// The noise floor of a busy tool's CPU: its processes used at least this fraction of one
/// core between two samples of the tree (5 %).
pub(crate) const BUSY_CPU_FLOOR: f64 = 0.05;
/// The noise floor of a busy tool's sockets: at least this many bytes a second moved on
/// its TCP connections between two samples (1 KiB/s).
pub(crate) const BUSY_NET_FLOOR: u64 = 1024;
/// A process started this long before a tool call was seen to begin still counts as the
/// tool's (the `tool_use` line reaches the host after the tool may have started): 2 s.
pub(crate) const TOOL_SLACK: Duration = Duration::from_secs(2);

/// [`McpLimits::give_up`](super::McpLimits::give_up): Claude Code's idle limit on a stdio
/// server's call, 1,800 s.
pub(crate) const MCP_GIVE_UP: Option<PositiveDuration> =
    Some(PositiveDuration::new_const(STDIO_IDLE));
/// [`McpLimits::margin`](super::McpLimits::margin): one heartbeat tick, 30 s.
pub(crate) const MCP_MARGIN: Duration = HEARTBEAT_TICK;

/// [`Recovery::max_wait`](crate::recovery::Recovery::max_wait): 6 h.
pub(crate) const MAX_WAIT: PositiveDuration = minutes(6 * 60);
/// [`Recovery::reset_margin`](crate::recovery::Recovery::reset_margin): 30 s.
pub(crate) const RESET_MARGIN: Duration = Duration::from_secs(30);

/// [`RateLimitConfig::warn_at`](crate::rate_limit::RateLimitConfig::warn_at): 0.85.
pub(crate) const RATE_LIMIT_WARN_AT: Fraction = Fraction::new_const(0.85);
/// [`RateLimitConfig::hysteresis`](crate::rate_limit::RateLimitConfig::hysteresis): 0.05.
pub(crate) const RATE_LIMIT_HYSTERESIS: Fraction = Fraction::new_const(0.05);
/// [`RateLimitConfig::fallback_window`](crate::rate_limit::RateLimitConfig::fallback_window).
pub(crate) const RATE_LIMIT_FALLBACK_WINDOW: &str = "five_hour";
