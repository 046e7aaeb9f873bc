//! What the monitor knows, asked without changing it: the reading, the windows, the
//! utilization for the registry, the next reset and the one-line summary.

use super::RateLimitMonitor;
use crate::rate_limit::format::window_part;
use crate::rate_limit::reading::{Reading, Window};
use crate::wall::WallMs;

impl RateLimitMonitor {
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
}
