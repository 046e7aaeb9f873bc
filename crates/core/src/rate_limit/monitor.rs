//! The monitor: folds frames into per-window state and returns events as values. Here its
//! policy and its state; the folding in `frames`, the events in `event`, the read-only
//! questions in `queries`.

mod event;
mod frames;
mod queries;

use std::collections::BTreeMap;

use super::reading::Reading;
use crate::config::{defaults, ConfigError, Fraction, IntoValid};

use frames::Slot;

pub use event::RateLimitEvent;
pub use frames::reported_utilization;

/// The rate-limit monitor's policy: validated plain data.
///
/// # Default
///
/// | option | default | rule |
/// |---|---|---|
/// | `warn_at` | 0.85 | a window whose utilization reaches this (inclusive) gives one [`RateLimitEvent::Warning`]; in [0, 1] |
/// | `hysteresis` | 0.05 | the warning re-arms when the window falls below `warn_at − hysteresis` (or resets); in [0, 1] |
/// | `fallback_window` | `five_hour` | the window a frame is about when it names none (no `rateLimitType`), and the window read when a frame has no utilization of its own |
///
/// The fractions follow the rule of [`Fraction`].
///
/// ```
/// use watchdog_core::rate_limit::RateLimitConfig;
/// let cfg = RateLimitConfig::default().with_warn_at(0.5).unwrap();
/// assert_eq!(cfg.warn_at(), 0.5);
/// let err = RateLimitConfig::default().with_warn_at(1.5).unwrap_err();
/// assert_eq!(err.to_string(), "warn_at must be a number in [0, 1], got 1.5");
///
/// // Every row of the table, checked against the default:
/// let d = RateLimitConfig::default();
/// assert_eq!((d.warn_at(), d.hysteresis()), (0.85, 0.05));
/// assert_eq!(d.fallback_window(), "five_hour");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitConfig {
    warn_at: Fraction,
    hysteresis: Fraction,
    fallback_window: String,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            warn_at: defaults::RATE_LIMIT_WARN_AT,
            hysteresis: defaults::RATE_LIMIT_HYSTERESIS,
            fallback_window: defaults::RATE_LIMIT_FALLBACK_WINDOW.into(),
        }
    }
}

impl RateLimitConfig {
    /// Utilization at which a window warns, in [0, 1] (inclusive).
    pub fn with_warn_at(mut self, warn_at: impl IntoValid<Fraction>) -> Result<Self, ConfigError> {
        self.warn_at = warn_at.into_valid().map_err(|e| e.option("warn_at"))?;
        Ok(self)
    }
    /// How far below `warn_at` a window must fall to warn again, in [0, 1].
    pub fn with_hysteresis(
        mut self,
        hysteresis: impl IntoValid<Fraction>,
    ) -> Result<Self, ConfigError> {
        self.hysteresis = hysteresis
            .into_valid()
            .map_err(|e| e.option("hysteresis"))?;
        Ok(self)
    }
    /// The window of a frame that names none. Must not be empty.
    pub fn with_fallback_window(mut self, window: impl Into<String>) -> Result<Self, ConfigError> {
        let window = window.into();
        if window.is_empty() {
            return Err(ConfigError {
                option: "fallback_window",
                allowed: "a non-empty window name",
                value: "\"\"".into(),
            });
        }
        self.fallback_window = window;
        Ok(self)
    }
    /// Warning threshold.
    pub fn warn_at(&self) -> f64 {
        self.warn_at.get()
    }
    /// Re-arm margin.
    pub fn hysteresis(&self) -> f64 {
        self.hysteresis.get()
    }
    /// Fallback window name.
    pub fn fallback_window(&self) -> &str {
        &self.fallback_window
    }
}

/// Merges `rate_limit_event` frames into one [`Reading`] and per-window [`Window`] state.
///
/// Sans-IO: `now` is epoch milliseconds ([`WallMs`]). Bad fields (non-numeric, NaN, infinite,
/// negative, out of range) are ignored one by one; nothing panics and nothing is poisoned.
///
/// ```
/// use watchdog_core::rate_limit::{RateLimitConfig, RateLimitEvent, RateLimitMonitor};
/// let mut m = RateLimitMonitor::new(RateLimitConfig::default());
/// let info = serde_json::json!({
///     "status": "allowed", "rateLimitType": "five_hour", "resetsAt": 1_900_003_600,
///     "overageStatus": "rejected",
///     "unifiedWindows": {
///         "five_hour": {"utilization": 0.91, "resetsAt": 1_900_003_600},
///         "seven_day": {"utilization": 0.42, "resetsAt": 1_900_400_000}
///     }
/// });
/// let now = 1_900_000_000_000;
/// let events = m.note(now, &info);
/// assert_eq!(events, vec![RateLimitEvent::Warning { window: "five_hour".into(), utilization: 0.91 }]);
/// assert_eq!(m.utilization(now), Some(0.91));
/// assert_eq!(m.latest().unwrap().to_string(),
///     "allowed at 91%, overage rejected, resets at 2030-03-17T18:46:40.000Z");
/// assert_eq!(m.summary(now), "5h 91% (resets 18:46Z) · 7d 42%");
/// ```
///
/// [`Window`]: crate::rate_limit::Window
/// [`WallMs`]: crate::WallMs
#[derive(Debug, Clone)]
pub struct RateLimitMonitor {
    config: RateLimitConfig,
    latest: Option<Reading>,
    slots: BTreeMap<String, Slot>,
    credits_required: bool,
}

impl RateLimitMonitor {
    /// A monitor with no reading.
    pub fn new(config: RateLimitConfig) -> Self {
        RateLimitMonitor {
            config,
            latest: None,
            slots: BTreeMap::new(),
            credits_required: false,
        }
    }

    /// The policy.
    pub fn config(&self) -> &RateLimitConfig {
        &self.config
    }

    /// Forget every reading and re-arm every warning.
    pub fn reset(&mut self) {
        self.latest = None;
        self.slots.clear();
        self.credits_required = false;
    }
}
