//! Exit codes of `agent-watchdog run` and `claude-watchdog`: the contract a script branches on.
//!
//! The rule: **when the child ended by itself** (we did not kill it, forward a signal to it, or
//! stop it because its output could not be delivered), **we exit with the child's own status**
//! (its code, or `128 + N` when signal N ended it), like `timeout(1)`, `tini` and systemd.
//! The one exception: a child that printed stream-json and exits 0 without any `result`, or
//! with a success `result` that stopped mid-task, claims a success it did not reach; that exits
//! 3 ([`NO_RESULT`]). `--strict` makes every ending without a usable `result` exit 3.
//!
//! | code | meaning |
//! |---|---|
//! | the child's own | the child ended by itself (with or without a `result`) |
//! | 3 | the child exited 0 after printing stream-json, but without a `result` (`no_result`) or mid-task (`incomplete`); with `--strict`, any ending without a usable `result` |
//! | 124 | killed by the watchdog: `idle`, `no_progress`, `linger`, `task_silent`, `wakeup_missed` or `unanswered` |
//! | 125 | killed by the watchdog: `startup` (no stdout line at all) |
//! | 137 | killed by the watchdog: `ceiling` |
//! | 75 | killed by the watchdog: `output_blocked` (our stdout accepted no byte for `--output-blocked` while output waited for it), or after the command ended our stdout took no byte for that long and its last output was dropped |
//! | 71 | killed by the watchdog: `memory` (the process tree's memory stayed above `--max-rss`) |
//! | 141 | our stdout reader went away (EPIPE): the child was stopped; `replay` / `audit` end quietly |
//! | 74 | our stdout could not be written (ENOSPC, EIO, …): the child was stopped |
//! | 129 / 130 / 131 / 143 | we got SIGHUP / SIGINT / SIGQUIT / SIGTERM, forwarded it, and the child ended without a `result` |
//! | 2 | usage error (bad flag or value) |
//! | 1 | internal error (spawn failed, a file could not be written, a continuation ran another session); with `--emit-result` (always for `claude-watchdog`), any watchdog kill |
//!
//! Who stopped the run is one answer ([`StoppedBy`]): the first stop `run` learnt of. A write
//! that fails once a kill was said keeps the kill's code (and the summary's `kill`); a kill the
//! watchdog decides after our stdout failed is not the stop.
//!
//! A child may itself exit with one of our codes (124, 125, 137, 2, 3…). The summary's `kill`
//! field (`null` when the watchdog did not stop the child) and `interrupted` field (`null` when
//! no signal of ours was forwarded) tell them apart: when both are `null`, the exit code is
//! the child's own.
//!
//! The codes, who stopped a run and the decision itself are the core's
//! ([`watchdog_core::ending`]: the same precedence the SDK helpers report their endings by);
//! this module re-exports them beside the messages only the command line prints.

pub use watchdog_core::ending::{
    decide, for_kill, Ending, StoppedBy, INTERNAL, INTERRUPTED, KILLED_CEILING, KILLED_MEMORY,
    KILLED_OUTPUT_BLOCKED, KILLED_STALLED, KILLED_STARTUP, NO_RESULT, OUTPUT_CLOSED, OUTPUT_ERROR,
    TERMINATED, USAGE,
};

/// The exit code of `replay` or `audit` after a failed write of `what` to stdout: a closed
/// reader (`… | head`) ends quietly with [`OUTPUT_CLOSED`]; any other error is said once and
/// exits [`OUTPUT_ERROR`], as for `run`.
pub fn output_error(e: &std::io::Error, what: &str) -> i32 {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        OUTPUT_CLOSED
    } else {
        eprintln!("agent-watchdog: cannot write {what}: {e}");
        OUTPUT_ERROR
    }
}
/// What recovery did after the first run, as far as the exit code cares ([`after_recovery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryEnd {
    /// Nothing was continued (recovery off, or it decided not to).
    NotContinued,
    /// Recovery ended the chain itself with this code: a wait the user interrupted, or a
    /// continuation that could not start.
    Aborted(i32),
    /// The session was continued: that run's own code, and whether it ran another session
    /// than the one continued (then it was stopped, and the work was not continued).
    Continued {
        /// The continued run's exit code ([`decide`]).
        code: i32,
        /// It ran another session.
        other_session: bool,
    },
}

/// The process's exit code after recovery: the first run's, unless recovery acted; then the
/// last run's, and 1 when the continuation turned out to run another session.
///
/// ```
/// use agent_watchdog::exit_code::{after_recovery, RecoveryEnd};
/// assert_eq!(after_recovery(3, RecoveryEnd::NotContinued), 3);
/// assert_eq!(after_recovery(3, RecoveryEnd::Aborted(130)), 130);
/// let continued = |code, other_session| RecoveryEnd::Continued { code, other_session };
/// assert_eq!(after_recovery(3, continued(0, false)), 0);
/// assert_eq!(after_recovery(3, continued(0, true)), 1);
/// ```
pub fn after_recovery(first: i32, end: RecoveryEnd) -> i32 {
    match end {
        RecoveryEnd::NotContinued => first,
        RecoveryEnd::Aborted(code) => code,
        RecoveryEnd::Continued {
            other_session: true,
            ..
        } => INTERNAL,
        RecoveryEnd::Continued { code, .. } => code,
    }
}

/// Print a policy error the way clap prints a bad flag, and return the usage exit code.
pub fn config_error(e: &watchdog_core::ConfigError) -> i32 {
    eprintln!(
        "agent-watchdog: invalid value '{}' for '--{}': must be {}",
        e.value,
        e.option.replace('_', "-"),
        e.allowed
    );
    USAGE
}

/// A usage error as clap renders it, made to start with one line that says what is wrong,
/// prefixed `agent-watchdog:` like every message of ours; the usage hint follows.
///
/// ```
/// let text = "error: invalid value '0s' for '--idle <DURATION>': must be > 0\n\nUsage: x\n";
/// let out = agent_watchdog::exit_code::usage_error_text(text);
/// assert_eq!(out.lines().next(), Some("agent-watchdog: invalid value '0s' for '--idle <DURATION>': must be > 0"));
/// ```
pub fn usage_error_text(rendered: &str) -> String {
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or("usage error");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let mut out = format!("agent-watchdog: {first}\n");
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The exit-code table, for `--help`.
pub const HELP: &str = "\
Exit codes:
  <child's code>   the command ended by itself (no kill, no forwarded signal): its own status
                   (128+N if signal N ended it), with or without a `result`
  3                it printed stream-json and exited 0 without a `result` (no_result) or
                   mid-task (incomplete); with --strict: any ending without a usable `result`
  124              killed: idle, no_progress, linger, task_silent, wakeup_missed or
                   unanswered
  125              killed: startup (no stdout line at all)
  137              killed: ceiling (total age)
  75               killed: output_blocked (our stdout accepted no byte for --output-blocked
                   while output waited); or the command ended and it took none for that long
  71               killed: memory (the process tree's memory stayed above --max-rss)
  141 / 74         our stdout reader went away (EPIPE) / stdout not writable (ENOSPC, EIO...):
                   the command was stopped
  129/130/131/143  we got SIGHUP/SIGINT/SIGQUIT/SIGTERM, forwarded it, and the command ended
                   without a `result`
  2                usage error (bad flag or value)
  1                internal error; with --emit-result, any kill (after the synthetic result)
The summary's `kill` and `interrupted` fields are null when the code is the command's own.";
