//! One reading of a supervised child's process tree, as a host takes it and a capture keeps
//! it ([`TreeSample`]): per process its identity (pid and start), parent, group, command,
//! state, CPU time, resident memory, age and TCP connections.

use serde::{Deserialize, Serialize};

/// What the kernel says a process is doing (Linux's `/proc/<pid>/stat` state letter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProcState {
    /// On a CPU or ready to run (`R`).
    Running,
    /// Waiting for something that can interrupt it: input, a timer, a child (`S`).
    Asleep,
    /// Waiting in the kernel where no signal interrupts it, usually disk or network file
    /// system I/O (`D`).
    Blocked,
    /// Stopped by a signal or a tracer (`T`, `t`).
    Stopped,
    /// Exited, not yet reaped (`Z`, `X`).
    Zombie,
    /// Anything else (`I`, `W`, `P`…).
    Other,
}

impl ProcState {
    /// The state of a `/proc/<pid>/stat` letter.
    pub fn from_letter(c: char) -> Self {
        match c {
            'R' => ProcState::Running,
            'S' => ProcState::Asleep,
            'D' => ProcState::Blocked,
            'T' | 't' => ProcState::Stopped,
            'Z' | 'X' | 'x' => ProcState::Zombie,
            _ => ProcState::Other,
        }
    }

    /// `running`, `asleep`, `blocked`, `stopped`, `zombie` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcState::Running => "running",
            ProcState::Asleep => "asleep",
            ProcState::Blocked => "blocked",
            ProcState::Stopped => "stopped",
            ProcState::Zombie => "zombie",
            ProcState::Other => "other",
        }
    }
}

/// One process of a [`TreeSample`]. Identified by `pid` **and** `start`: a pid the kernel
/// reused for another process has another start, so the two are never taken for one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcFacts {
    /// Its pid.
    pub pid: u32,
    /// Its start, in the host's own unit (Linux: clock ticks since boot): with the pid, its
    /// identity. Only compared for equality.
    pub start: u64,
    /// Its parent's pid.
    pub ppid: u32,
    /// Its process group.
    #[serde(default)]
    pub pgid: u32,
    /// Its command line: `argv[0]` and a bounded, redacted rest (the host's `command_line`).
    #[serde(default)]
    pub cmd: String,
    /// What it is doing.
    pub state: ProcState,
    /// CPU time used, its own and that of the children it waited for, in ms.
    pub cpu_ms: u64,
    /// Resident memory, in bytes.
    pub rss: u64,
    /// How long it has been running, in ms, as of the sample.
    pub age_ms: u64,
    /// Open TCP connections (established or closing).
    #[serde(default)]
    pub tcp: u32,
    /// Bytes sent (acknowledged) and received on those connections in all, when the host
    /// could read them (`None`: unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<u64>,
}

/// One reading of a child's process tree at one instant: the child (`root`) and every
/// descendant the host knows. A host that could not read the tree at all says why
/// (`fault`; no processes): the rules then fall back to the stream alone.
///
/// ```
/// use watchdog_core::evidence::TreeSample;
/// let json = r#"{"root":10,"procs":[{"pid":10,"start":5,"ppid":1,"state":"asleep","cpu_ms":900,"rss":52428800,"age_ms":60000}]}"#;
/// let s: TreeSample = serde_json::from_str(json).unwrap();
/// assert_eq!(s.total_rss(), 50 << 20);
/// assert!(s.fault.is_none());
/// assert_eq!(TreeSample::unavailable("no /proc").fault.as_deref(), Some("no /proc"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeSample {
    /// The child's pid.
    #[serde(default)]
    pub root: u32,
    /// The processes, the child first when it is still there.
    #[serde(default)]
    pub procs: Vec<ProcFacts>,
    /// Why the tree could not be read, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

impl TreeSample {
    /// A reading that failed, and why.
    pub fn unavailable(why: impl Into<String>) -> Self {
        TreeSample {
            root: 0,
            procs: Vec::new(),
            fault: Some(why.into()),
        }
    }

    /// The tree's resident memory: every process's, summed (saturating).
    pub fn total_rss(&self) -> u64 {
        self.procs.iter().fold(0u64, |a, p| a.saturating_add(p.rss))
    }

    /// The process using the most memory.
    pub fn largest(&self) -> Option<&ProcFacts> {
        self.procs
            .iter()
            .max_by_key(|p| (p.rss, std::cmp::Reverse(p.pid)))
    }

    /// Whether `p` belongs to a tool call outstanding for `outstanding_ms`: a descendant of
    /// the child (not the child itself) that started no earlier than the call, less 2 s (the
    /// call's line reaches the host after its tool may have started). A process's children
    /// start after it, so the tool's subtree is exactly these, but for its spawner: a process
    /// older than the call whose child is one of these only started the call's processes (the
    /// CLI itself under a launcher, e.g. Codex's native binary under its `node` wrapper, which
    /// starts a command within 2 s of its own start, before the command's line is read; or a
    /// tool's shell waiting on its command).
    pub fn in_tool(&self, p: &ProcFacts, outstanding_ms: u64) -> bool {
        let slack = crate::config::defaults::TOOL_SLACK.as_millis() as u64;
        let young = |q: &ProcFacts| q.age_ms <= outstanding_ms.saturating_add(slack);
        if p.pid == self.root || !young(p) {
            return false;
        }
        let spawner = p.age_ms > outstanding_ms
            && self
                .procs
                .iter()
                .any(|c| c.ppid == p.pid && c.pid != p.pid && young(c));
        !spawner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, ppid: u32, age_ms: u64) -> ProcFacts {
        ProcFacts {
            pid,
            start: u64::from(pid),
            ppid,
            pgid: 1,
            cmd: format!("p{pid}"),
            state: ProcState::Asleep,
            cpu_ms: 0,
            rss: 0,
            age_ms,
            tcp: 0,
            net: None,
        }
    }

    /// Measured with Codex 0.169 under its `node` wrapper: the native binary started 1.4 s
    /// before its command's call, within the 2 s slack, and is the command's parent.
    #[test]
    fn the_call_s_processes_are_its_subtree_and_not_the_cli_that_spawned_it() {
        let (root, native, sleep) = (proc(1, 0, 10_040), proc(2, 1, 9_570), proc(3, 2, 8_340));
        let early_bash = proc(4, 2, 9_000);
        let tree = TreeSample {
            root: 1,
            procs: vec![
                root.clone(),
                native.clone(),
                sleep.clone(),
                early_bash.clone(),
            ],
            fault: None,
        };
        let outstanding = 8_138;
        assert!(!tree.in_tool(&root, outstanding), "the child itself");
        assert!(!tree.in_tool(&native, outstanding), "the spawner");
        assert!(tree.in_tool(&sleep, outstanding));
        // Started within the slack with no younger child: the call's, read late.
        assert!(tree.in_tool(&early_bash, outstanding));
        assert!(
            !tree.in_tool(&proc(5, 1, 20_000), outstanding),
            "older than the call"
        );
    }
}
