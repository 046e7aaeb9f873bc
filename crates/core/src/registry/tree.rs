//! The process tree's side: the samples a host reads of a session's tree
//! ([`Registry::observe_tree`]), what the host should sample ([`Registry::tree_want`]), the
//! tool calls the rule watches (read from the lines), the holds and the memory deadline the
//! timer files, and what a kill and the run's record say of the tree. The rule itself is
//! [`crate::evidence`]'s; only sessions registered with
//! [`SessionConfig::with_tree_evidence`](crate::SessionConfig::with_tree_evidence) keep a state
//! here, in a side table (the session's [`Host::Tree`] says when to look).

use std::time::Duration;

use crate::time::Instant;

use crate::classify::{Class, LineKind, Signal};
use crate::config::defaults::TOOL_SLACK;
use crate::dialect::{self, ToolEdge};
use crate::event::{KillKind, SessionId};
use crate::evidence::{TreeEvidence, TreeFacts, TreeSample};
use crate::session::tree::TreeState;
use crate::session::{dur_ns, Cold, Host, HostDue, LimitsNs, Session};
use crate::view::{ContentBlock, LineView};

use super::Registry;

/// What a host should sample of a session's tree ([`Registry::tree_want`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeWant {
    /// Since when the oldest outstanding tool call runs: sample at the full rate, and read
    /// the sockets of the processes started since, less 2 s ([`TreeWant::tool_age_ms`]).
    pub tool_since: Option<Instant>,
    /// The memory guard is on: sample at the full rate.
    pub memory: bool,
}

impl TreeWant {
    /// Whether the rules need samples at the full rate now (a tool call is outstanding, or
    /// the memory guard is on); otherwise a sample now and then gives the peak memory.
    pub fn urgent(&self) -> bool {
        self.tool_since.is_some() || self.memory
    }

    /// At `now`, the age in milliseconds of the oldest process that may be an outstanding
    /// tool's: how long the oldest call runs, plus 2 s (its line reaches the host after its
    /// tool may have started); the rule of [`TreeSample::in_tool`]. `None`: no call.
    pub fn tool_age_ms(&self, now: Instant) -> Option<u64> {
        let since = self.tool_since?;
        let age = now.saturating_duration_since(since) + TOOL_SLACK;
        Some(u64::try_from(age.as_millis()).unwrap_or(u64::MAX))
    }
}

/// The tree states of the sessions that keep one, by slot.
#[derive(Debug, Default)]
pub(super) struct Trees(Vec<Option<Box<TreeState>>>);

impl Trees {
    pub(super) fn get(&self, slot: u32) -> Option<&TreeState> {
        self.0.get(slot as usize)?.as_deref()
    }

    fn get_mut(&mut self, slot: u32) -> Option<&mut TreeState> {
        self.0.get_mut(slot as usize)?.as_deref_mut()
    }

    /// A fresh state for the session in `slot`.
    pub(super) fn start(&mut self, slot: u32, busy_presumed: bool) {
        let i = slot as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        let mut st = Box::<TreeState>::default();
        st.presume_busy(busy_presumed);
        self.0[i] = Some(st);
    }

    pub(super) fn forget(&mut self, slot: u32) {
        if let Some(e) = self.0.get_mut(slot as usize) {
            *e = None;
        }
    }
}

/// What the tree adds to the deadlines of a session: the no-progress floor of a busy tool
/// and the memory guard's kill.
pub(super) fn tree_due(trees: &Trees, slot: u32, s: &Session, ns: &LimitsNs) -> HostDue {
    match trees.get(slot).filter(|_| s.host.has(Host::Tree)) {
        Some(st) => HostDue {
            busy_floor: st.busy_floor(s.progress_anchor, ns),
            memory_at: st.memory_due(),
        },
        None => HostDue::NONE,
    }
}

impl Registry {
    /// A sample of the session's process tree, read at `now` (see [`crate::evidence`] for
    /// the rules it feeds): busy tool processes hold the no-progress kill (up to
    /// [`busy_cap`](crate::Limits::busy_cap)), the tree's memory feeds the guard
    /// ([`max_rss`](crate::Limits::max_rss)), and a sample that says the tree could not be
    /// read ([`TreeSample::unavailable`]) leaves the stream alone to decide. No effect on a
    /// session registered without
    /// [`SessionConfig::with_tree_evidence`](crate::SessionConfig::with_tree_evidence), nor on
    /// an ended one.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use watchdog_core::evidence::{ProcFacts, ProcState, TreeSample};
    /// use watchdog_core::{Event, KillKind, Limits, Registry, SessionConfig};
    /// let (t0, s) = (Instant::now(), Duration::from_secs);
    /// let limits = Limits::default().with_no_progress(s(60)).unwrap().with_busy_cap(s(300)).unwrap();
    /// let mut reg = Registry::new(limits);
    /// let id = reg.register(t0, SessionConfig::default().with_tree_evidence(true));
    /// reg.observe_line(t0, id, br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#);
    /// // A compiler the tool started burns a core: every sample finds it busy.
    /// for i in 1..=400u64 {
    ///     let cc = ProcFacts { pid: 7, start: 1, ppid: 1, pgid: 7, cmd: "cc".into(),
    ///         state: ProcState::Running, cpu_ms: i * 1000, rss: 1 << 20, age_ms: i * 1000, tcp: 0, net: None };
    ///     reg.observe_tree(t0 + s(i), id, &TreeSample { root: 1, procs: vec![cc], fault: None });
    ///     // Heartbeats only: keep-alives, not progress.
    ///     reg.observe_line(t0 + s(i), id, br#"{"type":"tool_progress","tool_name":"Bash"}"#);
    /// }
    /// let kill = std::iter::from_fn(|| reg.poll_event()).find_map(|e| match e {
    ///     Event::Killed(k) => Some(k),
    ///     _ => None,
    /// }).unwrap();
    /// // Not at 60 s: at the busy cap.
    /// assert_eq!((kill.kind, kill.elapsed), (KillKind::NoProgress, s(300)));
    /// assert!(kill.tree.unwrap().capped);
    /// ```
    pub fn observe_tree(&mut self, now: Instant, id: SessionId, sample: &TreeSample) {
        let t = self.advance(now);
        let Some(slot) = self.slot_of(id) else {
            return;
        };
        let s = &self.slots[slot as usize];
        if s.is_done() || !s.host.has(Host::Tree) {
            return;
        }
        let Registry {
            policies, trees, ..
        } = self;
        let ns = &policies.get(s.limits).ns;
        if let Some(st) = trees.get_mut(slot) {
            st.observe(sample, t, ns);
        }
        self.reschedule(slot);
        self.run_due(t);
    }

    /// What the host should sample of the session's tree now, or `None` when nothing (an
    /// unknown or ended session, or one that keeps no tree state).
    pub fn tree_want(&self, id: SessionId) -> Option<TreeWant> {
        let slot = self.slot_of(id)?;
        let s = self.session(slot);
        if s.is_done() || !s.host.has(Host::Tree) {
            return None;
        }
        let st = self.trees.get(slot)?;
        Some(TreeWant {
            tool_since: st.tool_since().and_then(|t| self.instant(t)),
            memory: self.policies.get(s.limits).ns.max_rss != u64::MAX,
        })
    }

    /// What the session's samples of its tree said so far (`None`: it keeps no tree state).
    pub fn tree_facts(&self, id: SessionId) -> Option<&TreeFacts> {
        self.trees.get(self.slot_of(id)?).map(TreeState::facts)
    }

    /// The tool calls a line of a session with [`Host::Tree`] begins and ends.
    pub(super) fn note_tree_line(&mut self, slot: u32, view: &LineView<'_>, class: Class, t: u64) {
        let Some(st) = self.trees.get_mut(slot) else {
            return;
        };
        match class.kind {
            LineKind::Assistant | LineKind::User => view.for_each_block(|b| match b {
                ContentBlock::ToolUse { id, name } => st.tool_began(&id, &name, t),
                ContentBlock::ToolResult { tool_use_id, .. } => st.tool_ended(&tool_use_id),
                ContentBlock::Other => {}
            }),
            LineKind::ToolProgress => {
                if let (Some(id), Some(name)) = (view.parent_tool_use_id(), view.tool_name()) {
                    let elapsed = view
                        .elapsed_time_seconds()
                        .and_then(|e| Duration::try_from_secs_f64(e).ok())
                        .map_or(0, dur_ns);
                    st.tool_began(&id, &name, t.saturating_sub(elapsed));
                }
            }
            // Another dialect's calls: Codex's tool items, opencode's steps.
            kind => match dialect::tool_edge(view, kind) {
                Some(ToolEdge::Began { id, name }) => st.tool_began(&id, &name, t),
                Some(ToolEdge::Ended { id }) => st.tool_ended(&id),
                None => {}
            },
        }
        // The turn ended (a `result`, another dialect's end): no call is outstanding.
        if class.signal == Signal::Settle {
            st.turn_ended();
        }
    }

    /// What the tree said at a kill of `kind` at `at` (`None`: no tree state, or no sample
    /// was ever tried).
    pub(super) fn tree_evidence(
        &self,
        slot: u32,
        at: u64,
        kind: KillKind,
    ) -> Option<Box<TreeEvidence>> {
        let s = self.session(slot);
        if !s.host.has(Host::Tree) {
            return None;
        }
        let st = self.trees.get(slot)?;
        let ns = &self.policies.get(s.limits).ns;
        let c: &Cold = &self.cold[slot as usize];
        let (held, capped) = if kind == KillKind::NoProgress {
            let stream = s.progress_anchor.saturating_add(ns.no_progress);
            let held = at.saturating_sub(stream.max(s.mcp_floor(c)));
            let cap = s.progress_anchor.saturating_add(ns.busy_cap);
            (held, held > 0 && at >= cap)
        } else {
            (0, false)
        };
        st.evidence(at, kind == KillKind::Memory, held, capped, ns)
            .map(Box::new)
    }
}
