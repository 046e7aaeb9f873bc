//! The process supervisor; see [`Supervisor`] (re-exported at the crate root).

mod config;
mod control;
mod drain;
mod evidence;
mod facilities;
mod handle;
mod hook;
mod kill;
mod lines;
mod os;
mod policy;
mod read;
mod report;
mod shared;
mod signal;
mod signals;
mod start;
mod watch;
mod woken;

use tokio::sync::{mpsc, oneshot};

pub use config::SupervisorConfig;
pub use facilities::Facility;
pub use handle::{StdinWriter, SupervisorHandle};
pub use hook::{LineInfo, StdoutHook};
pub use lines::{Line, LineMeta, StdoutBatch};
pub use os::TREE_MARKER_VAR;
pub use report::{Batch, KillCause, KillReport, LineCounts, Output, Report, Stage, WaitError};
pub use shared::RunPhase;
pub use signals::{forward_signals, SignalForwarder};
pub use start::SpawnError;

use os::ProcessTree;

/// Keep `pid`, a child of this process that no supervisor runs (a helper such as a guardian
/// process), out of every supervised tree: with [`SupervisorConfig::claim_orphans`] it is
/// never taken for an orphan of one, killed or reaped by it.
pub fn keep_out_of_trees(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        os::Tree::keep_apart(pid);
    }
}

/// SIGKILL every process started under a supervisor of host `host_pid` that is still running
/// (every process whose environment carries one of that host's [`TREE_MARKER_VAR`] markers,
/// what their children inherit too), until none is left; returns how many were signalled.
/// For a helper that outlives a host killed with SIGKILL: the host's own supervisors cannot
/// stop their trees any more. Linux only (elsewhere 0); it reads every readable process
/// environment on the machine.
pub fn kill_trees_of(host_pid: u32) -> usize {
    os::Tree::kill_marked(host_pid)
}

pub use signal::Signal;

/// A running child under supervision. Dropping it without [`Supervisor::wait`] starts the
/// kill ladder (finished in the background while the runtime lives).
///
/// A supervisor for one child process (a Claude Code CLI): lines in, liveness policy, and a
/// kill ladder that leaves no descendant running.
///
/// # Platforms
///
/// Linux is the tested platform. There the supervisor knows every descendant of the child
/// (from `/proc` parent chains, start times, and a marker variable in the environment) and
/// SIGKILLs each one at the last stage of the ladder, even those that called `setsid` (as
/// Claude Code's Bash tool does) and those orphaned to PID 1. With
/// [`SupervisorConfig::become_subreaper`] the host process becomes a child subreaper, so
/// orphans re-parent to it and are reaped by the supervisor.
///
/// Limits on Linux: a descendant that is started and orphaned between two scans
/// ([`SupervisorConfig::tree_scan`]) and that cleared the marker variable from its
/// environment is not known; with the subreaper it re-parents to the host instead of PID 1,
/// and the host must reap it (the supervisor reaps only descendants it knows).
///
/// On macOS and other Unixes there is no `/proc` and no subreaper: the ladder signals the
/// child's process group only, so a descendant that left the group (`setsid`) and ignores
/// SIGTERM can survive. [`Report::tree_known`] says which case applied.
///
/// On Windows the child is started suspended in a Job Object of its own, then resumed: every
/// process it starts, at any depth, orphans included, is a member. The graceful rung closes
/// the child's stdin and sends `CTRL_BREAK` to its console group (where the host has a
/// console); the last stage is `TerminateJobObject`, confirmed by the job's own count of
/// active processes. The job has `KILL_ON_JOB_CLOSE`: the tree ends with the host however the
/// host ends. Evidence comes from the job's process list (each process's CPU time, working
/// set and I/O bytes). A host that refuses the job is named by [`Facility::JobObject`].
///
/// # Refused facilities
///
/// A Linux host may refuse what the guarantees above rest on: the subreaper (qemu-user,
/// gVisor, old kernels), the parent-death signal (a `prctl` filter), `/proc` (not mounted).
/// None of them stops a spawn: the child is supervised with what is left (the process group,
/// and a periodic scan while `/proc` is there), and [`Supervisor::unavailable`] and
/// [`Report::unavailable`] name each [`Facility`] that was refused.
///
/// As a subreaper (or PID 1) with [`SupervisorConfig::claim_orphans`], orphans re-parented to
/// the host are reaped as they end (on SIGCHLD), not only when the child ends.
///
/// # Faults of the host
///
/// - The host dies, even by SIGKILL: on Linux the child gets SIGTERM
///   ([`SupervisorConfig::die_with_host`]); on Windows the job ends the whole tree. Elsewhere
///   it keeps running.
/// - The caller takes output slowly (a slow reader downstream): once 4 MiB wait, the child
///   waits on its pipe, and that time does not count toward its idle and no-progress clocks
///   ([`Report::blocked_on_output`]).
/// - The host was stopped (Ctrl-Z) or busy while deadlines came due: lines that waited in the
///   pipe count before those deadlines: the stdout reader's waker tells the policy that lines
///   wait unread ([`Registry::input_pending`](watchdog_core::Registry::input_pending)), and a
///   deadline waits for them (at most
///   [`INPUT_HOLD`](watchdog_core::config::INPUT_HOLD)); a kill lands only if it
///   still holds.
///
/// # One timer for many children
///
/// Every child's session lives on a policy cell: by default a private
/// [`Watchdog`](crate::Watchdog) of its own, or, with [`SupervisorConfig::watchdog`], a shared
/// one, whose one timer task handles the deadlines of every supervised child and in-process
/// session. Either way the cell's timer decides the deadlines, the core applies the output
/// pause and the unread lines, and the cell delivers every event of the child into its
/// output, in order: the same rules, whichever cell.
#[derive(Debug)]
pub struct Supervisor {
    handle: SupervisorHandle,
    started: std::time::Instant,
    started_wall: u64,
    budget: std::sync::Arc<tokio::sync::Semaphore>,
    stdin: Option<StdinWriter>,
    output: Option<mpsc::UnboundedReceiver<Batch>>,
    /// A batch being handed out line by line ([`Supervisor::next_output`]), and its next line.
    unbatched: Option<(StdoutBatch, usize)>,
    report: Option<oneshot::Receiver<Report>>,
    unavailable: Vec<Facility>,
}

impl Supervisor {
    /// The instant the child was spawned: time zero of its policy clocks. A recording that
    /// stamps its lines from this instant replays to the same deadlines.
    pub fn started(&self) -> std::time::Instant {
        self.started
    }

    /// The wall clock at [`started`](Self::started), epoch milliseconds: the anchor by which
    /// the policy tells when a rate-limit window resets (a recording that keeps it replays
    /// the same resets).
    pub fn started_wall_ms(&self) -> u64 {
        self.started_wall
    }

    /// Start `command` in its own process group with piped stdio and supervise it.
    ///
    /// Fails at once, naming the program, when it cannot be started. Must be called inside a
    /// tokio runtime.
    pub fn spawn(
        command: impl Into<tokio::process::Command>,
        config: SupervisorConfig,
    ) -> Result<Supervisor, SpawnError> {
        let s = start::spawn(command.into(), config)?;
        Ok(Supervisor {
            handle: s.handle,
            started: s.started,
            started_wall: s.started_wall,
            budget: s.budget,
            stdin: s.stdin,
            output: Some(s.output),
            unbatched: None,
            report: Some(s.report),
            unavailable: s.unavailable,
        })
    }

    /// The next output (stdout/stderr lines, events, ladder stages), in order, one line at a
    /// time; `None` once the child is gone and both pipes are closed. Built on
    /// [`Supervisor::next_batch`] (each stdout line is copied out of its batch); the two can be
    /// mixed.
    ///
    /// Up to 4 MiB of output waits for the caller; past that the supervisor stops reading and
    /// the child waits on its pipe, so memory stays bounded however fast it prints (the policy
    /// sees what was read; a caller that stops reading holds the child back).
    /// [`Supervisor::wait`] discards what is not read, and then nothing waits.
    pub async fn next_output(&mut self) -> Option<Output> {
        loop {
            if let Some((batch, i)) = &mut self.unbatched {
                if let Some(line) = batch.to_line(*i) {
                    *i += 1;
                    return Some(Output::Stdout(line));
                }
                self.unbatched = None;
            }
            match self.recv().await? {
                Batch::Stdout(b) => self.unbatched = Some((b, 0)),
                Batch::Output(out) => return Some(out),
            }
        }
    }

    /// The next output in batches: the stdout lines that were read together as one
    /// [`StdoutBatch`] (with the class the policy gave each line), anything else as one
    /// [`Output`] (never [`Output::Stdout`]); `None` at the end, as for
    /// [`Supervisor::next_output`], with the same bound on what waits.
    ///
    /// The events the lines of a batch caused come before the batch, as do the
    /// [`Output::Overlong`] of over-long lines that begin in it.
    pub async fn next_batch(&mut self) -> Option<Batch> {
        if let Some((mut batch, i)) = self.unbatched.take() {
            if i < batch.lines.len() {
                batch.drop_front(i);
                return Some(Batch::Stdout(batch));
            }
        }
        self.recv().await
    }

    async fn recv(&mut self) -> Option<Batch> {
        let item = self.output.as_mut()?.recv().await?;
        self.budget.add_permits(read::cost(&item) as usize);
        Some(item)
    }

    /// The kernel facilities this supervision asked for or needs that the host refused (as
    /// [`Report::unavailable`] will say): known from the spawn on, so a caller can warn before
    /// the run ends. Each takes a guarantee away, never the supervision.
    pub fn unavailable(&self) -> &[Facility] {
        &self.unavailable
    }

    /// A writer to the child's stdin (`None` when [`SupervisorConfig::pipe_stdin`] is false).
    pub fn stdin(&self) -> Option<StdinWriter> {
        self.stdin.clone()
    }

    /// A handle to stop or signal the child.
    pub fn handle(&self) -> SupervisorHandle {
        self.handle.clone()
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.handle.pid
    }

    /// Start the kill ladder now.
    pub fn kill_now(&self) {
        self.handle.kill_now();
    }

    /// Wait for the end: the child reaped, its tree gone, the pipes drained. Unread output is
    /// discarded (and no longer buffered).
    ///
    /// Fails only if the supervising task was dropped (its runtime shut down).
    pub async fn wait(mut self) -> Result<Report, WaitError> {
        self.output.take();
        self.unbatched.take();
        let pid = self.handle.pid;
        match self.report.take() {
            Some(rx) => rx.await.map_err(|_| WaitError { pid }),
            None => Err(WaitError { pid }),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if self.report.is_some() {
            self.handle.kill_now();
        }
    }
}
