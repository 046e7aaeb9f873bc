//! Percentiles (nearest rank) of spell lengths.

/// Distribution of a set of durations in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Distribution {
    /// Number of values.
    pub count: u64,
    /// Median (nearest rank).
    pub p50_ms: u64,
    /// 90th percentile (nearest rank).
    pub p90_ms: u64,
    /// 99th percentile (nearest rank).
    pub p99_ms: u64,
    /// Largest value.
    pub max_ms: u64,
}

/// The nearest-rank percentile `p` (0–100) of sorted values: the smallest value such that at
/// least `p`% of the values are at or below it. 0 for no values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Distribution {
    /// The distribution of `values` (sorted in place).
    pub fn of(values: &mut [u64]) -> Self {
        values.sort_unstable();
        Distribution {
            count: values.len() as u64,
            p50_ms: percentile(values, 50.0),
            p90_ms: percentile(values, 90.0),
            p99_ms: percentile(values, 99.0),
            max_ms: values.last().copied().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<u64> = (1..=10).rev().collect();
        let d = Distribution::of(&mut v);
        assert_eq!(
            (d.count, d.p50_ms, d.p90_ms, d.p99_ms, d.max_ms),
            (10, 5, 9, 10, 10)
        );
        assert_eq!(Distribution::of(&mut []), Distribution::default());
        assert_eq!(Distribution::of(&mut [7]).p50_ms, 7);
    }
}
