//! JSON and prose renderings of the core's events, kills and outcomes, shared by `replay`,
//! `run --summary` and the synthetic `result` of `claude-watchdog`.

use std::time::Instant;

use serde_json::{json, Map, Value};
use watchdog_core::{
    rate_limit::RateLimitMonitor, Event, Kill, KillKind, LineKind, Outcome, RunRecord,
};

use watchdog_core::config::HumanDuration;

pub use crate::millis::{ms, offset_ms};

/// `{"kind", "at_ms", "since_progress_ms", …}` for a kill; `at_ms` counts from `base`.
pub fn kill_json(kill: &Kill, base: Instant) -> Value {
    json!({
        "kind": kill.kind.as_str(),
        "at_ms": offset_ms(base, kill.at),
        "since_progress_ms": ms(kill.since_progress),
        "since_keepalive_ms": ms(kill.since_keepalive),
        "since_tool_ms": ms(kill.since_tool),
        "elapsed_ms": ms(kill.elapsed),
        "last_signal": kill.last_signal.map(|s| s.as_str()),
        "utilization": kill.utilization,
        "extension": kill.extension.map(|e| e.as_str()),
        "mcp_call": kill.mcp_call.as_ref().map(|c| json!({
            "tool": c.tool,
            "outstanding_ms": ms(c.outstanding),
        })),
        "output_blocked_ms": kill.output_blocked.map(ms),
        "backoff": kill.backoff.as_ref().map(|b| json!({
            "attempts": b.attempts,
            "error_status": b.status,
            "error": b.error,
            "last_delay_ms": ms(b.last_delay),
            "lasted_ms": ms(b.lasted),
        })),
        "evidence": kill.tree.as_deref().map(crate::tree_report::evidence_json),
    })
}

/// The facts of one run's record as JSON, the fields `run --summary` and `replay --json`
/// share (each adds its own): `outcome`, `outcome_detail`, `kill` (with its `ladder` stage when
/// a ladder ran, and the receipt of the tree it stopped, `tree`), `session_id`, `result`
/// (every field, `null` when no result came), `rate_limits`, `lines`, `subagents`, `exit`,
/// `tree` (what the samples of the process tree said) and `leftovers_tree` (the receipt of
/// what the child left running, when it had to be stopped). Times count from `base`.
pub fn record_json(record: &RunRecord, base: Instant) -> Map<String, Value> {
    use crate::tree_report::{facts_json, receipt_json};
    use watchdog_core::evidence::ReceiptCause;
    let mut kill = record.kill.as_ref().map(|k| kill_json(k, base));
    if let (Some(k), Some(stage)) = (kill.as_mut(), record.stage) {
        k["ladder"] = json!(stage.as_str());
    }
    let receipt = record.receipt.as_ref();
    let kill_tree = receipt.filter(|r| r.cause == ReceiptCause::Kill);
    if let (Some(k), Some(r)) = (kill.as_mut(), kill_tree) {
        k["tree"] = receipt_json(r, record.kill.as_ref());
    }
    let leftovers = receipt
        .filter(|r| r.cause == ReceiptCause::Leftovers)
        .map(|r| receipt_json(r, None));
    let subagents = record.tally.subagents();
    let v = json!({
        "outcome": record.outcome.as_str(),
        "outcome_detail": outcome_fields(&record.outcome),
        "kill": kill,
        "session_id": record.session_id,
        "result": record.result.clone().unwrap_or_default(),
        "rate_limits": rate_limits_json(&record.rate_limits),
        "lines": lines_json(record.lines.iter(), record.lines.overlong()),
        "subagents": {
            "failures": subagents.failures_json(),
            "unrecovered": subagents.unrecovered().count(),
        },
        "exit": record.exit.map(|e| json!({"code": e.code, "signal": e.signal})),
        "tree": record.tree.as_ref().map(facts_json),
        "leftovers_tree": leftovers,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The rate-limit windows as `{name: {utilization, resetsAt, status}}` (`resetsAt` in epoch
/// seconds, as Claude Code prints it), every window the run's frames named, merged by the
/// monitor; `null` when no frame came.
pub fn rate_limits_json(monitor: &RateLimitMonitor) -> Value {
    if monitor.latest().is_none() && monitor.windows().next().is_none() {
        return Value::Null;
    }
    let mut m = Map::new();
    for w in monitor.windows() {
        m.insert(
            w.name.clone(),
            json!({
                "utilization": w.utilization,
                "resetsAt": w.resets_at_ms.map(|ms| ms / 1000),
                "status": w.status.as_ref().map(|s| s.as_str()),
            }),
        );
    }
    Value::Object(m)
}

/// The outcome's details: `{"outcome": name}` plus, for an error result, its
/// [`ResultFacts`](watchdog_core::facts::ResultFacts).
pub fn outcome_fields(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::ErrorResult(result) => {
            let mut v = serde_json::to_value(result).unwrap_or_else(|_| json!({}));
            v["outcome"] = json!(outcome.as_str());
            v
        }
        Outcome::Killed { kind } => json!({"outcome": outcome.as_str(), "kind": kind.as_str()}),
        _ => json!({"outcome": outcome.as_str()}),
    }
}

/// One event as JSON, stamped with `t_ms` (milliseconds from `base` to `at`).
pub fn event_json(event: &Event, at: Instant, base: Instant) -> Value {
    let t_ms = offset_ms(base, at);
    match event {
        Event::Killed(k) => {
            let mut v = kill_json(k, base);
            v["t_ms"] = json!(t_ms);
            v["event"] = json!("killed");
            v
        }
        Event::Extended { reason, .. } => {
            json!({"t_ms": t_ms, "event": "extended", "reason": reason.as_str()})
        }
        Event::Stalling {
            clock, remaining, ..
        } => json!({
            "t_ms": t_ms,
            "event": "stalling",
            "clock": clock.as_str(),
            "remaining_ms": ms(*remaining),
        }),
        Event::Settled { .. } => json!({"t_ms": t_ms, "event": "settled"}),
        Event::Ended { outcome, .. } => {
            let mut v = outcome_fields(outcome);
            v["t_ms"] = json!(t_ms);
            v["event"] = json!("ended");
            v
        }
        Event::RateLimit { event, .. } => {
            json!({"t_ms": t_ms, "event": "rate_limit", "detail": event.to_string()})
        }
        Event::SessionMismatch { expected, got, .. } => json!({
            "t_ms": t_ms,
            "event": "session_mismatch",
            "expected": expected,
            "got": got,
        }),
        other => json!({"t_ms": t_ms, "event": format!("{other:?}")}),
    }
}

/// What happened, e.g. `no stdout line for 10m (last progress 10m ago)`, plus the
/// extension that held, if any.
pub fn kill_detail(kill: &Kill) -> String {
    let detail = match kill.kind {
        KillKind::Startup => format!("no stdout line for {}", HumanDuration(kill.elapsed)),
        KillKind::Idle => format!(
            "no stdout line for {} (last progress {} ago)",
            HumanDuration(kill.since_keepalive),
            HumanDuration(kill.since_progress)
        ),
        KillKind::NoProgress if kill.since_keepalive < kill.since_progress => format!(
            "no progress for {}, only keep-alives (last one {} ago)",
            HumanDuration(kill.since_progress),
            HumanDuration(kill.since_keepalive)
        ),
        KillKind::NoProgress => format!(
            "no progress and no stdout line for {}",
            HumanDuration(kill.since_progress)
        ),
        KillKind::Linger => format!(
            "it printed its result but was still running {} later",
            HumanDuration(kill.since_progress)
        ),
        KillKind::Ceiling => format!("it reached the ceiling of {}", HumanDuration(kill.elapsed)),
        KillKind::Memory => crate::tree_report::memory_detail(kill),
        KillKind::OutputBlocked => format!(
            "our stdout took no byte for {} while output waited (the reader stopped reading)",
            HumanDuration(kill.output_blocked.unwrap_or_default())
        ),
        other => format!("{other} after {}", HumanDuration(kill.elapsed)),
    };
    // An announced API back-off storm was under way: the API failed, not the session.
    let detail = match &kill.backoff {
        Some(b) => format!(
            "{detail}, during an announced API back-off ({} retr{}{})",
            b.attempts,
            if b.attempts == 1 { "y" } else { "ies" },
            match (b.status, &b.error) {
                (Some(s), Some(e)) => format!(", last {s} {e}"),
                (Some(s), None) => format!(", last HTTP {s}"),
                (None, Some(e)) => format!(", last {e}"),
                (None, None) => String::new(),
            }
        ),
        None => detail,
    };
    // The extension only widens the idle patience.
    let detail = match (kill.kind, kill.extension) {
        (KillKind::Idle, Some(e)) => format!("{detail}, patience extended ({})", e.as_str()),
        _ => detail,
    };
    // What hung: the MCP call in flight, and for how long.
    let detail = match &kill.mcp_call {
        Some(c) => format!(
            "{detail}; in flight: tool {} {}",
            c.tool,
            HumanDuration(c.outstanding)
        ),
        None => detail,
    };
    // What the process tree said: the process that tells most.
    detail + &crate::tree_report::kill_clause(kill)
}

/// `killed <what> (<kind>) after <elapsed>: <detail>.`
pub fn killed_clause(kill: &Kill, what: &str) -> String {
    format!(
        "killed {what} ({}) after {}: {}.",
        kill.kind,
        HumanDuration(kill.elapsed),
        kill_detail(kill)
    )
}

/// One sentence explaining a kill, for the synthetic `result`:
/// `agent-watchdog killed <what> (<kind>) after …: ….`
pub fn kill_sentence(kill: &Kill, what: &str) -> String {
    format!("agent-watchdog {}", killed_clause(kill, what))
}

/// Line counts by kind as a JSON object (kinds with zero lines left out), and `overlong` (lines
/// over the maximum length, counted there only) when there were any.
pub fn lines_json(counts: impl IntoIterator<Item = (LineKind, u64)>, overlong: u64) -> Value {
    let mut m = Map::new();
    for (kind, n) in counts {
        if n > 0 {
            m.insert(kind.as_str().into(), json!(n));
        }
    }
    if overlong > 0 {
        m.insert("overlong".into(), json!(overlong));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use watchdog_core::{McpCall, Signal};

    #[test]
    fn a_kill_names_the_mcp_call_in_flight() {
        let at = Instant::now();
        let id = watchdog_core::Registry::new(watchdog_core::Limits::default())
            .register(at, watchdog_core::SessionConfig::default());
        let mut kill = Kill::new(id, KillKind::NoProgress, at);
        kill.elapsed = Duration::from_secs(1900);
        kill.since_progress = Duration::from_secs(1860);
        kill.since_keepalive = Duration::from_secs(10);
        kill.since_tool = Duration::from_secs(1860);
        kill.last_signal = Some(Signal::KeepAlive);
        kill.mcp_call = Some(McpCall {
            tool: "mcp__db__query".into(),
            outstanding: Duration::from_secs(1860),
        });
        assert_eq!(
            kill_detail(&kill),
            "no progress for 31m, only keep-alives (last one 10s ago); in flight: tool \
             mcp__db__query 31m"
        );
        let j = kill_json(&kill, at);
        assert_eq!(j["mcp_call"]["tool"], "mcp__db__query");
        assert_eq!(j["mcp_call"]["outstanding_ms"], 1_860_000);
    }
}
