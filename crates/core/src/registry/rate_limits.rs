//! Where a rate-limit frame changes the patience: every `rate_limit_event` line a session of
//! the registry prints goes to the registry's one [`RateLimitMonitor`] (the account's windows,
//! merged), whose utilization is the one the idle extension reads, re-read exactly when a
//! window resets.
//!
//! # Time
//!
//! Reset times are wall-clock (`resetsAt`), the registry's clock is not: the host anchors the
//! two once ([`Registry::set_wall_clock`]: "this instant is this wall time"), and the wall
//! time of any later instant is the anchor plus the time since. A window's reset is a deadline
//! like the others: [`Registry::poll_timeout`] includes it, and at that instant the utilization
//! is re-read and an extension that no longer holds is withdrawn (a session already past its
//! base idle is killed then).
//!
//! # Who sets the utilization
//!
//! In an anchored registry, once a session's line brought a reading, the monitor sets the
//! utilization at each frame and each reset; [`Registry::set_utilization`] still sets it by
//! hand, until the next frame or reset. A registry that was never anchored keeps the readings
//! (and reports their warnings) but leaves the utilization to its host: it could not tell a
//! window that reset from one that holds, and a host that feeds the utilization from readings
//! of its own (the language bindings) stays the only one that sets it.

use crate::time::Instant;

use crate::event::{Event, SessionId};
use crate::rate_limit::{RateLimitConfig, RateLimitMonitor};
use crate::session::NEVER;
use crate::view::LineView;
use crate::wall::WallMs;

use super::Registry;

/// The registry's rate-limit state.
#[derive(Debug)]
pub(super) struct RateLimits {
    pub(super) monitor: RateLimitMonitor,
    /// (registry time in ns, wall ms) of the same instant.
    anchor: Option<(u64, WallMs)>,
    /// When the next window resets, registry time (`NEVER`: none, or no anchor).
    pub(super) expiry: u64,
    /// The text of the last `rate_limit_info` folded, and the number of resets seen then.
    last: (String, u64),
    /// Window resets seen.
    resets: u64,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            monitor: RateLimitMonitor::new(RateLimitConfig::default()),
            anchor: None,
            expiry: NEVER,
            last: (String::new(), 0),
            resets: 0,
        }
    }
}

impl RateLimits {
    /// The wall time of registry time `t` (0 without an anchor).
    fn wall(&self, t: u64) -> WallMs {
        match self.anchor {
            Some((at, wall)) if t >= at => wall.saturating_add((t - at) / 1_000_000),
            Some((at, wall)) => wall.saturating_sub((at - t) / 1_000_000),
            None => 0,
        }
    }

    /// The wall time of registry time `t`, if the wall clock is anchored.
    pub(super) fn wall_at(&self, t: u64) -> Option<WallMs> {
        self.anchor.map(|_| self.wall(t))
    }

    /// The registry time of wall time `w` (rounded up to the millisecond's start).
    fn time_of(&self, w: WallMs) -> u64 {
        match self.anchor {
            Some((at, wall)) if w >= wall => (w - wall)
                .checked_mul(1_000_000)
                .and_then(|d| at.checked_add(d))
                .unwrap_or(NEVER - 1)
                .min(NEVER - 1),
            Some((at, _)) => at,
            None => NEVER,
        }
    }

    /// Whether `info` is the frame folded last, again, with nothing changed since (no window
    /// reset, every window current): folding it would change nothing but the monitor's
    /// "last seen" times. Remembers `info` otherwise (reusing its buffer: a steady stream of
    /// frames allocates nothing).
    fn is_repeat(&mut self, info: &str, wall: WallMs) -> bool {
        let same = self.last.0 == info
            && self.last.1 == self.resets
            && self.monitor.windows().all(|w| w.is_active(wall));
        if !same {
            self.last.0.clear();
            self.last.0.push_str(info);
            self.last.1 = self.resets;
        }
        same
    }

    /// Re-compute when the next window resets, as of registry time `t`.
    fn refresh_expiry(&mut self, t: u64) {
        self.expiry = match self.anchor {
            Some(_) => self
                .monitor
                .next_expiry(self.wall(t))
                .map_or(NEVER, |w| self.time_of(w).max(t.saturating_add(1))),
            None => NEVER,
        };
    }
}

impl Registry {
    /// Anchor the wall clock: at `now` the wall time is `wall_ms` (epoch milliseconds). Rate
    /// limits reset at wall times; this is how the registry knows when. Call once, when the
    /// first session starts (a replay: with the capture's recorded wall time at spawn).
    pub fn set_wall_clock(&mut self, now: Instant, wall_ms: WallMs) {
        let t = self.advance(now);
        self.rate.anchor = Some((t, wall_ms));
        self.rate.refresh_expiry(t);
    }

    /// The wall time at `now` by the anchor ([`Registry::set_wall_clock`]), if anchored.
    pub fn wall_ms(&self, now: Instant) -> Option<WallMs> {
        let epoch = self.epoch?;
        self.rate.anchor?;
        let t = now
            .checked_duration_since(epoch)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(NEVER - 1));
        Some(self.rate.wall(t))
    }

    /// The rate-limit readings of every session's `rate_limit_event` lines, merged.
    pub fn rate_limits(&self) -> &RateLimitMonitor {
        &self.rate.monitor
    }

    /// A `rate_limit_event` line of session `id` at registry time `t`: fold it into the
    /// monitor, report what it changed, and apply the utilization it gives.
    pub(super) fn note_rate_limit(&mut self, t: u64, id: SessionId, line: &LineView<'_>) {
        let wall = self.rate.wall(t);
        if let Some(crate::view::Field::Raw(raw)) = line.rate_limit_info() {
            if self.rate.is_repeat(raw.get(), wall) {
                return;
            }
        }
        for event in self.rate.monitor.observe(wall, line) {
            self.events.push_back(Event::RateLimit { id, event });
        }
        self.rate.refresh_expiry(t);
        self.apply_monitor(t);
    }

    /// A window reset at `t` (the rate-limit deadline came): re-read the utilization.
    pub(super) fn rate_limit_expired(&mut self, t: u64) {
        self.rate.resets += 1;
        self.rate.refresh_expiry(t);
        self.apply_monitor(t);
    }

    /// Set the monitor's utilization at `t`, if the registry is anchored and has readings.
    fn apply_monitor(&mut self, t: u64) {
        let readings =
            self.rate.monitor.latest().is_some() || self.rate.monitor.windows().next().is_some();
        if self.rate.anchor.is_none() || !readings {
            return;
        }
        let u = self.rate.monitor.utilization(self.rate.wall(t));
        if u != self.utilization {
            self.set_utilization_at(t, u);
        }
    }
}
