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
mod imp {
    use super::Proc;
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    #[derive(Debug, Clone, Copy)]
    struct Stat {
        pid: i32,
        ppid: i32,
        pgrp: i32,
        zombie: bool,
        start: u64,
    }

    fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
        // `pid (comm) state ppid pgrp ...`; comm may contain spaces and parentheses.
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            pid,
            zombie: matches!(*f.first()?, "Z" | "X"),
            ppid: f.get(1)?.parse().ok()?,
            pgrp: f.get(2)?.parse().ok()?,
            start: f.get(19)?.parse().ok()?,
        })
    }

    /// The pids of every supervised child of this process that is still being supervised:
    /// never taken for an orphan ([`Tree::claim_orphans`]).
    static ROOTS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

    fn roots() -> std::sync::MutexGuard<'static, Vec<i32>> {
        ROOTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stat(pid: i32) -> Option<Stat> {
        // A stat line is a few hundred bytes; the fields read here come in its first 300.
        let mut buf = [0u8; 2048];
        let n = read_small(format_args!("/proc/{pid}/stat"), &mut buf)?;
        parse_stat(pid, std::str::from_utf8(&buf[..n]).ok()?)
    }

    /// Read a small `/proc` file into `buf` (what fits): open, one read (two when the first
    /// stops short of a newline), close. `fs::read_to_string` sizes its buffer from the file's
    /// size, which `/proc` reports as 0: it asked for 32 bytes, then 64, 128, 256... six
    /// system calls for one `stat` line, for every process of every full scan.
    fn read_small(path: std::fmt::Arguments<'_>, buf: &mut [u8]) -> Option<usize> {
        use std::io::Read;
        let mut f = std::fs::File::open(path.to_string()).ok()?;
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => {
                    n += k;
                    if buf[n - 1] == b'\n' {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        Some(n)
    }

    fn all() -> Vec<Stat> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(stat)
            .collect()
    }

    /// One reading of all of `/proc`: every process and its parent. Shared by every tree that
    /// asked for a full scan before the reading began ([`snapshot`]).
    pub(crate) struct Snapshot {
        procs: Vec<Stat>,
        by_pid: HashMap<i32, Stat>,
        children: HashMap<i32, Vec<i32>>,
    }

    impl Snapshot {
        fn read() -> Snapshot {
            let procs = all();
            let by_pid = procs.iter().map(|s| (s.pid, *s)).collect();
            let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
            for s in &procs {
                children.entry(s.ppid).or_default().push(s.pid);
            }
            Snapshot {
                procs,
                by_pid,
                children,
            }
        }
    }

    /// The requests waiting for the next reading of `/proc`.
    struct Scanner {
        waiting: Mutex<Vec<tokio::sync::oneshot::Sender<std::sync::Arc<Snapshot>>>>,
        wake: std::sync::Condvar,
    }

    /// A reading of all of `/proc` that began after this call: as fresh as one made here, but
    /// made once for every tree that asks at about the same time, on a thread of its own.
    ///
    /// A full scan reads every process on the machine (a few milliseconds per thousand
    /// processes). When many children of one host are killed together (a shared
    /// [`Watchdog`](crate::Watchdog) whose deadlines fall close together), each kill ladder
    /// reading `/proc` for itself on the runtime's threads took the CPU and the threads from
    /// the timer: one reading now serves all the ladders that wait, and the runtime's threads
    /// stay free. Falls back to reading here if the thread cannot run.
    pub(crate) async fn snapshot() -> std::sync::Arc<Snapshot> {
        use std::sync::{Arc, OnceLock};
        static SCANNER: OnceLock<Option<Arc<Scanner>>> = OnceLock::new();
        let scanner = SCANNER.get_or_init(|| {
            let s = Arc::new(Scanner {
                waiting: Mutex::new(Vec::new()),
                wake: std::sync::Condvar::new(),
            });
            let worker = s.clone();
            std::thread::Builder::new()
                .name("watchdog-proc-scan".into())
                .spawn(move || loop {
                    let asked = {
                        let mut w = worker
                            .waiting
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        while w.is_empty() {
                            w = worker
                                .wake
                                .wait(w)
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                        }
                        std::mem::take(&mut *w)
                    };
                    // Every request was made before this reading begins. Should a reading
                    // ever panic, the requests are dropped (their trees read `/proc`
                    // themselves) and the thread goes on serving the next ones.
                    if let Ok(snap) = std::panic::catch_unwind(Snapshot::read) {
                        let snap = Arc::new(snap);
                        for tx in asked {
                            let _ = tx.send(snap.clone());
                        }
                    }
                })
                .ok()
                .map(|_| s)
        });
        if let Some(s) = scanner {
            let (tx, rx) = tokio::sync::oneshot::channel();
            s.waiting
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(tx);
            s.wake.notify_one();
            if let Ok(snap) = rx.await {
                return snap;
            }
        }
        Arc::new(Snapshot::read())
    }

    /// Whether the kernel lists each thread's children (`CONFIG_PROC_CHILDREN`).
    fn children_files() -> bool {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| std::path::Path::new("/proc/thread-self/children").exists())
    }

    /// The children of every thread of `pid` (empty if it is gone).
    fn children_of(pid: i32) -> Vec<i32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in tasks.flatten() {
            // A list of pids, each followed by a space (no newline at the end).
            let mut buf = [0u8; 4096];
            let path = t.path().join("children");
            let Some(n) = read_small(format_args!("{}", path.display()), &mut buf) else {
                continue;
            };
            if n == buf.len() {
                // A thread with hundreds of children: read it all.
                if let Ok(list) = std::fs::read_to_string(&path) {
                    out.extend(
                        list.split_whitespace()
                            .filter_map(|p| p.parse::<i32>().ok()),
                    );
                }
                continue;
            }
            out.extend(
                std::str::from_utf8(&buf[..n])
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
        out
    }

    /// The tree marker a process carries (`NAME=value`), read from its environment once per
    /// process (pid and start time) and remembered for every tree of this host: a deep scan
    /// then reads only the environments of processes it has not seen before. (A process keeps
    /// the answer across an `exec`: one that had the marker was a descendant, and stays one.)
    fn marker_of(s: &Stat) -> Option<std::sync::Arc<[u8]>> {
        use std::sync::{Arc, OnceLock};
        type Cache = Mutex<HashMap<(i32, u64), Option<Arc<[u8]>>>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        let key = (s.pid, s.start);
        if let Some(m) = cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        {
            return m.clone();
        }
        let prefix = format!("{}=", super::TREE_MARKER_VAR).into_bytes();
        let marker: Option<Arc<[u8]>> = std::fs::read(format!("/proc/{}/environ", s.pid))
            .ok()
            .and_then(|env| {
                env.split(|&b| b == 0)
                    .find(|kv| kv.starts_with(&prefix))
                    .map(Arc::from)
            });
        let mut c = cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if c.len() > 65_536 {
            // Forget processes that are gone (their pids may come back with other start times).
            c.retain(|(pid, start), _| stat(*pid).is_some_and(|s| s.start == *start));
        }
        c.insert(key, marker.clone());
        marker
    }

    fn has_marker(s: &Stat, needle: &[u8]) -> bool {
        marker_of(s).is_some_and(|m| &*m == needle)
    }

    /// The known descendants of one child.
    #[derive(Debug)]
    pub(crate) struct Tree {
        root: Option<Proc>,
        /// The child's process group (its pid): members count as descendants.
        pgid: i32,
        needle: Vec<u8>,
        known: HashSet<Proc>,
        /// Every child of this process but the supervised ones counts as a descendant.
        claim_orphans: bool,
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
                needle: format!("{}={marker}", super::TREE_MARKER_VAR).into_bytes(),
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

        /// SIGKILL every process whose environment carries a tree marker of host `host_pid`
        /// (`MARKER=<host_pid>.<n>`), again until a pass finds none (a forking process is
        /// caught by a later pass); returns how many were signalled. Reads every readable
        /// environment on the machine: for when the host itself is gone.
        pub(crate) fn kill_marked(host_pid: u32) -> usize {
            let needle = format!("{}={host_pid}.", super::TREE_MARKER_VAR).into_bytes();
            let me = std::process::id() as i32;
            let mut killed = 0;
            for _ in 0..100 {
                let Ok(dir) = std::fs::read_dir("/proc") else {
                    break;
                };
                let mut found = 0;
                for e in dir.flatten() {
                    let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                    else {
                        continue;
                    };
                    if pid == me || stat(pid).is_none_or(|s| s.zombie) {
                        continue;
                    }
                    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                        continue;
                    };
                    if env.split(|&b| b == 0).any(|kv| kv.starts_with(&needle))
                        && crate::supervisor::signals::process(pid, rustix::process::Signal::KILL)
                            .is_ok()
                    {
                        found += 1;
                    }
                }
                killed += found;
                if found == 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            killed
        }

        /// Rescan: returns the live (non-zombie) descendants, not counting the child itself.
        /// `deep` also looks for the marker in every process's environment, which reads every
        /// process on the machine; a shallow scan walks down from the child and the known
        /// descendants only ([`Tree::walk`]), when the kernel offers that.
        pub(crate) async fn scan(&mut self, deep: bool) -> Vec<Proc> {
            if !deep && children_files() {
                return self.walk();
            }
            let snap = snapshot().await;
            self.scan_all(&snap, deep)
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

        /// The full scan: every process's parent, from a reading of all of `/proc`.
        fn scan_all(&mut self, snap: &Snapshot, deep: bool) -> Vec<Proc> {
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
            if deep {
                // Only a process started since the child can carry its marker: the
                // environments of older processes (most of the machine) are not read. A
                // one-shot host (`run`) has nothing cached, and reading every environment on
                // the machine was most of its fixed cost.
                stack.extend(
                    procs
                        .iter()
                        .filter(|s| s.pid != me && s.start >= born && has_marker(s, &self.needle))
                        .map(|s| s.pid),
                );
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
            self.known
                .iter()
                .filter(|p| by_pid.get(&p.pid).is_some_and(|s| !s.zombie))
                .copied()
                .collect()
        }

        /// Reap known descendants that are our zombies (re-parented to us as a subreaper).
        /// Never touches the child itself (tokio owns it) nor any other child of this process.
        pub(crate) fn reap(&mut self) -> usize {
            let me = std::process::id() as i32;
            let mut reaped = 0;
            if self.claim_orphans {
                // Orphans that ended before any scan knew them are ours to reap too.
                let roots = roots().clone();
                // Our own children, from the kernel's list when it has one (not all of /proc).
                let ours: Vec<Stat> = if children_files() {
                    children_of(me).into_iter().filter_map(stat).collect()
                } else {
                    all()
                };
                for s in ours {
                    if s.ppid == me && s.zombie && !roots.contains(&s.pid) {
                        self.known.insert(Proc {
                            pid: s.pid,
                            start: s.start,
                        });
                    }
                }
            }
            for p in &self.known {
                let Some(s) = stat(p.pid) else { continue };
                if s.start == p.start && s.zombie && s.ppid == me {
                    if let Some(pid) = rustix::process::Pid::from_raw(p.pid) {
                        if let Ok(Some(_)) = rustix::process::waitpid(
                            Some(pid),
                            rustix::process::WaitOptions::NOHANG,
                        ) {
                            reaped += 1;
                        }
                    }
                }
            }
            reaped
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

        #[test]
        fn parses_comm_with_parens() {
            let s = parse_stat(
                7,
                "7 (a (b) c) S 3 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 0 0",
            )
            .unwrap();
            assert_eq!(s.ppid, 3);
            assert_eq!(s.pgrp, 7);
            assert_eq!(s.start, 12345);
            assert!(!s.zombie);
            assert!(parse_stat(1, "garbage").is_none());
        }

        #[test]
        fn finds_itself() {
            assert!(stat(std::process::id() as i32).is_some());
        }

        /// A shared reading of `/proc` begins after it was asked for: a process started just
        /// before the call is in it, for every tree that asked at the same time.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_shared_snapshot_is_as_fresh_as_the_request() {
            for _ in 0..20 {
                let mut child = std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .unwrap();
                let pid = child.id() as i32;
                let (a, b) = tokio::join!(snapshot(), snapshot());
                let _ = child.kill();
                let _ = child.wait();
                assert!(a.by_pid.contains_key(&pid) && b.by_pid.contains_key(&pid));
            }
        }

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
            let mut scanned = tree.scan_all(&Snapshot::read(), false);
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
}

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

pub(crate) use imp::Tree;
