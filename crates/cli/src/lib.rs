//! The `agent-watchdog` command-line tool, as a library so its pieces are testable.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod continuation;
pub mod duration;
pub mod policy_args;
