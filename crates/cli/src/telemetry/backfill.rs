//! What a past session tells the collector when `agent-watchdog audit` runs with telemetry on
//! (docs/telemetry.md, "Back-fill"): the same metric and event names as a live run, with
//! `agent_watchdog.source = "audit"` instead of `"run"`, so a dashboard can be back-filled
//! and a query can still tell the two apart.
//!
//! Per session (a subagent transcript belongs to its parent's session and yields nothing of
//! its own):
//!
//! - `agent_watchdog.session.count` and `agent_watchdog.session.duration`, by the outcome the
//!   watchdog would have given (the simulation's: `killed` when the settings kill it);
//! - `agent_watchdog.kill.count` and one `agent_watchdog.kill` event per simulated kill (one
//!   per run of the recording at most), by kind and whether the session was doing productive
//!   work then;
//! - `agent_watchdog.quiet_spell.duration` for every quiet spell (idle: the longest gap with
//!   no line; no_progress: the spell's length), by spell kind and tool;
//! - one `agent_watchdog.session_end` event.
//!
//! Events are stamped with when it happened (the recording's own clock; a capture without a
//! `start` record has none, and its events carry only the observed time, now). Metric points
//! are stamped by the SDK at export, as every metric point is.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use opentelemetry::metrics::Meter;
use opentelemetry::KeyValue;
use opentelemetry_sdk::logs::SdkLogger;
use watchdog_audit::Ending;
use watchdog_audit::{AuditReport, SessionSummary, WouldKill};
use watchdog_core::{OutcomeKind, StallClock};

use super::instruments::{self, SOURCE};

/// What the back-fill handed to the SDK.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Backfilled {
    /// Sessions recorded.
    pub(crate) sessions: u64,
    /// Log events emitted.
    pub(crate) events: u64,
}

/// The outcome a live run would have reported (the core's outcome names).
fn outcome(ending: Ending, killed: bool) -> &'static str {
    if killed {
        OutcomeKind::Killed.as_str()
    } else {
        ending.outcome().as_str()
    }
}

/// `origin + ms`, when the origin is known.
fn wall(origin: Option<i64>, ms: u64) -> Option<SystemTime> {
    let origin = u64::try_from(origin?).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(origin.checked_add(ms)?))
}

/// Record every session of `report`.
pub(crate) fn record_audit(
    meter: Option<&Meter>,
    logger: Option<&SdkLogger>,
    report: &AuditReport,
) -> Backfilled {
    let mut kills: HashMap<&std::path::Path, Vec<&WouldKill>> = HashMap::new();
    for k in &report.would_kill {
        kills.entry(k.file.as_path()).or_default().push(k);
    }
    let mut done = Backfilled::default();
    for s in report.sessions.iter().filter(|s| !s.subagent) {
        let ks = kills.get(s.file.as_path()).map_or(&[][..], Vec::as_slice);
        session(meter, logger, s, ks, &mut done);
    }
    done
}

fn session(
    meter: Option<&Meter>,
    logger: Option<&SdkLogger>,
    s: &SessionSummary,
    kills: &[&WouldKill],
    done: &mut Backfilled,
) {
    done.sessions += 1;
    let sid = KeyValue::new("session.id", s.session_id.clone());
    let src = KeyValue::new(SOURCE, "audit");
    let outcome = outcome(s.ending, !kills.is_empty());
    let first_kind = kills.first().map(|k| k.kind);
    if let Some(m) = meter {
        let mut attrs = vec![
            sid.clone(),
            src.clone(),
            KeyValue::new("outcome", outcome),
            KeyValue::new("audit.ending", s.ending.as_str()),
        ];
        if let Some(k) = first_kind {
            attrs.push(KeyValue::new("kill.kind", k));
        }
        instruments::counter(m, "agent_watchdog.session.count").add(1, &attrs);
        instruments::histogram(m, "agent_watchdog.session.duration")
            .record(s.end_ms as f64 / 1000.0, &attrs);
        let killed = instruments::counter(m, "agent_watchdog.kill.count");
        for k in kills {
            killed.add(
                1,
                &[
                    sid.clone(),
                    src.clone(),
                    KeyValue::new("kill.kind", k.kind),
                    KeyValue::new("productive", k.productive),
                ],
            );
        }
        let spells = instruments::histogram(m, "agent_watchdog.quiet_spell.duration");
        for sp in &s.spell_list {
            let end = sp.start_ms.saturating_add(sp.ms);
            let ended_by = if kills
                .iter()
                .any(|k| sp.start_ms <= k.at_ms && k.at_ms < end)
            {
                "kill"
            } else if sp.productive {
                "progress"
            } else {
                "end"
            };
            let mut a = vec![
                sid.clone(),
                src.clone(),
                KeyValue::new("ended_by", ended_by),
                KeyValue::new("spell.kind", sp.kind.as_str()),
            ];
            if let Some(t) = sp.tool.as_deref() {
                a.extend(instruments::tool_attrs(t));
            }
            for (clock, ms) in [
                (StallClock::Idle, sp.quiet_ms),
                (StallClock::NoProgress, sp.ms),
            ] {
                let mut a = a.clone();
                a.push(KeyValue::new("clock", clock.as_str()));
                spells.record(ms as f64 / 1000.0, &a);
            }
        }
    }
    let Some(logger) = logger else { return };
    for k in kills {
        instruments::emit(
            logger,
            "agent_watchdog.kill",
            wall(s.origin_wall_ms, k.at_ms),
            &s.session_id,
            "audit",
            vec![
                KeyValue::new("kill.kind", k.kind),
                KeyValue::new("elapsed_ms", i64::try_from(k.at_ms).unwrap_or(i64::MAX)),
                KeyValue::new("productive", k.productive),
            ],
        );
        done.events += 1;
    }
    let mut end = vec![
        KeyValue::new("outcome", outcome),
        KeyValue::new("audit.ending", s.ending.as_str()),
        KeyValue::new("duration_ms", i64::try_from(s.end_ms).unwrap_or(i64::MAX)),
    ];
    if let Some(k) = first_kind {
        end.push(KeyValue::new("kill.kind", k));
    }
    instruments::emit(
        logger,
        "agent_watchdog.session_end",
        wall(s.origin_wall_ms, s.end_ms),
        &s.session_id,
        "audit",
        end,
    );
    done.events += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_the_live_ones() {
        assert_eq!(outcome(Ending::Result, true), "killed");
        assert_eq!(outcome(Ending::Result, false), "success");
        assert_eq!(outcome(Ending::MaxTokens, false), "error_result");
        assert_eq!(outcome(Ending::NoResult, false), "no_result");
        assert_eq!(outcome(Ending::Incomplete, false), "incomplete");
        assert_eq!(outcome(Ending::Interrupted, false), "no_result");
        assert_eq!(outcome(Ending::Error, false), "error_result");
    }

    #[test]
    fn wall_times_need_an_origin_and_never_overflow() {
        assert_eq!(wall(None, 5), None);
        assert_eq!(wall(Some(-1), 5), None);
        assert_eq!(
            wall(Some(1_000), 500),
            Some(SystemTime::UNIX_EPOCH + Duration::from_millis(1_500))
        );
        assert_eq!(wall(Some(i64::MAX), u64::MAX), None);
        // A huge but representable origin: no panic, whatever the platform's limit.
        let _ = wall(Some(i64::MAX), 0);
    }
}
