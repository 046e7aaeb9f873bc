//! One policy table per registry: equal [`Limits`] share one entry of precomputed deadlines.

use std::collections::HashMap;
use std::time::Duration;

use crate::config::{Limits, McpLimits};
use crate::session::LimitsNs;

/// A hashable identity of a [`Limits`], to share one table entry between equal policies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct LimitsKey {
    pub(super) durations: [Duration; 6],
    pub(super) ceiling: Option<Duration>,
    pub(super) output_blocked: Option<Duration>,
    pub(super) max_rss: Option<u64>,
    pub(super) task_silence: Option<Duration>,
    pub(super) control_timeout: Option<Duration>,
    pub(super) floats: [u64; 3],
    pub(super) write_tools: Vec<Box<str>>,
    pub(super) mcp: McpLimits,
}

impl LimitsKey {
    pub(super) fn new(l: &Limits) -> Self {
        LimitsKey {
            durations: [
                l.startup(),
                l.idle(),
                l.no_progress(),
                l.linger(),
                l.max_backoff(),
                l.busy_cap(),
            ],
            ceiling: l.ceiling(),
            output_blocked: l.output_blocked(),
            max_rss: l.max_rss(),
            task_silence: l.task_silence(),
            control_timeout: l.control_timeout(),
            floats: [
                l.extend_factor().to_bits(),
                l.high_utilization().to_bits(),
                l.warn_at().to_bits(),
            ],
            write_tools: l.write_tools().to_vec(),
            mcp: l.mcp().clone(),
        }
    }
}

/// One deduplicated policy.
#[derive(Debug)]
pub(super) struct PolicyEntry {
    pub(super) limits: Limits,
    pub(super) ns: LimitsNs,
    /// The last instant the utilization fell below this policy's threshold.
    pub(super) drop_at: u64,
    /// Sessions using it (the registry's own entry is never freed).
    pub(super) refs: u32,
}

/// Policies shared by sessions, deduplicated; a session stores an index.
#[derive(Debug)]
pub(super) struct PolicyTable {
    pub(super) entries: Vec<Option<PolicyEntry>>,
    pub(super) index: HashMap<LimitsKey, u32>,
    pub(super) free: Vec<u32>,
}

impl PolicyTable {
    pub(super) fn new(limits: &Limits) -> Self {
        let mut index = HashMap::new();
        index.insert(LimitsKey::new(limits), 0);
        PolicyTable {
            entries: vec![Some(PolicyEntry {
                limits: limits.clone(),
                ns: LimitsNs::new(limits),
                drop_at: 0,
                refs: 1,
            })],
            index,
            free: Vec::new(),
        }
    }

    pub(super) fn get(&self, i: u32) -> &PolicyEntry {
        // Invariant: a live session's index is a live entry; entry 0 always exists.
        match self.entries.get(i as usize) {
            Some(Some(e)) => e,
            _ => self.entries[0].as_ref().expect("entry 0 is permanent"),
        }
    }

    pub(super) fn acquire(&mut self, limits: Option<&Limits>) -> u32 {
        let Some(limits) = limits else {
            if let Some(Some(e)) = self.entries.get_mut(0) {
                e.refs = e.refs.saturating_add(1);
            }
            return 0;
        };
        let key = LimitsKey::new(limits);
        if let Some(&i) = self.index.get(&key) {
            if let Some(Some(e)) = self.entries.get_mut(i as usize) {
                e.refs = e.refs.saturating_add(1);
            }
            return i;
        }
        let entry = PolicyEntry {
            limits: limits.clone(),
            ns: LimitsNs::new(limits),
            drop_at: 0,
            refs: 1,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = Some(entry);
                i
            }
            None => {
                self.entries.push(Some(entry));
                (self.entries.len() - 1) as u32
            }
        };
        self.index.insert(key, i);
        i
    }

    pub(super) fn release(&mut self, i: u32) {
        let Some(Some(e)) = self.entries.get_mut(i as usize) else {
            return;
        };
        e.refs = e.refs.saturating_sub(1);
        if e.refs == 0 && i != 0 {
            let key = LimitsKey::new(&e.limits);
            self.index.remove(&key);
            self.entries[i as usize] = None;
            self.free.push(i);
        }
    }
}
