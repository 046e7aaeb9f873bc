//! The audit report as one JSON object ([`AuditReport::to_json`]).

use serde_json::{json, Value};

use super::figures::AuditReport;
use crate::stats::Distribution;

fn dist_json(d: &Distribution) -> Value {
    json!({
        "count": d.count,
        "p50_ms": d.p50_ms,
        "p90_ms": d.p90_ms,
        "p99_ms": d.p99_ms,
        "max_ms": d.max_ms,
    })
}

impl AuditReport {
    /// The report as one JSON object (see the `audit` docs for the schema).
    pub fn to_json(&self) -> Value {
        let mut spells = serde_json::Map::new();
        for (k, d) in &self.quiet_spells {
            spells.insert(k.as_str().into(), dist_json(d));
        }
        let mut tools = serde_json::Map::new();
        for (t, d) in &self.tools {
            tools.insert(t.clone(), dist_json(d));
        }
        let mut outcomes = serde_json::Map::new();
        for (e, n) in &self.outcomes {
            outcomes.insert(e.as_str().into(), json!(n));
        }
        let r = &self.recommended;
        let s = &self.settings;
        json!({
            "sessions_scanned": self.sessions_scanned,
            "subagent_sessions": self.subagent_sessions,
            "files_skipped": self.files_skipped,
            "skipped": self.skipped.iter().map(|(f, why)| json!({
                "file": f.display().to_string(), "reason": why,
            })).collect::<Vec<_>>(),
            "bytes": self.read.bytes,
            "lines": self.read.lines,
            "bad_lines": self.read.bad_lines,
            "truncated_lines": self.read.truncated_lines,
            "untimed_entries": self.read.untimed_entries,
            "clock_jumps": self.read.clock_jumps,
            "quiet_spells": spells,
            "tool_spells": tools,
            "longest_productive_silences": self.longest_productive_silences.iter().map(|x| json!({
                "session_id": x.session_id,
                "file": x.file.display().to_string(),
                "ms": x.ms,
                "quiet_ms": x.quiet_ms,
                "kind": x.kind.as_str(),
                "tool": x.tool,
                "start_ms": x.start_ms,
            })).collect::<Vec<_>>(),
            "would_kill": self.would_kill.iter().map(|k| json!({
                "session_id": k.session_id,
                "file": k.file.display().to_string(),
                "kind": k.kind,
                "at_ms": k.at_ms,
                "productive": k.productive,
            })).collect::<Vec<_>>(),
            "recommended": {
                "idle_ms": r.idle_ms,
                "no_progress_ms": r.no_progress_ms,
                "longest_quiet_ms": r.longest_quiet_ms,
                "longest_spell_ms": r.longest_spell_ms,
                "margin": r.margin,
                "verified": r.verified,
                "raised": r.raised,
                "no_data": r.no_data,
                "capped": r.capped,
            },
            "settings": {
                "idle_ms": s.idle_ms,
                "no_progress_ms": s.no_progress_ms,
                "startup_ms": s.startup_ms,
                "linger_ms": s.linger_ms,
                "ceiling_ms": s.ceiling_ms,
                "extend_factor": s.extend_factor,
            },
            "outcomes": outcomes,
            "sessions": self.sessions.iter().map(|x| json!({
                "session_id": x.session_id,
                "file": x.file.display().to_string(),
                "subagent": x.subagent,
                "ending": x.ending.as_str(),
                "spells": x.spells,
                "longest_productive_ms": x.longest_productive_ms,
                "longest_productive_tool": x.longest_productive_tool,
                "would_kill": x.would_kill.map(|(kind, at_ms)| json!({"kind": kind, "at_ms": at_ms})),
            })).collect::<Vec<_>>(),
        })
    }
}
