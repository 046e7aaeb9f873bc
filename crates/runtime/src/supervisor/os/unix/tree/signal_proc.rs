//! Signalling one process of a tree by its identity (pid **and** start), never a pid the
//! kernel has given to another process since the tree saw it.

use rustix::process::{Pid, Signal};

use super::sample::start_of;
use crate::supervisor::os::Proc;

/// Send `sig` to `p` if its pid still names that process; `Ok(false)` when it is gone (or
/// its pid names another process now). Where the kernel has pidfds (Linux 5.3), the pidfd
/// is opened first, then the start checked, then the signal sent through the pidfd: the
/// check and the signal are about one process, whatever happens to the pid in between.
/// Elsewhere the start is checked right before `kill` (a window of microseconds). The start
/// is in clock ticks (10 ms): a pid reused within the tick its first owner started in cannot
/// be told apart.
pub(crate) fn signal(p: &Proc, sig: Signal) -> std::io::Result<bool> {
    let Some(pid) = Pid::from_raw(p.pid) else {
        return Ok(false);
    };
    match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => {
            if start_of(p.pid) != Some(p.start) {
                return Ok(false);
            }
            match rustix::process::pidfd_send_signal(&fd, sig) {
                Ok(()) => Ok(true),
                Err(rustix::io::Errno::SRCH) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        Err(rustix::io::Errno::SRCH) => Ok(false),
        Err(_) => {
            if start_of(p.pid) != Some(p.start) {
                return Ok(false);
            }
            match rustix::process::kill_process(pid, sig) {
                Ok(()) => Ok(true),
                Err(rustix::io::Errno::SRCH) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The kernel's next pid is `pid`: a process spawned now gets it (root only, through
    /// `ns_last_pid`; the machine's other processes may take it first, so the caller tries
    /// again).
    fn spawn_at(pid: i32) -> Option<std::process::Child> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/sys/kernel/ns_last_pid")
            .expect("the pid-reuse test writes ns_last_pid: it runs as root");
        write!(f, "{}", pid - 1).ok()?;
        drop(f);
        let c = std::process::Command::new("sleep").arg("30").spawn().ok()?;
        if c.id() as i32 == pid {
            Some(c)
        } else {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
            None
        }
    }

    /// A process seen once, gone, its pid given to another process: signalling the one seen
    /// leaves the other alone.
    #[test]
    fn a_reused_pid_is_never_signalled() {
        for _ in 0..50 {
            let mut first = std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap();
            let pid = first.id() as i32;
            let seen = Proc {
                pid,
                start: start_of(pid).unwrap(),
            };
            first.kill().unwrap();
            first.wait().unwrap();
            assert!(
                !signal(&seen, Signal::KILL).unwrap(),
                "gone: nothing to signal"
            );
            let Some(mut second) = spawn_at(pid) else {
                continue;
            };
            assert_eq!(second.id() as i32, pid, "the pid was reused");
            if start_of(pid) == Some(seen.start) {
                // Within the same clock tick (10 ms) the two cannot be told apart: the
                // identity is as fine as the kernel's start time. Try again.
                let _ = second.kill();
                let _ = second.wait();
                continue;
            }
            assert!(!signal(&seen, Signal::KILL).unwrap());
            assert!(
                second.try_wait().unwrap().is_none(),
                "the new process lives"
            );
            let now = Proc {
                pid,
                start: start_of(pid).unwrap(),
            };
            assert!(signal(&now, Signal::KILL).unwrap());
            second.wait().unwrap();
            return;
        }
        panic!("could not get a pid reused in 50 tries");
    }
}
