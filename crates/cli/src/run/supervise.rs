//! One supervised run, from spawn to the end: the child started under the supervisor, the main
//! loop (the child's output to [`Live`], the host's input to the child, the user's signals
//! forwarded and escalated), and the run's record once it ended ([`Finished`]).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agent_sdk_watchdog::{RunPhase, Supervisor, SupervisorConfig};
use watchdog_core::facts::Activity;
use watchdog_core::{facts::ClaudeSessionId, RunRecord, SessionConfig};
use watchdog_host::capture::Record;
use watchdog_host::claude_code::session::RESUME_TURN_VARS;

use super::config::{program_name, RunConfig};
use super::finished::{Finished, Ours, RunFacts};
use super::host::{sleep_until_opt, wall_ms, Drained, Host};
use super::host_signals::UserSig;
use super::live::Live;
use super::stderr_dedup::StderrDedup;
use super::stdin;
use crate::event_log::EventLog;
use crate::exit_code;
use crate::status::Status;
use watchdog_core::config::HumanDuration;

/// The user's signals during one run: the first is forwarded, and if the child is still there
/// `grace` later its whole tree is killed; a second one kills the tree at once.
struct Interrupts {
    first: Option<UserSig>,
    escalate_at: Option<tokio::time::Instant>,
    grace: Duration,
}

impl Interrupts {
    async fn escalation(&self) {
        match self.escalate_at {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }
}

/// Run `argv` under the supervisor to its end. `expect_session`: the session id its
/// `system/init` must carry (a continuation). `Err` holds the exit code when it cannot start.
pub(crate) async fn supervise(
    cfg: &RunConfig,
    argv: &[OsString],
    host: &mut Host,
    expect_session: Option<&ClaudeSessionId>,
) -> Result<Finished, i32> {
    let Some((program, args)) = argv.split_first() else {
        return Err(exit_code::USAGE);
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args);
    if let Some(env) = &cfg.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(dir) = &cfg.cwd {
        cmd.current_dir(dir);
    }
    if expect_session.is_some() {
        // A continuation starts exactly one new user turn, its own prompt, whatever the
        // inherited environment asks `--resume` to do beside resuming.
        for (var, _) in RESUME_TURN_VARS {
            cmd.env_remove(var);
        }
    }
    // Only the first run reads the host's stdin; a continuation gets /dev/null.
    let host_stdin = host.stdin.take();
    if expect_session.is_some() {
        // A fresh status line for the continuation (the first run's is finished).
        host.status = Status::new(cfg.status);
    }
    let mut session = SessionConfig::default()
        .with_limits(cfg.limits.clone())
        .with_tally(true)
        .with_live_facts(host.telemetry.is_on());
    host.telemetry
        .run_started(expect_session.map(|id| id.as_str()));
    if let Some(id) = expect_session {
        session = session.with_expected_session(id.clone());
    }
    let config = SupervisorConfig {
        policy: Some(session),
        stream_json_input: stdin::has_stream_json_input(argv),
        term_grace: cfg.grace,
        become_subreaper: true,
        claim_orphans: true,
        die_with_host: true,
        pipe_stdin: host_stdin.is_some(),
        ..SupervisorConfig::default()
    };
    let mut sup = match Supervisor::spawn(cmd, config) {
        Ok(s) => s,
        Err(e) => {
            host.status.say(&format!("error: {e}"));
            return Err(exit_code::INTERNAL);
        }
    };
    warn_unavailable(sup.unavailable(), host);
    // The capture's time zero is the policy's: the spawn instant (a later one would record a
    // kill's exit before its own deadline, and a replay would disagree with the live run).
    let start = sup.started();
    host.recorder.write(
        0,
        Record::Start {
            // The policy's wall-clock anchor: a replay resets the same windows at the same
            // instants.
            wall_ms: Some(sup.started_wall_ms()),
            // What looks like a secret redacted; the rest as it ran (replay reads the flags).
            argv: watchdog_host::redact::args(
                &argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            ),
            env: crate::claude_code::recorded_env(cfg.env.as_deref()),
        },
    );
    let mut written = match (host_stdin, sup.stdin()) {
        (Some(h), Some(w)) => Some(stdin::forward(h, w)),
        _ => None,
    };
    let mut live = Live {
        handle: sup.handle(),
        host,
        start,
        what: program_name(argv),
        stderr_filter: StderrDedup::default(),
        events: EventLog::default(),
        kill: None,
        output_error: None,
        last_progress: None,
        activity: Activity::Starting,
        activity_since: start,
        overlong: None,
        session_mismatch: None,
        first_line: None,
        kill_late: None,
        interrupted: false,
        ending: None,
        command_lines: cfg.command_lines,
    };
    let mut phase = live.handle.phase();
    let dropped_before = live.host.stdout.dropped();
    // How long our stdout may take no byte while bytes wait for it (judged where we write).
    live.host.stdout.set_bound(cfg.limits.output_blocked());
    let mut signals = Interrupts {
        first: None,
        escalate_at: None,
        grace: cfg.grace,
    };
    // Only a status line to redraw needs a periodic wake (a window's reset is one of the
    // policy's own deadlines); a plain run wakes for its I/O only.
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let look_at = live.host.stdout.look_at();
        let (room, in_flight) = (
            live.host.stdout.has_room(),
            live.host.stdout.in_flight() > 0,
        );
        tokio::select! {
            biased;
            // What we wrote to the child is recorded before what the child answered to it.
            note = stdin::recv_written(&mut written) => {
                if note.is_none() {
                    written = None;
                    live.host.vanished.input_ended();
                }
                live.record_written(note);
            }
            gone = live.host.vanished.gone() => live.on_gone(gone),
            // A kill or the child's end, known even while our reader takes nothing.
            r = phase.changed(), if live.ending.is_none() => match r {
                Ok(()) => {
                    let p = *phase.borrow_and_update();
                    live.on_phase(p);
                }
                Err(_) => live.on_phase(RunPhase::Stopping),
            },
            // The child's output, while our stdout has room for it: a reader that stops
            // reading holds the child back, and the kill, the signals and the end still come.
            out = sup.next_batch(), if room => match out {
                Some(out) => live.on_batch(out),
                None => break,
            },
            () = live.host.stdout.progressed(), if in_flight => {
                live.on_stdout_progress();
            }
            // While bytes wait for our stdout: did the reader take any?
            () = sleep_until_opt(look_at), if look_at.is_some() => live.look_at_stdout(),
            // Nothing else is ready: hand what the child printed to our stdout.
            () = std::future::ready(()), if !live.host.stdout.is_empty() => live.flush_stdout(),
            sig = live.host.signals.recv() => {
                if signals.first.is_some() {
                    live.host.status.say(&format!(
                        "second signal ({}): killing the command's whole process tree",
                        sig.name()
                    ));
                    live.handle.kill_tree_now();
                    signals.escalate_at = None;
                } else {
                    signals.first = Some(sig);
                    live.interrupted = true;
                    live.handle.signal(sig.signal());
                    live.host.telemetry.signal_forwarded(sig.name());
                    signals.escalate_at = tokio::time::Instant::now().checked_add(signals.grace);
                }
            }
            () = signals.escalation() => {
                signals.escalate_at = None;
                live.host.status.say(&format!(
                    "{} still runs {} after {}: killing its whole process tree",
                    live.what,
                    HumanDuration(signals.grace),
                    signals.first.map_or("the signal", UserSig::name),
                ));
                live.handle.kill_tree_now();
            }
            _ = tick.tick(), if live.needs_tick() => live.refresh_status(Instant::now()),
        }
    }
    // The child may exit before the last forwarded lines were noted: record them too.
    if let Some(rx) = written.as_mut() {
        while let Ok(note) = rx.try_recv() {
            live.record_written(note);
        }
    }
    live.host.status.finish();
    // The child is gone: deliver what waits for our stdout, as long as the reader takes it.
    if live.ending.is_none() {
        let p = *phase.borrow();
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
    // The supervisor's record of the run: the policy's facts, the ladder's stage, the exit,
    // the lines, each decided once by its owner. Lost only if the supervising task was
    // dropped: then nothing is known of the run, and nothing is guessed.
    let unavailable = sup.unavailable().to_vec();
    let record = match sup.wait().await.ok().and_then(|r| {
        let leftovers = r.leftovers_killed;
        let blocked = r.blocked_on_output;
        r.record.map(|rec| (rec, leftovers, blocked))
    }) {
        Some(r) => r,
        None => {
            live.host
                .status
                .say("error: the supervisor stopped before it could report how the run ended");
            (RunRecord::unobserved(), 0, Duration::ZERO)
        }
    };
    let (mut record, leftovers_killed, blocked_on_output) = record;
    cfg.command_lines.record(&mut record);
    let end = Instant::now();
    let exit = record.exit.unwrap_or_default();
    let t = live.t_ms(end);
    // The receipt of the tree that was stopped, before the exit (replay reads it as the
    // run's, as it comes).
    if let Some(v) = record
        .receipt
        .as_ref()
        .and_then(|r| serde_json::to_value(r).ok())
    {
        live.host.recorder.write(t, Record::Receipt(v));
    }
    live.host.recorder.write(
        t,
        Record::Exit {
            code: exit.code,
            signal: exit.signal,
        },
    );
    let stderr = (live.stderr_filter.lines(), live.stderr_filter.suppressed());
    let suppressed = live.stderr_filter.suppressed_json();
    let ours = Ours {
        output_error: live.output_error,
        kill_said: live.kill.is_some(),
        interrupted: signals.first,
        session_mismatch: live.session_mismatch,
    };
    let facts = RunFacts {
        argv: argv.to_vec(),
        duration: end.saturating_duration_since(start),
        stderr,
        suppressed,
        events: live.events,
        start,
        ended_wall_ms: wall_ms(),
        leftovers_killed,
        blocked_on_output,
        output_dropped: live.host.stdout.dropped() - dropped_before,
        first_line: live.first_line.map(|t| t.saturating_duration_since(start)),
        kill_late: live.kill_late,
        unavailable,
        command_lines: cfg.command_lines,
    };
    let finished = Finished::new(record, ours, facts, cfg);
    live.host
        .telemetry
        .run_ended(&finished.report(finished.code, None));
    Ok(finished)
}

/// Say once per process (a continuation runs under the same host) which guarantees this host
/// took away, and that the run is supervised all the same; the summary lists them per run.
fn warn_unavailable(unavailable: &[agent_sdk_watchdog::Facility], host: &Host) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if unavailable.is_empty() || WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    let lost: Vec<String> = unavailable
        .iter()
        .map(|f| format!("{f} ({})", f.lost_guarantee()))
        .collect();
    host.status.say(&format!(
        "warning: this host refused {}; supervising without (summary: unavailable)",
        lost.join("; ")
    ));
}
