//! The kill event: a run we stopped, recorded when its kill ladder ended (the child gone,
//! seconds after the decision at most: the graces), so that the points carry how far the ladder went: a kill
//! (`agent_watchdog.kill.count`, `.kill.lateness`, the quiet spell it ended, the age of the
//! MCP call it found outstanding, the `agent_watchdog.kill` event) or an output error
//! (`agent_watchdog.output_error.count` and event). Read from the typed end of the run (who
//! stopped it: [`StoppedBy`]), before recovery and before the invocation's summary.

use std::time::{Duration, SystemTime};

use opentelemetry::KeyValue;
use watchdog_core::evidence::{Receipt, ReceiptCause, TreeEvidence};
use watchdog_core::facts::SpellKind;
use watchdog_core::{Kill, StallClock};

use super::instruments::Instruments;
use super::instruments::{emit, tool_attrs};
use crate::exit_code::StoppedBy;
use crate::millis::{ms, offset_ms};
use crate::run_report::RunReport;

/// The spell a kill ended: its kind, and the tool it waited on if any (as the session's
/// activity showed them at the kill).
pub(super) type KilledSpell = (SpellKind, Option<String>);

fn secs(d: Duration) -> f64 {
    ms(d) as f64 / 1000.0
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The kill's receipt in brief: the tree it stopped (`kill.tree.processes`,
/// `kill.tree.rss_bytes`), the process it named (`kill.named.*`), what the rule read
/// (`kill.evidence.*`: the tool's processes busy, how long they held the kill, whether the
/// busy cap ended the hold, the tree could not be read), and the tool outstanding.
fn receipt_attrs(tree: Option<&Receipt>, evidence: Option<&TreeEvidence>) -> Vec<KeyValue> {
    let mut a = Vec::new();
    if let Some(r) = tree {
        a.push(KeyValue::new(
            "kill.tree.processes",
            r.tree.procs.len() as i64,
        ));
        a.push(KeyValue::new(
            "kill.tree.rss_bytes",
            int(r.tree.total_rss()),
        ));
    }
    let Some(ev) = evidence else { return a };
    if let Some(named) = &ev.named {
        a.push(KeyValue::new("kill.named.pid", i64::from(named.pid)));
        a.push(KeyValue::new("kill.named.command", named.cmd.clone()));
        a.push(KeyValue::new("kill.named.state", named.state.as_str()));
        a.push(KeyValue::new("kill.named.cpu_ms", int(named.cpu_ms)));
        a.push(KeyValue::new("kill.named.age_ms", int(named.age_ms)));
        a.push(KeyValue::new("kill.named.rss_bytes", int(named.rss)));
    }
    if let Some(tool) = &ev.tool {
        a.push(KeyValue::new("kill.tool", tool.name.clone()));
    }
    a.push(KeyValue::new("kill.evidence.busy", ev.busy));
    a.push(KeyValue::new("kill.evidence.held_ms", int(ms(ev.held))));
    a.push(KeyValue::new("kill.evidence.capped", ev.capped));
    if let Some(why) = &ev.unavailable {
        a.push(KeyValue::new("kill.evidence.unavailable", why.clone()));
    }
    a
}

/// What the kill found outstanding beyond the session's own turn, in brief: how many
/// background tasks (`kill.tasks`) and the one silent longest (`kill.task.id`,
/// `kill.task.description`, `kill.task.silent_ms`), the declared wakeup due first
/// (`kill.wakeup.tool`), the host's oldest unanswered request (`kill.request.subtype`,
/// `kill.request.id`).
fn outstanding_attrs(k: &Kill) -> Vec<KeyValue> {
    let mut a = Vec::new();
    let Some(o) = k.outstanding.as_deref() else {
        return a;
    };
    if let Some(t) = o.tasks.first() {
        a.push(KeyValue::new("kill.tasks", o.tasks.len() as i64));
        a.push(KeyValue::new("kill.task.id", t.task_id.clone()));
        if let Some(d) = &t.description {
            a.push(KeyValue::new("kill.task.description", d.clone()));
        }
        a.push(KeyValue::new("kill.task.silent_ms", int(ms(t.silent))));
    }
    if let Some(w) = o.wakeups.first() {
        a.push(KeyValue::new("kill.wakeup.tool", w.tool.as_str()));
    }
    if let Some(r) = o.requests.first() {
        a.push(KeyValue::new("kill.request.subtype", r.subtype.clone()));
        a.push(KeyValue::new("kill.request.id", r.request_id.clone()));
    }
    a
}

/// Record the stop of `run` (nothing when nobody stopped it), under `session`; `spell`: the
/// spell a kill ended; `now`: the ladder's end.
pub(super) fn record(
    inst: Option<&Instruments>,
    logger: Option<&opentelemetry_sdk::logs::SdkLogger>,
    run: &RunReport,
    session: &str,
    spell: Option<&KilledSpell>,
    now: SystemTime,
) {
    let stopped = run.stopped_by();
    let Some(kind) = stopped.kill_kind() else {
        return;
    };
    let kill = stopped.kill();
    let record = &run.record;
    let sid = KeyValue::new("session.id", session.to_owned());
    let src = KeyValue::new(super::table::SOURCE, "run");
    let mcp_tool = kill
        .and_then(|k| k.mcp_call.as_ref())
        .map(|c| c.tool.as_str());
    let mcp_attrs = mcp_tool.map(tool_attrs).unwrap_or_default();
    let stage = record.stage.map(|s| s.as_str());
    let mut a = vec![sid.clone(), src.clone(), KeyValue::new("kill.kind", kind)];
    if let Some(stage) = stage {
        a.push(KeyValue::new("kill.stage", stage));
    }
    a.extend(mcp_attrs.iter().cloned());
    let started = super::finished::started(now, ms(run.facts.duration));
    if let StoppedBy::Output { closed } = stopped {
        if let Some(i) = inst {
            i.output_errors.add(1, &a);
        }
        if let Some(logger) = logger {
            let attrs = vec![
                KeyValue::new("kill.kind", kind),
                KeyValue::new("reader_gone", closed),
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
    // The watchdog's kill, or our own `output_blocked` stop (the reader took no byte).
    let late_us = run.facts.kill_late.map(|d| d.as_micros() as u64);
    if let Some(i) = inst {
        i.kills.add(1, &a);
        if let Some(us) = late_us {
            i.lateness.record(us as f64 / 1e6, &a);
        }
        if let Some(k) = kill {
            spells(i, k, spell, &sid, &src, mcp_tool, &mcp_attrs);
        }
    }
    let Some(logger) = logger else { return };
    let mut e = vec![KeyValue::new("kill.kind", kind)];
    if let Some(stage) = stage {
        e.push(KeyValue::new("kill.stage", stage));
    }
    if let Some(k) = kill {
        for (f, d) in [
            ("elapsed_ms", k.elapsed),
            ("since_progress_ms", k.since_progress),
            ("since_keepalive_ms", k.since_keepalive),
            ("since_tool_ms", k.since_tool),
        ] {
            e.push(KeyValue::new(f, int(ms(d))));
        }
        if let Some(sig) = k.last_signal {
            e.push(KeyValue::new("last_signal", sig.as_str()));
        }
        if let Some(c) = &k.mcp_call {
            e.push(KeyValue::new("mcp.outstanding_ms", int(ms(c.outstanding))));
        }
        e.extend(outstanding_attrs(k));
    }
    if let Some(us) = late_us {
        e.push(KeyValue::new("late_us", int(us)));
    }
    e.extend(mcp_attrs);
    // The tree the stop ended: a kill's own receipt, or for our stop whatever was stopped.
    let tree = match kill {
        Some(_) => record
            .receipt
            .as_ref()
            .filter(|r| r.cause == ReceiptCause::Kill),
        None => record.receipt.as_ref(),
    };
    e.extend(receipt_attrs(tree, kill.and_then(|k| k.tree.as_deref())));
    let at_ms = kill.map_or(0, |k| offset_ms(run.facts.start, k.at));
    let at = started + Duration::from_millis(at_ms);
    emit(logger, "agent_watchdog.kill", Some(at), session, "run", e);
}

/// The spell the kill `k` ended, on both clocks, with the tool it waited on; and the age of
/// the MCP call it found outstanding.
fn spells(
    i: &Instruments,
    k: &Kill,
    spell: Option<&KilledSpell>,
    sid: &KeyValue,
    src: &KeyValue,
    mcp_tool: Option<&str>,
    mcp_attrs: &[KeyValue],
) {
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
    for (clock, d) in [
        (StallClock::Idle, k.since_keepalive),
        (StallClock::NoProgress, k.since_progress),
    ] {
        let mut a = base.clone();
        a.push(KeyValue::new("clock", clock.as_str()));
        i.spells.record(secs(d), &a);
    }
    if let Some(c) = &k.mcp_call {
        let mut a = vec![sid.clone(), src.clone()];
        a.extend(mcp_attrs.iter().cloned());
        i.mcp_age.record(secs(c.outstanding), &a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use watchdog_core::evidence::{ProcFacts, ToolCall};

    fn proc(pid: u32, cmd: &str, rss: u64) -> serde_json::Value {
        json!({"pid": pid, "start": 1, "ppid": 1, "cmd": cmd, "state": "asleep",
               "cpu_ms": 0, "rss": rss, "age_ms": 1_740_000})
    }

    /// The kill event carries the receipt in brief: the tree, the named process, the rule's
    /// reading, the tool.
    #[test]
    fn the_kill_event_carries_the_receipt_in_brief() {
        let receipt: Receipt = serde_json::from_value(json!({
            "cause": "kill",
            "at_ms": 1_800_000,
            "tree": {"root": 4000, "procs": [
                proc(4000, "claude", 200_000_000),
                proc(4100, "bash", 102_000_000),
                proc(4121, "git push", 12_572_800),
            ]},
        }))
        .unwrap();
        let mut ev = TreeEvidence::default();
        ev.tool = Some(ToolCall {
            name: "Bash".into(),
            outstanding: Duration::from_secs(1800),
        });
        ev.named =
            Some(serde_json::from_value::<ProcFacts>(proc(4121, "git push", 12_582_912)).unwrap());
        let attrs: Vec<(String, String)> = receipt_attrs(Some(&receipt), Some(&ev))
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
        assert_eq!(get("kill.named.rss_bytes"), Some("12582912"));
        assert_eq!(get("kill.tool"), Some("Bash"));
        assert_eq!(get("kill.evidence.busy"), Some("false"));
        assert_eq!(get("kill.evidence.held_ms"), Some("0"));
        assert_eq!(get("kill.evidence.unavailable"), None);
        // A kill without evidence adds nothing.
        assert!(receipt_attrs(None, None).is_empty());
    }
}
