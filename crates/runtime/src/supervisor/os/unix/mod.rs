//! The Unix backend: the child leads a process group of its own; on Linux its descendants
//! are read from `/proc` ([`tree`]), the host may be their child subreaper, and the child
//! gets SIGTERM when the host dies ([`spawn`]). Signals go through rustix ([`signals`]).

mod signals;
mod spawn;
mod tree;

use std::collections::HashSet;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::Command;

pub(crate) use signals::{HostStops, OrphanExits};
pub(crate) use tree::read_sample;

use super::{after, Proc, ProcessTree, RungLog, SpawnRequest, Spawned, POLL};
use crate::supervisor::facilities::{Facility, InForce};
use crate::supervisor::signal::Signal;

/// Start `cmd` leading a process group of its own (with the death signal and the subreaper
/// the config asks for, where the host grants them), and begin its tree.
pub(crate) fn spawn(mut cmd: Command, req: SpawnRequest<'_>) -> io::Result<Spawned> {
    let cfg = req.config;
    // A facility the host refuses takes its guarantee away, never the supervision.
    let mut unavailable = Vec::new();
    // PID 1 inherits every orphan of its namespace: a subreaper in all but name.
    let subreaper = cfg.become_subreaper && (signals::become_subreaper().is_ok() || is_pid_one());
    if cfg.become_subreaper && !subreaper {
        unavailable.push(Facility::Subreaper);
    }
    cmd.process_group(0);
    let (child, death_signal) = spawn::spawn(cmd, cfg.die_with_host)?;
    if cfg.die_with_host && !death_signal {
        unavailable.push(Facility::ParentDeathSignal);
    }
    let proc_fs = proc_fs();
    if !proc_fs {
        unavailable.push(Facility::ProcFs);
    }
    let pid = child.id().unwrap_or(0) as i32;
    Ok(Spawned {
        child,
        tree: Tree(tree::Tree::new(pid, req.marker, cfg.claim_orphans)),
        facilities: InForce {
            subreaper,
            tree_known: tree::Tree::KNOWN && proc_fs,
            unavailable,
        },
    })
}

/// Whether `/proc` shows this process (a readable `/proc/self/stat`): the tree is read from
/// it. Asked at every spawn (a mount can come and go).
fn proc_fs() -> bool {
    cfg!(target_os = "linux") && std::fs::metadata("/proc/self/stat").is_ok()
}

/// Whether this process is PID 1 of its namespace: orphans re-parent to it whatever the
/// subreaper flag says.
fn is_pid_one() -> bool {
    std::process::id() == 1
}

/// The exit as the record keeps it: a code, or the signal that ended it.
pub(crate) fn exit_of(status: ExitStatus) -> watchdog_core::ChildExit {
    use std::os::unix::process::ExitStatusExt;
    watchdog_core::ChildExit {
        code: status.code(),
        signal: status.signal(),
    }
}

/// One child's tree: its process group, and on Linux its descendants read from `/proc`.
#[derive(Debug)]
pub(crate) struct Tree(tree::Tree);

impl ProcessTree for Tree {
    const GRACE_CLOSES_STDIN: bool = false;

    fn root(&self) -> Option<Proc> {
        self.0.root()
    }

    async fn scan(&mut self, deep: bool) -> Vec<Proc> {
        self.0.scan(deep).await
    }

    async fn scan_deep_now(&mut self) -> Vec<Proc> {
        self.0.scan_deep_now().await
    }

    fn reap(&mut self) -> usize {
        self.0.reap()
    }

    fn alive(p: &Proc) -> bool {
        tree::Tree::alive(p)
    }

    fn signal_group(&mut self, sig: Signal, log: &mut dyn RungLog) {
        log.sent_group(self.0.pgid(), sig.name());
        let _ = signals::group(self.0.pgid(), sig.to_rustix());
    }

    fn signal_each(&mut self, procs: &[Proc], sig: Signal, log: &mut dyn RungLog) {
        for p in procs {
            if tree::signal_proc(p, sig.to_rustix()).unwrap_or(false) {
                log.sent_proc(p, sig.name());
            }
        }
    }

    fn forward(&mut self, sig: Signal) -> io::Result<()> {
        signals::group(self.0.pgid(), sig.to_rustix())
    }

    fn group_left(&self) -> bool {
        signals::group_exists(self.0.pgid())
    }

    async fn kill_round(
        &mut self,
        deep: bool,
        log: &mut dyn RungLog,
        killed: &mut HashSet<Proc>,
    ) -> Vec<Proc> {
        // The group too, even once the child is gone: its MCP servers share it, and one
        // started since the last scan is not known to the tree.
        log.sent_group(self.0.pgid(), Signal::Kill.name());
        let _ = signals::group(self.0.pgid(), rustix::process::Signal::KILL);
        let live = self.0.scan(deep).await;
        for p in &live {
            if tree::signal_proc(p, rustix::process::Signal::KILL).unwrap_or(false) {
                log.sent_proc(p, Signal::Kill.name());
                killed.insert(*p);
            }
        }
        self.0.reap();
        live
    }

    /// SIGTERM to the group if any member is left, up to `grace` for it to empty, then
    /// SIGKILL until it does (a bounded number of rounds: a member this host may not signal
    /// is left alone). Members re-parented to us are reaped as they end. Only once the child
    /// itself was reaped (it leads the group: reaping the group here would take its status
    /// from tokio).
    async fn stop_group(&mut self, grace: Duration) {
        let pgid = self.0.pgid();
        let reap_group = || {
            while let Some(p) = rustix::process::Pid::from_raw(pgid) {
                let nohang = rustix::process::WaitOptions::NOHANG;
                if !matches!(rustix::process::waitpgid(p, nohang), Ok(Some(_))) {
                    break;
                }
            }
        };
        if !signals::group_exists(pgid) {
            return;
        }
        let _ = signals::group(pgid, rustix::process::Signal::TERM);
        let deadline = after(grace);
        while signals::group_exists(pgid) && tokio::time::Instant::now() < deadline {
            reap_group();
            tokio::time::sleep(POLL).await;
        }
        for _ in 0..250 {
            if !signals::group_exists(pgid) {
                break;
            }
            let _ = signals::group(pgid, rustix::process::Signal::KILL);
            reap_group();
            tokio::time::sleep(POLL).await;
        }
    }

    fn release(&mut self) {}

    fn forget_root(root_pid: i32) {
        tree::Tree::forget_root(root_pid);
    }

    fn keep_apart(pid: i32) {
        tree::Tree::keep_apart(pid);
    }

    fn kill_marked(host_pid: u32) -> usize {
        tree::Tree::kill_marked(host_pid)
    }

    fn reap_orphans() -> usize {
        tree::Tree::reap_orphans()
    }
}
