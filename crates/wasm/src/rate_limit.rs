//! The rate-limit monitor of `createRateLimitMonitor()` and its two formatters, on the core's
//! [`RateLimitMonitor`] and the core's one-line [`Reading`] form.
//!
//! The JavaScript side keeps the reference's reading shape (a shallow copy of the SDK's
//! `SDKRateLimitInfo`, every field kept) and lays over it what the core derives: the
//! utilization ([`RateLimitMonitor::frame_utilization`]) and the overage fields carried
//! forward. Frames are rare (one per API call at most), so a frame crosses as JSON text.
//!
//! Where the core deliberately differs from the reference package (0.2.0), this API follows
//! the reference:
//! - the reading's utilization is the frame's own ([`RateLimitMonitor::frame_utilization`]),
//!   not the core's carried last-known one of a `rejected` frame's window;
//! - the warning is one-shot per monitor until `reset()`, not per window with hysteresis;
//! - `active()` reads the top-level `resetsAt` as epoch seconds whatever its size;
//! - the formatter prints what JavaScript's `String`/`toFixed` print for values the core
//!   never holds (no status, a negative or non-finite utilization), and an invalid time is
//!   reported (the caller throws `RangeError: Invalid time value`, as `Date` does).

use serde_json::{Map, Value};
use watchdog_core::rate_limit::{Reading, Status};
use watchdog_core::WallMs;
use watchdog_core::{rate_limit::RateLimitConfig, rate_limit::RateLimitMonitor};

/// Largest instant JavaScript's `Date` holds, in ms.
const MAX_DATE_MS: f64 = 8.64e15;

/// A `resetsAt` the core reads as seconds (above this it takes milliseconds).
const CORE_SECONDS_UP_TO: f64 = 1e11;

/// `now` (epoch ms, maybe fractional or negative) as the core's clock.
fn wall(now_ms: f64) -> WallMs {
    if now_ms.is_nan() || now_ms <= 0.0 {
        0
    } else {
        now_ms as WallMs // saturates
    }
}

/// The core's rate-limit monitor, holding what the reference's reading needs from it, and
/// the reference's warning: once per monitor, until `reset()`.
#[derive(Debug)]
pub struct RateLimitCore {
    inner: RateLimitMonitor,
    warned: bool,
}

/// The top-level `utilization` of a frame as JavaScript holds it (JSON text cannot say `NaN`,
/// nor tell `undefined` from a missing key).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Top {
    /// `undefined` or `null`: the reading takes the window's.
    Nullish,
    /// A number, `NaN` and infinities included: the reading keeps it.
    Number(f64),
    /// Anything else (a string, say): the reading keeps it, and it never warns.
    Other,
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
            inner: RateLimitMonitor::new(config),
            warned: false,
        })
    }

    /// Fold one `rate_limit_info` (JSON text; its top-level `utilization` as JavaScript holds
    /// it in `top`). Returns, as JSON, `set`: the fields the reading lays over the frame's own
    /// (`utilization` derived from the frame's window when the frame has none at the top
    /// level; `overageStatus` and `overageDisabledReason` given or carried forward), and
    /// `warn`: whether this reading is the monitor's warning (its utilization a number at or
    /// above `warn_at`, the first time since the monitor was made or reset). Text that is not
    /// JSON counts as a frame with no fields. The reference's `note` reads no clock, and
    /// nothing here needs one: the core's windows are given the epoch (their expiry is not
    /// what this API reads).
    pub fn note(&mut self, info_json: &[u8], top: Top) -> String {
        let info: Value = serde_json::from_slice(info_json).unwrap_or(Value::Null);
        let mut set = derived(&mut self.inner, &info, 0);
        let held = match top {
            Top::Number(u) => {
                set.remove("utilization");
                Some(u)
            }
            Top::Other => {
                set.remove("utilization");
                None
            }
            Top::Nullish => set.get("utilization").and_then(Value::as_f64),
        };
        let warn = !self.warned && held.is_some_and(|u| u >= self.inner.config().warn_at());
        self.warned |= warn;
        serde_json::json!({ "set": set, "warn": warn }).to_string()
    }

    /// Whether a reading with this top-level `resetsAt` (epoch seconds) has expired at
    /// `now_ms`: at its reset instant or later. A NaN or infinite `resetsAt` never expires.
    pub fn expired(&self, resets_at: f64, now_ms: f64) -> bool {
        expired(&self.inner, resets_at, now_ms)
    }

    /// Forget every reading; the warning re-arms.
    pub fn reset(&mut self) {
        self.inner.reset();
        self.warned = false;
    }
}

/// What [`RateLimitCore::note`] lays over a parsed frame.
fn derived(m: &mut RateLimitMonitor, info: &Value, now: WallMs) -> Map<String, Value> {
    let utilization = m.frame_utilization(info);
    m.note(now, info);
    let mut out = Map::new();
    if let Some(u) = utilization {
        out.insert("utilization".into(), u.into());
    }
    if let Some(r) = m.latest() {
        if let Some(s) = &r.overage_status {
            out.insert("overageStatus".into(), s.clone().into());
        }
        if let Some(s) = &r.overage_disabled_reason {
            out.insert("overageDisabledReason".into(), s.clone().into());
        }
    }
    out
}

fn expired(m: &RateLimitMonitor, resets_at: f64, now_ms: f64) -> bool {
    let exact = resets_at * 1000.0;
    match m.latest().and_then(|r| r.resets_at_ms) {
        // The core holds this very instant (whole seconds or ms, read as seconds): its
        // reading's expiry, at the reset instant or later.
        Some(r) if (0.0..=CORE_SECONDS_UP_TO).contains(&resets_at) && r as f64 == exact => {
            // Active at `now` truncated to whole ms means `r` is later than `now` itself (`r`
            // is whole ms); expired there is expired at `now` unless `now` < 0 (read as 0).
            m.active(wall(now_ms)).is_none() && (r as f64) <= now_ms
        }
        // A value the core reads otherwise (ms, negative, fractional ms) or ignores: the
        // reference's arithmetic.
        _ => exact <= now_ms,
    }
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
    use serde_json::json;

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

    #[test]
    fn the_reading_fields_are_the_cores_without_its_carried_utilization() {
        let mut m = RateLimitMonitor::new(RateLimitConfig::default());
        let d = derived(
            &mut m,
            &json!({"status": "allowed_warning", "utilization": 0.99, "overageStatus": "rejected"}),
            0,
        );
        assert_eq!(
            Value::Object(d),
            json!({"utilization": 0.99, "overageStatus": "rejected"})
        );
        let d = derived(
            &mut m,
            &json!({"status": "rejected", "resetsAt": 1_900_003_600}),
            0,
        );
        assert_eq!(
            Value::Object(d),
            json!({"overageStatus": "rejected"}),
            "no carried utilization"
        );
        assert_eq!(
            m.latest().unwrap().utilization,
            Some(0.99),
            "the core still carries it"
        );
        assert!(!expired(&m, 1_900_003_600.0, 1_900_003_599_999.0));
        assert!(expired(&m, 1_900_003_600.0, 1_900_003_600_000.0));
        assert!(expired(&m, -5.0, 0.0));
        assert!(!expired(&m, f64::NAN, 1e300));
    }

    #[test]
    fn the_warning_is_once_per_monitor_at_or_above_warn_at_until_reset() {
        let mut m = RateLimitCore::new(0.85, "five_hour").unwrap();
        let note = |m: &mut RateLimitCore, info: Value, top: Top| -> Value {
            serde_json::from_str(&m.note(info.to_string().as_bytes(), top)).unwrap()
        };
        let windows = |u: f64| json!({"status": "allowed", "unifiedWindows": {"five_hour": {"utilization": u}}});
        let low = note(&mut m, windows(0.11), Top::Nullish);
        assert_eq!(low, json!({"set": {"utilization": 0.11}, "warn": false}));
        // The top level wins as given: a string never warns, NaN neither.
        let s = note(&mut m, windows(0.99), Top::Other);
        assert_eq!(s, json!({"set": {}, "warn": false}));
        assert_eq!(
            note(&mut m, windows(0.99), Top::Number(f64::NAN))["warn"],
            false
        );
        // At warn_at exactly: the warning, once.
        assert_eq!(note(&mut m, windows(0.5), Top::Number(0.85))["warn"], true);
        assert_eq!(note(&mut m, windows(0.99), Top::Nullish)["warn"], false);
        m.reset();
        assert_eq!(note(&mut m, windows(0.99), Top::Nullish)["warn"], true);
    }
}
