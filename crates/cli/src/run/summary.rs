//! `run --summary`: one JSON object describing how the invocation ended ([`of`]), read from
//! the invocation's `Report`: each run's record ([`RecordFields`], the fields `replay --json`
//! has too) and what `run` adds ([`Summary`]), typed. It is written through a JSON value, whose
//! keys come sorted, as they always have.

use serde::Serialize;
use serde_json::Value;
use watchdog_core::ending::OutputStop;

use crate::exit_code::{RecoveryEnd, StoppedBy};
use crate::run_report::{OutputError, RecoverySummary, Report, RunReport};
use crate::verdict::{ms, object, KillFields, KillOf, RecordFields};

/// The summary of the invocation `report`: the first run's facts at the top level, with the
/// invocation's exit code and what recovery did, and which run each top-level fact belongs to;
/// with a continuation, each run's own summary, with its own code, under `runs`.
pub(super) fn of(report: &Report) -> Value {
    let mut summary = Summary::of(
        &report.first,
        report.code,
        report.recovery.as_ref().map(|r| &r.summary),
    );
    summary.exit_code_from_run = Some(match report.end {
        RecoveryEnd::NotContinued => Some(0),
        RecoveryEnd::Continued { .. } => Some(1),
        RecoveryEnd::Aborted(_) => None,
    });
    if report.continuation.is_some() {
        summary.runs = report
            .runs()
            .enumerate()
            .map(|(i, r)| Summary {
                run: i,
                ..Summary::of(r, r.code, None)
            })
            .collect();
    }
    serde_json::to_value(&summary).unwrap_or_default()
}

/// One run's summary: its record's fields, `kill` naming the run's stop, and what `run` adds.
#[derive(Debug, Serialize)]
pub(crate) struct Summary<'a> {
    /// The record's fields; `kill` is the stop's: the watchdog's kill, or our own output's
    /// stop (`output`, `output_blocked`), else `null`; with `late_us` when `run` saw the kill
    /// after its deadline.
    #[serde(flatten)]
    record: RecordFields<'a>,
    /// Our stdout could not be written (`null` when it could). When it stopped the run the
    /// `kill` is of that kind; this says it either way.
    output_error: Option<OutputErrorFields>,
    /// Our exit code.
    exit_code: i32,
    /// Milliseconds from spawn to the end.
    duration_ms: u64,
    /// Stderr lines seen and suppressed (repeated warnings).
    stderr: StderrFields,
    /// The user's signal we forwarded, if any (`SIGINT`, `SIGTERM`, …).
    interrupted: Option<&'static str>,
    /// The events (bounded: see [`EventLog`](crate::event_log::EventLog)).
    events: Vec<Value>,
    /// The command line, as the summary may say it.
    command: Vec<String>,
    /// The whole invocation's CPU: ours, and the children's we waited for.
    cpu: Value,
    /// Descendants still running when the child exited by itself, then stopped.
    leftovers_killed: usize,
    /// Milliseconds the child's output waited for our stdout.
    blocked_on_output_ms: u64,
    /// Bytes of the child's output read but never delivered to our stdout (its reader went
    /// away or took nothing for the bound).
    output_dropped_bytes: u64,
    /// Milliseconds from spawn to the first stdout line, if one came.
    first_line_ms: Option<u64>,
    /// The kernel facilities the host refused: each a guarantee that did not hold.
    unavailable: Vec<Unavailable>,
    /// What recovery did after the first run (`run` only): `{trigger, marker,
    /// continued_outcome, notice, …}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    recovery: Option<&'a RecoverySummary>,
    /// Which run these facts are of (0: the first).
    run: usize,
    /// The run whose exit code the invocation's is (the top level only; `null` when recovery
    /// ended the chain itself: an aborted wait, a continuation that could not start).
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code_from_run: Option<Option<usize>>,
    /// Each run's own summary, when a continuation ran (the top level only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    runs: Vec<Summary<'a>>,
}

/// The summary's `output_error`.
#[derive(Debug, Serialize)]
struct OutputErrorFields {
    /// `output`, or `output_blocked` when the reader took no byte for the bound while bytes
    /// waited.
    kind: &'static str,
    /// What the OS (or the bound) said.
    error: String,
    /// The reader went away (EPIPE).
    reader_gone: bool,
    /// For `output_blocked`: how long the reader took nothing (ms, counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    output_blocked_ms: Option<u64>,
}

/// The summary's `stderr`.
#[derive(Debug, Serialize)]
struct StderrFields {
    /// Lines seen.
    lines: u64,
    /// Repeated warnings suppressed.
    suppressed_warnings: u64,
    /// Suppressed repeats per warning code.
    suppressed_by_code: Value,
}

/// One entry of the summary's `unavailable`.
#[derive(Debug, Serialize)]
struct Unavailable {
    /// The facility the host refused.
    facility: &'static str,
    /// The guarantee that did not hold.
    lost: &'static str,
}

impl<'a> Summary<'a> {
    /// The summary of the run `run`, with the exit code `exit_code` and what `recovery` did
    /// after it (the summary's `recovery` object).
    pub(crate) fn of(
        run: &'a RunReport,
        exit_code: i32,
        recovery: Option<&'a RecoverySummary>,
    ) -> Self {
        let facts = &run.facts;
        let output_error = run.ours.output_error.as_ref().map(OutputErrorFields::of);
        let mut record = RecordFields::new(&run.record, facts.start);
        record.kill = kill(run, record.kill.take(), output_error.as_ref());
        if let Some(k) = record.kill.as_mut() {
            k.late_us = facts.kill_late.map(|d| d.as_micros() as u64);
        }
        let argv: Vec<String> = facts
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        Summary {
            record,
            output_error,
            exit_code,
            duration_ms: ms(facts.duration),
            stderr: StderrFields {
                lines: facts.stderr.0,
                suppressed_warnings: facts.stderr.1,
                suppressed_by_code: facts.suppressed.clone(),
            },
            interrupted: run.ours.interrupted.map(|sig| sig.name),
            events: facts.events.to_vec(),
            command: facts.command_lines.argv(&argv),
            cpu: crate::cpu::usage_json(),
            leftovers_killed: facts.leftovers_killed,
            blocked_on_output_ms: ms(facts.blocked_on_output),
            output_dropped_bytes: facts.output_dropped,
            first_line_ms: facts.first_line.map(ms),
            unavailable: facts
                .unavailable
                .iter()
                .map(|f| Unavailable {
                    facility: f.as_str(),
                    lost: f.lost_guarantee(),
                })
                .collect(),
            recovery,
            run: 0,
            exit_code_from_run: None,
            runs: Vec::new(),
        }
    }
}

/// The summary's `kill`: who stopped the run, whatever the record says. The watchdog's kill is
/// the record's (`recorded`); our own output's stop is the output error, with the ladder's
/// stage and the receipt of the tree it stopped, as for any kill; nothing was killed otherwise.
fn kill<'a>(
    run: &RunReport,
    recorded: Option<KillFields<'a>>,
    output_error: Option<&OutputErrorFields>,
) -> Option<KillFields<'a>> {
    match run.stopped_by() {
        StoppedBy::Watchdog(_) => recorded,
        StoppedBy::Output { .. } | StoppedBy::OutputBlocked => Some(KillFields {
            // The error's kind is the stop's (both say how our output failed).
            what: KillOf::Run(object(
                serde_json::to_value(output_error).unwrap_or_default(),
            )),
            ladder: run.record.stage.map(|s| s.as_str()),
            tree: run
                .record
                .receipt
                .as_ref()
                .map(|r| crate::tree_report::receipt_json(r, None)),
            late_us: None,
        }),
        _ => None,
    }
}

impl OutputErrorFields {
    fn of(e: &OutputError) -> Self {
        OutputErrorFields {
            kind: match e.stop {
                OutputStop::Blocked => "output_blocked",
                _ => "output",
            },
            error: e.error.clone(),
            reader_gone: e.stop == OutputStop::Closed,
            output_blocked_ms: e.blocked_for.map(ms),
        }
    }
}
