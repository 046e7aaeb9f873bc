//! Time as people write it, without a date library: UTC calendar dates both ways (ISO-8601
//! text ↔ epoch milliseconds). Durations as text (`1h30m`) are [`crate::config`]'s, with the
//! rest of the option grammar.
//!
//! The calendar arithmetic is H. Hinnant's (`days_from_civil` / `civil_from_days`, proleptic
//! Gregorian), written once here for the rate-limit renderings and for reading transcript
//! timestamps.

/// Wall-clock time as milliseconds since the Unix epoch (1970-01-01T00:00:00Z).
pub type WallMs = u64;

const DAY_MS: u64 = 86_400_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1–12, day 1–31).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 → (year, month 1–12, day 1–31), proleptic Gregorian.
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

/// A UTC instant broken down into calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Civil {
    pub(crate) year: i64,
    pub(crate) month: u32,
    pub(crate) day: u32,
    pub(crate) hour: u64,
    pub(crate) minute: u64,
    pub(crate) second: u64,
    pub(crate) milli: u64,
}

impl Civil {
    /// The calendar fields of an epoch-milliseconds instant.
    pub(crate) fn of(ms: WallMs) -> Civil {
        let (year, month, day) = civil_from_days((ms / DAY_MS) as i64);
        let rem = ms % DAY_MS;
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

    /// The year as ISO-8601 writes it: four digits, or `+YYYYYY` after 9999.
    pub(crate) fn year_text(&self) -> String {
        if (0..=9999).contains(&self.year) {
            format!("{:04}", self.year)
        } else {
            format!("+{:06}", self.year)
        }
    }
}

/// An epoch-milliseconds instant as JavaScript's `toISOString()` renders it:
/// `YYYY-MM-DDTHH:mm:ss.sssZ`, and `+YYYYYY` for years after 9999.
///
/// ```
/// use watchdog_core::format_iso_ms;
/// assert_eq!(format_iso_ms(1_900_003_600_000), "2030-03-17T18:46:40.000Z");
/// assert_eq!(format_iso_ms(1_500), "1970-01-01T00:00:01.500Z");
/// ```
pub fn format_iso_ms(ms: WallMs) -> String {
    let c = Civil::of(ms);
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        c.year_text(),
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        c.milli
    )
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let s = b.get(at..at + n)?;
    let mut v = 0i64;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

/// An ISO-8601 date-time as milliseconds since the Unix epoch (negative before 1970).
///
/// Fast path: `YYYY-MM-DDTHH:MM:SS.sssZ`, the shape Claude Code writes. Also accepted: no or
/// any number of fraction digits, a space instead of `T`, and a `±HH:MM` / `±HHMM` offset
/// instead of `Z`. Anything else is `None`.
///
/// ```
/// use watchdog_core::parse_iso_ms;
/// assert_eq!(parse_iso_ms("2030-03-17T18:46:40.000Z"), Some(1_900_003_600_000));
/// assert_eq!(parse_iso_ms("2030-03-17T19:46:40+01:00"), Some(1_900_003_600_000));
/// assert_eq!(parse_iso_ms("2030-03-17"), None);
/// ```
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    let (h, mi, sec) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        let mut scale = 100;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            ms += i64::from(c - b'0') * scale;
            scale /= 10;
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let oh = digits(b, i + 1, 2)?;
            let om = match b.len() - (i + 3) {
                0 => 0,
                3 if b[i + 3] == b':' => digits(b, i + 4, 2)?,
                2 => digits(b, i + 3, 2)?,
                _ => return None,
            };
            let m = oh * 60 + om;
            if sign == b'+' {
                m
            } else {
                -m
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_claude_code_shape_and_variants() {
        // 2026-11-30T09:17:55.082Z: checked against `date -d ... +%s%3N`.
        let base = parse_iso_ms("2026-11-30T09:17:55.082Z").unwrap();
        assert_eq!(base, 1_796_030_275_082);
        assert_eq!(parse_iso_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_iso_ms("2026-11-30T09:17:55.0821234Z"), Some(base));
        assert_eq!(parse_iso_ms("2026-11-30T09:17:55.1Z"), Some(base + 18));
        assert_eq!(parse_iso_ms("2026-11-30T10:17:55.082+01:00"), Some(base));
        assert_eq!(parse_iso_ms("2026-11-30T08:17:55.082-0100"), Some(base));
        assert_eq!(parse_iso_ms("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T09:17:55.Z",
            "2026-13-30T09:17:55Z",
            "2026-11-30T09:17:55",
            "2026-11-30T09:17:55Zjunk",
            "20x6-11-30T09:17:55Z",
        ] {
            assert_eq!(parse_iso_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn formatting_and_parsing_agree_over_four_centuries() {
        // Every ~97 days from 1970 to 2370: leap years, century rules, month ends.
        let step = 97 * 86_400_000 + 3_723_456;
        for ms in (0..400 * 365 * 86_400_000u64).step_by(step) {
            let text = format_iso_ms(ms);
            assert_eq!(parse_iso_ms(&text), Some(ms as i64), "{text}");
        }
    }
}
