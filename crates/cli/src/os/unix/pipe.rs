//! The pipes the guardian and the vanished watcher wake on.

use std::io;
use std::os::fd::OwnedFd;

/// A pipe whose ends close on exec (the standard library's: `pipe2` where the OS has it, as
/// on Linux; elsewhere, as on macOS, `pipe` then `FD_CLOEXEC`).
pub(super) fn cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = io::pipe()?;
    Ok((r.into(), w.into()))
}
