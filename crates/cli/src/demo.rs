//! The `demo` subcommand.

use crate::cli::DemoArgs;

/// Run `demo`; returns the exit code.
pub fn main(args: DemoArgs) -> i32 {
    let _ = args;
    eprintln!("agent-watchdog: demo is not built yet");
    crate::exit_code::INTERNAL
}
