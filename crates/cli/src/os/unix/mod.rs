//! The CLI on Unix: signals through tokio, file descriptors and `poll` through rustix, the
//! process tree's facts from `/proc` where there is one.

mod guardian;
mod pipe;
mod vanished;

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

pub(crate) use guardian::{serve as serve_guardian, Guardian};
pub(crate) use vanished::{watch as watch_vanished, Waker as VanishedWaker};

use agent_sdk_watchdog::Signal;

/// A duplicate of our stdout, written by a thread of its own (nothing else's lock or
/// buffer of stdout is involved).
pub(crate) fn dup_stdout() -> io::Result<File> {
    io::stdout().as_fd().try_clone_to_owned().map(File::from)
}

/// A duplicate of our stderr.
pub(crate) fn dup_stderr() -> io::Result<File> {
    io::stderr().as_fd().try_clone_to_owned().map(File::from)
}

/// Wait until `file` (left non-blocking by whoever opened it) takes more.
pub(crate) fn wait_writable(file: &File) {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut fds = [PollFd::new(file, PollFlags::OUT)];
    let _ = poll(&mut fds, None);
}

/// What our stdout (fd 1) is.
pub(crate) fn stdout_kind() -> super::StdoutKind {
    use super::StdoutKind;
    use rustix::fs::FileType;
    match rustix::fs::fstat(rustix::stdio::stdout()).map(|st| FileType::from_raw_mode(st.st_mode)) {
        Ok(FileType::Fifo) => StdoutKind::Pipe,
        Ok(FileType::Socket) => StdoutKind::Socket,
        _ => StdoutKind::Other,
    }
}

/// The bytes in our stdout's pipe its reader has not read yet (`FIONREAD`), if the OS says.
pub(crate) fn stdout_unread() -> Option<u64> {
    rustix::io::ioctl_fionread(rustix::stdio::stdout()).ok()
}

/// Whether `meta` is a FIFO's.
pub(crate) fn is_fifo(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo()
}

/// Open `path` for writing without blocking (a FIFO must have a reader), then make writes
/// block as usual; `append`: never truncate.
pub(crate) fn open_stream(path: &Path, append: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let is_fifo = std::fs::metadata(path).is_ok_and(|m| is_fifo(&m));
    let nonblock = rustix::fs::OFlags::NONBLOCK.bits() as i32;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .append(append)
        .custom_flags(nonblock)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(n) if is_fifo && n == rustix::io::Errno::NXIO.raw_os_error() => io::Error::new(
                io::ErrorKind::NotConnected,
                "it is a FIFO that no process reads",
            ),
            _ => e,
        })?;
    // Writes block as usual from now on (a slow reader slows the run, it loses nothing).
    let flags = if append {
        rustix::fs::OFlags::APPEND
    } else {
        rustix::fs::OFlags::empty()
    };
    rustix::fs::fcntl_setfl(&file, flags)?;
    Ok(file)
}

/// Put `tmp` in place of `path`, atomically (`rename`).
pub(crate) fn replace_file(tmp: &Path, path: &Path) -> io::Result<()> {
    std::fs::rename(tmp, path)
}

/// This process's CPU time so far in microseconds, all threads (those that ended too), from
/// the process CPU-time clock: not rounded to 10 ms ticks.
pub(crate) fn own_cpu_us() -> Option<u64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec)
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(u64::try_from(t.tv_nsec).ok()? / 1_000)
}

/// This process's `/proc/self/stat` line (`None` without `/proc`).
pub(crate) fn own_stat() -> Option<String> {
    std::fs::read_to_string("/proc/self/stat").ok()
}

/// Our parent's pid (`None`: orphaned to no one we can name).
pub(crate) fn parent_pid() -> Option<u32> {
    rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32)
}

/// The parent of process `pid`, from `/proc` (`None` elsewhere, or when it is gone).
pub(crate) fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The signals the watchdog itself receives (the run's `host_signals.rs` says what becomes
/// of them): SIGHUP, SIGINT, SIGQUIT and SIGTERM, reported; SIGUSR1, SIGUSR2 and SIGALRM
/// caught and ignored.
pub(crate) struct UserSignals {
    forwarded: Vec<(Signal, Option<tokio::signal::unix::Signal>)>,
    /// Caught so that their default action does not end us; never reported.
    ignored: Vec<Option<tokio::signal::unix::Signal>>,
}

impl UserSignals {
    /// Install the handlers (from now on these signals no longer end the process by default).
    pub(crate) fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        let forwarded = [
            (Signal::Hup, SignalKind::hangup()),
            (Signal::Int, SignalKind::interrupt()),
            (Signal::Quit, SignalKind::quit()),
            (Signal::Term, SignalKind::terminate()),
        ]
        .into_iter()
        .map(|(s, k)| (s, signal(k).ok()))
        .collect();
        let ignored = [
            SignalKind::user_defined1(),
            SignalKind::user_defined2(),
            SignalKind::alarm(),
        ]
        .into_iter()
        .map(|k| signal(k).ok())
        .collect();
        UserSignals { forwarded, ignored }
    }

    /// The next forwarded signal, if one is there (ignored signals are drained on the way).
    pub(crate) fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Signal> {
        use std::task::Poll;
        for s in self.ignored.iter_mut().flatten() {
            while let Poll::Ready(Some(())) = s.poll_recv(cx) {}
        }
        for (sig, s) in &mut self.forwarded {
            if let Some(s) = s {
                if let Poll::Ready(Some(())) = s.poll_recv(cx) {
                    return Poll::Ready(*sig);
                }
            }
        }
        Poll::Pending
    }
}
