//! The audit report as text for a person ([`render_text`]), and its ways of writing
//! durations, instants, sizes and session ids.

use std::borrow::Cow;
use std::fmt::{self, Write};
use std::path::Path;
use std::time::Duration;

use watchdog_core::config::HumanDuration;

use super::figures::AuditReport;
use crate::stats::Distribution;

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
        fmt_bytes(r.read.bytes),
        r.read.lines,
        r.files_skipped,
        if r.files_skipped == 1 { "" } else { "s" },
    )?;
    for (f, why) in &r.skipped {
        writeln!(out, "  skipped {}: {why}", f.display())?;
    }
    if r.read.bad_lines + r.read.untimed_entries + r.read.clock_jumps > 0 {
        writeln!(
            out,
            "  {} line{} not JSON ({} truncated), {} entr{} without timestamp, {} clock jump{} backwards",
            r.read.bad_lines,
            if r.read.bad_lines == 1 { "" } else { "s" },
            r.read.truncated_lines,
            r.read.untimed_entries,
            if r.read.untimed_entries == 1 { "y" } else { "ies" },
            r.read.clock_jumps,
            if r.read.clock_jumps == 1 { "" } else { "s" },
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
        let is_mcp = watchdog_core::mcp::is_mcp_tool(t);
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
            let file = file_name(&s.file);
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
            let file = file_name(&k.file);
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

fn fmt_ms(ms: u64) -> String {
    HumanDuration(Duration::from_millis(ms)).to_string()
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

/// The last part of a session's path (empty if it has none), as a line names it.
fn file_name(path: &Path) -> Cow<'_, str> {
    path.file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
}

fn short_id(id: &str) -> &str {
    id.get(..8).filter(|_| id.len() > 12).unwrap_or(id)
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
