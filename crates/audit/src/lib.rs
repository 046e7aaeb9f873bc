#![doc = include_str!("../README.md")]
//!
//! ## Pieces
//!
//! [`transcript`] (files → timed entries), [`spells`] (spell kinds, endings, runs),
//! [`stats`] (percentiles), [`simulate`] (the core registry in virtual time), [`recommend`]
//! (the ladder), [`report`] (text and JSON), [`svg`] (the plot), [`scan`] (parallel reading),
//! [`lines`] (files read line by line in bounded memory). Timestamps are read by
//! [`watchdog_core::wall::parse_iso_ms`], lines skimmed by [`watchdog_core::json_scan::skim`].
//!
//! The library prints nothing: [`audit_paths`] / [`audit_files`] return an [`AuditReport`], and
//! [`AuditReport::to_json`], [`render_text`] and [`render_svg`] render it as values. The
//! `agent-watchdog audit` command (crate `agent-sdk-watchdog-cli`) parses the flags, prints,
//! and sets the exit code.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod lines;
pub mod recommend;
pub mod report;
pub mod scan;
pub mod simulate;
pub mod spells;
pub mod stats;
pub mod svg;
pub mod transcript;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;

use watchdog_core::capture::StartFacts;
use watchdog_core::{KillKind, Limits};

pub use report::{
    render_text, AuditReport, Bin, Recommendation, SessionSummary, Settings, Silence, WouldKill,
};
pub use svg::render_svg;

use scan::{Discovery, Skipped};
use simulate::SimKill;
use spells::{Analysis, SpellKind};
use stats::Distribution;
use transcript::{Ending, Entry, EntryKind, Format, SessionLog};

/// The settings for one capture's simulation, from the settings being checked and what the
/// capture's `start` record says (`None` for a transcript, or a capture without one). The
/// `agent-watchdog` command applies the MCP rule of the recorded run here.
pub type StartLimits = dyn for<'l> Fn(&'l Limits, Option<&StartFacts>) -> Cow<'l, Limits> + Sync;

/// The settings as given, whatever a capture's `start` record says (a [`StartLimits`]).
pub fn as_given<'l>(limits: &'l Limits, _start: Option<&StartFacts>) -> Cow<'l, Limits> {
    Cow::Borrowed(limits)
}

/// Audit these paths (folders recursively, files as given) with these settings, on every core
/// (captures with the settings [`as_given`]).
pub fn audit_paths(paths: &[PathBuf], limits: &Limits) -> AuditReport {
    audit_files(
        scan::discover(paths),
        limits,
        scan::threads(),
        &|_| {},
        &as_given,
    )
}

/// One session, ready for the simulation.
struct Session {
    log: SessionLog,
    /// Entries with merged subagent activity (transcripts with subagents), else `None`.
    merged: Option<Vec<Entry>>,
    /// A subagent whose parent was read: its spells live in the parent's timeline.
    in_parent: bool,
    analysis: Analysis,
}

impl Session {
    fn entries(&self) -> &[Entry] {
        self.merged.as_deref().unwrap_or(&self.log.entries)
    }
    fn id(&self) -> String {
        self.log.session_id.clone().unwrap_or_else(|| {
            self.log
                .file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }
}

/// Audit the discovered files on `threads` threads; `on_bytes` is told each chunk of bytes
/// read (for a progress bar), and `for_start` gives each capture's settings.
pub fn audit_files(
    discovery: Discovery,
    limits: &Limits,
    threads: usize,
    on_bytes: &(dyn Fn(u64) + Sync),
    for_start: &StartLimits,
) -> AuditReport {
    audit_files_with(discovery, limits, threads, on_bytes, for_start, false)
}

/// [`audit_files`], and with `spell_lists` each session's quiet spells in
/// [`SessionSummary::spell_list`] too (a copy of every spell: what a telemetry back-fill
/// exports; left empty otherwise, so the report costs nothing more).
pub fn audit_files_with(
    discovery: Discovery,
    limits: &Limits,
    threads: usize,
    on_bytes: &(dyn Fn(u64) + Sync),
    for_start: &StartLimits,
    spell_lists: bool,
) -> AuditReport {
    let Discovery { files, mut skipped } = discovery;
    let mut logs = Vec::with_capacity(files.len());
    for r in scan::read_all(&files, threads, on_bytes) {
        match r {
            Ok(log) => logs.push(log),
            Err(s) => skipped.push(s),
        }
    }
    let sessions = build_sessions(logs, threads);
    let given = simulate_all(&sessions, limits, threads, for_start);
    let recommended = recommend(&sessions, limits, threads, for_start);
    summarise(&sessions, &given, recommended, skipped, limits, spell_lists)
}

fn build_sessions(logs: Vec<SessionLog>, threads: usize) -> Vec<Session> {
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

fn simulate_all(
    sessions: &[Session],
    limits: &Limits,
    threads: usize,
    for_start: &StartLimits,
) -> Vec<Vec<SimKill>> {
    scan::par_map(sessions, threads, |s| {
        if s.in_parent {
            Vec::new()
        } else {
            // The settings of the recorded run (the CLI's MCP rule), from its `start` record.
            let limits = for_start(limits, s.log.start.as_ref());
            simulate::simulate(&s.log, s.entries(), &s.analysis, &limits)
        }
    })
}

fn counted(s: &Session) -> bool {
    !s.in_parent
}

/// See [`SessionSummary::origin_wall_ms`].
fn origin_wall_ms(s: &Session) -> Option<i64> {
    match s.log.format {
        Format::Transcript => s.entries().first().map(|e| e.t),
        Format::Capture => s.log.spawn_wall_ms.and_then(|w| i64::try_from(w).ok()),
    }
}

/// See [`SessionSummary::end_ms`].
fn end_ms(s: &Session) -> u64 {
    let e = s.entries();
    match (s.log.format, e.first(), e.last()) {
        (Format::Transcript, Some(a), Some(b)) => {
            u64::try_from(b.t.saturating_sub(a.t)).unwrap_or(0)
        }
        (Format::Capture, _, Some(b)) => u64::try_from(b.t).unwrap_or(0),
        _ => 0,
    }
}

fn recommend(
    sessions: &[Session],
    limits: &Limits,
    threads: usize,
    for_start: &StartLimits,
) -> Recommendation {
    let productive = || {
        sessions
            .iter()
            .filter(|s| counted(s))
            .flat_map(|s| s.analysis.spells.iter())
            .filter(|sp| sp.productive)
    };
    let longest_quiet_ms = productive().map(|s| s.quiet_ms).max();
    let longest_spell_ms = productive().map(|s| s.ms).max();
    let (Some(longest_quiet_ms), Some(longest_spell_ms)) = (longest_quiet_ms, longest_spell_ms)
    else {
        return Recommendation {
            idle_ms: limits.idle().as_millis() as u64,
            no_progress_ms: limits.no_progress().as_millis() as u64,
            longest_quiet_ms: 0,
            longest_spell_ms: 0,
            margin: recommend::MARGIN,
            verified: true,
            raised: 0,
            no_data: true,
            capped: false,
        };
    };
    let mut idle = recommend::with_margin(longest_quiet_ms);
    let mut no_progress = recommend::with_margin(longest_spell_ms).max(idle);
    let mut raised = 0;
    let mut verified = false;
    for _ in 0..40 {
        let l = limits
            .clone()
            .with_idle(std::time::Duration::from_millis(idle))
            .and_then(|l| l.with_no_progress(std::time::Duration::from_millis(no_progress)));
        let Ok(l) = l else { break };
        let kills = simulate_all(sessions, &l, threads, for_start);
        let bad: Vec<&SimKill> = kills.iter().flatten().filter(|k| k.productive).collect();
        if bad.is_empty() {
            verified = true;
            break;
        }
        if idle >= recommend::MAX_MS && no_progress >= recommend::MAX_MS {
            break; // nothing longer is a value `run` accepts
        }
        let idle_bad = bad.iter().any(|k| k.kind == KillKind::Idle);
        let np_bad = bad.iter().any(|k| k.kind == KillKind::NoProgress);
        if !idle_bad && !np_bad {
            break; // startup, linger or ceiling: not ours to fix
        }
        if idle_bad {
            idle = recommend::next_rung(idle);
            no_progress = no_progress.max(idle);
        }
        if np_bad {
            no_progress = recommend::next_rung(no_progress);
        }
        raised += 1;
    }
    Recommendation {
        idle_ms: idle,
        no_progress_ms: no_progress,
        longest_quiet_ms,
        longest_spell_ms,
        margin: recommend::MARGIN,
        verified,
        raised,
        no_data: false,
        capped: recommend::beyond_cap(longest_quiet_ms) || recommend::beyond_cap(longest_spell_ms),
    }
}

fn summarise(
    sessions: &[Session],
    kills: &[Vec<SimKill>],
    recommended: Recommendation,
    skipped: Vec<Skipped>,
    limits: &Limits,
    spell_lists: bool,
) -> AuditReport {
    let mut by_kind: Vec<Vec<u64>> = vec![Vec::new(); SpellKind::ALL.len()];
    let mut by_tool: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut histogram: Vec<Bin> = (0..svg::bin_count())
        .map(|k| Bin {
            lo_ms: svg::edge(k),
            hi_ms: svg::edge(k + 1),
            counts: [0; 4],
        })
        .collect();
    let mut silences = Vec::new();
    let mut outcomes = [0u64; Ending::ALL.len()];
    let mut r = AuditReport {
        sessions_scanned: sessions.len() as u64,
        subagent_sessions: 0,
        files_skipped: skipped.len() as u64,
        skipped: skipped.into_iter().map(|s| (s.file, s.reason)).collect(),
        bytes: 0,
        lines: 0,
        bad_lines: 0,
        truncated_lines: 0,
        untimed_entries: 0,
        clock_jumps: 0,
        quiet_spells: Vec::new(),
        tools: Vec::new(),
        longest_productive_silences: Vec::new(),
        would_kill: Vec::new(),
        recommended,
        outcomes: Vec::new(),
        settings: Settings {
            idle_ms: limits.idle().as_millis() as u64,
            no_progress_ms: limits.no_progress().as_millis() as u64,
            startup_ms: limits.startup().as_millis() as u64,
            linger_ms: limits.linger().as_millis() as u64,
            ceiling_ms: limits.ceiling().map(|c| c.as_millis() as u64),
            extend_factor: limits.extend_factor(),
        },
        histogram: Vec::new(),
        sessions: Vec::new(),
    };
    for (s, ks) in sessions.iter().zip(kills) {
        let l = &s.log;
        r.subagent_sessions += u64::from(l.subagent);
        r.bytes += l.bytes;
        r.lines += l.lines;
        r.bad_lines += l.bad_lines;
        r.truncated_lines += l.truncated_lines;
        r.untimed_entries += l.untimed_entries;
        r.clock_jumps += l.clock_jumps;
        if let Some(e) = s.analysis.ending {
            if let Some(i) = Ending::ALL.iter().position(|x| *x == e) {
                outcomes[i] += 1;
            }
        }
        for k in ks {
            r.would_kill.push(WouldKill {
                session_id: s.id(),
                file: l.file.clone(),
                kind: k.kind.as_str(),
                at_ms: k.at_ms,
                productive: k.productive,
            });
        }
        let best = s
            .analysis
            .spells
            .iter()
            .filter(|sp| sp.productive && counted(s))
            .max_by_key(|sp| (sp.ms, std::cmp::Reverse(sp.start_ms)));
        r.sessions.push(SessionSummary {
            session_id: s.id(),
            file: l.file.clone(),
            subagent: l.subagent,
            ending: s.analysis.ending.unwrap_or(Ending::NoResult),
            spells: if counted(s) {
                s.analysis.spells.len() as u64
            } else {
                0
            },
            longest_productive_ms: best.map(|sp| sp.ms),
            longest_productive_tool: best.and_then(|sp| sp.tool.as_deref().map(str::to_owned)),
            would_kill: ks.first().map(|k| (k.kind.as_str(), k.at_ms)),
            origin_wall_ms: origin_wall_ms(s),
            end_ms: end_ms(s),
            // Spells count from the same origin as kills (captures: the spawn).
            spell_list: if spell_lists && counted(s) {
                s.analysis.spells.clone()
            } else {
                Vec::new()
            },
        });
        if !counted(s) {
            continue;
        }
        for sp in &s.analysis.spells {
            let ki = SpellKind::ALL
                .iter()
                .position(|k| *k == sp.kind)
                .unwrap_or(0);
            by_kind[ki].push(sp.ms);
            histogram[svg::bin_of(sp.ms)].counts[ki] += 1;
            if let (SpellKind::Tool, Some(t)) = (sp.kind, &sp.tool) {
                by_tool.entry(t).or_default().push(sp.ms);
            }
        }
        if let Some(sp) = best {
            silences.push(Silence {
                session_id: s.id(),
                file: l.file.clone(),
                ms: sp.ms,
                quiet_ms: sp.quiet_ms,
                kind: sp.kind,
                tool: sp.tool.as_deref().map(str::to_owned),
                start_ms: sp.start_ms,
            });
        }
    }
    r.quiet_spells = SpellKind::ALL
        .iter()
        .zip(by_kind.iter_mut())
        .map(|(k, v)| (*k, Distribution::of(v)))
        .collect();
    let mut tools: Vec<(String, Distribution)> = by_tool
        .into_iter()
        .map(|(t, mut v)| (t.to_string(), Distribution::of(&mut v)))
        .collect();
    tools.sort_by(|a, b| b.1.max_ms.cmp(&a.1.max_ms).then_with(|| a.0.cmp(&b.0)));
    r.tools = tools;
    silences.sort_by(|a, b| {
        b.ms.cmp(&a.ms)
            .then_with(|| a.session_id.cmp(&b.session_id))
            .then_with(|| a.file.cmp(&b.file))
    });
    silences.truncate(10);
    r.longest_productive_silences = silences;
    r.would_kill
        .sort_by(|a, b| a.file.cmp(&b.file).then(a.at_ms.cmp(&b.at_ms)));
    r.outcomes = Ending::ALL.iter().copied().zip(outcomes).collect();
    r.sessions.sort_by(|a, b| a.file.cmp(&b.file));
    r.histogram = histogram;
    r
}
