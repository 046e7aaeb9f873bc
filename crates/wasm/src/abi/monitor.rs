//! The exports of `createRateLimitMonitor()` and the reading's formatters.

#![allow(unsafe_code)] // `#[no_mangle]` only: each export is named as it is written.

use crate::rate_limit::{self, Frame, Given, Held, RateLimitCore};
use crate::state::with;

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

/// Fold a frame's `rate_limit_info`, given as what the reading reads of it ([`Frame`]): each
/// held value as its kind (0 `undefined` or `null`, 1 a number, else another type) and its
/// number; `own_type_len` the length of `rateLimitType` (negative: not a string); each overage
/// field's kind (0 `undefined`, else given). Returns
/// [`RateLimitCore::note`]'s decision as [`Note::bits`](rate_limit::Note::bits).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn rl_note(
    m: u32,
    top_kind: i32,
    top: f64,
    own_type_len: i32,
    own_kind: i32,
    own: f64,
    fallback_kind: i32,
    fallback: f64,
    overage_status: i32,
    overage_disabled_reason: i32,
) -> u32 {
    let held = |kind: i32, x: f64| match kind {
        0 => Held::Nullish,
        1 => Held::Number(x),
        _ => Held::Other,
    };
    let given = |kind: i32| match kind {
        0 => Given::Absent,
        _ => Given::Given,
    };
    let frame = Frame {
        top: held(top_kind, top),
        own_named: own_type_len > 0,
        own: held(own_kind, own),
        fallback: held(fallback_kind, fallback),
        overage_status: given(overage_status),
        overage_disabled_reason: given(overage_disabled_reason),
    };
    with(|s| s.monitors.get_mut(m).map_or(0, |m| m.note(&frame).bits()))
}

/// Whether a reading with this `resetsAt` has expired at `now` ([`rate_limit::expired`]).
#[no_mangle]
pub extern "C" fn rl_expired(resets_at: f64, now: f64) -> i32 {
    i32::from(rate_limit::expired(resets_at, now))
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
