//! One finished supervised run, as `run` keeps it: the policy's record, what `run` itself did
//! (a stop, a forwarded signal), and what follows from them (the exit code, the summary, the
//! closing line).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agent_sdk_watchdog::{LineCounts, Stage};
use serde_json::Value;
use watchdog_core::facts::Tally;
use watchdog_core::{ClaudeSessionId, Kill, LineKind, Outcome, RateLimitMonitor, ResultFacts};

use super::config::{emits_result, program_name, Mode, RunConfig};
use super::host_signals::UserSig;
use super::stdout;
use super::summary::Summary;
use crate::exit_code::{self, Ending, Intervention};
use crate::verdict::{lines_json, ms};

/// Why we stopped a run, when we did.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The policy killed it.
    Kill(Kill),
    /// Our stdout could not be written.
    Output(stdout::WriteError),
}

/// One finished supervised run.
pub(crate) struct Finished {
    /// The command line.
    pub(crate) argv: Vec<OsString>,
    /// How it ended.
    pub(crate) outcome: Outcome,
    /// Why we stopped it, if we did.
    pub(super) stopped: Option<Stopped>,
    /// How far the kill ladder went.
    pub(super) ladder: Option<Stage>,
    /// The child's exit code and signal.
    pub(super) exit: Option<(Option<i32>, Option<i32>)>,
    /// Our exit code for this run.
    pub(crate) code: i32,
    /// From spawn to the end.
    pub(crate) duration: Duration,
    /// What stdout said.
    pub(crate) tally: Tally,
    /// Stdout lines by kind, as the supervisor counted them (each line once).
    pub(super) counts: LineCounts,
    /// Stdout lines over the maximum length (not in `counts`).
    pub(super) overlong: u64,
    /// Stderr lines seen and suppressed.
    pub(super) stderr: (u64, u64),
    /// Suppressed repeats per warning code.
    pub(super) suppressed: Value,
    /// The user's signal, if one came.
    pub(crate) interrupted: Option<UserSig>,
    /// The events, as JSON (bounded: see [`EventLog`](crate::event_log::EventLog)).
    pub(super) events: crate::event_log::EventLog<Value>,
    /// The spawn instant.
    pub(super) start: Instant,
    /// Claude Code's session id, as the policy read it ([`watchdog_core::facts`]).
    pub(crate) session_id: Option<ClaudeSessionId>,
    /// The facts of the last `result`, as the policy read them.
    pub(crate) result: Option<ResultFacts>,
    /// The rate-limit readings.
    pub(crate) monitor: RateLimitMonitor,
    /// When it ended, epoch ms.
    pub(crate) ended_wall_ms: u64,
    /// The `system/init` session id when it differed from the one expected (continuations).
    pub(crate) session_mismatch: Option<String>,
    /// Descendants still running when the child exited by itself, then stopped.
    pub(super) leftovers_killed: usize,
    /// How long the child's output waited for our stdout (a slow reader downstream).
    pub(super) blocked_on_output: Duration,
    /// From spawn to the first stdout line, if one came.
    pub(super) first_line: Option<Duration>,
    /// How long after its deadline the kill reached us, if there was one.
    pub(super) kill_late: Option<Duration>,
}

impl Finished {
    /// The policy's kill, if any.
    pub(crate) fn kill(&self) -> Option<&Kill> {
        match &self.stopped {
            Some(Stopped::Kill(k)) => Some(k),
            _ => None,
        }
    }

    /// The child's status: its code, or `128 + N` for signal N.
    fn child_status(&self) -> Option<i32> {
        let (code, signal) = self.exit?;
        code.or(signal.map(|s| 128 + s))
    }

    /// The child printed stream-json: a line of a known Claude Code message type.
    fn printed_stream_json(&self) -> bool {
        LineKind::ALL
            .iter()
            .filter(|k| !matches!(k, LineKind::Unknown | LineKind::Unparseable))
            .any(|k| self.counts.get(*k) > 0)
    }

    /// This run's exit code under `cfg` ([`exit_code::decide`]).
    pub(super) fn exit_code(&self, cfg: &RunConfig) -> i32 {
        let intervention = match &self.stopped {
            Some(Stopped::Output(e)) => Some(Intervention::Output { closed: e.closed }),
            Some(Stopped::Kill(k)) => Some(Intervention::Kill(k.kind)),
            None => self.interrupted.map(|s| Intervention::Signal(s.number())),
        };
        exit_code::decide(&Ending {
            outcome: &self.outcome,
            intervention,
            child: self.child_status(),
            stream_json: self.printed_stream_json(),
            strict: cfg.strict,
            emit_result: emits_result(cfg),
        })
    }

    /// The one line that says how a run that ended by itself without success ended, naming
    /// the child's code; `None` for a success, a kill (said already) or a forwarded signal, a
    /// plain-text run that exited 0 (the hint said what to add), and in `claude-watchdog`
    /// whenever the code is the child's own (it is as transparent as `claude`).
    pub(super) fn ending_message(&self, code: i32, mode: Mode) -> Option<String> {
        if self.stopped.is_some() || self.interrupted.is_some() || self.session_mismatch.is_some() {
            return None;
        }
        let own = Some(code) == self.child_status();
        if own && (mode == Mode::DropIn || (code == 0 && !self.printed_stream_json())) {
            return None;
        }
        let what = program_name(&self.argv);
        let status = match self.exit {
            Some((Some(c), _)) => format!("exited with code {c}"),
            Some((None, Some(s))) => format!("was ended by signal {s}"),
            _ => "ended (its status could not be read)".to_string(),
        };
        let ours = if Some(code) != self.child_status() {
            format!("; exiting {code}")
        } else {
            String::new()
        };
        let no_stdout = self.counts.total() == 0 && self.overlong == 0;
        match &self.outcome {
            Outcome::Success | Outcome::Killed { .. } => None,
            Outcome::NoResult if no_stdout => Some(format!(
                "{what} {status} before any result (no_result; it printed no stdout line){ours}"
            )),
            Outcome::NoResult if !self.printed_stream_json() => Some(format!(
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
        }
    }

    /// The summary of this run, with the process exit code `exit_code`.
    pub(super) fn summary(&self, exit_code: i32, recovery: Option<Value>) -> Value {
        Summary {
            argv: self
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            outcome: &self.outcome,
            kill: self.kill(),
            ladder: self.ladder.map(Stage::as_str),
            exit: self.exit,
            exit_code,
            duration_ms: ms(self.duration),
            tally: &self.tally,
            rate_limits: &self.monitor,
            lines: lines_json(self.counts.iter(), self.overlong),
            session_id: self.session_id.as_ref(),
            result: self.result.as_ref(),
            stderr: self.stderr,
            suppressed: self.suppressed.clone(),
            interrupted: self.interrupted.map(UserSig::name),
            events: self.events.to_vec(),
            base: self.start,
            recovery,
            output_error: match &self.stopped {
                Some(Stopped::Output(e)) => Some((e.error.to_string(), e.closed)),
                _ => None,
            },
            leftovers_killed: self.leftovers_killed,
            blocked_on_output_ms: ms(self.blocked_on_output),
            first_line_ms: self.first_line.map(ms),
            kill_late_us: self.kill_late.map(|d| d.as_micros() as u64),
        }
        .to_json()
    }
}
