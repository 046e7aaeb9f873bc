//! Human durations for flags: `10m`, `90s`, `1h30m`, `250ms`, `1.5h`.

use std::time::Duration;

/// The longest duration any flag takes: 365 days. Longer ones are a usage error: no run is
/// meant to last that long, and instants that far ahead overflow on some platforms.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 86_400);

/// Parse a duration such as `10m`, `90s`, `1h30m`, `250ms` or `1.5h`. A bare number is seconds.
///
/// ```
/// use std::time::Duration;
/// use agent_watchdog::duration::parse_duration;
/// assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
/// assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
/// assert!(parse_duration("ten minutes").is_err());
/// assert!(parse_duration("366d").is_err(), "at most 365 days");
/// ```
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return secs_to_duration(secs, s);
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("missing unit in {s:?} (use ms, s, m, h or d)"))?;
        if num_len == 0 {
            return Err(format!("expected a number in {s:?}"));
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("bad number in {s:?}"))?;
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
            u => {
                return Err(format!(
                    "unknown unit {u:?} in {s:?} (use ms, s, m, h or d)"
                ))
            }
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    secs_to_duration(total, s)
}

fn secs_to_duration(secs: f64, original: &str) -> Result<Duration, String> {
    let d =
        Duration::try_from_secs_f64(secs).map_err(|_| format!("invalid duration {original:?}"))?;
    if d > MAX_DURATION {
        return Err(format!(
            "{original:?} is longer than the longest allowed, 365d"
        ));
    }
    Ok(d)
}

/// Render a duration compactly: `10m`, `1h30m`, `2.5s`, `250ms` (the core's renderer).
pub use watchdog_core::wall::format_duration;

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
    fn rejects_garbage_with_a_reason() {
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
            assert!(parse_duration(s).is_err(), "{s}");
        }
    }
}
