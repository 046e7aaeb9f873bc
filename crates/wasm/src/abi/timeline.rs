//! The export of `evaluateWatchdog()`: one timeline judged by the reference rules.

#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use super::{extend_code, kill_code, option};
use crate::evaluate::{evaluate as evaluate_timeline, Timeline, Verdict};
use crate::watchdog::Options;

/// `evaluateWatchdog`: the verdict code of a timeline (see the module's conventions).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn evaluate(
    started_at: f64,
    last_tool_at: f64,
    last_activity_at: f64,
    written: i32,
    hard_ceiling_ms: f64,
    settled: i32,
    settled_at: f64,
    last_work_at: f64,
    seen: i32,
    now: f64,
    utilization: f64,
    idle_ms: f64,
    extend_factor: f64,
    high_utilization: f64,
    startup_ms: f64,
    linger_ms: f64,
    no_progress_ms: f64,
) -> i32 {
    let t = Timeline {
        started_at,
        last_tool_at,
        last_activity_at,
        written: written != 0,
        hard_ceiling_ms,
        settled: settled != 0,
        settled_at,
        last_work_at,
        seen: seen != 0,
    };
    let o = Options {
        idle_ms,
        extend_factor,
        high_utilization,
        startup_ms,
        linger_ms,
        no_progress_ms,
        tool_heartbeats: true,
    };
    match evaluate_timeline(&t, now, option(utilization), &o) {
        Verdict::Ok => 0,
        Verdict::Extend(reason) => extend_code(reason),
        Verdict::Kill(kind) => kill_code(kind),
    }
}
