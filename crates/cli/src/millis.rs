//! Milliseconds as every report of the CLI writes them: rounded to the nearest, saturating.

use std::time::{Duration, Instant};

/// Milliseconds of a duration, rounded to the nearest, saturating.
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().saturating_add(500_000) / 1_000_000).unwrap_or(u64::MAX)
}

/// Milliseconds from `base` to `at` (0 if `at` is earlier).
pub fn offset_ms(base: Instant, at: Instant) -> u64 {
    ms(at.saturating_duration_since(base))
}
