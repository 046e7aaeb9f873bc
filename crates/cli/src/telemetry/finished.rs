//! What a run tells the collector once it is over, from the typed end of the invocation (each
//! run's record, who stopped it, what recovery did: `crate::run_report`): how it ended
//! (`agent_watchdog.session.count` and `.duration`, the `agent_watchdog.session_end` event),
//! what recovery decided, its failed subagents, and our CPU time. Everything a run decides
//! while it runs (kills, warnings, spells, signals, the gauges) is recorded then, by `live`,
//! and not again here.

use std::time::{Duration, SystemTime};

use opentelemetry::metrics::Meter;
use opentelemetry::KeyValue;
use opentelemetry_sdk::logs::SdkLogger;

use super::instruments::{counter, emit, f64_counter, histogram, SOURCE};
use crate::millis::ms;
use crate::run_report::{RecoveryResult, RunReport};

/// Record one finished run `run`, reported with the exit code `exit_code` (the invocation's
/// for the first run: recovery may have changed it) and what `recovery` did after it (the first
/// run only); `ended` is when it ended.
pub(crate) fn record_run(
    meter: Option<&Meter>,
    logger: Option<&SdkLogger>,
    run: &RunReport,
    exit_code: i32,
    recovery: Option<&RecoveryResult>,
    ended: SystemTime,
) {
    let session = run.session_id().unwrap_or("").to_owned();
    let sid = KeyValue::new("session.id", session.clone());
    let src = KeyValue::new(SOURCE, "run");
    let outcome = run.record.outcome.as_str();
    let duration_ms = ms(run.facts.duration);
    let kill_kind = run.stopped_by().kill_kind();
    let failures = &run.record.tally.subagents().failures;
    let recovery = recovery.and_then(RecoveryResult::names);

    if let Some(m) = meter {
        let mut attrs = vec![sid.clone(), src.clone(), KeyValue::new("outcome", outcome)];
        if let Some(k) = kill_kind {
            attrs.push(KeyValue::new("kill.kind", k));
        }
        counter(m, "agent_watchdog.session.count").add(1, &attrs);
        histogram(m, "agent_watchdog.session.duration").record(duration_ms as f64 / 1000.0, &attrs);
        if let Some((trigger, result)) = recovery {
            counter(m, "agent_watchdog.recovery.count").add(
                1,
                &[
                    sid.clone(),
                    src.clone(),
                    KeyValue::new("trigger", trigger),
                    KeyValue::new("result", result),
                ],
            );
        }
        let failed = counter(m, "agent_watchdog.subagent.failure.count");
        for f in failures {
            let mut a = vec![
                sid.clone(),
                src.clone(),
                KeyValue::new("recovered", f.recovered),
            ];
            if let Some(t) = &f.agent_type {
                a.push(KeyValue::new("agent.type", t.clone()));
            }
            failed.add(1, &a);
        }
        // Our CPU time to the microsecond, where the system tells our usage.
        if let Some(us) = crate::cpu::usage().and_then(|_| crate::cpu::own_us()) {
            f64_counter(m, "agent_watchdog.cpu.time").add(us as f64 / 1e6, &[sid, src]);
        }
    }

    // Events, each stamped with when it happened.
    let Some(logger) = logger else { return };
    let event = |name: &'static str, attrs: Vec<KeyValue>| {
        emit(logger, name, Some(ended), &session, "run", attrs);
    };
    if let Some((trigger, result)) = recovery {
        event(
            "agent_watchdog.recovery",
            vec![
                KeyValue::new("trigger", trigger),
                KeyValue::new("result", result),
            ],
        );
    }
    for f in failures {
        let mut a = vec![KeyValue::new("recovered", f.recovered)];
        if let Some(t) = &f.agent_type {
            a.push(KeyValue::new("agent.type", t.clone()));
        }
        a.push(KeyValue::new("agent.id", f.agent_id.clone()));
        event("agent_watchdog.subagent_failure", a);
    }
    let end = vec![
        KeyValue::new("outcome", outcome),
        KeyValue::new("duration_ms", duration_ms as i64),
        KeyValue::new("exit_code", i64::from(exit_code)),
    ];
    event("agent_watchdog.session_end", end);
}

/// When a run that took `duration_ms` and ended at `ended` began.
pub(super) fn started(ended: SystemTime, duration_ms: u64) -> SystemTime {
    ended
        .checked_sub(Duration::from_millis(duration_ms))
        .unwrap_or(ended)
}
