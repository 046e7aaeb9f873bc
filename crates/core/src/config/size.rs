//! A size in bytes, written as text (`512M`, `2G`, `1.5GiB`): [`ByteSize`], the rule of
//! `--max-rss`.

use std::fmt;
use std::str::FromStr;

use super::values::{IntoValid, InvalidValue};

/// The largest size written as text: 1 EiB (no tree is that large; the sum of many RSS
/// figures cannot overflow below it).
const MAX_BYTES: f64 = (1u64 << 60) as f64;

/// A size > 0 in bytes (`max_rss`). As text: a number with an optional unit `B`, `K`, `M`,
/// `G` or `T` (powers of 1024, as `ulimit` and container limits count memory; `KB`, `KiB`,
/// `MB`, `MiB`… read the same), in any case; a bare number is bytes. At most 1 EiB.
///
/// ```
/// use watchdog_core::config::ByteSize;
/// assert_eq!("512M".parse::<ByteSize>().unwrap().get(), 512 << 20);
/// assert_eq!("1.5GiB".parse::<ByteSize>().unwrap().get(), 3 << 29);
/// assert_eq!("4096".parse::<ByteSize>().unwrap().get(), 4096);
/// assert_eq!(
///     "0".parse::<ByteSize>().unwrap_err().to_string(),
///     "must be a size > 0 such as 512M, 2G or 1.5GiB, got 0"
/// );
/// assert_eq!(ByteSize::new(3 << 29).unwrap().to_string(), "1.5GiB");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(u64);

impl ByteSize {
    /// The allowed range, as error messages say it.
    pub const ALLOWED: &'static str = "a size > 0 such as 512M, 2G or 1.5GiB";

    /// The size if the rule allows it (> 0).
    pub fn new(bytes: u64) -> Result<Self, InvalidValue> {
        if bytes > 0 {
            Ok(ByteSize(bytes))
        } else {
            Err(InvalidValue {
                allowed: Self::ALLOWED,
                value: bytes.to_string(),
            })
        }
    }

    /// The size in bytes.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// `bytes` compactly in binary units, as [`ByteSize`] reads it: `512MiB`, `1.5GiB`, `900B`.
///
/// ```
/// use watchdog_core::config::format_bytes;
/// assert_eq!(format_bytes(1 << 30), "1GiB");
/// assert_eq!(format_bytes(123_456_789), "117.7MiB");
/// ```
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v.fract() == 0.0 {
        format!("{v:.0}{}", UNITS[unit])
    } else {
        format!("{:.1}{}", (v * 10.0).round() / 10.0, UNITS[unit])
    }
}

fn parse_size(s: &str) -> Result<u64, InvalidValue> {
    let bad = || InvalidValue {
        allowed: ByteSize::ALLOWED,
        value: format!("{s:?}"),
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(bad());
    }
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let bytes = n * scale as f64;
    if !bytes.is_finite() || bytes > MAX_BYTES {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

impl FromStr for ByteSize {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, InvalidValue> {
        let raw = parse_size(s)?;
        ByteSize::new(raw).map_err(|e| InvalidValue {
            value: s.trim().to_owned(),
            ..e
        })
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

impl TryFrom<u64> for ByteSize {
    type Error = InvalidValue;
    fn try_from(bytes: u64) -> Result<Self, InvalidValue> {
        ByteSize::new(bytes)
    }
}

impl From<ByteSize> for u64 {
    fn from(v: ByteSize) -> u64 {
        v.0
    }
}

impl IntoValid<ByteSize> for u64 {
    fn into_valid(self) -> Result<ByteSize, InvalidValue> {
        ByteSize::new(self)
    }
}

impl IntoValid<Option<ByteSize>> for Option<u64> {
    fn into_valid(self) -> Result<Option<ByteSize>, InvalidValue> {
        self.map(ByteSize::new).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_units_in_any_case_and_rejects_the_rest() {
        for (text, bytes) in [
            ("1", 1),
            ("1b", 1),
            ("2k", 2048),
            ("2KB", 2048),
            ("2KiB", 2048),
            ("3m", 3 << 20),
            ("1G", 1 << 30),
            ("0.5g", 1 << 29),
            ("1T", 1 << 40),
            (" 7M ", 7 << 20),
        ] {
            assert_eq!(text.parse::<ByteSize>().unwrap().get(), bytes, "{text}");
        }
        for text in [
            "", "M", "-1M", "1X", "1e3", "1.2.3G", "2000000T", "nan", "0", "0.0001",
        ] {
            let e = text.parse::<ByteSize>().unwrap_err();
            assert_eq!(e.allowed, ByteSize::ALLOWED, "{text}");
        }
    }

    #[test]
    fn formats_round_trip() {
        for bytes in [1u64, 900, 1 << 10, 5 << 20, 3 << 29, 1 << 40] {
            let text = format_bytes(bytes);
            assert_eq!(text.parse::<ByteSize>().unwrap().get(), bytes, "{text}");
        }
    }
}
