//! Where there is no `/proc` the tree is unknown: only the process group is signalled.

use crate::supervisor::os::Proc;
use crate::supervisor::os::Sockets;

/// Without `/proc` the tree is unknown: only the process group is signalled.
#[derive(Debug)]
pub(crate) struct Tree {
    pgid: i32,
}

impl Tree {
    pub(crate) fn new(root_pid: i32, _marker: &str, _claim_orphans: bool) -> Self {
        Tree { pgid: root_pid }
    }
    /// The child's process group (its pid).
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }
    pub(crate) async fn scan_deep_now(&mut self) -> Vec<Proc> {
        Vec::new()
    }
    pub(crate) fn forget_root(_root_pid: i32) {}
    pub(crate) fn keep_apart(_pid: i32) {}
    pub(crate) fn kill_marked(_host_pid: u32) -> usize {
        0
    }
    pub(crate) async fn scan(&mut self, _deep: bool) -> Vec<Proc> {
        Vec::new()
    }
    pub(crate) fn reap(&mut self) -> usize {
        0
    }
    pub(crate) fn reap_orphans() -> usize {
        0
    }
    pub(crate) fn alive(_p: &Proc) -> bool {
        false
    }
    pub(crate) fn root(&self) -> Option<Proc> {
        None
    }
    pub(crate) const KNOWN: bool = false;
}

/// Without `/proc` the tree cannot be read: the rules keep to the stream.
pub(crate) fn read_sample(
    _root: Option<Proc>,
    _procs: &[Proc],
    sockets: Sockets,
) -> watchdog_core::evidence::TreeSample {
    let Sockets(_no_sockets_either) = sockets;
    watchdog_core::evidence::TreeSample::unavailable("no /proc on this platform")
}

/// Without `/proc` a process's start is unknown: signal its pid.
pub(crate) fn signal_proc(p: &Proc, sig: rustix::process::Signal) -> std::io::Result<bool> {
    crate::supervisor::os::unix::signals::process(p.pid, sig).map(|()| true)
}
