//! `agent-watchdog replay`: stream a capture through the core's virtual-time replay and report
//! what the watchdog would have done. `args`: its flags; `command`: flags in, report out, exit
//! code; `verdicts`: the replay of a capture and its report (also used by `demo`).

mod args;
mod command;
mod verdicts;

pub use args::ReplayArgs;
pub use command::main;
pub use verdicts::{replay_entries, replay_reader, write_human, ReplayRun, Replayed};
