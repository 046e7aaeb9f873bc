//! `claude-watchdog`: a drop-in `claude` that never hangs (see `agent_watchdog::drop_in`).
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = agent_watchdog::drop_in::main(std::env::args_os().skip(1).collect());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
