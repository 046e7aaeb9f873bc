//! The command line: the commands `main` dispatches. Each command's folder owns its flags
//! (`run/args.rs`, `replay/args.rs`, `audit/args.rs`, `demo/args.rs`, `hook/args.rs`); this
//! file only assembles them, and no module of the crate imports it.

use clap::{Parser, Subcommand};

use crate::audit::AuditArgs;
use crate::demo::DemoArgs;
use crate::hook::HookArgs;
use crate::replay::ReplayArgs;
use crate::run::RunArgs;

/// Make every Claude Code run end, for a reason you can read.
#[derive(Debug, Parser)]
#[command(name = "agent-watchdog", version, after_help = crate::exit_code::HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command (usually `claude -p … --output-format stream-json --verbose`) under the
    /// watchdog: pass its output through untouched, stop it when it hangs, say why.
    #[command(after_help = crate::exit_code::HELP)]
    Run(RunArgs),
    /// Replay a capture (see `run --record`) and show what the watchdog would have done.
    Replay(ReplayArgs),
    /// Audit past sessions (Claude Code transcripts or captures): how they ended, and what a
    /// policy would have done to them.
    Audit(AuditArgs),
    /// Show the watchdog at work: three short sessions of a real `claude` against a local mock
    /// of the Messages API (healthy, silent after a tool result, pings only).
    Demo(DemoArgs),
    /// The Claude Code command hook of the subagent plugin (`plugin/`): JSON on stdin, a
    /// decision on stdout. Continues a subagent cut off by the output token limit once.
    Hook(HookArgs),
    /// Print the directory of the subagent plugin this installation carries (the pip and npm
    /// packages), for `claude --plugin-dir`.
    PluginDir,
}
