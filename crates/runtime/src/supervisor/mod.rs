//! The process supervisor; see [`Supervisor`] (re-exported at the crate root).

mod child;
mod handle;
mod hook;
mod kill;
mod lines;
mod policy;
mod read;
mod report;
mod shared;
mod signals;
mod spawn;
mod tree;
mod watch;

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use watchdog_core::config::{defaults, PositiveDuration};
use watchdog_core::{ConfigError, SessionConfig};

pub(crate) use handle::Control;
pub use handle::{StdinWriter, SupervisorHandle};
pub use hook::{LineInfo, StdoutHook};
pub use lines::{Line, LineMeta, StdoutBatch};
pub use report::{Batch, KillCause, KillReport, LineCounts, Output, Report, Stage, WaitError};
pub use signals::{forward_signals, SignalForwarder};
pub use tree::TREE_MARKER_VAR;

/// Keep `pid`, a child of this process that no supervisor runs (a helper such as a guardian
/// process), out of every supervised tree: with [`SupervisorConfig::claim_orphans`] it is
/// never taken for an orphan of one, killed or reaped by it.
pub fn keep_out_of_trees(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        tree::Tree::keep_apart(pid);
    }
}

/// SIGKILL every process started under a supervisor of host `host_pid` that is still running
/// (every process whose environment carries one of that host's [`TREE_MARKER_VAR`] markers,
/// what their children inherit too), until none is left; returns how many were signalled.
/// For a helper that outlives a host killed with SIGKILL: the host's own supervisors cannot
/// stop their trees any more. Linux only (elsewhere 0); it reads every readable process
/// environment on the machine.
pub fn kill_trees_of(host_pid: u32) -> usize {
    tree::Tree::kill_marked(host_pid)
}

/// A Unix signal, for [`SupervisorHandle::signal`].
pub use rustix::process::Signal;

/// How to run and stop a supervised child.
///
/// The defaults are the constants of [`watchdog_core::config::defaults`].
/// [`Supervisor::spawn`] rejects a value no child can be supervised with
/// ([`SupervisorConfig::check`]); nothing is adjusted silently.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    /// The liveness policy, or `None` to only supervise (explicit kills, signals, tree
    /// cleanup, counts) with no watchdog deadlines.
    pub policy: Option<SessionConfig>,
    /// Register the child's session on this shared [`Watchdog`](crate::Watchdog) instead of a
    /// registry of its own: one timer task for any number of supervised children (and
    /// in-process sessions), its callbacks and utilization shared by all. `policy` still gives
    /// the session's limits (the watchdog's when it has none). The output pause of a slow
    /// reader is then applied at each tree scan ([`SupervisorConfig::tree_scan`]) rather than
    /// before each deadline. Default `None`.
    pub watchdog: Option<crate::Watchdog>,
    /// The child reads stream-json on stdin (`--input-format stream-json`): the ladder
    /// starts with an `interrupt` control request, and with [`SupervisorConfig::pipe_stdin`]
    /// the policy's session waits for its host after each `result` until the host's next
    /// `user` message or the end of its input
    /// ([`SessionConfig::with_host_input`](watchdog_core::SessionConfig::with_host_input)).
    /// Default false.
    pub stream_json_input: bool,
    /// Wait after the interrupt request before SIGTERM. Default
    /// [`INTERRUPT_GRACE`](defaults::INTERRUPT_GRACE).
    pub interrupt_grace: Duration,
    /// Wait after SIGTERM before SIGKILL. Default [`TERM_GRACE`](defaults::TERM_GRACE). After
    /// a signal forwarded with [`SupervisorHandle::signal`], what the child leaves running when
    /// it exits gets what is left of this grace, counted from the signal.
    pub term_grace: Duration,
    /// Make the host process a child subreaper (Linux only) before spawning. This changes the
    /// host process for good: every orphaned descendant of it, from any source, re-parents to
    /// it and must be reaped by it. Default false.
    pub become_subreaper: bool,
    /// Longest line delivered in one piece; longer lines come in pieces of this size
    /// (see [`Line::continues`], [`LineMeta::piece`]) and count as keep-alives. At least 1;
    /// default [`MAX_LINE`](defaults::MAX_LINE).
    pub max_line: usize,
    /// Pipe stdin (true, default) or give the child `/dev/null` (for `claude -p "prompt"`,
    /// which otherwise waits for stdin to close).
    pub pipe_stdin: bool,
    /// How often to rescan the process tree while the child runs, so descendants that lose
    /// their parent stay known. `None` scans only when stopping; a period must be > 0. Default
    /// [`TREE_SCAN`](defaults::TREE_SCAN). With [`SupervisorConfig::become_subreaper`] and
    /// [`SupervisorConfig::claim_orphans`] the tree is not walked in between (such descendants
    /// re-parent to the host and are claimed).
    pub tree_scan: Option<Duration>,
    /// When the child exits by itself, stop the descendants it left running (SIGTERM, then
    /// SIGKILL after `term_grace`), so nothing outlives the session. Default true.
    pub kill_leftovers: bool,
    /// After the child and its tree are gone, how long to wait for stdout/stderr to close
    /// (a process outside the tree may hold them) before giving up. Default
    /// [`DRAIN_TIMEOUT`](defaults::DRAIN_TIMEOUT).
    pub drain_timeout: Duration,
    /// Run for each stdout line that parsed; see [`SupervisorConfig::on_stdout_line`].
    /// Default `None`.
    pub on_stdout_line: Option<StdoutHook>,
    /// Linux: the child gets SIGTERM when the host process dies, even by SIGKILL
    /// (`PR_SET_PDEATHSIG`; Claude Code then stops its own tool processes). The child is
    /// spawned from a thread that lives as long as the process, as the death signal follows
    /// the spawning thread. Elsewhere no effect. Default true.
    pub die_with_host: bool,
    /// With [`SupervisorConfig::become_subreaper`] (Linux): every child of the host process
    /// that is not a supervised child itself counts as an orphaned descendant of this child
    /// (one that left the process group and cleared the marker variable, then lost its
    /// parent), and is stopped and reaped with the tree. Only for a host that starts no other
    /// processes and supervises one child at a time (like `agent-watchdog run`). Default false.
    pub claim_orphans: bool,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig {
            policy: Some(SessionConfig::default()),
            watchdog: None,
            stream_json_input: false,
            interrupt_grace: defaults::INTERRUPT_GRACE,
            term_grace: defaults::TERM_GRACE,
            become_subreaper: false,
            max_line: defaults::MAX_LINE,
            pipe_stdin: true,
            tree_scan: defaults::TREE_SCAN,
            kill_leftovers: true,
            drain_timeout: defaults::DRAIN_TIMEOUT,
            on_stdout_line: None,
            die_with_host: true,
            claim_orphans: false,
        }
    }
}

impl SupervisorConfig {
    /// The first value no child can be supervised with: a `max_line` of 0 (no line would
    /// fit), a `tree_scan` period of 0 (the scan would never stop). [`Supervisor::spawn`]
    /// fails with it ([`SpawnError::Config`]).
    ///
    /// ```
    /// use agent_sdk_watchdog::SupervisorConfig;
    /// let config = SupervisorConfig { max_line: 0, ..SupervisorConfig::default() };
    /// assert_eq!(
    ///     config.check().unwrap_err().to_string(),
    ///     "max_line must be a size >= 1 byte, got 0"
    /// );
    /// assert!(SupervisorConfig::default().check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.max_line == 0 {
            return Err(ConfigError {
                option: "max_line",
                allowed: "a size >= 1 byte",
                value: "0".into(),
            });
        }
        if let Some(every) = self.tree_scan {
            PositiveDuration::new(every).map_err(|e| e.option("tree_scan"))?;
        }
        Ok(())
    }

    /// The longest line delivered in one piece ([`SupervisorConfig::max_line`]); at least 1 by
    /// its type, so [`SupervisorConfig::check`] has nothing to reject.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use agent_sdk_watchdog::SupervisorConfig;
    /// let config = SupervisorConfig::default().with_max_line(NonZeroUsize::new(1 << 20).unwrap());
    /// assert_eq!(config.max_line, 1 << 20);
    /// assert!(config.check().is_ok());
    /// ```
    pub fn with_max_line(mut self, max: std::num::NonZeroUsize) -> Self {
        self.max_line = max.get();
        self
    }

    /// The period of the tree rescan ([`SupervisorConfig::tree_scan`]), or `None` to scan only
    /// when stopping; > 0 by its type.
    pub fn with_tree_scan(mut self, every: Option<PositiveDuration>) -> Self {
        self.tree_scan = every.map(PositiveDuration::get);
        self
    }

    /// Run `hook` on the stdout reader for every complete stdout line that parsed (not for
    /// pieces of over-long lines, nor for unparseable lines), in stream order, with the view
    /// the supervisor built for the policy and what it made of the line ([`LineInfo`]), so the
    /// caller need not parse the line again.
    ///
    /// The hook runs after the policy observed the line, outside the supervisor's locks (it may
    /// use a [`SupervisorHandle`]), and before the line's [`StdoutBatch`] is handed over. The
    /// reader runs up to 4 MiB ahead of the caller ([`Supervisor::next_output`]): the hook
    /// may see a line well before the caller gets its batch ([`LineInfo::index`] matches the
    /// two). It should be quick: while it runs, stdout is not read. A hook that panics is
    /// caught (the line and the output are not affected), counted in [`Report::hook_panics`],
    /// and called again for the next line. A config cloned for several supervisors shares one
    /// hook: their calls take turns.
    pub fn on_stdout_line(
        mut self,
        hook: impl FnMut(&watchdog_core::LineView<'_>, &LineInfo<'_>) + Send + 'static,
    ) -> Self {
        self.on_stdout_line = Some(StdoutHook::new(hook));
        self
    }
}

/// The child could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// The config holds a value no child can be supervised with
    /// ([`SupervisorConfig::check`]).
    #[error("invalid supervisor config: {0}")]
    Config(#[source] ConfigError),
}

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
/// # Faults of the host
///
/// - The host dies, even by SIGKILL: on Linux the child gets SIGTERM
///   ([`SupervisorConfig::die_with_host`]). Elsewhere it keeps running.
/// - The caller takes output slowly (a slow reader downstream): once 4 MiB wait, the child
///   waits on its pipe, and that time does not count toward its idle and no-progress clocks
///   ([`Report::blocked_on_output`]).
/// - The host was stopped (Ctrl-Z) or busy while deadlines came due: lines that waited in the
///   pipe count before those deadlines, and a deadline first lets the readers take what waits;
///   a kill lands only if it still holds.
///
/// # One timer for many children
///
/// By default each supervisor runs the policy of its one child itself. With
/// [`SupervisorConfig::watchdog`] the child's session is registered on a shared
/// [`Watchdog`](crate::Watchdog) instead, whose one timer task handles the deadlines of every
/// supervised child and in-process session.
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
    /// Fails at once, naming the program, when it cannot be started, and before starting it
    /// when `config` holds an invalid value ([`SupervisorConfig::check`]). Must be called
    /// inside a tokio runtime.
    pub fn spawn(
        command: impl Into<tokio::process::Command>,
        config: SupervisorConfig,
    ) -> Result<Supervisor, SpawnError> {
        config.check().map_err(SpawnError::Config)?;
        child::spawn(command.into(), config)
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
