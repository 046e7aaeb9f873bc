//! The `agent-watchdog` command-line tool, as a library so its pieces are testable. Public:
//! what the binaries (`main.rs`, `bin/claude-watchdog.rs`) and the tests call; every other
//! module and item is the crate's own.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod claim;
pub(crate) mod claude_code;
pub mod cli;
pub(crate) mod cpu;
pub mod demo;
pub mod drop_in;
pub(crate) mod event_log;
pub mod exit_code;
pub(crate) mod find_claude;
pub mod hook;
pub mod ledger_choice;
pub(crate) mod millis;
pub mod options;
pub(crate) mod os;
pub(crate) mod outstanding;
pub mod plugin_dir;
pub(crate) mod policy_args;
pub mod replay;
pub mod run;
pub(crate) mod run_report;
pub(crate) mod status;
pub mod timeouts;
// Public for the tests only: they derive the Prometheus names from the instrument table.
#[doc(hidden)]
pub mod telemetry;
pub(crate) mod tree_report;
pub(crate) mod verdict;

pub use policy_args::forget_empty_env_vars;
