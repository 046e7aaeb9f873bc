//! Folding frames: a `rate_limit_event` line (or its bare `rate_limit_info`) merged into the
//! reading and each window's state, with the events it gives.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{RateLimitEvent, RateLimitMonitor};
use crate::rate_limit::reading::{Frame, Given, Reading, Status, Window, WindowFrame};
use crate::view::LineView;
use crate::wall::WallMs;

#[derive(Debug, Clone)]
pub(super) struct Slot {
    pub(super) window: Window,
    warned: bool,
}

impl RateLimitMonitor {
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
        reported_utilization(
            frame.utilization,
            frame.rate_limit_type.as_deref().and_then(window_util),
            window_util(&self.config.fallback_window),
        )
    }
}

/// The utilization a frame reports, of the ones read from it: its own top-level one, else
/// its own window's (the `unifiedWindows` entry its `rateLimitType` names), else the fallback
/// window's.
///
/// ```
/// use watchdog_core::rate_limit::reported_utilization;
/// assert_eq!(reported_utilization(None, Some(0.4), Some(0.9)), Some(0.4));
/// assert_eq!(reported_utilization(None, None, Some(0.9)), Some(0.9));
/// ```
pub fn reported_utilization(
    top: Option<f64>,
    own: Option<f64>,
    fallback: Option<f64>,
) -> Option<f64> {
    top.or(own).or(fallback)
}
