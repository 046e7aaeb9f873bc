//! Validated option values: each rule lives in one type, whose constructor, `TryFrom` and
//! `FromStr` reject what the rule forbids with the same words.

use std::fmt;
use std::str::FromStr;
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

/// A value its rule rejects: what is allowed and what was given. [`InvalidValue::option`]
/// names the option ([`ConfigError`]).
///
/// ```
/// use watchdog_core::config::PositiveDuration;
/// let e = "0s".parse::<PositiveDuration>().unwrap_err();
/// assert_eq!(e.to_string(), "must be a duration > 0, got 0s");
/// assert_eq!(e.option("idle").to_string(), "idle must be a duration > 0, got 0s");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be {allowed}, got {value}")]
pub struct InvalidValue {
    /// The allowed range, e.g. `a duration > 0`.
    pub allowed: &'static str,
    /// The rejected value, rendered.
    pub value: String,
}

impl InvalidValue {
    /// The same rejection, naming the option.
    pub fn option(self, option: &'static str) -> ConfigError {
        ConfigError {
            option,
            allowed: self.allowed,
            value: self.value,
        }
    }
}

/// A value a builder takes for an option of type `T`: the raw value (checked by `T`'s rule
/// when the option is set) or a `T` (checked already).
pub trait IntoValid<T> {
    /// Check the value against `T`'s rule.
    fn into_valid(self) -> Result<T, InvalidValue>;
}

impl<T> IntoValid<T> for T {
    fn into_valid(self) -> Result<T, InvalidValue> {
        Ok(self)
    }
}

/// The longest duration written as text (`FromStr`): 365 days. Longer ones are rejected: no
/// run is meant to last that long, and instants that far ahead overflow on some platforms.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

const DURATION_TEXT: &str = "a duration such as 90s, 10m, 1h30m or 250ms, at most 365d";

/// Parse a duration such as `10m`, `90s`, `1h30m`, `250ms` or `1.5h` (units `ms`, `s`, `m`,
/// `h`, `d`; a bare number is seconds), at most [`MAX_DURATION`]: [`HumanDuration`]'s `FromStr`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, InvalidValue> {
    let bad = || InvalidValue {
        allowed: DURATION_TEXT,
        value: format!("{s:?}"),
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let secs = match t.parse::<f64>() {
        Ok(secs) => secs,
        Err(_) => {
            let mut total = 0f64;
            let mut rest = t;
            while !rest.is_empty() {
                let num_len = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .filter(|&n| n > 0)
                    .ok_or_else(bad)?;
                let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
                rest = &rest[num_len..];
                let unit_len = rest
                    .find(|c: char| c.is_ascii_digit() || c == '.')
                    .unwrap_or(rest.len());
                let scale = match &rest[..unit_len] {
                    "ms" => 0.001,
                    "s" | "sec" | "secs" => 1.0,
                    "m" | "min" | "mins" => 60.0,
                    "h" | "hr" | "hrs" => 3600.0,
                    "d" => 86400.0,
                    _ => return Err(bad()),
                };
                total += n * scale;
                rest = &rest[unit_len..];
            }
            total
        }
    };
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| *d <= MAX_DURATION)
        .ok_or_else(bad)
}

/// Render a duration compactly, as [`parse_duration`] reads it: `10m`, `1h30m`, `2.5s`,
/// `250ms`: [`HumanDuration`]'s `Display`.
pub(crate) fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if !ms.is_multiple_of(1000) && ms < 60_000 {
        return format!("{:.1}s", d.as_secs_f64());
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

/// Any duration, written and shown as text (`90s`, `10m`; at most 365 days as text). For
/// options without a further rule, such as a grace period that may be 0.
///
/// As text: `10m`, `90s`, `1h30m`, `250ms` or `1.5h` (units `ms`, `s`, `m`, `h`, `d`; a bare
/// number is seconds), at most [`MAX_DURATION`]; shown compactly, as it is read.
///
/// ```
/// use std::time::Duration;
/// use watchdog_core::config::HumanDuration;
/// let parse = |s: &str| s.parse::<HumanDuration>().map(HumanDuration::get);
/// assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
/// assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
/// assert!(parse("ten minutes").is_err());
/// assert!(parse("366d").is_err(), "at most 365 days");
/// assert_eq!(HumanDuration(Duration::from_secs(5400)).to_string(), "1h30m");
/// assert_eq!(HumanDuration(Duration::from_millis(2500)).to_string(), "2.5s");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    /// The duration.
    pub const fn get(self) -> Duration {
        self.0
    }
}

impl FromStr for HumanDuration {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, InvalidValue> {
        parse_duration(s).map(HumanDuration)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl From<HumanDuration> for Duration {
    fn from(d: HumanDuration) -> Duration {
        d.0
    }
}

/// Defines a validated newtype: its rule, constructor, accessors, `TryFrom`, `FromStr`,
/// `Display` and [`IntoValid`] of the raw value.
macro_rules! validated {
    (
        $(#[$doc:meta])*
        $name:ident($raw:ty), allowed = $allowed:literal,
        check = |$x:ident| $check:expr,
        show = |$y:ident| $show:expr,
        parse = $parse:expr $(,)?
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
        pub struct $name($raw);

        impl $name {
            /// The allowed range, as error messages say it.
            pub const ALLOWED: &'static str = $allowed;

            /// The value if the rule allows it.
            #[allow(clippy::manual_range_contains)] // also used in a const fn
            pub fn new(value: $raw) -> Result<Self, InvalidValue> {
                let $x = value;
                if $check {
                    Ok($name(value))
                } else {
                    let $y = value;
                    Err(InvalidValue {
                        allowed: Self::ALLOWED,
                        value: $show,
                    })
                }
            }

            /// The value.
            pub const fn get(self) -> $raw {
                self.0
            }

            /// For constants: a value the rule rejects fails to compile.
            #[allow(clippy::manual_range_contains)] // `contains` is not const
            pub(crate) const fn new_const(value: $raw) -> Self {
                let $x = value;
                assert!($check, "a constant breaks its rule");
                $name(value)
            }
        }

        impl TryFrom<$raw> for $name {
            type Error = InvalidValue;
            fn try_from(value: $raw) -> Result<Self, InvalidValue> {
                $name::new(value)
            }
        }

        impl From<$name> for $raw {
            fn from(v: $name) -> $raw {
                v.0
            }
        }

        impl IntoValid<$name> for $raw {
            fn into_valid(self) -> Result<$name, InvalidValue> {
                $name::new(self)
            }
        }

        impl FromStr for $name {
            type Err = InvalidValue;
            fn from_str(s: &str) -> Result<Self, InvalidValue> {
                let parse: fn(&str) -> Result<$raw, InvalidValue> = $parse;
                let raw = parse(s)?;
                // A value the rule rejects is shown as it was written.
                $name::new(raw).map_err(|e| InvalidValue {
                    value: s.trim().to_owned(),
                    ..e
                })
            }
        }
    };
}

/// A number, or what `allowed` says is wanted.
fn parse_number(s: &str, allowed: &'static str) -> Result<f64, InvalidValue> {
    s.trim().parse().map_err(|_| InvalidValue {
        allowed,
        value: format!("{s:?}"),
    })
}

validated! {
    /// A duration > 0 (`idle`, `startup`, `no_progress`, `linger`, `ceiling`, `max_wait`,
    /// MCP give-up times). As text: as [`HumanDuration`], so at most 365 days.
    ///
    /// ```
    /// use std::time::Duration;
    /// use watchdog_core::config::PositiveDuration;
    /// assert_eq!("10m".parse::<PositiveDuration>().unwrap().get(), Duration::from_secs(600));
    /// assert!(PositiveDuration::new(Duration::ZERO).is_err());
    /// ```
    PositiveDuration(Duration), allowed = "a duration > 0",
    check = |d| !d.is_zero(),
    show = |d| format!("{d:?}"),
    parse = parse_duration,
}

impl fmt::Display for PositiveDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl IntoValid<Option<PositiveDuration>> for Option<Duration> {
    fn into_valid(self) -> Result<Option<PositiveDuration>, InvalidValue> {
        self.map(PositiveDuration::new).transpose()
    }
}

validated! {
    /// A finite number ≥ 1: a multiplier that never shortens (`extend_factor`).
    ///
    /// ```
    /// use watchdog_core::config::Factor;
    /// assert_eq!("2".parse::<Factor>().unwrap().get(), 2.0);
    /// assert_eq!(Factor::new(0.5).unwrap_err().to_string(), "must be a number >= 1, got 0.5");
    /// ```
    Factor(f64), allowed = "a number >= 1",
    check = |f| f.is_finite() && f >= 1.0,
    show = |f| f.to_string(),
    parse = |s| parse_number(s, Factor::ALLOWED),
}

validated! {
    /// A number in [0, 1], both ends included (`high_utilization`, the rate-limit `warn_at`
    /// and `hysteresis`); NaN is rejected.
    ///
    /// ```
    /// use watchdog_core::config::Fraction;
    /// assert!("0".parse::<Fraction>().is_ok() && "1".parse::<Fraction>().is_ok());
    /// assert_eq!(Fraction::new(1.5).unwrap_err().to_string(), "must be a number in [0, 1], got 1.5");
    /// ```
    Fraction(f64), allowed = "a number in [0, 1]",
    check = |f| f >= 0.0 && f <= 1.0,
    show = |f| f.to_string(),
    parse = |s| parse_number(s, Fraction::ALLOWED),
}

validated! {
    /// A number in (0, 1]: above 0, at most 1 (the stalling `warn_at` of [`Limits`](super::Limits);
    /// 1 means no warning before the kill); NaN is rejected.
    ///
    /// ```
    /// use watchdog_core::config::NonZeroFraction;
    /// assert!("1".parse::<NonZeroFraction>().is_ok());
    /// assert_eq!("0".parse::<NonZeroFraction>().unwrap_err().to_string(), "must be a number in (0, 1], got 0");
    /// ```
    NonZeroFraction(f64), allowed = "a number in (0, 1]",
    check = |f| f > 0.0 && f <= 1.0,
    show = |f| f.to_string(),
    parse = |s| parse_number(s, NonZeroFraction::ALLOWED),
}

macro_rules! display_number {
    ($($name:ident),*) => {$(
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    )*};
}
display_number!(Factor, Fraction, NonZeroFraction);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_combinations() {
        let cases = [
            ("10m", 600_000),
            ("90s", 90_000),
            ("1h30m", 5_400_000),
            ("250ms", 250),
            ("1.5h", 5_400_000),
            ("45", 45_000),
            ("2d", 172_800_000),
            ("1m30s", 90_000),
        ];
        for (s, ms) in cases {
            assert_eq!(parse_duration(s).unwrap(), Duration::from_millis(ms), "{s}");
        }
    }

    #[test]
    fn rejects_garbage_saying_what_is_allowed() {
        for s in [
            "",
            "m",
            "10x",
            "-5s",
            "1e400",
            "abc",
            "9223372036854775807s",
            "366d",
            "1e12",
        ] {
            let e = parse_duration(s).unwrap_err();
            assert_eq!(e.allowed, DURATION_TEXT, "{s}");
            assert_eq!(e.value, format!("{s:?}"));
        }
    }

    #[test]
    fn formats_compactly_and_round_trips() {
        assert_eq!(format_duration(Duration::from_secs(600)), "10m");
        assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(format_duration(Duration::from_secs(0)), "0ms");
        for secs in [1, 59, 60, 61, 600, 660, 3599, 3600, 5400, 21_600, 86_400] {
            let d = Duration::from_secs(secs);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{secs}");
        }
    }

    #[test]
    fn one_rule_for_values_and_text() {
        // The text and the value of one option are rejected in the same words.
        let text = "0s".parse::<PositiveDuration>().unwrap_err();
        let value = PositiveDuration::new(Duration::ZERO).unwrap_err();
        assert_eq!(text.to_string(), "must be a duration > 0, got 0s");
        assert_eq!(value.to_string(), "must be a duration > 0, got 0ns");
        assert_eq!(
            "x".parse::<Factor>().unwrap_err().to_string(),
            "must be a number >= 1, got \"x\""
        );
        // Text that is not a duration at all says what a duration looks like.
        assert_eq!(
            "366d".parse::<PositiveDuration>().unwrap_err().allowed,
            DURATION_TEXT
        );
        assert!(Factor::new(f64::INFINITY).is_err());
        assert!(Fraction::new(f64::NAN).is_err());
        assert!(NonZeroFraction::new(f64::NAN).is_err());
        assert_eq!(
            "1.5".parse::<Fraction>().unwrap_err(),
            Fraction::new(1.5).unwrap_err()
        );
    }
}
