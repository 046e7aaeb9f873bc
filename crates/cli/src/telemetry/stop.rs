//! A run we stopped, recorded when its kill ladder ended (the child gone, seconds after the
//! decision at most: the graces), so that the points carry how far the ladder went: a kill
//! (`agent_watchdog.kill.count`, `.kill.lateness`, the quiet spell it ended, the age of the
//! MCP call it found outstanding, the `agent_watchdog.kill` event) or an output error
//! (`agent_watchdog.output_error.count` and event). Read from the run's own summary (the facts
//! `--summary` writes), before recovery and before the invocation's summary.

use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use serde_json::Value;
use watchdog_core::facts::spells::SpellKind;
use watchdog_core::StallClock;

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

/// The kill's receipt in brief: the tree it stopped (`kill.tree.processes`,
/// `kill.tree.rss_bytes`), the process it named (`kill.named.*`), what the rule read
/// (`kill.evidence.*`: the tool's processes busy, how long they held the kill, whether the
/// busy cap ended the hold, the tree could not be read), and the tool outstanding.
fn receipt_attrs(kill: &Value) -> Vec<KeyValue> {
    let mut a = Vec::new();
    let int = |v: &Value| v.as_u64().map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    if let Some(procs) = kill["tree"]["processes"].as_array() {
        a.push(KeyValue::new("kill.tree.processes", procs.len() as i64));
    }
    if let Some(n) = int(&kill["tree"]["total_rss_bytes"]) {
        a.push(KeyValue::new("kill.tree.rss_bytes", n));
    }
    let ev = &kill["evidence"];
    let named = &ev["named"];
    if let Some(pid) = int(&named["pid"]) {
        a.push(KeyValue::new("kill.named.pid", pid));
    }
    if let Some(cmd) = s(&named["command"]) {
        a.push(KeyValue::new("kill.named.command", cmd.to_owned()));
    }
    if let Some(state) = s(&named["state"]) {
        a.push(KeyValue::new("kill.named.state", state.to_owned()));
    }
    for (key, field) in [
        ("kill.named.cpu_ms", "cpu_ms"),
        ("kill.named.age_ms", "age_ms"),
        ("kill.named.rss_bytes", "rss_bytes"),
    ] {
        if let Some(n) = int(&named[field]) {
            a.push(KeyValue::new(key, n));
        }
    }
    if let Some(tool) = s(&ev["tool"]["name"]) {
        a.push(KeyValue::new("kill.tool", tool.to_owned()));
    }
    if let Some(b) = ev["busy"].as_bool() {
        a.push(KeyValue::new("kill.evidence.busy", b));
    }
    if let Some(n) = int(&ev["held_ms"]) {
        a.push(KeyValue::new("kill.evidence.held_ms", n));
    }
    if let Some(b) = ev["capped"].as_bool() {
        a.push(KeyValue::new("kill.evidence.capped", b));
    }
    if let Some(why) = s(&ev["unavailable"]) {
        a.push(KeyValue::new("kill.evidence.unavailable", why.to_owned()));
    }
    a
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
            (StallClock::Idle, "since_keepalive_ms"),
            (StallClock::NoProgress, "since_progress_ms"),
        ] {
            if let Some(secs) = secs_of_ms(&kill[field]) {
                let mut a = base.clone();
                a.push(KeyValue::new("clock", clock.as_str()));
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
    e.extend(receipt_attrs(kill));
    let at = started + Duration::from_millis(kill["at_ms"].as_u64().unwrap_or(0));
    emit(logger, "agent_watchdog.kill", Some(at), session, "run", e);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The kill event carries the receipt in brief: the tree, the named process, the rule's
    /// reading, the tool.
    #[test]
    fn the_kill_event_carries_the_receipt_in_brief() {
        let kill = json!({
            "kind": "no_progress",
            "evidence": {
                "tool": {"name": "Bash", "outstanding_ms": 1_800_000},
                "named": {"pid": 4121, "command": "git push", "state": "asleep",
                          "cpu_ms": 0, "age_ms": 1_740_000, "rss_bytes": 12_582_912},
                "busy": false, "held_ms": 0, "capped": false, "unavailable": null
            },
            "tree": {"processes": [{}, {}, {}], "total_rss_bytes": 314_572_800}
        });
        let attrs: Vec<(String, String)> = receipt_attrs(&kill)
            .into_iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect();
        let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("kill.tree.processes"), Some("3"));
        assert_eq!(get("kill.tree.rss_bytes"), Some("314572800"));
        assert_eq!(get("kill.named.pid"), Some("4121"));
        assert_eq!(get("kill.named.command"), Some("git push"));
        assert_eq!(get("kill.named.state"), Some("asleep"));
        assert_eq!(get("kill.named.age_ms"), Some("1740000"));
        assert_eq!(get("kill.tool"), Some("Bash"));
        assert_eq!(get("kill.evidence.busy"), Some("false"));
        assert_eq!(get("kill.evidence.held_ms"), Some("0"));
        assert_eq!(get("kill.evidence.unavailable"), None);
        // A kill without evidence adds nothing.
        assert!(receipt_attrs(&json!({"kind": "idle"})).is_empty());
    }
}
