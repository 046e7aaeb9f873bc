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
//! | 124 | killed by the watchdog: `idle`, `no_progress` or `linger` |
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

use watchdog_core::{Kill, KillKind, Outcome, RunRecord};

/// Killed after going quiet: `idle`, `no_progress` or `linger`.
pub const KILLED_STALLED: i32 = 124;
/// Killed because the child printed no stdout line at all: `startup`.
pub const KILLED_STARTUP: i32 = 125;
/// Killed at the total-age ceiling: `ceiling`.
pub const KILLED_CEILING: i32 = 137;
/// Stopped because our stdout accepted no byte for the output-blocked bound: `output_blocked`
/// (`EX_TEMPFAIL`: the reader, not the command, stopped).
pub const KILLED_OUTPUT_BLOCKED: i32 = 75;
/// Killed by the memory guard: `memory` (`EX_OSERR`: a system resource ran out).
pub const KILLED_MEMORY: i32 = 71;
/// A stream-json child exited 0 without a `result` (`no_result`) or mid-task (`incomplete`).
pub const NO_RESULT: i32 = 3;
/// Usage error: a bad flag or value.
pub const USAGE: i32 = 2;
/// Internal error.
pub const INTERNAL: i32 = 1;
/// Our stdout reader went away (EPIPE), as a shell reports a process ended by SIGPIPE.
pub const OUTPUT_CLOSED: i32 = 141;
/// Our stdout could not be written for another reason (`EX_IOERR`).
pub const OUTPUT_ERROR: i32 = 74;

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
/// Interrupted by SIGINT (forwarded to the child, which ended without a `result`).
pub const INTERRUPTED: i32 = 130;
/// Terminated by SIGTERM (forwarded to the child, which ended without a `result`).
pub const TERMINATED: i32 = 143;

/// The exit code for a watchdog kill of this kind.
pub fn for_kill(kind: KillKind) -> i32 {
    match kind {
        KillKind::Idle | KillKind::NoProgress | KillKind::Linger => KILLED_STALLED,
        KillKind::Startup => KILLED_STARTUP,
        KillKind::Ceiling => KILLED_CEILING,
        KillKind::OutputBlocked => KILLED_OUTPUT_BLOCKED,
        KillKind::Memory => KILLED_MEMORY,
        // A kind this build does not know: the code of a watchdog kill after going quiet.
        _ => KILLED_STALLED,
    }
}

/// Who stopped a run: the one answer its exit code ([`decide`]), its closing line, its
/// synthetic `result`, its summary's `kill` and its telemetry all read, so they cannot
/// disagree. The first stop `run` learnt of wins: a write that fails once the watchdog's kill
/// was said leaves the kill the stop (the output error is a fact beside it); a kill the
/// watchdog decides after our stdout failed is not said and is not the stop.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StoppedBy<'a> {
    /// Nobody: the child ended by itself.
    Child,
    /// The watchdog's kill.
    Watchdog(&'a Kill),
    /// Our stdout could not be written, before any kill was said: we stopped the child.
    Output {
        /// The reader went away (EPIPE) rather than another write error.
        closed: bool,
    },
    /// Our stdout accepted no byte for the output-blocked bound while output waited for it:
    /// we stopped the child (or, after it ended by itself, dropped the rest of its output).
    OutputBlocked,
    /// We forwarded the user's signal number `signo` (SIGHUP, SIGINT, SIGQUIT, SIGTERM) and
    /// the child ended after it.
    Signal(i32),
    /// A continuation ran another session than the one it resumed: we stopped it.
    SessionMismatch,
}

impl<'a> StoppedBy<'a> {
    /// The watchdog's kill, when it is the stop.
    pub fn kill(&self) -> Option<&'a Kill> {
        match self {
            StoppedBy::Watchdog(k) => Some(k),
            _ => None,
        }
    }

    /// The summary's `kill.kind` for this stop: the kill's kind, `output` or `output_blocked`
    /// for our own stop; `None` when nothing was killed.
    pub fn kill_kind(&self) -> Option<&'static str> {
        match self {
            StoppedBy::Watchdog(k) => Some(k.kind.as_str()),
            StoppedBy::Output { .. } => Some("output"),
            StoppedBy::OutputBlocked => Some(KillKind::OutputBlocked.as_str()),
            _ => None,
        }
    }
}

/// Everything the exit code depends on: the run's record and who stopped it.
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// How the run ended: its outcome, the child's exit, the lines it printed (a stream-json
    /// child is held to its `result`).
    pub record: &'a RunRecord,
    /// Who stopped the run.
    pub stopped: StoppedBy<'a>,
    /// `--strict`: every ending without a usable `result` exits [`NO_RESULT`].
    pub strict: bool,
    /// `--emit-result` (always for `claude-watchdog`): a kill exits 1, after the synthetic
    /// `result`, like the real CLI after an error result.
    pub emit_result: bool,
}

/// The exit code of a run: the one place it is decided.
///
/// ```
/// use agent_watchdog::exit_code::{decide, Ending, StoppedBy};
/// use watchdog_core::{ChildExit, LineKind, Outcome, RunRecord};
/// let ended = |outcome, code| {
///     let mut r = RunRecord::unobserved();
///     r.outcome = outcome;
///     r.exit = Some(ChildExit { code: Some(code), signal: None });
///     r.lines.add(LineKind::System); // it printed stream-json
///     r
/// };
/// let decide_for = |r: &RunRecord| {
///     decide(&Ending { record: r, stopped: StoppedBy::Child, strict: false, emit_result: false })
/// };
/// // The child ended by itself: its own code, with or without a result.
/// assert_eq!(decide_for(&ended(Outcome::Success, 0)), 0);
/// assert_eq!(decide_for(&ended(Outcome::NoResult, 7)), 7);
/// // A stream-json child that exits 0 without a result claims a success it did not reach.
/// assert_eq!(decide_for(&ended(Outcome::NoResult, 0)), 3);
/// ```
///
/// A kill is the record's: the watchdog's kill exits with its kind's code (124 for `idle`).
pub fn decide(e: &Ending<'_>) -> i32 {
    let r = e.record;
    let has_result = matches!(r.outcome, Outcome::Success | Outcome::ErrorResult(_));
    match e.stopped {
        StoppedBy::Output { closed: true } => return OUTPUT_CLOSED,
        StoppedBy::Output { closed: false } => return OUTPUT_ERROR,
        StoppedBy::OutputBlocked => return KILLED_OUTPUT_BLOCKED,
        StoppedBy::Watchdog(_) if e.emit_result => return INTERNAL,
        StoppedBy::Watchdog(kill) => return for_kill(kill.kind),
        // With a result the child finished its work: its own code.
        StoppedBy::Signal(signo) if !has_result => return 128 + signo,
        StoppedBy::Signal(_) | StoppedBy::SessionMismatch | StoppedBy::Child => {}
    }
    let Some(child) = r.exit.and_then(|x| x.status()) else {
        return INTERNAL;
    };
    match r.outcome {
        Outcome::NoResult | Outcome::Incomplete if e.strict => NO_RESULT,
        Outcome::NoResult | Outcome::Incomplete if child == 0 && r.lines.has_stream_json() => {
            NO_RESULT
        }
        _ => child,
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
  124              killed: idle, no_progress or linger
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use watchdog_core::{ChildExit, Kill, Limits, LineKind, Registry, SessionConfig};

    /// A record: `outcome`, the child's status (a code, or 128 + N for signal N), stream-json
    /// printed or not, the watchdog's kill of `kill` kind if any.
    fn record(
        outcome: &Outcome,
        child: Option<i32>,
        stream_json: bool,
        kill: Option<KillKind>,
    ) -> RunRecord {
        let mut r = RunRecord::unobserved();
        r.outcome = outcome.clone();
        r.exit = child.map(|c| match c {
            129..=159 => ChildExit {
                code: None,
                signal: Some(c - 128),
            },
            c => ChildExit {
                code: Some(c),
                signal: None,
            },
        });
        r.lines.add(if stream_json {
            LineKind::System
        } else {
            LineKind::Unparseable
        });
        r.kill = kill.map(|kind| {
            let at = Instant::now();
            let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
            Kill::new(id, kind, at)
        });
        r
    }

    fn ending(r: &RunRecord) -> Ending<'_> {
        Ending {
            record: r,
            stopped: r
                .kill
                .as_ref()
                .map_or(StoppedBy::Child, StoppedBy::Watchdog),
            strict: false,
            emit_result: false,
        }
    }

    fn plain(outcome: &Outcome, child: Option<i32>) -> i32 {
        decide(&ending(&record(outcome, child, true, None)))
    }

    #[test]
    fn kills_map_to_their_codes() {
        assert_eq!(for_kill(KillKind::Idle), 124);
        assert_eq!(for_kill(KillKind::NoProgress), 124);
        assert_eq!(for_kill(KillKind::Linger), 124);
        assert_eq!(for_kill(KillKind::Startup), 125);
        assert_eq!(for_kill(KillKind::Ceiling), 137);
        assert_eq!(for_kill(KillKind::Memory), 71);
    }

    #[test]
    fn a_child_that_ended_by_itself_keeps_its_code() {
        let err = Outcome::ErrorResult(Box::default());
        assert_eq!(plain(&Outcome::Success, Some(0)), 0);
        assert_eq!(plain(&Outcome::Success, Some(5)), 5);
        assert_eq!(plain(&err, Some(1)), 1);
        assert_eq!(plain(&Outcome::NoResult, Some(1)), 1);
        assert_eq!(plain(&Outcome::NoResult, Some(137)), 137);
        assert_eq!(plain(&Outcome::Incomplete, Some(2)), 2);
        // Text mode: no stream-json, exit 0 is a success.
        let text = record(&Outcome::NoResult, Some(0), false, None);
        assert_eq!(decide(&ending(&text)), 0);
        // Unknown status: internal error.
        assert_eq!(plain(&Outcome::Success, None), INTERNAL);
    }

    #[test]
    fn exit_zero_without_a_result_is_not_a_success() {
        assert_eq!(plain(&Outcome::NoResult, Some(0)), 3);
        assert_eq!(plain(&Outcome::Incomplete, Some(0)), 3);
    }

    #[test]
    fn strict_maps_every_ending_without_a_result_to_3() {
        for outcome in [Outcome::NoResult, Outcome::Incomplete] {
            for (child, stream_json) in [(Some(0), false), (Some(1), true), (Some(137), true)] {
                let r = record(&outcome, child, stream_json, None);
                let e = Ending {
                    strict: true,
                    ..ending(&r)
                };
                assert_eq!(decide(&e), 3, "{outcome:?} {child:?}");
            }
        }
        let ok = record(&Outcome::Success, Some(0), true, None);
        let e = Ending {
            strict: true,
            ..ending(&ok)
        };
        assert_eq!(decide(&e), 0);
    }

    #[test]
    fn each_stop_has_its_code() {
        let killed = Outcome::Killed {
            kind: KillKind::Startup,
        };
        let r = record(&killed, Some(143), true, Some(KillKind::Startup));
        let kill = ending(&r);
        assert_eq!(decide(&kill), 125);
        assert_eq!(
            decide(&Ending {
                emit_result: true,
                ..kill
            }),
            1
        );
        for (closed, code) in [(true, 141), (false, 74)] {
            let r = record(&Outcome::Success, Some(0), true, None);
            let out = Ending {
                stopped: StoppedBy::Output { closed },
                ..ending(&r)
            };
            assert_eq!(decide(&out), code);
        }
        for signo in [1, 2, 3, 15] {
            let r = record(&Outcome::NoResult, Some(128 + 9), true, None);
            let sig = Ending {
                stopped: StoppedBy::Signal(signo),
                ..ending(&r)
            };
            assert_eq!(decide(&sig), 128 + signo);
            // With a result the child finished its work: its own code.
            let r = record(&Outcome::Success, Some(0), true, None);
            let done = Ending {
                stopped: StoppedBy::Signal(signo),
                ..ending(&r)
            };
            assert_eq!(decide(&done), 0);
        }
    }
}
