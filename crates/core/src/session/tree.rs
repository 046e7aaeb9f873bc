//! The rule on a session's process tree (crate-private; the registry keeps one
//! [`TreeState`] per session that asked for it): which tool calls are outstanding, whether
//! their processes were busy between two samples, how long the tree's memory has been over
//! the guard, and what a kill names.
//!
//! Times are the registry's nanoseconds. Everything here is pure: the samples come from the
//! host with the instant they were read, so the rule runs the same live and in replay.

use std::collections::HashMap;
use std::time::Duration;

use crate::config::defaults::{BUSY_CPU_FLOOR, BUSY_NET_FLOOR, MEMORY_HOLD};
use crate::evidence::{is_shell, ProcFacts, ToolCall, TreeEvidence, TreeFacts, TreeSample};

use super::{id_hash, LimitsNs, NEVER};

/// At most this many outstanding tool calls are remembered (a hostile stream cannot grow a
/// session without bound; extra ids are ignored).
const MAX_TOOLS: usize = 64;

const MS: u64 = 1_000_000;

/// One outstanding tool call.
#[derive(Debug)]
struct OpenTool {
    hash: u64,
    id: Box<str>,
    name: Box<str>,
    started: u64,
}

/// What the last sample said.
#[derive(Debug, Default)]
struct Last {
    t: u64,
    busy: bool,
    total_rss: u64,
    named: Option<ProcFacts>,
    largest: Option<ProcFacts>,
    fault: Option<String>,
}

/// A session's process-tree state.
#[derive(Debug)]
pub(crate) struct TreeState {
    tools: Vec<OpenTool>,
    /// The last good sample's counters by process (pid, start): CPU ms, socket bytes.
    prev: HashMap<(u32, u64), (u64, Option<u64>)>,
    /// When the last good sample was read.
    prev_t: Option<u64>,
    /// The last sample that found the outstanding tool's processes busy (0: none since the
    /// tool calls began).
    busy_at: u64,
    /// Since when the tree's memory is over the guard ([`NEVER`]: it is not).
    over_since: u64,
    last: Option<Last>,
    facts: TreeFacts,
    /// Every outstanding tool call is taken for busy (a host beside one that samples).
    presumed: bool,
}

impl Default for TreeState {
    fn default() -> Self {
        TreeState {
            tools: Vec::new(),
            prev: HashMap::new(),
            prev_t: None,
            busy_at: 0,
            over_since: NEVER,
            last: None,
            facts: TreeFacts::default(),
            presumed: false,
        }
    }
}

impl TreeState {
    /// Take every outstanding tool call for busy ([`busy_floor`](Self::busy_floor) is then the
    /// cap's), for a host that does not sample the tree itself.
    pub(crate) fn presume_busy(&mut self, on: bool) {
        self.presumed = on;
    }

    /// A tool call began at `t` (its `tool_use`, or a heartbeat `elapsed` into it).
    pub(crate) fn tool_began(&mut self, id: &str, name: &str, t: u64) {
        let hash = id_hash(id);
        if self.tools.iter().any(|o| o.hash == hash && &*o.id == id) {
            return;
        }
        if self.tools.len() < MAX_TOOLS {
            self.tools.push(OpenTool {
                hash,
                id: id.into(),
                name: name.into(),
                started: t,
            });
        }
    }

    /// The tool call `id` returned.
    pub(crate) fn tool_ended(&mut self, id: &str) {
        let hash = id_hash(id);
        self.tools.retain(|o| !(o.hash == hash && &*o.id == id));
        if self.tools.is_empty() {
            self.busy_at = 0;
        }
    }

    /// The turn ended (a `result`): no tool call is outstanding.
    pub(crate) fn turn_ended(&mut self) {
        self.tools.clear();
        self.busy_at = 0;
    }

    /// The oldest outstanding tool call, if any.
    fn oldest(&self) -> Option<&OpenTool> {
        self.tools.iter().min_by_key(|o| o.started)
    }

    /// Since when the oldest outstanding tool call runs, if one does.
    pub(crate) fn tool_since(&self) -> Option<u64> {
        self.oldest().map(|o| o.started)
    }

    /// What the run's samples said.
    pub(crate) fn facts(&self) -> &TreeFacts {
        &self.facts
    }

    /// A sample read at `t`. Unknown and new processes: a process not in the previous sample
    /// counts its whole CPU time only if it started since that sample (else it was missed,
    /// and its past is not news); one that exited is gone from both sums.
    pub(crate) fn observe(&mut self, sample: &TreeSample, t: u64, l: &LimitsNs) {
        if let Some(fault) = &sample.fault {
            // Stream-only until the next good sample: no busy evidence, no memory spell.
            self.facts.failed += 1;
            self.facts.fault = Some(fault.clone());
            self.prev.clear();
            self.prev_t = None;
            self.busy_at = 0;
            self.over_since = NEVER;
            self.last = Some(Last {
                t,
                fault: Some(fault.clone()),
                ..Last::default()
            });
            return;
        }
        self.facts.samples += 1;
        let total = sample.total_rss();
        self.facts.peak_rss = Some(self.facts.peak_rss.unwrap_or(0).max(total));
        let prev_t = self.prev_t;
        let deltas: Vec<(u64, u64)> = sample
            .procs
            .iter()
            .map(|p| {
                let began = t.saturating_sub(p.age_ms.saturating_mul(MS));
                let fresh = prev_t.is_none_or(|pt| began >= pt);
                match self.prev.get(&(p.pid, p.start)) {
                    Some((cpu, net)) => (
                        p.cpu_ms.saturating_sub(*cpu),
                        match (p.net, net) {
                            (Some(a), Some(b)) => a.saturating_sub(*b),
                            _ => 0,
                        },
                    ),
                    None if fresh => (p.cpu_ms, p.net.unwrap_or(0)),
                    None => (0, 0),
                }
            })
            .collect();
        let since = self.tool_since();
        let in_tool: Vec<bool> = sample
            .procs
            .iter()
            .map(|p| since.is_some_and(|s| sample.in_tool(p, t.saturating_sub(s) / MS)))
            .collect();
        let busy = match since {
            Some(s) if in_tool.iter().any(|&x| x) => {
                let window = t.saturating_sub(prev_t.unwrap_or(0).max(s));
                let (cpu_ms, net) = deltas
                    .iter()
                    .zip(&in_tool)
                    .filter(|(_, &x)| x)
                    .fold((0u64, 0u64), |(c, n), ((dc, dn), _)| {
                        (c.saturating_add(*dc), n.saturating_add(*dn))
                    });
                let secs = window as f64 / 1e9;
                window > 0
                    && ((cpu_ms as f64 / 1e3) >= BUSY_CPU_FLOOR * secs
                        || net as f64 >= BUSY_NET_FLOOR as f64 * secs && net > 0)
            }
            _ => false,
        };
        if busy {
            self.busy_at = t;
            self.facts.busy_samples += 1;
        }
        if total > l.max_rss {
            if self.over_since == NEVER {
                self.over_since = t;
            }
        } else {
            self.over_since = NEVER;
        }
        let named = pick(sample, &in_tool, &deltas, busy).cloned();
        self.last = Some(Last {
            t,
            busy,
            total_rss: total,
            named,
            largest: sample.largest().cloned(),
            fault: None,
        });
        self.prev = sample
            .procs
            .iter()
            .map(|p| ((p.pid, p.start), (p.cpu_ms, p.net)))
            .collect();
        self.prev_t = Some(t);
    }

    /// The no-progress kill comes no earlier than this (0: no hold): the last busy sample of
    /// the outstanding tool's processes plus the limit, but never later than the last
    /// progress (`progress_anchor`) plus the busy cap.
    pub(crate) fn busy_floor(&self, progress_anchor: u64, l: &LimitsNs) -> u64 {
        if self.tools.is_empty() || l.busy_cap == 0 {
            return 0;
        }
        if self.presumed {
            // Busy until the cap: the latest a host that samples may hold the kill.
            return progress_anchor.saturating_add(l.busy_cap);
        }
        if self.busy_at == 0 {
            return 0;
        }
        self.busy_at
            .saturating_add(l.no_progress)
            .min(progress_anchor.saturating_add(l.busy_cap))
    }

    /// When the memory guard kills ([`NEVER`]: not over it).
    pub(crate) fn memory_due(&self) -> u64 {
        if self.over_since == NEVER {
            return NEVER;
        }
        self.over_since
            .saturating_add(MEMORY_HOLD.as_nanos() as u64)
    }

    /// What the tree said at a kill at `at` (`None`: no sample was ever tried): `memory` names the largest process, any other
    /// kind the one the last sample named. `held`: how long evidence held the kill past the
    /// stream's own deadline (the caller knows the anchors).
    pub(crate) fn evidence(
        &self,
        at: u64,
        memory: bool,
        held: u64,
        capped: bool,
        l: &LimitsNs,
    ) -> Option<TreeEvidence> {
        let since = |x: u64| Duration::from_nanos(at.saturating_sub(x));
        let last = self.last.as_ref()?;
        let last = Some(last);
        Some(TreeEvidence {
            tool: self.oldest().map(|o| ToolCall {
                name: o.name.to_string(),
                outstanding: since(o.started),
            }),
            named: last.and_then(|l| {
                if memory {
                    l.largest.clone()
                } else {
                    l.named.clone()
                }
            }),
            busy: last.is_some_and(|l| l.busy),
            held: Duration::from_nanos(held),
            capped,
            rss: last.map(|l| l.total_rss),
            peak_rss: self.facts.peak_rss,
            max_rss: (l.max_rss != u64::MAX).then_some(l.max_rss),
            over_rss: (self.over_since != NEVER).then(|| since(self.over_since)),
            sample_age: last.map(|l| since(l.t)),
            unavailable: last.and_then(|l| l.fault.clone()),
        })
    }
}

/// The process a kill names: of the outstanding tool's processes, the busiest when they
/// were busy, else the oldest that is not a shell (the command a wrapper runs, not the
/// wrapper), else the oldest; with no tool process, the child.
fn pick<'s>(
    sample: &'s TreeSample,
    in_tool: &[bool],
    deltas: &[(u64, u64)],
    busy: bool,
) -> Option<&'s ProcFacts> {
    let tool = || {
        sample
            .procs
            .iter()
            .zip(in_tool)
            .zip(deltas)
            .filter(|((_, &x), _)| x)
    };
    if busy {
        return tool()
            .max_by_key(|((p, _), (dc, _))| (*dc, p.age_ms))
            .map(|((p, _), _)| p);
    }
    let oldest = |shells: bool| {
        tool()
            .map(|((p, _), _)| p)
            .filter(|p| shells || !is_shell(&p.cmd))
            .max_by_key(|p| (p.age_ms, std::cmp::Reverse(p.pid)))
    };
    oldest(false)
        .or_else(|| oldest(true))
        .or_else(|| sample.procs.iter().find(|p| p.pid == sample.root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::ProcState;
    use crate::Limits;

    fn proc(pid: u32, cmd: &str, cpu_ms: u64, age_ms: u64) -> ProcFacts {
        ProcFacts {
            pid,
            start: u64::from(pid),
            ppid: 1,
            pgid: pid,
            cmd: cmd.into(),
            state: ProcState::Asleep,
            cpu_ms,
            rss: 1 << 20,
            age_ms,
            tcp: 0,
            net: None,
        }
    }

    fn sample(procs: Vec<ProcFacts>) -> TreeSample {
        TreeSample {
            root: 1,
            procs,
            fault: None,
        }
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn busy_needs_the_tool_s_own_processes_above_the_floor() {
        let l = LimitsNs::new(&Limits::default());
        let mut st = TreeState::default();
        st.tool_began("t1", "Bash", 10 * S);
        // The child (old) burns CPU: not the tool's. The tool's shell waits.
        st.observe(
            &sample(vec![
                proc(1, "claude", 0, 60_000),
                proc(2, "bash -c x", 0, 900),
            ]),
            11 * S,
            &l,
        );
        st.observe(
            &sample(vec![
                proc(1, "claude", 900, 61_000),
                proc(2, "bash -c x", 10, 1900),
            ]),
            12 * S,
            &l,
        );
        assert!(
            !st.last.as_ref().unwrap().busy,
            "10 ms of CPU in 1 s is under the floor"
        );
        st.observe(
            &sample(vec![
                proc(1, "claude", 900, 62_000),
                proc(2, "bash -c x", 200, 2900),
            ]),
            13 * S,
            &l,
        );
        assert!(st.last.as_ref().unwrap().busy);
        assert_eq!(st.busy_at, 13 * S);
        assert_eq!(
            st.busy_floor(10 * S, &l),
            (13 * S + l.no_progress).min(10 * S + l.busy_cap)
        );
        st.tool_ended("t1");
        assert_eq!(st.busy_floor(10 * S, &l), 0, "no tool outstanding, no hold");
    }

    #[test]
    fn a_process_that_exits_between_samples_costs_nothing() {
        let l = LimitsNs::new(&Limits::default());
        let mut st = TreeState::default();
        st.tool_began("t1", "Bash", 0);
        st.observe(
            &sample(vec![
                proc(1, "claude", 0, 60_000),
                proc(2, "bash", 5000, 500),
                proc(3, "cc", 4000, 400),
            ]),
            S,
            &l,
        );
        st.observe(
            &sample(vec![
                proc(1, "claude", 0, 61_000),
                proc(2, "bash", 5000, 1500),
            ]),
            2 * S,
            &l,
        );
        let last = st.last.as_ref().unwrap();
        assert!(
            !last.busy,
            "the exited process's CPU is neither counted again nor negative"
        );
        assert_eq!(last.named.as_ref().map(|p| p.pid), Some(2));
    }

    #[test]
    fn a_reused_pid_is_a_new_process() {
        let l = LimitsNs::new(&Limits::default());
        let mut st = TreeState::default();
        st.tool_began("t1", "Bash", 0);
        st.observe(&sample(vec![proc(2, "bash", 0, 500)]), S, &l);
        // Pid 2 again, another start: its CPU is its own, counted only if it is new.
        let mut again = proc(2, "make", 300, 200);
        again.start = 99;
        st.observe(&sample(vec![again]), 2 * S, &l);
        assert!(st.last.as_ref().unwrap().busy);
    }

    #[test]
    fn the_named_process_is_the_busiest_or_the_oldest_that_is_no_shell() {
        let s = sample(vec![
            proc(1, "claude", 0, 90_000),
            proc(2, "/bin/bash -c eval 'git push'", 0, 5000),
            proc(3, "git push", 0, 4900),
            proc(4, "ssh host", 0, 4800),
        ]);
        let in_tool = [false, true, true, true];
        let idle = [(0, 0); 4];
        assert_eq!(pick(&s, &in_tool, &idle, false).map(|p| p.pid), Some(3));
        let burning = [(0, 0), (0, 0), (10, 0), (800, 0)];
        assert_eq!(pick(&s, &in_tool, &burning, true).map(|p| p.pid), Some(4));
        assert_eq!(pick(&s, &[false; 4], &idle, false).map(|p| p.pid), Some(1));
    }

    #[test]
    fn memory_counts_from_the_first_sample_over_and_a_fault_forgets_it() {
        let l = LimitsNs::new(&Limits::default().with_max_rss(Some(3 << 20)).unwrap());
        let mut st = TreeState::default();
        let big = || {
            sample(vec![
                proc(1, "claude", 0, 1),
                proc(2, "hog", 0, 1),
                proc(3, "x", 0, 1),
                proc(4, "y", 0, 1),
            ])
        };
        st.observe(&big(), S, &l);
        st.observe(&big(), 2 * S, &l);
        assert_eq!(st.memory_due(), S + MEMORY_HOLD.as_nanos() as u64);
        st.observe(&TreeSample::unavailable("gone"), 3 * S, &l);
        assert_eq!(st.memory_due(), NEVER);
        assert_eq!((st.facts.samples, st.facts.failed), (2, 1));
        assert_eq!(st.facts.peak_rss, Some(4 << 20));
    }
}
