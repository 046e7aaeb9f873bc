//! # agent-sdk-watchdog
//!
//! The tokio runtime layer: a driver for the core policy and a supervisor for child processes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use watchdog_core as core;

mod clock;
mod driver;
mod session;
mod supervise;
#[cfg(unix)]
pub mod supervisor;

pub use driver::{CallbackError, Watchdog, WatchdogConfig};
pub use session::Session;
pub use supervise::{supervise, AsLine, Killed, LineRef, Supervised};
#[cfg(unix)]
pub use supervisor::{
    forward_signals, KillCause, KillReport, Line, LineCounts, Output, Report, SignalForwarder,
    SpawnError, Stage, StdinWriter, Supervisor, SupervisorConfig, SupervisorHandle,
};
