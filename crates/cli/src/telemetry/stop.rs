//! A run we stopped, recorded when its kill ladder ended (the child gone, seconds after the
//! decision at most: the graces), so that the points carry how far the ladder went: a kill
//! (`agent_watchdog.kill.count`, `.kill.lateness`, the quiet spell it ended, the age of the
//! MCP call it found outstanding, the `agent_watchdog.kill` event) or an output error
//! (`agent_watchdog.output_error.count` and event). Read from the run's own summary (the facts
//! `--summary` writes), before recovery and before the invocation's summary.

use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use serde_json::Value;
use watchdog_core::facts::SpellKind;

use super::instruments::Instruments;
use super::instruments::{emit, tool_attrs};

/// The spell a kill ended: its kind, and the tool it waited on if any (as the session's
/// activity showed them at the kill).
pub(super) type KilledSpell = (SpellKind, Option<String>);

fn s(v: &Value) -> Option<&str> {
    v.as_str()
}

fn secs_of_ms(v: &Value) -> Option<f64> {
    v.as_u64().map(|ms| ms as f64 / 1000.0)
}

/// Record the stop of the run whose summary is `summary` (nothing when it was not stopped),
/// under `session`; `spell`: the spell a kill ended; `now`: the ladder's end.
pub(super) fn record(
    inst: Option<&Instruments>,
    logger: Option<&opentelemetry_sdk::logs::SdkLogger>,
    summary: &Value,
    session: &str,
    spell: Option<&KilledSpell>,
    now: SystemTime,
) {
    let kill = &summary["kill"];
    let Some(kind) = s(&kill["kind"]) else {
        return;
    };
    let sid = KeyValue::new("session.id", session.to_owned());
    let src = KeyValue::new(super::table::SOURCE, "run");
    let mcp_tool = s(&kill["mcp_call"]["tool"]);
    let mcp_attrs = mcp_tool.map(tool_attrs).unwrap_or_default();
    let mut a = vec![
        sid.clone(),
        src.clone(),
        KeyValue::new("kill.kind", kind.to_owned()),
    ];
    if let Some(stage) = s(&kill["ladder"]) {
        a.push(KeyValue::new("kill.stage", stage.to_owned()));
    }
    a.extend(mcp_attrs.iter().cloned());
    let started = super::finished::started(now, summary["duration_ms"].as_u64().unwrap_or(0));
    if kind == "output" {
        if let Some(i) = inst {
            i.output_errors.add(1, &a);
        }
        if let Some(logger) = logger {
            let gone = kill["reader_gone"].as_bool().unwrap_or(false);
            let attrs = vec![
                KeyValue::new("kill.kind", "output"),
                KeyValue::new("reader_gone", gone),
            ];
            emit(
                logger,
                "agent_watchdog.output_error",
                Some(now),
                session,
                "run",
                attrs,
            );
        }
        return;
    }
    if let Some(i) = inst {
        i.kills.add(1, &a);
        if let Some(us) = kill["late_us"].as_u64() {
            i.lateness.record(us as f64 / 1e6, &a);
        }
        // The spell the kill ended, on both clocks, with the tool it waited on.
        let mut base = vec![sid.clone(), src.clone(), KeyValue::new("ended_by", "kill")];
        match spell {
            Some((kind, tool)) => {
                base.push(KeyValue::new("spell.kind", kind.as_str()));
                if let Some(t) = tool.as_deref().or(mcp_tool) {
                    base.extend(tool_attrs(t));
                }
            }
            None => base.extend(mcp_attrs.iter().cloned()),
        }
        for (clock, field) in [
            ("idle", "since_keepalive_ms"),
            ("no_progress", "since_progress_ms"),
        ] {
            if let Some(secs) = secs_of_ms(&kill[field]) {
                let mut a = base.clone();
                a.push(KeyValue::new("clock", clock));
                i.spells.record(secs, &a);
            }
        }
        if let Some(age) = secs_of_ms(&kill["mcp_call"]["outstanding_ms"]) {
            let mut a = vec![sid, src];
            a.extend(mcp_attrs.iter().cloned());
            i.mcp_age.record(age, &a);
        }
    }
    let Some(logger) = logger else { return };
    let mut e = vec![KeyValue::new("kill.kind", kind.to_owned())];
    if let Some(stage) = s(&kill["ladder"]) {
        e.push(KeyValue::new("kill.stage", stage.to_owned()));
    }
    for f in [
        "elapsed_ms",
        "since_progress_ms",
        "since_keepalive_ms",
        "since_tool_ms",
    ] {
        if let Some(v) = kill[f].as_u64() {
            e.push(KeyValue::new(f, v as i64));
        }
    }
    if let Some(sig) = s(&kill["last_signal"]) {
        e.push(KeyValue::new("last_signal", sig.to_owned()));
    }
    if let Some(age) = kill["mcp_call"]["outstanding_ms"].as_u64() {
        e.push(KeyValue::new("mcp.outstanding_ms", age as i64));
    }
    if let Some(us) = kill["late_us"].as_u64() {
        e.push(KeyValue::new("late_us", us as i64));
    }
    e.extend(mcp_attrs);
    let at = started + Duration::from_millis(kill["at_ms"].as_u64().unwrap_or(0));
    emit(logger, "agent_watchdog.kill", Some(at), session, "run", e);
}
