//! Forwarding the host's own stop requests to the child (Unix: SIGINT and SIGTERM; Windows:
//! Ctrl-C, Ctrl-Break and the console's close).

use super::control::Control;
use super::handle::SupervisorHandle;
use super::os::HostStops;
use super::report::KillCause;

/// Forward the host's stop requests to the child's group: on Unix SIGINT and SIGTERM, on
/// Windows Ctrl-C and Ctrl-Break (as SIGINT) and the console's close, logoff and shutdown (as
/// SIGHUP, SIGHUP and SIGTERM), each as the graceful rung ([`SupervisorHandle::signal`]); a
/// second one kills the whole tree. The forwarding stops when the returned guard is dropped.
///
/// This changes the host process: tokio installs handlers for these and keeps them for the
/// life of the process, so the host is no longer stopped by them by default; it should exit
/// by itself once the child is gone. (Windows ends a process a few seconds after a close,
/// logoff or shutdown event whatever its handler does: the child's job goes with it.)
pub fn forward_signals(handle: SupervisorHandle) -> std::io::Result<SignalForwarder> {
    let mut stops = HostStops::new()?;
    let task = tokio::spawn(async move {
        let mut seen = 0u32;
        while let Some(sig) = stops.recv().await {
            seen += 1;
            let msg = if seen == 1 {
                Control::Signal(sig)
            } else {
                Control::KillTree(KillCause::Signal)
            };
            if handle.ctrl.send(msg).is_err() {
                return;
            }
        }
    });
    Ok(SignalForwarder { task })
}

/// Stops signal forwarding when dropped.
#[derive(Debug)]
pub struct SignalForwarder {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SignalForwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}
