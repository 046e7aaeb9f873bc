//! The fleet metrics of `createWatchdog()`: the core's [`Counters`], fed by the JavaScript
//! side where its idle policy delivers a kill or an extension and where a query ends
//! (`unregister()`), snapshotted as the core's JSON and rendered as the core's Prometheus
//! text, the same series as the Rust `Watchdog` and the Python API serve.
//!
//! A message costs nothing here: only kills, extensions and ends cross (one call each).

use std::time::Duration;

use napi::bindgen_prelude::Float64Array;
use napi_derive::napi;
use watchdog_core::facts::ResultFacts;
use watchdog_core::idle_policy::{self, slab, IdleKill};
use watchdog_core::metrics::{Counters, Metrics};
use watchdog_core::{ExtendReason, Outcome};

use crate::{limits, utilization};

/// One watchdog's counters.
#[napi]
pub struct MetricsCore {
    counters: Counters,
}

/// The outcome of a query that ended: its kill (`kill_code`, a verdict code 3 to 7), else its
/// last `result` (`has_result`, with the fields the core reads), else none.
fn outcome(
    kill_code: i32,
    has_result: bool,
    subtype: Option<String>,
    is_error: Option<bool>,
    stop_reason: Option<String>,
) -> Outcome {
    if let Some(kill) = IdleKill::from_code(kill_code) {
        return Outcome::Killed {
            kind: kill.kill_kind(),
        };
    }
    if !has_result {
        return Outcome::NoResult;
    }
    ResultFacts {
        subtype,
        is_error,
        stop_reason,
        ..ResultFacts::default()
    }
    .into_outcome()
}

#[napi]
impl MetricsCore {
    /// Counters at zero.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        MetricsCore {
            counters: Counters::default(),
        }
    }

    /// A kill (verdict `code`, 3 to 7) of row `index` of `rows`, decided at `now` with the
    /// utilization `utilization_or_nan` after `before_or_nan` (the reading until this check):
    /// counted with its lateness ([`idle_policy::kill_deadline`]). Any other code, or a row
    /// out of range, counts nothing.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn kill(
        &self,
        rows: Float64Array,
        index: u32,
        code: i32,
        now: f64,
        before_or_nan: f64,
        utilization_or_nan: f64,
        limits_: Float64Array,
    ) {
        let start = index as usize * slab::STRIDE;
        let (Some(kill), Some(row)) = (
            IdleKill::from_code(code),
            rows.get(start..start + slab::STRIDE),
        ) else {
            return;
        };
        let due = idle_policy::kill_deadline(
            &slab::timeline(row),
            kill,
            now,
            utilization(before_or_nan),
            utilization(utilization_or_nan),
            &limits(&limits_),
        );
        let late_ms = now - due;
        let lateness = if late_ms > 0.0 {
            Duration::try_from_secs_f64(late_ms / 1000.0).unwrap_or(Duration::MAX)
        } else {
            Duration::ZERO
        };
        self.counters.record_kill(kill.kill_kind(), lateness);
    }

    /// An extension reported (verdict `code` 1 `pre_write`, 2 `high_utilization`).
    #[napi]
    pub fn extension(&self, code: i32) {
        match code {
            1 => self.counters.record_extension(ExtendReason::PreWrite),
            2 => self
                .counters
                .record_extension(ExtendReason::HighUtilization),
            _ => {}
        }
    }

    /// A query ended: killed (`kill_code` 3 to 7) or, with another code, by its last `result`
    /// (`has_result`, its `subtype`, `is_error`, `stop_reason`) or without one. Returns the
    /// outcome's name.
    #[napi]
    pub fn end(
        &self,
        kill_code: i32,
        has_result: bool,
        subtype: Option<String>,
        is_error: Option<bool>,
        stop_reason: Option<String>,
    ) -> String {
        let outcome = outcome(kill_code, has_result, subtype, is_error, stop_reason);
        self.counters.record_end(&outcome);
        outcome.as_str().to_owned()
    }

    /// The snapshot as the core's JSON (`Metrics::to_json`), with the gauges: `sessions`
    /// registered now and the last utilization read (`NaN`: unknown).
    #[napi]
    pub fn snapshot_json(&self, sessions: u32, utilization_or_nan: f64) -> String {
        self.snapshot(sessions, utilization_or_nan)
            .to_json()
            .to_string()
    }

    /// The snapshot in the Prometheus text exposition format 0.0.4.
    #[napi]
    pub fn render(&self, sessions: u32, utilization_or_nan: f64) -> String {
        self.snapshot(sessions, utilization_or_nan)
            .render_prometheus()
    }
}

impl MetricsCore {
    fn snapshot(&self, sessions: u32, utilization_or_nan: f64) -> Metrics {
        self.counters
            .snapshot(sessions as usize, utilization(utilization_or_nan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_query_has_the_cores_outcome() {
        let s = |v: &str| Some(v.to_owned());
        let name = |o: Outcome| o.as_str();
        assert_eq!(name(outcome(3, true, s("success"), None, None)), "killed");
        assert!(matches!(
            outcome(4, false, None, None, None),
            Outcome::Killed {
                kind: watchdog_core::KillKind::Ceiling
            }
        ));
        assert_eq!(name(outcome(0, false, None, None, None)), "no_result");
        let ok = outcome(0, true, s("success"), Some(false), s("end_turn"));
        assert_eq!(name(ok), "success");
        let error = outcome(0, true, s("error_max_turns"), Some(false), None);
        assert_eq!(name(error), "error_result");
        let api_error = outcome(0, true, s("success"), Some(true), None);
        assert_eq!(name(api_error), "error_result");
        let mid = outcome(0, true, s("success"), Some(false), s("tool_use"));
        assert_eq!(name(mid), "incomplete");
        assert_eq!(name(outcome(0, true, None, None, None)), "success");
    }
}
