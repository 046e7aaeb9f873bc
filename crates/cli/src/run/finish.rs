//! The end of one supervised run ([`finish`]): what waits for our stdout delivered, the
//! supervisor's record of the run, the capture's last records, and the run's report built,
//! its exit code decided once.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agent_sdk_watchdog::Supervisor;
use watchdog_core::RunRecord;
use watchdog_host::capture::Record;

use super::config::{emits_result, RunConfig};
use super::host::{wall_ms, Drained};
use super::host_signals::UserSig;
use super::live::Live;
use super::start::Child;
use super::stdout::{Failure, WriteError};
use crate::exit_code::{self, Ending};
use crate::run_report::{stopped_by, Interrupt, Ours, OutputError, RunFacts, RunReport};
use watchdog_core::ending::OutputStop;

/// The child's output ended: finish the run `live` watched, `interrupted` by the user's signal
/// if one was forwarded.
pub(super) async fn finish(
    cfg: &RunConfig,
    argv: &[OsString],
    mut live: Live<'_>,
    child: Child,
    interrupted: Option<UserSig>,
) -> RunReport {
    let Child { sup, mut written } = child;
    // The child may exit before the last forwarded lines were noted: record them too.
    if let Some(rx) = written.as_mut() {
        while let Ok(note) = rx.try_recv() {
            live.record_written(note);
        }
    }
    live.host.status.finish();
    deliver(&mut live).await;
    let unavailable = sup.unavailable().to_vec();
    let (mut record, leftovers_killed, blocked_on_output) = supervisor_record(sup, &live).await;
    cfg.command_lines.record(&mut record);
    let end = Instant::now();
    record_end(&mut live, &record, end);
    let ours = Ours {
        output_error: live.output_error.take().map(output_error),
        kill_said: live.kill.is_some(),
        interrupted: interrupted.map(|sig| Interrupt {
            name: sig.name(),
            signal: sig.signal().number(),
        }),
        session_mismatch: live.session_mismatch.take(),
    };
    let facts = RunFacts {
        argv: argv.to_vec(),
        duration: end.saturating_duration_since(live.start),
        stderr: (live.stderr_filter.lines(), live.stderr_filter.suppressed()),
        suppressed: live.stderr_filter.suppressed_json(),
        events: std::mem::take(&mut live.events),
        start: live.start,
        ended_wall_ms: wall_ms(),
        leftovers_killed,
        blocked_on_output,
        output_dropped: live.host.stdout.dropped() - live.dropped_before,
        first_line: live
            .first_line
            .map(|t| t.saturating_duration_since(live.start)),
        kill_late: live.kill_late,
        unavailable,
        command_lines: cfg.command_lines,
    };
    let code = exit_code::decide(&Ending {
        record: &record,
        stopped: stopped_by(&record, &ours),
        strict: cfg.strict,
        emit_result: emits_result(cfg),
    });
    let run = RunReport {
        record,
        ours,
        code,
        facts,
    };
    live.host.telemetry.run_ended(&run);
    run
}

/// Our stdout's failure as the run's report keeps it.
fn output_error(e: WriteError) -> OutputError {
    OutputError {
        stop: match e.failure {
            Failure::Closed => OutputStop::Closed,
            Failure::Error => OutputStop::Error,
            Failure::Blocked => OutputStop::Blocked,
        },
        error: e.error.to_string(),
        blocked_for: e.blocked_for,
    }
}

/// The child is gone: deliver what waits for our stdout, as long as the reader takes it, and
/// say the over-long line it was printing, if it was.
async fn deliver(live: &mut Live<'_>) {
    if live.ending.is_none() {
        let p = *live.handle.phase().borrow();
        live.on_phase(p);
    }
    match live.host.drain_stdout().await {
        Drained::Done => {}
        Drained::Failed(e) => live.on_write_error(e),
        Drained::Blocked(d) => live.on_blocked(d),
        Drained::Interrupted(waiting) => live.on_drain_interrupted(waiting),
    }
    if let Some(n) = live.overlong.take() {
        live.end_overlong(Instant::now(), n);
    }
}

/// The supervisor's record of the run: the policy's facts, the ladder's stage, the exit, the
/// lines, each decided once by its owner; with the descendants it stopped after the child's
/// own exit and how long the output waited for our stdout. Lost only if the supervising task
/// was dropped: then nothing is known of the run, and nothing is guessed.
async fn supervisor_record(sup: Supervisor, live: &Live<'_>) -> (RunRecord, usize, Duration) {
    let report = sup.wait().await.ok().and_then(|r| {
        let leftovers = r.leftovers_killed;
        let blocked = r.blocked_on_output;
        r.record.map(|rec| (rec, leftovers, blocked))
    });
    report.unwrap_or_else(|| {
        live.host
            .status
            .say("error: the supervisor stopped before it could report how the run ended");
        (RunRecord::unobserved(), 0, Duration::ZERO)
    })
}

/// The capture's last records of the run, at `end`: the receipt of the tree that was stopped,
/// before the exit (replay reads it as the run's, as it comes), and the exit.
fn record_end(live: &mut Live<'_>, record: &RunRecord, end: Instant) {
    let t = live.t_ms(end);
    if let Some(v) = record
        .receipt
        .as_ref()
        .and_then(|r| serde_json::to_value(r).ok())
    {
        live.host.recorder.write(t, Record::Receipt(v));
    }
    let exit = record.exit.unwrap_or_default();
    live.host.recorder.write(
        t,
        Record::Exit {
            code: exit.code,
            signal: exit.signal,
        },
    );
}
