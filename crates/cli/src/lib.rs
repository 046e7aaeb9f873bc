//! The `agent-watchdog` command-line tool, as a library so its pieces are testable.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod cli;
pub mod continuation;
pub mod demo;
pub mod drop_in;
pub mod duration;
pub mod exit_code;
pub mod find_claude;
pub mod hint;
pub mod hook;
pub mod mcp_limits;
pub mod out_file;
pub mod policy_args;
pub mod record;
pub mod recover;
pub mod replay;
pub mod replay_cmd;
pub mod run;
pub mod status;
pub mod stderr_filter;
pub mod summary;
pub mod synthetic;
pub mod tally;
pub mod verdict;
