//! The task that owns the child: deadlines, control messages, the kill ladder, the report.

use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};

use super::kill::{self, Exit};
use super::shared::{dispatch, Shared};
use super::tree::Tree;
use super::{signals, Batch, Control, KillCause, Report, Stage, SupervisorConfig};
use crate::clock;

/// The task that owns the child: deadlines, control messages, the ladder, the report.
pub(super) struct Watch {
    pub(super) child: Child,
    pub(super) tree: Tree,
    pub(super) pid: i32,
    pub(super) program: String,
    pub(super) started: tokio::time::Instant,
    pub(super) cfg: SupervisorConfig,
    pub(super) shared: Arc<Shared>,
    pub(super) out: mpsc::UnboundedSender<Batch>,
    pub(super) ctrl: mpsc::UnboundedReceiver<Control>,
    pub(super) pipe: Arc<AsyncMutex<Option<ChildStdin>>>,
    pub(super) readers: Vec<tokio::task::JoinHandle<()>>,
    /// Copies of the stdout and stderr pipes ([`Watch::catch_up`]).
    pub(super) pending: Vec<OwnedFd>,
    /// The session's events on a shared watchdog (whose timer handles its deadlines).
    pub(super) events: Option<tokio::sync::broadcast::Receiver<watchdog_core::Event>>,
    /// When the first signal was forwarded to the group ([`Control::Signal`]): the grace of
    /// what the child leaves running counts from then.
    pub(super) signalled: Option<tokio::time::Instant>,
}

enum End {
    Exited(Option<ExitStatus>),
    Kill(KillCause, Stage),
}

impl Watch {
    pub(super) async fn run(mut self, report: oneshot::Sender<Report>) {
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
            tally: ended.tally,
            rate_limits: ended.rate_limits,
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
