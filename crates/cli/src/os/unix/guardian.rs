//! The drop-in's guardian: whatever kills the drop-in, SIGKILL included, its tree does not
//! outlive it.
//!
//! The drop-in's own ladder stops the tree when it can. It cannot when it is SIGKILLed (an SDK
//! host's `close()` ends with SIGKILL): `PR_SET_PDEATHSIG` then reaches claude alone, not what
//! claude already left behind (a Bash tool's `setsid` daemon re-parented to the drop-in as
//! child subreaper, and to PID 1 once the drop-in is gone).
//!
//! So the drop-in re-executes itself, once, as a guardian ([`GUARDIAN_ARG`]): a process of
//! its own group (a signal to the drop-in's group does not reach it) that ignores HUP, INT,
//! QUIT and TERM, and reads its stdin, a pipe whose write end only the drop-in holds
//! (close-on-exec: claude never inherits it). When the drop-in ends cleanly it writes one
//! "done" byte and the guardian exits. When the pipe closes without it (the drop-in died,
//! however), the guardian SIGKILLs every process carrying one of the drop-in's tree markers
//! ([`agent_sdk_watchdog::kill_trees_of`]) and exits. While nothing goes wrong it costs one
//! blocked process and nothing else; the drop-in does not wait for it to start.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use crate::os::GUARDIAN_ARG;

/// The byte a cleanly ending drop-in writes.
const DONE: u8 = b'd';

/// The drop-in's end of its guardian.
pub(crate) struct Guardian {
    pipe: OwnedFd,
}

impl Guardian {
    /// Start a guardian of this process; `None` if it cannot be started (the run goes on
    /// without one: the drop-in's own ladder and the parent-death signal still hold).
    pub(crate) fn start() -> Option<Guardian> {
        let (r, w) = super::pipe::cloexec().ok()?;
        // This very binary, even if its file was replaced or deleted since (an upgrade).
        let proc_exe = std::path::Path::new("/proc/self/exe");
        let exe = if proc_exe.exists() {
            proc_exe.to_path_buf()
        } else {
            std::env::current_exe().ok()?
        };
        let child = Command::new(exe)
            .arg(GUARDIAN_ARG)
            .arg(std::process::id().to_string())
            .stdin(Stdio::from(r))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()?;
        // Our child, but no supervised tree's: never claimed, killed or reaped by one.
        agent_sdk_watchdog::keep_out_of_trees(child.id());
        Some(Guardian { pipe: w })
    }

    /// The drop-in ends cleanly: its trees are stopped; the guardian exits doing nothing.
    pub(crate) fn done(self) {
        let _ = rustix::io::write(&self.pipe, &[DONE]);
    }
}

/// Run as the guardian of `args[0]` (the drop-in's pid); returns the exit code.
pub(crate) fn serve(args: &[std::ffi::OsString]) -> i32 {
    let Some(host) = args
        .first()
        .and_then(|a| a.to_str())
        .and_then(|a| a.parse::<u32>().ok())
    else {
        return crate::exit_code::USAGE;
    };
    // Signals meant for the drop-in or its terminal must not end its guardian first.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build();
    let _signals = rt.as_ref().ok().map(|rt| {
        let _enter = rt.enter();
        use tokio::signal::unix::{signal, SignalKind};
        [
            SignalKind::hangup(),
            SignalKind::interrupt(),
            SignalKind::quit(),
            SignalKind::terminate(),
        ]
        .map(|k| signal(k).ok())
    });
    let mut byte = [0u8; 1];
    let clean = loop {
        match std::io::stdin().lock().read(&mut byte) {
            Ok(0) => break false,
            Ok(_) => break byte[0] == DONE,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break false,
        }
    };
    if !clean {
        agent_sdk_watchdog::kill_trees_of(host);
    }
    0
}
