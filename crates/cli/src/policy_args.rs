//! The policy flags shared by `run`, `replay` and `audit`, each also readable from an
//! `AGENT_WATCHDOG_*` environment variable.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::Args;
use watchdog_core::{ConfigError, Limits};

use crate::duration::parse_duration;

pub(crate) fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("must be a duration > 0, got {s:?}"));
    }
    Ok(d)
}

fn factor(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("must be a number >= 1, got {s:?}"))?;
    if !(f.is_finite() && f >= 1.0) {
        return Err(format!("must be a number >= 1, got {s}"));
    }
    Ok(f)
}

fn unit_interval(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("must be a number in [0, 1], got {s:?}"))?;
    if !(0.0..=1.0).contains(&f) {
        return Err(format!("must be a number in [0, 1], got {s}"));
    }
    Ok(f)
}

fn warn_fraction(s: &str) -> Result<f64, String> {
    let f: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("must be a number in (0, 1], got {s:?}"))?;
    if !(f > 0.0 && f <= 1.0) {
        return Err(format!("must be a number in (0, 1], got {s}"));
    }
    Ok(f)
}

/// Policy flags. Every flag has an `AGENT_WATCHDOG_<NAME>` environment variable; the flag wins.
#[derive(Debug, Clone, Default, Args)]
pub struct PolicyArgs {
    /// Idle patience: no stdout line for this long → kill `idle`. Until the first completed
    /// write tool and while rate-limit utilization is high, patience is idle × extend-factor
    /// (20m by default) [default: 10m; at most 365d, like every duration]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_IDLE", value_parser = positive_duration)]
    pub idle: Option<Duration>,
    /// Patience multiplier before the first completed write and at high utilization [default: 2]
    #[arg(long, value_name = "FACTOR", env = "AGENT_WATCHDOG_EXTEND_FACTOR", value_parser = factor)]
    pub extend_factor: Option<f64>,
    /// No line at all since start → kill `startup` [default: 3m]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_STARTUP", value_parser = positive_duration)]
    pub startup: Option<Duration>,
    /// Keep-alives only (pings, heartbeats) for this long → kill `no_progress`; an outstanding
    /// MCP call gets until Claude Code's own abort + 30s [default: 30m]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_NO_PROGRESS", value_parser = positive_duration)]
    pub no_progress: Option<Duration>,
    /// After a result, nothing new and the stream still open → kill `linger` [default: 11m]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_LINGER", value_parser = positive_duration)]
    pub linger: Option<Duration>,
    /// Total age limit → kill `ceiling` [default: none]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_CEILING", value_parser = positive_duration)]
    pub ceiling: Option<Duration>,
    /// Comma-separated tools whose first completed call ends the pre-write extension
    /// [default: Write,Edit,MultiEdit,NotebookEdit]
    #[arg(
        long,
        value_name = "TOOLS",
        env = "AGENT_WATCHDOG_WRITE_TOOLS",
        value_delimiter = ','
    )]
    pub write_tools: Option<Vec<String>>,
    /// Rate-limit utilization (0–1) at or above which patience is extended [default: 0.9]
    #[arg(long, value_name = "FRACTION", env = "AGENT_WATCHDOG_HIGH_UTILIZATION", value_parser = unit_interval)]
    pub high_utilization: Option<f64>,
    /// Fraction of a limit at which a stalling warning is shown [default: 0.8]
    #[arg(long, value_name = "FRACTION", env = "AGENT_WATCHDOG_WARN_AT", value_parser = warn_fraction)]
    pub warn_at: Option<f64>,
    /// Time the child gets after SIGTERM before SIGKILL, also after a signal we forwarded
    /// [default: 5s]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_GRACE", value_parser = parse_duration)]
    pub grace: Option<Duration>,
}

impl PolicyArgs {
    /// The core limits these flags describe (defaults for every flag not given).
    pub fn limits(&self) -> Result<Limits, ConfigError> {
        let mut l = Limits::default();
        if let Some(d) = self.idle {
            l = l.with_idle(d)?;
        }
        if let Some(f) = self.extend_factor {
            l = l.with_extend_factor(f)?;
        }
        if let Some(d) = self.startup {
            l = l.with_startup(d)?;
        }
        if let Some(d) = self.no_progress {
            l = l.with_no_progress(d)?;
        }
        if let Some(d) = self.linger {
            l = l.with_linger(d)?;
        }
        if self.ceiling.is_some() {
            l = l.with_ceiling(self.ceiling)?;
        }
        if let Some(t) = &self.write_tools {
            l = l.with_write_tools(t.iter().map(|s| s.trim()).filter(|s| !s.is_empty()));
        }
        if let Some(u) = self.high_utilization {
            l = l.with_high_utilization(u)?;
        }
        if let Some(w) = self.warn_at {
            l = l.with_warn_at(w)?;
        }
        Ok(l)
    }

    /// SIGTERM grace for the kill ladder.
    pub fn grace(&self) -> Duration {
        self.grace.unwrap_or(Duration::from_secs(5))
    }
}

/// Recovery flags of `run`. Every flag has an `AGENT_WATCHDOG_<NAME>` environment variable (the
/// switches accept `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`).
#[derive(Debug, Clone, Default, Args)]
pub struct RecoveryArgs {
    /// Do not continue a session cut off by the output token limit (continued once by default)
    #[arg(long, env = "AGENT_WATCHDOG_NO_RECOVER_OUTPUT_LIMIT", value_parser = BoolishValueParser::new())]
    pub no_recover_output_limit: bool,
    /// Continue the session once after our own idle, no_progress or linger kill
    #[arg(long, env = "AGENT_WATCHDOG_RESUME_AFTER_KILL", value_parser = BoolishValueParser::new())]
    pub resume_after_kill: bool,
    /// After a rejected rate limit with a known reset time, wait for the reset, then continue
    /// the session once
    #[arg(long, env = "AGENT_WATCHDOG_WAIT_FOR_RESET", value_parser = BoolishValueParser::new())]
    pub wait_for_reset: bool,
    /// The longest rate-limit wait [default: 6h]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_MAX_WAIT", value_parser = positive_duration)]
    pub max_wait: Option<Duration>,
    /// Added to the reset time before continuing [default: 30s]
    #[arg(long, value_name = "DURATION", env = "AGENT_WATCHDOG_RESET_MARGIN", value_parser = parse_duration)]
    pub reset_margin: Option<Duration>,
    /// Where the continuation markers live [default: $XDG_STATE_HOME/agent-watchdog, else
    /// ~/.local/state/agent-watchdog]
    #[arg(long, value_name = "DIR", env = "AGENT_WATCHDOG_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
}
