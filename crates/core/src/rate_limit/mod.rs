//! Rate-limit readings: merge `rate_limit_event` frames into per-window state, and report
//! warnings, rejections and recoveries as values.
//!
//! No single frame of the Claude Code CLI carries everything: an `allowed` frame has its
//! utilization only inside an undeclared `unifiedWindows` map, an `allowed_warning` frame has a
//! top-level utilization, a `rejected` frame may have no utilization at all. The
//! [`RateLimitMonitor`] folds every frame into one [`Reading`] (the latest frame, merged, for
//! display) and into one [`Window`] per named window (`five_hour`, `seven_day`, any name), each
//! with its own utilization, status and reset time.
//!
//! # Time
//!
//! Rate-limit reset times are wall-clock instants (`resetsAt` is epoch seconds), so every call
//! here takes `now` as **epoch milliseconds** ([`WallMs`](crate::WallMs)), never an [`std::time::Instant`].
//! The monitor never reads a clock.
//!
//! # Wiring the utilization into the liveness policy
//!
//! The highest active window's utilization feeds the idle extension of the
//! [`Registry`](crate::Registry). The registry does this itself: every `rate_limit_event` line
//! it observes goes to its own monitor ([`Registry::rate_limits`](crate::Registry::rate_limits)),
//! and a window's reset is one of its deadlines (anchor the wall clock once with
//! [`Registry::set_wall_clock`](crate::Registry::set_wall_clock)). A host that keeps readings
//! without a registry, or feeds a registry from readings of its own, wires a monitor by hand:
//! re-feed the utilization whenever a frame arrives and when a window resets
//! ([`RateLimitMonitor::next_expiry`]):
//!
//! ```no_run
//! use std::time::{Instant, SystemTime, UNIX_EPOCH};
//! use watchdog_core::rate_limit::{RateLimitConfig, RateLimitEvent, RateLimitMonitor};
//! use watchdog_core::{Limits, LineView, Registry, SessionConfig};
//!
//! fn wall_ms() -> u64 {
//!     SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
//! }
//!
//! let mut registry = Registry::new(Limits::default());
//! let mut monitor = RateLimitMonitor::new(RateLimitConfig::default());
//! let id = registry.register(Instant::now(), SessionConfig::default());
//!
//! let line = br#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","rateLimitType":"five_hour","unifiedWindows":{"five_hour":{"utilization":0.93,"resetsAt":4102444800}}}}"#;
//! let view = LineView::parse(line).unwrap();
//! let (now, wall) = (Instant::now(), wall_ms());
//! registry.observe(now, id, &view);
//! for event in monitor.observe(wall, &view) {
//!     if let RateLimitEvent::Warning { .. } = event {
//!         eprintln!("{event}"); // the host prints; the library never does
//!     }
//! }
//! // 0.93 is above the default high_utilization (0.9): idle patience is extended.
//! registry.set_utilization(now, monitor.utilization(wall));
//! // Re-feed when the highest window resets, so the extension ends on time.
//! if let Some(expiry_ms) = monitor.next_expiry(wall) {
//!     let _sleep_for_ms = expiry_ms - wall;
//! }
//! ```

mod format;
mod monitor;
mod reading;

// The node binding rounds percentages the same way; not an API for users.
#[doc(hidden)]
pub use format::percent_half_up;
pub use monitor::{reported_utilization, RateLimitConfig, RateLimitEvent, RateLimitMonitor};
pub use reading::{Reading, Status, Window, MAX_UTILIZATION};
