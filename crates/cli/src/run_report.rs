//! The typed end of `run`, the one value its observers read: each run's [`RunReport`] (the
//! supervisor's record, what `run` itself did to it, its exit code decided once, what `run`
//! measured) and the invocation's [`Report`] (the first run, what recovery did, the
//! continuation, the invocation's exit code). `run` builds them; the summary, telemetry,
//! recovery and the closing lines read them, each for its own output, and nothing reads an
//! output back.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use watchdog_core::ending::{HostStops, OutputStop};
use watchdog_core::facts::ClaudeSessionId;
use watchdog_core::recovery::Trigger;
use watchdog_core::RunRecord;

use crate::exit_code::{RecoveryEnd, StoppedBy};

/// How one invocation of `run` ended.
pub(crate) struct Report {
    /// The first run.
    pub(crate) first: RunReport,
    /// What recovery did after it (`run` with recovery only).
    pub(crate) recovery: Option<Recovered>,
    /// The continuation recovery ran, if it ran one.
    pub(crate) continuation: Option<RunReport>,
    /// How recovery ended the chain, as far as the exit code cares.
    pub(crate) end: RecoveryEnd,
    /// The invocation's exit code: the first run's, unless recovery acted
    /// ([`crate::exit_code::after_recovery`]).
    pub(crate) code: i32,
}

impl Report {
    /// The run whose end the invocation's end is: the continuation if one ran, else the first.
    pub(crate) fn last(&self) -> &RunReport {
        self.continuation.as_ref().unwrap_or(&self.first)
    }

    /// The runs, first to last.
    pub(crate) fn runs(&self) -> impl Iterator<Item = &RunReport> {
        std::iter::once(&self.first).chain(self.continuation.as_ref())
    }
}

/// What recovery did after the first run: its result, and why.
pub(crate) struct Recovered {
    /// What it did.
    #[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
    pub(crate) result: RecoveryResult,
    /// Why, as the summary's `recovery` object says it.
    pub(crate) summary: RecoverySummary,
}

/// The summary's `recovery` object: what recovery decided after the first run, and why.
/// `trigger`, `marker`, `continued_outcome` and `notice` are always there (`null` until known),
/// the others only when they apply.
#[derive(Debug, Default, Serialize)]
pub(crate) struct RecoverySummary {
    /// The trigger the session was continued for.
    pub(crate) trigger: Option<&'static str>,
    /// Where the claimed marker is.
    pub(crate) marker: Option<String>,
    /// The continuation's outcome.
    pub(crate) continued_outcome: Option<&'static str>,
    /// The single notice, when it was given now.
    pub(crate) notice: Option<NoticeSummary>,
    /// Why nothing was continued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: Option<String>,
    /// Why recovery could not go on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// The rate-limit reset waited for first, epoch ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) waited_until_ms: Option<u64>,
    /// The user's signal aborted that wait.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) aborted_wait: bool,
    /// How the continuation ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) continued: Option<ContinuedSummary>,
    /// Why nothing followed the continuation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) after_continuation: Option<String>,
}

/// How the continuation ended, in the summary's `recovery.continued`.
#[derive(Debug, Serialize)]
pub(crate) struct ContinuedSummary {
    /// Its outcome's details (`crate::verdict::outcome_fields`).
    pub(crate) outcome_detail: Value,
    /// Its own exit code.
    pub(crate) exit_code: i32,
    /// The kind of the kill that stopped it, if one did.
    pub(crate) kill: Option<&'static str>,
    /// The session it ran.
    pub(crate) session_id: Option<ClaudeSessionId>,
}

/// The single notice, in the summary's `recovery.notice`.
#[derive(Debug, Serialize)]
pub(crate) struct NoticeSummary {
    /// The session it is about.
    pub(crate) session_id: String,
    /// The trigger the session was continued for.
    pub(crate) trigger: &'static str,
    /// The trigger the continuation hit again.
    pub(crate) again: &'static str,
    /// How the first run ended.
    pub(crate) first: Value,
    /// How the continuation ended.
    pub(crate) continued: Value,
    /// What the user can do, each said for this session.
    pub(crate) options: Vec<String>,
    /// The notice as it was shown.
    pub(crate) text: String,
}

/// One finished supervised run.
pub(crate) struct RunReport {
    /// How it ended: the supervisor's record (the policy's facts, the ladder's stage, the exit,
    /// the lines).
    pub(crate) record: RunRecord,
    /// What `run` did to it.
    pub(crate) ours: Ours,
    /// Its exit code ([`crate::exit_code::decide`] of who stopped it), decided once.
    pub(crate) code: i32,
    /// What `run` saw of it: the command line, the times, stderr, the events.
    pub(crate) facts: RunFacts,
}

impl RunReport {
    /// Who stopped the run: the one answer the exit code, the closing line, the synthetic
    /// `result`, the summary and telemetry read.
    pub(crate) fn stopped_by(&self) -> StoppedBy<'_> {
        stopped_by(&self.record, &self.ours)
    }

    /// The Claude Code session id, when the run printed one.
    #[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.record.session_id.as_ref().map(|s| s.as_str())
    }
}

/// What `run` itself did to a run, beside the watchdog's kill (which is the record's).
#[derive(Debug, Default)]
pub(crate) struct Ours {
    /// Our stdout could not be written: we stopped the child, unless the watchdog's kill was
    /// said first (`kill_said`).
    pub(crate) output_error: Option<OutputError>,
    /// The watchdog's kill was said live, before any output error (a kill that comes after
    /// one is not said).
    pub(crate) kill_said: bool,
    /// The user's signal we forwarded, if one came.
    pub(crate) interrupted: Option<Interrupt>,
    /// The `system/init` session id when it differed from the one expected (a continuation
    /// that ran another session: we stopped it).
    pub(crate) session_mismatch: Option<String>,
}

/// How our stdout failed.
#[derive(Debug, Clone)]
pub(crate) struct OutputError {
    /// The kind of failure.
    pub(crate) stop: OutputStop,
    /// What the OS (or the bound) said.
    pub(crate) error: String,
    /// For [`OutputStop::Blocked`]: how long the reader took nothing, counted.
    pub(crate) blocked_for: Option<Duration>,
}

/// A signal of the user's that `run` forwarded to the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interrupt {
    /// Its name (`SIGINT`, `SIGTERM`, …).
    pub(crate) name: &'static str,
    /// Its number.
    pub(crate) signal: i32,
}

/// What `run` itself saw of a run, beside its record and what it did to it.
pub(crate) struct RunFacts {
    /// The command line.
    pub(crate) argv: Vec<OsString>,
    /// From spawn to the end.
    pub(crate) duration: Duration,
    /// Stderr lines seen and suppressed.
    pub(crate) stderr: (u64, u64),
    /// Suppressed repeats per warning code.
    pub(crate) suppressed: Value,
    /// The events, as JSON (bounded: see [`EventLog`](crate::event_log::EventLog)).
    pub(crate) events: crate::event_log::EventLog<Value>,
    /// The spawn instant: a kill's `at` counts from it.
    pub(crate) start: Instant,
    /// When it ended, epoch ms.
    pub(crate) ended_wall_ms: u64,
    /// Descendants still running when the child exited by itself, then stopped.
    pub(crate) leftovers_killed: usize,
    /// How long the child's output waited for our stdout (a slow reader downstream).
    pub(crate) blocked_on_output: Duration,
    /// Bytes of its output read but never delivered to our stdout.
    pub(crate) output_dropped: u64,
    /// From spawn to the first stdout line, if one came.
    pub(crate) first_line: Option<Duration>,
    /// How long after its deadline the kill reached us, if there was one.
    pub(crate) kill_late: Option<Duration>,
    /// The kernel facilities the host refused (each a guarantee that did not hold).
    pub(crate) unavailable: Vec<agent_sdk_watchdog::Facility>,
    /// What the summary may say of the command line.
    pub(crate) command_lines: crate::tree_report::CommandLines,
}

/// Who stopped the run `record` tells of, given what `run` did to it: the core's one
/// precedence ([`watchdog_core::ending::stopped_by`]).
pub(crate) fn stopped_by<'a>(record: &'a RunRecord, ours: &Ours) -> StoppedBy<'a> {
    let host = HostStops {
        output: ours.output_error.as_ref().map(|e| e.stop),
        kill_said: ours.kill_said,
        signal: ours.interrupted.map(|sig| sig.signal),
        session_mismatch: ours.session_mismatch.is_some(),
    };
    watchdog_core::ending::stopped_by(record.kill.as_ref(), &host)
}

/// What recovery did after a run. The trigger is known once the marker is claimed (a
/// continuation about to run); a notice or an error before that has none here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecoveryResult {
    /// Nothing to decide, or nothing done: no trigger, a trigger that is off, a skip, a notice
    /// given before.
    NotNeeded,
    /// The single notice was given instead of a continuation.
    Notice(Option<Trigger>),
    /// Recovery could not go on: no ledger, a marker that could not be claimed, a command
    /// line without its prompt, a continuation that could not start.
    Error(Option<Trigger>),
    /// The marker was claimed but nothing was continued: the user aborted the wait.
    NotContinued(Trigger),
    /// The session was continued once.
    Continued(Trigger),
}

#[cfg_attr(not(feature = "telemetry"), allow(dead_code))]
impl RecoveryResult {
    /// `(trigger, result)` as telemetry names them (`unknown` for a trigger not known here);
    /// `None` when recovery had nothing to decide.
    pub(crate) fn names(&self) -> Option<(&'static str, &'static str)> {
        let name = |t: &Option<Trigger>| (*t).map_or("unknown", Trigger::as_str);
        match self {
            RecoveryResult::NotNeeded => None,
            RecoveryResult::Notice(t) => Some((name(t), "notice")),
            RecoveryResult::Error(t) => Some((name(t), "error")),
            RecoveryResult::NotContinued(t) => Some((t.as_str(), "not_continued")),
            RecoveryResult::Continued(t) => Some((t.as_str(), "continued")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog_core::{Kill, KillKind, Limits, Registry, SessionConfig};

    #[test]
    fn recovery_results_are_named_only_when_recovery_had_something_to_decide() {
        let named = |r: RecoveryResult| r.names().map(|(t, r)| format!("{t}/{r}"));
        assert_eq!(named(RecoveryResult::NotNeeded), None);
        assert_eq!(
            named(RecoveryResult::Continued(Trigger::OutputLimit)).as_deref(),
            Some("output_limit/continued")
        );
        assert_eq!(
            named(RecoveryResult::NotContinued(Trigger::RateLimitWait)).as_deref(),
            Some("rate_limit_wait/not_continued")
        );
        assert_eq!(
            named(RecoveryResult::Notice(None)).as_deref(),
            Some("unknown/notice")
        );
        assert_eq!(
            named(RecoveryResult::Error(Some(Trigger::AfterKill))).as_deref(),
            Some("after_kill/error")
        );
    }

    fn killed() -> RunRecord {
        let at = Instant::now();
        let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
        let mut r = RunRecord::unobserved();
        r.kill = Some(Kill::new(id, KillKind::Idle, at));
        r
    }

    fn output_error(stop: OutputStop) -> Option<OutputError> {
        Some(OutputError {
            stop,
            error: "x".into(),
            blocked_for: None,
        })
    }

    /// The first stop `run` learnt of wins: named once, for every reader.
    #[test]
    fn the_first_stop_run_learnt_of_is_the_stop() {
        let kind = |r: &RunRecord, ours: &Ours| stopped_by(r, ours).kill_kind();
        let (kill, none) = (killed(), RunRecord::unobserved());
        // A write that failed once the kill was said keeps the kill.
        let after = Ours {
            output_error: output_error(OutputStop::Error),
            kill_said: true,
            ..Ours::default()
        };
        assert_eq!(kind(&kill, &after), Some("idle"));
        // A kill decided after our stdout failed (never said) is not the stop.
        let before = Ours {
            kill_said: false,
            ..after
        };
        assert_eq!(kind(&kill, &before), Some("output"));
        let blocked = Ours {
            output_error: output_error(OutputStop::Blocked),
            ..Ours::default()
        };
        assert_eq!(kind(&none, &blocked), Some("output_blocked"));
        // The watchdog's kill wins over a forwarded signal, which wins over a mismatch.
        let sig = Ours {
            interrupted: Some(Interrupt {
                name: "SIGINT",
                signal: 2,
            }),
            session_mismatch: Some("other".into()),
            ..Ours::default()
        };
        assert!(matches!(stopped_by(&kill, &sig), StoppedBy::Watchdog(_)));
        assert!(matches!(stopped_by(&none, &sig), StoppedBy::Signal(2)));
        let mismatch = Ours {
            session_mismatch: Some("other".into()),
            ..Ours::default()
        };
        assert!(matches!(
            stopped_by(&none, &mismatch),
            StoppedBy::SessionMismatch
        ));
        assert!(matches!(
            stopped_by(&none, &Ours::default()),
            StoppedBy::Child
        ));
    }
}
