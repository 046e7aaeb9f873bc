//! A policy's limits in nanoseconds, converted once per policy.

use crate::config::Limits;

use super::{dur_ns, NEVER};

/// `fraction × d` in nanoseconds, saturating; used for `warn_at`.
pub(crate) fn frac_ns(d: u64, fraction: f64) -> u64 {
    let x = d as f64 * fraction;
    if x >= u64::MAX as f64 {
        NEVER
    } else {
        x as u64
    }
}

/// A [`Limits`] converted once to nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct LimitsNs {
    pub startup: u64,
    pub idle: u64,
    pub extended: u64,
    pub no_progress: u64,
    pub linger: u64,
    pub ceiling: u64,
    /// The most an announced back-off storm holds the idle and no-progress clocks.
    pub max_backoff: u64,
    /// How long a busy tool may hold the no-progress kill after the last progress (0: never).
    pub busy_cap: u64,
    /// The memory guard in bytes, or `u64::MAX` for none.
    pub max_rss: u64,
    /// A background task's own deadline, or [`NEVER`] for the idle patience in force.
    pub task_silence: u64,
    /// The bound on the host's unanswered control requests, or [`NEVER`].
    pub control_timeout: u64,
    /// `warn_at` × `idle`, × `extended` and × `no_progress`, precomputed.
    pub warn_idle: u64,
    pub warn_extended: u64,
    pub warn_no_progress: u64,
    pub high_utilization: f64,
}

impl LimitsNs {
    pub(crate) fn new(l: &Limits) -> Self {
        let idle = dur_ns(l.idle());
        let extended = dur_ns(l.extended_idle()).max(idle);
        let no_progress = dur_ns(l.no_progress());
        LimitsNs {
            startup: dur_ns(l.startup()),
            idle,
            extended,
            no_progress,
            linger: dur_ns(l.linger()),
            ceiling: l.ceiling().map_or(NEVER, dur_ns),
            max_backoff: dur_ns(l.max_backoff()),
            busy_cap: dur_ns(l.busy_cap()),
            max_rss: l.max_rss().unwrap_or(u64::MAX),
            task_silence: l.task_silence().map_or(NEVER, dur_ns),
            control_timeout: l.control_timeout().map_or(NEVER, dur_ns),
            warn_idle: frac_ns(idle, l.warn_at()),
            warn_extended: frac_ns(extended, l.warn_at()),
            warn_no_progress: frac_ns(no_progress, l.warn_at()),
            high_utilization: l.high_utilization(),
        }
    }

    /// Whether `utilization` is at or above this policy's threshold.
    pub(crate) fn is_high(&self, utilization: Option<f64>) -> bool {
        utilization.is_some_and(|u| u >= self.high_utilization)
    }
}
