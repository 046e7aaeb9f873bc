//! Knowing every descendant of the child, so a kill can reach all of them.
//!
//! On Linux the tree is read from `/proc/<pid>/stat` (parent chains, with start times so a
//! reused pid is never mistaken for a descendant). Descendants seen once stay known after
//! their parent dies (they may have been re-parented to PID 1 or to us as a subreaper), and
//! every process whose environment carries this tree's marker variable is counted too (a
//! daemon that double-forked before any scan still inherits the environment).
//! Elsewhere the tree is unknown and only the process group is signalled.

/// The environment variable that marks every process started under a supervisor.
pub const TREE_MARKER_VAR: &str = "AGENT_SDK_WATCHDOG_TREE";

/// One process, identified by pid and start time (immune to pid reuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Proc {
    pub(crate) pid: i32,
    pub(crate) start: u64,
}

#[cfg(target_os = "linux")]
mod descendants;
#[cfg(target_os = "linux")]
mod proc_snapshot;
#[cfg(target_os = "linux")]
mod procfs;
#[cfg(target_os = "linux")]
mod reaping;

#[cfg(target_os = "linux")]
pub(crate) use descendants::Tree;

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Proc;

    /// Without `/proc` the tree is unknown: only the process group is signalled.
    #[derive(Debug)]
    pub(crate) struct Tree;

    impl Tree {
        pub(crate) fn new(_root_pid: i32, _marker: &str, _claim_orphans: bool) -> Self {
            Tree
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
        pub(crate) fn alive(_p: &Proc) -> bool {
            false
        }
        pub(crate) const KNOWN: bool = false;
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) use imp::Tree;
