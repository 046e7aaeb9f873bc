//! JSON and prose renderings of the core's events, kills and outcomes, shared by `replay`,
//! `run --summary` and the synthetic `result` of `claude-watchdog`.

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Map, Value};
use watchdog_core::facts::{ClaudeSessionId, ResultFacts};
use watchdog_core::{
    rate_limit::RateLimitMonitor, Event, Kill, KillKind, LineKind, Outcome, RunRecord,
};

use watchdog_core::config::HumanDuration;

pub use crate::millis::{ms, offset_ms};

/// `{"kind", "at_ms", "since_progress_ms", …}` for a kill ([`KillJson`]); `at_ms` counts from
/// `base`.
pub fn kill_json(kill: &Kill, base: Instant) -> Value {
    serde_json::to_value(KillJson::new(kill, base)).unwrap_or_default()
}

/// A kill's fields, as the summary, `replay --json` and the `killed` event write them.
#[derive(Debug, Serialize)]
pub struct KillJson<'a> {
    /// Its kind.
    pub kind: &'static str,
    /// When it was decided, ms from the base.
    pub at_ms: u64,
    /// Since the last progress.
    pub since_progress_ms: u64,
    /// Since the last keep-alive.
    pub since_keepalive_ms: u64,
    /// Since the last tool activity.
    pub since_tool_ms: u64,
    /// Since the session started.
    pub elapsed_ms: u64,
    /// The last line's signal.
    pub last_signal: Option<&'static str>,
    /// The rate-limit utilization it was read at.
    pub utilization: Option<f64>,
    /// The extension that widened the idle patience.
    pub extension: Option<&'static str>,
    /// The MCP call in flight.
    pub mcp_call: Option<McpCallJson<'a>>,
    /// How long our stdout took no byte (`output_blocked`).
    pub output_blocked_ms: Option<u64>,
    /// The announced API back-off under way.
    pub backoff: Option<BackoffJson<'a>>,
    /// What the process tree said.
    pub evidence: Option<Value>,
    /// What the session had outstanding.
    pub outstanding: Option<Value>,
}

/// The MCP call a kill found in flight.
#[derive(Debug, Serialize)]
pub struct McpCallJson<'a> {
    /// The tool.
    pub tool: &'a str,
    /// How long it had been outstanding.
    pub outstanding_ms: u64,
}

/// The announced API back-off a kill found under way.
#[derive(Debug, Serialize)]
pub struct BackoffJson<'a> {
    /// Retries announced.
    pub attempts: u32,
    /// The last error's HTTP status.
    pub error_status: Option<u16>,
    /// The last error.
    pub error: Option<&'a str>,
    /// The last delay announced.
    pub last_delay_ms: u64,
    /// How long the back-off lasted.
    pub lasted_ms: u64,
}

impl<'a> KillJson<'a> {
    /// The fields of `kill`, `at_ms` counted from `base`.
    pub fn new(kill: &'a Kill, base: Instant) -> Self {
        KillJson {
            kind: kill.kind.as_str(),
            at_ms: offset_ms(base, kill.at),
            since_progress_ms: ms(kill.since_progress),
            since_keepalive_ms: ms(kill.since_keepalive),
            since_tool_ms: ms(kill.since_tool),
            elapsed_ms: ms(kill.elapsed),
            last_signal: kill.last_signal.map(|s| s.as_str()),
            utilization: kill.utilization,
            extension: kill.extension.map(|e| e.as_str()),
            mcp_call: kill.mcp_call.as_ref().map(|c| McpCallJson {
                tool: &c.tool,
                outstanding_ms: ms(c.outstanding),
            }),
            output_blocked_ms: kill.output_blocked.map(ms),
            backoff: kill.backoff.as_deref().map(|b| BackoffJson {
                attempts: b.attempts,
                error_status: b.status,
                error: b.error.as_deref(),
                last_delay_ms: ms(b.last_delay),
                lasted_ms: ms(b.lasted),
            }),
            evidence: kill.tree.as_deref().map(crate::tree_report::evidence_json),
            outstanding: kill
                .outstanding
                .as_deref()
                .map(crate::outstanding::outstanding_json),
        }
    }
}

/// The facts of one run's record, the fields `run --summary` and `replay --json` share (each
/// adds its own): `outcome`, `outcome_detail`, `kill` (with its `ladder` stage when a ladder
/// ran, and the receipt of the tree it stopped, `tree`), `session_id`, `dialect`, `result`
/// (every field, `null` when no result came), `rate_limits`, `lines`, `subagents`, `exit`,
/// `tree` (what the samples of the process tree said), `leftovers_tree` (the receipt of what
/// the child left running, when it had to be stopped), `outstanding` (background tasks never
/// reported ended, declared wakeups never fired, host requests never answered, as the session
/// ended), `turns` (the host's messages, the results, the unsolicited ones) and `tasks` (task
/// runs started and ended). Times count from the `base` of [`RecordFields::new`].
#[derive(Debug, Serialize)]
pub struct RecordFields<'a> {
    /// The outcome's name.
    pub outcome: &'static str,
    /// The outcome's details ([`outcome_fields`]).
    pub outcome_detail: Value,
    /// The kill, `null` without one (the summary names its own stop here).
    pub kill: Option<KillFields<'a>>,
    /// The session id the lines carried.
    pub session_id: Option<&'a ClaudeSessionId>,
    /// The dialect the lines were read in.
    pub dialect: &'static str,
    /// The last `result`'s fields (every one `null` when no result came).
    pub result: ResultFacts,
    /// The rate-limit windows ([`rate_limits_json`]).
    pub rate_limits: Value,
    /// Line counts by kind ([`lines_json`]).
    pub lines: Value,
    /// The subagents that failed.
    pub subagents: SubagentFields,
    /// How the child ended, if it was seen to.
    pub exit: Option<ExitFields>,
    /// What the samples of the process tree said.
    pub tree: Option<Value>,
    /// The receipt of what the child left running, when it had to be stopped.
    pub leftovers_tree: Option<Value>,
    /// What the session had outstanding as it ended.
    pub outstanding: Value,
    /// The host's messages, the results, the unsolicited ones.
    pub turns: Value,
    /// Task runs started and ended.
    pub tasks: Value,
}

/// A kill in a record's fields: the kill itself, and what the run adds to it.
#[derive(Debug, Serialize)]
pub struct KillFields<'a> {
    /// The kill's own fields.
    #[serde(flatten)]
    pub what: KillOf<'a>,
    /// The ladder's stage, when a ladder ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ladder: Option<&'static str>,
    /// The receipt of the tree it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<Value>,
    /// Microseconds from the kill's deadline to `run` seeing it (`run --summary` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_us: Option<u64>,
}

/// Whose stop a record's `kill` names.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum KillOf<'a> {
    /// The watchdog's kill.
    Watchdog(Box<KillJson<'a>>),
    /// `run`'s own stop (our output's): its fields.
    Run(Map<String, Value>),
}

/// The subagents of a run: the failures, and how many were never recovered.
#[derive(Debug, Serialize)]
pub struct SubagentFields {
    /// Each failure.
    pub failures: Value,
    /// How many failures no later success recovered.
    pub unrecovered: usize,
}

/// How the child ended: its exit code, or the signal that ended it.
#[derive(Debug, Serialize)]
pub struct ExitFields {
    /// The exit code, if it exited.
    pub code: Option<i32>,
    /// The signal number, if a signal ended it.
    pub signal: Option<i32>,
}

impl<'a> RecordFields<'a> {
    /// The fields of `record`, times counted from `base`.
    pub fn new(record: &'a RunRecord, base: Instant) -> Self {
        use crate::tree_report::{facts_json, receipt_json};
        use watchdog_core::evidence::ReceiptCause;
        let receipt = record.receipt.as_ref();
        let kill = record.kill.as_ref().map(|k| KillFields {
            what: KillOf::Watchdog(Box::new(KillJson::new(k, base))),
            ladder: record.stage.map(|s| s.as_str()),
            tree: receipt
                .filter(|r| r.cause == ReceiptCause::Kill)
                .map(|r| receipt_json(r, Some(k))),
            late_us: None,
        });
        let subagents = record.tally.subagents();
        RecordFields {
            outcome: record.outcome.as_str(),
            outcome_detail: outcome_fields(&record.outcome),
            kill,
            session_id: record.session_id.as_ref(),
            dialect: record.dialect.as_str(),
            result: record.result.clone().unwrap_or_default(),
            rate_limits: rate_limits_json(&record.rate_limits),
            lines: lines_json(record.lines.iter(), record.lines.overlong()),
            subagents: SubagentFields {
                failures: subagents.failures_json(),
                unrecovered: subagents.unrecovered().count(),
            },
            exit: record.exit.map(|e| ExitFields {
                code: e.code,
                signal: e.signal,
            }),
            tree: record.tree.as_ref().map(facts_json),
            leftovers_tree: receipt
                .filter(|r| r.cause == ReceiptCause::Leftovers)
                .map(|r| receipt_json(r, None)),
            outstanding: crate::outstanding::outstanding_json(&record.outstanding),
            turns: crate::outstanding::turns_json(&record.turns),
            tasks: crate::outstanding::tasks_json(record.tally.tasks()),
        }
    }
}

/// The facts of one run's record as a JSON object ([`RecordFields`]); times count from `base`.
pub fn record_json(record: &RunRecord, base: Instant) -> Map<String, Value> {
    object(serde_json::to_value(RecordFields::new(record, base)).unwrap_or_default())
}

/// `v`'s fields when it is an object; none otherwise.
pub fn object(v: Value) -> Map<String, Value> {
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
        Event::TaskSilent { task, .. } => {
            let mut v = crate::outstanding::task_json(task);
            v["t_ms"] = json!(t_ms);
            v["event"] = json!("task_silent");
            v
        }
        Event::UnsolicitedResult {
            results, messages, ..
        } => json!({
            "t_ms": t_ms,
            "event": "unsolicited_result",
            "results": results,
            "messages": messages,
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
        KillKind::TaskSilent => format!(
            "no stdout line for {} while it waited on {}: no end reported, no sign of life              (a lost notification, or a task that died)",
            HumanDuration(kill.since_keepalive),
            crate::outstanding::tasks_clause(outstanding(kill).map_or(&[], |o| &o.tasks))
        ),
        KillKind::WakeupMissed => match outstanding(kill).and_then(|o| o.wakeups.first()) {
            Some(w) => format!(
                "it printed its result, then its {} never fired",
                crate::outstanding::wakeup_name(w)
            ),
            None => "it printed its result, then its declared wakeup never fired".into(),
        },
        KillKind::Unanswered => match outstanding(kill).and_then(|o| o.requests.first()) {
            Some(r) => format!(
                "it did not answer the host's {} for {}",
                crate::outstanding::request_name(r),
                HumanDuration(r.waited)
            ),
            None => "it did not answer the host's control request".into(),
        },
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

/// What the kill names as outstanding, if anything.
fn outstanding(kill: &Kill) -> Option<&watchdog_core::Outstanding> {
    kill.outstanding.as_deref()
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
