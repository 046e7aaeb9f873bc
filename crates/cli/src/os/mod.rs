//! What the CLI does differently per OS, in one place: everything else names no platform.
//!
//! | | Unix (`os/unix`) | Windows (`os/windows`) |
//! |---|---|---|
//! | the host's signals | SIGHUP, SIGINT, SIGQUIT, SIGTERM forwarded; SIGUSR1/2, SIGALRM ignored | Ctrl-C and Ctrl-Break as SIGINT, the console's close and logoff as SIGHUP, shutdown as SIGTERM |
//! | the drop-in's tree after a SIGKILL | a guardian process kills every marked process | nothing to do: the job dies with its last handle |
//! | a vanished reader or host | a thread polls stdout (and the parent once the host's input ended) | noticed at the next write |
//! | `--summary` / `--record` streams | `/proc/<pid>/fd/N` written in place; a FIFO opened without blocking | no such paths; a summary's replace waits out a reader that holds the file open |
//! | our CPU time | `/proc/self/stat`, the process CPU clock | not read: the summary's `cpu` is `null` |
//! | our stdout | a pipe's unread bytes (`FIONREAD`) show a reader's progress; pipes and sockets written without waiting inside the write | the bytes our stdout accepted are the only progress |
//! | a nested drop-in | its parent (or grandparent) from `/proc` | not detected |

#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
use windows as imp;

pub(crate) use imp::{
    dup_stderr, dup_stdout, is_fifo, open_stream, own_cpu_us, own_stat, parent_of, parent_pid,
    replace_file, stdout_kind, stdout_unread, wait_writable, watch_vanished, Guardian, UserSignals,
    VanishedWaker,
};

/// What our stdout is, for how its writer writes there (`run/stdout.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(windows, allow(dead_code))]
pub(crate) enum StdoutKind {
    /// A pipe or FIFO.
    Pipe,
    /// A socket.
    Socket,
    /// A file, a terminal, a device (and on Windows, anything: its writes block).
    Other,
}

/// What went away, as a platform notices it (the run's `vanished.rs` says what it means).
/// Windows notices neither without a write (its SDK hosts end their children with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(windows, allow(dead_code))]
pub(crate) enum Gone {
    /// Our stdout's reader.
    Reader,
    /// The host: its input ended and we were re-parented.
    Host,
}

/// The hidden first argument that runs `claude-watchdog` as a guardian (Unix).
pub(crate) const GUARDIAN_ARG: &str = "--agent-watchdog-guardian-of";

/// Run as the guardian of `args[0]` (the drop-in's pid); returns the exit code.
pub(crate) fn serve_guardian(args: &[std::ffi::OsString]) -> i32 {
    imp::serve_guardian(args)
}
