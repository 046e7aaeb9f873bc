//! `run --summary`: one JSON object describing how the run ended.

use serde_json::{json, Map, Value};
use watchdog_core::{ClaudeSessionId, Kill, Outcome, RateLimitMonitor, ResultFacts};

use crate::verdict::{kill_json, outcome_fields};
use watchdog_core::facts::Tally;

/// Everything the summary reports.
#[derive(Debug)]
pub struct Summary<'a> {
    /// The command line.
    pub argv: Vec<String>,
    /// How the run ended.
    pub outcome: &'a Outcome,
    /// The kill, if any.
    pub kill: Option<&'a Kill>,
    /// How far the kill ladder went: `interrupt`, `term` or `kill`.
    pub ladder: Option<&'static str>,
    /// The child's exit code and signal.
    pub exit: Option<(Option<i32>, Option<i32>)>,
    /// Our exit code.
    pub exit_code: i32,
    /// Milliseconds from spawn to the end.
    pub duration_ms: u64,
    /// What stdout said (the policy's tally).
    pub tally: &'a Tally,
    /// The rate-limit readings (the policy's monitor: the one reading recovery decides on).
    pub rate_limits: &'a RateLimitMonitor,
    /// Stdout lines by kind ([`lines_json`](crate::verdict::lines_json)).
    pub lines: Value,
    /// Claude Code's session id (the registry's).
    pub session_id: Option<&'a ClaudeSessionId>,
    /// The facts of the last `result` (the registry's).
    pub result: Option<&'a ResultFacts>,
    /// Stderr lines seen and suppressed (repeated warnings).
    pub stderr: (u64, u64),
    /// Suppressed repeats per warning code.
    pub suppressed: Value,
    /// Signal we forwarded from the user, if any (`SIGINT`/`SIGTERM`).
    pub interrupted: Option<&'static str>,
    /// The events, as JSON.
    pub events: Vec<Value>,
    /// The spawn instant (for `at_ms`).
    pub base: std::time::Instant,
    /// What recovery did (`run` only): `{trigger, marker, continued_outcome, notice, …}`.
    /// The other fields describe the first run; `exit_code` is the final run's.
    pub recovery: Option<Value>,
    /// Our stdout could not be written (the `kill` is then of kind `output`): the error, and
    /// whether the reader went away.
    pub output_error: Option<(String, bool)>,
    /// Descendants still running when the child exited by itself, then stopped.
    pub leftovers_killed: usize,
    /// Milliseconds the child's output waited for our stdout.
    pub blocked_on_output_ms: u64,
    /// Milliseconds from spawn to the first stdout line, if one came.
    pub first_line_ms: Option<u64>,
    /// Microseconds from the kill's deadline to our seeing it, if there was a kill.
    pub kill_late_us: Option<u64>,
}

impl Summary<'_> {
    /// The JSON object.
    pub fn to_json(&self) -> Value {
        let mut kill = match &self.output_error {
            Some((error, reader_gone)) => {
                Some(json!({"kind": "output", "error": error, "reader_gone": reader_gone}))
            }
            None => self.kill.map(|k| kill_json(k, self.base)),
        };
        if let (Some(k), Some(stage)) = (kill.as_mut(), self.ladder) {
            k["ladder"] = json!(stage);
        }
        if let (Some(k), Some(late)) = (kill.as_mut(), self.kill_late_us) {
            k["late_us"] = json!(late);
        }
        let mut v = json!({
            "outcome": self.outcome.as_str(),
            "outcome_detail": outcome_fields(self.outcome),
            "kill": kill,
            "exit": self.exit.map(|(code, signal)| json!({"code": code, "signal": signal})),
            "exit_code": self.exit_code,
            "session_id": self.session_id,
            // Every field, `null` when no result came.
            "result": self.result.cloned().unwrap_or_default(),
            "duration_ms": self.duration_ms,
            "rate_limits": rate_limits_json(self.rate_limits),
            "lines": self.lines,
            "stderr": {
                "lines": self.stderr.0,
                "suppressed_warnings": self.stderr.1,
                "suppressed_by_code": self.suppressed,
            },
            "interrupted": self.interrupted,
            "subagents": {
                "failures": self.tally.subagents().failures_json(),
                "unrecovered": self.tally.subagents().unrecovered().count(),
            },
            "events": self.events,
            "command": self.argv,
            // The whole invocation's CPU: ours, and the children's we waited for.
            "cpu": crate::cpu::usage_json(),
            "leftovers_killed": self.leftovers_killed,
            "blocked_on_output_ms": self.blocked_on_output_ms,
            "first_line_ms": self.first_line_ms,
        });
        if let Some(r) = &self.recovery {
            v["recovery"] = r.clone();
        }
        v
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
