//! The `agent-watchdog` command.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("agent-watchdog: not built yet");
    std::process::exit(1);
}
