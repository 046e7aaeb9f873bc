//! Policy limits: validated, plain data, with documented defaults.
//!
//! Each rule on a value lives in one type ([`PositiveDuration`], [`Factor`], [`Fraction`],
//! [`NonZeroFraction`]): the builders check with it, and its `FromStr` parses the command
//! line's flags, so a value is rejected in the same words everywhere ([`InvalidValue`],
//! [`ConfigError`]). Each default lives in one place, read through its typed value
//! (`Limits::default()`); public are only the bounds a host applies itself ([`MAX_LINE`],
//! [`INPUT_HOLD`]).

use std::sync::Arc;
use std::time::Duration;

pub(crate) mod defaults;
pub(crate) mod mcp;
pub(crate) mod session;
mod size;
pub(crate) mod values;

// Named from the crate root only.
pub use defaults::{INPUT_HOLD, MAX_LINE};
pub(crate) use mcp::McpLimits;
pub(crate) use session::SessionConfig;
pub use size::{format_bytes, ByteSize};
pub(crate) use values::ConfigError;

pub(crate) use values::format_duration;
pub use values::{
    Factor, Fraction, HumanDuration, IntoValid, InvalidValue, NonZeroFraction, PositiveDuration,
    MAX_DURATION,
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
/// | `output_blocked` | 30m | the host could not hand the output on for this long, without a break → kill `output_blocked` (`None`: never) |
/// | `max_backoff` | 2h | the most an announced API back-off storm (`system/api_retry`) holds the idle and no-progress clocks |
/// | `busy_cap` | 2h | while a tool call is outstanding and its processes are busy (CPU or socket bytes above the noise floor), no progress is no hang, for at most this long after the last progress (0: never) |
/// | `max_rss` | none | the process tree's memory above this for 5 s → kill `memory` |
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
            mcp: McpLimits::default(),
        }
    }
}

/// Check `value` against `T`'s rule, naming `option` when it fails.
fn valid<T>(option: &'static str, value: impl IntoValid<T>) -> Result<T, ConfigError> {
    value.into_valid().map_err(|e| e.option(option))
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
    /// The bound on continuous blocked output: when the host has been unable to hand the
    /// session's output on for this long without a break (its reader stopped reading), the
    /// session is killed `output_blocked`. `None`: never.
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

/// The `# Default` tables of the docs say what the `Default` impls do: every row of each
/// table is read from the source and checked against the actual default.
#[cfg(test)]
mod default_tables {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;
    use crate::recovery::{Recovery, Trigger};

    /// The rows (`option`, `default`) of the tables that follow a heading starting with
    /// `heading` in the doc comments of `source`.
    fn rows(source: &str, heading: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut in_section = false;
        for line in source.lines() {
            let text = line
                .trim_start()
                .trim_start_matches("///")
                .trim_start_matches("//!")
                .trim();
            if text.starts_with('#') {
                in_section = text.starts_with(heading);
                continue;
            }
            if !in_section || !text.starts_with('|') || text.starts_with("|---") {
                continue;
            }
            let cells: Vec<&str> = text.split('|').map(str::trim).collect();
            if cells[1] == "option" || cells[1] == "deadline" {
                continue; // the header
            }
            out.push((cells[1].trim_matches('`').to_owned(), cells[2].to_owned()));
        }
        out
    }

    fn dur(d: Duration) -> String {
        format_duration(d)
    }

    fn opt(d: Option<Duration>) -> String {
        d.map_or("none".into(), format_duration)
    }

    fn check(file: &str, source: &str, heading: &str, expected: &HashMap<&str, String>) {
        let rows = rows(source, heading);
        assert!(!rows.is_empty(), "{file}: no table under {heading:?}");
        for (option, default) in rows {
            let Some(want) = expected.get(option.as_str()) else {
                panic!("{file}: the row `{option}` has no known default");
            };
            assert_eq!(&default, want, "{file}: the default of `{option}`");
        }
    }

    #[test]
    fn every_documented_default_is_the_actual_one() {
        let l = Limits::default();
        let m = McpLimits::default();
        let limits: HashMap<&str, String> = [
            ("startup", dur(l.startup())),
            ("idle", dur(l.idle())),
            ("extend_factor", l.extend_factor().to_string()),
            ("high_utilization", l.high_utilization().to_string()),
            (
                "write_tools",
                l.write_tools()
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ("no_progress", dur(l.no_progress())),
            ("linger", dur(l.linger())),
            ("ceiling", opt(l.ceiling())),
            ("warn_at", l.warn_at().to_string()),
            ("output_blocked", opt(l.output_blocked())),
            ("max_backoff", dur(l.max_backoff())),
            ("busy_cap", dur(l.busy_cap())),
            ("max_rss", l.max_rss().map_or("none".into(), format_bytes)),
            ("mcp", "[`McpLimits::default`]".into()),
        ]
        .into();
        // The crate root's table states the deadlines the same way.
        check(
            "lib.rs",
            include_str!("lib.rs"),
            "# Deadlines and defaults",
            &limits,
        );
        // This file has the tables of Limits and McpLimits.
        let mut both = limits;
        both.extend([
            ("give_up", opt(m.give_up())),
            (
                "servers",
                if m.servers().is_empty() {
                    "none".into()
                } else {
                    format!("{:?}", m.servers())
                },
            ),
            (
                "margin",
                format!("{} (Claude Code's heartbeat tick)", dur(m.margin())),
            ),
        ]);
        let limits_and_mcp = [include_str!("config.rs"), include_str!("config/mcp.rs")].concat();
        check("config.rs", &limits_and_mcp, "# Default", &both);

        let r = Recovery::default();
        let on = |t| if r.is_enabled(t) { "on" } else { "off" }.to_string();
        let recovery: HashMap<&str, String> = [
            ("output_limit", on(Trigger::OutputLimit)),
            ("after_kill", on(Trigger::AfterKill)),
            ("rate_limit_wait", on(Trigger::RateLimitWait)),
            ("prompts", "one per trigger ([`Recovery::prompt`])".into()),
            ("max_wait", dur(r.max_wait())),
            ("reset_margin", dur(r.reset_margin())),
        ]
        .into();
        check(
            "recovery/mod.rs",
            include_str!("recovery/mod.rs"),
            "# Default",
            &recovery,
        );

        let rl = crate::rate_limit::RateLimitConfig::default();
        let rate_limit: HashMap<&str, String> = [
            ("warn_at", rl.warn_at().to_string()),
            ("hysteresis", rl.hysteresis().to_string()),
            ("fallback_window", format!("`{}`", rl.fallback_window())),
        ]
        .into();
        let monitor = include_str!("rate_limit/monitor.rs");
        check("rate_limit/monitor.rs", monitor, "# Default", &rate_limit);
    }
}
