//! Spawning the child and the tasks that read it and watch it.

use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex, Semaphore};
use watchdog_core::{Limits, LineView, Registry};

use super::hook::StdoutHook;
use super::kill::{self, Exit};
use super::lines::{split_lines, LineMeta, LineReader, Recycle, StdoutBatch};
use super::policy::Policy;
use super::shared::{dispatch, Shared};
use super::tree::{Tree, TREE_MARKER_VAR};
use super::{
    signals, Batch, Control, KillCause, Output, Report, SpawnError, Stage, StdinWriter, Supervisor,
    SupervisorConfig, SupervisorHandle,
};
use crate::clock;

static TREES: AtomicU64 = AtomicU64::new(0);

pub(crate) fn spawn(mut cmd: Command, cfg: SupervisorConfig) -> Result<Supervisor, SpawnError> {
    tokio::runtime::Handle::try_current().map_err(|_| SpawnError::NoRuntime)?;
    let program = cmd.as_std().get_program().to_string_lossy().into_owned();
    if let Some(dir) = cmd.as_std().get_current_dir() {
        if !dir.is_dir() {
            return Err(SpawnError::Cwd {
                program,
                cwd: dir.to_path_buf(),
            });
        }
    }
    if cfg.become_subreaper {
        signals::become_subreaper().map_err(SpawnError::Subreaper)?;
    }
    let marker = format!(
        "{}.{}",
        std::process::id(),
        TREES.fetch_add(1, Ordering::Relaxed)
    );
    let stdin = if cfg.pipe_stdin {
        std::process::Stdio::piped()
    } else {
        std::process::Stdio::null()
    };
    cmd.env(TREE_MARKER_VAR, &marker)
        .process_group(0)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let started = tokio::time::Instant::now();
    let mut child =
        super::spawn::spawn(cmd, cfg.die_with_host).map_err(|source| SpawnError::Program {
            program: program.clone(),
            source,
        })?;
    let pid = child.id().unwrap_or(0);
    let tree = Tree::new(pid as i32, &marker, cfg.claim_orphans);
    // Copies of the output pipes, to see whether output waits unread before a deadline acts.
    let pending: Vec<OwnedFd> = [
        child.stdout.as_ref().and_then(|p| rustix::io::dup(p).ok()),
        child.stderr.as_ref().and_then(|p| rustix::io::dup(p).ok()),
    ]
    .into_iter()
    .flatten()
    .collect();

    // A child reading the host's messages on the stdin we pipe waits for its host after each
    // `result` (until the input ends: [`StdinWriter::close`]).
    let host_input = cfg.stream_json_input && cfg.pipe_stdin;
    let session_cfg = cfg.policy.clone().map(|s| {
        let open = host_input || s.host_input();
        s.with_host_input(open)
    });
    let policy = match (session_cfg, &cfg.watchdog) {
        (None, _) => Policy::None,
        (Some(session), Some(watchdog)) => Policy::Shared(watchdog.register(session)),
        (Some(session), None) => {
            let mut reg = Registry::new(Limits::default());
            let id = reg.register(started.into_std(), session);
            Policy::Own(Box::new(reg), id)
        }
    };
    let events = policy.subscribe();
    let shared = Arc::new(Shared::new(policy));
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let budget = Arc::new(Semaphore::new(OUTPUT_BUDGET));
    let (ctrl_tx, ctrl_rx) = mpsc::unbounded_channel();
    let (report_tx, report_rx) = oneshot::channel();
    let pipe = Arc::new(AsyncMutex::new(child.stdin.take()));

    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(read_stdout(
            stdout,
            cfg.max_line,
            shared.clone(),
            cfg.on_stdout_line.clone(),
            Queue {
                out: out_tx.clone(),
                budget: budget.clone(),
                shared: shared.clone(),
            },
            ctrl_tx.clone(),
        )));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(read_stderr(
            stderr,
            cfg.max_line,
            shared.clone(),
            Queue {
                out: out_tx.clone(),
                budget: budget.clone(),
                shared: shared.clone(),
            },
        )));
    }
    let stdin = cfg.pipe_stdin.then(|| StdinWriter {
        pipe: pipe.clone(),
        shared: shared.clone(),
    });
    let watch = Watch {
        child,
        tree,
        pid: pid as i32,
        program,
        started,
        cfg,
        shared,
        out: out_tx,
        ctrl: ctrl_rx,
        pipe,
        readers,
        pending,
        events,
        signalled: None,
    };
    tokio::spawn(watch.run(report_tx));
    Ok(Supervisor {
        handle: SupervisorHandle { ctrl: ctrl_tx, pid },
        started: started.into_std(),
        budget,
        stdin,
        output: Some(out_rx),
        unbatched: None,
        report: Some(report_rx),
    })
}

/// How many bytes of child output may wait for the caller before the readers stop reading (the
/// child then waits on its pipe): bounded memory whatever the child prints. Four batches of a
/// full 1 MiB pipe: enough for the reader to run ahead of the caller, small enough that a fast
/// child keeps `run` under 16 MB (8 MiB peaked at 16-28 MB on a loaded machine).
pub(crate) const OUTPUT_BUDGET: usize = 4 << 20;

/// The budget an item takes: its bytes, capped so an item larger than the budget still passes
/// (alone).
pub(crate) fn cost(item: &Batch) -> u32 {
    let bytes = match item {
        Batch::Stdout(b) => b.bytes.len(),
        Batch::Output(Output::Stdout(l) | Output::Stderr(l)) => l.bytes.len() + 1,
        Batch::Output(_) => 0,
    };
    bytes.clamp(1, OUTPUT_BUDGET) as u32
}

/// The output channel as the readers use it: lines wait for budget, which the caller gives back
/// as it takes them ([`Supervisor::next_batch`]).
struct Queue {
    out: mpsc::UnboundedSender<Batch>,
    budget: Arc<Semaphore>,
    shared: Arc<Shared>,
}

impl Queue {
    /// Queue lines once the caller has room for them. Never waits once the caller is gone (its
    /// receiver dropped, e.g. by [`Supervisor::wait`]): the lines are dropped then. While it
    /// waits, the child is held back by the caller, not idle: the idle and no-progress clocks
    /// are paused.
    async fn send(&self, item: Batch) {
        use tokio::sync::TryAcquireError;
        let n = cost(&item);
        let permit = match self.budget.try_acquire_many(n) {
            Ok(p) => Some(p),
            Err(TryAcquireError::Closed) => None,
            Err(TryAcquireError::NoPermits) => {
                self.shared.output_blocked(clock::now());
                let permit = tokio::select! {
                    permit = self.budget.acquire_many(n) => permit.ok(),
                    () = self.out.closed() => None,
                };
                self.shared.output_unblocked(clock::now());
                permit
            }
        };
        if let Some(p) = permit {
            p.forget();
            let _ = self.out.send(item);
        }
    }
}

/// How much stdout is read at once, and the pipe size asked for: a fast child's lines come in
/// batches of up to this size, with one clock reading, one lock and one message each.
pub(crate) const CHUNK: usize = 1 << 20;

/// Ask for a larger stdout pipe (Linux): fewer, larger reads while a child prints fast, and
/// fewer wake-ups for both. The size is capped by the system (`fs.pipe-max-size`); failing
/// leaves the default.
fn enlarge_pipe(pipe: &tokio::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::pipe::fcntl_setpipe_size(pipe, CHUNK);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}

/// The first `n` bytes of `buf`, leaving the rest in `buf` (with room for the next read). A
/// large batch moves the buffer itself out (only the incomplete line left over is copied); a
/// small one is copied out, so a quiet child's line does not pin a large buffer.
fn take_front(buf: &mut Vec<u8>, n: usize, recycle: &Recycle) -> Vec<u8> {
    if n * 2 < buf.capacity() {
        let front = buf[..n].to_vec();
        buf.drain(..n);
        front
    } else {
        let need = CHUNK.max(buf.len() - n);
        let mut rest = recycle
            .take(need)
            .unwrap_or_else(|| Vec::with_capacity(need));
        rest.extend_from_slice(&buf[n..]);
        buf.truncate(n);
        std::mem::replace(buf, rest)
    }
}

async fn read_stdout(
    mut pipe: tokio::process::ChildStdout,
    max_line: usize,
    shared: Arc<Shared>,
    hook: Option<StdoutHook>,
    queue: Queue,
    ctrl: mpsc::UnboundedSender<Control>,
) {
    enlarge_pipe(&pipe);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    let recycle = Arc::new(Recycle::default());
    let mut in_long = false;
    loop {
        if buf.capacity() - buf.len() < CHUNK / 4 {
            buf.reserve(CHUNK);
        }
        // A read error ends the stream like its end does (what was read still goes out).
        let eof = !matches!(pipe.read_buf(&mut buf).await, Ok(n) if n > 0);
        shared.reading.store(true, Ordering::SeqCst);
        let mut lines = Vec::new();
        let used = split_lines(&buf, max_line, eof, &mut in_long, &mut lines);
        if !lines.is_empty() {
            // The lines that arrived together: one clock reading, one lock, one message.
            let at = clock::now();
            let (events, overlong) = observe(&shared, hook.as_ref(), at, &buf[..used], &mut lines);
            shared.reading.store(false, Ordering::SeqCst);
            for _ in 0..overlong {
                let _ = queue.out.send(Batch::Output(Output::Overlong { max_line }));
            }
            // The kill goes out before waiting for room: a full queue never delays a kill.
            if let Some(kill) = dispatch(&queue.out, events) {
                let _ = ctrl.send(Control::Kill(KillCause::Watchdog(kill)));
            }
            let bytes = take_front(&mut buf, used, &recycle);
            let recycle = (bytes.capacity() >= CHUNK).then(|| recycle.clone());
            queue
                .send(Batch::Stdout(StdoutBatch {
                    bytes,
                    lines,
                    at,
                    recycle,
                }))
                .await;
        }
        shared.reading.store(false, Ordering::SeqCst);
        if eof {
            return;
        }
    }
}

/// Lines parsed, observed and shown to the hook at a time: parsing happens outside the state
/// lock, and the hook runs after the policy saw its lines, outside that lock too.
const OBSERVE_CHUNK: usize = 64;

/// Parse, observe and show to the hook the lines of one batch (`metas`, in `bytes`), in order.
/// Returns the events they caused and the number of over-long lines that began among them.
fn observe(
    shared: &Shared,
    hook: Option<&StdoutHook>,
    at: std::time::Instant,
    bytes: &[u8],
    metas: &mut [LineMeta],
) -> (Vec<watchdog_core::Event>, usize) {
    let (mut events, mut overlong, mut panics) = (Vec::new(), 0, 0);
    let mut views = Vec::with_capacity(metas.len().min(OBSERVE_CHUNK));
    for chunk in metas.chunks_mut(OBSERVE_CHUNK) {
        views.clear();
        views.extend(chunk.iter().map(|m| match m.piece {
            // A piece of an over-long line is a keep-alive: not parsed, however huge.
            true => None,
            false => LineView::parse(bytes.get(m.start..m.start + m.len).unwrap_or_default()).ok(),
        }));
        let (first, n) = shared.observe_stdout(at, chunk, &views, &mut events);
        overlong += n;
        if let Some(hook) = hook {
            panics += hook.call(bytes, at, first, chunk, &views);
        }
    }
    if panics > 0 {
        shared.hook_panicked(panics);
    }
    (events, overlong)
}

async fn read_stderr(
    pipe: tokio::process::ChildStderr,
    max_line: usize,
    shared: Arc<Shared>,
    queue: Queue,
) {
    let mut reader = LineReader::new(BufReader::with_capacity(16 << 10, pipe), max_line);
    while let Ok(Some(line)) = reader.next().await {
        shared.observe_stderr();
        queue.send(Batch::Output(Output::Stderr(line))).await;
    }
}

/// The task that owns the child: deadlines, control messages, the ladder, the report.
struct Watch {
    child: Child,
    tree: Tree,
    pid: i32,
    program: String,
    started: tokio::time::Instant,
    cfg: SupervisorConfig,
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Batch>,
    ctrl: mpsc::UnboundedReceiver<Control>,
    pipe: Arc<AsyncMutex<Option<ChildStdin>>>,
    readers: Vec<tokio::task::JoinHandle<()>>,
    /// Copies of the stdout and stderr pipes ([`Watch::catch_up`]).
    pending: Vec<OwnedFd>,
    /// The session's events on a shared watchdog (whose timer handles its deadlines).
    events: Option<tokio::sync::broadcast::Receiver<watchdog_core::Event>>,
    /// When the first signal was forwarded to the group ([`Control::Signal`]): the grace of
    /// what the child leaves running counts from then.
    signalled: Option<tokio::time::Instant>,
}

enum End {
    Exited(Option<ExitStatus>),
    Kill(KillCause, Stage),
}

impl Watch {
    async fn run(mut self, report: oneshot::Sender<Report>) {
        let end = self.watch().await;
        let (status, kill, leftovers) = match end {
            End::Exited(status) => (status, None, self.clean_leftovers().await),
            End::Kill(cause, from) => {
                if matches!(cause, KillCause::Requested) {
                    // Stopped for the caller's reason: no deadline adds a second one while
                    // the ladder runs.
                    dispatch(&self.out, self.shared.stop_clocks());
                }
                let decided_after = self.started.elapsed();
                let (report, exit) = kill::ladder(
                    kill::Ladder {
                        child: &mut self.child,
                        tree: &mut self.tree,
                        pgid: self.pid,
                        stdin: &self.pipe,
                        cfg: &self.cfg,
                        out: &self.out,
                        ctrl: &mut self.ctrl,
                    },
                    cause,
                    from,
                    decided_after,
                )
                .await;
                (exit.status(), Some(report), 0)
            }
        };
        self.pipe.lock().await.take();
        let pipe_left_open = self.drain().await;
        let (ended, mut events) = self.shared.end();
        if let Some(rx) = self.events.as_mut() {
            // What the shared watchdog delivered and the watching task did not pass on yet.
            while let Ok(ev) = rx.try_recv() {
                events.push(ev);
            }
        }
        dispatch(&self.out, events);
        let st = self.shared.lock();
        let _ = report.send(Report {
            program: std::mem::take(&mut self.program),
            pid: self.pid as u32,
            outcome: ended.outcome,
            kill,
            status,
            session_id: ended.session_id,
            result: ended.result,
            counts: st.counts.clone(),
            stdout_lines: st.stdout_lines,
            stderr_lines: st.stderr_lines,
            overlong_lines: st.overlong_lines,
            hook_panics: st.hook_panics,
            leftovers_killed: leftovers,
            pipe_left_open,
            tree_known: Tree::KNOWN,
            duration: self.started.elapsed(),
            blocked_on_output: st.blocked_total,
        });
        Tree::forget_root(self.pid);
    }

    /// Until the child exits or a kill is decided.
    async fn watch(&mut self) -> End {
        let mut sleep = Box::pin(tokio::time::sleep_until(clock::far_future()));
        // A subreaper that claims orphans learns nothing from walking the tree in between (see
        // below); with a registry of its own, the output pause is applied before each
        // deadline: then there is nothing to wake up for.
        let idle_scan =
            self.cfg.become_subreaper && self.cfg.claim_orphans && self.cfg.watchdog.is_none();
        let scan_every = self.cfg.tree_scan.filter(|_| Tree::KNOWN && !idle_scan);
        let mut scan = Box::pin(tokio::time::sleep_until(match scan_every {
            Some(every) => tokio::time::Instant::now() + every,
            None => clock::far_future(),
        }));
        let mut ctrl_open = true;
        loop {
            let deadline = self.shared.arm();
            if let Some(d) = deadline {
                sleep.as_mut().reset(clock::to_tokio(d));
            }
            tokio::select! {
                biased;
                status = self.child.wait() => return End::Exited(status.ok()),
                msg = self.ctrl.recv(), if ctrl_open => match msg {
                    None => ctrl_open = false,
                    Some(Control::Kill(cause)) => return End::Kill(cause, Stage::Interrupt),
                    Some(Control::KillTree(cause)) => return End::Kill(cause, Stage::Kill),
                    Some(Control::Signal(sig)) => {
                        self.signalled.get_or_insert_with(tokio::time::Instant::now);
                        let _ = signals::group(self.pid, sig);
                    }
                    Some(Control::Utilization(u)) => {
                        let events = self.shared.set_utilization(u);
                        if let Some(kill) = dispatch(&self.out, events) {
                            return End::Kill(KillCause::Watchdog(kill), Stage::Interrupt);
                        }
                    }
                },
                () = &mut sleep, if deadline.is_some() => {
                    self.catch_up().await;
                    let events = self.shared.timeout();
                    if let Some(kill) = dispatch(&self.out, events) {
                        return End::Kill(KillCause::Watchdog(kill), Stage::Interrupt);
                    }
                }
                () = self.shared.notify.notified() => {
                    let events = self.shared.events();
                    if let Some(kill) = dispatch(&self.out, events) {
                        return End::Kill(KillCause::Watchdog(kill), Stage::Interrupt);
                    }
                }
                ev = shared_event(&mut self.events) => {
                    if let Some(kill) = dispatch(&self.out, vec![ev]) {
                        return End::Kill(KillCause::Watchdog(kill), Stage::Interrupt);
                    }
                }
                () = &mut scan, if scan_every.is_some() => {
                    // A shared watchdog's timer does not ask for the output pause first.
                    self.shared.settle_pause();
                    // A subreaper that claims orphans has every descendant that loses its
                    // parent re-parented to it, and finds them at the kill: walking the tree
                    // every second would learn nothing (it was most of `run`'s CPU next to a
                    // claude of a dozen threads).
                    if !(self.cfg.become_subreaper && self.cfg.claim_orphans) {
                        self.tree.scan(false).await;
                    }
                    if let Some(every) = scan_every {
                        scan.as_mut().reset(tokio::time::Instant::now() + every);
                    }
                }
            }
        }
    }

    /// Before a deadline acts, let the readers take what already waits in the pipes: after the
    /// host was stopped (Ctrl-Z, then `fg`) a deadline may be overdue while the child went on
    /// printing; those lines count first, and a kill lands only if the deadline still holds.
    /// Not while the output is blocked by the caller (the clocks are paused then anyway).
    /// Bounded: at most ~200 ms.
    async fn catch_up(&self) {
        for _ in 0..200 {
            let waiting = self
                .pending
                .iter()
                .any(|fd| rustix::io::ioctl_fionread(fd).is_ok_and(|n| n > 0));
            let busy = self.shared.reading.load(Ordering::SeqCst);
            if !(waiting || busy) || self.shared.is_output_blocked() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The child exited by itself: stop whatever it left running (SIGTERM, then SIGKILL
    /// `term_grace` later; after a forwarded signal, what is left of the grace counted from
    /// that signal: a host that signalled us gives the whole tree one grace, not two).
    async fn clean_leftovers(&mut self) -> usize {
        if !self.cfg.kill_leftovers {
            self.tree.reap();
            return 0;
        }
        let left = self.tree.scan(true).await;
        if !Tree::KNOWN {
            let _ = signals::group(self.pid, rustix::process::Signal::KILL);
            return 0;
        }
        if left.is_empty() {
            self.tree.reap();
            return 0;
        }
        let grace = match self.signalled {
            Some(at) => self.cfg.term_grace.saturating_sub(at.elapsed()),
            None => self.cfg.term_grace,
        };
        kill::stop_procs(&mut self.tree, self.pid, &left, grace).await;
        left.len()
    }

    /// Wait for both pipes to close, at most `drain_timeout`; true if they did not.
    async fn drain(&mut self) -> bool {
        let readers = std::mem::take(&mut self.readers);
        let aborts: Vec<_> = readers.iter().map(|r| r.abort_handle()).collect();
        let all = async {
            for r in readers {
                let _ = r.await;
            }
        };
        match tokio::time::timeout(self.cfg.drain_timeout, all).await {
            Ok(()) => false,
            Err(_) => {
                aborts.iter().for_each(|a| a.abort());
                true
            }
        }
    }
}

/// The next event of a session on a shared watchdog (pending forever without one). A receiver
/// that lagged skips what it missed; a kill is never missed, as it ends the session.
async fn shared_event(
    rx: &mut Option<tokio::sync::broadcast::Receiver<watchdog_core::Event>>,
) -> watchdog_core::Event {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match rx {
            Some(r) => match r.recv().await {
                Ok(ev) => return ev,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => *rx = None,
            },
            None => std::future::pending::<()>().await,
        }
    }
}

impl Exit {
    fn status(&self) -> Option<ExitStatus> {
        match self {
            Exit::Exited(s) => *s,
            Exit::Running => None,
        }
    }
}
