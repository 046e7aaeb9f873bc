//! The task that owns the child: control messages (a kill from the policy cell among them),
//! the tree scan, the kill ladder, the report. Deadlines are the cell's: its timer task decides
//! a kill and the cell's sink sends it here.

use std::process::ExitStatus;
use std::sync::Arc;

use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot, Mutex as AsyncMutex};

use super::config::SupervisorConfig;
use super::control::Control;
use super::drain::Readers;
use super::evidence::{LadderLog, Sampler};
use super::facilities::InForce;
use super::kill::{self, Exit};
use super::os::{self, OrphanExits, ProcessTree, Tree};
use super::report::{Batch, KillCause, KillReport, Report, Stage};
use super::shared::{RunPhase, Shared};
use super::signal::Signal;
use crate::clock;
use watchdog_core::config::PositiveDuration;
use watchdog_core::evidence::ReceiptCause;

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
    pub(super) readers: Readers,
    /// When the first signal was forwarded to the group ([`Control::Signal`]): the grace of
    /// what the child leaves running counts from then.
    pub(super) signalled: Option<tokio::time::Instant>,
    /// The kernel facilities this child runs with, and those refused.
    pub(super) facilities: InForce,
    /// Samples of the process tree for the policy.
    pub(super) sampler: Sampler,
}

enum End {
    Exited(Option<ExitStatus>),
    Kill(KillCause, Stage),
}

impl Watch {
    pub(super) async fn run(mut self, report: oneshot::Sender<Report>) {
        let end = self.watch().await;
        self.shared.set_phase(match end {
            End::Exited(_) => RunPhase::Exited,
            End::Kill(..) => RunPhase::Stopping,
        });
        // The receipt of what is stopped: the tree when the stop begins, what each stage did.
        let receipts = self.cfg.tree_sample.is_some()
            && self.cfg.policy.is_some()
            && self.facilities.tree_known;
        let mut log = LadderLog::new(self.started.into_std(), receipts);
        let (status, kill, leftovers) = match end {
            End::Exited(status) => (status, None, self.clean_leftovers(&mut log).await),
            End::Kill(cause, from) => {
                if matches!(cause, KillCause::Requested) {
                    // Stopped for the caller's reason: no deadline adds a second one while
                    // the ladder runs.
                    self.shared.stop_clocks();
                }
                let decided_after = self.started.elapsed();
                let (report, exit) = kill::ladder(
                    kill::Ladder {
                        child: &mut self.child,
                        tree: &mut self.tree,
                        pgid: self.pid,
                        stdin: &self.pipe,
                        cfg: &self.cfg,
                        tree_known: self.facilities.tree_known,
                        out: &self.out,
                        ctrl: &mut self.ctrl,
                        log: &mut log,
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
        let readers = std::mem::take(&mut self.readers);
        let pipe_left_open = readers.drain(self.cfg.drain_timeout).await;
        // The end's events reach the output here, before the report.
        let record = self.shared.end();
        let mut st = self.shared.lock();
        // The policy's record, with what only the supervisor knows, each fact once: the line
        // counts are the record's when there is one, the report's own without a policy.
        let receipt = log.finish();
        let mut counts = std::mem::take(&mut st.counts);
        let record = record.map(|mut r| {
            r.receipt = receipt;
            r.stage = kill.as_ref().map(|k: &KillReport| k.stage);
            r.exit = status.map(os::exit_of);
            r.lines = std::mem::take(&mut counts);
            r
        });
        let _ = report.send(Report {
            program: std::mem::take(&mut self.program),
            pid: self.pid as u32,
            record,
            kill,
            status,
            unrecorded_counts: counts,
            stdout_lines: st.stdout_lines,
            stderr_lines: st.stderr_lines,
            hook_panics: st.hook_panics,
            leftovers_killed: leftovers,
            pipe_left_open,
            tree_known: self.facilities.tree_known,
            unavailable: std::mem::take(&mut self.facilities.unavailable),
            duration: self.started.elapsed(),
            blocked_on_output: st.blocked_total,
        });
        Tree::forget_root(self.pid);
    }

    /// Until the child exits or a kill is decided.
    async fn watch(&mut self) -> End {
        // A subreaper that claims orphans learns nothing from walking the tree in between:
        // every descendant that loses its parent re-parents to it, and is found at the kill
        // (walking the tree every second was most of `run`'s CPU next to a claude of a dozen
        // threads).
        let claims = self.facilities.subreaper && self.cfg.claim_orphans;
        let scan_every = self
            .cfg
            .tree_scan
            .map(PositiveDuration::get)
            .filter(|_| self.facilities.tree_known && !claims);
        // Orphans re-parented to us are reaped as they end, not at the end of the run: a tool
        // that leaves hundreds of short-lived background processes would otherwise fill the
        // process table with zombies (as PID 1 of a container, until fork fails).
        let mut orphans_end = if claims { OrphanExits::new() } else { None };
        let mut scan = Box::pin(tokio::time::sleep_until(match scan_every {
            Some(every) => tokio::time::Instant::now() + every,
            None => clock::far_future(),
        }));
        let mut ctrl_open = true;
        loop {
            tokio::select! {
                biased;
                status = self.child.wait() => return End::Exited(status.ok()),
                msg = self.ctrl.recv(), if ctrl_open => match msg {
                    None => ctrl_open = false,
                    Some(Control::Kill(cause)) => return End::Kill(cause, Stage::Interrupt),
                    Some(Control::KillTree(cause)) => return End::Kill(cause, Stage::Kill),
                    Some(Control::Signal(sig)) => {
                        self.signalled.get_or_insert_with(tokio::time::Instant::now);
                        if Tree::GRACE_CLOSES_STDIN && sig != Signal::Kill {
                            // The graceful rung is the end of input first.
                            self.pipe.lock().await.take();
                        }
                        let _ = self.tree.forward(sig);
                    }
                },
                Some(()) = async { orphans_end.as_mut()?.recv().await }, if orphans_end.is_some() => {
                    Tree::reap_orphans();
                }
                () = &mut scan, if scan_every.is_some() => {
                    self.tree.scan(false).await;
                    if let Some(every) = scan_every {
                        scan.as_mut().reset(tokio::time::Instant::now() + every);
                    }
                }
                () = tokio::time::sleep_until(self.sampler.due()) => {
                    self.sampler.tick(&mut self.tree, &self.shared).await;
                }
                sample = self.sampler.done(), if self.sampler.reading() => {
                    Sampler::deliver(sample, &self.shared, &self.out);
                }
            }
        }
    }

    /// The child exited by itself: stop whatever it left running (SIGTERM, then SIGKILL
    /// `term_grace` later; after a forwarded signal, what is left of the grace counted from
    /// that signal: a host that signalled us gives the whole tree one grace, not two).
    async fn clean_leftovers(&mut self, log: &mut LadderLog) -> usize {
        if !self.cfg.kill_leftovers {
            self.tree.reap();
            self.tree.release();
            return 0;
        }
        let grace = match self.signalled {
            Some(at) => self.cfg.term_grace.saturating_sub(at.elapsed()),
            None => self.cfg.term_grace,
        };
        if !self.facilities.tree_known {
            // Only the process group can be found: what is left in it gets the same grace.
            self.tree.stop_group(grace).await;
            return 0;
        }
        let left = self.tree.scan(true).await;
        if left.is_empty() {
            self.tree.reap();
            return 0;
        }
        log.begin(&mut self.tree, ReceiptCause::Leftovers).await;
        kill::stop_procs(&mut self.tree, &left, grace, log).await;
        left.len()
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
