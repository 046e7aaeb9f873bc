//! The Node addon of `agent-sdk-watchdog`: the core's in-process idle policy
//! ([`watchdog_core::idle_policy`]) for the npm package's `createWatchdog()`, and the core's
//! rate-limit merge ([`RateLimitCore`], [`format_rate_limit_reading`]) for its
//! `createRateLimitMonitor()`; and the core's fleet metrics ([`MetricsCore`]) for its
//! `metrics()` and `renderPrometheus()`.
//!
//! Designed so that a message costs no call at all: the JavaScript side reads a message's
//! `type` and `subtype`, looks them up in the table this addon hands over once at load time
//! ([`observe_table`]), and writes the clocks into a `Float64Array` slab
//! ([`watchdog_core::idle_policy::slab`]). A pass over every registered query is one call
//! ([`evaluate_slab`]) that reads the slab in place and returns the next deadline; a single
//! query's deadline is one call with plain numbers ([`next_check`]).
//!
//! `unsafe`: none in this crate's own code. The `#[napi]` macro expands to the `extern "C"`
//! registration glue napi-rs needs, which is why this crate cannot `forbid(unsafe_code)`
//! (the expansion carries `unsafe` blocks and `#[no_mangle]`-style exports).
#![deny(missing_docs)]

// The class expansion of `#[napi]` adds undocumented glue items (the struct's own impl
// blocks); every item written in the module is documented.
#[allow(missing_docs)]
mod metrics;
#[allow(missing_docs)]
mod rate_limit;

pub use metrics::MetricsCore;
pub use rate_limit::{format_rate_limit_reading, rate_limit_reset_iso, RateLimitCore};

use napi::bindgen_prelude::{Float64Array, Int32Array};
use napi_derive::napi;
use watchdog_core::idle_policy::{self, slab, Effect, IdleLimits};

/// The layout of the `limits` array every call takes: `[idle_ms, extend_factor,
/// high_utilization, startup_ms, linger_ms, no_progress_ms]` (`Infinity` turns a rule off).
pub const LIMITS_LEN: usize = 6;

fn limits(l: &[f64]) -> IdleLimits {
    let get = |i: usize| l.get(i).copied().unwrap_or(f64::INFINITY);
    IdleLimits {
        idle_ms: get(0),
        extend_factor: get(1),
        high_utilization: get(2),
        startup_ms: get(3),
        linger_ms: get(4),
        no_progress_ms: get(5),
    }
}

fn utilization(u: f64) -> Option<f64> {
    // JavaScript's `null` crosses as NaN (one number type for every call); a NaN utilization
    // never reaches the threshold either way.
    (!u.is_nan()).then_some(u)
}

/// The classification table as JSON: `{"<type>": code, "<type>/<subtype>": code}`, with the
/// codes of [`Effect`] (0 none, 1 settle, 2 alive, 3 work, 4 work when tool heartbeats are
/// on). Read once at load time.
#[napi]
pub fn observe_table() -> String {
    let mut out = String::from("{");
    for (i, (kind, subtype, effect)) in idle_policy::OBSERVE_TABLE.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let key = match subtype {
            Some(s) => format!("{kind}/{s}"),
            None => (*kind).to_owned(),
        };
        out.push_str(&format!("\"{key}\":{}", *effect as i32));
    }
    out.push('}');
    out
}

/// The layout of a slab row as JSON (`{"STRIDE":7,"STARTED_AT":0,…}`), read once at load time.
#[napi]
pub fn slab_layout() -> String {
    format!(
        "{{\"STRIDE\":{},\"STARTED_AT\":{},\"LAST_TOOL_AT\":{},\"LAST_ACTIVITY_AT\":{},\
         \"FIRST_WRITE_AT\":{},\"HARD_CEILING_MS\":{},\"FLAGS\":{},\"SEQ\":{},\"SETTLED_AT\":{},\
         \"LAST_WORK_AT\":{},\"LIVE\":{},\"SETTLED\":{},\"KILLED\":{},\"EXTEND_NOTED\":{},\"SEEN\":{},\
         \"SKIPPED\":{},\"LIMITS_LEN\":{},\"EFFECT_NONE\":{},\
         \"EFFECT_SETTLE\":{},\"EFFECT_ALIVE\":{},\"EFFECT_WORK\":{},\"EFFECT_HEARTBEAT_WORK\":{}}}",
        slab::STRIDE,
        slab::STARTED_AT,
        slab::LAST_TOOL_AT,
        slab::LAST_ACTIVITY_AT,
        slab::FIRST_WRITE_AT,
        slab::HARD_CEILING_MS,
        slab::FLAGS,
        slab::SEQ,
        slab::SETTLED_AT,
        slab::LAST_WORK_AT,
        slab::LIVE,
        slab::SETTLED,
        slab::KILLED,
        slab::EXTEND_NOTED,
        slab::SEEN,
        slab::SKIPPED,
        LIMITS_LEN,
        Effect::None as i32,
        Effect::Settle as i32,
        Effect::Alive as i32,
        Effect::Work as i32,
        Effect::HeartbeatWork as i32,
    )
}

/// [`idle_policy::evaluate`] of one slab row (`row`, [`slab::STRIDE`] numbers), as a verdict
/// code ([`idle_policy::Verdict::code`]); `limits` as described at [`LIMITS_LEN`]. A short row
/// is ok (code 0).
#[napi]
pub fn evaluate(
    row: Float64Array,
    now: f64,
    utilization_or_nan: f64,
    limits_: Float64Array,
) -> i32 {
    match row.get(..slab::STRIDE) {
        Some(row) => idle_policy::evaluate(
            &slab::timeline(row),
            now,
            utilization(utilization_or_nan),
            &limits(&limits_),
        )
        .code(),
        None => 0,
    }
}

/// [`idle_policy::next_check`] of row `index` of `rows`.
#[napi]
pub fn next_check(
    rows: Float64Array,
    index: u32,
    now: f64,
    utilization_or_nan: f64,
    limits_: Float64Array,
) -> f64 {
    let start = index as usize * slab::STRIDE;
    match rows.get(start..start + slab::STRIDE) {
        Some(row) => idle_policy::next_check(
            &slab::timeline(row),
            now,
            utilization(utilization_or_nan),
            &limits(&limits_),
        ),
        None => f64::INFINITY,
    }
}

/// [`idle_policy::evaluate_slab`] over the first `count` rows of `rows`, verdicts into
/// `verdicts`; returns the next deadline (`Infinity` for none).
#[napi]
pub fn evaluate_slab(
    rows: Float64Array,
    count: u32,
    now: f64,
    utilization_or_nan: f64,
    limits_: Float64Array,
    mut verdicts: Int32Array,
) -> f64 {
    let n = (count as usize).min(rows.len() / slab::STRIDE);
    let verdicts: &mut [i32] = &mut verdicts;
    let n = n.min(verdicts.len());
    idle_policy::evaluate_slab(
        &rows[..n * slab::STRIDE],
        now,
        utilization(utilization_or_nan),
        &limits(&limits_),
        &mut verdicts[..n],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_handed_to_javascript_are_the_cores() {
        let table: serde_json::Value = serde_json::from_str(&observe_table()).unwrap();
        let table = table.as_object().unwrap();
        assert_eq!(table.len(), idle_policy::OBSERVE_TABLE.len());
        for (kind, subtype, effect) in idle_policy::OBSERVE_TABLE {
            let key = subtype.map_or_else(|| (*kind).to_owned(), |s| format!("{kind}/{s}"));
            assert_eq!(table[&key], *effect as i32, "{key}");
        }
        let layout: serde_json::Value = serde_json::from_str(&slab_layout()).unwrap();
        assert_eq!(layout["STRIDE"], slab::STRIDE);
        assert_eq!(layout["FIRST_WRITE_AT"], slab::FIRST_WRITE_AT);
        assert_eq!(layout["LAST_WORK_AT"], slab::LAST_WORK_AT);
        assert_eq!(layout["SEEN"], slab::SEEN);
        assert_eq!(layout["SKIPPED"], slab::SKIPPED);
        assert_eq!(layout["LIMITS_LEN"], LIMITS_LEN);
        assert_eq!(
            layout["EFFECT_HEARTBEAT_WORK"],
            Effect::HeartbeatWork as i32
        );
    }

    #[test]
    fn limits_are_read_in_order_and_missing_ones_are_off() {
        let l = limits(&[1.0, 2.0, 0.5, 3.0, 4.0, 5.0]);
        assert_eq!(
            (l.idle_ms, l.extend_factor, l.high_utilization),
            (1.0, 2.0, 0.5)
        );
        assert_eq!(
            (l.startup_ms, l.linger_ms, l.no_progress_ms),
            (3.0, 4.0, 5.0)
        );
        let short = limits(&[1.0, 2.0, 0.5]);
        assert_eq!(short.no_progress_ms, f64::INFINITY);
        assert_eq!(utilization(f64::NAN), None);
        assert_eq!(utilization(0.5), Some(0.5));
    }
}
