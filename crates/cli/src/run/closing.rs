//! What `run` says once its runs ended, read from the invocation's [`Report`]: the lines every
//! run leaves ([`say`]: subagent failures, what it left outstanding, a continuation that was
//! stopped), the synthetic `result` after a kill ([`emit_result`]), and the one line that names
//! a child's own non-success ending ([`ending_message`]).

use watchdog_core::Outcome;

use super::config::{emits_result, program_name, Mode, RunConfig};
use super::host::{Drained, Host};
use super::stdout::OUTPUT_DRAIN;
use super::synthetic;
use crate::exit_code::StoppedBy;
use crate::run_report::{Report, RunReport};
use crate::status::Status;
use crate::verdict::{kill_sentence, ms};

/// Say what the runs left to say: their subagent failures (even when the session succeeded:
/// the exit code is kept), what a run that ended by itself left outstanding (a wakeup that
/// never fired, a task never reported ended, a host request never answered), and a
/// continuation that was stopped.
pub(super) fn say(report: &Report, status: &Status) {
    for run in report.runs() {
        for line in run.record.tally.subagents().report_lines() {
            status.say(&line);
        }
        if run.stopped_by().kill().is_none() {
            let what = program_name(&run.facts.argv);
            for line in crate::outstanding::ending_lines(&what, &run.record.outstanding) {
                status.say(&line);
            }
        }
    }
    if report.last().ours.session_mismatch.is_some() {
        // The continuation was stopped: the work was not continued.
        status.say(
            "recovery: exiting 1: the continuation was stopped, the session was not continued",
        );
    }
}

/// After a kill, when `cfg` emits one: the synthetic result, after everything the child
/// printed, on a line of its own; before it, an error answer to each host request the kill
/// found unanswered. Said on stderr when our stdout cannot take it.
pub(super) async fn emit_result(report: &Report, cfg: &RunConfig, host: &mut Host) {
    let run = report.last();
    let (true, Some(k)) = (emits_result(cfg), run.stopped_by().kill()) else {
        return;
    };
    let what = program_name(&run.facts.argv);
    let sentence = kill_sentence(k, &what);
    for r in k.outstanding.iter().flat_map(|o| o.requests.iter()) {
        let line = synthetic::control_error_line(&r.request_id, &sentence);
        host.stdout.push_own_line(&line.to_string());
    }
    let line = synthetic::end_line(
        run.record.dialect,
        k,
        &sentence,
        run.record.session_id.as_ref(),
        ms(run.facts.duration),
        run.record.num_turns(),
    );
    let delivered = host.stdout.push_own_line(&line.to_string()) && {
        host.stdout.tighten(std::time::Instant::now(), OUTPUT_DRAIN);
        matches!(host.drain_stdout().await, Drained::Done)
    };
    if !delivered {
        host.stdout.abandon();
        host.status
            .say("our stdout cannot take the synthetic result: it is lost");
    }
}

/// The one line that says how a run that ended by itself without success ended, naming the
/// child's code, `code` being ours; `None` for a success, a kill (said already) or a forwarded
/// signal, a plain-text run that exited 0 (the hint said what to add), and in `claude-watchdog`
/// whenever the code is the child's own (it is as transparent as `claude`).
pub(super) fn ending_message(run: &RunReport, code: i32, mode: Mode) -> Option<String> {
    if !matches!(run.stopped_by(), StoppedBy::Child) {
        return None;
    }
    let child_status = run.record.exit.and_then(|e| e.status());
    let own = Some(code) == child_status;
    let stream_json = run.record.lines.has_stream_json();
    if own && (mode == Mode::DropIn || (code == 0 && !stream_json)) {
        return None;
    }
    let what = program_name(&run.facts.argv);
    let status = match run.record.exit {
        Some(e) if e.code.is_some() => format!("exited with code {}", e.code.unwrap_or(0)),
        Some(e) if e.signal.is_some() => {
            format!("was ended by signal {}", e.signal.unwrap_or(0))
        }
        _ => "ended (its status could not be read)".to_string(),
    };
    let ours = if own {
        String::new()
    } else {
        format!("; exiting {code}")
    };
    let no_stdout = run.record.lines.is_empty();
    match &run.record.outcome {
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
