//! The flags of `replay`.

use std::path::PathBuf;

use clap::Args;

use crate::policy_args::PolicyArgs;

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
