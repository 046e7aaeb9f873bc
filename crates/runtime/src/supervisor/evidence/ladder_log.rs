//! What a kill ladder (or the cleanup after a child that left processes running) did to each
//! process of the tree it stopped: the receipt ([`Receipt`]). The tree is read when the stop
//! begins; each stage then notes what it sent to whom, and which processes were gone by the
//! time the next stage began. Processes are matched by pid and start, so a pid the kernel
//! gave to another process meanwhile is neither signalled nor taken for one of the tree's.

use std::time::Instant;

use watchdog_core::evidence::{Ended, ProcAction, Receipt, ReceiptCause, TreeSample};

use crate::supervisor::os::{Proc, ProcessTree, RungLog, Tree};

/// The receipt being written.
pub(crate) struct LadderLog {
    /// The child's spawn (the receipt's `at_ms` counts from it).
    spawned: Instant,
    /// Whether to keep one (sampling is on and the tree is known).
    on: bool,
    receipt: Option<Receipt>,
    /// The identity of each process of the receipt's tree.
    ids: Vec<Proc>,
    /// The stage in progress: a process found gone counts as ended in it.
    current: Ended,
}

impl LadderLog {
    pub(crate) fn new(spawned: Instant, on: bool) -> Self {
        LadderLog {
            spawned,
            on,
            receipt: None,
            ids: Vec::new(),
            current: Ended::Before,
        }
    }

    /// The stop begins: read the tree as it stands (the child and its live descendants).
    pub(crate) async fn begin(&mut self, tree: &mut Tree, cause: ReceiptCause) {
        if !self.on || self.receipt.is_some() {
            return;
        }
        let at = Instant::now();
        let sample = super::read::read_now(tree)
            .await
            .unwrap_or_else(|| TreeSample::unavailable("the reading of /proc did not return"));
        self.start(sample, at, cause);
    }

    /// Start the receipt from a reading taken at `at`.
    pub(crate) fn start(&mut self, sample: TreeSample, at: Instant, cause: ReceiptCause) {
        self.ids = sample
            .procs
            .iter()
            .map(|p| Proc {
                pid: p.pid as i32,
                start: p.start,
            })
            .collect();
        let n = self.ids.len();
        self.receipt = Some(Receipt {
            cause,
            at_ms: at.saturating_duration_since(self.spawned).as_millis() as u64,
            tree: sample,
            actions: vec![ProcAction::default(); n],
        });
        self.current = Ended::Before;
    }

    /// Note the processes gone since the last look: they ended in the stage in progress.
    fn look(&mut self, alive: &dyn Fn(&Proc) -> bool) {
        let Some(r) = self.receipt.as_mut() else {
            return;
        };
        for (a, p) in r.actions.iter_mut().zip(&self.ids) {
            if a.ended.is_none() && !alive(p) {
                a.ended = Some(self.current);
            }
        }
    }

    /// A stage begins (`Interrupt`, `Term` or `Kill`).
    pub(crate) fn stage(&mut self, stage: Ended) {
        self.stage_with(stage, &Tree::alive);
    }

    fn stage_with(&mut self, stage: Ended, alive: &dyn Fn(&Proc) -> bool) {
        self.look(alive);
        self.current = stage;
    }

    /// `what` went to the child alone (the interrupt request on its stdin).
    pub(crate) fn sent_child(&mut self, what: &str) {
        self.note(|r, i| i == 0 && r.tree.procs[0].pid == r.tree.root, what);
    }

    /// `sig` went to the process group `pgid`: its members still there got it.
    pub(crate) fn sent_group(&mut self, pgid: i32, sig: &str) {
        self.note(
            |r, i| r.tree.procs[i].pgid == pgid as u32 && r.actions[i].ended.is_none(),
            sig,
        );
    }

    /// `sig` went to `p` (a process the tree found now, by pid and start).
    pub(crate) fn sent_proc(&mut self, p: &Proc, sig: &str) {
        let Some(i) = self.ids.iter().position(|q| q == p) else {
            return;
        };
        self.note(|_, j| j == i, sig);
    }

    fn note(&mut self, to: impl Fn(&Receipt, usize) -> bool, what: &str) {
        let Some(r) = self.receipt.as_mut() else {
            return;
        };
        for i in 0..r.actions.len() {
            if to(r, i) && r.actions[i].sent.last().map(String::as_str) != Some(what) {
                r.actions[i].sent.push(what.to_owned());
            }
        }
    }

    /// The stop is over: what is still there survived; the rest ended in the last stage.
    pub(crate) fn finish(self) -> Option<Receipt> {
        self.finish_with(&Tree::alive)
    }

    fn finish_with(mut self, alive: &dyn Fn(&Proc) -> bool) -> Option<Receipt> {
        let mut r = self.receipt.take()?;
        for (a, p) in r.actions.iter_mut().zip(&self.ids) {
            if a.ended.is_none() {
                a.ended = Some(if alive(p) {
                    Ended::Survived
                } else {
                    self.current
                });
            }
        }
        Some(r)
    }
}

impl RungLog for LadderLog {
    fn sent_group(&mut self, pgid: i32, what: &str) {
        LadderLog::sent_group(self, pgid, what);
    }
    fn sent_proc(&mut self, p: &Proc, what: &str) {
        LadderLog::sent_proc(self, p, what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use watchdog_core::evidence::{ProcFacts, ProcState};

    fn facts(pid: u32, start: u64, pgid: u32) -> ProcFacts {
        ProcFacts {
            pid,
            start,
            ppid: 1,
            pgid,
            cmd: format!("p{pid}"),
            state: ProcState::Asleep,
            cpu_ms: 0,
            rss: 0,
            age_ms: 0,
            tcp: 0,
            net: None,
        }
    }

    /// The child in its group, a tool's shell in a session of its own, its command; a pid
    /// reused between the reading and the kill is never taken for the process read.
    #[test]
    fn each_process_gets_what_its_stage_sent_and_ends_where_it_ended() {
        let t0 = Instant::now();
        let mut log = LadderLog::new(t0, true);
        let sample = TreeSample {
            root: 10,
            procs: vec![
                facts(10, 1, 10),
                facts(20, 2, 20),
                facts(21, 3, 20),
                facts(30, 4, 10),
            ],
            fault: None,
        };
        log.start(sample, t0, ReceiptCause::Kill);
        let gone = RefCell::new(vec![Proc { pid: 30, start: 4 }]);
        let alive = |p: &Proc| !gone.borrow().contains(p);
        // Pid 30 exited between the reading and the ladder.
        log.stage_with(Ended::Interrupt, &alive);
        log.sent_child("interrupt");
        log.stage_with(Ended::Term, &alive);
        log.sent_group(10, "SIGTERM");
        gone.borrow_mut().push(Proc { pid: 10, start: 1 });
        log.stage_with(Ended::Kill, &alive);
        log.sent_group(10, "SIGKILL");
        log.sent_proc(&Proc { pid: 20, start: 2 }, "SIGKILL");
        log.sent_proc(&Proc { pid: 21, start: 3 }, "SIGKILL");
        // Pid 30 again, another process: not the receipt's.
        log.sent_proc(&Proc { pid: 30, start: 99 }, "SIGKILL");
        gone.borrow_mut().push(Proc { pid: 20, start: 2 });
        let r = log.finish_with(&alive).unwrap();
        let got: Vec<(u32, Vec<&str>, Option<Ended>)> = r
            .processes()
            .map(|(p, a)| {
                let a = a.unwrap();
                (p.pid, a.sent.iter().map(String::as_str).collect(), a.ended)
            })
            .collect();
        assert_eq!(
            got,
            [
                (10, vec!["interrupt", "SIGTERM"], Some(Ended::Term)),
                (20, vec!["SIGKILL"], Some(Ended::Kill)),
                (21, vec!["SIGKILL"], Some(Ended::Survived)),
                (30, vec![], Some(Ended::Before)),
            ]
        );
    }

    #[test]
    fn nothing_is_kept_when_off() {
        let mut log = LadderLog::new(Instant::now(), false);
        log.stage(Ended::Term);
        log.sent_group(1, "SIGTERM");
        assert!(log.finish().is_none());
    }
}
