//! ISO-8601 timestamps to epoch milliseconds, by hand.
//!
//! Fast path: `YYYY-MM-DDTHH:MM:SS.sssZ`, the shape Claude Code writes. Also accepted: no or any
//! number of fraction digits, a space instead of `T`, and a `±HH:MM` / `±HHMM` offset instead of
//! `Z`. Anything else is `None`.

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

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parse an ISO-8601 date-time into milliseconds since the Unix epoch.
pub fn parse_iso8601_ms(s: &str) -> Option<i64> {
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
        let base = parse_iso8601_ms("2026-11-30T09:17:55.082Z").unwrap();
        assert_eq!(base, 1_796_030_275_082);
        assert_eq!(parse_iso8601_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_iso8601_ms("2026-11-30T09:17:55.0821234Z"), Some(base));
        assert_eq!(parse_iso8601_ms("2026-11-30T09:17:55.1Z"), Some(base + 18));
        assert_eq!(
            parse_iso8601_ms("2026-11-30T10:17:55.082+01:00"),
            Some(base)
        );
        assert_eq!(parse_iso8601_ms("2026-11-30T08:17:55.082-0100"), Some(base));
        assert_eq!(
            parse_iso8601_ms("2000-02-29T00:00:00Z"),
            Some(951_782_400_000)
        );
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T09:17:55.Z",
            "2026-13-30T09:17:55Z",
            "2026-11-30T09:17:55",
            "2026-11-30T09:17:55Zjunk",
            "20x6-11-30T09:17:55Z",
        ] {
            assert_eq!(parse_iso8601_ms(bad), None, "{bad}");
        }
    }
}
