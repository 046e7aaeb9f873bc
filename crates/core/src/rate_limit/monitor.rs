//! The monitor: folds frames into per-window state and returns events as values.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::format::{percent_half_up, window_part};
use super::reading::{Frame, Given, Reading, Status, Window, WindowFrame};
use crate::config::{defaults, ConfigError, Fraction, IntoValid};
use crate::view::LineView;
use crate::wall::format_iso_ms;
use crate::wall::WallMs;

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
/// The values are the constants of [`config::defaults`](crate::config::defaults); the
/// fractions follow the rule of [`Fraction`].
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

/// Something a frame changed that a user may want to hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum RateLimitEvent {
    /// A window reached `warn_at` (once; re-armed when it resets or falls below
    /// `warn_at − hysteresis`).
    Warning {
        /// The window, e.g. `five_hour`.
        window: String,
        /// Its utilization, a fraction.
        utilization: f64,
    },
    /// A window started rejecting requests.
    Rejected {
        /// The window.
        window: String,
        /// When it resets (epoch ms), if known.
        resets_at_ms: Option<WallMs>,
        /// The overage status at that moment, e.g. `rejected`.
        overage: Option<String>,
    },
    /// The frame's `errorCode` is `credits_required`: waiting will not help.
    CreditsRequired,
    /// A window that was rejecting requests allows them again.
    Recovered {
        /// The window.
        window: String,
    },
}

impl fmt::Display for RateLimitEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitEvent::Warning {
                window,
                utilization,
            } => write!(
                f,
                "rate limit: {window} window at {}%",
                percent_half_up(*utilization)
            ),
            RateLimitEvent::Rejected {
                window,
                resets_at_ms,
                overage,
            } => {
                write!(f, "rate limit: {window} window rejected")?;
                if let Some(r) = resets_at_ms {
                    write!(f, " until {}", format_iso_ms(*r))?;
                }
                if let Some(o) = overage {
                    write!(f, ", overage {o}")?;
                }
                Ok(())
            }
            RateLimitEvent::CreditsRequired => f.write_str("rate limit: credits required"),
            RateLimitEvent::Recovered { window } => {
                write!(f, "rate limit: {window} window allowed again")
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Slot {
    window: Window,
    warned: bool,
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

    /// Fold one stdout line. Any line that is not a `rate_limit_event` changes nothing, and so
    /// does a `rate_limit_event` without a usable `rate_limit_info`.
    pub fn observe(&mut self, now: WallMs, line: &LineView<'_>) -> Vec<RateLimitEvent> {
        if line.kind().as_deref() != Some("rate_limit_event") {
            return Vec::new();
        }
        match line.rate_limit_info().and_then(|f| f.to_value()) {
            Some(info) => self.note(now, &info),
            None => Vec::new(),
        }
    }

    /// Fold one bare `rate_limit_info` object (never mutated). A value that is not an object
    /// changes nothing.
    pub fn note(&mut self, now: WallMs, info: &Value) -> Vec<RateLimitEvent> {
        let Some(frame) = Frame::read(info) else {
            return Vec::new();
        };
        let mut events = Vec::new();
        let own = frame
            .rate_limit_type
            .clone()
            .unwrap_or_else(|| self.config.fallback_window.clone());

        // The reading: parity with the reference merge, plus the deliberate carry of the last
        // known utilization of the frame's window.
        let prev = self.latest.take();
        let carry = |given: &Given<String>, old: Option<&String>| match given {
            Given::Absent => old.cloned(),
            Given::Set(v) => v.clone(),
        };
        let overage_status = carry(
            &frame.overage_status,
            prev.as_ref().and_then(|p| p.overage_status.as_ref()),
        );
        let overage_disabled_reason = carry(
            &frame.overage_disabled_reason,
            prev.as_ref()
                .and_then(|p| p.overage_disabled_reason.as_ref()),
        );

        // Re-arm every window whose reset has passed.
        for slot in self.slots.values_mut() {
            if !slot.window.is_active(now) {
                slot.warned = false;
            }
        }

        // What this frame says about each window: `unifiedWindows`, then the top-level fields
        // for the frame's own window (they win: a `rejected` frame may list its window as
        // `allowed_warning` in the map).
        let mut updates: BTreeMap<String, WindowFrame> = frame.windows.iter().cloned().collect();
        if frame.utilization.is_some() || frame.resets_at_ms.is_some() || frame.status.is_some() {
            let e = updates.entry(own.clone()).or_default();
            if frame.utilization.is_some() {
                e.utilization = frame.utilization;
            }
            if frame.resets_at_ms.is_some() {
                e.resets_at_ms = frame.resets_at_ms;
            }
            if frame.status.is_some() {
                e.status = frame.status.clone();
            }
        }

        if frame.error_code.as_deref() == Some("credits_required") {
            if !self.credits_required {
                self.credits_required = true;
                events.push(RateLimitEvent::CreditsRequired);
            }
        } else {
            self.credits_required = false;
        }

        let warn_at = self.config.warn_at();
        let rearm_below = warn_at - self.config.hysteresis();
        for (name, wf) in updates {
            let slot = self.slots.entry(name.clone()).or_insert_with(|| Slot {
                window: Window {
                    name: name.clone(),
                    utilization: None,
                    resets_at_ms: None,
                    status: None,
                    updated_at_ms: now,
                },
                warned: false,
            });
            let expired = !slot.window.is_active(now);
            if expired {
                // A reset window's old utilization says nothing about the new one.
                slot.window.utilization = None;
            }
            let was_rejected = slot.window.is_rejected() && !expired;
            let was_rejected_any = slot.window.is_rejected();
            let w = &mut slot.window;
            w.updated_at_ms = now;
            if wf.utilization.is_some() {
                w.utilization = wf.utilization;
            }
            if wf.resets_at_ms.is_some() {
                w.resets_at_ms = wf.resets_at_ms;
            }
            if let Some(status) = wf.status {
                if status == Status::Rejected && !was_rejected {
                    events.push(RateLimitEvent::Rejected {
                        window: name.clone(),
                        resets_at_ms: w.resets_at_ms.filter(|r| *r > now),
                        overage: overage_status.clone(),
                    });
                } else if status.is_allowed() && was_rejected_any {
                    events.push(RateLimitEvent::Recovered {
                        window: name.clone(),
                    });
                }
                w.status = Some(status);
            }
            if let Some(u) = w.utilization {
                if slot.warned && u < rearm_below {
                    slot.warned = false;
                }
                if !slot.warned && u >= warn_at {
                    slot.warned = true;
                    events.push(RateLimitEvent::Warning {
                        window: name.clone(),
                        utilization: u,
                    });
                }
            }
        }

        let utilization = self
            .reported_utilization(&frame)
            .or_else(|| self.slots.get(&own).and_then(|s| s.window.utilization));

        self.latest = Some(Reading {
            status: frame.status,
            utilization,
            resets_at_ms: frame.resets_at_ms,
            rate_limit_type: frame.rate_limit_type,
            overage_status,
            overage_disabled_reason,
            overage_resets_at_ms: frame.overage_resets_at_ms,
            is_using_overage: frame.is_using_overage,
            error_code: frame.error_code,
            observed_at_ms: now,
        });
        events
    }

    /// The utilization one `rate_limit_info` reports by itself, the reference package's
    /// derivation: its top-level `utilization`, else its own window's (`rateLimitType`) entry
    /// in `unifiedWindows`, else the fallback window's entry. `None` when none is usable (or
    /// `info` is not an object). [`note`](Self::note) adds one more step for the reading: the
    /// last known utilization of the frame's window. Reads nothing of the monitor but its
    /// policy, and changes nothing.
    ///
    /// ```
    /// use watchdog_core::rate_limit::{RateLimitConfig, RateLimitMonitor};
    /// let mut m = RateLimitMonitor::new(RateLimitConfig::default());
    /// m.note(0, &serde_json::json!({"status": "allowed", "utilization": 0.9}));
    /// let rejected = serde_json::json!({"status": "rejected"});
    /// assert_eq!(m.frame_utilization(&rejected), None);
    /// m.note(0, &rejected);
    /// assert_eq!(m.latest().unwrap().utilization, Some(0.9));
    /// ```
    pub fn frame_utilization(&self, info: &Value) -> Option<f64> {
        Frame::read(info).and_then(|f| self.reported_utilization(&f))
    }

    fn reported_utilization(&self, frame: &Frame) -> Option<f64> {
        let window_util = |name: &str| frame.window(name).and_then(|w| w.utilization);
        frame
            .utilization
            .or_else(|| frame.rate_limit_type.as_deref().and_then(window_util))
            .or_else(|| window_util(&self.config.fallback_window))
    }

    /// The latest reading, stale or not: for display.
    pub fn latest(&self) -> Option<&Reading> {
        self.latest.as_ref()
    }

    /// The latest reading unless its `resetsAt` has passed (it expires **at** the reset
    /// instant): for decisions.
    pub fn active(&self, now: WallMs) -> Option<&Reading> {
        self.latest.as_ref().filter(|r| r.is_active(now))
    }

    /// Every window seen, in name order, stale or not.
    pub fn windows(&self) -> impl Iterator<Item = &Window> {
        self.slots.values().map(|s| &s.window)
    }

    /// The windows whose reset time has not passed at `now`.
    pub fn active_windows(&self, now: WallMs) -> impl Iterator<Item = &Window> {
        self.windows().filter(move |w| w.is_active(now))
    }

    /// One window by name, stale or not.
    pub fn window(&self, name: &str) -> Option<&Window> {
        self.slots.get(name).map(|s| &s.window)
    }

    /// The highest utilization among the active windows; a rejected window whose utilization
    /// is unknown counts as 1.0. `None` when no active window has a value. This is what feeds
    /// [`Registry::set_utilization`](crate::Registry::set_utilization).
    pub fn utilization(&self, now: WallMs) -> Option<f64> {
        self.active_windows(now)
            .filter_map(|w| w.utilization.or_else(|| w.is_rejected().then_some(1.0)))
            .reduce(f64::max)
    }

    /// The active rejected window that resets last (requests resume only after it), if any.
    pub fn rejection(&self, now: WallMs) -> Option<&Window> {
        self.active_windows(now)
            .filter(|w| w.is_rejected())
            .max_by_key(|w| w.resets_at_ms.unwrap_or(WallMs::MAX))
    }

    /// Whether the latest frame said `errorCode: "credits_required"`.
    pub fn credits_required(&self) -> bool {
        self.credits_required
    }

    /// The earliest reset time after `now` among the windows and the latest reading: when the
    /// utilization may change without a frame, so a driver should re-read
    /// [`utilization`](Self::utilization) then.
    pub fn next_expiry(&self, now: WallMs) -> Option<WallMs> {
        self.windows()
            .filter_map(|w| w.resets_at_ms)
            .chain(self.latest.as_ref().and_then(|r| r.resets_at_ms))
            .filter(|r| *r > now)
            .min()
    }

    /// A one-line summary of the active windows, e.g. `5h 91% (resets 14:00Z) · 7d 42%`.
    /// A window shows its reset time when it is rejected or at or above `warn_at`. With no
    /// active window: `no rate-limit data`.
    pub fn summary(&self, now: WallMs) -> String {
        let rank = |n: &str| match n {
            "five_hour" => 0,
            "seven_day" => 1,
            _ => 2,
        };
        let mut ws: Vec<&Window> = self.active_windows(now).collect();
        ws.sort_by(|a, b| rank(&a.name).cmp(&rank(&b.name)).then(a.name.cmp(&b.name)));
        if ws.is_empty() {
            return "no rate-limit data".into();
        }
        ws.iter()
            .map(|w| {
                let high = w.utilization.is_some_and(|u| u >= self.config.warn_at());
                window_part(w, now, high || w.is_rejected())
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// Forget every reading and re-arm every warning.
    pub fn reset(&mut self) {
        self.latest = None;
        self.slots.clear();
        self.credits_required = false;
    }
}
