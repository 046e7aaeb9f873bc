//! Sending signals (through rustix), and forwarding the host's SIGINT/SIGTERM to the child.

use rustix::process::{kill_process, kill_process_group, Pid, Signal};

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

/// Make this process a child subreaper (Linux): orphaned descendants re-parent to it.
#[cfg(target_os = "linux")]
pub(crate) fn become_subreaper() -> std::io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).map_err(Into::into)
}

/// Not available off Linux: a no-op.
#[cfg(not(target_os = "linux"))]
pub(crate) fn become_subreaper() -> std::io::Result<()> {
    Ok(())
}
