//! The module's exports: numbers in, numbers out; text through the two buffers.
//!
//! Conventions: an object index that names nothing makes a call do nothing (and return 0, or
//! `Infinity` for a time); a length beyond what the host wrote is cut to it; a time is the
//! host's milliseconds ([`crate::clock`]); a boolean is an `i32`, 0 for false. Codes:
//! a verdict is 0 ok, [`EXTEND_PRE_WRITE`], [`EXTEND_HIGH_UTILIZATION`], or [`KILL_BASE`] plus
//! the kill kind's index in [`KillKind::ALL`]; a tick's record is [`RECORD`] numbers
//! `[slot, what (1 kill, 2 extension), code, at, last tool boundary]`.
#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use serde_json::json;
use watchdog_core::reference::{self, OBSERVE_TABLE};
use watchdog_core::{facts::ResultFacts, ExtendReason, KillKind};

use crate::evaluate::{evaluate as evaluate_timeline, Timeline, Verdict};
use crate::rate_limit::{self, RateLimitCore};
use crate::state::with;
use crate::watchdog::{limits, Options, Record, Watchdog};

/// Numbers per record of a tick.
pub const RECORD: usize = 5;
/// The verdict or record code of the `pre_write` extension.
pub const EXTEND_PRE_WRITE: i32 = 1;
/// The verdict or record code of the `high_utilization` extension.
pub const EXTEND_HIGH_UTILIZATION: i32 = 2;
/// Kill codes are this plus the kind's index in [`KillKind::ALL`].
pub const KILL_BASE: i32 = 10;

fn kill_code(kind: KillKind) -> i32 {
    let i = KillKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
    KILL_BASE + i as i32
}

fn extend_code(reason: ExtendReason) -> i32 {
    match reason {
        ExtendReason::PreWrite => EXTEND_PRE_WRITE,
        ExtendReason::HighUtilization => EXTEND_HIGH_UTILIZATION,
        // An extension this build does not name: the session lives on (ok).
        _ => 0,
    }
}

fn option(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

/// `f` on watchdog `w`, or `or` when `w` names none.
fn on_watchdog<R>(w: u32, or: R, f: impl FnOnce(&mut Watchdog) -> R) -> R {
    with(|s| s.watchdogs.get_mut(w).map_or(or, f))
}

/// Room for `len` bytes of input; returns where to write them.
#[no_mangle]
pub extern "C" fn input(len: u32) -> *mut u8 {
    with(|s| {
        s.input.clear();
        s.input.resize(len as usize, 0);
        s.input.as_mut_ptr()
    })
}

/// Where the last call's text is.
#[no_mangle]
pub extern "C" fn output_ptr() -> *const u8 {
    with(|s| s.output.as_ptr())
}

/// Where the last tick's records are.
#[no_mangle]
pub extern "C" fn records_ptr() -> *const f64 {
    with(|s| s.records.as_ptr())
}

/// The tables the host reads once, as JSON (length of the text): the observe table's rows
/// (`type`, `subtype`, `effect` code), the effect codes, the kill names by code, the
/// extension names by code, and the layout constants.
#[no_mangle]
pub extern "C" fn tables() -> u32 {
    let rows: Vec<_> = OBSERVE_TABLE
        .iter()
        .map(|r| json!({"type": r.kind, "subtype": r.subtype, "effect": r.effect.code()}))
        .collect();
    let kills: serde_json::Map<_, _> = KillKind::ALL
        .iter()
        .map(|k| (kill_code(*k).to_string(), json!(reference::kill_name(*k))))
        .collect();
    let effect = |e: reference::Effect| e.code();
    let text = json!({
        "rows": rows,
        "effects": {
            "none": effect(reference::Effect::None),
            "settle": effect(reference::Effect::Settle),
            "alive": effect(reference::Effect::Alive),
            "work": effect(reference::Effect::Work),
            "heartbeatWork": effect(reference::Effect::HeartbeatWork),
            "line": effect(reference::Effect::Line),
        },
        "kills": kills,
        "extends": {
            EXTEND_PRE_WRITE.to_string(): ExtendReason::PreWrite.as_str(),
            EXTEND_HIGH_UTILIZATION.to_string(): ExtendReason::HighUtilization.as_str(),
        },
        "record": RECORD,
        "killBase": KILL_BASE,
    })
    .to_string();
    with(|s| s.answer(&text))
}

/// A watchdog with these options; the write tools are the input's first `tools_len` bytes,
/// one name a line. Returns its index, or -1 with the core's words in the output.
#[no_mangle]
pub extern "C" fn wd_new(
    idle_ms: f64,
    extend_factor: f64,
    high_utilization: f64,
    startup_ms: f64,
    linger_ms: f64,
    no_progress_ms: f64,
    tool_heartbeats: i32,
    tools_len: u32,
) -> i32 {
    let o = Options {
        idle_ms,
        extend_factor,
        high_utilization,
        startup_ms,
        linger_ms,
        no_progress_ms,
        tool_heartbeats: tool_heartbeats != 0,
    };
    with(|s| {
        let text = String::from_utf8_lossy(s.input(tools_len)).into_owned();
        let tools: Vec<&str> = text.split('\n').filter(|t| !t.is_empty()).collect();
        match limits(&o, &tools) {
            Ok(l) => match s.watchdogs.insert(Watchdog::new(l, o.tool_heartbeats)) {
                Some(i) => i as i32,
                None => {
                    s.answer("too many watchdogs were made in this process");
                    -1
                }
            },
            Err(e) => {
                s.answer(&e.to_string());
                -1
            }
        }
    })
}

/// Drop a watchdog.
#[no_mangle]
pub extern "C" fn wd_free(w: u32) {
    with(|s| s.watchdogs.remove(w));
}

/// Register a query; returns its slot (0 when `w` names nothing).
#[no_mangle]
pub extern "C" fn wd_register(w: u32, now: f64, ceiling_ms: f64) -> u32 {
    on_watchdog(w, 0, |w| w.register(now, ceiling_ms))
}

/// A message of row `row` of the observe table (any other number: an ignored message).
/// This and the other feeds return the watchdog's next deadline when the feed brought it
/// earlier, else `Infinity` (the host re-arms its timer only then).
#[no_mangle]
pub extern "C" fn wd_observe(w: u32, slot: u32, row: u32, now: f64) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| w.observe_row(slot, row, now))
}

/// A message the core reads whole: the input's first `len` bytes, one stream-json line.
#[no_mangle]
pub extern "C" fn wd_line(w: u32, slot: u32, len: u32, now: f64) -> f64 {
    with(|s| {
        let line = s.input(len).to_vec();
        s.watchdogs
            .get_mut(w)
            .map_or(f64::INFINITY, |w| w.observe_line(slot, &line, now))
    })
}

/// A tool boundary; the tool's name is the input's first `name_len` bytes (-1: no name).
#[no_mangle]
pub extern "C" fn wd_activity(w: u32, slot: u32, name_len: i32, now: f64) -> f64 {
    with(|s| {
        let name = u32::try_from(name_len)
            .ok()
            .map(|n| String::from_utf8_lossy(s.input(n)).into_owned());
        s.watchdogs
            .get_mut(w)
            .map_or(f64::INFINITY, |w| w.activity(slot, name.as_deref(), now))
    })
}

/// Work by hand (`handle.stream()`).
#[no_mangle]
pub extern "C" fn wd_stream(w: u32, slot: u32, now: f64) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| w.stream(slot, now))
}

/// A sign of life by hand (`handle.heartbeat()`).
#[no_mangle]
pub extern "C" fn wd_heartbeat(w: u32, slot: u32, now: f64) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| w.heartbeat(slot, now))
}

/// The length of the text the last call left in the output.
#[no_mangle]
pub extern "C" fn output_len() -> u32 {
    with(|s| s.output.len() as u32)
}

/// Settle by hand (`handle.settle()`).
#[no_mangle]
pub extern "C" fn wd_settle(w: u32, slot: u32, now: f64) {
    on_watchdog(w, (), |w| w.settle(slot, now));
}

/// The query of `slot` ended, after its last `result` if `has_result`: the input holds that
/// result's `subtype` then its `stop_reason` (`subtype_len`, `stop_len` bytes; negative:
/// absent), `is_error` is 0, 1, or negative for absent.
#[no_mangle]
pub extern "C" fn wd_unregister(
    w: u32,
    slot: u32,
    has_result: i32,
    subtype_len: i32,
    is_error: i32,
    stop_len: i32,
) {
    with(|s| {
        let result = (has_result != 0).then(|| {
            let bytes = s.input(u32::MAX);
            let (subtype, rest) = field(bytes, subtype_len);
            let (stop_reason, _) = field(rest, stop_len);
            ResultFacts {
                subtype,
                is_error: u8::try_from(is_error).ok().map(|b| b != 0),
                stop_reason,
                ..ResultFacts::default()
            }
        });
        if let Some(w) = s.watchdogs.get_mut(w) {
            w.unregister(slot, result);
        }
    });
}

/// The text of the first `len` bytes of `bytes` (a negative `len`: none), and what follows it.
fn field(bytes: &[u8], len: i32) -> (Option<String>, &[u8]) {
    match usize::try_from(len) {
        Ok(n) => {
            let (head, rest) = bytes.split_at(n.min(bytes.len()));
            (Some(String::from_utf8_lossy(head).into_owned()), rest)
        }
        Err(_) => (None, bytes),
    }
}

/// A tick at `now` with the utilization read (`NaN`: unknown); returns how many records it
/// left at [`records_ptr`].
#[no_mangle]
pub extern "C" fn wd_tick(w: u32, now: f64, utilization: f64) -> u32 {
    with(|s| {
        s.records.clear();
        let Some(wd) = s.watchdogs.get_mut(w) else {
            return 0;
        };
        wd.tick(now, option(utilization), &mut s.scratch);
        for r in &s.scratch {
            match *r {
                Record::Kill {
                    slot,
                    kind,
                    at,
                    last_tool,
                } => s.records.extend([
                    f64::from(slot),
                    1.0,
                    f64::from(kill_code(kind)),
                    at,
                    last_tool,
                ]),
                Record::Extended { slot, reason } => s.records.extend([
                    f64::from(slot),
                    2.0,
                    f64::from(extend_code(reason)),
                    f64::NAN,
                    f64::NAN,
                ]),
            }
        }
        s.scratch.len() as u32
    })
}

/// The host delivered record `i` of the last tick (see [`Watchdog::deliver`]).
#[no_mangle]
pub extern "C" fn wd_deliver(w: u32, i: u32) {
    on_watchdog(w, (), |w| w.deliver(i));
}

/// When the watchdog next has work (`Infinity`: never).
#[no_mangle]
pub extern "C" fn wd_poll_timeout(w: u32) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| w.poll_timeout())
}

/// Forget every query of the watchdog.
#[no_mangle]
pub extern "C" fn wd_clear(w: u32) {
    on_watchdog(w, (), |w| w.clear());
}

/// The watchdog's metrics as the core's JSON (length of the text).
#[no_mangle]
pub extern "C" fn wd_metrics_json(w: u32) -> u32 {
    with(|s| {
        let text = s.watchdogs.get_mut(w).map(|w| w.metrics_json());
        s.answer(text.as_deref().unwrap_or("null"))
    })
}

/// The watchdog's metrics in the Prometheus text format (length of the text).
#[no_mangle]
pub extern "C" fn wd_render_prometheus(w: u32) -> u32 {
    with(|s| {
        let text = s.watchdogs.get_mut(w).map(|w| w.render_prometheus());
        s.answer(text.as_deref().unwrap_or(""))
    })
}

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

/// A rate-limit monitor (`warn_at`, and the fallback window: the input's first `window_len`
/// bytes). Returns its index, or -1 with the core's words in the output.
#[no_mangle]
pub extern "C" fn rl_new(warn_at: f64, window_len: u32) -> i32 {
    with(|s| {
        let window = String::from_utf8_lossy(s.input(window_len)).into_owned();
        match RateLimitCore::new(warn_at, &window) {
            Ok(m) => match s.monitors.insert(m) {
                Some(i) => i as i32,
                None => {
                    s.answer("too many rate-limit monitors were made in this process");
                    -1
                }
            },
            Err(e) => {
                s.answer(&e);
                -1
            }
        }
    })
}

/// Drop a monitor.
#[no_mangle]
pub extern "C" fn rl_free(m: u32) {
    with(|s| s.monitors.remove(m));
}

/// Fold a frame's `rate_limit_info` (JSON: the input's first `len` bytes) at `now`; the
/// derived fields as JSON in the output (length of the text).
#[no_mangle]
pub extern "C" fn rl_note(m: u32, len: u32, now: f64) -> u32 {
    with(|s| {
        let info = s.input(len).to_vec();
        let text = s.monitors.get_mut(m).map(|m| m.note(&info, now));
        s.answer(text.as_deref().unwrap_or("{}"))
    })
}

/// Whether a reading with this `resetsAt` has expired at `now`.
#[no_mangle]
pub extern "C" fn rl_expired(m: u32, resets_at: f64, now: f64) -> i32 {
    with(|s| {
        s.monitors
            .get_mut(m)
            .is_some_and(|m| m.expired(resets_at, now)) as i32
    })
}

/// Forget every reading.
#[no_mangle]
pub extern "C" fn rl_reset(m: u32) {
    with(|s| {
        if let Some(m) = s.monitors.get_mut(m) {
            m.reset();
        }
    });
}

/// The ISO-8601 form of `resetsAt` in the output (its length), or -1 for an invalid date.
#[no_mangle]
pub extern "C" fn rl_reset_iso(resets_at: f64) -> i32 {
    match rate_limit::rate_limit_reset_iso(resets_at) {
        Some(iso) => with(|s| s.answer(&iso)) as i32,
        None => -1,
    }
}

/// The one-line form of a reading, in the output (its length), or -1 for an invalid date.
/// The input holds `status`, then the overage status, then its reason (`status_len`,
/// `overage_len`, `reason_len` bytes; a negative length: absent).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn rl_format(
    status_len: u32,
    has_utilization: i32,
    utilization: f64,
    overage_len: i32,
    reason_len: i32,
    has_resets_at: i32,
    resets_at: f64,
) -> i32 {
    with(|s| {
        let bytes = s.input(u32::MAX).to_vec();
        let mut rest = &bytes[..];
        let mut take = |len: i64| -> Option<String> {
            let len = usize::try_from(len).ok()?.min(rest.len());
            let (head, tail) = rest.split_at(len);
            rest = tail;
            Some(String::from_utf8_lossy(head).into_owned())
        };
        let status = take(i64::from(status_len)).unwrap_or_default();
        let overage = take(i64::from(overage_len));
        let reason = take(i64::from(reason_len));
        let line = rate_limit::format_rate_limit_reading(
            &status,
            (has_utilization != 0).then_some(utilization),
            overage,
            reason,
            (has_resets_at != 0).then_some(resets_at),
        );
        match line {
            Some(line) => s.answer(&line) as i32,
            None => -1,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::with;

    fn text(len: u32) -> String {
        with(|s| String::from_utf8(s.output[..len as usize].to_vec()).unwrap())
    }

    fn write(bytes: &[u8]) -> u32 {
        let _ = input(bytes.len() as u32);
        with(|s| s.input.copy_from_slice(bytes));
        bytes.len() as u32
    }

    #[test]
    fn the_tables_name_every_kill_and_row() {
        let t: serde_json::Value = serde_json::from_str(&text(tables())).unwrap();
        assert_eq!(t["rows"].as_array().unwrap().len(), OBSERVE_TABLE.len());
        assert_eq!(
            t["kills"][&kill_code(KillKind::Idle).to_string()],
            "watchdog_idle"
        );
        assert_eq!(t["kills"].as_object().unwrap().len(), KillKind::ALL.len());
        assert_eq!(t["extends"]["1"], "pre_write");
        assert_eq!(t["record"], RECORD);
    }

    #[test]
    fn a_bad_option_is_the_cores_words_and_unknown_indices_do_nothing() {
        let n = write(b"Write\nEdit");
        assert_eq!(
            wd_new(
                f64::NAN,
                2.0,
                0.9,
                f64::INFINITY,
                f64::INFINITY,
                f64::INFINITY,
                1,
                n
            ),
            -1
        );
        assert!(text(with(|s| s.output.len() as u32)).starts_with("idle must be"));
        wd_observe(999, 0, 0, 1.0);
        wd_unregister(999, 3, 0, -1, -1, -1);
        assert_eq!(wd_tick(999, 1.0, f64::NAN), 0);
        assert_eq!(wd_poll_timeout(999), f64::INFINITY);
        assert_eq!(rl_expired(999, 1.0, 2.0), 0);
        assert_eq!(rl_new(1.5, 0), -1);
    }

    #[test]
    fn a_kill_crosses_as_a_record() {
        let n = write(b"Write\nEdit");
        let w = wd_new(
            1000.0,
            1.0,
            0.9,
            f64::INFINITY,
            f64::INFINITY,
            f64::INFINITY,
            1,
            n,
        ) as u32;
        let slot = wd_register(w, 0.0, f64::NAN);
        assert_eq!(wd_poll_timeout(w), 1000.0);
        assert_eq!(wd_tick(w, 1500.0, f64::NAN), 1);
        let r = with(|s| s.records.clone());
        assert_eq!(
            r,
            [
                f64::from(slot),
                1.0,
                f64::from(kill_code(KillKind::Idle)),
                1000.0,
                0.0
            ]
        );
        wd_free(w);
    }

    #[test]
    fn the_formatter_reads_its_parts_from_the_input() {
        let n = write(b"allowed_warningrejectedout_of_credits");
        assert_eq!(n, 37);
        let len = rl_format(15, 1, 0.99, 8, 14, 1, 1_900_003_600.0);
        assert_eq!(
            text(len as u32),
            "allowed_warning at 99%, overage rejected (out_of_credits), resets at 2030-03-17T18:46:40.000Z"
        );
        write(b"allowed");
        assert_eq!(rl_format(7, 0, 0.0, -1, -1, 1, f64::NAN), -1);
        assert_eq!(rl_reset_iso(f64::INFINITY), -1);
    }
}
