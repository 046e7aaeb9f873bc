//! The flags of `claim`.

use std::path::PathBuf;

use agent_sdk_watchdog::LedgerUrl;
use clap::Args;
use watchdog_core::recovery::{Recovery, Trigger};

use crate::policy_args::{from_table, ledger_parser};

/// Flags of `claim`.
#[derive(Debug, Clone, Args)]
#[command(mut_args = from_table)]
pub struct ClaimArgs {
    /// The session to claim (a UUID).
    pub session_id: String,
    /// The continuation prompt the claimer will send (kept in the marker).
    #[arg(
        long,
        default_value_t = Recovery::default().prompt(Trigger::AfterKill).to_owned(),
        hide_default_value = true
    )]
    pub prompt: String,
    /// How the run before ended, if known: the kill kind (`idle`, `no_progress`, …); kept in
    /// the marker (unknown: `incomplete`).
    #[arg(long, value_name = "KIND")]
    pub after_kill: Option<String>,
    /// [`options::STATE_DIR`](crate::options::STATE_DIR).
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// [`options::LEDGER`](crate::options::LEDGER).
    #[arg(long, value_parser = ledger_parser())]
    pub ledger: Option<LedgerUrl>,
}
