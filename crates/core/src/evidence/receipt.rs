//! What the process tree says about a run: at a kill, the rule's reading
//! ([`TreeEvidence`], in the [`Kill`](crate::Kill)); over the run, its samples
//! ([`TreeFacts`], in the [`RunRecord`](crate::RunRecord)); and the host's receipt of the
//! tree it stopped ([`Receipt`]: each process as it stood at the decision and what each
//! stage of the kill ladder did to it).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sample::{ProcFacts, TreeSample};

/// The tool call outstanding at a kill: its name and how long it had been outstanding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The tool, e.g. `Bash`.
    pub name: String,
    /// How long it had been outstanding.
    pub outstanding: Duration,
}

/// What the process tree said at a kill, as the rule last read it (a session whose host
/// samples its tree: [`Registry::observe_tree`](crate::Registry::observe_tree)).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct TreeEvidence {
    /// The oldest tool call outstanding, if any.
    pub tool: Option<ToolCall>,
    /// The process the kill names, as the last sample had it: for `memory` the largest; else
    /// of the tool's processes the busiest when they were busy, else the oldest that is not
    /// a shell; with none of the tool's, the child.
    pub named: Option<ProcFacts>,
    /// The tool's processes were busy at the last sample (CPU or socket bytes above the
    /// noise floor).
    pub busy: bool,
    /// How long a busy tool held the no-progress kill past the stream's own deadline.
    pub held: Duration,
    /// The hold ended at the busy cap, not because the tool went quiet.
    pub capped: bool,
    /// The tree's resident memory at the last sample, in bytes.
    pub rss: Option<u64>,
    /// The tree's highest resident memory over the run's samples, in bytes.
    pub peak_rss: Option<u64>,
    /// The memory guard in force, in bytes.
    pub max_rss: Option<u64>,
    /// How long the tree's memory had been over the guard.
    pub over_rss: Option<Duration>,
    /// How old the last sample was.
    pub sample_age: Option<Duration>,
    /// Why the last attempt to read the tree failed, if it did: the rules ran on the stream
    /// alone.
    pub unavailable: Option<String>,
}

/// What a run's samples of its process tree said, for its record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeFacts {
    /// Samples read.
    pub samples: u64,
    /// Attempts that could not read the tree.
    pub failed: u64,
    /// Samples that found an outstanding tool's processes busy.
    pub busy_samples: u64,
    /// Why the last failed attempt failed.
    pub fault: Option<String>,
    /// The tree's highest resident memory, in bytes (`None`: no sample).
    pub peak_rss: Option<u64>,
}

/// Why a host stopped a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReceiptCause {
    /// The kill ladder ran (the watchdog's kill, a request, a signal).
    Kill,
    /// The child exited by itself and left processes running, which were stopped.
    Leftovers,
}

/// When a process of a receipt was gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ended {
    /// Before the first stage (it exited between the reading and the ladder).
    Before,
    /// During the interrupt request's grace.
    Interrupt,
    /// After SIGTERM, within the grace.
    Term,
    /// After SIGKILL.
    Kill,
    /// Still there when the ladder ended (unkillable, or out of reach).
    Survived,
}

/// What the ladder did to one process of a receipt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcAction {
    /// What it was sent, in order: `interrupt` (the control request on stdin: the child
    /// only), `SIGTERM`, `SIGKILL`.
    #[serde(default)]
    pub sent: Vec<String>,
    /// When it was gone (`None`: not known).
    #[serde(default)]
    pub ended: Option<Ended>,
}

/// The receipt of a stopped tree: the tree as it stood when the stop was decided and what
/// each stage did to each process (`actions[i]` is `tree.procs[i]`'s). A host identifies
/// each process by pid and start, so a pid reused by another process is never signalled and
/// never taken for one of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// Why the tree was stopped.
    pub cause: ReceiptCause,
    /// When the tree was read, ms since the child's spawn.
    pub at_ms: u64,
    /// The tree then.
    pub tree: TreeSample,
    /// What the ladder did to each of its processes.
    #[serde(default)]
    pub actions: Vec<ProcAction>,
}

impl Receipt {
    /// Each process with what was done to it.
    pub fn processes(&self) -> impl Iterator<Item = (&ProcFacts, Option<&ProcAction>)> {
        self.tree
            .procs
            .iter()
            .enumerate()
            .map(|(i, p)| (p, self.actions.get(i)))
    }
}
