//! The audit report: its figures, the JSON object and the human text.

use std::fmt::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::spells::SpellKind;
use super::stats::Distribution;
use super::transcript::Ending;
use watchdog_core::config::format_duration;

/// One long productive silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Silence {
    /// The session's id (the file name when the file has none).
    pub session_id: String,
    /// The file.
    pub file: PathBuf,
    /// Length without progress, ms.
    pub ms: u64,
    /// Longest gap without any line inside it, ms.
    pub quiet_ms: u64,
    /// `model` or `tool`.
    pub kind: SpellKind,
    /// The tool, for tool spells.
    pub tool: Option<String>,
    /// Start, ms since the session began.
    pub start_ms: u64,
}

/// A kill the given settings would have made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WouldKill {
    /// The session's id.
    pub session_id: String,
    /// The file.
    pub file: PathBuf,
    /// The kill kind (`idle`, `no_progress`, …).
    pub kind: &'static str,
    /// When, ms since the session began.
    pub at_ms: u64,
    /// The session was doing productive work at that moment (more work followed).
    pub productive: bool,
}

/// One session's figures (JSON only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session's id.
    pub session_id: String,
    /// The file.
    pub file: PathBuf,
    /// A subagent transcript.
    pub subagent: bool,
    /// How it ended.
    pub ending: Ending,
    /// Its quiet spells (0 for a subagent counted in its parent's timeline).
    pub spells: u64,
    /// Its longest productive silence, ms, and the tool if it was a tool call.
    pub longest_productive_ms: Option<u64>,
    /// The tool of that silence.
    pub longest_productive_tool: Option<String>,
    /// The first kill the given settings would make: kind and ms since the session began.
    pub would_kill: Option<(&'static str, u64)>,
    /// The wall clock (epoch ms) of the session's time origin, the instant the `at_ms` of its
    /// kills (here and in [`AuditReport::would_kill`]), [`SessionSummary::end_ms`] and the
    /// `start_ms` of [`SessionSummary::spell_list`] count from: transcripts, the first entry's
    /// timestamp; captures, the spawn (the `start` record's `wall_ms`), `None` when the
    /// capture has no `start` record.
    pub origin_wall_ms: Option<i64>,
    /// The last entry, ms since the origin.
    pub end_ms: u64,
    /// Its quiet spells in order, each `start_ms` counted from the origin: filled only when
    /// asked for ([`crate::audit_files_with`]), and empty for a subagent counted in its
    /// parent's timeline (as [`SessionSummary::spells`]).
    pub spell_list: Vec<super::spells::Spell>,
}

/// The recommended thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// Recommended `--idle`, ms.
    pub idle_ms: u64,
    /// Recommended `--no-progress`, ms.
    pub no_progress_ms: u64,
    /// The longest productive silence with no line at all, ms (the idle basis).
    pub longest_quiet_ms: u64,
    /// The longest productive spell without progress, ms (the no-progress basis).
    pub longest_spell_ms: u64,
    /// The margin applied.
    pub margin: f64,
    /// Whether replaying every session with these values killed none while productive.
    pub verified: bool,
    /// How many ladder steps the replay check added.
    pub raised: u32,
    /// No productive silence was found: the values are the current settings.
    pub no_data: bool,
    /// A productive silence needs more than the longest duration `run` accepts (365 days):
    /// the value is capped there, and that silence is not covered.
    pub capped: bool,
}

/// One histogram bin of spell lengths (log scale).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bin {
    /// Lower edge, ms (inclusive).
    pub lo_ms: u64,
    /// Upper edge, ms (exclusive).
    pub hi_ms: u64,
    /// Spells per kind, in [`SpellKind::ALL`] order.
    pub counts: [u64; 4],
}

/// Everything `audit` found.
#[derive(Debug, Clone)]
pub struct AuditReport {
    /// Sessions (files) read.
    pub sessions_scanned: u64,
    /// Of those, subagent transcripts.
    pub subagent_sessions: u64,
    /// Files that could not be read.
    pub files_skipped: u64,
    /// Which, and why.
    pub skipped: Vec<(PathBuf, String)>,
    /// Bytes read.
    pub bytes: u64,
    /// Lines read.
    pub lines: u64,
    /// Lines that were not one JSON object.
    pub bad_lines: u64,
    /// Of those, truncated last lines.
    pub truncated_lines: u64,
    /// Timing entries without a timestamp.
    pub untimed_entries: u64,
    /// Timestamps that went backwards.
    pub clock_jumps: u64,
    /// Quiet spells by kind, in [`SpellKind::ALL`] order.
    pub quiet_spells: Vec<(SpellKind, Distribution)>,
    /// Tool spells by tool name, longest first.
    pub tools: Vec<(String, Distribution)>,
    /// The longest productive silence of each session, longest first (top 10).
    pub longest_productive_silences: Vec<Silence>,
    /// Kills the given settings would have made.
    pub would_kill: Vec<WouldKill>,
    /// The recommendation.
    pub recommended: Recommendation,
    /// Sessions by how they ended, in [`Ending::ALL`] order.
    pub outcomes: Vec<(Ending, u64)>,
    /// The given settings: idle, no-progress, startup, linger (ms) and ceiling.
    pub settings: Settings,
    /// Spell lengths on a log scale (for the plot).
    pub histogram: Vec<Bin>,
    /// Every session, in file order.
    pub sessions: Vec<SessionSummary>,
}

/// The settings the report was computed with.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--idle`, ms.
    pub idle_ms: u64,
    /// `--no-progress`, ms.
    pub no_progress_ms: u64,
    /// `--startup`, ms.
    pub startup_ms: u64,
    /// `--linger`, ms.
    pub linger_ms: u64,
    /// `--ceiling`, ms.
    pub ceiling_ms: Option<u64>,
    /// `--extend-factor`.
    pub extend_factor: f64,
}

fn dist_json(d: &Distribution) -> Value {
    json!({
        "count": d.count,
        "p50_ms": d.p50_ms,
        "p90_ms": d.p90_ms,
        "p99_ms": d.p99_ms,
        "max_ms": d.max_ms,
    })
}

fn fmt_ms(ms: u64) -> String {
    format_duration(Duration::from_millis(ms))
}

/// An instant within a session, to a tenth of a second: `1m0.3s`, `2h5m10.0s`, `850ms`.
fn fmt_at(ms: u64) -> String {
    if ms < 60_000 || ms.is_multiple_of(1000) {
        return fmt_ms(ms);
    }
    let (h, m, s) = (
        ms / 3_600_000,
        ms / 60_000 % 60,
        (ms % 60_000) as f64 / 1000.0,
    );
    if h > 0 {
        format!("{h}h{m}m{s:.1}s")
    } else {
        format!("{m}m{s:.1}s")
    }
}

fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn short_id(id: &str) -> &str {
    id.get(..8).filter(|_| id.len() > 12).unwrap_or(id)
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
            "bytes": self.bytes,
            "lines": self.lines,
            "bad_lines": self.bad_lines,
            "truncated_lines": self.truncated_lines,
            "untimed_entries": self.untimed_entries,
            "clock_jumps": self.clock_jumps,
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

/// The human report, as text.
pub fn render_text(r: &AuditReport) -> String {
    let mut out = String::new();
    // Writing to a `String` cannot fail.
    let _ = write_text(r, &mut out);
    out
}

fn write_text(r: &AuditReport, out: &mut String) -> fmt::Result {
    writeln!(
        out,
        "audit: {} session{} ({} subagent) in {}, {} lines; {} file{} skipped",
        r.sessions_scanned,
        if r.sessions_scanned == 1 { "" } else { "s" },
        r.subagent_sessions,
        fmt_bytes(r.bytes),
        r.lines,
        r.files_skipped,
        if r.files_skipped == 1 { "" } else { "s" },
    )?;
    for (f, why) in &r.skipped {
        writeln!(out, "  skipped {}: {why}", f.display())?;
    }
    if r.bad_lines + r.untimed_entries + r.clock_jumps > 0 {
        writeln!(
            out,
            "  {} line{} not JSON ({} truncated), {} entr{} without timestamp, {} clock jump{} backwards",
            r.bad_lines,
            if r.bad_lines == 1 { "" } else { "s" },
            r.truncated_lines,
            r.untimed_entries,
            if r.untimed_entries == 1 { "y" } else { "ies" },
            r.clock_jumps,
            if r.clock_jumps == 1 { "" } else { "s" },
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Quiet spells      {:>7} {:>9} {:>9} {:>9} {:>9}",
        "count", "p50", "p90", "p99", "max"
    )?;
    let row = |out: &mut dyn Write, name: &str, d: &Distribution| {
        writeln!(
            out,
            "  {:<15} {:>7} {:>9} {:>9} {:>9} {:>9}",
            name,
            d.count,
            fmt_ms(d.p50_ms),
            fmt_ms(d.p90_ms),
            fmt_ms(d.p99_ms),
            fmt_ms(d.max_ms)
        )
    };
    for (k, d) in &r.quiet_spells {
        row(out, k.as_str(), d)?;
    }
    // The eight slowest tools, and every MCP tool (where sessions hang most often).
    let mut mcp = false;
    for (i, (t, d)) in r.tools.iter().enumerate() {
        let is_mcp = watchdog_core::config::is_mcp_tool(t);
        mcp |= is_mcp;
        if i < 8 || is_mcp {
            row(out, &format!("  tool {t}"), d)?;
        }
    }
    if mcp {
        writeln!(
            out,
            "  (MCP calls: Claude Code aborts a silent one by itself, after 30m for a stdio \
             server by default; no-progress waits for that plus 30s)"
        )?;
    }
    writeln!(out)?;
    if r.longest_productive_silences.is_empty() {
        writeln!(
            out,
            "No productive silences (model or tool spells followed by more work)."
        )?;
    } else {
        writeln!(out, "Longest productive silences (one per session)")?;
        for s in &r.longest_productive_silences {
            let what = match &s.tool {
                Some(t) => format!("tool {t}"),
                None => s.kind.as_str().to_string(),
            };
            let file = s
                .file
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            writeln!(
                out,
                "  {:>9}  {:<18} session {} ({file}) at {}",
                fmt_ms(s.ms),
                what,
                short_id(&s.session_id),
                fmt_at(s.start_ms)
            )?;
        }
    }
    writeln!(out)?;
    let ended: Vec<String> = r
        .outcomes
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(e, n)| format!("{} {n}", e.as_str()))
        .collect();
    writeln!(
        out,
        "How sessions ended: {}",
        if ended.is_empty() {
            "-".into()
        } else {
            ended.join(", ")
        }
    )?;
    let s = &r.settings;
    let settings = format!(
        "--idle {} --no-progress {} --startup {} --linger {}{}",
        fmt_ms(s.idle_ms),
        fmt_ms(s.no_progress_ms),
        fmt_ms(s.startup_ms),
        fmt_ms(s.linger_ms),
        s.ceiling_ms
            .map(|c| format!(" --ceiling {}", fmt_ms(c)))
            .unwrap_or_default()
    );
    if r.would_kill.is_empty() {
        writeln!(out, "With {settings}: no session would have been killed.")?;
    } else {
        let productive = r.would_kill.iter().filter(|k| k.productive).count();
        writeln!(
            out,
            "With {settings}: {} kill{} ({productive} while productive):",
            r.would_kill.len(),
            if r.would_kill.len() == 1 { "" } else { "s" }
        )?;
        for k in r.would_kill.iter().take(20) {
            let file = k
                .file
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            writeln!(
                out,
                "  session {} ({file}): {} at {}{}",
                short_id(&k.session_id),
                k.kind,
                fmt_at(k.at_ms),
                if k.productive {
                    ", while productive"
                } else {
                    ""
                }
            )?;
        }
        if r.would_kill.len() > 20 {
            writeln!(out, "  … and {} more (see --json)", r.would_kill.len() - 20)?;
        }
    }
    writeln!(out)?;
    let rec = &r.recommended;
    writeln!(
        out,
        "Recommended: --idle {} --no-progress {}",
        fmt_ms(rec.idle_ms),
        fmt_ms(rec.no_progress_ms)
    )?;
    if rec.no_data {
        writeln!(
            out,
            "  (no productive silence found: these are the current settings)"
        )?;
    } else {
        writeln!(
            out,
            "  the smallest round values >= {}x the longest productive silence: {} with no line at all (idle), {} without progress (no-progress){}.",
            rec.margin,
            fmt_ms(rec.longest_quiet_ms),
            fmt_ms(rec.longest_spell_ms),
            if rec.raised > 0 { format!(", raised {} step(s) by the replay check", rec.raised) } else { String::new() }
        )?;
        if rec.capped {
            writeln!(
                out,
                "  capped at {}, the longest duration run accepts: a silence that long is not covered (a clock that jumped, or a session left open?)",
                fmt_ms(crate::recommend::MAX_MS)
            )?;
        }
        writeln!(
            out,
            "  {}",
            if rec.verified {
                "Replayed through the watchdog: none of these sessions would be killed while productive."
            } else {
                "Replayed through the watchdog: some productive sessions would still be killed (by limits these flags do not set)."
            }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_keep_a_tenth_of_a_second() {
        assert_eq!(fmt_at(60_311), "1m0.3s");
        assert_eq!(fmt_at(122_100), "2m2.1s");
        assert_eq!(fmt_at(3_725_050), "1h2m5.0s");
        assert_eq!(fmt_at(120_000), "2m");
        assert_eq!(fmt_at(850), "850ms");
        assert_eq!(fmt_bytes(316_762), "316.8 KB");
    }
}
