//! Sending signals (through rustix): to a process group, to one process; and the host's own
//! signals, received.

use rustix::process::{kill_process, kill_process_group, Pid};

use crate::supervisor::signal::Signal;

/// Send `sig` to the process group `pgid`. A group that no longer exists is not an error.
pub(crate) fn group(pgid: i32, sig: rustix::process::Signal) -> std::io::Result<()> {
    let Some(pid) = Pid::from_raw(pgid) else {
        return Ok(());
    };
    match kill_process_group(pid, sig) {
        Err(rustix::io::Errno::SRCH) => Ok(()),
        r => r.map_err(Into::into),
    }
}

/// Send `sig` to one process. A process that no longer exists is not an error.
pub(crate) fn process(pid: i32, sig: rustix::process::Signal) -> std::io::Result<()> {
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

/// The host's SIGINT and SIGTERM, received ([`forward_signals`](crate::forward_signals)).
pub(crate) struct HostStops {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl HostStops {
    /// Install the handlers (for the life of the process: tokio keeps them).
    pub(crate) fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(HostStops {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next one, as the signal to forward; `None` once none can come.
    pub(crate) async fn recv(&mut self) -> Option<Signal> {
        tokio::select! {
            Some(()) = self.int.recv() => Some(Signal::Int),
            Some(()) = self.term.recv() => Some(Signal::Term),
            else => None,
        }
    }
}

/// Orphans that ended: the SIGCHLD a child subreaper gets.
pub(crate) struct OrphanExits(tokio::signal::unix::Signal);

impl OrphanExits {
    /// Listen for them (`None` when the handler cannot be installed).
    pub(crate) fn new() -> Option<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        signal(SignalKind::child()).ok().map(OrphanExits)
    }

    /// The next one; `None` once none can come.
    pub(crate) async fn recv(&mut self) -> Option<()> {
        self.0.recv().await
    }
}
