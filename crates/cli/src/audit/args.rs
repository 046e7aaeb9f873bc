//! The flags of `audit`.

use std::path::PathBuf;

use clap::Args;

use crate::policy_args::PolicyArgs;

/// `agent-watchdog audit [PATHS…] [policy flags] [--json] [--plot FILE.svg]`
#[derive(Debug, Clone, Default, Args)]
pub struct AuditArgs {
    /// The settings to check (the recommendation is computed regardless).
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Transcript folders (searched recursively for `*.jsonl`), transcript files or captures;
    /// `-` for standard input. Character devices and FIFOs are refused unless given as `-`
    /// [default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects]
    #[arg(value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Also write an SVG histogram of quiet spells with the thresholds to FILE.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}
