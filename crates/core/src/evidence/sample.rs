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
    /// start after it, so the tool's subtree is exactly these.
    pub fn in_tool(&self, p: &ProcFacts, outstanding_ms: u64) -> bool {
        let slack = crate::config::defaults::TOOL_SLACK.as_millis() as u64;
        p.pid != self.root && p.age_ms <= outstanding_ms.saturating_add(slack)
    }
}
