//! Rendering: the reference one-liner and a summary line (dates through [`crate::format_iso_ms`]).

use std::fmt;

use super::reading::{Reading, Window};
use crate::wall::Civil;
use crate::wall::WallMs;

/// `u × 100` rounded half up, as JavaScript's `toFixed(0)` does (12.5 → 13, where Rust's
/// `{:.0}` would print 12). For non-negative finite input; others are clamped to 0.
///
/// ```
/// use watchdog_core::rate_limit::percent_half_up;
/// assert_eq!(percent_half_up(0.125), 13);
/// assert_eq!(percent_half_up(0.085), 9);
/// assert_eq!(percent_half_up(0.91), 91);
/// ```
pub fn percent_half_up(u: f64) -> u64 {
    let x = u * 100.0;
    if !x.is_finite() || x <= 0.0 {
        return 0;
    }
    let f = x.floor();
    // `x - f` is exact for doubles of this size, so a tie is detected exactly.
    let n = if x - f >= 0.5 { f + 1.0 } else { f };
    n as u64
}

/// `HH:MMZ` when `at` is within a day of `now`, else `YYYY-MM-DDTHH:MMZ`.
pub(crate) fn short_time(at: WallMs, now: WallMs) -> String {
    let c = Civil::of(at);
    if at.abs_diff(now) < 86_400_000 {
        format!("{:02}:{:02}Z", c.hour, c.minute)
    } else {
        format!(
            "{}-{:02}-{:02}T{:02}:{:02}Z",
            c.year_text(),
            c.month,
            c.day,
            c.hour,
            c.minute
        )
    }
}

/// Exactly the reference one-liner: `status[ at N%][, overage S][ (reason)][, resets at ISO]`,
/// e.g. `allowed_warning at 99%, overage rejected (out_of_credits), resets at
/// 2030-03-17T18:46:40.000Z`. A reading without a status starts with `unknown`.
impl fmt::Display for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.status.as_ref().map_or("unknown", |s| s.as_str()))?;
        if let Some(u) = self.utilization {
            write!(f, " at {}%", percent_half_up(u))?;
        }
        if let Some(s) = self.overage_status.as_deref().filter(|s| !s.is_empty()) {
            write!(f, ", overage {s}")?;
        }
        if let Some(r) = self
            .overage_disabled_reason
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            write!(f, " ({r})")?;
        }
        if let Some(iso) = self.resets_at_iso() {
            write!(f, ", resets at {iso}")?;
        }
        Ok(())
    }
}

/// One window as `5h 91%`, `5h rejected`, or `5h ?`; with ` (resets 14:00Z)` when `show_reset`.
pub(crate) fn window_part(w: &Window, now: WallMs, show_reset: bool) -> String {
    let mut s = w.short_name();
    match w.utilization {
        Some(u) => s.push_str(&format!(" {}%", percent_half_up(u))),
        None if !w.is_rejected() => s.push_str(" ?"),
        None => {}
    }
    if w.is_rejected() {
        s.push_str(" rejected");
    }
    if show_reset {
        if let Some(r) = w.resets_at_ms {
            s.push_str(&format!(" (resets {})", short_time(r, now)));
        }
    }
    s
}
