//! A reader or host that went away, noticed at once rather than at the next write.
//!
//! A silent child writes nothing, so a closed stdout (`| head -1` after its line) would go
//! unnoticed until the child's idle deadline. A small thread polls our stdout with no event
//! asked for: `POLLERR` and `POLLHUP` are always reported, and a pipe's write end reports
//! `POLLERR` once its last reader is gone (a socket, `POLLHUP` once its peer closed). Only a
//! pipe or a socket is watched: a regular file, `/dev/null` or a terminal never "closes" this
//! way (a terminal's hangup is SIGHUP's business), so none of them can cause a false alarm.
//!
//! The drop-in also notices its host's death: once the host's stdin ended, the thread checks
//! every [`PARENT_CHECK`] whether our parent changed (a dead host's children re-parent), so an
//! SDK host SIGKILLed with its pipes to a file, say, is noticed too. Until stdin ends it never
//! wakes by itself: nothing is spent while nothing goes wrong.

use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use tokio::sync::mpsc;

/// How often the drop-in looks at its parent once the host's input ended.
const PARENT_CHECK: Duration = Duration::from_millis(50);

/// What went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Our stdout's reader.
    Reader,
    /// The host: its input ended and we were re-parented.
    Host,
}

impl Gone {
    /// Why stdout cannot be delivered any more, as a write error would say it.
    pub(crate) fn error(self) -> std::io::Error {
        let what = match self {
            Gone::Reader => "noticed without a write: the pipe has no reader",
            Gone::Host => "the host exited: its input ended and this process was re-parented",
        };
        std::io::Error::new(std::io::ErrorKind::BrokenPipe, what)
    }
}

/// The watch: what it noticed, and how to tell it that the host's input ended.
pub(crate) struct Vanished {
    rx: mpsc::UnboundedReceiver<Gone>,
    /// Written once when the host's input ended (`None` once written, or without a thread).
    wake: Option<OwnedFd>,
}

impl Vanished {
    /// Start watching our stdout (with `stdout`, when it is a pipe or a socket) and, with
    /// `host_death`, the parent after the host's input ends. No thread when there is nothing
    /// to watch.
    pub(crate) fn start(stdout: bool, host_death: bool) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let watch_stdout = stdout && is_pipe_or_socket();
        if !watch_stdout && !host_death {
            return Vanished { rx, wake: None };
        }
        let Ok((wake_r, wake_w)) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) else {
            return Vanished { rx, wake: None };
        };
        let parent = rustix::process::getppid();
        let spawned = std::thread::Builder::new()
            .name("vanished".into())
            .spawn(move || watch(tx, watch_stdout, host_death.then_some(parent), wake_r));
        Vanished {
            rx,
            wake: spawned.ok().map(|_| wake_w),
        }
    }

    /// The host's input ended (its stdin reached EOF): from now on, a changed parent means
    /// the host is gone.
    pub(crate) fn input_ended(&mut self) {
        if let Some(w) = self.wake.take() {
            let _ = rustix::io::write(&w, b"e");
        }
    }

    /// What went away (pending until something does; once at most).
    pub(crate) async fn gone(&mut self) -> Gone {
        match self.rx.recv().await {
            Some(g) => g,
            None => std::future::pending().await,
        }
    }
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
fn watch(
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
