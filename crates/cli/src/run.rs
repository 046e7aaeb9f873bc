//! `agent-watchdog run` and the `claude-watchdog` drop-in: spawn a command in its own process
//! group, pass its stdout through byte for byte and its stderr line by line, feed every line to
//! the core policy, and stop the whole process tree when the policy says so.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_sdk_watchdog::supervisor::{
    Output, Stage as SupStage, Supervisor, SupervisorConfig, SupervisorHandle,
};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use watchdog_core::capture::Record;
use watchdog_core::rate_limit::{RateLimitConfig, RateLimitMonitor};
use watchdog_core::{
    classify, Event, Kill, Limits, LineKind, LineView, Outcome, SessionConfig, Signal, StallClock,
};

use crate::cli::RunArgs;
use crate::duration::format_duration;
use crate::exit_code;
use crate::record::{trim_cr, Recorder};
use crate::status::{self, Status};
use crate::stderr_filter::StderrFilter;
use crate::summary::{self, Summary};
use crate::tally::Tally;
use crate::verdict::{event_json, for_display, kill_sentence, killed_clause, ms, offset_ms};

/// The longest stdout line handled as one line (64 MiB, the supervisor's default); longer
/// ones come in pieces and count as keep-alives.
const MAX_LINE: usize = 64 << 20;

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

fn spawn_stdin_reader(tx: mpsc::Sender<Option<Vec<u8>>>) {
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
}

struct Live {
    start: Instant,
    tally: Tally,
    recorder: Recorder,
    status: Status,
    events: Vec<Value>,
    kill: Option<Kill>,
    last_progress: Option<Instant>,
    activity: String,
    activity_since: Instant,
    monitor: RateLimitMonitor,
    utilization: Option<f64>,
    what: String,
    limits: Limits,
}

impl Live {
    fn t_ms(&self, now: Instant) -> u64 {
        offset_ms(self.start, now)
    }

    fn stdout_line(&mut self, now: Instant, bytes: &[u8]) {
        let t = self.t_ms(now);
        self.recorder.stdout_line(t, bytes);
        match LineView::parse(bytes) {
            Ok(view) => {
                let class = classify(&view);
                self.tally.observe(&view, class);
                if matches!(class.signal, Signal::Progress | Signal::Settle) {
                    self.last_progress = Some(now);
                }
                if class.kind == LineKind::RateLimit {
                    for ev in self.monitor.observe(wall_ms(), &view) {
                        self.status.say(&format!("rate limit: {}", ev));
                    }
                }
            }
            Err(_) => self.tally.unparseable(),
        }
        let activity = self.tally.activity.to_string();
        if activity != self.activity {
            self.activity = activity;
            self.activity_since = now;
        }
    }

    /// The utilization to feed the policy, when it changed (a frame came or a window reset).
    fn utilization_change(&mut self) -> Option<Option<f64>> {
        let u = self.monitor.utilization(wall_ms());
        (u != self.utilization).then(|| {
            self.utilization = u;
            u
        })
    }

    fn event(&mut self, now: Instant, ev: Event) {
        let at = match &ev {
            Event::Killed(k) => k.at,
            _ => now,
        };
        self.events.push(event_json(&ev, at, self.start));
        match ev {
            Event::Killed(k) if self.kill.is_none() => {
                self.status
                    .say(&killed_clause(&for_display(&k, &self.limits), &self.what));
                self.kill = Some(k);
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

    fn refresh_status(&self, now: Instant) {
        if !self.status.is_live() {
            return;
        }
        let rate = self
            .tally
            .rate_limit
            .as_ref()
            .map(|_| self.monitor.summary(wall_ms()));
        let activity = match (&self.kill, self.activity.as_str()) {
            (Some(_), _) => "stopping".to_string(),
            (None, a) if self.utilization.is_some_and(|u| u >= 1.0) => {
                format!("{a} (waiting on rate limit)")
            }
            (None, a) => a.to_string(),
        };
        self.status.set(status::render(
            now,
            self.start,
            &activity,
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

    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args);
    if let Some(env) = &cfg.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(dir) = &cfg.cwd {
        cmd.current_dir(dir);
    }
    let sup_cfg = SupervisorConfig {
        policy: Some(SessionConfig::default().with_limits(cfg.limits.clone())),
        stream_json_input: has_stream_json_input(&cfg.argv),
        term_grace: cfg.grace,
        become_subreaper: true,
        ..SupervisorConfig::default()
    };
    let spawn_wall = wall_ms();
    let start = Instant::now();
    let mut sup = match Supervisor::spawn(cmd, sup_cfg) {
        Ok(s) => s,
        Err(e) => {
            status.say(&format!("error: {e}"));
            return exit_code::INTERNAL;
        }
    };
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
    let handle = sup.handle();

    // Host stdin → child stdin, in order; EOF closes it. Written lines come back for the record.
    let (host_tx, mut host_rx) = mpsc::channel::<Option<Vec<u8>>>(64);
    let (written_tx, mut written_rx) = mpsc::unbounded_channel::<Option<Vec<u8>>>();
    if let Some(writer) = sup.stdin() {
        spawn_stdin_reader(host_tx);
        tokio::spawn(async move {
            while let Some(Some(line)) = host_rx.recv().await {
                if writer.write_line(&line).await.is_err() {
                    break;
                }
                if written_tx.send(Some(line)).is_err() {
                    break;
                }
            }
            writer.close().await;
            let _ = written_tx.send(None);
        });
    }

    let mut live = Live {
        start,
        tally: Tally::default(),
        recorder,
        status,
        events: Vec::new(),
        kill: None,
        last_progress: None,
        activity: "starting".into(),
        activity_since: start,
        monitor: RateLimitMonitor::new(RateLimitConfig::default()),
        utilization: None,
        what: program_name,
        limits: cfg.limits.clone(),
    };
    let mut sigint = signal_stream(SigKind::Int);
    let mut sigterm = signal_stream(SigKind::Term);
    let mut interrupted: Option<Sig> = None;
    let mut ladder: Option<SupStage> = None;
    let mut stderr_filter = StderrFilter::default();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut sink = tokio::io::stdout();
    let mut sink_ok = !cfg.quiet_stdout;
    let mut overlong: Option<usize> = None;
    let mut stdin_open = true;

    loop {
        tokio::select! {
            biased;
            out = sup.next_output() => {
                let now = Instant::now();
                match out {
                    None => break,
                    Some(Output::Stdout(line)) => {
                        if sink_ok {
                            let mut r = sink.write_all(&line.bytes).await;
                            if r.is_ok() && line.newline {
                                r = sink.write_all(b"\n").await;
                            }
                            if r.is_ok() {
                                r = sink.flush().await;
                            }
                            // A closed stdout (e.g. `| head`) must not stop the run.
                            sink_ok = r.is_ok();
                        }
                        match (overlong, line.continues) {
                            (None, false) => live.stdout_line(now, &line.bytes),
                            (n, true) => overlong = Some(n.unwrap_or(0) + line.bytes.len()),
                            (Some(n), false) => {
                                let n = n + line.bytes.len();
                                overlong = None;
                                live.tally.overlong += 1;
                                let t = live.t_ms(now);
                                live.recorder.write(t, Record::Raw(format!("<over-long line: {n} bytes>")));
                                live.status.say(&format!(
                                    "warning: a stdout line of {n} bytes was over the {} MiB limit; counted as a keep-alive",
                                    MAX_LINE >> 20
                                ));
                            }
                        }
                        if let Some(u) = live.utilization_change() {
                            handle.set_utilization(u);
                        }
                    }
                    Some(Output::Stderr(line)) => {
                        let t = live.t_ms(now);
                        live.recorder.write(t, Record::Stderr(String::from_utf8_lossy(trim_cr(&line.bytes)).into_owned()));
                        if stderr_filter.admit(&line.bytes) {
                            let mut b = line.bytes;
                            if line.newline {
                                b.push(b'\n');
                            }
                            live.status.write_raw(&b);
                        }
                    }
                    Some(Output::Event(ev)) => live.event(now, ev),
                    Some(Output::Overlong { .. }) => {}
                    Some(Output::Stage(stage)) => ladder = Some(stage),
                }
            }
            written = written_rx.recv(), if stdin_open => {
                let now = Instant::now();
                let t = live.t_ms(now);
                match written {
                    Some(Some(bytes)) => {
                        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                            live.recorder.write(t, Record::Stdin(v));
                        }
                    }
                    Some(None) | None => {
                        stdin_open = false;
                        live.recorder.write(t, Record::Stdin(serde_json::json!({"note": "stdin closed"})));
                    }
                }
            }
            Some(sig) = recv_signal(&mut sigint, Sig::Int) => on_user_signal(sig, &mut interrupted, &handle, &live.status),
            Some(sig) = recv_signal(&mut sigterm, Sig::Term) => on_user_signal(sig, &mut interrupted, &handle, &live.status),
            _ = tick.tick() => {
                let now = Instant::now();
                if let Some(u) = live.utilization_change() {
                    handle.set_utilization(u);
                }
                live.refresh_status(now);
            }
        }
    }
    let _ = sink.flush().await;
    let report = sup.wait().await;
    let end = Instant::now();
    live.status.finish();
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agent-watchdog: {e}");
            return exit_code::INTERNAL;
        }
    };
    let (code, signal) = report.status.map_or((None, None), split_status);
    live.recorder
        .write(live.t_ms(end), Record::Exit { code, signal });
    let child_code = code.or(signal.map(|s| 128 + s));
    let outcome = match (&live.kill, report.outcome.clone()) {
        (Some(k), _) => Outcome::Killed { kind: k.kind },
        (None, Some(o)) => o,
        (None, None) => Outcome::NoResult,
    };
    if report.kill.as_ref().is_some_and(|k| k.survivors > 0) {
        eprintln!(
            "agent-watchdog: warning: {} descendant(s) of the command could not be killed",
            report.kill.as_ref().map_or(0, |k| k.survivors)
        );
    }

    // The synthetic result goes after everything the child printed.
    let emit = cfg.emit_result || cfg.mode == Mode::DropIn;
    if let (true, Some(k)) = (emit, live.kill.as_ref()) {
        let sentence = kill_sentence(&for_display(k, &cfg.limits), &live.what);
        let line = crate::synthetic::result_line(
            k,
            &sentence,
            live.tally.session_id.as_deref(),
            ms(end.saturating_duration_since(start)),
            live.tally.num_turns(),
        );
        let _ = sink.write_all(format!("{line}\n").as_bytes()).await;
        let _ = sink.flush().await;
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
            ladder: report
                .kill
                .as_ref()
                .map(|k| k.stage.as_str())
                .or(ladder.map(SupStage::as_str)),
            exit: report.status.map(split_status),
            exit_code: code,
            duration_ms: ms(end.saturating_duration_since(start)),
            tally: &live.tally,
            stderr: (stderr_filter.lines(), stderr_filter.suppressed()),
            suppressed: stderr_filter.suppressed_json(),
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

/// A signal from the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sig {
    Int,
    Term,
}

fn on_user_signal(
    sig: Sig,
    interrupted: &mut Option<Sig>,
    handle: &SupervisorHandle,
    status: &Status,
) {
    if interrupted.is_some() {
        status.say("second signal: killing the command's whole process tree");
        handle.kill_tree_now();
    } else {
        *interrupted = Some(sig);
        match sig {
            Sig::Int => handle.interrupt(),
            Sig::Term => handle.terminate(),
        }
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
