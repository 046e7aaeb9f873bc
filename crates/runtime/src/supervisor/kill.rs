//! The kill ladder: interrupt request, the graceful rung (Unix: SIGTERM to the group;
//! Windows: stdin closed, `CTRL_BREAK`), then the kill of every descendant (Unix: SIGKILL to
//! each; Windows: the job terminated), reap. The order and the graces are the same on every
//! platform; what each rung does is the platform's ([`super::os`]).

use std::collections::HashSet;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, Mutex as AsyncMutex};

use super::config::SupervisorConfig;
use super::control::Control;
use super::evidence::LadderLog;
use super::os::{after, Proc, ProcessTree, Tree, POLL};
use super::report::{Batch, KillCause, KillReport, Output, Stage};
use super::signal::Signal;
use watchdog_core::evidence::{Ended, ReceiptCause};

/// Whether the child has been reaped.
pub(crate) enum Exit {
    /// Reaped, with its status (`None` if waiting failed).
    Exited(Option<ExitStatus>),
    /// Still running (or unreapable).
    Running,
}

pub(crate) struct Ladder<'a> {
    pub(crate) child: &'a mut Child,
    pub(crate) tree: &'a mut Tree,
    pub(crate) pgid: i32,
    pub(crate) stdin: &'a AsyncMutex<Option<ChildStdin>>,
    pub(crate) cfg: &'a SupervisorConfig,
    /// The descendants can be read (`/proc`); else only the process group is known.
    pub(crate) tree_known: bool,
    pub(crate) out: &'a mpsc::UnboundedSender<Batch>,
    pub(crate) ctrl: &'a mut mpsc::UnboundedReceiver<Control>,
    /// The receipt: what each stage does to each process.
    pub(crate) log: &'a mut LadderLog,
}

impl Ladder<'_> {
    /// Whether anything of the tree still runs: a known descendant, or (where the tree is
    /// unknown) any member of the child's process group.
    async fn tree_left(&mut self, deep: bool) -> bool {
        let live = self.tree.scan(deep).await;
        !live.is_empty() || (!self.tree_known && self.tree.group_left())
    }

    /// Wait up to `grace` for the child to exit; a `KillTree` request cuts the wait short
    /// (then the second value is true).
    async fn wait_child(&mut self, grace: Duration) -> (Exit, bool) {
        let sleep = tokio::time::sleep(grace);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                biased;
                status = self.child.wait() => return (Exit::Exited(status.ok()), false),
                msg = self.ctrl.recv() => match msg {
                    Some(Control::KillTree(_)) => return (Exit::Running, true),
                    Some(_) => {}
                    None => {
                        // No handle left: only the child and the clock matter now.
                        tokio::select! {
                            status = self.child.wait() => return (Exit::Exited(status.ok()), false),
                            () = &mut sleep => return (Exit::Running, false),
                        }
                    }
                },
                () = &mut sleep => return (Exit::Running, false),
            }
        }
    }

    /// Write the interrupt control request and close stdin. False if stdin was unusable.
    async fn interrupt(&mut self) -> bool {
        use tokio::io::AsyncWriteExt;
        let line = format!(
            "{{\"type\":\"control_request\",\"request_id\":\"watchdog_interrupt_{}\",\"request\":{{\"subtype\":\"interrupt\"}}}}\n",
            self.pgid
        );
        let write = async {
            let mut guard = self.stdin.lock().await;
            let Some(pipe) = guard.as_mut() else {
                return false;
            };
            let ok = pipe.write_all(line.as_bytes()).await.is_ok() && pipe.flush().await.is_ok();
            guard.take();
            ok
        };
        tokio::time::timeout(self.cfg.interrupt_grace, write)
            .await
            .unwrap_or(false)
    }
}

/// Run the ladder from stage `from` until the child is reaped and no descendant runs.
pub(crate) async fn ladder(
    mut l: Ladder<'_>,
    cause: KillCause,
    from: Stage,
    decided_after: Duration,
) -> (KillReport, Exit) {
    let t0 = tokio::time::Instant::now();
    let mut stage = from;
    let mut exit = Exit::Running;
    let mut escalate = from == Stage::Kill;
    l.log.begin(l.tree, ReceiptCause::Kill).await;
    l.tree.scan_deep_now().await;

    if from == Stage::Interrupt && l.cfg.stream_json_input && l.interrupt().await {
        stage = Stage::Interrupt;
        l.log.stage(Ended::Interrupt);
        l.log.sent_child("interrupt");
        let _ = l.out.send(Batch::Output(Output::Stage(stage)));
        (exit, escalate) = l.wait_child(l.cfg.interrupt_grace).await;
    }
    let mut term_deadline = tokio::time::Instant::now();
    if matches!(exit, Exit::Running) && !escalate {
        // The deep scan at the start knows the tree; the one before SIGKILL catches what
        // escaped meanwhile.
        l.tree.scan(false).await;
        stage = Stage::Term;
        let _ = l.out.send(Batch::Output(Output::Stage(stage)));
        l.log.stage(Ended::Term);
        if Tree::GRACE_CLOSES_STDIN && l.stdin.lock().await.take().is_some() {
            l.log.sent_child(CLOSE_STDIN);
        }
        l.tree.signal_group(Signal::Term, l.log);
        term_deadline = after(l.cfg.term_grace);
        (exit, escalate) = l.wait_child(l.cfg.term_grace).await;
    }
    // The child is gone: give its tree the rest of the grace to finish cleaning up.
    if matches!(exit, Exit::Exited(_)) && !escalate {
        while l.tree_left(false).await && tokio::time::Instant::now() < term_deadline {
            tokio::time::sleep(POLL).await;
        }
    }
    let mut killed: HashSet<Proc> = HashSet::new();
    let rest = l.tree_left(true).await;
    if matches!(exit, Exit::Running) || rest || escalate {
        stage = Stage::Kill;
        let _ = l.out.send(Batch::Output(Output::Stage(stage)));
        l.log.stage(Ended::Kill);
        exit = kill_all(&mut l, exit, &mut killed).await;
    }
    l.tree.reap();
    let survivors = l.tree.scan(false).await.len();
    let report = KillReport {
        cause,
        stage,
        decided_after,
        took: t0.elapsed(),
        descendants_killed: killed.len(),
        survivors,
    };
    (report, exit)
}

/// SIGKILL the group (while the child lives, or always where the tree is unknown) and every
/// known descendant, until the child is reaped and the tree is empty.
async fn kill_all(l: &mut Ladder<'_>, mut exit: Exit, killed: &mut HashSet<Proc>) -> Exit {
    for _ in 0..250 {
        // The ladder's last deep scan was just before: rounds walk the known tree.
        let live = l.tree.kill_round(false, l.log, killed).await;
        if matches!(exit, Exit::Running) {
            if let Ok(status) = tokio::time::timeout(POLL, l.child.wait()).await {
                exit = Exit::Exited(status.ok());
            }
        } else if live.is_empty() && (l.tree_known || !l.tree.group_left()) {
            break;
        } else {
            tokio::time::sleep(POLL).await;
        }
        if matches!(exit, Exit::Exited(_)) && !l.tree_left(false).await {
            break;
        }
    }
    exit
}

/// Stop processes the child left behind when it exited by itself (`procs`: its descendants and
/// what is left in its group): the graceful rung to the group and to each, up to `grace` for
/// them to go, then kill whatever remains.
pub(crate) async fn stop_procs(
    tree: &mut Tree,
    procs: &[Proc],
    grace: Duration,
    log: &mut LadderLog,
) {
    log.stage(Ended::Term);
    tree.signal_group(Signal::Term, log);
    tree.signal_each(procs, Signal::Term, log);
    let deadline = after(grace);
    while procs.iter().any(Tree::alive) && tokio::time::Instant::now() < deadline {
        tree.reap();
        tokio::time::sleep(POLL).await;
    }
    log.stage(Ended::Kill);
    let mut killed = HashSet::new();
    for round in 0..250 {
        // One deep scan for what escaped during the grace; then the known tree.
        let live = tree.kill_round(round == 0, log, &mut killed).await;
        if live.is_empty() {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    tree.reap();
}

/// The name the receipt gives the graceful rung's closing of the child's stdin.
const CLOSE_STDIN: &str = "close_stdin";
