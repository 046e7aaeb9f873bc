//! Sending signals (through rustix), and forwarding the host's SIGINT/SIGTERM to the child.

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

use super::control::Control;
use super::handle::SupervisorHandle;
use super::report::KillCause;

/// Send `sig` to the process group `pgid`. A group that no longer exists is not an error.
pub(crate) fn group(pgid: i32, sig: Signal) -> std::io::Result<()> {
    let Some(pid) = Pid::from_raw(pgid) else {
        return Ok(());
    };
    match kill_process_group(pid, sig) {
        Err(rustix::io::Errno::SRCH) => Ok(()),
        r => r.map_err(Into::into),
    }
}

/// Send `sig` to one process. A process that no longer exists is not an error.
pub(crate) fn process(pid: i32, sig: Signal) -> std::io::Result<()> {
    let Some(p) = Pid::from_raw(pid) else {
        return Ok(());
    };
    match kill_process(p, sig) {
        Err(rustix::io::Errno::SRCH) => Ok(()),
        r => r.map_err(Into::into),
    }
}

/// Whether any process is left in the process group `pgid` (one this process may signal).
pub(crate) fn group_exists(pgid: i32) -> bool {
    Pid::from_raw(pgid).is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
}

/// Make this process a child subreaper (Linux): orphaned descendants re-parent to it.
#[cfg(target_os = "linux")]
pub(crate) fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(Into::into)
}

/// Not available off Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn become_subreaper() -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Forward the host's SIGINT and SIGTERM to the child's process group; a second signal
/// SIGKILLs the whole tree. The forwarding stops when the returned guard is dropped.
///
/// This changes the host process: tokio installs handlers for both signals and keeps them
/// for the life of the process, so the host is no longer stopped by them by default; it
/// should exit by itself once the child is gone.
pub fn forward_signals(handle: SupervisorHandle) -> std::io::Result<SignalForwarder> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let task = tokio::spawn(async move {
        let mut seen = 0u32;
        loop {
            let sig = tokio::select! {
                Some(()) = int.recv() => rustix::process::Signal::INT,
                Some(()) = term.recv() => rustix::process::Signal::TERM,
                else => return,
            };
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
