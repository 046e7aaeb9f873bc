//! Evidence from the child's process tree for its policy: the sampler the watching task runs
//! ([`Sampler`]), and the log of what a kill ladder did to each process, which becomes the
//! receipt ([`LadderLog`]).
//!
//! A sample reads `/proc` on a blocking thread, never on the runtime's: the watching task
//! only starts a reading and takes its result when it is ready (a reading that does not
//! return, on a process wedged in the kernel, is said once as a failed sample and the task
//! goes on). The policy asks for a sample at the full rate while a tool call is outstanding
//! or the memory guard is on ([`TreeWant::urgent`](watchdog_core::TreeWant::urgent)), and
//! now and then otherwise, for the peak memory.

mod ladder_log;
mod read;

use std::sync::Arc;
use std::time::Duration;

use super::config::TREE_SAMPLE_QUIET;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use watchdog_core::evidence::TreeSample;

pub(crate) use ladder_log::LadderLog;
use read::read_tree;

use super::os::{Sockets, Tree};
use super::report::{Batch, Output};
use super::shared::Shared;

/// The watching task's sampler: when the next sample is due, and the reading under way.
pub(crate) struct Sampler {
    /// The full rate; `None`: no sampling.
    every: Option<Duration>,
    next: tokio::time::Instant,
    pending: Option<(tokio::time::Instant, JoinHandle<TreeSample>)>,
    /// When the last reading began (a quiet session is read every `TREE_SAMPLE_QUIET`).
    last: Option<tokio::time::Instant>,
    /// A reading that has not returned was said (once).
    stuck_said: bool,
}

impl Sampler {
    pub(crate) fn new(every: Option<Duration>) -> Self {
        Sampler {
            every,
            next: tokio::time::Instant::now() + every.unwrap_or(TREE_SAMPLE_QUIET),
            // The first quiet reading comes one period in (the tree is small then).
            pending: None,
            last: None,
            stuck_said: false,
        }
    }

    /// When the next tick is (far away with sampling off).
    pub(crate) fn due(&self) -> tokio::time::Instant {
        match self.every {
            Some(_) => self.next,
            None => crate::clock::far_future(),
        }
    }

    /// Whether a reading is under way.
    pub(crate) fn reading(&self) -> bool {
        self.pending.is_some()
    }

    /// A tick (one every period: a look at what the policy wants costs a lock, so a tool
    /// call that begins is sampled within one period): start a reading if the policy wants
    /// one now, at the full rate, or now and then (and none is under way; one that has been
    /// under way since the last tick is said to have failed, once).
    pub(crate) async fn tick(&mut self, tree: &mut Tree, shared: &Shared) {
        let Some(every) = self.every else { return };
        let now = tokio::time::Instant::now();
        self.next = now + every;
        let want = shared.tree_want();
        let quiet_due = self
            .last
            .is_none_or(|l| now >= l + TREE_SAMPLE_QUIET.max(every));
        if !want.is_some_and(|w| w.urgent() || quiet_due) {
            return;
        }
        if self.pending.is_some() {
            if !self.stuck_said {
                self.stuck_said = true;
                let s = TreeSample::unavailable("a reading of /proc has not returned");
                shared.observe_tree(now.into_std(), &s);
            }
            return;
        }
        let Some(want) = want else { return };
        // The tool's processes: those started since its call, less the slack.
        let sockets = Sockets(want.tool_age_ms(now.into_std()));
        let reading = read_tree(tree, false, sockets).await;
        self.pending = Some((now, reading));
        self.last = Some(now);
    }

    /// The reading under way, once it is done.
    pub(crate) async fn done(&mut self) -> TreeSample {
        let Some((_, reading)) = self.pending.as_mut() else {
            return std::future::pending().await;
        };
        let sample = match reading.await {
            Ok(s) => s,
            Err(_) => TreeSample::unavailable("the reading of /proc failed"),
        };
        self.pending = None;
        self.stuck_said = false;
        sample
    }

    /// Hand a finished sample to the policy, dated now, and to the output (a capture keeps
    /// it).
    pub(crate) fn deliver(sample: TreeSample, shared: &Shared, out: &mpsc::UnboundedSender<Batch>) {
        let at = std::time::Instant::now();
        shared.observe_tree(at, &sample);
        let _ = out.send(Batch::Output(Output::Tree {
            at,
            sample: Arc::new(sample),
        }));
    }
}
