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
    /// The extended idle patience, `idle × extend_factor` (saturates at [`Duration::MAX`]).
    pub fn extended_idle(&self) -> Duration {
        Duration::try_from_secs_f64(self.idle.as_secs_f64() * self.extend_factor)
            .unwrap_or(Duration::MAX)
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
