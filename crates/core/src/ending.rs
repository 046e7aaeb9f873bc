//! How a run ended, who stopped it, and what follows from that: the exit code of `run` and the
//! drop-in, the ending an SDK host reports (the Temporal helpers' typed errors), and whether a
//! retry is right. One precedence for every host, so they cannot disagree.
//!
//! **Who stopped it** ([`StoppedBy`], [`stopped_by`]): the first stop the host learnt of. A
//! host's failed write that comes once the watchdog's kill was said keeps the kill; a kill the
//! watchdog decides after the host's output failed is not the stop. The watchdog's kill wins
//! over a forwarded signal, which wins over a session mismatch.
//!
//! **How it ended** ([`RunEnd`]): the stop, else the outcome of the session's lines. A kill is
//! the ending even after a success `result` (a `linger` kill: the session stayed open after its
//! answer); a success `result` that stopped on `tool_use` is `incomplete`.
//!
//! **The exit code** ([`decide`]): the child's own status when it ended by itself, except that
//! a stream-json child that exits 0 without a usable `result` exits [`NO_RESULT`]; a kill exits
//! its kind's code ([`for_kill`]).
//!
//! **A retry** ([`RunEnd::retry`], [`failure`]): each ending's typed error for a host that
//! retries (Temporal's `ApplicationError` type) and whether a retry may run.

use crate::event::{Kill, KillKind, Outcome};
use crate::record::RunRecord;

/// Killed after going quiet: `idle`, `no_progress`, `linger`, `task_silent`, `wakeup_missed`
/// or `unanswered`.
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
/// Interrupted by SIGINT (forwarded to the child, which ended without a `result`).
pub const INTERRUPTED: i32 = 130;
/// Terminated by SIGTERM (forwarded to the child, which ended without a `result`).
pub const TERMINATED: i32 = 143;

/// The exit code for a watchdog kill of this kind.
pub fn for_kill(kind: KillKind) -> i32 {
    match kind {
        KillKind::Idle
        | KillKind::NoProgress
        | KillKind::Linger
        | KillKind::TaskSilent
        | KillKind::WakeupMissed
        | KillKind::Unanswered => KILLED_STALLED,
        KillKind::Startup => KILLED_STARTUP,
        KillKind::Ceiling => KILLED_CEILING,
        KillKind::OutputBlocked => KILLED_OUTPUT_BLOCKED,
        KillKind::Memory => KILLED_MEMORY,
    }
}

/// Who stopped a run: the one answer its exit code ([`decide`]), its closing line, its
/// synthetic `result`, its summary's `kill` and its telemetry all read, so they cannot
/// disagree. The first stop the host learnt of wins ([`stopped_by`]).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StoppedBy<'a> {
    /// Nobody: the child ended by itself.
    Child,
    /// The watchdog's kill.
    Watchdog(&'a Kill),
    /// The host's output could not be written, before any kill was said: it stopped the child.
    Output {
        /// The reader went away (EPIPE) rather than another write error.
        closed: bool,
    },
    /// The host's output accepted no byte for the output-blocked bound while output waited for
    /// it: the host stopped the child (or, after it ended by itself, dropped the rest of its
    /// output).
    OutputBlocked,
    /// The host forwarded the user's signal number `signo` (SIGHUP, SIGINT, SIGQUIT, SIGTERM)
    /// and the child ended after it.
    Signal(i32),
    /// A continuation ran another session than the one it resumed: the host stopped it.
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
    /// for the host's own stop; `None` when nothing was killed.
    pub fn kill_kind(&self) -> Option<&'static str> {
        match self {
            StoppedBy::Watchdog(k) => Some(k.kind.as_str()),
            StoppedBy::Output { .. } => Some("output"),
            StoppedBy::OutputBlocked => Some(KillKind::OutputBlocked.as_str()),
            _ => None,
        }
    }
}

/// How the host's own output failed, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStop {
    /// The reader went away (EPIPE).
    Closed,
    /// Another write error (ENOSPC, EIO, …).
    Error,
    /// The reader accepted no byte for the output-blocked bound while output waited for it.
    Blocked,
}

/// What the host itself did to a run, beside the watchdog's kill (which is the record's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostStops {
    /// The host's output failed, and how.
    pub output: Option<OutputStop>,
    /// The watchdog's kill was said before any output error (a kill that comes after one is
    /// not said).
    pub kill_said: bool,
    /// The user's signal the host forwarded, by number.
    pub signal: Option<i32>,
    /// A continuation ran another session than the one it resumed.
    pub session_mismatch: bool,
}

/// Who stopped the run whose watchdog kill is `kill`, given what the host did to it: the first
/// stop the host learnt of. The host's output error wins unless the watchdog's kill was said
/// before it; the watchdog's kill wins over a forwarded signal, which wins over a session
/// mismatch.
///
/// ```
/// use watchdog_core::ending::{stopped_by, HostStops, OutputStop, StoppedBy};
/// let signal = HostStops { signal: Some(2), session_mismatch: true, ..HostStops::default() };
/// assert!(matches!(stopped_by(None, &signal), StoppedBy::Signal(2)));
/// let closed = HostStops { output: Some(OutputStop::Closed), ..HostStops::default() };
/// assert!(matches!(stopped_by(None, &closed), StoppedBy::Output { closed: true }));
/// assert!(matches!(stopped_by(None, &HostStops::default()), StoppedBy::Child));
/// ```
pub fn stopped_by<'a>(kill: Option<&'a Kill>, host: &HostStops) -> StoppedBy<'a> {
    match (host.output, kill) {
        // A write that failed once the kill was said does not change who stopped the run.
        (Some(_), Some(kill)) if host.kill_said => StoppedBy::Watchdog(kill),
        (Some(OutputStop::Blocked), _) => StoppedBy::OutputBlocked,
        (Some(stop), _) => StoppedBy::Output {
            closed: stop == OutputStop::Closed,
        },
        (None, Some(kill)) => StoppedBy::Watchdog(kill),
        (None, None) => match (host.signal, host.session_mismatch) {
            (Some(signo), _) => StoppedBy::Signal(signo),
            (None, true) => StoppedBy::SessionMismatch,
            (None, false) => StoppedBy::Child,
        },
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
/// use watchdog_core::ending::{decide, Ending, StoppedBy};
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

/// How a run ended, as one name every host reports: the stop ([`StoppedBy`]), else the outcome
/// of the session's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunEnd {
    /// The last `result` was a success.
    Success,
    /// The last `result` was an error.
    ErrorResult,
    /// The stream ended without a `result`.
    NoResult,
    /// A success `result` that stopped on `tool_use`: it exited mid-task.
    Incomplete,
    /// The watchdog killed it.
    Killed(KillKind),
    /// The watchdog killed it, for a reason this build does not name (a newer drop-in's).
    KilledOther,
    /// The host's output failed (the reader went away, or another write error).
    Output,
    /// The host's output accepted no byte for the output-blocked bound while output waited.
    OutputBlocked,
    /// The host forwarded the user's signal `signo`, and the child ended without a `result`.
    Signal(i32),
}

impl RunEnd {
    /// How the run whose session's outcome is `outcome` ended, stopped by `stopped`: the
    /// watchdog's kill or the host's stop first (a kill after a success `result` is the kill),
    /// a forwarded signal only when no `result` came, else the outcome.
    ///
    /// ```
    /// use std::time::Instant;
    /// use watchdog_core::ending::{RunEnd, StoppedBy};
    /// use watchdog_core::{Kill, KillKind, Limits, Outcome, Registry, SessionConfig};
    /// let at = Instant::now();
    /// let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
    /// let linger = Kill::new(id, KillKind::Linger, at);
    /// let end = RunEnd::of(&Outcome::Success, StoppedBy::Watchdog(&linger));
    /// assert_eq!(end, RunEnd::Killed(KillKind::Linger));
    /// assert_eq!(end.name(), "linger");
    /// assert_eq!(RunEnd::of(&Outcome::Incomplete, StoppedBy::Child).name(), "incomplete");
    /// assert_eq!(RunEnd::of(&Outcome::Success, StoppedBy::Signal(2)), RunEnd::Success);
    /// ```
    pub fn of(outcome: &Outcome, stopped: StoppedBy<'_>) -> RunEnd {
        let has_result = matches!(outcome, Outcome::Success | Outcome::ErrorResult(_));
        match stopped {
            StoppedBy::Watchdog(kill) => return RunEnd::Killed(kill.kind),
            StoppedBy::Output { .. } => return RunEnd::Output,
            StoppedBy::OutputBlocked => return RunEnd::OutputBlocked,
            StoppedBy::Signal(signo) if !has_result => return RunEnd::Signal(signo),
            StoppedBy::Signal(_) | StoppedBy::SessionMismatch | StoppedBy::Child => {}
        }
        match outcome {
            Outcome::Success => RunEnd::Success,
            Outcome::ErrorResult(_) => RunEnd::ErrorResult,
            Outcome::NoResult => RunEnd::NoResult,
            Outcome::Incomplete => RunEnd::Incomplete,
            Outcome::Killed { kind } => RunEnd::Killed(*kind),
        }
    }

    /// Snake-case name: `success`, `error_result`, `no_result`, `incomplete`, the kill's kind
    /// (`idle`, `linger`, …; `kill` for one this build does not name), `output`,
    /// `output_blocked`, `signal`.
    pub fn name(self) -> &'static str {
        match self {
            RunEnd::Success => "success",
            RunEnd::ErrorResult => "error_result",
            RunEnd::NoResult => "no_result",
            RunEnd::Incomplete => "incomplete",
            RunEnd::Killed(kind) => kind.as_str(),
            RunEnd::KilledOther => "kill",
            RunEnd::Output => "output",
            RunEnd::OutputBlocked => "output_blocked",
            RunEnd::Signal(_) => "signal",
        }
    }

    /// Whether the run did its work: a success `result`, stopped by nobody.
    pub fn is_success(self) -> bool {
        self == RunEnd::Success
    }

    /// The typed error a retrying host raises for this ending, and whether a retry may run
    /// ([`failure`] of [`RunEnd::name`]); `None` for a success.
    pub fn retry(self) -> Option<Failure> {
        (!self.is_success()).then(|| failure(self.name()))
    }
}

/// The typed error of an ending for a host that retries (a Temporal `ApplicationError`'s
/// `type`), and whether a retry may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Failure {
    /// The error's type, e.g. `WatchdogIdle`.
    pub error_type: &'static str,
    /// Whether a retry may run (Temporal: not `non_retryable`).
    pub retryable: bool,
}

/// Every named ending of a retrying host: its name ([`RunEnd::name`], or one of the host's
/// own before the session runs: `refused`, a continuation refused because the session was
/// continued already; `ledger`, the ledger that keeps that marker cannot be reached), its
/// error type, and whether a retry may run.
///
/// Retried: a stall (`idle`, `no_progress`, `linger`, `task_silent`: the retry continues the
/// session once), a session that never started (`startup`), the host's output (`output`), a
/// ledger that cannot be reached, a session that ended without a usable `result`
/// (`no_result`, `incomplete`). Never retried: the `ceiling` (the budget is spent), a wakeup
/// that never fired or a host request never answered (`wakeup_missed`, `unanswered`: a
/// continuation brings neither back, as `run --resume-after-kill` says), an error `result` of
/// Claude Code's own, a refused continuation. Any other kill is retried, as a stall is
/// ([`failure`]).
pub const FAILURES: [(&str, Failure); 14] = [
    ("idle", Failure::retried("WatchdogIdle")),
    ("no_progress", Failure::retried("WatchdogNoProgress")),
    ("startup", Failure::retried("WatchdogStartup")),
    ("output", Failure::retried("WatchdogOutput")),
    ("linger", Failure::retried("WatchdogLinger")),
    ("task_silent", Failure::retried("WatchdogTaskSilent")),
    ("wakeup_missed", Failure::final_("WatchdogWakeupMissed")),
    ("unanswered", Failure::final_("WatchdogUnanswered")),
    ("ceiling", Failure::final_("WatchdogCeiling")),
    ("error_result", Failure::final_("ClaudeErrorResult")),
    ("refused", Failure::final_("ContinuationRefused")),
    ("ledger", Failure::retried("LedgerUnavailable")),
    ("no_result", Failure::retried("ClaudeNoResult")),
    ("incomplete", Failure::retried("ClaudeIncomplete")),
];

impl Failure {
    const fn retried(error_type: &'static str) -> Failure {
        Failure {
            error_type,
            retryable: true,
        }
    }

    const fn final_(error_type: &'static str) -> Failure {
        Failure {
            error_type,
            retryable: false,
        }
    }
}

/// The failure of the ending named `name` ([`FAILURES`]); any other name is a kill this table
/// does not name (`output_blocked`, `memory`, a newer drop-in's): `WatchdogKill`, retried.
///
/// ```
/// use watchdog_core::ending::failure;
/// assert_eq!(failure("ceiling").error_type, "WatchdogCeiling");
/// assert!(!failure("ceiling").retryable);
/// assert_eq!(failure("somethingnew").error_type, "WatchdogKill");
/// assert!(failure("somethingnew").retryable);
/// ```
pub fn failure(name: &str) -> Failure {
    FAILURES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(Failure::retried("WatchdogKill"), |(_, f)| *f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ChildExit;
    use crate::{Limits, LineKind, Registry, SessionConfig};
    use std::time::Instant;

    fn kill(kind: KillKind) -> Kill {
        let at = Instant::now();
        let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
        Kill::new(id, kind, at)
    }

    /// A record: `outcome`, the child's status (a code, or 128 + N for signal N), stream-json
    /// printed or not, the watchdog's kill of `kill` kind if any.
    fn record(
        outcome: &Outcome,
        child: Option<i32>,
        stream_json: bool,
        k: Option<KillKind>,
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
        r.kill = k.map(kill);
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
        assert_eq!(for_kill(KillKind::OutputBlocked), 75);
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

    /// The first stop the host learnt of wins: named once, for every reader.
    #[test]
    fn the_first_stop_the_host_learnt_of_is_the_stop() {
        let k = kill(KillKind::Idle);
        let kind = |kill: Option<&Kill>, host: &HostStops| stopped_by(kill, host).kill_kind();
        // A write that failed once the kill was said keeps the kill.
        let after = HostStops {
            output: Some(OutputStop::Error),
            kill_said: true,
            ..HostStops::default()
        };
        assert_eq!(kind(Some(&k), &after), Some("idle"));
        // A kill decided after the host's output failed (never said) is not the stop.
        let before = HostStops {
            kill_said: false,
            ..after
        };
        assert_eq!(kind(Some(&k), &before), Some("output"));
        let blocked = HostStops {
            output: Some(OutputStop::Blocked),
            ..HostStops::default()
        };
        assert_eq!(kind(None, &blocked), Some("output_blocked"));
        // The watchdog's kill wins over a forwarded signal, which wins over a mismatch.
        let sig = HostStops {
            signal: Some(2),
            session_mismatch: true,
            ..HostStops::default()
        };
        assert!(matches!(stopped_by(Some(&k), &sig), StoppedBy::Watchdog(_)));
        assert!(matches!(stopped_by(None, &sig), StoppedBy::Signal(2)));
        let mismatch = HostStops {
            session_mismatch: true,
            ..HostStops::default()
        };
        assert!(matches!(
            stopped_by(None, &mismatch),
            StoppedBy::SessionMismatch
        ));
    }

    /// The ending and the exit code read the same stop: a kill is the ending (and its code)
    /// whatever the outcome, a result the child reached after a signal is its own.
    #[test]
    fn the_ending_follows_the_exit_codes_precedence() {
        let err = Outcome::ErrorResult(Box::default());
        let outcomes = [
            Outcome::Success,
            err,
            Outcome::NoResult,
            Outcome::Incomplete,
        ];
        for outcome in &outcomes {
            for kind in KillKind::ALL {
                let r = record(outcome, Some(143), true, Some(kind));
                let e = ending(&r);
                assert_eq!(RunEnd::of(outcome, e.stopped), RunEnd::Killed(kind));
                assert_eq!(decide(&e), for_kill(kind));
                assert!(RunEnd::Killed(kind).retry().is_some());
            }
            // The status Claude Code exits with after each: 1 after an error result.
            let status = if matches!(outcome, Outcome::ErrorResult(_)) {
                1
            } else {
                0
            };
            let r = record(outcome, Some(status), true, None);
            let end = RunEnd::of(outcome, StoppedBy::Child);
            // Exit 0 and a success name agree; exit 3 is `no_result` or `incomplete`.
            match decide(&ending(&r)) {
                0 => assert_eq!(end, RunEnd::Success),
                3 => assert!(matches!(end, RunEnd::NoResult | RunEnd::Incomplete)),
                _ => assert_eq!(end, RunEnd::ErrorResult),
            }
            let signalled = RunEnd::of(outcome, StoppedBy::Signal(15));
            let with_result = matches!(outcome, Outcome::Success | Outcome::ErrorResult(_));
            assert_eq!(signalled == RunEnd::Signal(15), !with_result, "{outcome:?}");
        }
    }

    #[test]
    fn every_ending_but_success_has_a_failure_and_a_ceiling_is_never_retried() {
        assert_eq!(RunEnd::Success.retry(), None);
        let linger = RunEnd::Killed(KillKind::Linger).retry().unwrap();
        assert_eq!(
            (linger.error_type, linger.retryable),
            ("WatchdogLinger", true)
        );
        let ceiling = RunEnd::Killed(KillKind::Ceiling).retry().unwrap();
        assert_eq!(
            (ceiling.error_type, ceiling.retryable),
            ("WatchdogCeiling", false)
        );
        let incomplete = RunEnd::Incomplete.retry().unwrap();
        assert_eq!(incomplete.error_type, "ClaudeIncomplete");
        assert_eq!(
            RunEnd::KilledOther.retry().unwrap().error_type,
            "WatchdogKill"
        );
        let names: Vec<&str> = FAILURES.iter().map(|(n, _)| *n).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n} twice");
        }
    }
}
