//! The Windows backend: the child and every process it starts are members of a Job Object.
//!
//! - **Spawn**: the child is created suspended (and leading a console process group of its
//!   own), assigned to a new job, then resumed: it cannot start a process outside the job
//!   before it is in it. The job has `KILL_ON_JOB_CLOSE`: when the host ends, however it
//!   ends, the system closes the job's last handle and ends the tree.
//! - **Graceful rung**: the child's stdin is closed (the ladder does it,
//!   [`ProcessTree::GRACE_CLOSES_STDIN`]), then `CTRL_BREAK` goes to the child's group where
//!   the host has a console (a service, or a host started without one, has none: the call
//!   fails and the grace runs on the closed stdin alone).
//! - **Kill**: `TerminateJobObject`, confirmed by the job's own accounting (no active
//!   process left), never by counting exit messages.
//! - **Evidence**: the job's process list; each process's creation time (with its id, its
//!   identity), CPU time, working set, and bytes of I/O of every kind (Windows counts no
//!   per-process TCP bytes: a tool's `net` is its I/O), its parent and command line.
//! - **Leftovers**: what the job still holds once the child exited gets the same rungs.

mod ffi;

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::windows::process::CommandExt;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::Command;
use watchdog_core::evidence::{ProcFacts, ProcState, TreeSample};

use super::{Proc, ProcessTree, RungLog, Sockets, SpawnRequest, Spawned};
use crate::supervisor::facilities::{Facility, InForce};
use crate::supervisor::signal::Signal;

/// The exit code of every process the watchdog ends (as `taskkill /F` gives them).
const KILLED: u32 = 1;

/// Start `cmd` suspended in a console group of its own, put it in a new job, resume it.
pub(crate) fn spawn(mut cmd: Command, req: SpawnRequest<'_>) -> io::Result<Spawned> {
    use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED};
    let _ = req.marker;
    let job = ffi::Job::new();
    cmd.as_std_mut()
        .creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP);
    let mut child = cmd.spawn()?;
    let pid = child.id().unwrap_or(0);
    let job = job.and_then(|job| match child.raw_handle() {
        Some(h) => job.assign(h).map(|()| job),
        None => Err(io::Error::other("the child has no handle")),
    });
    if let Err(e) = ffi::resume_threads(pid) {
        // A child left suspended would hang for ever: it is ended, and the spawn fails.
        let _ = child.start_kill();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot resume the child: {e}"),
        ));
    }
    let mut unavailable = Vec::new();
    if job.is_err() {
        unavailable.push(Facility::JobObject);
    }
    let tree_known = job.is_ok();
    let root = ffi::Process::open(pid, true);
    let root_id = root.as_ref().and_then(|p| p.times()).map(|t| Proc {
        pid: pid as i32,
        start: t.created,
    });
    let _ = req.config;
    Ok(Spawned {
        child,
        tree: Tree {
            job: job.ok(),
            root: root_id,
            root_handle: root,
            group: pid,
        },
        facilities: InForce {
            subreaper: false,
            tree_known,
            unavailable,
        },
    })
}

/// One child's tree: its job (`None` where the host refused one: then only the child).
#[derive(Debug)]
pub(crate) struct Tree {
    job: Option<ffi::Job>,
    root: Option<Proc>,
    /// The child, open: its id names no other process while the tree lives.
    root_handle: Option<ffi::Process>,
    /// The child's console process group: its pid.
    group: u32,
}

impl Tree {
    /// The job's members but the child, by identity (those that can still be opened).
    fn members(&self) -> Vec<Proc> {
        let Some(job) = &self.job else {
            return Vec::new();
        };
        let root = self.root.map(|r| r.pid);
        job.process_ids()
            .unwrap_or_default()
            .into_iter()
            .filter(|&pid| Some(pid as i32) != root)
            .filter_map(|pid| {
                let p = ffi::Process::open(pid, false)?;
                let t = p.times()?;
                p.running().then_some(Proc {
                    pid: pid as i32,
                    start: t.created,
                })
            })
            .collect()
    }

    /// The job has no running process left (the child included): the kill is confirmed.
    fn empty(&self) -> bool {
        match &self.job {
            Some(job) => job.active_processes().map_or(true, |n| n == 0),
            None => !self.root_handle.as_ref().is_some_and(ffi::Process::running),
        }
    }

    /// End the whole tree (without a job: the child).
    fn terminate(&self) -> io::Result<()> {
        match (&self.job, &self.root_handle) {
            (Some(job), _) => job.terminate(KILLED),
            (None, Some(root)) if root.running() => root.terminate(KILLED),
            _ => Ok(()),
        }
    }
}

/// `p`, opened to end it, if it is still the process the tree saw.
fn open_same(p: &Proc, terminate: bool) -> Option<ffi::Process> {
    let h = ffi::Process::open(u32::try_from(p.pid).ok()?, terminate)?;
    (h.times()?.created == p.start && h.running()).then_some(h)
}

impl ProcessTree for Tree {
    const GRACE_CLOSES_STDIN: bool = true;

    fn root(&self) -> Option<Proc> {
        self.root
    }

    async fn scan(&mut self, _deep: bool) -> Vec<Proc> {
        self.members()
    }

    async fn scan_deep_now(&mut self) -> Vec<Proc> {
        self.members()
    }

    fn reap(&mut self) -> usize {
        0
    }

    fn alive(p: &Proc) -> bool {
        open_same(p, false).is_some()
    }

    fn signal_group(&mut self, sig: Signal, log: &mut dyn RungLog) {
        match sig {
            Signal::Kill => {
                if self.terminate().is_ok() {
                    log.sent_group(self.group as i32, TERMINATE_JOB);
                }
            }
            _ => {
                if ffi::ctrl_break(self.group).is_ok() {
                    log.sent_group(self.group as i32, CTRL_BREAK);
                }
            }
        }
    }

    fn signal_each(&mut self, procs: &[Proc], sig: Signal, log: &mut dyn RungLog) {
        // Windows has no polite signal for one process: only the group's `CTRL_BREAK`.
        if sig != Signal::Kill {
            return;
        }
        for p in procs {
            if open_same(p, true).is_some_and(|h| h.terminate(KILLED).is_ok()) {
                log.sent_proc(p, TERMINATE_PROCESS);
            }
        }
    }

    fn forward(&mut self, sig: Signal) -> io::Result<()> {
        match sig {
            Signal::Kill => self.terminate(),
            Signal::Usr1 | Signal::Usr2 => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("Windows has no {sig}"),
            )),
            _ => ffi::ctrl_break(self.group),
        }
    }

    fn group_left(&self) -> bool {
        !self.empty()
    }

    async fn kill_round(
        &mut self,
        _deep: bool,
        log: &mut dyn RungLog,
        killed: &mut HashSet<Proc>,
    ) -> Vec<Proc> {
        let before = self.members();
        if self.terminate().is_ok() {
            log.sent_group(self.group as i32, TERMINATE_JOB);
            killed.extend(before);
        }
        if self.empty() {
            return Vec::new();
        }
        self.members()
    }

    async fn stop_group(&mut self, _grace: Duration) {
        // Without a job nothing but the child is known, and it is gone.
    }

    fn release(&mut self) {
        if let Some(job) = &self.job {
            let _ = job.keep_members_on_close();
        }
    }

    fn forget_root(_root_pid: i32) {}

    fn keep_apart(_pid: i32) {}

    /// Nothing: a job ends with the last handle to it, the host's.
    fn kill_marked(_host_pid: u32) -> usize {
        0
    }

    fn reap_orphans() -> usize {
        0
    }
}

/// What the receipt says each rung sent.
const CTRL_BREAK: &str = "CTRL_BREAK";
const TERMINATE_JOB: &str = "TerminateJobObject";
const TERMINATE_PROCESS: &str = "TerminateProcess";

/// The exit as the record keeps it: Windows has codes only (all 32 bits of them).
pub(crate) fn exit_of(status: ExitStatus) -> watchdog_core::ChildExit {
    watchdog_core::ChildExit {
        code: status.code(),
        signal: None,
    }
}

/// Now, as a FILETIME: 100 ns intervals since 1601.
fn now_filetime() -> u64 {
    const UNIX_EPOCH_AS_FILETIME: u64 = 116_444_736_000_000_000;
    let since_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    UNIX_EPOCH_AS_FILETIME.saturating_add((since_unix.as_nanos() / 100) as u64)
}

/// Read the tree: `root` (the child) and `procs` (the job's other members), each by identity:
/// one whose id now names another process is left out.
pub(crate) fn read_sample(root: Option<Proc>, procs: &[Proc], sockets: Sockets) -> TreeSample {
    let Some(root) = root else {
        return TreeSample::unavailable("the child was gone before its tree could be read");
    };
    let parents: HashMap<u32, ffi::Entry> = match ffi::processes() {
        Ok(all) => all.into_iter().map(|e| (e.pid, e)).collect(),
        Err(e) => return TreeSample::unavailable(format!("cannot list the processes: {e}")),
    };
    let now = now_filetime();
    let mut out: Vec<ProcFacts> = Vec::with_capacity(procs.len() + 1);
    for p in std::iter::once(&root).chain(procs) {
        let Some(h) = ffi::Process::open(p.pid as u32, false) else {
            continue;
        };
        let Some(t) = h.times() else { continue };
        if t.created != p.start || out.iter().any(|o| o.pid == p.pid as u32) {
            continue; // the id names another process now, or it was listed twice
        }
        let entry = parents.get(&(p.pid as u32));
        let age_ms = now.saturating_sub(t.created) / 10_000;
        let io = if sockets.0.is_some_and(|max| age_ms <= max) && p.pid != root.pid {
            h.io_bytes()
        } else {
            None
        };
        let cmd = h
            .command_line()
            .filter(|c| !c.trim().is_empty())
            .map(|c| watchdog_host::tree::command_line(&split_args(&c)))
            .or_else(|| entry.map(|e| format!("[{}]", e.exe)))
            .unwrap_or_default();
        out.push(ProcFacts {
            pid: p.pid as u32,
            start: t.created,
            ppid: entry.map_or(0, |e| e.ppid),
            // Every member is in the job: the group the rungs reach.
            pgid: root.pid as u32,
            cmd,
            state: if h.running() {
                ProcState::Other
            } else {
                ProcState::Zombie
            },
            cpu_ms: t.cpu / 10_000,
            rss: h.working_set().unwrap_or(0),
            age_ms,
            tcp: 0,
            net: io,
        });
    }
    TreeSample {
        root: root.pid as u32,
        procs: out,
        fault: None,
    }
}

/// A Windows command line as its words, for the command-line redaction (which takes argv):
/// split on blanks outside double quotes, quotes removed (good enough to name and redact; the
/// program's own parsing may differ on backslashes before quotes).
fn split_args(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' | '\t' if !quoted => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word).into_bytes());
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word.into_bytes());
    }
    out
}

/// The host's Ctrl-C and Ctrl-Break (as SIGINT), and its console's close, logoff (as SIGHUP)
/// and shutdown (as SIGTERM), received ([`forward_signals`](crate::forward_signals)).
pub(crate) struct HostStops {
    c: tokio::signal::windows::CtrlC,
    brk: tokio::signal::windows::CtrlBreak,
    close: tokio::signal::windows::CtrlClose,
    logoff: tokio::signal::windows::CtrlLogoff,
    shutdown: tokio::signal::windows::CtrlShutdown,
}

impl HostStops {
    /// Install the handlers (for the life of the process: tokio keeps them).
    pub(crate) fn new() -> io::Result<Self> {
        use tokio::signal::windows;
        Ok(HostStops {
            c: windows::ctrl_c()?,
            brk: windows::ctrl_break()?,
            close: windows::ctrl_close()?,
            logoff: windows::ctrl_logoff()?,
            shutdown: windows::ctrl_shutdown()?,
        })
    }

    /// The next one, as the signal it is forwarded as; `None` once none can come.
    pub(crate) async fn recv(&mut self) -> Option<Signal> {
        tokio::select! {
            Some(()) = self.c.recv() => Some(Signal::Int),
            Some(()) = self.brk.recv() => Some(Signal::Int),
            Some(()) = self.close.recv() => Some(Signal::Hup),
            Some(()) = self.logoff.recv() => Some(Signal::Hup),
            Some(()) = self.shutdown.recv() => Some(Signal::Term),
            else => None,
        }
    }
}

/// Windows has no orphans to reap: never any.
pub(crate) struct OrphanExits;

impl OrphanExits {
    /// None to listen for.
    pub(crate) fn new() -> Option<Self> {
        None
    }

    /// Never.
    pub(crate) async fn recv(&mut self) -> Option<()> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_as_words() {
        let words = |s: &str| -> Vec<String> {
            split_args(s)
                .into_iter()
                .map(|w| String::from_utf8(w).unwrap())
                .collect()
        };
        assert_eq!(
            words(r#""C:\Program Files\node.exe" mcp.js --token "a b"  x"#),
            [
                r"C:\Program Files\node.exe",
                "mcp.js",
                "--token",
                "a b",
                "x"
            ]
        );
        assert_eq!(words(r#"a "" b"#), ["a", "", "b"]);
        assert!(words("   ").is_empty());
    }

    #[test]
    fn now_is_after_2020_as_a_filetime() {
        // 2020-01-01 as a FILETIME.
        assert!(now_filetime() > 132_223_104_000_000_000);
    }
}
