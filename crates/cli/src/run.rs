//! The `run` subcommand (and the `claude-watchdog` drop-in).

use crate::cli::RunArgs;

/// How the run presents itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `agent-watchdog run`.
    Run,
    /// `claude-watchdog`: a drop-in for `claude`.
    DropIn,
}

/// Run `run`; returns the exit code.
pub fn main(args: RunArgs, mode: Mode) -> i32 {
    let _ = (args, mode);
    eprintln!("agent-watchdog: run is not built yet");
    crate::exit_code::INTERNAL
}
