//! The thread that notices a vanished reader or host on Unix (see the run's
//! `vanished.rs`): it polls our stdout with no event asked for (`POLLERR` and
//! `POLLHUP` are always reported; a pipe's write end reports `POLLERR` once its last reader is
//! gone, a socket `POLLHUP` once its peer closed), and, once woken (the host's input ended),
//! looks every [`PARENT_CHECK`] whether our parent changed (a dead host's children re-parent).
//! Only a pipe or a socket is watched: a regular file, `/dev/null` or a terminal never
//! "closes" this way.

use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use tokio::sync::mpsc;

use crate::os::Gone;

/// How often the drop-in looks at its parent once the host's input ended.
const PARENT_CHECK: Duration = Duration::from_millis(50);

/// Tells the thread that the host's input ended.
pub(crate) struct Waker(OwnedFd);

impl Waker {
    /// From now on, a changed parent means the host is gone.
    pub(crate) fn wake(self) {
        let _ = rustix::io::write(&self.0, b"e");
    }
}

/// Start the thread: our stdout watched when `stdout` (and it is a pipe or a socket), the
/// parent after the wake when `host_death`. `None` when there is nothing to watch (or no
/// thread could start).
pub(crate) fn watch(
    tx: mpsc::UnboundedSender<Gone>,
    stdout: bool,
    host_death: bool,
) -> Option<Waker> {
    let watch_stdout = stdout && is_pipe_or_socket();
    if !watch_stdout && !host_death {
        return None;
    }
    let (wake_r, wake_w) = super::pipe::cloexec().ok()?;
    let parent = rustix::process::getppid();
    let spawned = std::thread::Builder::new()
        .name("vanished".into())
        .spawn(move || run(tx, watch_stdout, host_death.then_some(parent), wake_r));
    spawned.ok().map(|_| Waker(wake_w))
}

fn is_pipe_or_socket() -> bool {
    use rustix::fs::FileType;
    rustix::fs::fstat(rustix::stdio::stdout()).is_ok_and(|st| {
        matches!(
            FileType::from_raw_mode(st.st_mode),
            FileType::Fifo | FileType::Socket
        )
    })
}

/// The thread: poll stdout (no events: errors and hangups only) and the wake pipe; after the
/// wake, also look at the parent every [`PARENT_CHECK`].
fn run(
    tx: mpsc::UnboundedSender<Gone>,
    watch_stdout: bool,
    parent: Option<Option<rustix::process::Pid>>,
    wake: OwnedFd,
) {
    let out = rustix::stdio::stdout();
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: PARENT_CHECK.as_nanos() as _,
    };
    let mut woken = false;
    loop {
        let mut fds = Vec::with_capacity(2);
        if watch_stdout {
            fds.push(PollFd::from_borrowed_fd(out, PollFlags::empty()));
        }
        if !woken {
            fds.push(PollFd::new(&wake, PollFlags::IN));
        }
        let timeout = (woken && parent.is_some()).then_some(&tick);
        if fds.is_empty() && timeout.is_none() {
            return;
        }
        match poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let out_gone = watch_stdout
            && fds[0]
                .revents()
                .intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL);
        if out_gone {
            let _ = tx.send(Gone::Reader);
            return;
        }
        if !woken {
            let w = fds
                .last()
                .map(PollFd::revents)
                .unwrap_or(PollFlags::empty());
            if !w.is_empty() {
                woken = true;
                if parent.is_none() {
                    // Nothing to look at but stdout: go on polling it alone.
                    continue;
                }
            }
        }
        if woken {
            if let Some(p) = parent {
                if rustix::process::getppid() != p {
                    let _ = tx.send(Gone::Host);
                    return;
                }
            }
        }
        if tx.is_closed() {
            return;
        }
    }
}
