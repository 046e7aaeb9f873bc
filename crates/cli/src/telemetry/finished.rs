//! What a run tells the collector once it is over, from its summary (the same JSON `--summary`
//! writes: the record of the run): how it ended (`agent_watchdog.session.count` and
//! `.duration`, the `agent_watchdog.session_end` event), what recovery decided, its failed
//! subagents, and our CPU time. Everything a run decides while it runs (kills, warnings,
//! spells, signals, the gauges) is recorded then, by `live`, and not again here.

use std::time::{Duration, SystemTime};

use opentelemetry::metrics::Meter;
use opentelemetry::KeyValue;
use opentelemetry_sdk::logs::SdkLogger;
use serde_json::Value;

use super::instruments::{counter, emit, f64_counter, histogram, SOURCE};

fn s(v: &Value) -> Option<&str> {
    v.as_str()
}

/// Record one finished run from its summary `summary`; `ended` is when it ended.
pub(crate) fn record_run(
    meter: Option<&Meter>,
    logger: Option<&SdkLogger>,
    summary: &Value,
    ended: SystemTime,
) {
    let session = s(&summary["session_id"]).unwrap_or("").to_owned();
    let sid = KeyValue::new("session.id", session.clone());
    let src = KeyValue::new(SOURCE, "run");
    let outcome = s(&summary["outcome"]).unwrap_or("unknown").to_owned();
    let duration_ms = summary["duration_ms"].as_u64().unwrap_or(0);
    let kill_kind = s(&summary["kill"]["kind"]);
    let failures = || {
        summary["subagents"]["failures"]
            .as_array()
            .into_iter()
            .flatten()
    };
    let recovery = recovery_decision(&summary["recovery"]);

    if let Some(m) = meter {
        let mut attrs = vec![
            sid.clone(),
            src.clone(),
            KeyValue::new("outcome", outcome.clone()),
        ];
        if let Some(k) = kill_kind {
            attrs.push(KeyValue::new("kill.kind", k.to_owned()));
        }
        counter(m, "agent_watchdog.session.count").add(1, &attrs);
        histogram(m, "agent_watchdog.session.duration").record(duration_ms as f64 / 1000.0, &attrs);
        if let Some((trigger, result)) = &recovery {
            counter(m, "agent_watchdog.recovery.count").add(
                1,
                &[
                    sid.clone(),
                    src.clone(),
                    KeyValue::new("trigger", trigger.clone()),
                    KeyValue::new("result", result.clone()),
                ],
            );
        }
        let failed = counter(m, "agent_watchdog.subagent.failure.count");
        for f in failures() {
            let mut a = vec![
                sid.clone(),
                src.clone(),
                KeyValue::new("recovered", f["recovered"].as_bool().unwrap_or(false)),
            ];
            if let Some(t) = s(&f["agent_type"]) {
                a.push(KeyValue::new("agent.type", t.to_owned()));
            }
            failed.add(1, &a);
        }
        if let Some(us) = summary["cpu"]["watchdog_us"].as_u64() {
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
    for f in failures() {
        let mut a = vec![KeyValue::new(
            "recovered",
            f["recovered"].as_bool().unwrap_or(false),
        )];
        if let Some(t) = s(&f["agent_type"]) {
            a.push(KeyValue::new("agent.type", t.to_owned()));
        }
        if let Some(id) = s(&f["agent_id"]) {
            a.push(KeyValue::new("agent.id", id.to_owned()));
        }
        event("agent_watchdog.subagent_failure", a);
    }
    let mut end = vec![
        KeyValue::new("outcome", outcome),
        KeyValue::new("duration_ms", duration_ms as i64),
    ];
    if let Some(code) = summary["exit_code"].as_i64() {
        end.push(KeyValue::new("exit_code", code));
    }
    event("agent_watchdog.session_end", end);
}

/// When a run that took `duration_ms` and ended at `ended` began.
pub(super) fn started(ended: SystemTime, duration_ms: u64) -> SystemTime {
    ended
        .checked_sub(Duration::from_millis(duration_ms))
        .unwrap_or(ended)
}

/// What recovery decided, as (`trigger`, `result`), when there was something to decide.
fn recovery_decision(r: &Value) -> Option<(String, String)> {
    let trigger = s(&r["trigger"]);
    let result = if r["continued_outcome"].is_string() {
        "continued"
    } else if !r["notice"].is_null() {
        "notice"
    } else if r["error"].is_string() {
        "error"
    } else if trigger.is_some() {
        "not_continued"
    } else {
        return None;
    };
    Some((trigger.unwrap_or("unknown").to_owned(), result.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recovery_decisions_are_named_only_when_recovery_had_something_to_decide() {
        assert_eq!(recovery_decision(&Value::Null), None);
        assert_eq!(
            recovery_decision(&json!({"trigger": null, "skipped": "no trigger"})),
            None
        );
        let d = |v| recovery_decision(&v).map(|(t, r)| format!("{t}/{r}"));
        assert_eq!(
            d(json!({"trigger": "output_limit", "continued_outcome": "success"})).as_deref(),
            Some("output_limit/continued")
        );
        assert_eq!(
            d(json!({"trigger": "rate_limit", "notice": {"x": 1}})).as_deref(),
            Some("rate_limit/notice")
        );
        assert_eq!(
            d(json!({"trigger": null, "error": "no ledger"})).as_deref(),
            Some("unknown/error")
        );
    }
}
