//! # agent-sdk-watchdog
//!
//! The tokio runtime layer: a driver for the core policy and a supervisor for child processes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use watchdog_core as core;

pub mod ledger;
pub use ledger::FileLedger;
