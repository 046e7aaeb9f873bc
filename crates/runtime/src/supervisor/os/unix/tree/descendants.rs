//! A tree's bookkeeping: the descendants it knows of one child, found by walking down from
//! them or from a full reading of `/proc`, and the supervised children never taken for
//! orphans.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::proc_snapshot::{snapshot, Snapshot};
use super::procfs::{children_files, children_of, has_marker, stat, Stat};
use crate::supervisor::os::Proc;

/// The longest pause between two readings of an environment that read empty
/// ([`Tree::scan`]).
const MARKER_PATIENCE: std::time::Duration = std::time::Duration::from_millis(64);

/// The pids of every supervised child of this process that is still being supervised:
/// never taken for an orphan ([`Tree::claim_orphans`]).
static ROOTS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

pub(super) fn roots() -> std::sync::MutexGuard<'static, Vec<i32>> {
    ROOTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The known descendants of one child.
#[derive(Debug)]
pub(crate) struct Tree {
    root: Option<Proc>,
    /// The child's process group (its pid): members count as descendants.
    pgid: i32,
    needle: Vec<u8>,
    pub(super) known: HashSet<Proc>,
    /// Every child of this process but the supervised ones counts as a descendant.
    pub(super) claim_orphans: bool,
}

impl Tree {
    pub(crate) fn new(root_pid: i32, marker: &str, claim_orphans: bool) -> Self {
        roots().push(root_pid);
        Tree {
            root: stat(root_pid).map(|s| Proc {
                pid: s.pid,
                start: s.start,
            }),
            pgid: root_pid,
            needle: format!("{}={marker}", crate::supervisor::os::TREE_MARKER_VAR).into_bytes(),
            known: HashSet::new(),
            claim_orphans,
        }
    }

    /// The supervision of the child `root_pid` is over: it is no longer protected from
    /// being taken for an orphan.
    pub(crate) fn forget_root(root_pid: i32) {
        roots().retain(|&p| p != root_pid);
    }

    /// `pid`, a child of this process outside every supervised tree (a helper), is never
    /// taken for an orphan, claimed or reaped by a tree.
    pub(crate) fn keep_apart(pid: i32) {
        roots().push(pid);
    }

    /// Rescan: returns the live (non-zombie) descendants, not counting the child itself.
    /// `deep` also looks for the marker in every process's environment, which reads every
    /// process on the machine; a shallow scan walks down from the child and the known
    /// descendants only ([`Tree::walk`]), when the kernel offers that.
    ///
    /// A process in the middle of an `exec` shows an empty environment, which says neither
    /// yes nor no: the deep scan asks those again after 1, 2, 4... 64 ms (127 ms in all)
    /// before it settles for "no marker". Without this a leftover that happened to be
    /// exec'ing at the one reading was missed for good and outlived its session.
    pub(crate) async fn scan(&mut self, deep: bool) -> Vec<Proc> {
        if !deep && children_files() {
            return self.walk();
        }
        let snap = snapshot().await;
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            let settle = pause > MARKER_PATIENCE;
            let (live, unsure) = self.scan_all(&snap, deep, settle);
            if unsure == 0 || settle {
                return live;
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }

    /// A shallow scan that costs the size of the tree, not of the machine: from the child
    /// and every known descendant still alive (same start time), down through
    /// `/proc/<pid>/task/*/children`. The periodic scan runs every second of a session; on
    /// a machine with a hundred processes reading all of `/proc` cost about 2 ms each time,
    /// most of the watchdog's own CPU in a long quiet session.
    fn walk(&mut self) -> Vec<Proc> {
        let me = std::process::id() as i32;
        let same = |p: &Proc| stat(p.pid).filter(|s| s.start == p.start);
        let mut stack: Vec<Stat> = self.known.iter().filter_map(same).collect();
        let root = self.root.as_ref().and_then(same);
        stack.extend(root);
        if self.claim_orphans {
            // Orphans re-parented to us: our children that are not supervised children.
            let roots = roots().clone();
            stack.extend(
                children_of(me)
                    .into_iter()
                    .filter(|p| !roots.contains(p))
                    .filter_map(stat),
            );
        }
        let mut found: HashMap<i32, Stat> = HashMap::new();
        while let Some(s) = stack.pop() {
            if s.pid == me || found.contains_key(&s.pid) {
                continue;
            }
            found.insert(s.pid, s);
            for kid in children_of(s.pid) {
                if !found.contains_key(&kid) {
                    stack.extend(stat(kid).filter(|k| k.ppid == s.pid));
                }
            }
        }
        let root_pid = self.root.map(|r| r.pid);
        self.known = found
            .values()
            .filter(|s| Some(s.pid) != root_pid)
            .map(|s| Proc {
                pid: s.pid,
                start: s.start,
            })
            .collect();
        found
            .values()
            .filter(|s| Some(s.pid) != root_pid && !s.zombie)
            .map(|s| Proc {
                pid: s.pid,
                start: s.start,
            })
            .collect()
    }

    /// A deep scan that does not wait on an environment that reads empty ([`Tree::scan`]):
    /// for the kill ladder's first look, whose signals should not wait. The ladder's deep
    /// scan before SIGKILL does wait.
    pub(crate) async fn scan_deep_now(&mut self) -> Vec<Proc> {
        let snap = snapshot().await;
        self.scan_all(&snap, true, false).0
    }

    /// The full scan: every process's parent, from a reading of all of `/proc`. Also says
    /// how many processes a deep scan could not read a marker from yet (unless `settle`).
    fn scan_all(&mut self, snap: &Snapshot, deep: bool, settle: bool) -> (Vec<Proc>, usize) {
        let Snapshot {
            procs,
            by_pid,
            children,
        } = snap;
        let same = |p: &Proc| by_pid.get(&p.pid).is_some_and(|s| s.start == p.start);
        let me = std::process::id() as i32;
        let mut stack: Vec<i32> = self
            .known
            .iter()
            .filter(|p| same(p))
            .map(|p| p.pid)
            .collect();
        if let Some(root) = self.root.filter(|r| same(r)) {
            stack.push(root.pid);
        }
        // Members of the child's process group (its MCP servers, say), even once the
        // child is gone; not older than the child (a pid reused as a group id).
        let born = self.root.map_or(0, |r| r.start);
        stack.extend(
            procs
                .iter()
                .filter(|s| s.pgrp == self.pgid && s.pid != me && s.start >= born)
                .map(|s| s.pid),
        );
        if self.claim_orphans {
            let roots = roots();
            stack.extend(
                procs
                    .iter()
                    .filter(|s| s.ppid == me && !roots.contains(&s.pid))
                    .map(|s| s.pid),
            );
        }
        let mut unsure = 0;
        if deep {
            // Only a process started since the child can carry its marker: the
            // environments of older processes (most of the machine) are not read. A
            // one-shot host (`run`) has nothing cached, and reading every environment on
            // the machine was most of its fixed cost.
            for s in procs.iter().filter(|s| s.pid != me && s.start >= born) {
                match has_marker(s, &self.needle, settle) {
                    Some(true) => stack.push(s.pid),
                    Some(false) => {}
                    None => unsure += 1,
                }
            }
        }
        let mut seen: HashSet<i32> = HashSet::new();
        while let Some(pid) = stack.pop() {
            if pid == me || !seen.insert(pid) {
                continue;
            }
            if let Some(kids) = children.get(&pid) {
                stack.extend(kids);
            }
        }
        let root_pid = self.root.map(|r| r.pid);
        self.known = seen
            .into_iter()
            .filter(|&pid| Some(pid) != root_pid)
            .filter_map(|pid| by_pid.get(&pid))
            .map(|s| Proc {
                pid: s.pid,
                start: s.start,
            })
            .collect();
        let live = self
            .known
            .iter()
            .filter(|p| by_pid.get(&p.pid).is_some_and(|s| !s.zombie))
            .copied()
            .collect();
        (live, unsure)
    }

    /// The child's process group (its pid).
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The child, as the tree identifies it (`None`: it was gone before the tree began).
    pub(crate) fn root(&self) -> Option<Proc> {
        self.root
    }

    /// Whether `p` is still the same live process.
    pub(crate) fn alive(p: &Proc) -> bool {
        stat(p.pid).is_some_and(|s| s.start == p.start && !s.zombie)
    }

    /// Whether the tree is really known on this platform.
    pub(crate) const KNOWN: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk down the tree finds what the full scan of `/proc` finds.
    #[test]
    fn the_walk_finds_what_the_full_scan_finds() {
        assert!(
            children_files(),
            "this kernel lists children: the walk is tested here"
        );
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & echo up; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let mut tree = Tree::new(child.id() as i32, "test", false);
        let mut walked = tree.walk();
        let (mut scanned, _) = tree.scan_all(&Snapshot::read(), false, true);
        walked.sort_by_key(|p| p.pid);
        scanned.sort_by_key(|p| p.pid);
        assert_eq!(walked.len(), 2, "the two sleeps: {walked:?}");
        assert_eq!(walked, scanned);
        for p in &walked {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(p.pid).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
