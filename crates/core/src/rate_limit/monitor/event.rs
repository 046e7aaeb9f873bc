//! What a frame changed that a user may want to hear about ([`RateLimitEvent`]), and how it
//! reads as a line.

use std::fmt;

use crate::rate_limit::format::percent_half_up;
use crate::wall::format_iso_ms;
use crate::wall::WallMs;

/// Something a frame changed that a user may want to hear about.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RateLimitEvent {
    /// A window reached `warn_at` (once; re-armed when it resets or falls below
    /// `warn_at − hysteresis`).
    Warning {
        /// The window, e.g. `five_hour`.
        window: String,
        /// Its utilization, a fraction.
        utilization: f64,
    },
    /// A window started rejecting requests.
    Rejected {
        /// The window.
        window: String,
        /// When it resets (epoch ms), if known.
        resets_at_ms: Option<WallMs>,
        /// The overage status at that moment, e.g. `rejected`.
        overage: Option<String>,
    },
    /// The frame's `errorCode` is `credits_required`: waiting will not help.
    CreditsRequired,
    /// A window that was rejecting requests allows them again.
    Recovered {
        /// The window.
        window: String,
    },
}

impl fmt::Display for RateLimitEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateLimitEvent::Warning {
                window,
                utilization,
            } => write!(
                f,
                "rate limit: {window} window at {}%",
                percent_half_up(*utilization)
            ),
            RateLimitEvent::Rejected {
                window,
                resets_at_ms,
                overage,
            } => {
                write!(f, "rate limit: {window} window rejected")?;
                if let Some(r) = resets_at_ms {
                    write!(f, " until {}", format_iso_ms(*r))?;
                }
                if let Some(o) = overage {
                    write!(f, ", overage {o}")?;
                }
                Ok(())
            }
            RateLimitEvent::CreditsRequired => f.write_str("rate limit: credits required"),
            RateLimitEvent::Recovered { window } => {
                write!(f, "rate limit: {window} window allowed again")
            }
        }
    }
}
