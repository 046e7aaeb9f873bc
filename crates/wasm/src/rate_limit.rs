//! The rate-limit monitor of `createRateLimitMonitor()` and its two formatters, on the core's
//! rules ([`reported_utilization`], the validated [`RateLimitConfig`]) and the core's one-line
//! [`Reading`] form. A window's utilization is read the reference's way: any number (the core
//! reads one in [0, 10] for the CLI).
//!
//! The JavaScript side keeps the reference's reading shape (a shallow copy of the SDK's
//! `SDKRateLimitInfo`, every field kept) and lays over it what [`RateLimitCore::note`] decides
//! from the fields it reads of a frame ([`Frame`]): a frame crosses as a handful of numbers,
//! so a frame costs about what the reference's merge does.
//!
//! Where the core deliberately differs from the reference package (0.2.0), this API follows
//! the reference:
//! - the reading's utilization is the frame's own ([`reported_utilization`]), not the core's
//!   carried last-known one of a `rejected` frame's window;
//! - the warning is one-shot per monitor until `reset()`, not per window with hysteresis;
//! - `active()` reads the top-level `resetsAt` as epoch seconds whatever its size;
//! - the formatter prints what JavaScript's `String`/`toFixed` print for values the core
//!   never holds (no status, a negative or non-finite utilization), and an invalid time is
//!   reported (the caller throws `RangeError: Invalid time value`, as `Date` does).

use watchdog_core::rate_limit::{reported_utilization, RateLimitConfig, Reading, Status};
use watchdog_core::WallMs;

/// Largest instant JavaScript's `Date` holds, in ms.
const MAX_DATE_MS: f64 = 8.64e15;

/// A value of a frame as JavaScript holds it (JSON cannot say `NaN`, nor tell `undefined`
/// from a missing key).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Held {
    /// `undefined` or `null`.
    Nullish,
    /// A number, `NaN` and infinities included.
    Number(f64),
    /// Any other type (a string, say).
    Other,
}

impl Held {
    fn number(self) -> Option<f64> {
        match self {
            Held::Number(x) => Some(x),
            _ => None,
        }
    }
}

/// An overage field of a frame (`overageStatus`, `overageDisabledReason`): `undefined`, or
/// given (any value, `null` included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// `undefined`: the reading carries the last one's forward, if it had one.
    Absent,
    /// Any other value: the reading's own, carried forward in turn.
    Given,
}

/// What the reading reads of one `rate_limit_info`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// `utilization`, the top level (the reading keeps it as given unless it is nullish).
    pub top: Held,
    /// Whether `rateLimitType` names a window (a non-empty string), and that window's
    /// `unifiedWindows` entry's `utilization`.
    pub own_named: bool,
    /// See `own_named`.
    pub own: Held,
    /// The fallback window's `unifiedWindows` entry's `utilization`.
    pub fallback: Held,
    /// `overageStatus`.
    pub overage_status: Given,
    /// `overageDisabledReason`.
    pub overage_disabled_reason: Given,
}

/// What [`RateLimitCore::note`] decides for a frame's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Note {
    /// The reading's utilization, when the frame's top level is nullish: its own window's
    /// (1) or the fallback window's (2); 0: none derived.
    pub utilization_from: u8,
    /// Carry the last reading's `overageStatus` forward.
    pub carry_overage_status: bool,
    /// Carry the last reading's `overageDisabledReason` forward.
    pub carry_overage_disabled_reason: bool,
    /// This reading is the monitor's warning.
    pub warn: bool,
}

impl Note {
    /// As bits: `utilization_from` in bits 0-1, then the two carries, then the warning.
    pub fn bits(self) -> u32 {
        u32::from(self.utilization_from)
            | u32::from(self.carry_overage_status) << 2
            | u32::from(self.carry_overage_disabled_reason) << 3
            | u32::from(self.warn) << 4
    }
}

/// The monitor: its policy, and what the last reading holds that the next one needs.
#[derive(Debug)]
pub struct RateLimitCore {
    config: RateLimitConfig,
    warned: bool,
    /// The last reading has an `overageStatus` / `overageDisabledReason` (not `undefined`) to
    /// carry.
    overage_status: bool,
    overage_disabled_reason: bool,
}

impl RateLimitCore {
    /// A monitor with the core's policy: `warn_at` in [0, 1] (JavaScript checks it first, with
    /// the reference's message) and the fallback window; the core's words when it refuses.
    pub fn new(warn_at: f64, fallback_window: &str) -> Result<Self, String> {
        let config = RateLimitConfig::default()
            .with_warn_at(warn_at)
            .and_then(|c| c.with_fallback_window(fallback_window.to_owned()))
            .map_err(|e| e.to_string())?;
        Ok(RateLimitCore {
            config,
            warned: false,
            overage_status: false,
            overage_disabled_reason: false,
        })
    }

    /// Fold one frame: the reading's utilization is the top level's as given, else the one
    /// the frame reports ([`reported_utilization`]); an overage field the frame leaves
    /// `undefined` carries the last reading's forward (`null` too, as in the reference); the warning comes once per monitor (until [`reset`](Self::reset)),
    /// with the first reading whose utilization is a number at or above `warn_at`. The
    /// reference's `note` reads no clock, and neither does this.
    pub fn note(&mut self, f: &Frame) -> Note {
        let own = f.own.number().filter(|_| f.own_named);
        let fallback = f.fallback.number();
        let derived = reported_utilization(None, own, fallback);
        let (utilization_from, held) = match f.top {
            Held::Nullish if derived.is_none() => (0, None),
            Held::Nullish if reported_utilization(None, own, None).is_some() => (1, derived),
            Held::Nullish => (2, derived),
            top => (0, top.number()),
        };
        let warn = !self.warned && held.is_some_and(|u| u >= self.config.warn_at());
        self.warned |= warn;
        let carry = |held: &mut bool, given: Given| {
            let carry = given == Given::Absent && *held;
            *held = carry || given == Given::Given;
            carry
        };
        Note {
            utilization_from,
            carry_overage_status: carry(&mut self.overage_status, f.overage_status),
            carry_overage_disabled_reason: carry(
                &mut self.overage_disabled_reason,
                f.overage_disabled_reason,
            ),
            warn,
        }
    }

    /// Forget every reading; the warning re-arms.
    pub fn reset(&mut self) {
        self.warned = false;
        self.overage_status = false;
        self.overage_disabled_reason = false;
    }
}

/// Whether a reading with this top-level `resetsAt` (epoch seconds, as the reference reads it
/// whatever its size) has expired at `now_ms`: at its reset instant or later. A NaN or
/// infinite `resetsAt` never expires.
pub fn expired(resets_at: f64, now_ms: f64) -> bool {
    resets_at * 1000.0 <= now_ms
}

/// JavaScript's `x.toFixed(0)` for any number.
fn js_to_fixed0(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x < 0.0 {
        return format!("-{}", js_to_fixed0(-x));
    }
    if x.is_infinite() {
        return "Infinity".into();
    }
    if x >= 1e21 {
        // toFixed gives String(x) here: the shortest form, exponent signed.
        return format!("{x:e}").replace('e', "e+");
    }
    if x < 1e19 {
        return watchdog_core::rate_limit::percent_half_up(x / 100.0).to_string();
    }
    format!("{x:.0}") // an integer already
}

/// The reset time of `resets_at` (epoch seconds) in JavaScript's `Date` terms: whole ms,
/// truncated; `None` where `Date` is invalid (NaN, infinite, beyond ±8.64e15 ms) or before
/// 1970 (not representable by the core's clock).
fn reset_ms(resets_at: f64) -> Option<Option<WallMs>> {
    let ms = (resets_at * 1000.0).trunc();
    if !ms.is_finite() || ms.abs() > MAX_DATE_MS {
        return None;
    }
    if ms < 0.0 {
        return Some(None);
    }
    Some(Some(ms as WallMs))
}

/// `rateLimitResetIso` of a numeric `resetsAt`: the ISO-8601 form of `new Date(resetsAt *
/// 1000)`, or `null` where that `Date` is invalid (the caller throws `RangeError`).
pub fn rate_limit_reset_iso(resets_at: f64) -> Option<String> {
    match reset_ms(resets_at)? {
        Some(ms) => Some(watchdog_core::format_iso_ms(ms)),
        None => Some(pre_epoch_iso(resets_at)),
    }
}

/// ISO form of an instant before 1970 (the core's clock starts at the epoch).
fn pre_epoch_iso(resets_at: f64) -> String {
    let ms = (resets_at * 1000.0).trunc() as i64;
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let year = if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else if y < 0 {
        format!("-{:06}", -y)
    } else {
        format!("+{y:06}")
    };
    format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// `formatRateLimitReading` of a reading, its fields already read the way the reference reads
/// them: `status` as `String(status)`, `utilization` when not `undefined` (as a number),
/// the overage fields when truthy (as strings), `resets_at` when a number. The core's
/// one-liner; `null` where the reset time is an invalid `Date` (the caller throws).
pub fn format_rate_limit_reading(
    status: &str,
    utilization: Option<f64>,
    overage_status: Option<String>,
    overage_disabled_reason: Option<String>,
    resets_at: Option<f64>,
) -> Option<String> {
    let (resets_at_ms, pre_epoch) = match resets_at {
        None => (None, None),
        Some(s) => match reset_ms(s)? {
            Some(ms) => (Some(ms), None),
            None => (None, Some(pre_epoch_iso(s))),
        },
    };
    let core_percent = utilization.filter(|u| {
        let x = u * 100.0;
        (0.0..1e19).contains(&x)
    });
    let reading = Reading {
        status: Some(Status::parse(status)),
        utilization: core_percent,
        resets_at_ms,
        overage_status,
        overage_disabled_reason,
        ..Reading::default()
    };
    let mut line = reading.to_string();
    if let (Some(u), None) = (utilization, core_percent) {
        line.insert_str(status.len(), &format!(" at {}%", js_to_fixed0(u * 100.0)));
    }
    if let Some(iso) = pre_epoch {
        line.push_str(&format!(", resets at {iso}"));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_fixed_like_javascript() {
        assert_eq!(js_to_fixed0(12.5), "13");
        assert_eq!(js_to_fixed0(-12.5), "-13");
        assert_eq!(js_to_fixed0(f64::NAN), "NaN");
        assert_eq!(js_to_fixed0(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(js_to_fixed0(1e21), "1e+21");
        assert_eq!(js_to_fixed0(1.5e20), "150000000000000000000");
    }

    #[test]
    fn the_formatter_is_the_cores_one_liner_with_javascripts_edges() {
        let f = |s: &str, u: Option<f64>, o: Option<&str>, r: Option<&str>, at: Option<f64>| {
            format_rate_limit_reading(s, u, o.map(Into::into), r.map(Into::into), at)
        };
        assert_eq!(
            f("allowed_warning", Some(0.99), Some("rejected"), Some("out_of_credits"), Some(1_900_003_600.0)).unwrap(),
            "allowed_warning at 99%, overage rejected (out_of_credits), resets at 2030-03-17T18:46:40.000Z"
        );
        assert_eq!(f("undefined", None, None, None, None).unwrap(), "undefined");
        assert_eq!(
            f("allowed", Some(-0.2), None, None, None).unwrap(),
            "allowed at -20%"
        );
        assert_eq!(
            f("allowed", Some(f64::NAN), None, None, None).unwrap(),
            "allowed at NaN%"
        );
        assert_eq!(
            f("allowed", None, None, None, Some(-1.5)).unwrap(),
            "allowed, resets at 1969-12-31T23:59:58.500Z"
        );
        assert_eq!(f("allowed", None, None, None, Some(f64::NAN)), None);
        assert_eq!(f("allowed", None, None, None, Some(9e12)), None);
        assert_eq!(
            rate_limit_reset_iso(1.5).as_deref(),
            Some("1970-01-01T00:00:01.500Z")
        );
        assert_eq!(
            rate_limit_reset_iso(-8.64e12).as_deref(),
            Some("-271821-04-20T00:00:00.000Z")
        );
    }

    fn frame(top: Held, own: Held, fallback: Held) -> Frame {
        Frame {
            top,
            own_named: true,
            own,
            fallback,
            overage_status: Given::Absent,
            overage_disabled_reason: Given::Absent,
        }
    }

    #[test]
    fn the_reading_takes_the_top_level_as_given_else_the_window_the_frame_reports() {
        let mut m = RateLimitCore::new(0.85, "five_hour").unwrap();
        let from = |m: &mut RateLimitCore, f: Frame| m.note(&f).utilization_from;
        use Held::*;
        assert_eq!(from(&mut m, frame(Nullish, Number(0.11), Number(0.5))), 1);
        assert_eq!(from(&mut m, frame(Nullish, Nullish, Number(0.5))), 2);
        assert_eq!(from(&mut m, frame(Nullish, Other, Other)), 0, "no number");
        let fifty = frame(Nullish, Number(50.0), Other);
        assert_eq!(
            from(&mut m, fifty),
            1,
            "any number, as the reference reads it"
        );
        let unnamed = Frame {
            own_named: false,
            ..frame(Nullish, Number(0.11), Number(0.5))
        };
        assert_eq!(
            from(&mut m, unnamed),
            2,
            "an empty rateLimitType names no window"
        );
        assert_eq!(
            from(&mut m, frame(Number(0.2), Number(0.11), Nullish)),
            0,
            "kept as given"
        );
        assert_eq!(
            from(&mut m, frame(Other, Number(0.11), Nullish)),
            0,
            "kept as given"
        );
        assert!(expired(1_900_003_600.0, 1_900_003_600_000.0));
        assert!(!expired(1_900_003_600.0, 1_900_003_599_999.0));
        assert!(expired(-5.0, 0.0));
        assert!(!expired(f64::NAN, 1e300));
        assert!(!expired(f64::INFINITY, 1e300));
    }

    #[test]
    fn an_overage_field_carries_forward_only_when_left_out_and_held() {
        let mut m = RateLimitCore::new(0.85, "five_hour").unwrap();
        let mut note = |os: Given, reason: Given| {
            let n = m.note(&Frame {
                overage_status: os,
                overage_disabled_reason: reason,
                ..frame(Held::Nullish, Held::Nullish, Held::Nullish)
            });
            (n.carry_overage_status, n.carry_overage_disabled_reason)
        };
        let (absent, given) = (Given::Absent, Given::Given);
        assert_eq!(note(absent, absent), (false, false), "nothing held");
        assert_eq!(note(given, absent), (false, false));
        assert_eq!(
            note(absent, absent),
            (true, false),
            "held since, and carried"
        );
        assert_eq!(note(absent, given), (true, false));
        assert_eq!(note(absent, absent), (true, true));
    }

    #[test]
    fn the_warning_is_once_per_monitor_at_or_above_warn_at_until_reset() {
        use Held::*;
        let mut m = RateLimitCore::new(0.85, "five_hour").unwrap();
        let warns = |m: &mut RateLimitCore, top: Held, window: f64| {
            m.note(&frame(top, Number(window), Nullish)).warn
        };
        assert!(!warns(&mut m, Nullish, 0.11));
        // The top level wins as given: a string never warns, NaN neither.
        assert!(!warns(&mut m, Other, 0.99));
        assert!(!warns(&mut m, Number(f64::NAN), 0.99));
        // At warn_at exactly: the warning, once.
        assert!(warns(&mut m, Number(0.85), 0.5));
        assert!(!warns(&mut m, Nullish, 0.99));
        m.reset();
        assert!(warns(&mut m, Nullish, 0.99));
        assert_eq!(
            Note {
                utilization_from: 2,
                carry_overage_status: true,
                carry_overage_disabled_reason: false,
                warn: true
            }
            .bits(),
            0b10110
        );
    }
}
