//! One supervised run, from spawn to the end, in three jobs: [`start`] (the command, the
//! supervisor's config, the spawn, the capture's `start`), [`drive`] (the loop: the child's
//! output to [`Live`], the host's input to the child, the user's signals) and [`finish`] (what
//! waits for our stdout, the supervisor's record, the capture's end: the run's `RunReport`).

use std::ffi::OsString;

use watchdog_core::facts::ClaudeSessionId;

use super::config::{program_name, RunConfig};
use super::drive::drive;
use super::finish::finish;
use super::host::Host;
use super::interrupts::Interrupts;
use super::live::Live;
use super::start::start;
use crate::run_report::RunReport;

/// Run `argv` under the supervisor to its end. `expect_session`: the session id its
/// `system/init` must carry (a continuation). `Err` holds the exit code when it cannot start.
pub(crate) async fn supervise(
    cfg: &RunConfig,
    argv: &[OsString],
    host: &mut Host,
    expect_session: Option<&ClaudeSessionId>,
) -> Result<RunReport, i32> {
    let mut child = start(cfg, argv, host, expect_session)?;
    let mut live = Live::new(host, &child.sup, program_name(argv), cfg.command_lines);
    // How long our stdout may take no byte while bytes wait for it (judged where we write).
    live.host.stdout.set_bound(cfg.limits.output_blocked());
    let mut signals = Interrupts::new(cfg.grace);
    drive(&mut live, &mut child, &mut signals).await;
    Ok(finish(cfg, argv, live, child, signals.first()).await)
}
