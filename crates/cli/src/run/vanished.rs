//! A reader or host that went away, noticed at once rather than at the next write.
//!
//! A silent child writes nothing, so a closed stdout (`| head -1` after its line) would go
//! unnoticed until the child's idle deadline. On Unix a small thread polls our stdout with no
//! event asked for: `POLLERR` and `POLLHUP` are always reported, and a pipe's write end reports
//! `POLLERR` once its last reader is gone (a socket, `POLLHUP` once its peer closed). Only a
//! pipe or a socket is watched: a regular file, `/dev/null` or a terminal never "closes" this
//! way (a terminal's hangup is SIGHUP's business), so none of them can cause a false alarm.
//! (The thread is the platform's: [`crate::os::watch_vanished`]; on Windows there is none, and
//! a reader that went away is noticed at the next write.)
//!
//! The drop-in also notices its host's death: once the host's stdin ended, the thread checks
//! every 50 ms whether our parent changed (a dead host's children re-parent), so an SDK host
//! SIGKILLed with its pipes to a file, say, is noticed too. Until stdin ends it never wakes
//! by itself: nothing is spent while nothing goes wrong.

use tokio::sync::mpsc;

pub(crate) use crate::os::Gone;

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
    /// Told once when the host's input ended (`None` once told, or without a thread).
    wake: Option<crate::os::VanishedWaker>,
}

impl Vanished {
    /// Start watching our stdout (with `stdout`, when it is a pipe or a socket) and, with
    /// `host_death`, the parent after the host's input ends. No thread when there is nothing
    /// to watch.
    pub(crate) fn start(stdout: bool, host_death: bool) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let wake = crate::os::watch_vanished(tx, stdout, host_death);
        Vanished { rx, wake }
    }

    /// The host's input ended (its stdin reached EOF): from now on, a changed parent means
    /// the host is gone.
    pub(crate) fn input_ended(&mut self) {
        if let Some(w) = self.wake.take() {
            w.wake();
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
