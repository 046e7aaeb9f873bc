//! # watchdog-core
//!
//! The sans-IO heart of agent-sdk-watchdog: pure policies that decide, for any number of Claude
//! Code sessions, when each must be stopped and why. No I/O, no async runtime, no OS clock: every
//! call takes `now`, and decisions come back as values and events.
//!
//! - [`view`]: a borrowed, lenient view of one stream-json line ([`LineView`]).
//! - [`classify`]: what a line means for liveness (the classification contract).
//! - [`config`]: validated limits with documented defaults ([`Limits`], [`SessionConfig`]).
//! - [`registry`]: many sessions on one timer, exact deadlines ([`Registry`]).
//! - [`event`]: kills, extensions, stalling warnings, outcomes.
//! - [`capture`]: the capture format (recordings of runs).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod capture;
pub mod classify;
pub mod config;
pub mod event;
mod json_scan;
pub mod registry;
pub mod view;

pub use classify::{classify, classify_line, Class, LineKind, Signal};
pub use config::{ConfigError, Limits, SessionConfig};
pub use event::{Event, ExtendReason, Kill, KillKind, Outcome, SessionId, StallClock};
pub use registry::Registry;
pub use view::{ContentBlock, Field, LineView, RawJson, Unparseable};
