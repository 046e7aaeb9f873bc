//! Rendering: the reference one-liner, ISO-8601 times without a date library, a summary line.

use std::fmt;

use super::reading::{Reading, Window};
use super::WallMs;

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

/// Days since 1970-01-01 → (year, month 1–12, day 1–31), proleptic Gregorian
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Broken-down UTC time of an epoch-milliseconds instant.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u64,
    minute: u64,
    second: u64,
    milli: u64,
}

fn civil(ms: WallMs) -> Civil {
    let days = (ms / 86_400_000) as i64;
    let rem = ms % 86_400_000;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: rem / 3_600_000,
        minute: rem / 60_000 % 60,
        second: rem / 1000 % 60,
        milli: rem % 1000,
    }
}

fn year(y: i64) -> String {
    if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else {
        format!("+{y:06}")
    }
}

/// An epoch-milliseconds instant as JavaScript's `toISOString()` renders it:
/// `YYYY-MM-DDTHH:mm:ss.sssZ`, and `+YYYYYY` for years after 9999.
///
/// ```
/// use watchdog_core::rate_limit::format_iso_ms;
/// assert_eq!(format_iso_ms(1_900_003_600_000), "2030-03-17T18:46:40.000Z");
/// assert_eq!(format_iso_ms(1_500), "1970-01-01T00:00:01.500Z");
/// ```
pub fn format_iso_ms(ms: WallMs) -> String {
    let c = civil(ms);
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        year(c.year),
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        c.milli
    )
}

/// `HH:MMZ` when `at` is within a day of `now`, else `YYYY-MM-DDTHH:MMZ`.
pub(crate) fn short_time(at: WallMs, now: WallMs) -> String {
    let c = civil(at);
    if at.abs_diff(now) < 86_400_000 {
        format!("{:02}:{:02}Z", c.hour, c.minute)
    } else {
        format!(
            "{}-{:02}-{:02}T{:02}:{:02}Z",
            year(c.year),
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
