//! The rate-limit monitor: the reference package's 29 monitor checks (numbered `ref N`), its
//! golden formatting outputs, the frames the real CLI printed, and the new behaviours.
//!
//! Deliberate differences from the reference (agent-sdk-watchdog 0.2.0), each tested below:
//! - D1 Warnings re-arm when their window resets or falls below `warn_at − hysteresis`; the
//!   reference re-arms only on `reset()`. (ref 6 and ref 29 still hold: no re-arm happens there.)
//! - D2 A warning is an event naming its window (`Warning { window, utilization }`) instead of
//!   the returned reading; the merged reading is `latest()`.
//! - D3 A `rejected` frame without utilization keeps the window's last known utilization; the
//!   reference forgets it exactly when requests are rejected.
//! - D4 A malformed `resetsAt` (NaN, ±inf, negative, huge, non-numeric) is ignored, never a
//!   throw; a value above 1e11 is taken as milliseconds.
//! - D5 `{allowed, utilization: null}` renders `allowed` (unknown), not `allowed at 0%`.
//! - D6 Time is a parameter (`now`, epoch ms): the "injected clock" checks (ref 18, 19) pass
//!   explicit instants; "MAX_SAFE_INTEGER" (ref 13) is `u64::MAX`.
//! - D7 "Frozen defaults" (ref 23) becomes: the config is private, validated, plain data.
//! - D8 `observe` returns the events of the frame (empty for an unrelated line), not the reading.
//! - D9 `note` takes `&Value`, so it cannot mutate its input; ref 7 still compares.
//! - D10 A `rate_limit_event` with no `rate_limit_info` changes nothing (the reference throws).
//! - D11 `latest()` lends a shared reference: a caller cannot corrupt the held reading (the
//!   reference returns its internal object).

mod common;

use serde_json::{json, Value};
use watchdog_core::format_iso_ms;
use watchdog_core::rate_limit::{
    percent_half_up, RateLimitConfig, RateLimitEvent, RateLimitMonitor, Reading, Status,
};
use watchdog_core::LineView;

/// 2030-03-17T18:46:40Z, a reset time used by the fixtures (epoch seconds).
const RESET_S: u64 = 1_900_003_600;
const RESET_MS: u64 = RESET_S * 1000;
/// One hour before the reset.
const NOW: u64 = RESET_MS - 3_600_000;

/// The stdout lines of a capture from the real CLI.
fn capture_lines(name: &str) -> Vec<(u64, Value)> {
    common::capture_stdout(name)
}

fn monitor() -> RateLimitMonitor {
    RateLimitMonitor::new(RateLimitConfig::default())
}

/// The reference's `ALLOWED` fixture: utilization only inside `unifiedWindows`.
fn allowed() -> Value {
    json!({
        "status": "allowed",
        "resetsAt": RESET_S,
        "rateLimitType": "five_hour",
        "overageStatus": "rejected",
        "overageDisabledReason": "out_of_credits",
        "isUsingOverage": false,
        "unifiedWindows": {
            "five_hour": {"utilization": 0.11, "resetsAt": RESET_S, "status": "allowed"},
            "seven_day": {"utilization": 0.06, "resetsAt": RESET_S + 400_000, "status": "allowed"}
        }
    })
}

/// The reference's `ALLOWED_WARNING_99` fixture: top-level utilization, no overage fields.
fn allowed_warning_99() -> Value {
    json!({
        "status": "allowed_warning",
        "resetsAt": RESET_S,
        "rateLimitType": "five_hour",
        "utilization": 0.99
    })
}

fn warning(window: &str, utilization: f64) -> RateLimitEvent {
    RateLimitEvent::Warning {
        window: window.into(),
        utilization,
    }
}

fn rle(info: Value) -> Value {
    json!({"type": "rate_limit_event", "rate_limit_info": info, "session_id": "s"})
}

fn observe(m: &mut RateLimitMonitor, now: u64, line: &Value) -> Vec<RateLimitEvent> {
    m.observe(now, &LineView::from_value(line).unwrap())
}

// ---------------------------------------------------------------------------------------------
// The reference's 29 monitor checks.

#[test]
fn ref_01_02_allowed_shape_derives_utilization_from_its_own_window_and_keeps_overage() {
    let mut m = monitor();
    m.note(NOW, &allowed());
    let r = m.latest().unwrap();
    assert_eq!(r.utilization, Some(0.11)); // ref 1
    assert_eq!(r.overage_status.as_deref(), Some("rejected")); // ref 2
}

#[test]
fn ref_03_04_allowed_warning_keeps_its_top_level_value_and_overage_carries_forward() {
    let mut m = monitor();
    m.note(NOW, &allowed());
    m.note(NOW, &allowed_warning_99());
    let r = m.latest().unwrap();
    assert_eq!(r.utilization, Some(0.99)); // ref 3
    assert_eq!(r.overage_status.as_deref(), Some("rejected")); // ref 4
    assert_eq!(r.overage_disabled_reason.as_deref(), Some("out_of_credits")); // ref 4
}

#[test]
fn ref_05_06_one_warning_with_the_merged_reading_and_none_on_a_second_crossing() {
    let mut m = monitor();
    assert!(
        m.note(NOW, &allowed()).is_empty(),
        "ref 5: no warning at 0.11"
    );
    let events = m.note(NOW, &allowed_warning_99());
    assert_eq!(events, vec![warning("five_hour", 0.99)]); // ref 5 (D2)
    assert_eq!(m.latest().unwrap().utilization, Some(0.99));
    assert_eq!(
        m.latest().unwrap().overage_status.as_deref(),
        Some("rejected")
    );
    assert!(m.note(NOW + 1, &allowed_warning_99()).is_empty()); // ref 6
}

#[test]
fn ref_07_note_does_not_mutate_the_payload() {
    let info = allowed();
    let clone = info.clone();
    let mut m = monitor();
    m.note(NOW, &info);
    m.note(NOW, &allowed_warning_99());
    assert_eq!(info, clone);
}

#[test]
fn ref_08_to_12_active_expires_at_the_reset_instant_latest_keeps_the_stale_reading() {
    let mut m = monitor();
    assert!(m.active(NOW).is_none()); // ref 8
    m.note(NOW, &allowed());
    assert!(m.active(RESET_MS - 1).is_some()); // ref 9
    assert!(m.active(RESET_MS).is_none()); // ref 10
    assert!(m.active(RESET_MS + 1).is_none()); // ref 11
    assert_eq!(m.latest().unwrap().utilization, Some(0.11)); // ref 12
}

#[test]
fn ref_13_a_reading_without_resets_at_never_goes_stale() {
    let mut m = monitor();
    m.note(NOW, &json!({"status": "allowed", "utilization": 0.3}));
    assert!(m.active(u64::MAX).is_some());
    assert_eq!(m.utilization(u64::MAX), Some(0.3));
}

#[test]
fn ref_14_15_warn_at_changes_the_verdict() {
    let reading = json!({"status": "allowed", "utilization": 0.6});
    let mut low = RateLimitMonitor::new(RateLimitConfig::default().with_warn_at(0.5).unwrap());
    assert_eq!(low.note(NOW, &reading), vec![warning("five_hour", 0.6)]); // ref 14
    assert!(monitor().note(NOW, &reading).is_empty()); // ref 15
}

#[test]
fn ref_16_17_fallback_window_is_read_from_a_bare_allowed_frame() {
    let bare = json!({
        "status": "allowed",
        "unifiedWindows": {"five_hour": {"utilization": 0.1}, "seven_day": {"utilization": 0.7}}
    });
    let cfg = RateLimitConfig::default()
        .with_fallback_window("seven_day")
        .unwrap();
    let mut m = RateLimitMonitor::new(cfg);
    m.note(NOW, &bare);
    assert_eq!(m.latest().unwrap().utilization, Some(0.7)); // ref 16
    let mut d = monitor();
    d.note(NOW, &bare);
    assert_eq!(d.latest().unwrap().utilization, Some(0.1)); // ref 17
}

#[test]
fn ref_18_19_time_is_a_parameter() {
    // D6: the reference injects a clock; here `now` is explicit.
    let mut m = monitor();
    m.note(0, &allowed());
    assert!(m.active(RESET_MS - 1).is_some()); // ref 18
    assert!(m.active(RESET_MS).is_none()); // ref 19
}

#[test]
fn ref_20_21_22_warn_at_out_of_range_is_rejected_with_a_clear_message() {
    let e = |x: f64| {
        RateLimitConfig::default()
            .with_warn_at(x)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(e(1.5), "warn_at must be a number in [0, 1], got 1.5"); // ref 20
    assert_eq!(e(-0.1), "warn_at must be a number in [0, 1], got -0.1"); // ref 21
    assert_eq!(e(f64::NAN), "warn_at must be a number in [0, 1], got NaN"); // ref 22
    assert!(RateLimitConfig::default().with_hysteresis(2.0).is_err());
    assert!(RateLimitConfig::default().with_fallback_window("").is_err());
}

#[test]
fn ref_23_defaults_and_the_inclusive_threshold() {
    let c = RateLimitConfig::default();
    assert_eq!(
        (c.warn_at(), c.hysteresis(), c.fallback_window()),
        (0.85, 0.05, "five_hour")
    );
    let mut m = RateLimitMonitor::new(c);
    assert_eq!(
        m.note(
            NOW,
            &json!({"status": "allowed_warning", "utilization": 0.85})
        ),
        vec![warning("five_hour", 0.85)]
    );
}

#[test]
fn ref_24_25_an_unrelated_message_returns_nothing_and_changes_nothing() {
    let mut m = monitor();
    let line = json!({"type": "assistant", "message": {"content": []}});
    assert!(observe(&mut m, NOW, &line).is_empty()); // ref 24
    assert!(m.latest().is_none()); // ref 25
    assert_eq!(m.windows().count(), 0);
    // A line merely carrying rate_limit_info is not a rate_limit_event.
    let sneaky = json!({"type": "result", "rate_limit_info": {"status": "rejected"}});
    assert!(observe(&mut m, NOW, &sneaky).is_empty());
    assert!(m.latest().is_none());
}

#[test]
fn ref_26_27_observe_notes_a_rate_limit_event_and_holds_it() {
    let mut m = monitor();
    let events = observe(
        &mut m,
        NOW,
        &rle(json!({"status": "allowed_warning", "utilization": 0.9})),
    );
    assert_eq!(events, vec![warning("five_hour", 0.9)]); // ref 26
    assert_eq!(m.latest().unwrap().utilization, Some(0.9)); // ref 27
}

#[test]
fn ref_28_29_monitors_are_independent_and_each_warns_once() {
    let mut a = monitor();
    let mut b = monitor();
    a.note(NOW, &allowed_warning_99());
    assert!(b.latest().is_none()); // ref 28
    assert_eq!(b.note(NOW, &allowed_warning_99()).len(), 1); // ref 29
    assert!(a.note(NOW, &allowed_warning_99()).is_empty());
    assert!(b.note(NOW, &allowed_warning_99()).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Formatting: the reference's golden outputs.

fn reading(status: &str) -> Reading {
    Reading {
        status: Some(Status::parse(status)),
        ..Reading::default()
    }
}

#[test]
fn golden_one_liners() {
    let full = Reading {
        utilization: Some(0.99),
        overage_status: Some("rejected".into()),
        overage_disabled_reason: Some("out_of_credits".into()),
        resets_at_ms: Some(1_900_003_600_000),
        ..reading("allowed_warning")
    };
    assert_eq!(
        full.to_string(),
        "allowed_warning at 99%, overage rejected (out_of_credits), resets at 2030-03-17T18:46:40.000Z"
    );
    assert_eq!(reading("allowed").to_string(), "allowed");
    let rej = Reading {
        overage_status: Some("rejected".into()),
        ..reading("rejected")
    };
    assert_eq!(rej.to_string(), "rejected, overage rejected");
    let dangling = Reading {
        overage_disabled_reason: Some("out_of_credits".into()),
        ..reading("allowed")
    };
    assert_eq!(dangling.to_string(), "allowed (out_of_credits)");
    let zero = Reading {
        utilization: Some(0.0),
        ..reading("allowed")
    };
    assert_eq!(zero.to_string(), "allowed at 0%");
    let over = Reading {
        utilization: Some(1.234),
        ..reading("allowed")
    };
    assert_eq!(over.to_string(), "allowed at 123%");
}

#[test]
fn golden_one_liners_through_the_monitor() {
    let line = |info: Value| {
        let mut m = monitor();
        m.note(NOW, &info);
        m.latest().unwrap().to_string()
    };
    assert_eq!(
        line(json!({"status": "allowed", "resetsAt": 0})),
        "allowed, resets at 1970-01-01T00:00:00.000Z"
    );
    assert_eq!(
        line(json!({"status": "allowed", "resetsAt": 1.5})),
        "allowed, resets at 1970-01-01T00:00:01.500Z"
    );
    // D5: null is unknown, not 0 %.
    assert_eq!(
        line(json!({"status": "allowed", "utilization": null})),
        "allowed"
    );
    assert_eq!(line(json!({"utilization": 0.5})), "unknown at 50%");
}

#[test]
fn percentages_round_half_up_like_javascript_to_fixed() {
    assert_eq!(percent_half_up(0.125), 13);
    assert_eq!(percent_half_up(0.085), 9);
    assert_eq!(percent_half_up(0.005), 1);
    assert_eq!(percent_half_up(0.285), 28); // 28.499999999999996 in binary: JS prints 28 too
    assert_eq!(percent_half_up(0.994), 99);
    assert_eq!(percent_half_up(0.995), 100); // 99.5 exactly after the multiplication
    assert_eq!(percent_half_up(f64::NAN), 0);
}

#[test]
fn iso_times_match_javascript_to_iso_string() {
    assert_eq!(format_iso_ms(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_iso_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(format_iso_ms(1_796_033_973_000), "2026-11-30T10:19:33.000Z");
    assert_eq!(
        format_iso_ms(253_402_300_799_999),
        "9999-12-31T23:59:59.999Z"
    );
    assert_eq!(
        format_iso_ms(253_402_300_800_000),
        "+010000-01-01T00:00:00.000Z"
    );
    assert_eq!(
        format_iso_ms(8_640_000_000_000_000),
        "+275760-09-13T00:00:00.000Z"
    );
}

#[test]
fn resets_at_iso_accessors() {
    let mut m = monitor();
    m.note(NOW, &allowed());
    assert_eq!(
        m.latest().unwrap().resets_at_iso().as_deref(),
        Some("2030-03-17T18:46:40.000Z")
    );
    assert_eq!(
        m.window("five_hour").unwrap().resets_at_iso().as_deref(),
        Some("2030-03-17T18:46:40.000Z")
    );
    assert_eq!(reading("allowed").resets_at_iso(), None);
}

// ---------------------------------------------------------------------------------------------
// Frames the real CLI printed (CLI 2.1.332, testdata/captures/s3_*).

/// Feed every line of a capture; return the events.
fn replay(m: &mut RateLimitMonitor, name: &str, now: u64) -> Vec<RateLimitEvent> {
    capture_lines(name)
        .iter()
        .flat_map(|(t, v)| observe(m, now + t, v))
        .collect()
}

/// The capture runs took place on 2026-11-30 around 09:19Z.
const CAPTURE_NOW: u64 = 1_796_030_000_000;

#[test]
fn real_allowed_frame_warns_for_the_five_hour_window_at_91_percent() {
    let mut m = monitor();
    let events = replay(&mut m, "s3_ratelimit_gwjwt.capture.jsonl", CAPTURE_NOW);
    assert_eq!(events, vec![warning("five_hour", 0.91)]);
    assert_eq!(m.utilization(CAPTURE_NOW), Some(0.91));
    assert_eq!(
        m.latest().unwrap().to_string(),
        "allowed at 91%, overage rejected (org_level_disabled), resets at 2026-11-30T10:19:33.000Z"
    );
    assert_eq!(m.summary(CAPTURE_NOW), "5h 91% (resets 10:19Z) · 7d 42%");
    let seven = m.window("seven_day").unwrap();
    assert_eq!(seven.utilization, Some(0.42));
    assert_eq!(seven.status, Some(Status::Allowed));
}

#[test]
fn real_allowed_warning_frame() {
    let mut m = monitor();
    let events = replay(
        &mut m,
        "s3_ratelimit_warning_gwjwt.capture.jsonl",
        CAPTURE_NOW,
    );
    assert_eq!(events, vec![warning("five_hour", 0.95)]);
    assert_eq!(
        m.latest().unwrap().to_string(),
        "allowed_warning at 95%, overage rejected (org_level_disabled), resets at 2026-11-30T13:19:48.000Z"
    );
    assert_eq!(m.next_expiry(CAPTURE_NOW), Some(1_796_044_788_000));
}

#[test]
fn real_rejected_frame_reports_the_rejection_and_keeps_utilization() {
    let mut m = monitor();
    let events = replay(
        &mut m,
        "s3_429_rejected_fast_gwjwt.capture.jsonl",
        CAPTURE_NOW,
    );
    assert_eq!(
        events,
        vec![
            RateLimitEvent::Rejected {
                window: "five_hour".into(),
                resets_at_ms: Some(1_796_034_707_000),
                overage: Some("rejected".into()),
            },
            warning("five_hour", 0.91),
        ]
    );
    // The map lists five_hour as allowed_warning; the frame's own status wins.
    let w = m.window("five_hour").unwrap();
    assert!(w.is_rejected());
    assert_eq!(m.rejection(CAPTURE_NOW).unwrap().name, "five_hour");
    assert_eq!(m.utilization(CAPTURE_NOW), Some(0.91));
    assert_eq!(
        m.summary(CAPTURE_NOW),
        "5h 91% rejected (resets 10:31Z) · 7d 42%"
    );
    assert_eq!(
        events[0].to_string(),
        "rate limit: five_hour window rejected until 2026-11-30T10:31:47.000Z, overage rejected"
    );
}

#[test]
fn a_run_without_rate_limit_frames_leaves_the_monitor_empty() {
    let mut m = monitor();
    assert!(replay(&mut m, "s3_429_retry_apikey.capture.jsonl", CAPTURE_NOW).is_empty());
    assert!(m.latest().is_none());
    assert_eq!(m.utilization(CAPTURE_NOW), None);
    assert_eq!(m.summary(CAPTURE_NOW), "no rate-limit data");
}

#[test]
fn real_frames_as_raw_lines_give_the_same_reading() {
    // The borrowed (raw text) path of LineView must agree with the Value path.
    let path = common::testdata_dir().join("captures/s3_ratelimit_gwjwt.capture.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let mut a = monitor();
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if let Some(line) = v.get("line") {
            let raw = serde_json::to_string(line).unwrap();
            a.observe(CAPTURE_NOW, &LineView::parse_str(&raw).unwrap());
        }
    }
    let mut b = monitor();
    replay(&mut b, "s3_ratelimit_gwjwt.capture.jsonl", CAPTURE_NOW);
    let strip = |r: &Reading| Reading {
        observed_at_ms: 0,
        ..r.clone()
    };
    assert_eq!(strip(a.latest().unwrap()), strip(b.latest().unwrap()));
}

// ---------------------------------------------------------------------------------------------
// New behaviours.

#[test]
fn every_window_is_kept_and_survives_a_frame_that_does_not_mention_it() {
    let mut m = monitor();
    m.note(NOW, &allowed());
    m.note(
        NOW + 1,
        &json!({"status": "allowed", "rateLimitType": "seven_day_opus", "utilization": 0.5}),
    );
    let names: Vec<_> = m.windows().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["five_hour", "seven_day", "seven_day_opus"]);
    assert_eq!(m.window("five_hour").unwrap().utilization, Some(0.11));
    assert_eq!(m.utilization(NOW + 1), Some(0.5));
}

#[test]
fn utilization_is_the_highest_active_window_and_drops_a_window_at_its_reset() {
    let mut m = monitor();
    m.note(
        NOW,
        &json!({"status": "allowed", "unifiedWindows": {
            "five_hour": {"utilization": 0.95, "resetsAt": RESET_S},
            "seven_day": {"utilization": 0.40, "resetsAt": RESET_S + 86_400}
        }}),
    );
    assert_eq!(m.utilization(NOW), Some(0.95));
    assert_eq!(m.next_expiry(NOW), Some(RESET_MS));
    // At the five-hour reset only the seven-day window is left.
    assert_eq!(m.utilization(RESET_MS), Some(0.40));
    assert_eq!(m.active_windows(RESET_MS).count(), 1);
    assert_eq!(m.next_expiry(RESET_MS), Some(RESET_MS + 86_400_000));
    assert_eq!(m.utilization(RESET_MS + 86_400_000), None);
    assert_eq!(m.next_expiry(RESET_MS + 86_400_000), None);
}

#[test]
fn d1_warning_rearms_below_the_hysteresis_band_not_inside_it() {
    let mut m = monitor();
    let at = |u: f64| json!({"status": "allowed", "utilization": u, "resetsAt": RESET_S});
    assert_eq!(m.note(NOW, &at(0.9)).len(), 1);
    assert!(
        m.note(NOW, &at(0.82)).is_empty(),
        "inside the band: still armed off"
    );
    assert!(m.note(NOW, &at(0.86)).is_empty(), "no flapping");
    assert!(
        m.note(NOW, &at(0.79)).is_empty(),
        "below 0.80: re-armed, no event"
    );
    assert_eq!(m.note(NOW, &at(0.88)), vec![warning("five_hour", 0.88)]);
}

#[test]
fn d1_warning_rearms_when_the_window_resets() {
    let mut m = monitor();
    let first = json!({"status": "allowed", "utilization": 0.9, "resetsAt": RESET_S});
    let next = json!({"status": "allowed", "utilization": 0.9, "resetsAt": RESET_S + 18_000});
    assert_eq!(m.note(NOW, &first).len(), 1);
    assert!(m.note(RESET_MS - 1, &first).is_empty(), "same period");
    assert_eq!(m.note(RESET_MS + 1, &next), vec![warning("five_hour", 0.9)]);
}

#[test]
fn reset_forgets_everything_and_rearms() {
    let mut m = monitor();
    m.note(NOW, &allowed_warning_99());
    m.reset();
    assert!(m.latest().is_none());
    assert_eq!(m.windows().count(), 0);
    assert_eq!(m.note(NOW, &allowed_warning_99()).len(), 1);
}

#[test]
fn d3_a_rejected_frame_without_utilization_keeps_the_last_known_one() {
    let mut m = monitor();
    m.note(NOW, &allowed_warning_99());
    let events = m.note(
        NOW + 1,
        &json!({"status": "rejected", "rateLimitType": "five_hour", "resetsAt": RESET_S, "overageStatus": "rejected"}),
    );
    assert_eq!(
        events,
        vec![RateLimitEvent::Rejected {
            window: "five_hour".into(),
            resets_at_ms: Some(RESET_MS),
            overage: Some("rejected".into())
        }]
    );
    assert_eq!(m.latest().unwrap().utilization, Some(0.99));
    assert_eq!(m.utilization(NOW + 1), Some(0.99));
    assert_eq!(
        m.latest().unwrap().to_string(),
        "rejected at 99%, overage rejected, resets at 2030-03-17T18:46:40.000Z"
    );
}

#[test]
fn a_rejected_window_with_no_known_utilization_counts_as_full() {
    let mut m = monitor();
    m.note(NOW, &json!({"status": "rejected", "resetsAt": RESET_S}));
    assert_eq!(m.utilization(NOW), Some(1.0));
    assert_eq!(m.summary(NOW), "5h rejected (resets 18:46Z)");
}

#[test]
fn rejected_is_reported_once_per_spell_and_recovered_when_allowed_again() {
    let mut m = monitor();
    let rejected = json!({"status": "rejected", "rateLimitType": "five_hour", "resetsAt": RESET_S});
    assert_eq!(m.note(NOW, &rejected).len(), 1);
    assert!(
        m.note(NOW + 1, &rejected).is_empty(),
        "a repeat is not news"
    );
    let events = m.note(
        NOW + 2,
        &json!({"status": "allowed", "rateLimitType": "five_hour", "utilization": 0.2}),
    );
    assert_eq!(
        events,
        vec![RateLimitEvent::Recovered {
            window: "five_hour".into()
        }]
    );
    assert!(m.rejection(NOW + 2).is_none());
    // After the reset passed, a new rejection is a new spell.
    assert_eq!(m.note(NOW + 3, &rejected).len(), 1);
    let later =
        json!({"status": "rejected", "rateLimitType": "five_hour", "resetsAt": RESET_S + 18_000});
    assert_eq!(m.note(RESET_MS + 5, &later).len(), 1);
}

#[test]
fn an_expired_rejection_recovers_on_the_next_allowed_frame() {
    let mut m = monitor();
    m.note(NOW, &json!({"status": "rejected", "resetsAt": RESET_S}));
    assert!(m.rejection(RESET_MS).is_none(), "its reset passed");
    let events = m.note(
        RESET_MS + 1,
        &json!({"status": "allowed", "utilization": 0.01}),
    );
    assert_eq!(
        events,
        vec![RateLimitEvent::Recovered {
            window: "five_hour".into()
        }]
    );
}

#[test]
fn credits_required_is_reported_once_while_it_lasts() {
    let mut m = monitor();
    let cr = json!({"status": "rejected", "errorCode": "credits_required", "resetsAt": RESET_S});
    let credits = |events: Vec<RateLimitEvent>| {
        events
            .iter()
            .filter(|e| **e == RateLimitEvent::CreditsRequired)
            .count()
    };
    assert_eq!(credits(m.note(NOW, &cr)), 1);
    assert!(m.credits_required());
    assert_eq!(credits(m.note(NOW + 1, &cr)), 0, "once while it lasts");
    m.note(NOW + 2, &json!({"status": "allowed"}));
    assert!(!m.credits_required());
    assert_eq!(credits(m.note(NOW + 3, &cr)), 1);
}

#[test]
fn a_rate_limit_event_without_info_changes_nothing_and_does_not_panic() {
    let mut m = monitor();
    for line in [
        json!({"type": "rate_limit_event"}),
        json!({"type": "rate_limit_event", "rate_limit_info": null}),
        json!({"type": "rate_limit_event", "rate_limit_info": 7}),
        json!({"type": "rate_limit_event", "rate_limit_info": "x"}),
        json!({"type": "rate_limit_event", "rate_limit_info": [1, 2]}),
    ] {
        assert!(observe(&mut m, NOW, &line).is_empty());
    }
    assert!(m.latest().is_none());
    assert!(m.note(NOW, &json!(null)).is_empty());
    assert!(m.latest().is_none());
}

#[test]
fn d4_bad_fields_are_ignored_one_by_one_and_never_poison_the_state() {
    let mut m = monitor();
    m.note(NOW, &allowed());
    for bad in [
        json!("0.9"),
        json!(-0.5),
        json!(11.0),
        json!(1e308),
        json!(true),
        json!({}),
    ] {
        // A utilization above 10 (1000 %) is a unit mistake; a reset of 11 s is a valid 1970
        // instant, so it is only tried as a utilization.
        let reset = if bad == json!(11.0) {
            json!("soon")
        } else {
            bad.clone()
        };
        let events = m.note(
            NOW,
            &json!({"status": "allowed", "rateLimitType": "five_hour", "utilization": bad, "resetsAt": reset}),
        );
        assert!(events.is_empty(), "{bad}");
        let w = m.window("five_hour").unwrap();
        assert_eq!(w.utilization, Some(0.11), "{bad}: utilization kept");
        assert_eq!(w.resets_at_ms, Some(RESET_MS), "{bad}: reset kept");
        assert_eq!(m.latest().unwrap().resets_at_ms, None);
        m.latest().unwrap().to_string(); // renders, never panics
    }
    // NaN and infinities cannot be JSON numbers; serde_json turns them into null.
    let nan = serde_json::Value::from(f64::NAN);
    assert!(nan.is_null());
}

#[test]
fn d4_resets_at_in_milliseconds_is_recognised() {
    let mut m = monitor();
    m.note(
        NOW,
        &json!({"status": "allowed", "utilization": 0.2, "resetsAt": RESET_MS}),
    );
    assert_eq!(m.latest().unwrap().resets_at_ms, Some(RESET_MS));
    assert_eq!(
        m.latest().unwrap().resets_at_iso().as_deref(),
        Some("2030-03-17T18:46:40.000Z")
    );
    // Beyond JavaScript's Date range: ignored.
    m.note(NOW, &json!({"status": "allowed", "resetsAt": 9e15}));
    assert_eq!(m.latest().unwrap().resets_at_ms, None);
}

#[test]
fn a_window_named_but_missing_from_the_map_falls_back() {
    let mut m = monitor();
    m.note(
        NOW,
        &json!({"status": "allowed", "rateLimitType": "seven_day_opus",
                "unifiedWindows": {"five_hour": {"utilization": 0.3}}}),
    );
    assert_eq!(m.latest().unwrap().utilization, Some(0.3));
}

#[test]
fn overage_null_clears_and_absent_carries() {
    let mut m = monitor();
    m.note(NOW, &allowed());
    m.note(NOW, &json!({"status": "allowed", "overageStatus": null}));
    let r = m.latest().unwrap();
    assert_eq!(r.overage_status, None);
    assert_eq!(r.overage_disabled_reason.as_deref(), Some("out_of_credits"));
}

#[test]
fn summary_shows_reset_times_only_where_they_matter_and_orders_windows() {
    let mut m = monitor();
    m.note(
        NOW,
        &json!({"status": "allowed", "unifiedWindows": {
            "seven_day_opus": {"utilization": 0.1},
            "seven_day": {"utilization": 0.42, "resetsAt": RESET_S + 3 * 86_400},
            "five_hour": {"utilization": 0.905, "resetsAt": RESET_S}
        }}),
    );
    assert_eq!(
        m.summary(NOW),
        "5h 91% (resets 18:46Z) · 7d 42% · 7d_opus 10%"
    );
    m.note(
        NOW,
        &json!({"status": "rejected", "rateLimitType": "seven_day", "resetsAt": RESET_S + 3 * 86_400}),
    );
    assert_eq!(
        m.summary(NOW),
        "5h 91% (resets 18:46Z) · 7d 42% rejected (resets 2030-03-20T18:46Z) · 7d_opus 10%"
    );
}

#[test]
fn event_messages_read_well() {
    assert_eq!(
        warning("five_hour", 0.905).to_string(),
        "rate limit: five_hour window at 91%"
    );
    assert_eq!(
        RateLimitEvent::Recovered {
            window: "seven_day".into()
        }
        .to_string(),
        "rate limit: seven_day window allowed again"
    );
    assert_eq!(
        RateLimitEvent::CreditsRequired.to_string(),
        "rate limit: credits required"
    );
}

#[test]
fn every_line_of_every_real_capture_is_safe_to_observe() {
    let dir = common::testdata_dir().join("captures");
    let mut frames = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let mut m = monitor();
        for (t, v) in capture_lines(&name) {
            let before = m.latest().cloned();
            observe(&mut m, CAPTURE_NOW + t, &v);
            if v["type"] == "rate_limit_event" {
                frames += 1;
            } else {
                assert_eq!(
                    m.latest().cloned(),
                    before,
                    "{name}: only rate-limit frames count"
                );
            }
        }
    }
    assert!(frames >= 3, "the s3 captures hold rate-limit frames");
}

mod robustness {
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            (-1e16f64..1e16).prop_map(Value::from),
            (0.0f64..2.0).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![
                Just("allowed"),
                Just("allowed_warning"),
                Just("rejected"),
                Just("credits_required"),
                Just("five_hour"),
                Just("")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("status".to_owned()),
                        Just("utilization".to_owned()),
                        Just("resetsAt".to_owned()),
                        Just("rateLimitType".to_owned()),
                        Just("overageStatus".to_owned()),
                        Just("errorCode".to_owned()),
                        Just("unifiedWindows".to_owned()),
                        Just("five_hour".to_owned()),
                        Just("seven_day".to_owned()),
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any sequence of frames: no panic, utilization stays a fraction in range, every
        /// reading renders, and a summary is always one line.
        #[test]
        fn any_frames_never_panic_or_poison(frames in prop::collection::vec((arb_json(), 0u64..u64::MAX / 2), 1..8)) {
            let mut m = monitor();
            for (info, now) in &frames {
                m.note(*now, info);
                if let Some(u) = m.utilization(*now) {
                    prop_assert!((0.0..=10.0).contains(&u));
                }
                if let Some(r) = m.latest() {
                    let _ = r.to_string();
                }
                prop_assert!(!m.summary(*now).contains('\n'));
                if let Some(e) = m.next_expiry(*now) {
                    prop_assert!(e > *now);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The shared merge cases: the npm package's createRateLimitMonitor() is checked against the
// same file (packaging/npm/agent-sdk-watchdog/test/api/rate-limit-cases.test.mjs).

#[test]
fn the_shared_merge_cases_are_the_cores() {
    let path = common::testdata_dir().join("rate-limit-cases.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let file: Value = serde_json::from_str(&text).unwrap();
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    let mut notes = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let mut cfg = RateLimitConfig::default();
        if let Some(w) = case["warnAt"].as_f64() {
            cfg = cfg.with_warn_at(w).unwrap();
        }
        if let Some(f) = case["fallbackWindow"].as_str() {
            cfg = cfg.with_fallback_window(f).unwrap();
        }
        let mut m = RateLimitMonitor::new(cfg);
        for step in case["steps"].as_array().unwrap() {
            if step.get("reset").is_some() {
                m.reset();
            } else if let Some(at) = step.get("active") {
                let at = at.as_u64().unwrap();
                assert_eq!(
                    m.active(at).is_some(),
                    step["is"] == true,
                    "{name}: active({at})"
                );
            } else {
                let info = &step["note"];
                let want = &step["reading"];
                // The reading's utilization is the frame's own (the reference's derivation).
                assert_eq!(
                    m.frame_utilization(info),
                    want["utilization"].as_f64(),
                    "{name}: utilization of {info}"
                );
                m.note(step["now"].as_u64().unwrap(), info);
                let r = m.latest().unwrap();
                for (key, got) in [
                    ("overageStatus", &r.overage_status),
                    ("overageDisabledReason", &r.overage_disabled_reason),
                ] {
                    assert_eq!(
                        got.as_deref(),
                        want[key].as_str(),
                        "{name}: {key} after {info}"
                    );
                }
                notes += 1;
            }
        }
    }
    assert!(notes >= 15, "{notes} frames");
}
