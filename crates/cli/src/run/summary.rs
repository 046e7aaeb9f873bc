//! `run --summary`: one JSON object describing how the run ended: the run's record
//! ([`record_json`], the fields `replay --json` has too) and what `run` adds.

use serde_json::{json, Value};
use watchdog_core::RunRecord;

use crate::exit_code::StoppedBy;
use crate::verdict::record_json;

/// Everything the summary reports.
#[derive(Debug)]
pub struct Summary<'a> {
    /// The command line.
    pub argv: Vec<String>,
    /// How the run ended: the supervisor's record.
    pub record: &'a RunRecord,
    /// Who stopped it: the summary's `kill` is this stop's.
    pub stopped: StoppedBy<'a>,
    /// Our exit code.
    pub exit_code: i32,
    /// Milliseconds from spawn to the end.
    pub duration_ms: u64,
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
    pub recovery: Option<Value>,
    /// Our stdout could not be written: the error, whether the reader went away, its kind
    /// (`output`, or `output_blocked` when the reader took no byte for the bound while bytes
    /// waited), and for `output_blocked` how long it took nothing (ms, counted). When it
    /// stopped the run the `kill` is of that kind; the summary's `output_error` says it either
    /// way.
    pub output_error: Option<(String, bool, &'static str, Option<u64>)>,
    /// Bytes of the child's output read but never delivered to our stdout (its reader went
    /// away or took nothing for the bound).
    pub output_dropped_bytes: u64,
    /// Descendants still running when the child exited by itself, then stopped.
    pub leftovers_killed: usize,
    /// Milliseconds the child's output waited for our stdout.
    pub blocked_on_output_ms: u64,
    /// Milliseconds from spawn to the first stdout line, if one came.
    pub first_line_ms: Option<u64>,
    /// Microseconds from the kill's deadline to our seeing it, if there was a kill.
    pub kill_late_us: Option<u64>,
    /// The kernel facilities the host refused: each a guarantee that did not hold.
    pub unavailable: &'a [agent_sdk_watchdog::Facility],
}

impl Summary<'_> {
    /// The JSON object.
    pub fn to_json(&self) -> Value {
        let mut v = record_json(self.record, self.base);
        let output_error = self
            .output_error
            .as_ref()
            .map(|(error, reader_gone, kind, blocked)| {
                let mut e = json!({"kind": kind, "error": error, "reader_gone": reader_gone});
                if let Some(ms) = blocked {
                    e["output_blocked_ms"] = json!(ms);
                }
                e
            });
        match self.stopped {
            // The watchdog's kill: the record's, as `record_json` renders it.
            StoppedBy::Watchdog(_) => {}
            // Our own stop: the run ended because of it, whatever the record says.
            StoppedBy::Output { .. } | StoppedBy::OutputBlocked => {
                let mut kill = output_error.clone().unwrap_or_else(|| json!({}));
                kill["kind"] = json!(self.stopped.kill_kind());
                if let Some(stage) = self.record.stage {
                    kill["ladder"] = json!(stage.as_str());
                }
                // The tree it stopped, as for any kill.
                if let Some(r) = &self.record.receipt {
                    kill["tree"] = crate::tree_report::receipt_json(r, None);
                }
                v.insert("kill".into(), kill);
            }
            // Nothing was killed.
            _ => {
                v.insert("kill".into(), Value::Null);
            }
        }
        v.insert("output_error".into(), output_error.unwrap_or(Value::Null));
        if let (Some(k), Some(late)) = (
            v.get_mut("kill").filter(|k| k.is_object()),
            self.kill_late_us,
        ) {
            k["late_us"] = json!(late);
        }
        let mut v = Value::Object(v);
        let ours = json!({
            "exit_code": self.exit_code,
            "duration_ms": self.duration_ms,
            "stderr": {
                "lines": self.stderr.0,
                "suppressed_warnings": self.stderr.1,
                "suppressed_by_code": self.suppressed,
            },
            "interrupted": self.interrupted,
            "events": self.events,
            "command": self.argv,
            // The whole invocation's CPU: ours, and the children's we waited for.
            "cpu": crate::cpu::usage_json(),
            "leftovers_killed": self.leftovers_killed,
            "blocked_on_output_ms": self.blocked_on_output_ms,
            "output_dropped_bytes": self.output_dropped_bytes,
            "first_line_ms": self.first_line_ms,
            "unavailable": self.unavailable.iter().map(|f| json!({
                "facility": f.as_str(),
                "lost": f.lost_guarantee(),
            })).collect::<Vec<_>>(),
        });
        if let (Value::Object(m), Value::Object(o)) = (&mut v, ours) {
            m.extend(o);
        }
        if let Some(r) = &self.recovery {
            v["recovery"] = r.clone();
        }
        v
    }
}
