//! # agent-sdk-watchdog
//!
//! The tokio runtime layer: a driver for the core policy and a supervisor for child processes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use watchdog_core as core;

mod clock;
#[cfg(unix)]
pub mod supervisor;

#[cfg(unix)]
pub use supervisor::{
    forward_signals, KillCause, KillReport, Line, LineCounts, Output, Report, SignalForwarder,
    SpawnError, Stage, StdinWriter, Supervisor, SupervisorConfig, SupervisorHandle,
};
