//! Process-tree helpers for `run`: signals to the child's group, the descendants of this
//! process (read from `/proc`), and becoming a child subreaper, so that nothing the child
//! started outlives a kill. Linux is the tested platform; elsewhere only the group is signalled.

use std::collections::{HashMap, HashSet};

/// A signal `run` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    /// SIGINT.
    Int,
    /// SIGTERM.
    Term,
    /// SIGKILL.
    Kill,
}

impl Sig {
    /// The signal number.
    pub fn number(self) -> i32 {
        match self {
            Sig::Int => 2,
            Sig::Term => 15,
            Sig::Kill => 9,
        }
    }

    #[cfg(unix)]
    fn raw(self) -> rustix::process::Signal {
        match self {
            Sig::Int => rustix::process::Signal::INT,
            Sig::Term => rustix::process::Signal::TERM,
            Sig::Kill => rustix::process::Signal::KILL,
        }
    }
}

/// Become a child subreaper (Linux): orphaned descendants are re-parented to this process
/// instead of PID 1, so they stay findable and killable. A no-op elsewhere.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    }
}

/// Send `sig` to the process group `pgid` (errors, e.g. an empty group, are ignored).
pub fn signal_group(pgid: u32, sig: Sig) {
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, sig.raw());
    }
    #[cfg(not(unix))]
    let _ = (pgid, sig);
}

/// Send `sig` to one process.
pub fn signal_pid(pid: u32, sig: Sig) {
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, sig.raw());
    }
    #[cfg(not(unix))]
    let _ = (pid, sig);
}

/// The parent pid of every process, read from `/proc/*/stat` (empty off Linux).
fn parents() -> HashMap<u32, u32> {
    let mut map = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // The command name may contain spaces and parentheses: fields start after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let _state = fields.next();
        if let Some(ppid) = fields.next().and_then(|s| s.parse().ok()) {
            map.insert(pid, ppid);
        }
    }
    map
}

/// Every live descendant of `root` (not `root` itself).
pub fn descendants(root: u32) -> Vec<u32> {
    let parents = parents();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &ppid) in &parents {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if seen.insert(c) {
                out.push(c);
                stack.push(c);
            }
        }
    }
    out
}

/// SIGKILL every descendant of this process (the child, its group, and everything it
/// started, including processes in other sessions re-parented to us as subreaper).
pub fn kill_all_descendants() -> usize {
    let me = std::process::id();
    let all = descendants(me);
    for &pid in &all {
        signal_pid(pid, Sig::Kill);
    }
    all.len()
}
