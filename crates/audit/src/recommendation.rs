//! The recommended settings: the longest productive spells with a margin, raised rung by
//! rung until a simulation of every session kills none of them.

use watchdog_core::{KillKind, Limits};

use crate::report::Recommendation;
use crate::sessions::{counted, Session};
use crate::simulate::{self, SimKill};
use crate::{recommend, scan, StartLimits};

pub(crate) fn simulate_all(
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

pub(crate) fn recommend(
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
        // An idle kill with background tasks outstanding is named task_silent; their own
        // deadline follows the idle patience, so a longer idle lets them be too.
        let idle_bad = bad
            .iter()
            .any(|k| matches!(k.kind, KillKind::Idle | KillKind::TaskSilent));
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
