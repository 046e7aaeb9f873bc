//! The sessions as the simulation takes them: each log with its subagents' activity merged
//! into its parent's timeline, its spells analysed, and where its clock starts and ends.

use std::collections::HashMap;

use crate::scan;
use crate::spells::{self, Analysis};
use crate::transcript::{Entry, EntryKind, Format, SessionLog};

/// One session, ready for the simulation.
pub(crate) struct Session {
    pub(crate) log: SessionLog,
    /// Entries with merged subagent activity (transcripts with subagents), else `None`.
    merged: Option<Vec<Entry>>,
    /// A subagent whose parent was read: its spells live in the parent's timeline.
    pub(crate) in_parent: bool,
    pub(crate) analysis: Analysis,
}

impl Session {
    pub(crate) fn entries(&self) -> &[Entry] {
        self.merged.as_deref().unwrap_or(&self.log.entries)
    }
    pub(crate) fn id(&self) -> String {
        self.log.session_id.clone().unwrap_or_else(|| {
            self.log
                .file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }
}

pub(crate) fn build_sessions(logs: Vec<SessionLog>, threads: usize) -> Vec<Session> {
    // Subagent activity by parent session id.
    let mut parents: HashMap<&str, usize> = HashMap::new();
    for (i, l) in logs.iter().enumerate() {
        if !l.subagent && l.format == Format::Transcript {
            if let Some(id) = &l.session_id {
                parents.entry(id.as_str()).or_insert(i);
            }
        }
    }
    let mut ticks: HashMap<usize, Vec<i64>> = HashMap::new();
    let mut in_parent = vec![false; logs.len()];
    for (i, l) in logs.iter().enumerate() {
        if !l.subagent || l.format != Format::Transcript {
            continue;
        }
        if let Some(&p) = l.session_id.as_deref().and_then(|id| parents.get(id)) {
            in_parent[i] = true;
            ticks.entry(p).or_default().extend(
                l.entries
                    .iter()
                    .filter(|e| e.kind.is_progress())
                    .map(|e| e.t),
            );
        }
    }
    let merged: Vec<Option<Vec<Entry>>> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| ticks.remove(&i).map(|t| merge(&l.entries, t)))
        .collect();
    let inputs: Vec<(SessionLog, Option<Vec<Entry>>, bool)> = logs
        .into_iter()
        .zip(merged)
        .zip(in_parent)
        .map(|((l, m), p)| (l, m, p))
        .collect();
    let analyses = scan::par_map(&inputs, threads, |(l, m, _)| {
        spells::analyse(l.format, m.as_deref().unwrap_or(&l.entries))
    });
    inputs
        .into_iter()
        .zip(analyses)
        .map(|((log, merged, in_parent), analysis)| Session {
            log,
            merged,
            in_parent,
            analysis,
        })
        .collect()
}

/// Merge subagent activity times into a parent's entries (only within the parent's span).
fn merge(entries: &[Entry], mut ticks: Vec<i64>) -> Vec<Entry> {
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return entries.to_vec();
    };
    ticks.retain(|t| *t >= first.t && *t <= last.t);
    ticks.sort_unstable();
    let mut out = Vec::with_capacity(entries.len() + ticks.len());
    let mut ti = ticks.into_iter().peekable();
    for e in entries {
        while let Some(t) = ti.next_if(|t| *t < e.t) {
            out.push(Entry {
                t,
                kind: EntryKind::SubagentProgress,
            });
        }
        out.push(e.clone());
    }
    out
}

pub(crate) fn counted(s: &Session) -> bool {
    !s.in_parent
}

/// See [`SessionSummary::origin_wall_ms`].
pub(crate) fn origin_wall_ms(s: &Session) -> Option<i64> {
    match s.log.format {
        Format::Transcript => s.entries().first().map(|e| e.t),
        Format::Capture => s.log.spawn_wall_ms.and_then(|w| i64::try_from(w).ok()),
    }
}

/// See [`SessionSummary::end_ms`].
pub(crate) fn end_ms(s: &Session) -> u64 {
    let e = s.entries();
    match (s.log.format, e.first(), e.last()) {
        (Format::Transcript, Some(a), Some(b)) => {
            u64::try_from(b.t.saturating_sub(a.t)).unwrap_or(0)
        }
        (Format::Capture, _, Some(b)) => u64::try_from(b.t).unwrap_or(0),
        _ => 0,
    }
}
