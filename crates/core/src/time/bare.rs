//! An instant for targets without a clock: a [`Duration`] since an origin the host chooses.
//!
//! The subset of [`std::time::Instant`]'s API the core and its hosts use, with the same
//! meaning: ordered, `Copy`, `+`/`-` a [`Duration`] (panicking on overflow, as std does, and
//! `checked_*` forms that do not), and the distance between two instants. Compiled on every
//! target (and tested against std's there); it is the core's [`Instant`](crate::Instant) only
//! on bare WebAssembly.

use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A point in time: how long after the host's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Duration);

impl Instant {
    /// The instant `since` after the host's origin (the origin itself is any fixed point on
    /// the host's clock).
    pub const fn from_origin(since: Duration) -> Instant {
        Instant(since)
    }

    /// How long after the origin this instant is.
    pub const fn since_origin(self) -> Duration {
        self.0
    }

    /// `self − earlier`, or `None` when `earlier` is later.
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0)
    }

    /// `self − earlier`, or zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// `self − earlier`, or zero when `earlier` is later (as std's since Rust 1.60).
    pub fn duration_since(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }

    /// `self + d`, or `None` on overflow.
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        self.0.checked_add(d).map(Instant)
    }

    /// `self − d`, or `None` before the origin.
    pub fn checked_sub(self, d: Duration) -> Option<Instant> {
        self.0.checked_sub(d).map(Instant)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    /// Panics on overflow, as std's does.
    fn add(self, d: Duration) -> Instant {
        self.checked_add(d)
            .expect("overflow when adding duration to instant")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Panics before the origin, as std's does before its platform's earliest instant.
    fn sub(self, d: Duration) -> Instant {
        self.checked_sub(d)
            .expect("overflow when subtracting duration from instant")
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Zero when `other` is later, as std's.
    fn sub(self, other: Instant) -> Duration {
        self.duration_since(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same operations on std's instant and on ours, from one base, agree.
    #[test]
    fn the_arithmetic_is_stds() {
        let std0 = std::time::Instant::now();
        let ours0 = Instant::from_origin(Duration::from_secs(1_000));
        let steps = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(1_500),
            Duration::from_secs(86_400),
        ];
        for a in steps {
            for b in steps {
                let (sa, sb) = (std0 + a, std0 + b);
                let (oa, ob) = (ours0 + a, ours0 + b);
                assert_eq!(sa.cmp(&sb), oa.cmp(&ob));
                assert_eq!(sa.checked_duration_since(sb), oa.checked_duration_since(ob));
                assert_eq!(
                    sa.saturating_duration_since(sb),
                    oa.saturating_duration_since(ob)
                );
                assert_eq!(sa.duration_since(sb), oa.duration_since(ob));
                assert_eq!(sa - sb, oa - ob);
                assert_eq!(
                    sa.checked_add(b).map(|x| x - std0),
                    oa.checked_add(b).map(|x| x - ours0)
                );
            }
        }
        assert_eq!(ours0.checked_sub(Duration::from_secs(1_001)), None);
        assert_eq!(ours0.checked_add(Duration::MAX), None);
        let mut x = ours0;
        x += Duration::from_secs(5);
        x -= Duration::from_secs(2);
        assert_eq!(x.since_origin(), Duration::from_secs(1_003));
        assert_eq!(x - Duration::from_secs(3), ours0);
    }
}
