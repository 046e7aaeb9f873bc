//! # watchdog-core
//!
//! The sans-IO heart of agent-sdk-watchdog: pure policies that decide, for any number of Claude
//! Code sessions, when each must be stopped and why. No I/O, no async runtime, no OS clock: every
//! call takes `now`, and decisions come back as values and events.
//!
//! - [`view`]: a borrowed, lenient view of one stream-json line ([`LineView`]).
//! - [`classify`](mod@classify): what a line means for liveness (the classification contract).
//! - [`config`]: validated limits with documented defaults ([`Limits`], [`SessionConfig`]).
//! - [`registry`]: many sessions on one timer, exact deadlines ([`Registry`]).
//! - [`event`]: kills, extensions, stalling warnings, outcomes.
//! - [`capture`]: the capture format (recordings of runs).
//! - [`rate_limit`]: one usable reading from many `rate_limit_event` frames, per window.
//! - [`warning_filter`]: show a known repeated warning once, count the rest.
//! - [`recovery`]: the continue-exactly-once decision, and the ledger that makes it durable.
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

pub mod rate_limit;
pub use rate_limit::{RateLimitConfig, RateLimitEvent, RateLimitMonitor};

pub mod warning_filter;
pub use warning_filter::{StderrFilter, Verdict, WarningFilter};

pub mod recovery;
pub use recovery::{Decision, Ledger, Recovery, TerminalFacts};
