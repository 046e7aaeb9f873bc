//! Where there is no `/proc` the tree is unknown: only the process group is signalled.

use super::proc::Proc;

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
