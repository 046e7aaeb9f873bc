//! The kill ladder: interrupt request, SIGTERM to the group, SIGKILL to every descendant, reap.

use std::collections::HashSet;
use std::process::ExitStatus;
use std::time::Duration;

use rustix::process::Signal;
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, Mutex as AsyncMutex};

use super::config::SupervisorConfig;
use super::control::Control;
use super::evidence::LadderLog;
use super::report::{Batch, KillCause, KillReport, Output, Stage};
use super::signals;
use super::tree::{signal_proc, Proc, Tree};
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

/// How often the tree is polled while waiting for it to die.
const POLL: Duration = Duration::from_millis(20);

impl Ladder<'_> {
    /// Whether anything of the tree still runs: a known descendant, or (where the tree is
    /// unknown) any member of the child's process group.
    async fn tree_left(&mut self, deep: bool) -> bool {
        let live = self.tree.scan(deep).await;
        !live.is_empty() || (!self.tree_known && signals::group_exists(self.pgid))
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
        l.log.sent_group(l.pgid, "SIGTERM");
        let _ = signals::group(l.pgid, Signal::TERM);
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
        // The group too, even once the child is gone: its MCP servers share it, and one
        // started since the last scan is not known to the tree.
        l.log.sent_group(l.pgid, "SIGKILL");
        let _ = signals::group(l.pgid, Signal::KILL);
        // The ladder's last deep scan was just before: rounds walk the known tree.
        let live = l.tree.scan(false).await;
        for p in &live {
            if signal_proc(p, Signal::KILL).unwrap_or(false) {
                l.log.sent_proc(p, "SIGKILL");
                killed.insert(*p);
            }
        }
        l.tree.reap();
        if matches!(exit, Exit::Running) {
            if let Ok(status) = tokio::time::timeout(POLL, l.child.wait()).await {
                exit = Exit::Exited(status.ok());
            }
        } else if live.is_empty() && (l.tree_known || !signals::group_exists(l.pgid)) {
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
/// what is left in its process group `pgid`): SIGTERM, up to `grace` for them to go, then
/// SIGKILL whatever remains.
pub(crate) async fn stop_procs(
    tree: &mut Tree,
    pgid: i32,
    procs: &[Proc],
    grace: Duration,
    log: &mut LadderLog,
) {
    log.stage(Ended::Term);
    log.sent_group(pgid, "SIGTERM");
    let _ = signals::group(pgid, Signal::TERM);
    for p in procs {
        if signal_proc(p, Signal::TERM).unwrap_or(false) {
            log.sent_proc(p, "SIGTERM");
        }
    }
    let deadline = after(grace);
    while procs.iter().any(Tree::alive) && tokio::time::Instant::now() < deadline {
        tree.reap();
        tokio::time::sleep(POLL).await;
    }
    log.stage(Ended::Kill);
    for round in 0..250 {
        log.sent_group(pgid, "SIGKILL");
        let _ = signals::group(pgid, Signal::KILL);
        // One deep scan for what escaped during the grace; then the known tree.
        let live = tree.scan(round == 0).await;
        for p in &live {
            if signal_proc(p, Signal::KILL).unwrap_or(false) {
                log.sent_proc(p, "SIGKILL");
            }
        }
        tree.reap();
        if live.is_empty() {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    tree.reap();
}

/// Stop what the child left in its process group where the tree cannot be read: SIGTERM to
/// the group if any member is left, up to `grace` for it to empty, then SIGKILL until it does
/// (a bounded number of rounds: a member this host may not signal is left alone). Members
/// re-parented to us are reaped as they end. Only once the child itself was reaped (it leads
/// the group: reaping the group here would take its status from tokio).
pub(crate) async fn stop_group(pgid: i32, grace: Duration) {
    let reap_group = || {
        while let Some(p) = rustix::process::Pid::from_raw(pgid) {
            let nohang = rustix::process::WaitOptions::NOHANG;
            if !matches!(rustix::process::waitpgid(p, nohang), Ok(Some(_))) {
                break;
            }
        }
    };
    if !signals::group_exists(pgid) {
        return;
    }
    let _ = signals::group(pgid, Signal::TERM);
    let deadline = after(grace);
    while signals::group_exists(pgid) && tokio::time::Instant::now() < deadline {
        reap_group();
        tokio::time::sleep(POLL).await;
    }
    for _ in 0..250 {
        if !signals::group_exists(pgid) {
            break;
        }
        let _ = signals::group(pgid, Signal::KILL);
        reap_group();
        tokio::time::sleep(POLL).await;
    }
}

/// `grace` from now, or a far-away instant when that cannot be represented (never panics).
fn after(grace: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now()
        .checked_add(grace)
        .unwrap_or_else(crate::clock::far_future)
}
