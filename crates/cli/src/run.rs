//! `agent-watchdog run` and the `claude-watchdog` drop-in: a presenter on top of the runtime's
//! [`Supervisor`], which spawns the command in its own process group, feeds the core policy and
//! stops the whole process tree. Here: stdout passed through byte for byte, stderr through the
//! warning filter, host stdin forwarded, our own messages and the status line, `--record`,
//! `--summary`, the exit code, and (for `run`) recovery after the first run ends.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_sdk_watchdog::{
    Batch, LineInfo, LineMeta, Output, Report, Stage, StdoutBatch, Supervisor, SupervisorConfig,
    SupervisorHandle,
};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use watchdog_core::capture::Record;
use watchdog_core::{
    Event, Kill, LineKind, LineView, Outcome, RateLimitConfig, RateLimitMonitor, SessionConfig,
    Signal, StallClock,
};

use crate::cli::RunArgs;
use crate::duration::format_duration;
use crate::event_log::EventLog;
use crate::exit_code;
use crate::record::{trim_cr, Recorder};
use crate::recover;
use crate::status::{self, Status};
use crate::stderr_filter::StderrFilter;
use crate::summary::{self, Summary};
use crate::tally::{Activity, Tally};
use crate::verdict::{event_json, kill_sentence, killed_clause, ms};

/// How the run presents itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `agent-watchdog run`: exit codes from the outcome table.
    Run,
    /// `claude-watchdog`: behaves like `claude`; the child's own exit code unless killed.
    DropIn,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The policy.
    pub limits: watchdog_core::Limits,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Where to write the summary (`-` for stderr).
    pub summary: Option<PathBuf>,
    /// Where to record the capture.
    pub record: Option<PathBuf>,
    /// Write a synthetic `result` on a kill and exit 1.
    pub emit_result: bool,
    /// Show the live status line on a terminal.
    pub status: bool,
    /// Print the missing-flags hint for `claude` commands.
    pub hint: bool,
    /// Run or drop-in.
    pub mode: Mode,
    /// The command line.
    pub argv: Vec<OsString>,
    /// The child's whole environment (`None`: inherit ours).
    pub env: Option<Vec<(OsString, OsString)>>,
    /// The child's working directory (`None`: ours).
    pub cwd: Option<PathBuf>,
    /// Discard the child's stdout instead of passing it through (for `demo`).
    pub quiet_stdout: bool,
}

/// Buffered child stdout is written at once past this size.
const OUT_BUF_FLUSH: usize = 256 * 1024;

/// How long the interrupt request of the kill ladder gets before SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// After the child exited, how long its pipes may stay open (held by descendants).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// The longest stdout line handled as one line (64 MiB); longer ones come in pieces.
const MAX_LINE: usize = 64 << 20;

/// Run `run`; returns the exit code.
pub fn main(args: RunArgs, mode: Mode) -> i32 {
    let limits = match args.policy.limits() {
        Ok(l) => l,
        Err(e) => return crate::replay_cmd::policy_error(&e),
    };
    let recovery = match args.recovery.settings() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agent-watchdog: {e}");
            return exit_code::USAGE;
        }
    };
    execute_with(
        RunConfig {
            limits,
            grace: args.policy.grace(),
            summary: args.summary,
            record: args.record,
            emit_result: args.emit_result,
            status: !args.no_status,
            hint: true,
            mode,
            argv: args.command,
            env: None,
            cwd: None,
            quiet_stdout: false,
        },
        Some(recovery),
    )
}

/// Run a command under the watchdog, without recovery; returns the exit code.
pub fn execute(cfg: RunConfig) -> i32 {
    execute_with(cfg, None)
}

/// Run a command under the watchdog and, with `recovery` (in [`Mode::Run`]), continue its
/// session once when the recovery policy says so; returns the exit code of the last run.
pub fn execute_with(cfg: RunConfig, recovery: Option<recover::Settings>) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-watchdog: cannot start the runtime: {e}");
            return exit_code::INTERNAL;
        }
    };
    let code = rt.block_on(run(cfg, recovery));
    // The host stdin reader may be blocked in a read; do not wait for it.
    rt.shutdown_background();
    code
}

/// A signal the user sent us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserSig {
    /// SIGINT.
    Int,
    /// SIGTERM.
    Term,
}

impl UserSig {
    fn name(self) -> &'static str {
        match self {
            UserSig::Int => "SIGINT",
            UserSig::Term => "SIGTERM",
        }
    }
}

/// The host's SIGINT and SIGTERM, for every run of one invocation and the waits between.
pub(crate) struct UserSignals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
}

impl UserSignals {
    fn new() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        UserSignals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The next signal (pending forever when none can be received).
    pub(crate) async fn recv(&mut self) -> UserSig {
        async fn one(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    if s.recv().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = one(&mut self.int) => UserSig::Int,
            () = one(&mut self.term) => UserSig::Term,
        }
    }
}

/// What one invocation shares between its runs: our stderr, the capture, the user's signals,
/// and the host's stdin (forwarded to the first run only).
pub(crate) struct Host {
    pub(crate) status: Status,
    pub(crate) recorder: Recorder,
    pub(crate) signals: UserSignals,
    stdin: Option<mpsc::Receiver<Option<Vec<u8>>>>,
}

/// One finished supervised run.
pub(crate) struct Finished {
    /// The command line.
    pub(crate) argv: Vec<OsString>,
    /// How it ended.
    pub(crate) outcome: Outcome,
    /// The watchdog's kill, if any.
    pub(crate) kill: Option<Kill>,
    /// How far the kill ladder went.
    ladder: Option<Stage>,
    /// The child's exit code and signal.
    exit: Option<(Option<i32>, Option<i32>)>,
    /// Our exit code for this run.
    pub(crate) code: i32,
    /// From spawn to the end.
    pub(crate) duration: Duration,
    /// What stdout said.
    pub(crate) tally: Tally,
    /// Stderr lines seen and suppressed.
    stderr: (u64, u64),
    /// Suppressed repeats per warning code.
    suppressed: Value,
    /// The user's signal, if one came.
    pub(crate) interrupted: Option<UserSig>,
    /// The events, as JSON (bounded: see [`EventLog`]).
    events: EventLog<Value>,
    /// The spawn instant.
    start: Instant,
    /// The last top-level `result` line, as printed.
    pub(crate) last_result: Option<Vec<u8>>,
    /// The rate-limit readings.
    pub(crate) monitor: RateLimitMonitor,
    /// When it ended, epoch ms.
    pub(crate) ended_wall_ms: u64,
    /// The `system/init` session id when it differed from the one expected (continuations).
    pub(crate) session_mismatch: Option<String>,
}

impl Finished {
    /// The summary of this run, with the process exit code `exit_code`.
    fn summary(&self, exit_code: i32, recovery: Option<Value>) -> Value {
        let mut v = Summary {
            argv: self
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            outcome: &self.outcome,
            kill: self.kill.as_ref(),
            ladder: self.ladder.map(Stage::as_str),
            exit: self.exit,
            exit_code,
            duration_ms: ms(self.duration),
            tally: &self.tally,
            stderr: self.stderr,
            suppressed: self.suppressed.clone(),
            interrupted: self.interrupted.map(UserSig::name),
            events: self.events.to_vec(),
            base: self.start,
            recovery,
        }
        .to_json();
        // The whole invocation's CPU: ours, and the children's we waited for.
        v["cpu"] = crate::cpu::usage_json();
        v
    }
}

fn has_stream_json_input(argv: &[OsString]) -> bool {
    let args: Vec<_> = argv.iter().map(|a| a.to_string_lossy()).collect();
    args.iter().enumerate().any(|(i, a)| {
        a == "--input-format=stream-json"
            || (a == "--input-format" && args.get(i + 1).is_some_and(|v| v == "stream-json"))
    })
}

/// Now, epoch milliseconds.
pub(crate) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(ms)
        .unwrap_or(0)
}

/// Read the host's stdin line by line on a thread (`None` at its end).
fn spawn_stdin_reader() -> mpsc::Receiver<Option<Vec<u8>>> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        use std::io::BufRead;
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        loop {
            let mut buf = Vec::new();
            match lock.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.blocking_send(None);
                    return;
                }
                Ok(_) => {
                    if tx.blocking_send(Some(buf)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

async fn run(cfg: RunConfig, recovery: Option<recover::Settings>) -> i32 {
    let status = Status::new(cfg.status);
    if cfg.argv.is_empty() {
        status.say(
            "error: no command given (usage: agent-watchdog run [FLAGS] -- COMMAND [ARGS...])",
        );
        return exit_code::USAGE;
    }
    if cfg.hint {
        if let Some(h) = crate::hint::missing_flags_hint(&cfg.argv) {
            status.say(&h);
        }
    }
    let recorder = match &cfg.record {
        Some(p) => match Recorder::create(p) {
            Ok(r) => r,
            Err(e) => {
                status.say(&format!(
                    "error: cannot create the capture {}: {e}",
                    p.display()
                ));
                return exit_code::INTERNAL;
            }
        },
        None => Recorder::none(),
    };
    let mut host = Host {
        status,
        recorder,
        signals: UserSignals::new(),
        stdin: Some(spawn_stdin_reader()),
    };
    let first = match supervise(&cfg, &cfg.argv, &mut host, None).await {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (last, recovery_json, code) = match recovery.filter(|_| cfg.mode == Mode::Run) {
        Some(settings) => {
            let r = recover::after(&cfg, &settings, &first, &mut host).await;
            let code = r
                .code
                .or(r.continued.as_ref().map(|c| c.code))
                .unwrap_or(first.code);
            (r.continued, Some(r.json), code)
        }
        None => (None, None, first.code),
    };
    let final_run = last.as_ref().unwrap_or(&first);

    // The synthetic result goes after everything the child printed.
    if let (true, Some(k)) = (emits_result(&cfg), final_run.kill.as_ref()) {
        let what = program_name(&final_run.argv);
        let line = crate::synthetic::result_line(
            k,
            &kill_sentence(k, &what),
            final_run.tally.session_id.as_deref(),
            ms(final_run.duration),
            final_run.tally.num_turns(),
        );
        let mut out = tokio::io::stdout();
        let _ = out.write_all(format!("{line}\n").as_bytes()).await;
        let _ = out.flush().await;
    }

    if let Some(path) = &cfg.summary {
        if let Err(e) = summary::write(path, &first.summary(code, recovery_json)) {
            eprintln!(
                "agent-watchdog: cannot write the summary {}: {e}",
                path.display()
            );
            return exit_code::INTERNAL;
        }
    }
    code
}

fn emits_result(cfg: &RunConfig) -> bool {
    cfg.emit_result || cfg.mode == Mode::DropIn
}

fn program_name(argv: &[OsString]) -> String {
    let program = argv.first().cloned().unwrap_or_default();
    std::path::Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string_lossy().into_owned())
}

/// What `run` learns from the fields of stdout lines, kept by the supervisor's stdout hook
/// ([`Seen::observe`]) from the view the supervisor parsed (so no line is parsed twice).
///
/// The hook runs on the supervisor's reader, which may be up to 8 MiB of stdout ahead of
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
    quiet: bool,
    stdout: tokio::io::Stdout,
    stdout_ok: bool,
    /// Child stdout not yet written: flushed when no more output is ready, or when large, so
    /// a burst of lines costs one write and a quiet child's line goes out at once.
    out_buf: Vec<u8>,
    /// What the stdout hook saw.
    seen: Arc<Mutex<Seen>>,
    /// Stdout lines (and pieces) passed on so far: the index of the next one.
    lines_done: u64,
    /// Stdout lines that did not parse.
    unparseable: u64,
    /// Over-long stdout lines.
    overlong_lines: u64,
    utilization: Option<f64>,
    stderr_filter: StderrFilter,
    events: EventLog<Value>,
    kill: Option<Kill>,
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
    /// Write the buffered child stdout. A closed stdout (e.g. `| head`) must not stop the run:
    /// the run keeps reading and stops writing.
    async fn flush_stdout(&mut self) {
        if self.out_buf.is_empty() {
            return;
        }
        let buf = std::mem::take(&mut self.out_buf);
        self.write_stdout(&buf).await;
        self.out_buf = buf;
        self.out_buf.clear();
    }

    async fn write_stdout(&mut self, bytes: &[u8]) {
        if self.stdout_ok {
            let mut r = self.stdout.write_all(bytes).await;
            if r.is_ok() {
                r = self.stdout.flush().await;
            }
            self.stdout_ok = r.is_ok();
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
        if self.stdout_ok && !self.quiet {
            if self.out_buf.is_empty() && b.bytes().len() >= OUT_BUF_FLUSH {
                self.write_stdout(b.bytes()).await;
            } else {
                self.out_buf.extend_from_slice(b.bytes());
                if self.out_buf.len() >= OUT_BUF_FLUSH {
                    self.flush_stdout().await;
                }
            }
        }
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
                    self.activity = a;
                    self.activity_since = now;
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
            Output::Overlong { .. } => {}
            Output::Stage(stage) => self.ladder = Some(stage),
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
            Event::Killed(k) if self.kill.is_none() => {
                self.host.status.say(&killed_clause(&k, &self.what));
                self.kill = Some(k);
            }
            Event::Stalling {
                clock, remaining, ..
            } => {
                let (what, kind) = match clock {
                    StallClock::Idle => ("no output at all", "idle"),
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

/// Forward the host's stdin to the child (in order; its end closes the child's stdin) and
/// report what was written, for the capture.
fn forward_stdin(
    mut host_stdin: mpsc::Receiver<Option<Vec<u8>>>,
    writer: agent_sdk_watchdog::StdinWriter,
) -> mpsc::UnboundedReceiver<Option<Vec<u8>>> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Some(line)) = host_stdin.recv().await {
            if writer.write_line(&line).await.is_err() {
                break;
            }
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        writer.close().await;
        let _ = tx.send(None);
    });
    rx
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
        stream_json_input: has_stream_json_input(argv),
        interrupt_grace: INTERRUPT_GRACE,
        term_grace: cfg.grace,
        become_subreaper: true,
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
        },
    );
    let mut written = match (host_stdin, sup.stdin()) {
        (Some(h), Some(w)) => Some(forward_stdin(h, w)),
        _ => None,
    };
    let mut live = Live {
        handle: sup.handle(),
        host,
        start,
        what: program_name(argv),
        quiet: cfg.quiet_stdout,
        stdout: tokio::io::stdout(),
        stdout_ok: true,
        out_buf: Vec::new(),
        seen,
        lines_done: 0,
        unparseable: 0,
        overlong_lines: 0,
        utilization: None,
        stderr_filter: StderrFilter::default(),
        events: EventLog::default(),
        kill: None,
        ladder: None,
        last_progress: None,
        activity: Activity::Starting,
        activity_since: start,
        last_result: None,
        overlong: None,
        expect_session: expect_session.map(str::to_owned),
        session_mismatch: None,
    };
    let mut interrupted: Option<UserSig> = None;
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            biased;
            // What we wrote to the child is recorded before what the child answered to it.
            note = recv_written(&mut written) => {
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
            () = std::future::ready(()), if !live.out_buf.is_empty() => live.flush_stdout().await,
            sig = live.host.signals.recv() => {
                if interrupted.is_some() {
                    live.host.status.say("second signal: killing the command's whole process tree");
                    live.handle.kill_tree_now();
                } else {
                    interrupted = Some(sig);
                    match sig {
                        UserSig::Int => live.handle.interrupt(),
                        UserSig::Term => live.handle.terminate(),
                    }
                }
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
    let child_code = code.or(signal.map(|s| 128 + s));
    let our_code = match (cfg.mode, &live.kill) {
        (_, Some(_)) if emits_result(cfg) => exit_code::INTERNAL,
        (Mode::DropIn, None) => child_code.unwrap_or(exit_code::INTERNAL),
        (Mode::Run, None) if interrupted.is_some() && matches!(outcome, Outcome::NoResult) => {
            match interrupted {
                Some(UserSig::Int) => exit_code::INTERRUPTED,
                _ => exit_code::TERMINATED,
            }
        }
        _ => exit_code::for_outcome(&outcome, child_code),
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
    Ok(Finished {
        argv: argv.to_vec(),
        outcome,
        kill: live.kill,
        ladder,
        exit,
        code: our_code,
        duration: end.saturating_duration_since(start),
        tally,
        stderr,
        suppressed,
        interrupted,
        events: live.events,
        start,
        last_result: live.last_result,
        monitor,
        ended_wall_ms: wall_ms(),
        session_mismatch: live.session_mismatch,
    })
}

async fn recv_written(
    rx: &mut Option<mpsc::UnboundedReceiver<Option<Vec<u8>>>>,
) -> Option<Vec<u8>> {
    match rx {
        Some(rx) => rx.recv().await.flatten(),
        None => std::future::pending().await,
    }
}

fn split_status(s: std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (s.code(), s.signal())
}
