//! A supervisor for one child process (a Claude Code CLI): lines in, liveness policy, and a
//! kill ladder that leaves no descendant running.
//!
//! # Platforms
//!
//! Linux is the tested platform. There the supervisor knows every descendant of the child
//! (from `/proc` parent chains, start times, and a marker variable in the environment) and
//! SIGKILLs each one at the last stage of the ladder, even those that called `setsid` (as
//! Claude Code's Bash tool does) and those orphaned to PID 1. With
//! [`SupervisorConfig::become_subreaper`] the host process becomes a child subreaper, so
//! orphans re-parent to it and are reaped by the supervisor.
//!
//! Limits on Linux: a descendant that is started and orphaned between two scans
//! ([`SupervisorConfig::tree_scan`]) and that cleared the marker variable from its
//! environment is not known; with the subreaper it re-parents to the host instead of PID 1,
//! and the host must reap it (the supervisor reaps only descendants it knows).
//!
//! On macOS and other Unixes there is no `/proc` and no subreaper: the ladder signals the
//! child's process group only, so a descendant that left the group (`setsid`) and ignores
//! SIGTERM can survive. [`Report::tree_known`] says which case applied.

mod child;
mod kill;
mod lines;
mod signals;
mod tree;

use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};
use watchdog_core::{Event, Kill, LineKind, Outcome, SessionConfig};

pub use lines::Line;
pub use tree::TREE_MARKER_VAR;

/// How to run and stop a supervised child.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    /// The liveness policy, or `None` to only supervise (explicit kills, signals, tree
    /// cleanup, counts) with no watchdog deadlines.
    pub policy: Option<SessionConfig>,
    /// The child reads stream-json on stdin (`--input-format stream-json`): the ladder
    /// starts with an `interrupt` control request. Default false.
    pub stream_json_input: bool,
    /// Wait after the interrupt request before SIGTERM. Default 2 s.
    pub interrupt_grace: Duration,
    /// Wait after SIGTERM before SIGKILL. Default 5 s.
    pub term_grace: Duration,
    /// Make the host process a child subreaper (Linux only) before spawning. This changes the
    /// host process for good: every orphaned descendant of it, from any source, re-parents to
    /// it and must be reaped by it. Default false.
    pub become_subreaper: bool,
    /// Longest line delivered in one piece; longer lines come in pieces of this size
    /// (see [`Line::continues`]) and count as keep-alives. Default 64 MiB.
    pub max_line: usize,
    /// Pipe stdin (true, default) or give the child `/dev/null` (for `claude -p "prompt"`,
    /// which otherwise waits for stdin to close).
    pub pipe_stdin: bool,
    /// How often to rescan the process tree while the child runs, so descendants that lose
    /// their parent stay known. `None` scans only when stopping. Default 1 s.
    pub tree_scan: Option<Duration>,
    /// When the child exits by itself, stop the descendants it left running (SIGTERM, then
    /// SIGKILL after `term_grace`), so nothing outlives the session. Default true.
    pub kill_leftovers: bool,
    /// After the child and its tree are gone, how long to wait for stdout/stderr to close
    /// (a process outside the tree may hold them) before giving up. Default 2 s.
    pub drain_timeout: Duration,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig {
            policy: Some(SessionConfig::default()),
            stream_json_input: false,
            interrupt_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(5),
            become_subreaper: false,
            max_line: 64 << 20,
            pipe_stdin: true,
            tree_scan: Some(Duration::from_secs(1)),
            kill_leftovers: true,
            drain_timeout: Duration::from_secs(2),
        }
    }
}

/// The child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program could not be executed (missing binary, no permission, ...).
    #[error("cannot start `{program}`: {source}")]
    Program {
        /// The program as given.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The working directory does not exist or is not a directory.
    #[error("cannot start `{program}`: working directory {} is not a directory", cwd.display())]
    Cwd {
        /// The program as given.
        program: String,
        /// The directory.
        cwd: PathBuf,
    },
    /// Becoming a child subreaper failed.
    #[error("cannot become a child subreaper: {0}")]
    Subreaper(#[source] std::io::Error),
    /// Called outside a tokio runtime.
    #[error("Supervisor::spawn needs a tokio runtime")]
    NoRuntime,
}

/// The supervising task is gone (its runtime shut down) before it could report; the child
/// was killed when the task was dropped (`kill_on_drop`), its descendants maybe not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the supervisor of pid {pid} stopped before it could report")]
pub struct WaitError {
    /// The child's pid.
    pub pid: u32,
}

/// How far the kill ladder went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// An `interrupt` control request was written to stdin (and stdin closed).
    Interrupt,
    /// SIGTERM was sent to the process group.
    Term,
    /// SIGKILL was sent to the group and every remaining descendant.
    Kill,
}

impl Stage {
    /// `interrupt`, `term` or `kill`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Interrupt => "interrupt",
            Stage::Term => "term",
            Stage::Kill => "kill",
        }
    }
}

/// Why the ladder ran.
#[derive(Debug, Clone, PartialEq)]
pub enum KillCause {
    /// The watchdog decided.
    Watchdog(Kill),
    /// [`SupervisorHandle::kill_now`] (or dropping the [`Supervisor`]).
    Requested,
    /// A forwarded host signal escalated ([`forward_signals`]).
    Signal,
}

/// What the kill ladder did.
#[derive(Debug, Clone, PartialEq)]
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
pub enum Output {
    /// A stdout line, unchanged.
    Stdout(Line),
    /// A stderr line, unchanged.
    Stderr(Line),
    /// A core event (kill decision, extension, stalling warning, settle, end).
    Event(Event),
    /// A stdout line longer than [`SupervisorConfig::max_line`] began; it is delivered in
    /// pieces and counted as a keep-alive.
    Overlong {
        /// The maximum line length in force.
        max_line: usize,
    },
    /// The kill ladder entered a stage.
    Stage(Stage),
}

/// Stdout lines counted by kind ([`LineKind`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineCounts([u64; LineKind::ALL.len()]);

impl LineCounts {
    /// The count of one kind.
    pub fn get(&self, kind: LineKind) -> u64 {
        self.0[kind.index()]
    }
    /// All lines counted.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    pub(crate) fn add(&mut self, kind: LineKind) {
        self.0[kind.index()] += 1;
    }
    /// Non-zero counts, in [`LineKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (LineKind, u64)> + '_ {
        LineKind::ALL
            .iter()
            .map(|&k| (k, self.get(k)))
            .filter(|&(_, n)| n > 0)
    }
}

/// The end of a supervised run.
#[derive(Debug, Clone)]
pub struct Report {
    /// The program, as given.
    pub program: String,
    /// The child's pid (also its process group id).
    pub pid: u32,
    /// How the session ended by the core's rules (`None` without a policy).
    pub outcome: Option<Outcome>,
    /// The kill ladder, if it ran.
    pub kill: Option<KillReport>,
    /// The child's exit status (`code()` or, on Unix, `signal()`); `None` if it could not
    /// be reaped.
    pub status: Option<ExitStatus>,
    /// The `session_id` of the first stdout line that carried one.
    pub session_id: Option<String>,
    /// Stdout lines by kind (each piece of an over-long line counts once as `Unparseable`).
    pub counts: LineCounts,
    /// Stdout lines (pieces of over-long lines count once each).
    pub stdout_lines: u64,
    /// Stderr lines.
    pub stderr_lines: u64,
    /// Over-long stdout lines.
    pub overlong_lines: u64,
    /// Descendants still running when the child exited by itself, then stopped.
    pub leftovers_killed: usize,
    /// stdout or stderr stayed open after the tree was gone (held by an unknown process);
    /// output after [`SupervisorConfig::drain_timeout`] was not read.
    pub pipe_left_open: bool,
    /// Whether the descendants were known (Linux) or only the process group (elsewhere).
    pub tree_known: bool,
    /// From spawn to the end.
    pub duration: Duration,
}

/// Control messages from handles to the supervising task.
#[derive(Debug)]
pub(crate) enum Control {
    /// Run the ladder.
    Kill(KillCause),
    /// Forward a signal to the group.
    Signal(rustix::process::Signal),
    /// SIGKILL the whole tree now.
    KillTree(KillCause),
    /// New rate-limit utilization for the policy.
    Utilization(Option<f64>),
}

/// A cheap, cloneable handle to a running supervisor: stop it or signal it.
#[derive(Debug, Clone)]
pub struct SupervisorHandle {
    ctrl: mpsc::UnboundedSender<Control>,
    pid: u32,
}

impl SupervisorHandle {
    /// Start the kill ladder now (no effect once it runs or the child has exited).
    pub fn kill_now(&self) {
        let _ = self.ctrl.send(Control::Kill(KillCause::Requested));
    }
    /// SIGKILL the child's group and every known descendant now, skipping the graces.
    pub fn kill_tree_now(&self) {
        let _ = self.ctrl.send(Control::KillTree(KillCause::Requested));
    }
    /// Send SIGINT to the child's process group.
    pub fn interrupt(&self) {
        let _ = self
            .ctrl
            .send(Control::Signal(rustix::process::Signal::INT));
    }
    /// Send SIGTERM to the child's process group.
    pub fn terminate(&self) {
        let _ = self
            .ctrl
            .send(Control::Signal(rustix::process::Signal::TERM));
    }
    /// Feed the current rate-limit utilization (0–1, highest window; `None` when unknown):
    /// high utilization extends the idle patience.
    pub fn set_utilization(&self, utilization: Option<f64>) {
        let _ = self.ctrl.send(Control::Utilization(utilization));
    }
    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

/// Writes lines to the child's stdin and reports them to the policy (a `control_response`
/// that answers a permission request ends that human wait). Cloneable.
#[derive(Clone)]
pub struct StdinWriter {
    pipe: Arc<AsyncMutex<Option<tokio::process::ChildStdin>>>,
    shared: Arc<child::Shared>,
}

impl std::fmt::Debug for StdinWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdinWriter").finish_non_exhaustive()
    }
}

impl StdinWriter {
    /// Write one line (a `\n` is appended when missing) and flush it.
    pub async fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut guard = self.pipe.lock().await;
        let Some(pipe) = guard.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            ));
        };
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        pipe.write_all(body).await?;
        pipe.write_all(b"\n").await?;
        pipe.flush().await?;
        drop(guard);
        self.shared.observe_input(body);
        Ok(())
    }

    /// Close stdin (the child sees end of input).
    pub async fn close(&self) {
        self.pipe.lock().await.take();
    }
}

/// A running child under supervision. Dropping it without [`Supervisor::wait`] starts the
/// kill ladder (finished in the background while the runtime lives).
#[derive(Debug)]
pub struct Supervisor {
    handle: SupervisorHandle,
    stdin: Option<StdinWriter>,
    output: Option<mpsc::UnboundedReceiver<Output>>,
    report: Option<oneshot::Receiver<Report>>,
}

impl Supervisor {
    /// Start `command` in its own process group with piped stdio and supervise it.
    ///
    /// Fails at once, naming the program, when it cannot be started. Must be called inside a
    /// tokio runtime.
    pub fn spawn(
        command: impl Into<tokio::process::Command>,
        config: SupervisorConfig,
    ) -> Result<Supervisor, SpawnError> {
        child::spawn(command.into(), config)
    }

    /// The next output (stdout/stderr lines, events, ladder stages), in order; `None` once
    /// the child is gone and both pipes are closed.
    ///
    /// Output is buffered without bound until read, so the child never waits on the caller;
    /// [`Supervisor::wait`] discards what is not read.
    pub async fn next_output(&mut self) -> Option<Output> {
        self.output.as_mut()?.recv().await
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

/// Forward the host's SIGINT and SIGTERM to the child's process group; a second signal
/// SIGKILLs the whole tree. The forwarding stops when the returned guard is dropped.
///
/// This changes the host process: tokio installs handlers for both signals and keeps them
/// for the life of the process, so the host is no longer stopped by them by default; it
/// should exit by itself once the child is gone.
pub fn forward_signals(handle: SupervisorHandle) -> std::io::Result<SignalForwarder> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let task = tokio::spawn(async move {
        let mut seen = 0u32;
        loop {
            let sig = tokio::select! {
                Some(()) = int.recv() => rustix::process::Signal::INT,
                Some(()) = term.recv() => rustix::process::Signal::TERM,
                else => return,
            };
            seen += 1;
            let msg = if seen == 1 {
                Control::Signal(sig)
            } else {
                Control::KillTree(KillCause::Signal)
            };
            if handle.ctrl.send(msg).is_err() {
                return;
            }
        }
    });
    Ok(SignalForwarder { task })
}

/// Stops signal forwarding when dropped.
#[derive(Debug)]
pub struct SignalForwarder {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SignalForwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}
