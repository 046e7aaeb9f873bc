//! One finished supervised run, as `run` keeps it: the supervisor's record of it
//! ([`RunRecord`]: the policy's facts, the ladder's stage, the exit, the lines), what `run`
//! itself did to it ([`Ours`]: an output error, a forwarded signal, a continuation that ran
//! another session), and what follows from the two (the exit code, decided once; the summary,
//! the closing line).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::Value;
use watchdog_core::{Outcome, RunRecord};

use super::config::{emits_result, program_name, Mode, RunConfig};
use super::host_signals::UserSig;
use super::stdout;
use super::summary::Summary;
use crate::exit_code::{self, Ending, StoppedBy};
use crate::run_report::{RecoveryResult, RunReport};
use crate::verdict::ms;
use watchdog_core::ending::{HostStops, OutputStop};

/// What `run` itself did to a run, beside the watchdog's kill (which is the record's).
#[derive(Debug, Default)]
pub(crate) struct Ours {
    /// Our stdout could not be written: we stopped the child, unless the watchdog's kill was
    /// said first (`kill_said`).
    pub(crate) output_error: Option<stdout::WriteError>,
    /// The watchdog's kill was said live, before any output error (a kill that comes after
    /// one is not said).
    pub(crate) kill_said: bool,
    /// The user's signal we forwarded, if one came.
    pub(crate) interrupted: Option<UserSig>,
    /// The `system/init` session id when it differed from the one expected (a continuation
    /// that ran another session: we stopped it).
    pub(crate) session_mismatch: Option<String>,
}

/// One finished supervised run.
pub(crate) struct Finished {
    /// How it ended: the supervisor's record.
    pub(crate) record: RunRecord,
    /// What we did to it.
    pub(crate) ours: Ours,
    /// Our exit code for this run ([`exit_code::decide`] of who stopped it), decided once.
    pub(crate) code: i32,
    /// What `run` saw of it: the command line, the times, stderr, the events.
    pub(crate) facts: RunFacts,
}

/// What `run` itself saw of a run, beside its record and what it did to it.
pub(crate) struct RunFacts {
    /// The command line.
    pub(crate) argv: Vec<OsString>,
    /// From spawn to the end.
    pub(crate) duration: Duration,
    /// Stderr lines seen and suppressed.
    pub(super) stderr: (u64, u64),
    /// Suppressed repeats per warning code.
    pub(super) suppressed: Value,
    /// The events, as JSON (bounded: see [`EventLog`](crate::event_log::EventLog)).
    pub(super) events: crate::event_log::EventLog<Value>,
    /// The spawn instant.
    pub(super) start: Instant,
    /// When it ended, epoch ms.
    pub(crate) ended_wall_ms: u64,
    /// Descendants still running when the child exited by itself, then stopped.
    pub(super) leftovers_killed: usize,
    /// How long the child's output waited for our stdout (a slow reader downstream).
    pub(super) blocked_on_output: Duration,
    /// Bytes of its output read but never delivered to our stdout.
    pub(super) output_dropped: u64,
    /// From spawn to the first stdout line, if one came.
    pub(super) first_line: Option<Duration>,
    /// How long after its deadline the kill reached us, if there was one.
    pub(super) kill_late: Option<Duration>,
    /// The kernel facilities the host refused (each a guarantee that did not hold).
    pub(super) unavailable: Vec<agent_sdk_watchdog::Facility>,
    /// What the summary may say of the command line.
    pub(super) command_lines: crate::tree_report::CommandLines,
}

impl Finished {
    /// The finished run, its exit code decided under `cfg`.
    pub(super) fn new(record: RunRecord, ours: Ours, facts: RunFacts, cfg: &RunConfig) -> Self {
        let code = exit_code::decide(&Ending {
            record: &record,
            stopped: stopped_by(&record, &ours),
            strict: cfg.strict,
            emit_result: emits_result(cfg),
        });
        Finished {
            record,
            ours,
            code,
            facts,
        }
    }

    /// Who stopped the run: the one answer the exit code, the closing line, the synthetic
    /// `result`, the summary and telemetry read.
    pub(crate) fn stopped_by(&self) -> StoppedBy<'_> {
        stopped_by(&self.record, &self.ours)
    }

    /// The run as its observers read it, with the exit code `exit_code` and what recovery did
    /// after it.
    pub(crate) fn report<'a>(
        &'a self,
        exit_code: i32,
        recovery: Option<&'a RecoveryResult>,
    ) -> RunReport<'a> {
        RunReport {
            record: &self.record,
            stopped: self.stopped_by(),
            exit_code,
            duration: self.facts.duration,
            start: self.facts.start,
            kill_late: self.facts.kill_late,
            recovery,
        }
    }

    /// The child's status: its code, or `128 + N` for signal N.
    fn child_status(&self) -> Option<i32> {
        self.record.exit?.status()
    }

    /// The one line that says how a run that ended by itself without success ended, naming
    /// the child's code; `None` for a success, a kill (said already) or a forwarded signal, a
    /// plain-text run that exited 0 (the hint said what to add), and in `claude-watchdog`
    /// whenever the code is the child's own (it is as transparent as `claude`).
    pub(super) fn ending_message(&self, code: i32, mode: Mode) -> Option<String> {
        if !matches!(self.stopped_by(), StoppedBy::Child) {
            return None;
        }
        let own = Some(code) == self.child_status();
        let stream_json = self.record.lines.has_stream_json();
        if own && (mode == Mode::DropIn || (code == 0 && !stream_json)) {
            return None;
        }
        let what = program_name(&self.facts.argv);
        let status = match self.record.exit {
            Some(e) if e.code.is_some() => format!("exited with code {}", e.code.unwrap_or(0)),
            Some(e) if e.signal.is_some() => {
                format!("was ended by signal {}", e.signal.unwrap_or(0))
            }
            _ => "ended (its status could not be read)".to_string(),
        };
        let ours = if Some(code) != self.child_status() {
            format!("; exiting {code}")
        } else {
            String::new()
        };
        let no_stdout = self.record.lines.is_empty();
        match &self.record.outcome {
            Outcome::Success | Outcome::Killed { .. } => None,
            Outcome::NoResult if no_stdout => Some(format!(
                "{what} {status} before any result (no_result; it printed no stdout line){ours}"
            )),
            Outcome::NoResult if !stream_json => Some(format!(
                "{what} {status}; it printed no stream-json, so there is no result to check \
                 (no_result){ours}"
            )),
            Outcome::NoResult => Some(format!(
                "{what} {status} before any result (no_result){ours}"
            )),
            Outcome::Incomplete => Some(format!(
                "{what} {status} after a result that stopped mid-task (incomplete){ours}"
            )),
            Outcome::ErrorResult(r) => Some(format!(
                "{what} {status} after an error result ({}){ours}",
                [r.subtype.as_deref(), r.terminal_reason.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            other => Some(format!("{what} {status} ({}){ours}", other.as_str())),
        }
    }

    /// The summary of this run, with the process exit code `exit_code`.
    pub(super) fn summary(&self, exit_code: i32, recovery: Option<Value>) -> Value {
        Summary {
            argv: self.facts.command_lines.argv(
                &self
                    .facts
                    .argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            ),
            record: &self.record,
            stopped: self.stopped_by(),
            exit_code,
            duration_ms: ms(self.facts.duration),
            stderr: self.facts.stderr,
            suppressed: self.facts.suppressed.clone(),
            interrupted: self.ours.interrupted.map(UserSig::name),
            events: self.facts.events.to_vec(),
            base: self.facts.start,
            recovery,
            output_error: self.ours.output_error.as_ref().map(|e| {
                let kind = match e.failure {
                    stdout::Failure::Blocked => "output_blocked",
                    _ => "output",
                };
                (e.error.to_string(), e.closed(), kind, e.blocked_for.map(ms))
            }),
            output_dropped_bytes: self.facts.output_dropped,
            leftovers_killed: self.facts.leftovers_killed,
            blocked_on_output_ms: ms(self.facts.blocked_on_output),
            first_line_ms: self.facts.first_line.map(ms),
            kill_late_us: self.facts.kill_late.map(|d| d.as_micros() as u64),
            unavailable: &self.facts.unavailable,
        }
        .to_json()
    }
}

/// Who stopped the run `record` tells of, given what `run` did to it: the core's one
/// precedence ([`watchdog_core::ending::stopped_by`]).
fn stopped_by<'a>(record: &'a RunRecord, ours: &Ours) -> StoppedBy<'a> {
    let host = HostStops {
        output: ours.output_error.as_ref().map(|e| match e.failure {
            stdout::Failure::Blocked => OutputStop::Blocked,
            _ if e.closed() => OutputStop::Closed,
            _ => OutputStop::Error,
        }),
        kill_said: ours.kill_said,
        signal: ours.interrupted.map(|sig| sig.signal().number()),
        session_mismatch: ours.session_mismatch.is_some(),
    };
    watchdog_core::ending::stopped_by(record.kill.as_ref(), &host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use watchdog_core::{Kill, KillKind, Limits, Registry, SessionConfig};

    fn killed() -> RunRecord {
        let at = Instant::now();
        let id = Registry::new(Limits::default()).register(at, SessionConfig::default());
        let mut r = RunRecord::unobserved();
        r.kill = Some(Kill::new(id, KillKind::Idle, at));
        r
    }

    fn write_error(failure: stdout::Failure) -> Option<stdout::WriteError> {
        Some(stdout::WriteError {
            failure,
            error: std::io::Error::other("x"),
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
            output_error: write_error(stdout::Failure::Error),
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
            output_error: write_error(stdout::Failure::Blocked),
            ..Ours::default()
        };
        assert_eq!(kind(&none, &blocked), Some("output_blocked"));
        // The watchdog's kill wins over a forwarded signal, which wins over a mismatch.
        let sig = Ours {
            interrupted: Some(UserSig::Int),
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
