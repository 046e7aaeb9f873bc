//! The report's figures: every session's spells, endings and simulated kills gathered into
//! an [`AuditReport`].

use std::collections::HashMap;

use watchdog_core::Limits;

use crate::report::{
    AuditReport, Bin, Recommendation, SessionSummary, Settings, Silence, WouldKill,
};
use crate::scan::Skipped;
use crate::sessions::{counted, end_ms, origin_wall_ms, Session};
use crate::simulate::SimKill;
use crate::spells::SpellKind;
use crate::stats::Distribution;
use crate::svg;
use crate::transcript::{Ending, ReadCounts};

pub(crate) fn summarise(
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
        read: ReadCounts::default(),
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
        r.read += l.read;
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
