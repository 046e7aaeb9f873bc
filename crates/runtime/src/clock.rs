//! The one clock: tokio's, so tests can pause and advance it.

use std::time::Instant;

/// Now, on tokio's clock, as the `std` instant the core expects.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// The wall clock, epoch milliseconds (rate-limit windows reset at wall times; the core
/// anchors it once to an instant of [`now`], and counts from there on the one clock).
pub(crate) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A core instant as a tokio instant (for `sleep_until`).
pub(crate) fn to_tokio(at: Instant) -> tokio::time::Instant {
    tokio::time::Instant::from_std(at)
}

/// Whether deadline `new` is earlier than the armed one (a new deadline beats none).
pub(crate) fn earlier(new: Option<Instant>, armed: Option<Instant>) -> bool {
    match (new, armed) {
        (Some(n), Some(a)) => n < a,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// A far-away instant for an unarmed timer.
pub(crate) fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}
