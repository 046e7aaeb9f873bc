//! The `agent-watchdog` command-line tool, as a library so its pieces are testable.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cli;
pub mod demo;
pub mod duration;
pub mod exit_code;
pub mod policy_args;
pub mod replay;
pub mod replay_cmd;
pub mod run;
pub mod tally;
pub mod verdict;
