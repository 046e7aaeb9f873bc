//! One supervised run, from spawn to the end: the main loop that passes the child's output on,
//! records it, shows what happens, forwards the user's signals (and escalates them), and stops
//! the child when its output cannot be delivered.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agent_sdk_watchdog::{
    Batch, LineMeta, Output, StdoutBatch, Supervisor, SupervisorConfig, SupervisorHandle,
};
use serde_json::{json, Value};
use watchdog_core::capture::Record;
use watchdog_core::facts::Activity;
use watchdog_core::{
    ClaudeSessionId, Event, Kill, LineKind, RunRecord, SessionConfig, Signal, StallClock,
};

use super::config::{program_name, RunConfig};
use super::finished::{Finished, Ours, RunFacts};
use super::host::{wall_ms, Host};
use super::host_signals::UserSig;
use super::record::trim_cr;
use super::stderr_dedup::StderrDedup;
use super::stdin;
use super::stdout::WriteError;
use crate::event_log::EventLog;
use crate::exit_code;
use crate::status::{self, Status};
use crate::verdict::{event_json, killed_clause, ms};
use watchdog_core::config::format_duration;

// The longest stdout line handled as one line (the supervisor's default, and the cap `replay`
// and `audit` read captures with); longer ones come in pieces.
use watchdog_core::config::defaults::MAX_LINE;

/// What a run shows and keeps while it runs.
struct Live<'h> {
    host: &'h mut Host,
    handle: SupervisorHandle,
    start: Instant,
    what: String,
    stderr_filter: StderrDedup,
    events: EventLog<Value>,
    kill: Option<Kill>,
    /// Our stdout could not be written: the child is being stopped.
    output_error: Option<WriteError>,
    last_progress: Option<Instant>,
    activity: Activity,
    activity_since: Instant,
    /// Bytes of the over-long line being read, if one is.
    overlong: Option<usize>,
    /// The continuation runs another session than the one it resumes: the id it runs.
    session_mismatch: Option<String>,
    /// When the first stdout batch came (time to first line).
    first_line: Option<Instant>,
    /// How long after its deadline the kill event reached this loop.
    kill_late: Option<Duration>,
}

impl Live<'_> {
    /// Write the buffered child stdout.
    async fn flush_stdout(&mut self) {
        let r = self.host.stdout.flush().await;
        self.check_write(r);
    }

    /// The first stdout write error: say it once, stop the child (it would work on, and bill,
    /// for a reader that is gone), keep reading and recording what it prints until it ends.
    fn check_write(&mut self, r: Result<(), WriteError>) {
        if let Err(e) = r {
            self.host.status.say(&format!(
                "{e}; stopping {} and its whole process tree",
                self.what
            ));
            if self.kill.is_none() {
                self.handle.kill_now();
            }
            self.output_error = Some(e);
        }
    }

    /// Our reader (or, for the drop-in, our host) went away while nothing was written: the
    /// same as a write that failed with EPIPE, noticed at once.
    fn on_gone(&mut self, gone: super::vanished::Gone) {
        if self.output_error.is_some() {
            return;
        }
        self.host.stdout.abandon();
        self.check_write(Err(WriteError {
            closed: true,
            error: gone.error(),
        }));
    }

    /// Record a line written to the child's stdin (`None`: its stdin was closed).
    fn record_written(&mut self, note: Option<Vec<u8>>) {
        let t = self.t_ms(Instant::now());
        match note {
            Some(bytes) => {
                if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                    self.host.recorder.write(t, Record::Stdin(v));
                }
            }
            None => self
                .host
                .recorder
                .write(t, Record::Stdin(json!({"note": "stdin closed"}))),
        }
    }

    fn t_ms(&self, now: Instant) -> u64 {
        ms(now.saturating_duration_since(self.start))
    }

    async fn on_batch(&mut self, batch: Batch) {
        match batch {
            Batch::Stdout(b) => self.on_stdout(b).await,
            Batch::Output(out) => self.on_output(out),
        }
    }

    /// Stdout lines read together: passed on as they are (one write for a large batch) and
    /// recorded. The policy read them already (each line once, in the supervisor); what they
    /// said comes as its events, and the class it gave each line is all this loop looks at.
    async fn on_stdout(&mut self, b: StdoutBatch) {
        let r = self.host.stdout.push(b.bytes()).await;
        self.check_write(r);
        let now = b.at();
        self.first_line.get_or_insert(now);
        self.host
            .telemetry
            .stdout(self.start, now, b.lines(), &self.handle);
        for m in b.lines() {
            let bytes = b.line(m);
            if m.piece {
                let n = self.overlong.unwrap_or(0) + bytes.len();
                self.overlong = Some(n);
                if !m.continues {
                    self.overlong = None;
                    self.end_overlong(now, n);
                }
                continue;
            }
            self.stdout_line(now, bytes, m);
        }
        if self.host.status.is_live() {
            // The status line shows the activity the policy's tally holds.
            let activity = self.handle.activity();
            if let Some(a) = activity.filter(|a| *a != self.activity) {
                self.activity_since = now.checked_sub(a.already()).unwrap_or(now);
                self.activity = a;
            }
        }
    }

    fn on_output(&mut self, out: Output) {
        let now = Instant::now();
        match out {
            // Stdout comes in batches (`on_stdout`).
            Output::Stdout(_) => {}
            Output::Stderr(line) => {
                let t = self.t_ms(now);
                self.host.recorder.write(
                    t,
                    Record::Stderr(String::from_utf8_lossy(trim_cr(&line.bytes)).into_owned()),
                );
                if self.stderr_filter.admit(&line.bytes) {
                    let mut b = line.bytes;
                    if line.newline {
                        b.push(b'\n');
                    }
                    self.host.status.write_raw(&b);
                }
            }
            Output::Event(ev) => self.on_event(now, ev),
            // Over-long lines are said when they end (`end_overlong`).
            _ => {}
        }
    }

    fn end_overlong(&mut self, now: Instant, n: usize) {
        self.host.status.say(&format!(
            "warning: a stdout line of {n} bytes is over the {} MiB limit; counted as a keep-alive",
            MAX_LINE >> 20
        ));
        let t = self.t_ms(now);
        self.host
            .recorder
            .write(t, Record::Raw(format!("<over-long line: {n} bytes>")));
    }

    /// One complete stdout line, passed on: recorded, and its class noted.
    fn stdout_line(&mut self, now: Instant, bytes: &[u8], m: &LineMeta) {
        let t = self.t_ms(now);
        let class = m.class;
        self.host
            .recorder
            .stdout_line(t, bytes, class.kind != LineKind::Unparseable);
        if matches!(class.signal, Signal::Progress | Signal::Settle) {
            self.last_progress = Some(now);
        }
    }

    /// A continuation must go on with the same session: stop it when its id differs (the
    /// policy compared the ids: [`Event::SessionMismatch`]).
    fn on_mismatch(&mut self, expected: &ClaudeSessionId, got: Option<ClaudeSessionId>) {
        let got = got.map(String::from).unwrap_or_default();
        self.host.status.say(&format!(
            "recovery: the continuation runs session {got:?}, not {expected}; stopping it"
        ));
        self.session_mismatch = Some(got);
        self.handle.kill_now();
    }

    /// Whether the periodic tick has work: a status line to redraw.
    fn needs_tick(&self) -> bool {
        self.host.status.is_live()
    }

    fn on_event(&mut self, now: Instant, ev: Event) {
        if self.host.telemetry.event(&ev, now, &self.handle) {
            return;
        }
        let at = match &ev {
            Event::Killed(k) => k.at,
            _ => now,
        };
        self.events.push_json(event_json(&ev, at, self.start));
        match ev {
            // Warnings (once per window until it resets or falls back), rejections, credits
            // and recoveries: each said once, as the policy's monitor decided.
            Event::RateLimit { event, .. } => self.host.status.say(&event.to_string()),
            Event::SessionMismatch { expected, got, .. } if self.session_mismatch.is_none() => {
                self.on_mismatch(&expected, got);
            }
            Event::Killed(k) if self.kill.is_none() && self.output_error.is_none() => {
                self.host.status.say(&killed_clause(&k, &self.what));
                self.kill_late = Some(now.saturating_duration_since(k.at));
                self.kill = Some(k);
            }
            Event::Stalling {
                clock, remaining, ..
            } => {
                let (what, kind) = match clock {
                    StallClock::Idle => ("no stdout line", "idle"),
                    StallClock::NoProgress => ("no progress (keep-alives only)", "no_progress"),
                };
                self.host.status.say(&format!(
                    "warning: {what} for a while; it will be stopped ({kind}) in {} unless it \
                     moves",
                    format_duration(remaining)
                ));
            }
            _ => {}
        }
    }

    fn refresh_status(&self, now: Instant) {
        if !self.host.status.is_live() {
            return;
        }
        let wall = wall_ms();
        let monitor = self.handle.rate_limits();
        let rate = monitor
            .filter(|m| m.active_windows(wall).next().is_some())
            .map(|m| m.summary(wall));
        self.host.status.set(status::render(
            now,
            self.start,
            &self.activity.to_string(),
            self.activity_since,
            self.last_progress,
            rate.as_deref(),
        ));
    }
}

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
    // The capture's time zero is the policy's: the spawn instant (a later one would record a
    // kill's exit before its own deadline, and a replay would disagree with the live run).
    let start = sup.started();
    host.recorder.write(
        0,
        Record::Start {
            // The policy's wall-clock anchor: a replay resets the same windows at the same
            // instants.
            wall_ms: Some(sup.started_wall_ms()),
            argv: argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
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
    };
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
            out = sup.next_batch() => match out {
                Some(out) => live.on_batch(out).await,
                None => break,
            },
            // Nothing else is ready: write what the child printed.
            () = std::future::ready(()), if !live.host.stdout.is_empty() => live.flush_stdout().await,
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
                    live.handle.signal(sig.to_rustix());
                    live.host.telemetry.signal_forwarded(sig.name());
                    signals.escalate_at = tokio::time::Instant::now().checked_add(signals.grace);
                }
            }
            () = signals.escalation() => {
                signals.escalate_at = None;
                live.host.status.say(&format!(
                    "{} still runs {} after {}: killing its whole process tree",
                    live.what,
                    format_duration(signals.grace),
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
    live.flush_stdout().await;
    if let Some(n) = live.overlong.take() {
        live.end_overlong(Instant::now(), n);
    }
    // The supervisor's record of the run: the policy's facts, the ladder's stage, the exit,
    // the lines, each decided once by its owner. Lost only if the supervising task was
    // dropped: then nothing is known of the run, and nothing is guessed.
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
    let (record, leftovers_killed, blocked_on_output) = record;
    let end = Instant::now();
    let exit = record.exit.unwrap_or_default();
    let t = live.t_ms(end);
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
        first_line: live.first_line.map(|t| t.saturating_duration_since(start)),
        kill_late: live.kill_late,
    };
    let finished = Finished::new(record, ours, facts, cfg);
    if live.host.telemetry.is_on() {
        let summary = finished.summary(finished.code, None);
        live.host.telemetry.run_ended(&summary);
    }
    Ok(finished)
}
