//! The command line: subcommands and their flags.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand};

use crate::policy_args::PolicyArgs;

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
    Audit(crate::audit::AuditArgs),
    /// Show the watchdog at work: three short sessions of a real `claude` against a local mock
    /// of the Messages API (healthy, silent after a tool result, pings only).
    Demo(DemoArgs),
    /// The Claude Code command hook of the subagent plugin (`plugin/`): JSON on stdin, a
    /// decision on stdout. Continues a subagent cut off by the output token limit once.
    Hook(crate::hook::HookArgs),
    /// Print the directory of the subagent plugin this installation carries (the pip and npm
    /// packages), for `claude --plugin-dir`.
    PluginDir,
}

/// Flags of `run`; the options among them are built from the core's table
/// ([`options::OPTIONS`](watchdog_core::config::options::OPTIONS)).
#[derive(Debug, Args)]
#[command(mut_args = crate::policy_args::from_table)]
pub struct RunArgs {
    /// Policy flags.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Summary, capture and strictness (shared with the drop-in).
    #[command(flatten)]
    pub report: ReportArgs,
    /// [`options::EMIT_RESULT`](watchdog_core::config::options::EMIT_RESULT).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub emit_result: bool,
    /// [`options::NO_STATUS`](watchdog_core::config::options::NO_STATUS).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub no_status: bool,
    /// Recovery flags.
    #[command(flatten)]
    pub recovery: crate::policy_args::RecoveryArgs,
    /// The command and its arguments (after `--`).
    #[arg(value_name = "COMMAND", required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// What a run reports and how strictly it judges its ending: flags of `run`, and the
/// `AGENT_WATCHDOG_*` variables the drop-in reads (one parser for both, so a value means the
/// same in either), built from the core's table ([`options::OPTIONS`](watchdog_core::config::options::OPTIONS)).
#[derive(Debug, Args)]
#[command(mut_args = crate::policy_args::from_table)]
pub struct ReportArgs {
    /// [`options::SUMMARY`](watchdog_core::config::options::SUMMARY).
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// [`options::RECORD`](watchdog_core::config::options::RECORD).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// [`options::STRICT`](watchdog_core::config::options::STRICT).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub strict: bool,
}

/// Flags of `replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The capture to replay (`-` for stdin; character devices and FIFOs only that way). A
    /// recovered run's recording gives one verdict per run. Exit 0 after a verdict, 1 when the
    /// file cannot be read or holds no capture record, 141 when stdout's reader went away.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Policy flags.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print one JSON object instead of the timeline.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The `claude` binary to use [default: `CLAUDE_BIN`, the project's `.tools/claude`, then
    /// `PATH`].
    #[arg(long, value_name = "PATH", env = "CLAUDE_BIN")]
    pub claude: Option<PathBuf>,
}
