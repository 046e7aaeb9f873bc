//! JavaScript's time (milliseconds as a number, on whatever clock the host passes) as the
//! core's instants and durations, and back.
//!
//! An instant is the host's milliseconds converted to whole nanoseconds in integer arithmetic
//! (exact for every whole millisecond a `Date` holds; a fraction is rounded to the nanosecond),
//! shifted by an origin of 2^62 ns so that a clock that starts at zero, or below it, stays in range. A
//! `NaN` is the earliest instant there is: the registry treats an instant earlier than one it
//! has seen as that one, so a `NaN` moves no clock. Beyond the range (from about 146 years
//! before the host's zero to 292 years after it) a value is clamped.

use std::time::Duration;

use watchdog_core::Instant;

/// Where the host's zero lies on the core's clock, in nanoseconds (2^62, about 146 years).
const ORIGIN: u64 = 1 << 62;

/// Nanoseconds of `ms`, rounded; `NaN` is `None`; infinities and values beyond ±292 years
/// saturate. (64-bit arithmetic throughout: WebAssembly has it natively.)
fn ms_to_ns(ms: f64) -> Option<i64> {
    if ms.is_nan() {
        return None;
    }
    let whole = ms.floor();
    let fraction = ((ms - whole) * 1e6).round() as i64;
    // `as` saturates, infinities included.
    Some(
        (whole as i64)
            .saturating_mul(1_000_000)
            .saturating_add(fraction),
    )
}

/// The core's instant of `ms` on the host's clock.
pub fn instant(ms: f64) -> Instant {
    let ns = ms_to_ns(ms).map_or(0, |ns| ORIGIN.saturating_add_signed(ns));
    from_origin(Duration::from_nanos(ns))
}

/// The host's milliseconds of an instant made by [`instant`].
pub fn ms(at: Instant) -> f64 {
    let since = u64::try_from(since_origin(at).as_nanos()).unwrap_or(u64::MAX);
    let ns = since.wrapping_sub(ORIGIN) as i64;
    let whole = ns.div_euclid(1_000_000);
    let rest = ns.rem_euclid(1_000_000);
    whole as f64 + rest as f64 / 1e6
}

/// A duration of `ms` milliseconds for a limit: `None` for `NaN`, zero or less; infinity is
/// [`crate::reference::OFF`].
pub fn duration(ms: f64) -> Option<Duration> {
    if ms.is_nan() || ms <= 0.0 {
        return None;
    }
    if ms.is_infinite() {
        return Some(crate::reference::OFF);
    }
    let ns = ms_to_ns(ms)?.max(1);
    Some(Duration::from_nanos(ns.unsigned_abs()))
}

/// A duration in milliseconds.
pub fn duration_ms(d: Duration) -> f64 {
    let ns = d.as_nanos();
    (ns / 1_000_000) as f64 + (ns % 1_000_000) as f64 / 1e6
}

// On bare WebAssembly the core's instant is made from a duration since an origin. Elsewhere
// (this crate's tests on the host) it is std's, which has no origin: one is taken once.
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
fn from_origin(d: Duration) -> Instant {
    Instant::from_origin(d)
}

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
fn since_origin(at: Instant) -> Duration {
    at.since_origin()
}

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
fn base() -> Instant {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
fn from_origin(d: Duration) -> Instant {
    base() + d
}

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
fn since_origin(at: Instant) -> Duration {
    at.saturating_duration_since(base())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_milliseconds_go_there_and_back_exactly() {
        for m in [
            0.0,
            1.0,
            -1.0,
            1e9,
            1_733_212_800_123.0,
            -86_400_000.0,
            4e12,
        ] {
            assert_eq!(ms(instant(m)), m, "{m}");
        }
        assert_eq!(ms(instant(1.5)), 1.5);
        let a = instant(1_733_212_800_000.0);
        let b = instant(1_733_212_800_000.0 + 600_000.0);
        assert_eq!(b - a, Duration::from_secs(600), "differences are exact");
    }

    #[test]
    fn nan_is_the_earliest_instant_and_infinities_saturate() {
        assert!(instant(f64::NAN) < instant(-1e12));
        assert!(instant(f64::NEG_INFINITY) <= instant(-1e12));
        assert!(instant(f64::INFINITY) > instant(4e12));
        assert_eq!(ms(instant(9e12)), 9e12, "285 years after the host's zero");
    }

    #[test]
    fn limits_in_milliseconds() {
        assert_eq!(duration(600_000.0), Some(Duration::from_secs(600)));
        assert_eq!(duration(0.5), Some(Duration::from_micros(500)));
        assert_eq!(duration(1e-9), Some(Duration::from_nanos(1)), "never zero");
        assert_eq!(duration(0.0), None);
        assert_eq!(duration(-1.0), None);
        assert_eq!(duration(f64::NAN), None);
        assert_eq!(duration(f64::INFINITY), Some(crate::reference::OFF));
        assert_eq!(duration_ms(Duration::from_micros(1500)), 1.5);
    }
}
