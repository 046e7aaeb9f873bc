//! Round thresholds: the recommendation ladder and its margin.

/// The round values a recommendation is chosen from, in ms: 1m, 2m, 3m, 5m, 7m, 10m, 15m, 20m,
/// 30m, 45m, 60m, 90m, 2h, 3h, 4h, 6h, 8h, 12h, 24h (then whole days).
pub const LADDER_MS: [u64; 19] = [
    60_000, 120_000, 180_000, 300_000, 420_000, 600_000, 900_000, 1_200_000, 1_800_000, 2_700_000,
    3_600_000, 5_400_000, 7_200_000, 10_800_000, 14_400_000, 21_600_000, 28_800_000, 43_200_000,
    86_400_000,
];

/// A recommended value is at least this many times the longest productive silence it covers.
pub const MARGIN: f64 = 1.25;

/// The longest value a recommendation can be: the longest duration `run` accepts
/// ([`MAX_DURATION`](watchdog_core::config::MAX_DURATION), 365 days), so every recommendation
/// is a flag value `run` takes.
pub const MAX_MS: u64 = watchdog_core::config::MAX_DURATION.as_millis() as u64;

/// The smallest ladder value at or above `ms` (whole days beyond the ladder), at most
/// [`MAX_MS`].
pub fn round_up(ms: f64) -> u64 {
    for v in LADDER_MS {
        if v as f64 >= ms {
            return v;
        }
    }
    let day = 86_400_000f64;
    ((ms / day).ceil() * day).min(MAX_MS as f64) as u64
}

/// Whether a silence of `longest_ms` needs more than [`MAX_MS`] with the margin: no threshold
/// `run` accepts covers it (a clock that jumped, or a session left open for a year).
pub fn beyond_cap(longest_ms: u64) -> bool {
    longest_ms as f64 * MARGIN > MAX_MS as f64
}

/// The ladder value after `ms` (for stepping a threshold up).
pub fn next_rung(ms: u64) -> u64 {
    round_up(ms as f64 + 1.0)
}

/// The smallest round value with the margin over `longest_ms`: `round_up(MARGIN × longest_ms)`.
pub fn with_margin(longest_ms: u64) -> u64 {
    round_up(longest_ms as f64 * MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder() {
        assert_eq!(with_margin(0), 60_000);
        assert_eq!(with_margin(75_087), 120_000);
        assert_eq!(with_margin(528_000), 900_000); // 8m48s × 1.25 = 11m → 15m
        assert_eq!(with_margin(480_000), 600_000); // 8m × 1.25 = 10m exactly
        assert_eq!(next_rung(600_000), 900_000);
        assert_eq!(round_up(86_400_001.0), 172_800_000);
    }

    #[test]
    fn every_recommendation_is_a_value_run_accepts() {
        let year_9999 = 253_402_300_799_000_f64;
        for ms in [
            MAX_MS as f64 - 1.0,
            MAX_MS as f64,
            MAX_MS as f64 + 1.0,
            year_9999,
            f64::MAX,
            f64::INFINITY,
        ] {
            let v = round_up(ms);
            assert!(v <= MAX_MS, "{ms} -> {v}");
            let text = watchdog_core::config::HumanDuration(std::time::Duration::from_millis(v))
                .to_string();
            assert!(
                &text
                    .parse::<watchdog_core::config::HumanDuration>()
                    .map(watchdog_core::config::HumanDuration::get)
                    .is_ok(),
                "{ms} -> {text} is refused by run"
            );
        }
        assert_eq!(with_margin(u64::MAX), MAX_MS);
        assert!(beyond_cap(u64::MAX) && !beyond_cap(86_400_000));
    }
}
