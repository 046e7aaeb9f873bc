//! Declared wakeups (field report N4): a `ScheduleWakeup` or a `CronCreate` job states its due
//! time (`scheduledFor`, `nextFireAt`), and after the session's `result` that is a wait no
//! person needs to end, bounded by the due time plus the idle patience (kill `wakeup_missed`,
//! naming the wakeup): it holds the linger until then in `-p` (Claude Code 2.1.332 keeps the
//! process open for a `ScheduleWakeup`), and bounds the wait for the host in streaming-input
//! mode (where no clock ran). A wakeup that fires (`command_lifecycle` `started`, or a new
//! turn's `system/init` once due) is over; `stop: true` and `CronDelete` cancel; a run that
//! ends with one pending says so in its record (`claude -p` drops a `CronCreate` job at exit).
//! Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::{
    parse_iso_ms, Event, KillKind, Limits, Outcome, SessionConfig, SessionId, WakeupTool,
};

const STAMP: &str = "2026-12-07T00:33:12.870Z";

/// Idle 5 m (no extension), no-progress 1 h, linger 3 m.
fn limits() -> Limits {
    Limits::default()
        .with_idle(min(5.0))
        .and_then(|l| l.with_extend_factor(1.0))
        .and_then(|l| l.with_no_progress(min(60.0)))
        .and_then(|l| l.with_linger(min(3.0)))
        .unwrap()
}

fn session(h: &mut H, host_input: bool) -> SessionId {
    let cfg = SessionConfig::default()
        .with_limits(limits())
        .with_host_input(host_input)
        .with_tally(true);
    h.r.register(h.t0, cfg)
}

fn epoch_ms(after: Duration) -> u64 {
    parse_iso_ms(STAMP).unwrap() as u64 + after.as_millis() as u64
}

/// The result of a `ScheduleWakeup` due `after` the line's own timestamp.
fn wakeup_result(id: &str, after: Duration) -> String {
    format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{id}","type":"tool_result","content":"Next wakeup scheduled"}}]}},"parent_tool_use_id":null,"session_id":"s","timestamp":"{STAMP}","tool_use_result":{{"scheduledFor":{},"clampedDelaySeconds":60,"wasClamped":false}}}}"#,
        epoch_ms(after)
    )
}

/// The result of a one-shot `CronCreate` due `after` the line's own timestamp.
fn cron_result(id: &str, after: Duration) -> String {
    format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{id}","type":"tool_result","content":"Scheduled one-shot task a414610a"}}]}},"parent_tool_use_id":null,"session_id":"s","timestamp":"{STAMP}","tool_use_result":{{"id":"a414610a","humanSchedule":"Every minute","recurring":false,"durable":false,"nextFireAt":{}}}}}"#,
        epoch_ms(after)
    )
}

const LIFECYCLE_STARTED: &str = r#"{"type":"command_lifecycle","command_uuid":"c1","state":"started","wakeup_source":"loop_wakeup","session_id":"s"}"#;

/// A turn with a call of `tool` (id `toolu_w`) whose result is `result`, then the result.
fn declare(h: &mut H, id: SessionId, at: Duration, tool: &str, result: &str) {
    h.line(at, id, l::INIT);
    h.line(at, id, &l::tool_use("toolu_w", tool));
    h.line(at, id, result);
    h.line(at, id, l::ASSISTANT_TEXT);
    h.line(at, id, l::RESULT_OK);
}

/// The turn the wakeup starts, at `at`.
fn fired(h: &mut H, id: SessionId, at: Duration) {
    h.line(at, id, LIFECYCLE_STARTED);
    h.line(at, id, l::INIT);
    h.line(at, id, l::ASSISTANT_TEXT);
    h.line(at, id, l::RESULT_OK);
}

fn kills(h: &mut H, until: Duration) -> Vec<(Duration, watchdog_core::Kill)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::Killed(k) => Some((t, k)),
            _ => None,
        })
        .collect()
}

#[test]
fn in_p_mode_a_wakeup_holds_the_linger_and_one_that_never_fires_is_named() {
    // Due in 60 m, the linger 3 m: the linger waits for it (2.1.332 keeps `-p` open for its
    // wakeup); it never fires: killed at due + idle, naming it.
    let mut h = H::default();
    let id = session(&mut h, false);
    declare(
        &mut h,
        id,
        min(1.0),
        "ScheduleWakeup",
        &wakeup_result("toolu_w", min(60.0)),
    );
    let k = kills(&mut h, min(200.0));
    assert_eq!(k.len(), 1, "{k:?}");
    assert_eq!((k[0].0, k[0].1.kind), (min(66.0), KillKind::WakeupMissed));
    let w = &k[0].1.outstanding.as_ref().unwrap().wakeups;
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].tool, w[0].tool_use_id.as_str(), w[0].overdue),
        (WakeupTool::ScheduleWakeup, "toolu_w", min(5.0))
    );
}

#[test]
fn a_wakeup_that_fires_is_over_and_the_waiting_rules_come_back() {
    for host_input in [false, true] {
        let mut h = H::default();
        let id = session(&mut h, host_input);
        declare(
            &mut h,
            id,
            min(1.0),
            "ScheduleWakeup",
            &wakeup_result("toolu_w", min(10.0)),
        );
        assert!(kills(&mut h, min(11.0)).is_empty());
        fired(&mut h, id, min(11.0));
        let k = kills(&mut h, min(24.0 * 60.0));
        let want: &[(Duration, KillKind)] = if host_input {
            // Waiting for its host again: no clock but the ceiling.
            &[]
        } else {
            &[(min(14.0), KillKind::Linger)]
        };
        assert_eq!(
            k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
            want,
            "host_input={host_input}"
        );
    }
}

#[test]
fn in_streaming_input_a_wakeup_that_never_fires_ends_the_wait_for_the_host() {
    // Both tools, both states of the line's clock: its own `timestamp`, or the registry's
    // wall clock when the line has none.
    for (tool, result) in [
        ("ScheduleWakeup", wakeup_result("toolu_w", min(20.0))),
        ("CronCreate", cron_result("toolu_w", min(20.0))),
        (
            "CronCreate",
            cron_result("toolu_w", min(20.0)).replace(&format!(r#","timestamp":"{STAMP}""#), ""),
        ),
    ] {
        let mut h = H::default();
        let id = session(&mut h, true);
        h.r.set_wall_clock(h.at(min(1.0)), parse_iso_ms(STAMP).unwrap() as u64);
        declare(&mut h, id, min(1.0), tool, &result);
        let snap = h.r.snapshot(id).unwrap();
        assert!(
            snap.settled && snap.paused,
            "waiting for the host: {snap:?}"
        );
        let k = kills(&mut h, min(24.0 * 60.0));
        assert_eq!(
            k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
            [(min(26.0), KillKind::WakeupMissed)],
            "{tool}: {result}"
        );
    }
}

#[test]
fn without_a_clock_to_read_the_due_time_by_nothing_is_bounded() {
    // No `timestamp` and no wall clock: the due time cannot be placed; the session waits for
    // its host as before.
    let mut h = H::default();
    let id = session(&mut h, true);
    let result =
        wakeup_result("toolu_w", min(20.0)).replace(&format!(r#","timestamp":"{STAMP}""#), "");
    declare(&mut h, id, min(1.0), "ScheduleWakeup", &result);
    assert!(kills(&mut h, min(24.0 * 60.0)).is_empty());
}

#[test]
fn a_cancelled_or_failed_wakeup_is_not_waited_for() {
    let stop = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_s","type":"tool_result","content":"Loop stopped"}]},"parent_tool_use_id":null,"session_id":"s","timestamp":"2026-12-07T00:33:12.870Z","tool_use_result":{"scheduledFor":0,"clampedDelaySeconds":0,"wasClamped":false,"stopped":true,"cancelledWakeups":1}}"#;
    let delete = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_s","type":"tool_result","content":"Cancelled job a414610a"}]},"parent_tool_use_id":null,"session_id":"s","tool_use_result":{"id":"a414610a"}}"#;
    for (tool, first, cancel, cancel_tool) in [
        (
            "ScheduleWakeup",
            wakeup_result("toolu_w", min(20.0)),
            stop.to_string(),
            "ScheduleWakeup",
        ),
        (
            "CronCreate",
            cron_result("toolu_w", min(20.0)),
            delete.to_string(),
            "CronDelete",
        ),
    ] {
        let mut h = H::default();
        let id = session(&mut h, false);
        declare(&mut h, id, min(1.0), tool, &first);
        h.line(min(2.0), id, l::INIT);
        h.line(min(2.0), id, &l::tool_use("toolu_s", cancel_tool));
        h.line(min(2.0), id, &cancel);
        h.line(min(2.0), id, l::RESULT_OK);
        let k = kills(&mut h, min(60.0));
        assert_eq!(
            k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
            [(min(5.0), KillKind::Linger)],
            "{tool}"
        );
    }
    // An error result declares nothing.
    let mut h = H::default();
    let id = session(&mut h, false);
    let failed = wakeup_result("toolu_w", min(20.0)).replace(
        r#""content":"Next wakeup scheduled""#,
        r#""content":"refused","is_error":true"#,
    );
    declare(&mut h, id, min(1.0), "ScheduleWakeup", &failed);
    let k = kills(&mut h, min(60.0));
    assert_eq!(
        k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
        [(min(4.0), KillKind::Linger)]
    );
}

#[test]
fn a_turn_in_progress_is_judged_by_its_own_clocks_not_by_a_wakeup() {
    // The model declares a wakeup in 60 m, then hangs mid-turn: the idle kill at 5 m.
    let mut h = H::default();
    let id = session(&mut h, true);
    h.line(min(1.0), id, l::INIT);
    h.line(min(1.0), id, &l::tool_use("toolu_w", "ScheduleWakeup"));
    h.line(min(1.0), id, &wakeup_result("toolu_w", min(60.0)));
    let k = kills(&mut h, min(60.0));
    assert_eq!(
        k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
        [(min(6.0), KillKind::Idle)]
    );
}

#[test]
fn a_run_that_ends_with_a_wakeup_pending_says_so_in_its_record() {
    // `claude -p` with a CronCreate job: it exits right after its success result (measured
    // on 2.1.332: 0.08 s later); the job never fires. The record keeps the outcome a success
    // and states the job outstanding: the false success made visible.
    let mut h = H::default();
    let id = session(&mut h, false);
    declare(
        &mut h,
        id,
        sec(1.0),
        "CronCreate",
        &cron_result("toolu_w", sec(48.0)),
    );
    let record = h.r.finish(h.at(sec(1.1)), id).unwrap();
    assert_eq!(record.outcome, Outcome::Success);
    let w = &record.outstanding.wakeups;
    assert_eq!(w.len(), 1, "{:?}", record.outstanding);
    assert_eq!(w[0].tool, WakeupTool::CronCreate);
    assert!(
        w[0].due_in > sec(47.0) && w[0].due_in <= sec(48.0),
        "{:?}",
        w[0]
    );
    // One that fired is not outstanding.
    let mut h = H::default();
    let id = session(&mut h, false);
    declare(
        &mut h,
        id,
        sec(1.0),
        "ScheduleWakeup",
        &wakeup_result("toolu_w", sec(74.0)),
    );
    fired(&mut h, id, sec(75.0));
    let record = h.r.finish(h.at(sec(75.2)), id).unwrap();
    assert!(record.outstanding.is_empty(), "{:?}", record.outstanding);
    // Two results for one prompt: the second was the wakeup's own turn.
    assert_eq!(record.turns.unsolicited, 1);
}
