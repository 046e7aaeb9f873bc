//! How to run and stop a supervised child: [`SupervisorConfig`] and its defaults. Every value
//! its types allow can be supervised with: there is nothing to check at spawn.

use std::num::NonZeroUsize;
use std::time::Duration;

use watchdog_core::config::{PositiveDuration, MAX_LINE};
use watchdog_core::SessionConfig;

use super::hook::{LineInfo, StdoutHook};

/// [`SupervisorConfig::interrupt_grace`]'s default.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// [`SupervisorConfig::term_grace`]'s default (`--grace`).
const TERM_GRACE: Duration = watchdog_host::options::TERM_GRACE;
/// [`SupervisorConfig::tree_scan`]'s default.
const TREE_SCAN: Duration = Duration::from_secs(1);
/// [`SupervisorConfig::tree_sample`]'s default.
const TREE_SAMPLE: Duration = Duration::from_secs(1);
/// The sampling period of the process tree when [`SupervisorConfig::tree_sample`] is not
/// wanted at the full rate (for the peak RSS).
pub(crate) const TREE_SAMPLE_QUIET: Duration = Duration::from_secs(10);
/// [`SupervisorConfig::drain_timeout`]'s default.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// How to run and stop a supervised child.
///
/// Every value the fields' types allow can be supervised with (a line of at least one byte, tree
/// periods above zero): nothing is checked at spawn, nothing adjusted silently.
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    /// The liveness policy, or `None` to only supervise (explicit kills, signals, tree
    /// cleanup, counts) with no watchdog deadlines.
    pub policy: Option<SessionConfig>,
    /// Register the child's session on this shared [`Watchdog`](crate::Watchdog) instead of a
    /// private one: one timer task for any number of supervised children (and in-process
    /// sessions), its callbacks and utilization shared by all. `policy` still gives the
    /// session's limits (the watchdog's when it has none). The rules are the same either way
    /// (a slow reader's pause, lines that wait unread, the events). Default `None`.
    pub watchdog: Option<crate::Watchdog>,
    /// The child reads stream-json on stdin (`--input-format stream-json`): the ladder
    /// starts with an `interrupt` control request, and with [`SupervisorConfig::pipe_stdin`]
    /// the policy's session waits for its host after each `result` until the host's next
    /// `user` message or the end of its input
    /// ([`SessionConfig::with_host_input`](watchdog_core::SessionConfig::with_host_input)).
    /// Default false.
    pub stream_json_input: bool,
    /// Wait after the interrupt request before SIGTERM. Default 2 s.
    pub interrupt_grace: Duration,
    /// Wait after SIGTERM before SIGKILL. Default 5 s. After
    /// a signal forwarded with [`SupervisorHandle::signal`](super::SupervisorHandle::signal), what the child leaves running when
    /// it exits gets what is left of this grace, counted from the signal.
    pub term_grace: Duration,
    /// Make the host process a child subreaper (Linux only) before spawning. This changes the
    /// host process for good: every orphaned descendant of it, from any source, re-parents to
    /// it and must be reaped by it. Default false.
    pub become_subreaper: bool,
    /// Longest line delivered in one piece; longer lines come in pieces of this size
    /// (see [`Line::continues`](super::Line::continues),
    /// [`LineMeta::piece`](super::LineMeta::piece)) and count as keep-alives. At least 1 by
    /// its type; default [`MAX_LINE`] (64 MiB).
    pub max_line: NonZeroUsize,
    /// Pipe stdin (true, default) or give the child `/dev/null` (for `claude -p "prompt"`,
    /// which otherwise waits for stdin to close).
    pub pipe_stdin: bool,
    /// How often to rescan the process tree while the child runs, so descendants that lose
    /// their parent stay known. `None` scans only when stopping; a period is > 0 by its type. Default 1 s. With [`SupervisorConfig::become_subreaper`] and
    /// [`SupervisorConfig::claim_orphans`] the tree is not walked in between (such descendants
    /// re-parent to the host and are claimed).
    pub tree_scan: Option<PositiveDuration>,
    /// When the child exits by itself, stop the descendants it left running (SIGTERM, then
    /// SIGKILL after `term_grace`), so nothing outlives the session. Default true.
    pub kill_leftovers: bool,
    /// After the child and its tree are gone, how long stdout/stderr may stay open (a process
    /// outside the tree may hold them) before the readers stop reading. It counts once the
    /// readers have read what was written before: output the caller is still taking is never
    /// cut off. Default 2 s.
    pub drain_timeout: Duration,
    /// Run for each stdout line that parsed; see [`SupervisorConfig::on_stdout_line`].
    /// Default `None`.
    pub on_stdout_line: Option<StdoutHook>,
    /// Linux: the child gets SIGTERM when the host process dies, even by SIGKILL
    /// (`PR_SET_PDEATHSIG`; Claude Code then stops its own tool processes). The child is
    /// spawned from a thread that lives as long as the process, as the death signal follows
    /// the spawning thread. On Windows the tree always ends with the host (the job's
    /// `KILL_ON_JOB_CLOSE`). Elsewhere no effect. Default true.
    pub die_with_host: bool,
    /// With [`SupervisorConfig::become_subreaper`] (Linux): every child of the host process
    /// that is not a supervised child itself counts as an orphaned descendant of this child
    /// (one that left the process group and cleared the marker variable, then lost its
    /// parent), and is stopped and reaped with the tree. Only for a host that starts no other
    /// processes and supervises one child at a time (like `agent-watchdog run`). Default false.
    pub claim_orphans: bool,
    /// Sample the child's process tree for its policy at this period while a tool call is
    /// outstanding or the memory guard is on (every 10 s otherwise, for the peak memory),
    /// and read it at every kill for the receipt: a busy tool is not hung, the memory guard,
    /// what a kill names ([`watchdog_core::evidence`]). The session is registered
    /// [`with_tree_evidence`](watchdog_core::SessionConfig::with_tree_evidence); each sample
    /// is also an [`Output::Tree`](super::Output::Tree). A period is > 0 by its type; `None`: no
    /// sampling. Linux and Windows (elsewhere each sample says the tree cannot be read).
    /// Default 1 s.
    pub tree_sample: Option<PositiveDuration>,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        SupervisorConfig {
            policy: Some(SessionConfig::default()),
            watchdog: None,
            stream_json_input: false,
            interrupt_grace: INTERRUPT_GRACE,
            term_grace: TERM_GRACE,
            become_subreaper: false,
            max_line: NonZeroUsize::new(MAX_LINE).expect("MAX_LINE > 0"),
            pipe_stdin: true,
            tree_scan: PositiveDuration::new(TREE_SCAN).ok(),
            kill_leftovers: true,
            drain_timeout: DRAIN_TIMEOUT,
            on_stdout_line: None,
            die_with_host: true,
            claim_orphans: false,
            tree_sample: PositiveDuration::new(TREE_SAMPLE).ok(),
        }
    }
}

impl SupervisorConfig {
    /// Run `hook` on the stdout reader for every complete stdout line that parsed (not for
    /// pieces of over-long lines, nor for unparseable lines), in stream order, with the view
    /// the supervisor built for the policy and what it made of the line ([`LineInfo`]), so the
    /// caller need not parse the line again.
    ///
    /// The hook runs after the policy observed the line, outside the supervisor's locks (it may
    /// use a [`SupervisorHandle`](super::SupervisorHandle)), and before the line's [`StdoutBatch`](super::StdoutBatch) is handed over. The
    /// reader runs up to 4 MiB ahead of the caller ([`Supervisor::next_output`](super::Supervisor::next_output)): the hook
    /// may see a line well before the caller gets its batch ([`LineInfo::index`] matches the
    /// two). It should be quick: while it runs, stdout is not read. A hook that panics is
    /// caught (the line and the output are not affected), counted in [`Report::hook_panics`](super::Report::hook_panics),
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
