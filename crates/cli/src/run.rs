//! `agent-watchdog run` and the `claude-watchdog` drop-in: spawn a command in its own process
//! group, pass its stdout through byte for byte and its stderr line by line, feed every line to
//! the core policy, and stop the whole process tree when the policy says so.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use watchdog_core::capture::Record;
use watchdog_core::{
    Event, Kill, Limits, LineView, Outcome, Registry, SessionConfig, Signal, StallClock,
};

use crate::cli::RunArgs;
use crate::duration::format_duration;
use crate::exit_code;
use crate::lines::{LineReader, MAX_LINE};
use crate::process::{self, Sig};
use crate::record::{trim_cr, Recorder};
use crate::status::{self, Status};
use crate::stderr_filter::StderrFilter;
use crate::summary::{self, Summary};
use crate::tally::Tally;
use crate::verdict::{event_json, kill_sentence, killed_clause, ms, offset_ms};

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
    pub limits: Limits,
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

/// How long the interrupt request of the kill ladder gets before SIGTERM.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// After the child exited, how long its pipes may stay open (held by descendants).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// Run `run`; returns the exit code.
pub fn main(args: RunArgs, mode: Mode) -> i32 {
    let limits = match args.policy.limits() {
        Ok(l) => l,
        Err(e) => return crate::replay_cmd::policy_error(&e),
    };
    execute(RunConfig {
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
    })
}

/// Run a command under the watchdog; returns the exit code.
pub fn execute(cfg: RunConfig) -> i32 {
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
    let code = rt.block_on(run(cfg));
    // The stdin reader may be blocked in a read; do not wait for it.
    rt.shutdown_background();
    code
}

enum Msg {
    Stdout(Vec<u8>),
    Overlong(usize),
    StdoutClosed,
    Stderr(Vec<u8>, bool),
    StderrClosed,
    StdinWritten(Vec<u8>),
    StdinClosed,
}

enum StdinCmd {
    Host(Vec<u8>),
    Interrupt,
    HostEof,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Interrupt,
    Term,
    Kill,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Interrupt => "interrupt",
            Stage::Term => "sigterm",
            Stage::Kill => "sigkill",
        }
    }
}

fn has_stream_json_input(argv: &[OsString]) -> bool {
    let args: Vec<_> = argv.iter().map(|a| a.to_string_lossy()).collect();
    args.iter().enumerate().any(|(i, a)| {
        a == "--input-format=stream-json"
            || (a == "--input-format" && args.get(i + 1).is_some_and(|v| v == "stream-json"))
    })
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(ms)
        .unwrap_or(0)
}

fn spawn_stdin_reader(tx: mpsc::Sender<StdinCmd>) {
    std::thread::spawn(move || {
        use std::io::BufRead;
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        loop {
            let mut buf = Vec::new();
            match lock.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.blocking_send(StdinCmd::HostEof);
                    return;
                }
                Ok(_) => {
                    if tx.blocking_send(StdinCmd::Host(buf)).is_err() {
                        return;
                    }
                }
            }
        }
    });
}

struct Live {
    reg: Registry,
    id: watchdog_core::SessionId,
    start: Instant,
    tally: Tally,
    recorder: Recorder,
    status: Status,
    events: Vec<Value>,
    kill: Option<Kill>,
    last_progress: Option<Instant>,
    activity: String,
    activity_since: Instant,
    utilization: Option<f64>,
    start_wall_ms: u64,
    what: String,
}

impl Live {
    fn t_ms(&self, now: Instant) -> u64 {
        offset_ms(self.start, now)
    }

    fn stdout_line(&mut self, now: Instant, bytes: &[u8]) {
        let t = self.t_ms(now);
        self.recorder.stdout_line(t, bytes);
        let class = match LineView::parse(bytes) {
            Ok(view) => {
                let class = self.reg.observe(now, self.id, &view);
                self.tally.observe(&view, class);
                class
            }
            Err(_) => {
                let class = self.reg.observe_line(now, self.id, bytes);
                self.tally.unparseable();
                class
            }
        };
        if matches!(class.signal, Signal::Progress | Signal::Settle) {
            self.last_progress = Some(now);
        }
        let activity = self.tally.activity.to_string();
        if activity != self.activity {
            self.activity = activity;
            self.activity_since = now;
        }
        self.update_utilization(now);
    }

    fn update_utilization(&mut self, now: Instant) {
        if self.tally.rate_limit.is_none() {
            return;
        }
        let wall_s = (self.start_wall_ms + self.t_ms(now)) as f64 / 1000.0;
        let u = self.tally.utilization(Some(wall_s));
        if u != self.utilization {
            self.utilization = u;
            self.reg.set_utilization(now, u);
        }
    }

    /// Drain the registry's events; returns a new kill, if any.
    fn drain(&mut self, now: Instant) -> Option<Kill> {
        let mut new_kill = None;
        while let Some(ev) = self.reg.poll_event() {
            let at = match &ev {
                Event::Killed(k) => k.at,
                _ => now,
            };
            self.events.push(event_json(&ev, at, self.start));
            match ev {
                Event::Killed(k) if self.kill.is_none() => {
                    self.status.say(&killed_clause(&k, &self.what));
                    self.kill = Some(k.clone());
                    new_kill = Some(k);
                }
                Event::Stalling {
                    clock, remaining, ..
                } => {
                    let (what, kind) = match clock {
                        StallClock::Idle => ("no output at all", "idle"),
                        StallClock::NoProgress => ("no progress (keep-alives only)", "no_progress"),
                    };
                    self.status.say(&format!(
                        "warning: {what} for a while; it will be stopped ({kind}) in {} unless it \
                         moves",
                        format_duration(remaining)
                    ));
                }
                _ => {}
            }
        }
        new_kill
    }

    fn refresh_status(&self, now: Instant) {
        if !self.status.is_live() {
            return;
        }
        let rate = self.tally.rate_limit_summary();
        self.status.set(status::render(
            now,
            self.start,
            &self.activity,
            self.activity_since,
            self.last_progress,
            rate.as_deref(),
        ));
    }
}

async fn run(cfg: RunConfig) -> i32 {
    let status = Status::new(cfg.status);
    let Some((program, args)) = cfg.argv.split_first() else {
        status.say(
            "error: no command given (usage: agent-watchdog run [FLAGS] -- COMMAND [ARGS...])",
        );
        return exit_code::USAGE;
    };
    let program_name = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_string_lossy().into_owned());
    if cfg.hint {
        if let Some(h) = crate::hint::missing_flags_hint(&cfg.argv) {
            status.say(&h);
        }
    }
    let mut recorder = match &cfg.record {
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
    process::become_subreaper();

    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(env) = &cfg.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(dir) = &cfg.cwd {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let spawn_wall = wall_ms();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            status.say(&format!(
                "error: cannot run {}: {e}",
                program.to_string_lossy()
            ));
            return exit_code::INTERNAL;
        }
    };
    let start = Instant::now();
    let pid = child.id().unwrap_or(0);
    recorder.write(
        0,
        Record::Start {
            wall_ms: Some(spawn_wall),
            argv: cfg
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        },
    );
    let mut reg = Registry::new(cfg.limits.clone());
    let id = reg.register(start, SessionConfig::default());

    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    // stdout: pass through first, then tell the policy.
    let quiet = cfg.quiet_stdout;
    let stdout_task = child.stdout.take().map(|out| {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut reader = LineReader::new(BufReader::with_capacity(1 << 16, out), MAX_LINE);
            let mut sink = tokio::io::stdout();
            let mut sink_ok = !quiet;
            let mut overlong = 0usize;
            while let Ok(Some(line)) = reader.next().await {
                if sink_ok {
                    let mut r = sink.write_all(&line.bytes).await;
                    if r.is_ok() && line.newline {
                        r = sink.write_all(b"\n").await;
                    }
                    if r.is_ok() {
                        r = sink.flush().await;
                    }
                    // A closed stdout (e.g. `| head`) must not stall the child: keep reading.
                    sink_ok = r.is_ok();
                }
                if line.continues || overlong > 0 {
                    overlong += line.bytes.len();
                    if !line.continues {
                        let _ = tx.send(Msg::Overlong(overlong)).await;
                        overlong = 0;
                    }
                    continue;
                }
                if tx.send(Msg::Stdout(line.bytes)).await.is_err() {
                    break;
                }
            }
            let _ = sink.flush().await;
            let _ = tx.send(Msg::StdoutClosed).await;
        })
    });
    if let Some(err) = child.stderr.take() {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut reader = LineReader::new(BufReader::new(err), 1 << 20);
            while let Ok(Some(line)) = reader.next().await {
                if tx
                    .send(Msg::Stderr(line.bytes, line.newline))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            let _ = tx.send(Msg::StderrClosed).await;
        });
    }
    // stdin: host lines → child, in order; EOF closes the child's stdin.
    let (stdin_tx, mut stdin_rx) = mpsc::channel::<StdinCmd>(64);
    if let Some(mut child_in) = child.stdin.take() {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(cmd) = stdin_rx.recv().await {
                let bytes = match cmd {
                    StdinCmd::Host(b) => b,
                    StdinCmd::Interrupt => {
                        let req = format!(
                            "{{\"type\":\"control_request\",\"request_id\":\"agent_watchdog_interrupt_{}\",\"request\":{{\"subtype\":\"interrupt\"}}}}\n",
                            std::process::id()
                        );
                        req.into_bytes()
                    }
                    StdinCmd::HostEof => break,
                };
                if child_in.write_all(&bytes).await.is_err() || child_in.flush().await.is_err() {
                    break;
                }
                if tx.send(Msg::StdinWritten(bytes)).await.is_err() {
                    break;
                }
            }
            drop(child_in);
            let _ = tx.send(Msg::StdinClosed).await;
        });
        spawn_stdin_reader(stdin_tx.clone());
    }
    drop(tx);

    let stream_json_input = has_stream_json_input(&cfg.argv);
    let mut live = Live {
        reg,
        id,
        start,
        tally: Tally::default(),
        recorder,
        status,
        events: Vec::new(),
        kill: None,
        last_progress: None,
        activity: "starting".into(),
        activity_since: start,
        utilization: None,
        start_wall_ms: spawn_wall,
        what: program_name.clone(),
    };

    let mut sigint = signal_stream(SigKind::Int);
    let mut sigterm = signal_stream(SigKind::Term);
    let mut interrupted: Option<Sig> = None;
    let mut ladder: Option<(Stage, tokio::time::Instant)> = None;
    let mut ladder_reached: Option<Stage> = None;
    let mut stdin_open = true;
    let mut stdout_open = stdout_task.is_some();
    let mut stderr_open = true;
    let mut exit: Option<std::process::ExitStatus> = None;
    let mut exited_at: Option<Instant> = None;
    let mut outcome: Option<Outcome> = None;
    let mut stderr_filter = StderrFilter::default();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut rx_open = true;

    loop {
        // The stream ended: the child exited and its stdout closed (or stayed open too long).
        if outcome.is_none() {
            if let Some(at) = exited_at {
                let drained = !stdout_open || at.elapsed() >= DRAIN_AFTER_EXIT;
                if drained {
                    let now = Instant::now();
                    let (code, signal) = exit.map_or((None, None), split_status);
                    live.recorder
                        .write(live.t_ms(now), Record::Exit { code, signal });
                    outcome = Some(match &live.kill {
                        Some(k) => Outcome::Killed { kind: k.kind },
                        None => live.reg.end(now, live.id).unwrap_or(Outcome::NoResult),
                    });
                    live.drain(now);
                }
            }
        }
        if outcome.is_some()
            && (!stderr_open || exited_at.is_some_and(|a| a.elapsed() >= DRAIN_AFTER_EXIT))
        {
            break;
        }
        let timer = if outcome.is_none() && live.kill.is_none() {
            live.reg.poll_timeout()
        } else {
            None
        };
        let drain_at = exited_at.map(|a| tokio::time::Instant::from_std(a + DRAIN_AFTER_EXIT));
        tokio::select! {
            biased;
            msg = rx.recv(), if rx_open => {
                let now = Instant::now();
                match msg {
                    Some(Msg::Stdout(bytes)) => live.stdout_line(now, &bytes),
                    Some(Msg::Overlong(n)) => {
                        live.tally.overlong += 1;
                        live.status.say(&format!("warning: a stdout line of {n} bytes is over the {} MiB limit; counted as a keep-alive", MAX_LINE >> 20));
                        let t = live.t_ms(now);
                        live.recorder.write(t, Record::Raw(format!("<over-long line: {n} bytes>")));
                        live.reg.observe_line(now, live.id, b"");
                    }
                    Some(Msg::StdoutClosed) => stdout_open = false,
                    Some(Msg::Stderr(bytes, newline)) => {
                        let t = live.t_ms(now);
                        live.recorder.write(t, Record::Stderr(String::from_utf8_lossy(trim_cr(&bytes)).into_owned()));
                        if stderr_filter.admit(&bytes) {
                            let mut b = bytes;
                            if newline {
                                b.push(b'\n');
                            }
                            live.status.write_raw(&b);
                        }
                    }
                    Some(Msg::StderrClosed) => stderr_open = false,
                    Some(Msg::StdinWritten(bytes)) => {
                        let t = live.t_ms(now);
                        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                            if let Ok(view) = LineView::from_value(&v) {
                                live.reg.observe_input(now, live.id, &view);
                            }
                            live.recorder.write(t, Record::Stdin(v));
                        }
                    }
                    Some(Msg::StdinClosed) => {
                        if stdin_open {
                            stdin_open = false;
                            let t = live.t_ms(now);
                            live.recorder.write(t, Record::Stdin(serde_json::json!({"note": "stdin closed"})));
                        }
                    }
                    None => {
                        rx_open = false;
                        stdout_open = false;
                        stderr_open = false;
                    }
                }
                // A flood of lines must not starve the deadlines.
                if live.kill.is_none() && outcome.is_none() && live.reg.poll_timeout().is_some_and(|d| d <= now) {
                    live.reg.handle_timeout(now);
                }
                if let Some(k) = live.drain(now) {
                    ladder = Some(start_ladder(&k, stream_json_input && stdin_open, &stdin_tx, pid, cfg.grace));
                    ladder_reached = ladder.map(|l| l.0);
                }
            }
            status = child.wait(), if exit.is_none() => {
                let now = Instant::now();
                exit = status.ok();
                exited_at = Some(now);
                if live.kill.is_some() || interrupted.is_some() {
                    // Nothing the child started may outlive a kill.
                    process::kill_all_descendants();
                }
            }
            _ = sleep_until(timer), if timer.is_some() => {
                let now = Instant::now();
                live.reg.handle_timeout(now);
                if let Some(k) = live.drain(now) {
                    ladder = Some(start_ladder(&k, stream_json_input && stdin_open, &stdin_tx, pid, cfg.grace));
                    ladder_reached = ladder.map(|l| l.0);
                }
            }
            _ = tokio::time::sleep_until(ladder.map_or_else(tokio::time::Instant::now, |l| l.1)), if ladder.is_some() && exit.is_none() => {
                let (stage, _) = ladder.unwrap_or((Stage::Kill, tokio::time::Instant::now()));
                let next = match stage {
                    Stage::Interrupt => {
                        process::signal_group(pid, Sig::Term);
                        (Stage::Term, cfg.grace)
                    }
                    Stage::Term | Stage::Kill => {
                        process::signal_group(pid, Sig::Kill);
                        process::kill_all_descendants();
                        (Stage::Kill, Duration::from_secs(1))
                    }
                };
                ladder = Some((next.0, tokio::time::Instant::now() + next.1));
                ladder_reached = Some(next.0);
            }
            Some(sig) = recv_signal(&mut sigint, Sig::Int) => on_user_signal(sig, &mut interrupted, pid, &live.status),
            Some(sig) = recv_signal(&mut sigterm, Sig::Term) => on_user_signal(sig, &mut interrupted, pid, &live.status),
            _ = tokio::time::sleep_until(drain_at.unwrap_or_else(tokio::time::Instant::now)), if drain_at.is_some() => {}
            _ = tick.tick() => {
                let now = Instant::now();
                live.update_utilization(now);
                live.refresh_status(now);
            }
        }
    }
    live.status.finish();
    let end = Instant::now();
    let outcome = outcome.unwrap_or(Outcome::NoResult);
    let (code, signal) = exit.map_or((None, None), split_status);
    let child_code = code.or(signal.map(|s| 128 + s));

    // The synthetic result goes after everything the child printed.
    let emit = cfg.emit_result || cfg.mode == Mode::DropIn;
    if let Some(task) = stdout_task {
        let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    }
    if let (true, Some(k)) = (emit, live.kill.as_ref()) {
        let sentence = kill_sentence(k, &live.what);
        let line = crate::synthetic::result_line(
            k,
            &sentence,
            live.tally.session_id.as_deref(),
            ms(end.saturating_duration_since(start)),
            live.tally.num_turns(),
        );
        let mut out = tokio::io::stdout();
        let _ = out.write_all(format!("{line}\n").as_bytes()).await;
        let _ = out.flush().await;
    }

    let code = match (cfg.mode, &live.kill) {
        (_, Some(_)) if emit => exit_code::INTERNAL,
        (Mode::DropIn, None) => child_code.unwrap_or(exit_code::INTERNAL),
        (Mode::Run, None) if interrupted.is_some() && matches!(outcome, Outcome::NoResult) => {
            match interrupted {
                Some(Sig::Int) => exit_code::INTERRUPTED,
                _ => exit_code::TERMINATED,
            }
        }
        _ => exit_code::for_outcome(&outcome, child_code),
    };

    if let Some(path) = &cfg.summary {
        let s = Summary {
            argv: cfg
                .argv
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            outcome: &outcome,
            kill: live.kill.as_ref(),
            ladder: ladder_reached.map(Stage::name),
            exit: exit.map(split_status),
            exit_code: code,
            duration_ms: ms(end.saturating_duration_since(start)),
            tally: &live.tally,
            stderr: (stderr_filter.lines(), stderr_filter.suppressed()),
            interrupted: interrupted.map(|s| if s == Sig::Int { "SIGINT" } else { "SIGTERM" }),
            events: std::mem::take(&mut live.events),
            base: start,
        };
        if let Err(e) = summary::write(path, &s.to_json()) {
            eprintln!(
                "agent-watchdog: cannot write the summary {}: {e}",
                path.display()
            );
            return exit_code::INTERNAL;
        }
    }
    code
}

fn split_status(s: std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        (s.code(), s.signal())
    }
    #[cfg(not(unix))]
    {
        (s.code(), None)
    }
}

fn start_ladder(
    kill: &Kill,
    can_interrupt: bool,
    stdin: &mpsc::Sender<StdinCmd>,
    pid: u32,
    grace: Duration,
) -> (Stage, tokio::time::Instant) {
    let _ = kill;
    let now = tokio::time::Instant::now();
    if can_interrupt && stdin.try_send(StdinCmd::Interrupt).is_ok() {
        return (Stage::Interrupt, now + INTERRUPT_GRACE);
    }
    process::signal_group(pid, Sig::Term);
    (Stage::Term, now + grace)
}

fn on_user_signal(sig: Sig, interrupted: &mut Option<Sig>, pid: u32, status: &Status) {
    if interrupted.is_some() {
        status.say("second signal: killing the command's whole process tree");
        process::signal_group(pid, Sig::Kill);
        process::kill_all_descendants();
    } else {
        *interrupted = Some(sig);
        process::signal_group(pid, sig);
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

enum SigKind {
    Int,
    Term,
}

#[cfg(unix)]
type SignalStream = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type SignalStream = Option<()>;

fn signal_stream(kind: SigKind) -> SignalStream {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let k = match kind {
            SigKind::Int => SignalKind::interrupt(),
            SigKind::Term => SignalKind::terminate(),
        };
        signal(k).ok()
    }
    #[cfg(not(unix))]
    {
        let _ = kind;
        None
    }
}

async fn recv_signal(s: &mut SignalStream, sig: Sig) -> Option<Sig> {
    #[cfg(unix)]
    match s {
        Some(s) => s.recv().await.map(|()| sig),
        None => std::future::pending().await,
    }
    #[cfg(not(unix))]
    {
        let _ = (s, sig);
        std::future::pending().await
    }
}
