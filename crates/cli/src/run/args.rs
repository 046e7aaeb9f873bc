//! The flags of `run` ([`RunArgs`]) and the reporting flags it shares with the drop-in
//! ([`ReportArgs`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::Args;

use crate::policy_args::{PolicyArgs, RecoveryArgs};

/// Flags of `run`; the options among them are built from the option table
/// ([`options::OPTIONS`](crate::options::OPTIONS)).
#[derive(Debug, Args)]
#[command(mut_args = crate::policy_args::from_table)]
pub struct RunArgs {
    /// Policy flags.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Summary, capture and strictness (shared with the drop-in).
    #[command(flatten)]
    pub report: ReportArgs,
    /// [`options::EMIT_RESULT`](crate::options::EMIT_RESULT).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub emit_result: bool,
    /// [`options::NO_STATUS`](crate::options::NO_STATUS).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub no_status: bool,
    /// Recovery flags.
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    /// The command and its arguments (after `--`).
    #[arg(value_name = "COMMAND", required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// What a run reports and how strictly it judges its ending: flags of `run`, and the
/// `AGENT_WATCHDOG_*` variables the drop-in reads (one parser for both, so a value means the
/// same in either), built from the option table ([`options::OPTIONS`](crate::options::OPTIONS)).
#[derive(Debug, Args)]
#[command(mut_args = crate::policy_args::from_table)]
pub struct ReportArgs {
    /// [`options::SUMMARY`](crate::options::SUMMARY).
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// [`options::RECORD`](crate::options::RECORD).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// [`options::STRICT`](crate::options::STRICT).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub strict: bool,
    /// [`options::NO_COMMAND_LINES`](crate::options::NO_COMMAND_LINES).
    #[arg(long, value_parser = BoolishValueParser::new())]
    pub no_command_lines: bool,
}
