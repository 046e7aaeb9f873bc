//! The flags of `timeouts`.

use clap::Args;
use watchdog_core::config::HumanDuration;

use crate::policy_args::PolicyArgs;

/// Flags of `timeouts`: the policy flags of `run` (and their variables), and the margin.
#[derive(Debug, Clone, Args)]
pub struct TimeoutsArgs {
    /// The policy.
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Added to each timeout: the kill ladder's end, the SDK's close, a slow worker.
    #[arg(long, default_value = "1m", value_name = "DURATION")]
    pub margin: HumanDuration,
}
