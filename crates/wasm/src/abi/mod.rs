//! The module's exports: numbers in, numbers out; text through the two buffers.
//!
//! Conventions: an object index that names nothing makes a call do nothing (and return 0, or
//! `Infinity` for a time); a length beyond what the host wrote is cut to it; a time is the
//! host's milliseconds ([`crate::clock`]); a boolean is an `i32`, 0 for false. Codes:
//! a verdict is 0 ok, [`EXTEND_PRE_WRITE`], [`EXTEND_HIGH_UTILIZATION`], or [`KILL_BASE`] plus
//! the kill kind's index in [`KillKind::ALL`]; a tick's record is [`RECORD`] numbers
//! `[slot, what (1 kill, 2 extension), code, at, last tool boundary]`.
#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use crate::reference;
use serde_json::json;
use watchdog_core::{ExtendReason, KillKind};

use crate::state::with;
use crate::watchdog::Watchdog;

mod monitor;
mod rules;
mod timeline;
mod watchdog;

pub use monitor::*;
pub use rules::*;
pub use timeline::*;
pub use watchdog::*;

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

/// The tables the host reads once, as JSON (length of the text): the effect and read codes
/// (of a watchdog's observe table, [`wd_table`]), the kill names by code, the extension names by
/// code, the layout constants, the reference preset's defaults (`createWatchdog()`'s and
/// `createRateLimitMonitor()`'s), and the `type` of a rate-limit frame (what
/// `createRateLimitMonitor().observe()` folds).
#[no_mangle]
pub extern "C" fn tables() -> u32 {
    let l = reference::limits();
    let ms = |d: std::time::Duration| crate::clock::duration_ms(d);
    let rate = watchdog_core::rate_limit::RateLimitConfig::default();
    let defaults = json!({
        "watchdog": {
            "idleMs": ms(l.idle()),
            "extendFactor": l.extend_factor(),
            "highUtilization": l.high_utilization(),
            "tickMs": ms(reference::TICK),
            "writeTools": reference::WRITE_TOOLS,
            "toolHeartbeats": reference::TOOL_HEARTBEATS,
        },
        "rateLimit": {
            "warnAt": rate.warn_at(),
            "fallbackWindow": rate.fallback_window(),
        },
    });
    let kills: serde_json::Map<_, _> = KillKind::ALL
        .iter()
        .map(|k| (kill_code(*k).to_string(), json!(reference::kill_name(*k))))
        .collect();
    let effect = |e: reference::Effect| e.code();
    let text = json!({
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
        "reads": {
            "always": reference::Read::Always.code(),
            "ifTrue": reference::Read::IfTrue("").code(),
            "ifAdded": reference::Read::IfAdded.code(),
        },
        "defaults": defaults,
        "rateLimitFrame": watchdog_core::LineKind::RateLimit.as_str(),
    })
    .to_string();
    with(|s| s.answer(&text))
}

/// The length of the text the last call left in the output.
#[no_mangle]
pub extern "C" fn output_len() -> u32 {
    with(|s| s.output.len() as u32)
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
    fn the_tables_name_every_kill_and_the_defaults() {
        let t: serde_json::Value = serde_json::from_str(&text(tables())).unwrap();
        assert_eq!(t["defaults"]["watchdog"]["idleMs"], 600_000.0);
        assert_eq!(t["defaults"]["rateLimit"]["warnAt"], 0.85);
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
        wd_sync(999, 0, 1.0, 1.0, 1, f64::NAN);
        wd_unregister(999, 3, -1);
        assert_eq!(wd_tick(999, 1.0, f64::NAN), 0);
        assert_eq!(wd_poll_timeout(999), f64::INFINITY);
        assert_eq!(rl_note(999, 1, 0.99, -1, 0, 0.0, 0, 0.0, 0, 0), 0);
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
        let slot = wd_register(w, 100.0, f64::NAN);
        assert_eq!(wd_poll_timeout(w), 1100.0);
        assert_eq!(wd_activity(w, slot, -1, 300.0), 1300.0);
        assert_eq!(wd_tick(w, 1500.0, f64::NAN), 1);
        let r = with(|s| s.records.clone());
        assert_eq!(
            r,
            [
                f64::from(slot),
                1.0,
                f64::from(kill_code(KillKind::Idle)),
                100.0,
                300.0
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
