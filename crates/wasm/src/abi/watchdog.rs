//! The exports of `createWatchdog()`: a watchdog, its queries, its ticks and its metrics.

#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use watchdog_core::facts::ResultFacts;
use watchdog_core::LineView;

use super::{extend_code, kill_code, on_watchdog, option};
use crate::state::with;
use crate::watchdog::{limits, Options, Record, Watchdog};

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

/// The observe table of watchdog `w` as JSON ([`Watchdog::table_json`]; length of the text).
#[no_mangle]
pub extern "C" fn wd_table(w: u32) -> u32 {
    with(|s| {
        let text = s.watchdogs.get_mut(w).map(|w| w.table_json());
        s.answer(text.as_deref().unwrap_or("null"))
    })
}

/// The soonest a message can bring a deadline back after it, ms ([`Watchdog::soonest`]).
#[no_mangle]
pub extern "C" fn wd_soonest(w: u32) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| w.soonest())
}

/// Register a query; returns its slot (0 when `w` names nothing).
#[no_mangle]
pub extern "C" fn wd_register(w: u32, now: f64, ceiling_ms: f64) -> u32 {
    on_watchdog(w, 0, |w| w.register(now, ceiling_ms))
}

/// What the host kept of a query since it last told (see [`Watchdog::sync`]): its last work
/// and its last sign of life (`NaN`: none), whether it is settled, and since when (`NaN`: no
/// time given). This and the other feeds return the watchdog's next deadline.
#[no_mangle]
pub extern "C" fn wd_sync(
    w: u32,
    slot: u32,
    work: f64,
    last: f64,
    settled: i32,
    settled_at: f64,
) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| {
        w.sync(slot, work, last, settled != 0, settled_at)
    })
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

/// A message the table ignores: the child started.
#[no_mangle]
pub extern "C" fn wd_started(w: u32, slot: u32, now: f64) -> f64 {
    on_watchdog(w, f64::INFINITY, |w| w.started(slot, now))
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

/// The query of `slot` ended, after its last `result` when `result_len` is not negative: the
/// input's first `result_len` bytes, that result as the host hands a message over (its
/// [`Row::fields`](crate::reference::Row::fields)).
#[no_mangle]
pub extern "C" fn wd_unregister(w: u32, slot: u32, result_len: i32) {
    with(|s| {
        let result = u32::try_from(result_len).ok().map(|n| {
            LineView::parse(s.input(n))
                .map(|v| ResultFacts::of_line(&v))
                .unwrap_or_default()
        });
        if let Some(w) = s.watchdogs.get_mut(w) {
            w.unregister(slot, result);
        }
    });
}

/// A tick at `now` with the utilization read (`NaN`: unknown); returns how many records it
/// left at [`records_ptr`](super::records_ptr).
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
                    started,
                    last_tool,
                } => s.records.extend([
                    f64::from(slot),
                    1.0,
                    f64::from(kill_code(kind)),
                    started,
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
