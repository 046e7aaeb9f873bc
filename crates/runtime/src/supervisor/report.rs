//! What the supervisor tells: outputs while the child runs, the report at the end.

use std::process::ExitStatus;
use std::time::Duration;

use watchdog_core::{facts::ClaudeSessionId, Event, Kill, Outcome, RunRecord};
pub use watchdog_core::{LineCounts, Stage};

use super::facilities::Facility;
use super::lines::{Line, StdoutBatch};

/// The supervising task is gone (its runtime shut down) before it could report; the child
/// was killed when the task was dropped (`kill_on_drop`), its descendants maybe not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the supervisor of pid {pid} stopped before it could report")]
pub struct WaitError {
    /// The child's pid.
    pub pid: u32,
}

/// Why the ladder ran.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KillCause {
    /// The watchdog decided.
    Watchdog(Kill),
    /// [`SupervisorHandle::kill_now`](super::SupervisorHandle::kill_now) (or dropping the [`Supervisor`](super::Supervisor)).
    Requested,
    /// A forwarded host signal escalated ([`forward_signals`](super::forward_signals)).
    Signal,
}

/// What the kill ladder did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KillReport {
    /// Why.
    pub cause: KillCause,
    /// The last stage reached.
    pub stage: Stage,
    /// From spawn to the kill decision.
    pub decided_after: Duration,
    /// From the decision to the end of the ladder (child reaped, tree gone).
    pub took: Duration,
    /// Descendants that received SIGKILL (not counting the child).
    pub descendants_killed: usize,
    /// Descendants still alive after the ladder (0 unless a process was unkillable).
    pub survivors: usize,
}

/// A supervisor output, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Output {
    /// A stdout line, unchanged.
    Stdout(Line),
    /// A stderr line, unchanged.
    Stderr(Line),
    /// A core event (kill decision, extension, stalling warning, settle, end).
    Event(Event),
    /// A stdout line longer than [`SupervisorConfig::max_line`](super::SupervisorConfig::max_line) began; it is delivered in
    /// pieces and counted as a keep-alive.
    Overlong {
        /// The maximum line length in force.
        max_line: usize,
    },
    /// The kill ladder entered a stage.
    Stage(Stage),
    /// A sample of the child's process tree, as the policy got it
    /// ([`SupervisorConfig::tree_sample`](super::SupervisorConfig::tree_sample)); a capture
    /// keeps it so a replay applies it.
    Tree {
        /// When it was read (the instant the policy was given).
        at: std::time::Instant,
        /// What it says.
        sample: std::sync::Arc<watchdog_core::evidence::TreeSample>,
    },
}

/// What [`Supervisor::next_batch`](super::Supervisor::next_batch) returns, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Batch {
    /// Stdout lines that were read together.
    Stdout(StdoutBatch),
    /// Any other output (never [`Output::Stdout`]).
    Output(Output),
}

/// The end of a supervised run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report {
    /// The program, as given.
    pub program: String,
    /// The child's pid (also its process group id).
    pub pid: u32,
    /// How the run ended, as one record ([`RunRecord`]): what the policy read from the
    /// lines (the outcome, the kill, Claude Code's session id, the last `result`, the tally
    /// unless [`SessionConfig::with_tally`](watchdog_core::SessionConfig::with_tally) was not
    /// asked for, the rate-limit readings of the policy's registry: a shared watchdog's are
    /// every session's), with the ladder's [`Stage`], the exit and the line counts of this
    /// report filled in. `None` without a policy.
    pub record: Option<RunRecord>,
    /// The kill ladder, if it ran.
    pub kill: Option<KillReport>,
    /// The child's exit status (`code()` or, on Unix, `signal()`); `None` if it could not
    /// be reaped.
    pub status: Option<ExitStatus>,
    /// The line counts when there is no record (no policy); see [`Report::counts`].
    pub(super) unrecorded_counts: LineCounts,
    /// Stdout lines (pieces of over-long lines count once each).
    pub stdout_lines: u64,
    /// Stderr lines.
    pub stderr_lines: u64,
    /// Calls of the [`SupervisorConfig::on_stdout_line`](super::SupervisorConfig::on_stdout_line)
    /// hook that panicked (each was caught; the lines were still delivered).
    pub hook_panics: u64,
    /// Descendants still running when the child exited by itself, then stopped.
    pub leftovers_killed: usize,
    /// stdout or stderr stayed open after the tree was gone (held by an unknown process);
    /// output after [`SupervisorConfig::drain_timeout`](super::SupervisorConfig::drain_timeout) was not read.
    pub pipe_left_open: bool,
    /// Whether the descendants were known (Linux, with `/proc`) or only the process group
    /// (elsewhere, or where `/proc` is not mounted).
    pub tree_known: bool,
    /// The kernel facilities the supervision asked for or needed and this host refused, each
    /// a guarantee that did not hold for this run ([`Facility::lost_guarantee`]); empty when
    /// every guarantee held. The run was supervised all the same.
    pub unavailable: Vec<Facility>,
    /// From spawn to the end.
    pub duration: Duration,
    /// How long the child's output waited because the caller did not take it (a slow reader
    /// downstream): time that did not count toward the idle and no-progress clocks.
    pub blocked_on_output: Duration,
}

impl Report {
    /// How the session ended by the core's rules (the record's; `None` without a policy).
    pub fn outcome(&self) -> Option<&Outcome> {
        self.record.as_ref().map(|r| &r.outcome)
    }

    /// Stdout lines by kind, each line once; an over-long line counts once, as over-long
    /// ([`LineCounts::overlong`]). The record's [`RunRecord::lines`] when there is a record.
    pub fn counts(&self) -> &LineCounts {
        match &self.record {
            Some(r) => &r.lines,
            None => &self.unrecorded_counts,
        }
    }

    /// Claude Code's session id, as the policy read it (the record's; the last
    /// `system/init`'s, else the first valid one: [`watchdog_core::facts`]).
    pub fn session_id(&self) -> Option<&ClaudeSessionId> {
        self.record.as_ref()?.session_id.as_ref()
    }
}
