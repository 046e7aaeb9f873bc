//! One supervised run, from spawn to the end: the main loop that passes the child's output on,
//! records it, shows what happens, forwards the user's signals (and escalates them), and stops
//! the child when its output cannot be delivered.

use std::ffi::OsString;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_sdk_watchdog::{
    Batch, LineInfo, LineMeta, Output, Report, Stage, StdoutBatch, Supervisor, SupervisorConfig,
    SupervisorHandle,
};
use serde_json::{json, Value};
use std::collections::VecDeque;
use tokio::sync::mpsc;
use watchdog_core::capture::Record;
use watchdog_core::{
    Event, Kill, LineKind, LineView, Outcome, RateLimitConfig, RateLimitMonitor, SessionConfig,
    Signal, StallClock,
};

use super::host_signals::UserSig;
use super::record::trim_cr;
use super::stderr_dedup::StderrDedup;
use super::stdout::WriteError;
use super::{program_name, stdin, wall_ms, Finished, Host, RunConfig, Stopped};
use crate::duration::format_duration;
use crate::event_log::EventLog;
use crate::exit_code;
use crate::status::{self, Status};
use crate::tally::{Activity, Tally};
use crate::verdict::{event_json, killed_clause, ms};

/// How long the interrupt request of the kill ladder gets before SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// After the child exited, how long its pipes may stay open (held by descendants).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
// The longest stdout line handled as one line (64 MiB, the cap `replay` and `audit` read
// captures with); longer ones come in pieces.
use crate::capture_reader::MAX_LINE;

/// What `run` learns from the fields of stdout lines, kept by the supervisor's stdout hook
/// ([`Seen::observe`]) from the view the supervisor parsed (so no line is parsed twice).
///
/// The hook runs on the supervisor's reader, which may be up to 4 MiB of stdout ahead of
/// `run`'s loop. What shows (messages, the utilization fed back, the continuation's session
/// check, the status line's activity) is queued as [`Note`]s stamped with the line's index,
/// and the loop acts on them only once it has passed that line on ([`Live::apply_seen`]):
/// at the same point of the stream as when it looked at each line itself.
struct Seen {
    /// The tally of the lines that parsed (the loop counts the others).
    tally: Tally,
    monitor: RateLimitMonitor,
    /// The activity last queued as a note.
    activity: Activity,
    /// What the loop has to act on, by stdout line index, in order.
    notes: VecDeque<(u64, Note)>,
}

/// Something the loop does for a stdout line ([`Seen`]).
enum Note {
    /// Say a message (a rate-limit change).
    Say(String),
    /// A `rate_limit_event` came: feed the utilization to the policy if it changed.
    RateLimit,
    /// The activity the status line shows changed.
    Activity(Activity),
    /// A top-level `system/init` with this session id.
    Init(Option<String>),
}

impl Seen {
    fn new() -> Self {
        Seen {
            tally: Tally::default(),
            monitor: RateLimitMonitor::new(RateLimitConfig::default()),
            activity: Activity::Starting,
            notes: VecDeque::new(),
        }
    }

    fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
        seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One parsed stdout line, on the supervisor's reader.
    fn observe(&mut self, view: &LineView<'_>, info: &LineInfo<'_>) {
        let (class, top_level, i) = (info.class, info.top_level, info.index);
        self.tally
            .observe_line(view, class, top_level, info.new_session_id);
        match class.kind {
            LineKind::RateLimit => {
                // Warnings (once per window until it resets or falls back), rejections,
                // credits and recoveries: each said once, as it happens.
                for event in self.monitor.observe(wall_ms(), view) {
                    self.notes.push_back((i, Note::Say(event.to_string())));
                }
                self.notes.push_back((i, Note::RateLimit));
            }
            LineKind::System if top_level && view.subtype().as_deref() == Some("init") => {
                let sid = view.session_id().map(|s| s.into_owned());
                self.notes.push_back((i, Note::Init(sid)));
            }
            _ => {}
        }
        if self.tally.activity != self.activity {
            self.activity = self.tally.activity.clone();
            self.notes
                .push_back((i, Note::Activity(self.activity.clone())));
        }
    }
}

/// What a run shows and keeps while it runs.
struct Live<'h> {
    host: &'h mut Host,
    handle: SupervisorHandle,
    start: Instant,
    what: String,
    /// What the stdout hook saw.
    seen: Arc<Mutex<Seen>>,
    /// Stdout lines (and pieces) passed on so far: the index of the next one.
    lines_done: u64,
    /// Stdout lines that did not parse.
    unparseable: u64,
    /// Over-long stdout lines.
    overlong_lines: u64,
    utilization: Option<f64>,
    stderr_filter: StderrDedup,
    events: EventLog<Value>,
    kill: Option<Kill>,
    /// Our stdout could not be written: the child is being stopped.
    output_error: Option<WriteError>,
    ladder: Option<Stage>,
    last_progress: Option<Instant>,
    activity: Activity,
    activity_since: Instant,
    /// The last top-level `result` line, as printed.
    last_result: Option<Vec<u8>>,
    /// Bytes of the over-long line being read, if one is.
    overlong: Option<usize>,
    expect_session: Option<String>,
    session_mismatch: Option<String>,
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

    /// Stdout lines read together: passed on as they are (one write for a large batch), then
    /// tallied from the class the supervisor gave each.
    async fn on_stdout(&mut self, b: StdoutBatch) {
        let r = self.host.stdout.push(b.bytes()).await;
        self.check_write(r);
        let now = b.at();
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
        // Only the last top-level result counts: one copy per batch at most.
        let result = |m: &&LineMeta| m.class.kind == LineKind::Result && m.top_level && !m.piece;
        if let Some(m) = b.lines().iter().rev().find(result) {
            self.last_result = Some(b.line(m).to_vec());
        }
        self.lines_done += b.lines().len() as u64;
        self.apply_seen(now);
    }

    /// Act on what the stdout hook noted for the lines passed on so far (`now`: when they
    /// were read).
    fn apply_seen(&mut self, now: Instant) {
        let (notes, utilization) = {
            let mut seen = Seen::lock(&self.seen);
            let n = seen
                .notes
                .iter()
                .take_while(|(i, _)| *i < self.lines_done)
                .count();
            if n == 0 {
                return;
            }
            let notes: Vec<Note> = seen.notes.drain(..n).map(|(_, note)| note).collect();
            let rate = notes.iter().any(|n| matches!(n, Note::RateLimit));
            let u = rate.then(|| seen.monitor.utilization(wall_ms()));
            (notes, u)
        };
        for note in notes {
            match note {
                Note::Say(msg) => self.host.status.say(&msg),
                Note::RateLimit => {}
                Note::Activity(a) => {
                    self.activity_since = now.checked_sub(a.already()).unwrap_or(now);
                    self.activity = a;
                }
                Note::Init(sid) => self.check_session(sid),
            }
        }
        if let Some(u) = utilization {
            self.set_utilization(u);
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
            Output::Stage(stage) => self.ladder = Some(stage),
            // Over-long lines are said when they end (`end_overlong`).
            _ => {}
        }
    }

    fn end_overlong(&mut self, now: Instant, n: usize) {
        self.overlong_lines += 1;
        self.host.status.say(&format!(
            "warning: a stdout line of {n} bytes is over the {} MiB limit; counted as a keep-alive",
            MAX_LINE >> 20
        ));
        let t = self.t_ms(now);
        self.host
            .recorder
            .write(t, Record::Raw(format!("<over-long line: {n} bytes>")));
    }

    /// One complete stdout line, passed on: recorded and, when it did not parse, counted. The
    /// stdout hook ([`Seen::observe`]) looked inside it already.
    fn stdout_line(&mut self, now: Instant, bytes: &[u8], m: &LineMeta) {
        let t = self.t_ms(now);
        self.host.recorder.stdout_line(t, bytes);
        let class = m.class;
        if class.kind == LineKind::Unparseable {
            self.unparseable += 1;
            return;
        }
        if matches!(class.signal, Signal::Progress | Signal::Settle) {
            self.last_progress = Some(now);
        }
    }

    /// A continuation must go on with the same session: stop it when its id differs.
    fn check_session(&mut self, got: Option<String>) {
        let Some(expected) = &self.expect_session else {
            return;
        };
        if got.as_deref() == Some(expected.as_str()) || self.session_mismatch.is_some() {
            return;
        }
        let got = got.unwrap_or_default();
        self.host.status.say(&format!(
            "recovery: the continuation runs session {got:?}, not {expected}; stopping it"
        ));
        self.session_mismatch = Some(got);
        self.handle.kill_now();
    }

    fn update_utilization(&mut self) {
        let u = Seen::lock(&self.seen).monitor.utilization(wall_ms());
        self.set_utilization(u);
    }

    /// Feed the rate-limit utilization to the policy when it changed.
    fn set_utilization(&mut self, u: Option<f64>) {
        if u != self.utilization {
            self.utilization = u;
            self.handle.set_utilization(u);
        }
    }

    fn on_event(&mut self, now: Instant, ev: Event) {
        let at = match &ev {
            Event::Killed(k) => k.at,
            _ => now,
        };
        self.events.push_json(event_json(&ev, at, self.start));
        match ev {
            Event::Killed(k) if self.kill.is_none() && self.output_error.is_none() => {
                self.host.status.say(&killed_clause(&k, &self.what));
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
        let rate = {
            let seen = Seen::lock(&self.seen);
            let any = seen.monitor.active_windows(wall).next().is_some();
            any.then(|| seen.monitor.summary(wall))
        };
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
    expect_session: Option<&str>,
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
    let seen = Arc::new(Mutex::new(Seen::new()));
    let hook_seen = seen.clone();
    let config = SupervisorConfig {
        policy: Some(SessionConfig::default().with_limits(cfg.limits.clone())),
        stream_json_input: stdin::has_stream_json_input(argv),
        interrupt_grace: INTERRUPT_GRACE,
        term_grace: cfg.grace,
        become_subreaper: true,
        claim_orphans: true,
        die_with_host: true,
        max_line: MAX_LINE,
        pipe_stdin: host_stdin.is_some(),
        drain_timeout: DRAIN_AFTER_EXIT,
        ..SupervisorConfig::default()
    }
    .on_stdout_line(move |view, info| Seen::lock(&hook_seen).observe(view, info));
    let spawn_wall = wall_ms();
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
            wall_ms: Some(spawn_wall),
            argv: argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            env: crate::mcp_limits::recorded_env(cfg.env.as_deref()),
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
        seen,
        lines_done: 0,
        unparseable: 0,
        overlong_lines: 0,
        utilization: None,
        stderr_filter: StderrDedup::default(),
        events: EventLog::default(),
        kill: None,
        output_error: None,
        ladder: None,
        last_progress: None,
        activity: Activity::Starting,
        activity_since: start,
        last_result: None,
        overlong: None,
        expect_session: expect_session.map(str::to_owned),
        session_mismatch: None,
    };
    let mut signals = Interrupts {
        first: None,
        escalate_at: None,
        grace: cfg.grace,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            biased;
            // What we wrote to the child is recorded before what the child answered to it.
            note = stdin::recv_written(&mut written) => {
                if note.is_none() {
                    written = None;
                }
                live.record_written(note);
            }
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
            _ = tick.tick() => {
                live.update_utilization();
                live.refresh_status(Instant::now());
            }
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
    let report: Option<Report> = sup.wait().await.ok();
    let end = Instant::now();
    let exit = report.as_ref().and_then(|r| r.status).map(split_status);
    let (code, signal) = exit.unwrap_or((None, None));
    let t = live.t_ms(end);
    live.host.recorder.write(t, Record::Exit { code, signal });
    let outcome = match &live.kill {
        Some(k) => Outcome::Killed { kind: k.kind },
        None => report
            .as_ref()
            .and_then(|r| r.outcome.clone())
            .unwrap_or(Outcome::NoResult),
    };
    // Every line was passed on and the reader is gone: what the hook saw is complete.
    let (tally, monitor) = {
        let mut seen = Seen::lock(&live.seen);
        let mut tally = std::mem::take(&mut seen.tally);
        tally.counts[LineKind::Unparseable.index()] += live.unparseable;
        tally.overlong += live.overlong_lines;
        let monitor = std::mem::replace(
            &mut seen.monitor,
            RateLimitMonitor::new(RateLimitConfig::default()),
        );
        (tally, monitor)
    };
    let stderr = (live.stderr_filter.lines(), live.stderr_filter.suppressed());
    let suppressed = live.stderr_filter.suppressed_json();
    let ladder = live.ladder.or(report
        .as_ref()
        .and_then(|r| r.kill.as_ref().map(|k| k.stage)));
    let stopped = match (live.output_error, live.kill) {
        (Some(e), _) => Some(Stopped::Output(e)),
        (None, Some(k)) => Some(Stopped::Kill(k)),
        (None, None) => None,
    };
    let mut finished = Finished {
        code: exit_code::INTERNAL,
        argv: argv.to_vec(),
        outcome,
        stopped,
        ladder,
        exit,
        duration: end.saturating_duration_since(start),
        tally,
        stderr,
        suppressed,
        interrupted: signals.first,
        events: live.events,
        start,
        last_result: live.last_result,
        monitor,
        ended_wall_ms: wall_ms(),
        session_mismatch: live.session_mismatch,
        leftovers_killed: report.as_ref().map_or(0, |r| r.leftovers_killed),
        blocked_on_output: report
            .as_ref()
            .map_or(Duration::ZERO, |r| r.blocked_on_output),
    };
    finished.code = finished.exit_code(cfg);
    Ok(finished)
}

fn split_status(s: std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (s.code(), s.signal())
}

/// The host's stdin, line by line, as [`stdin::spawn_reader`] delivers it.
pub(crate) type HostStdin = mpsc::Receiver<Option<Vec<u8>>>;
