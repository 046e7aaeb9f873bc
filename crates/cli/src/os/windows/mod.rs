//! The CLI on Windows: the console's control events through tokio; no guardian (the job the
//! supervisor puts the tree in ends with the watchdog, however it ends); no `/proc`, no FIFOs
//! under a path, no watch thread.

use std::fs::File;
use std::io;
use std::os::windows::io::AsHandle;
use std::path::Path;
use std::time::{Duration, Instant};

use agent_sdk_watchdog::Signal;
use tokio::sync::mpsc;

use crate::os::Gone;

/// The drop-in needs no guardian on Windows: the supervisor's job has `KILL_ON_JOB_CLOSE`,
/// so the system ends the tree when the drop-in ends, even by `TerminateProcess`.
pub(crate) struct Guardian;

impl Guardian {
    /// None to start.
    pub(crate) fn start() -> Option<Guardian> {
        None
    }

    /// Nothing to tell.
    pub(crate) fn done(self) {}
}

/// No guardian runs on Windows: a guardian's arguments end at once.
pub(crate) fn serve_guardian(_args: &[std::ffi::OsString]) -> i32 {
    0
}

/// A duplicate of our stdout's handle, written by a thread of its own.
pub(crate) fn dup_stdout() -> io::Result<File> {
    io::stdout()
        .as_handle()
        .try_clone_to_owned()
        .map(File::from)
}

/// A duplicate of our stderr's handle.
pub(crate) fn dup_stderr() -> io::Result<File> {
    io::stderr()
        .as_handle()
        .try_clone_to_owned()
        .map(File::from)
}

/// A pipe left in no-wait mode took nothing: try again in a moment.
pub(crate) fn wait_writable(_file: &File) {
    std::thread::sleep(Duration::from_millis(1));
}

/// What our stdout is: its writes block whatever it is.
pub(crate) fn stdout_kind() -> super::StdoutKind {
    super::StdoutKind::Other
}

/// A pipe's unread bytes are not read here: the bytes our stdout accepted are the progress.
pub(crate) fn stdout_unread() -> Option<u64> {
    None
}

/// Windows has no FIFOs under a path.
pub(crate) fn is_fifo(_meta: &std::fs::Metadata) -> bool {
    false
}

/// Open `path` for writing; `append`: never truncate.
pub(crate) fn open_stream(path: &Path, append: bool) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .append(append)
        .open(path)
}

/// How long a replace waits out a reader that holds the file open.
const REPLACE_PATIENCE: Duration = Duration::from_secs(2);

/// Put `tmp` in place of `path`. NTFS refuses to replace a file another process holds open
/// without sharing it for deletion (an editor, a virus scanner, a `type` in progress): the
/// replace is tried again for up to [`REPLACE_PATIENCE`], then fails with the system's error.
pub(crate) fn replace_file(tmp: &Path, path: &Path) -> io::Result<()> {
    const ERROR_ACCESS_DENIED: i32 = 5;
    const ERROR_SHARING_VIOLATION: i32 = 32;
    let t0 = Instant::now();
    loop {
        match std::fs::rename(tmp, path) {
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(ERROR_ACCESS_DENIED | ERROR_SHARING_VIOLATION)
                ) && t0.elapsed() < REPLACE_PATIENCE =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// Not read on Windows: the summary's `cpu` is `null`.
pub(crate) fn own_cpu_us() -> Option<u64> {
    None
}

/// Windows has no `/proc` (under wine, `/proc/self/stat` would name the wine process's own
/// Linux file: never read).
pub(crate) fn own_stat() -> Option<String> {
    None
}

/// Not read on Windows (a nested drop-in is not detected).
pub(crate) fn parent_pid() -> Option<u32> {
    None
}

/// Not read on Windows.
pub(crate) fn parent_of(_pid: u32) -> Option<u32> {
    None
}

/// No watch thread on Windows: nothing to wake.
pub(crate) enum VanishedWaker {}

impl VanishedWaker {
    /// Never called: there is no waker.
    pub(crate) fn wake(self) {
        match self {}
    }
}

/// No watch thread on Windows: a reader that went away is noticed at the next write
/// (`ERROR_NO_DATA`, a broken pipe).
pub(crate) fn watch_vanished(
    _tx: mpsc::UnboundedSender<Gone>,
    _stdout: bool,
    _host_death: bool,
) -> Option<VanishedWaker> {
    None
}

/// The console's control events the watchdog receives: Ctrl-C and Ctrl-Break (reported as
/// SIGINT), the console's close and the user's logoff (SIGHUP), a shutdown (SIGTERM).
pub(crate) struct UserSignals {
    events: Vec<(Signal, Option<Event>)>,
}

enum Event {
    C(tokio::signal::windows::CtrlC),
    Break(tokio::signal::windows::CtrlBreak),
    Close(tokio::signal::windows::CtrlClose),
    Logoff(tokio::signal::windows::CtrlLogoff),
    Shutdown(tokio::signal::windows::CtrlShutdown),
}

impl Event {
    fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<()>> {
        match self {
            Event::C(e) => e.poll_recv(cx),
            Event::Break(e) => e.poll_recv(cx),
            Event::Close(e) => e.poll_recv(cx),
            Event::Logoff(e) => e.poll_recv(cx),
            Event::Shutdown(e) => e.poll_recv(cx),
        }
    }
}

impl UserSignals {
    /// Install the handlers (from now on these events no longer end the process by default;
    /// Windows still ends it a few seconds after a close, logoff or shutdown).
    pub(crate) fn new() -> Self {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};
        let events = vec![
            (Signal::Int, ctrl_c().ok().map(Event::C)),
            (Signal::Int, ctrl_break().ok().map(Event::Break)),
            (Signal::Hup, ctrl_close().ok().map(Event::Close)),
            (Signal::Hup, ctrl_logoff().ok().map(Event::Logoff)),
            (Signal::Term, ctrl_shutdown().ok().map(Event::Shutdown)),
        ];
        UserSignals { events }
    }

    /// The next event, as the signal it counts as, if one is there.
    pub(crate) fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Signal> {
        use std::task::Poll;
        for (sig, e) in &mut self.events {
            if let Some(e) = e {
                if let Poll::Ready(Some(())) = e.poll_recv(cx) {
                    return Poll::Ready(*sig);
                }
            }
        }
        Poll::Pending
    }
}
